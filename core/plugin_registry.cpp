#include <mneme/core/plugin_registry.h>

#include <mneme/core/custom_embedder.h>
#include <mneme/core/error.h>

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonObject>
#include <QLibrary>
#include <QMutexLocker>
#include <QPluginLoader>

#include <dlfcn.h>

namespace mneme {

namespace {

// The folder of the libmneme_core this code was loaded from ("" when the system cannot say).
QString coreLibraryFolder()
{
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void *>(&coreLibraryFolder), &info) == 0 || !info.dli_fname)
        return {};
    return QFileInfo(QFile::decodeName(info.dli_fname)).absolutePath();
}

} // namespace

struct PluginRegistry::Entry
{
    PluginInfo info;
    std::unique_ptr<QPluginLoader> loader;
    QObject *instance = nullptr;
};

PluginRegistry &PluginRegistry::instance()
{
    static PluginRegistry &registry = [&]() -> PluginRegistry & {
        static PluginRegistry r(defaultSearchPaths());
        // C++ callables registered with registerEmbeddingCallable() answer to "custom".
        r.registerEmbedderFactory(QStringLiteral("custom"), std::make_shared<CustomEmbedderFactory>());
        return r;
    }();
    return registry;
}

PluginRegistry::PluginRegistry(const QStringList &searchPaths)
    : m_paths(searchPaths)
{
    scan();
}

PluginRegistry::~PluginRegistry() = default;

QStringList PluginRegistry::defaultSearchPaths()
{
    QStringList paths = qEnvironmentVariable("MNEME_PLUGIN_PATH").split(QLatin1Char(':'), Qt::SkipEmptyParts);
    // Beside the library: <libdir>/mneme/plugins in an install, build/lib/mneme/plugins in a build.
    if (const QString folder = coreLibraryFolder(); !folder.isEmpty())
        paths << folder + QStringLiteral("/mneme/plugins");
    // Qt's plugin folder and the program's folder: a mneme/ folder there holds plugins, when it exists.
    for (const QString &qtPath : QCoreApplication::libraryPaths()) {
        if (QFileInfo(qtPath + QStringLiteral("/mneme")).isDir())
            paths << qtPath + QStringLiteral("/mneme");
    }
    QStringList out;
    for (const QString &p : std::as_const(paths)) {
        const QString canonical = QFileInfo(p).canonicalFilePath();
        const QString use = canonical.isEmpty() ? QDir::cleanPath(p) : canonical;
        if (!out.contains(use))
            out << use;
    }
    return out;
}

QString PluginRegistry::kindName(Kind kind)
{
    switch (kind) {
    case Kind::Embedder: return QStringLiteral("embedder");
    case Kind::Storage: return QStringLiteral("storage");
    case Kind::Llm: return QStringLiteral("llm");
    case Kind::Tool: return QStringLiteral("tool");
    }
    return {};
}

QString PluginRegistry::interfaceId(Kind kind)
{
    switch (kind) {
    case Kind::Embedder: return QStringLiteral(MNEME_EMBEDDER_FACTORY_IID);
    case Kind::Storage: return QStringLiteral(MNEME_STORAGE_FACTORY_IID);
    case Kind::Llm: return QStringLiteral(MNEME_LLM_FACTORY_IID);
    case Kind::Tool: return QStringLiteral(MNEME_TOOL_FACTORY_IID);
    }
    return {};
}

QStringList PluginRegistry::searchPaths() const
{
    QMutexLocker lock(&m_mutex);
    return m_paths;
}

void PluginRegistry::scan()
{
    static const Kind kinds[] = {Kind::Embedder, Kind::Storage, Kind::Llm, Kind::Tool};
    for (const QString &dir : std::as_const(m_paths)) {
        const QFileInfoList files = QDir(dir).entryInfoList(QDir::Files, QDir::Name);
        for (const QFileInfo &fi : files) {
            if (!QLibrary::isLibrary(fi.fileName()))
                continue;
            auto loader = std::make_unique<QPluginLoader>(fi.absoluteFilePath());
            const QJsonObject meta = loader->metaData();
            if (meta.isEmpty())
                continue; // not a Qt plugin
            const QString iid = meta.value(QLatin1String("IID")).toString();
            if (!iid.startsWith(QLatin1String("org.mneme.")))
                continue; // some other Qt plugin
            const QJsonObject data = meta.value(QLatin1String("MetaData")).toObject();
            auto entry = std::make_unique<Entry>();
            entry->info.file = fi.absoluteFilePath();
            entry->info.iid = iid;
            entry->info.name = data.value(QLatin1String("name")).toString(fi.baseName());
            entry->info.description = data.value(QLatin1String("description")).toString();
            for (const QJsonValue &k : data.value(QLatin1String("keys")).toArray())
                entry->info.keys << k.toString();
            const QString kind = data.value(QLatin1String("kind")).toString();
            bool known = false;
            for (Kind k : kinds) {
                if (kindName(k) == kind) {
                    entry->info.kind = k;
                    known = true;
                }
            }
            if (!known) {
                entry->info.problem = QStringLiteral("its metadata names an unknown kind \"%1\"").arg(kind);
            } else if (iid != interfaceId(entry->info.kind)) {
                entry->info.problem = QStringLiteral("it was built for interface %1, but this Mneme needs %2; rebuild the plugin")
                                          .arg(iid, interfaceId(entry->info.kind));
            } else if (entry->info.keys.isEmpty()) {
                entry->info.problem = QStringLiteral("its metadata names no keys");
            }
            entry->loader = std::move(loader);
            m_entries.push_back(std::move(entry));
        }
    }
}

QList<PluginRegistry::PluginInfo> PluginRegistry::plugins() const
{
    QMutexLocker lock(&m_mutex);
    QList<PluginInfo> out;
    for (const auto &e : m_entries)
        out << e->info;
    return out;
}

QStringList PluginRegistry::keys(Kind kind) const
{
    QMutexLocker lock(&m_mutex);
    QStringList out;
    for (const auto &e : m_entries) {
        if (e->info.kind == kind && e->info.problem.isEmpty()) {
            for (const QString &k : e->info.keys)
                if (!out.contains(k))
                    out << k;
        }
    }
    for (const auto &[k, f] : m_registered) {
        if (k.first == int(kind) && !out.contains(k.second))
            out << k.second;
    }
    out.sort();
    return out;
}

bool PluginRegistry::hasKey(Kind kind, const QString &key) const
{
    return keys(kind).contains(key);
}

PluginRegistry::Entry *PluginRegistry::find(Kind kind, const QString &key)
{
    Entry *broken = nullptr;
    for (const auto &e : m_entries) {
        if (e->info.kind == kind && e->info.keys.contains(key)) {
            if (e->info.problem.isEmpty())
                return e.get();
            if (!broken)
                broken = e.get();
        }
    }
    return broken;
}

QObject *PluginRegistry::load(Entry &entry)
{
    if (!entry.info.problem.isEmpty())
        throw Error(ErrorKind::Plugin, QStringLiteral("the %1 plugin %2 cannot be used: %3")
                                           .arg(kindName(entry.info.kind), entry.info.file, entry.info.problem));
    if (!entry.instance) {
        entry.instance = entry.loader->instance();
        if (!entry.instance) {
            entry.info.problem = QStringLiteral("it failed to load (%1)").arg(entry.loader->errorString());
            throw Error(ErrorKind::Plugin, QStringLiteral("the %1 plugin %2 cannot be used: %3")
                                               .arg(kindName(entry.info.kind), entry.info.file, entry.info.problem));
        }
    }
    return entry.instance;
}

void PluginRegistry::unknownKey(Kind kind, const QString &key) const
{
    QStringList known;
    for (const auto &e : m_entries)
        if (e->info.kind == kind && e->info.problem.isEmpty())
            known << e->info.keys;
    for (const auto &[k, f] : m_registered)
        if (k.first == int(kind))
            known << k.second;
    known.removeDuplicates();
    known.sort();
    const QString searched = m_paths.isEmpty() ? QStringLiteral("no folder") : m_paths.join(QStringLiteral(", "));
    throw Error(ErrorKind::Plugin,
                QStringLiteral("unknown %1 \"%2\"; known %1 keys: %3 (plugins searched in %4; set MNEME_PLUGIN_PATH "
                               "to the folder holding Mneme's plugins if they are elsewhere)")
                    .arg(kindName(kind), key, known.isEmpty() ? QStringLiteral("(none)") : known.join(QStringLiteral(", ")),
                         searched));
}

namespace {

template<typename Factory>
Factory *castFactory(QObject *instance, const QString &file, const QString &kind)
{
    Factory *f = qobject_cast<Factory *>(instance);
    if (!f)
        throw Error(ErrorKind::Plugin, QStringLiteral("the plugin %1 does not implement the %2 factory interface").arg(file, kind));
    return f;
}

} // namespace

template<typename Factory>
Factory *PluginRegistry::factoryFor(Kind kind, const QString &key, std::shared_ptr<void> &keepAlive)
{
    QMutexLocker lock(&m_mutex);
    auto it = m_registered.find({int(kind), key});
    if (it != m_registered.end()) {
        keepAlive = it->second;
        return static_cast<Factory *>(keepAlive.get());
    }
    Entry *e = find(kind, key);
    if (!e)
        unknownKey(kind, key);
    return castFactory<Factory>(load(*e), e->info.file, kindName(kind));
}

namespace {

template<typename Product>
std::unique_ptr<Product> checked(std::unique_ptr<Product> product, PluginRegistry::Kind kind, const QString &key)
{
    if (!product)
        throw Error(ErrorKind::Plugin, QStringLiteral("the %1 plugin for \"%2\" could not build an instance")
                                           .arg(PluginRegistry::kindName(kind), key));
    return product;
}

} // namespace

std::unique_ptr<Embedder> PluginRegistry::createEmbedder(const QString &key, const Json &config)
{
    std::shared_ptr<void> keep;
    return checked(factoryFor<EmbedderFactory>(Kind::Embedder, key, keep)->createEmbedder(key, config), Kind::Embedder, key);
}

std::unique_ptr<StorageBackend> PluginRegistry::createStorage(const QString &key, const Json &config)
{
    std::shared_ptr<void> keep;
    return checked(factoryFor<StorageFactory>(Kind::Storage, key, keep)->createStorage(key, config), Kind::Storage, key);
}

std::unique_ptr<LlmProvider> PluginRegistry::createLlm(const QString &key, const Json &config)
{
    std::shared_ptr<void> keep;
    return checked(factoryFor<LlmProviderFactory>(Kind::Llm, key, keep)->createLlm(key, config), Kind::Llm, key);
}

std::unique_ptr<Tool> PluginRegistry::createTool(const QString &key, const Json &config)
{
    std::shared_ptr<void> keep;
    return checked(factoryFor<ToolFactory>(Kind::Tool, key, keep)->createTool(key, config), Kind::Tool, key);
}

void PluginRegistry::registerEmbedderFactory(const QString &key, std::shared_ptr<EmbedderFactory> factory)
{
    QMutexLocker lock(&m_mutex);
    m_registered[{int(Kind::Embedder), key}] = std::static_pointer_cast<void>(factory);
}

void PluginRegistry::registerStorageFactory(const QString &key, std::shared_ptr<StorageFactory> factory)
{
    QMutexLocker lock(&m_mutex);
    m_registered[{int(Kind::Storage), key}] = std::static_pointer_cast<void>(factory);
}

void PluginRegistry::registerLlmFactory(const QString &key, std::shared_ptr<LlmProviderFactory> factory)
{
    QMutexLocker lock(&m_mutex);
    m_registered[{int(Kind::Llm), key}] = std::static_pointer_cast<void>(factory);
}

void PluginRegistry::registerToolFactory(const QString &key, std::shared_ptr<ToolFactory> factory)
{
    QMutexLocker lock(&m_mutex);
    m_registered[{int(Kind::Tool), key}] = std::static_pointer_cast<void>(factory);
}

void PluginRegistry::unregister(Kind kind, const QString &key)
{
    QMutexLocker lock(&m_mutex);
    m_registered.erase({int(kind), key});
}

} // namespace mneme
