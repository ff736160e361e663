#include "command_context.h"

#include "table_printer.h"

#include <mneme/core/error.h>

#include <QElapsedTimer>
#include <QFile>

namespace mneme::cli {

namespace {

QString ms(double milliseconds)
{
    return QString::number(milliseconds, 'f', 1) + QStringLiteral(" ms");
}

// The keys of a --config file that belong to the chat command, not to MemoryConfig.
const char *const kChatSections[] = {"chat_memory", "agent"};

// The --config file as a JSON object (null without --config).
Json configFile(const CliArguments &arguments)
{
    const std::optional<QString> file = arguments.configFile();
    if (!file)
        return Json();
    QFile f(*file);
    if (!f.open(QIODevice::ReadOnly))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("cannot read the configuration %1: %2; check the --config path").arg(*file, f.errorString()));
    const QString text = QString::fromUtf8(f.readAll());
    const Json json = parseJson(text, QStringLiteral("the configuration %1").arg(*file));
    if (!json.is_object())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the configuration %1 must be a JSON object of MemoryConfig keys").arg(*file));
    return json;
}

} // namespace

CommandContext::CommandContext(const CliArguments &arguments, Console &console)
    : m_args(arguments), m_console(console)
{
}

CommandContext::~CommandContext() = default;

MemoryConfig CommandContext::configFor(const CliArguments &arguments)
{
    MemoryConfig config;
    if (const std::optional<QString> file = arguments.configFile()) {
        Json json = configFile(arguments);
        for (const char *section : kChatSections)
            json.erase(section);
        try {
            config = MemoryConfig::fromJson(json);
        } catch (const Error &e) {
            throw Error(e.kind(), QStringLiteral("configuration %1: %2").arg(*file, e.message()));
        }
    }
    if (const std::optional<QString> db = arguments.db()) {
        if (db->trimmed().isEmpty())
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("--db needs the path of a database file"));
        // Keep the other settings of a configured SQLite store (read_only, ...); replace anything else.
        Json storage = config.storage;
        const bool sqliteObject = storage.is_object() && storage.contains("provider") && storage["provider"] == "sqlite"
                               && storage.contains("config") && storage["config"].is_object();
        if (!sqliteObject)
            storage = Json{{"provider", "sqlite"}, {"config", Json::object()}};
        storage["config"]["path"] = db->toStdString();
        config.storage = storage;
    }
    return config;
}

Json CommandContext::configSection(const char *key)
{
    const Json json = configFile(m_args);
    return json.is_object() && json.contains(key) ? json[key] : Json();
}

QString CommandContext::storePath()
{
    const Json storage = config().storage;
    if (storage.is_null())
        return MemoryConfig::defaultStoragePath();
    if (storage.is_string())
        return QString::fromStdString(storage.get<std::string>());
    if (storage.is_object() && storage.value("provider", std::string()) == "sqlite" && storage.contains("config")
        && storage["config"].is_object() && storage["config"].contains("path") && storage["config"]["path"].is_string())
        return QString::fromStdString(storage["config"]["path"].get<std::string>());
    throw Error(ErrorKind::InvalidArgument, QStringLiteral("chat sessions are kept in the SQLite store's file, and the configured storage is "
                                                           "not a SQLite file; give --db PATH"));
}

const MemoryConfig &CommandContext::config()
{
    if (!m_config)
        m_config = configFor(m_args);
    return *m_config;
}

Memory &CommandContext::memory()
{
    if (!m_memory)
        open(createsStore(m_args.commandName()) ? config() : withoutCreating(config()));
    return *m_memory;
}

bool CommandContext::createsStore(const QString &command)
{
    static const QStringList writers = {QStringLiteral("remember"), QStringLiteral("remember-many"), QStringLiteral("import"),
                                        QStringLiteral("chat"), QStringLiteral("mcp"), QStringLiteral("serve")};
    return writers.contains(command);
}

MemoryConfig CommandContext::withoutCreating(MemoryConfig config)
{
    Json storage = config.storage;
    if (storage.is_null())
        storage = MemoryConfig::defaultStoragePath().toStdString();
    if (storage.is_string())
        storage = Json{{"provider", "sqlite"}, {"config", {{"path", storage}}}};
    const bool sqlite = storage.is_object() && (!storage.contains("provider") || storage["provider"] == "sqlite");
    if (!sqlite)
        return config; // another backend decides what opening means
    if (!storage.contains("config") || !storage["config"].is_object())
        storage["config"] = Json::object();
    if (!storage["config"].contains("path"))
        storage["config"]["path"] = MemoryConfig::defaultStoragePath().toStdString();
    storage["config"]["create"] = false;
    config.storage = storage;
    return config;
}

Memory &CommandContext::memoryWithoutStore()
{
    if (!m_memory) {
        MemoryConfig scratch = config();
        scratch.storage = Json{{"provider", "sqlite"}, {"config", {{"path", ":memory:"}}}};
        open(scratch);
    }
    return *m_memory;
}

void CommandContext::open(const MemoryConfig &cfg)
{
    QElapsedTimer timer;
    timer.start();
    m_memory = std::make_unique<Memory>(cfg);
    connectEvents();
    if (m_console.isVerbose()) {
        m_console.event(QStringLiteral("opened %1 with embedder %2 in %3")
                            .arg(m_memory->storage().location(), m_memory->embedder().id(),
                                 ms(double(timer.nsecsElapsed()) / 1e6)));
    }
}

void CommandContext::close()
{
    if (m_memory)
        m_memory->close();
}

void CommandContext::connectEvents()
{
    if (!m_console.isVerbose())
        return;
    Console *console = &m_console;
    Memory *memory = m_memory.get();
    // Direct connections: the signals come from Memory's worker threads while this thread waits;
    // Console serialises the writes.
    QObject::connect(
        memory, &Memory::queryCompleted, memory,
        [console](const QString &query, const QList<MemoryMatch> &results, double timeMs) {
            console->event(QStringLiteral("query completed: \"%1\", %2 results in %3")
                               .arg(TablePrinter::preview(query, 60), QString::number(results.size()),
                                    ms(timeMs)));
        },
        Qt::DirectConnection);
    QObject::connect(
        memory, &Memory::queryFailed, memory,
        [console](const QString &query, const QString &error) {
            console->event(QStringLiteral("query failed: \"%1\": %2")
                               .arg(TablePrinter::preview(query, 60), error));
        },
        Qt::DirectConnection);
    QObject::connect(
        memory, &Memory::saveCompleted, memory,
        [console](const QString &value, const QJsonObject &, double timeMs) {
            console->event(QStringLiteral("save completed: \"%1\" in %2")
                               .arg(TablePrinter::preview(value, 60), ms(timeMs)));
        },
        Qt::DirectConnection);
    QObject::connect(
        memory, &Memory::saveFailed, memory,
        [console](const QString &value, const QString &error) {
            console->event(QStringLiteral("save failed: \"%1\": %2")
                               .arg(TablePrinter::preview(value, 60), error));
        },
        Qt::DirectConnection);
    QObject::connect(
        memory, &Memory::llmCallCompleted, memory,
        [console](const QString &step, const QString &model, double timeMs, int promptTokens,
                  int completionTokens) {
            console->event(QStringLiteral("llm %1 (%2): %3 + %4 tokens in %5")
                               .arg(step, model)
                               .arg(promptTokens)
                               .arg(completionTokens)
                               .arg(ms(timeMs)));
        },
        Qt::DirectConnection);
    QObject::connect(
        memory, &Memory::llmCallFailed, memory,
        [console](const QString &step, const QString &model, const QString &error, double timeMs) {
            console->event(QStringLiteral("llm %1 (%2) failed in %3: %4")
                               .arg(step, model.isEmpty() ? QStringLiteral("no model") : model, ms(timeMs), error));
        },
        Qt::DirectConnection);
    QObject::connect(
        memory, &Memory::analysisCompleted, memory,
        [console](const QString &step, const QString &path, const QString &reason) {
            console->event(reason.isEmpty() ? QStringLiteral("%1: %2").arg(step, path)
                                            : QStringLiteral("%1: %2 (%3)").arg(step, path, reason));
        },
        Qt::DirectConnection);
}

} // namespace mneme::cli
