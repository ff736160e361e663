#pragma once

#include <mneme/core/memory_record.h>
#include <mneme/models/export.h>

#include <QByteArray>
#include <QHash>
#include <QVariant>

namespace mneme {

// The roles under which RecordListModel and RecallResultModel give a record's fields, with the names
// QML delegates read them by (model.content, model.scope, ...). Times are UTC QDateTimes, categories a
// QStringList, metadata a QVariantMap.
struct MNEME_MODELS_EXPORT RecordRoles
{
    enum Role {
        RecordIdRole = Qt::UserRole + 1, // "recordId"
        ContentRole,                     // "content"
        ScopeRole,                       // "scope"
        CategoriesRole,                  // "categories"
        ImportanceRole,                  // "importance"
        SourceRole,                      // "source"
        PrivateRole,                     // "isPrivate"
        MetadataRole,                    // "metadata"
        CreatedAtRole,                   // "createdAt"
        UpdatedAtRole,                   // "updatedAt"
        LastAccessedRole,                // "lastAccessed"
        AccessCountRole,                 // "accessCount"
        FirstUnusedRole                  // the models' own roles start here
    };

    // Role -> name, for QAbstractItemModel::roleNames().
    static QHash<int, QByteArray> names();
    // The record's field under `role`; an invalid QVariant for another role.
    static QVariant value(const MemoryRecord &record, int role);
};

} // namespace mneme
