#pragma once

#include <mneme/core/storage_backend.h>

#include <QObject>

namespace mneme {

// The "sqlite" storage plugin: builds SqliteStorage from {"path", "read_only", "busy_timeout_ms"}.
class SqliteStoragePlugin : public QObject, public StorageFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_STORAGE_FACTORY_IID FILE "sqlite.json")
    Q_INTERFACES(mneme::StorageFactory)

public:
    explicit SqliteStoragePlugin(QObject *parent = nullptr);

    std::unique_ptr<StorageBackend> createStorage(const QString &key, const Json &config) override;
};

} // namespace mneme
