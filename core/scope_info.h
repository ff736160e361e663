#pragma once

#include <mneme/core/export.h>
#include <mneme/core/json.h>

#include <QDateTime>
#include <QString>
#include <QStringList>

namespace mneme {

// Statistics of one scope and everything below it.
struct MNEME_CORE_EXPORT ScopeInfo
{
    QString path = QStringLiteral("/");
    int recordCount = 0;    // includes sub-scopes
    QStringList categories; // sorted union
    QDateTime oldestRecord; // invalid when empty
    QDateTime newestRecord;
    QStringList childScopes; // immediate children, full paths, sorted
};

MNEME_CORE_EXPORT void to_json(Json &j, const ScopeInfo &info);

} // namespace mneme
