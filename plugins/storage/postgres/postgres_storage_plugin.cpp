#include "postgres_storage_plugin.h"

#include "postgres_storage.h"
#include <mneme/core/error.h>

namespace mneme {

PostgresStoragePlugin::PostgresStoragePlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<StorageBackend> PostgresStoragePlugin::createStorage(const QString &key, const Json &config)
{
    if (key != QLatin1String("postgres"))
        throw Error(ErrorKind::Plugin, QStringLiteral("the postgres storage plugin does not answer to \"%1\"; use \"postgres\"").arg(key));
    return std::make_unique<PostgresStorage>(PostgresStorage::Options::fromJson(config));
}

} // namespace mneme
