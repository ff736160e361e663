#include <mneme/models/record_roles.h>

#include <mneme/core/json.h>

#include <QJsonDocument>
#include <QJsonObject>

namespace mneme {

QHash<int, QByteArray> RecordRoles::names()
{
    return {
        {RecordIdRole, "recordId"},
        {ContentRole, "content"},
        {ScopeRole, "scope"},
        {CategoriesRole, "categories"},
        {ImportanceRole, "importance"},
        {SourceRole, "source"},
        {PrivateRole, "isPrivate"},
        {MetadataRole, "metadata"},
        {CreatedAtRole, "createdAt"},
        {UpdatedAtRole, "updatedAt"},
        {LastAccessedRole, "lastAccessed"},
        {AccessCountRole, "accessCount"},
    };
}

QVariant RecordRoles::value(const MemoryRecord &r, int role)
{
    switch (role) {
    case RecordIdRole:
        return r.id;
    case ContentRole:
        return r.content;
    case ScopeRole:
        return r.scope;
    case CategoriesRole:
        return r.categories;
    case ImportanceRole:
        return r.importance;
    case SourceRole:
        return r.source;
    case PrivateRole:
        return r.isPrivate;
    case MetadataRole:
        return toQJson(r.metadata.is_object() ? r.metadata : Json::object()).toVariantMap();
    case CreatedAtRole:
        return r.createdAt;
    case UpdatedAtRole:
        return r.updatedAt;
    case LastAccessedRole:
        return r.lastAccessed;
    case AccessCountRole:
        return r.accessCount;
    default:
        return {};
    }
}

} // namespace mneme
