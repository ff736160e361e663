#include "sqlite_storage_plugin.h"

#include "sqlite_storage.h"
#include <mneme/core/error.h>

namespace mneme {

SqliteStoragePlugin::SqliteStoragePlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<StorageBackend> SqliteStoragePlugin::createStorage(const QString &key, const Json &config)
{
    if (key != QLatin1String("sqlite"))
        throw Error(ErrorKind::Plugin, QStringLiteral("the sqlite storage plugin does not answer to \"%1\"; use \"sqlite\"").arg(key));
    return std::make_unique<SqliteStorage>(SqliteStorage::Options::fromJson(config));
}

} // namespace mneme
