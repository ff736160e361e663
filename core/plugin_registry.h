#pragma once

#include <mneme/core/embedder.h>
#include <mneme/core/export.h>
#include <mneme/core/json.h>
#include <mneme/core/llm_provider.h>
#include <mneme/core/storage_backend.h>
#include <mneme/core/tool.h>

#include <QList>
#include <QMutex>
#include <QString>
#include <QStringList>
#include <map>
#include <memory>

class QPluginLoader;

namespace mneme {

// Finds Mneme plugins by their metadata, loads each on first use, and builds instances by key.
//
// Search order (first hit for a key wins): every folder of $MNEME_PLUGIN_PATH (':'-separated), then
// mneme/plugins beside the libmneme_core in use (<libdir>/mneme/plugins in an install,
// lib/mneme/plugins in a build tree; nothing else is compiled in, so an installed build never looks
// into a build tree), then mneme/ under each of Qt's library paths where it exists. Metadata is
// read without loading the library. A plugin that fails to load, or that was built for another
// interface version, is reported in plugins() and in the error of the create call that needed it;
// it never crashes the program. An unknown key is an Error(Plugin) naming the known keys and the
// folders searched.
class MNEME_CORE_EXPORT PluginRegistry
{
public:
    enum class Kind {
        Embedder,
        Storage,
        Llm,
        Tool
    };

    struct PluginInfo
    {
        Kind kind = Kind::Embedder;
        QStringList keys;
        QString name;
        QString description;
        QString file; // empty for factories registered in code
        QString iid;
        QString problem; // why it cannot be used (interface version, load error), or empty
    };

    // The process-wide registry over the default search paths.
    static PluginRegistry &instance();
    // A registry over exactly these folders (tests).
    explicit PluginRegistry(const QStringList &searchPaths);
    ~PluginRegistry();
    PluginRegistry(const PluginRegistry &) = delete;
    PluginRegistry &operator=(const PluginRegistry &) = delete;

    static QStringList defaultSearchPaths();
    static QString kindName(Kind kind);    // "embedder", "storage", "llm", "tool"
    static QString interfaceId(Kind kind); // the IID a plugin of that kind must declare

    QStringList searchPaths() const;
    QList<PluginInfo> plugins() const;
    // Keys usable for this kind, sorted.
    QStringList keys(Kind kind) const;
    bool hasKey(Kind kind, const QString &key) const;

    // Build an instance; throw Error(Plugin) for an unknown key (listing the known keys) or a plugin
    // that cannot be loaded, and let the factory's own Error through for a bad configuration.
    std::unique_ptr<Embedder> createEmbedder(const QString &key, const Json &config = Json::object());
    std::unique_ptr<StorageBackend> createStorage(const QString &key, const Json &config = Json::object());
    std::unique_ptr<LlmProvider> createLlm(const QString &key, const Json &config = Json::object());
    std::unique_ptr<Tool> createTool(const QString &key, const Json &config = Json::object());

    // Factories compiled into the program (a custom embedder, a test double). They take precedence
    // over plugins with the same key. The registry keeps them alive.
    void registerEmbedderFactory(const QString &key, std::shared_ptr<EmbedderFactory> factory);
    void registerStorageFactory(const QString &key, std::shared_ptr<StorageFactory> factory);
    void registerLlmFactory(const QString &key, std::shared_ptr<LlmProviderFactory> factory);
    void registerToolFactory(const QString &key, std::shared_ptr<ToolFactory> factory);
    void unregister(Kind kind, const QString &key);

private:
    struct Entry;
    void scan();
    Entry *find(Kind kind, const QString &key);
    QObject *load(Entry &entry);
    [[noreturn]] void unknownKey(Kind kind, const QString &key) const;
    template<typename Factory>
    Factory *factoryFor(Kind kind, const QString &key, std::shared_ptr<void> &keepAlive);

    mutable QMutex m_mutex;
    QStringList m_paths;
    std::vector<std::unique_ptr<Entry>> m_entries;
    std::map<std::pair<int, QString>, std::shared_ptr<void>> m_registered;
};

} // namespace mneme
