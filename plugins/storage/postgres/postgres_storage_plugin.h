#pragma once

#include <mneme/core/storage_backend.h>

#include <QObject>

namespace mneme {

// The "postgres" storage plugin: builds PostgresStorage from {"dsn", "connect_timeout_s"}.
class PostgresStoragePlugin : public QObject, public StorageFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_STORAGE_FACTORY_IID FILE "postgres.json")
    Q_INTERFACES(mneme::StorageFactory)

public:
    explicit PostgresStoragePlugin(QObject *parent = nullptr);

    std::unique_ptr<StorageBackend> createStorage(const QString &key, const Json &config) override;
};

} // namespace mneme
