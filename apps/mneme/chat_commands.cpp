#include "chat_commands.h"

#include "command_context.h"
#include "table_printer.h"

#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/provider_settings.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/sqlite_chat_store.h>
#include <mneme/runtime/agent_chat.h>
#include <mneme/runtime/console_listener.h>
#include <mneme/runtime/event_bus.h>

#include <QFileInfo>
#include <QTextStream>
#include <cstdio>

namespace mneme::cli {

namespace {

const QString kDefaultSession = QStringLiteral("default");

// The chat_memory section of the configuration; without memory_blocks, one long-term block over the
// store (the chat's facts join the store's memories, and recall brings them back).
ChatMemoryConfig chatConfigOf(const Json &section)
{
    Json json = section.is_null() ? Json::object() : section;
    if (json.is_object() && !json.contains("memory_blocks"))
        json["memory_blocks"] = Json::array({Json{{"type", "long_term"}, {"name", "long_term"}}});
    try {
        return ChatMemoryConfig::fromJson(json);
    } catch (const Error &e) {
        throw Error(e.kind(), QStringLiteral("configuration, chat_memory: %1").arg(e.message()));
    }
}

[[noreturn]] void badAgent(const QString &why)
{
    throw Error(ErrorKind::InvalidArgument, QStringLiteral("configuration, agent: %1").arg(why));
}

QString agentText(const Json &agent, const char *key, const QString &fallback)
{
    if (!agent.contains(key))
        return fallback;
    if (!agent[key].is_string() || QString::fromStdString(agent[key].get<std::string>()).trimmed().isEmpty())
        badAgent(QStringLiteral("\"%1\" must be a non-empty string").arg(QLatin1String(key)));
    return QString::fromStdString(agent[key].get<std::string>());
}

// The agent of `mneme chat`: the configuration's "agent" section over these defaults.
AgentConfig agentConfigOf(const Json &section)
{
    const Json agent = section.is_null() ? Json::object() : section;
    if (!agent.is_object())
        badAgent(QStringLiteral("must be an object with role, goal, backstory, tools, max_iter and stream"));
    for (auto it = agent.begin(); it != agent.end(); ++it) {
        static const QStringList known = {QStringLiteral("role"), QStringLiteral("goal"), QStringLiteral("backstory"),
                                          QStringLiteral("tools"), QStringLiteral("max_iter"), QStringLiteral("stream")};
        if (!known.contains(QString::fromStdString(it.key())))
            badAgent(QStringLiteral("unknown key \"%1\"; the keys are %2").arg(QString::fromStdString(it.key()), known.join(QStringLiteral(", "))));
    }
    AgentConfig c;
    c.role = agentText(agent, "role", QStringLiteral("Assistant"));
    c.goal = agentText(agent, "goal", QStringLiteral("Help the user with what they ask, accurately and briefly."));
    c.backstory = agentText(agent, "backstory",
                            QStringLiteral("You are a helpful assistant. You remember this conversation and what your memory holds."));
    if (agent.contains("max_iter")) {
        if (!agent["max_iter"].is_number_integer() || agent["max_iter"].get<int>() < 1)
            badAgent(QStringLiteral("\"max_iter\" must be a whole number of at least 1"));
        c.maxIter = agent["max_iter"].get<int>();
    }
    if (agent.contains("stream")) {
        if (!agent["stream"].is_boolean())
            badAgent(QStringLiteral("\"stream\" must be true or false"));
        c.stream = agent["stream"].get<bool>();
    }
    if (agent.contains("tools")) {
        if (!agent["tools"].is_array())
            badAgent(QStringLiteral("\"tools\" must be an array of tool plugin keys, such as [\"calculator\"]"));
        for (const Json &t : agent["tools"]) {
            if (!t.is_string())
                badAgent(QStringLiteral("each of \"tools\" must be a tool plugin key, such as \"calculator\""));
            c.tools.push_back(PluginRegistry::instance().createTool(QString::fromStdString(t.get<std::string>())));
        }
    }
    return c;
}

} // namespace

ChatCommands::ChatCommands(CommandContext &context) : m_ctx(context) {}

void ChatCommands::chat()
{
    const QString session = m_ctx.args().value(QStringLiteral("session")).value_or(kDefaultSession);
    const ChatMemoryConfig chatConfig = chatConfigOf(m_ctx.configSection("chat_memory"));
    AgentConfig agentConfig = agentConfigOf(m_ctx.configSection("agent"));
    if (m_ctx.config().llm.is_null())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("mneme chat needs an LLM: set \"llm\" in the --config file, a model string such as \"gpt-4o-mini\", or "
                                   "{\"provider\": \"replay\", \"config\": {\"cassette\": \"chat.jsonl\"}} to run offline"));
    Memory &memory = m_ctx.memory();
    agentConfig.llm = memory.llm(); // one provider for the agent and the memory's analysis
    agentConfig.memory = &memory;
    auto chatMemory = std::make_shared<ChatMemory>(session, chatConfig, ChatMemory::defaultStore(ChatMemoryConfig(), &memory),
                                                   ChatMemory::buildBlocks(chatConfig.memoryBlocks, &memory, chatConfig.llm));
    auto agent = std::make_shared<Agent>(agentConfig);
    EventBus bus;
    std::unique_ptr<ConsoleListener> trace;
    if (m_ctx.console().isVerbose())
        trace = std::make_unique<ConsoleListener>(&bus, stderr);
    AgentChat chat(agent, chatMemory, AgentChatOptions{&bus});

    Console &console = m_ctx.console();
    const bool json = m_ctx.json();
    const bool interactive = Console::stdinIsTerminal();
    bool streamed = false;
    if (!json && agentConfig.stream)
        QObject::connect(&chat, &AgentChat::textChunk, &chat, [&console, &streamed](const QString &piece) {
            console.write(piece);
            streamed = true;
        });
    if (interactive && !json)
        console.notice(QStringLiteral("chat session \"%1\" with %2 as %3; %4 messages in it so far. /exit ends.")
                           .arg(session, agent->llm()->id(), agentConfig.role)
                           .arg(chatMemory->info().activeMessages + chatMemory->info().archivedMessages));

    Json turns = Json::array();
    QTextStream in(stdin);
    for (;;) {
        if (interactive && !json)
            console.progress(QStringLiteral("you> "));
        const QString line = in.readLine();
        if (line.isNull())
            break;
        const QString message = line.trimmed();
        if (message.isEmpty())
            continue;
        if (message == QLatin1String("/exit") || message == QLatin1String("/quit"))
            break;
        streamed = false;
        const ChatReply reply = chat.sendAndWait(message);
        if (json) {
            turns.push_back(Json{{"user", message}, {"reply", reply.toJson()}});
            continue;
        }
        for (const AgentToolCall &call : reply.toolCalls)
            console.notice(QStringLiteral("(%1 %2 -> %3)")
                               .arg(call.name, QString::fromStdString(call.arguments.dump()), TablePrinter::preview(call.output, 80)));
        console.write(streamed ? QStringLiteral("\n") : reply.text + QLatin1Char('\n'));
    }
    chatMemory->drain();
    if (json)
        console.writeJson(Json{{"session", session}, {"turns", turns}});
}

void ChatCommands::sessions()
{
    const QString action = m_ctx.args().positional(0);
    const QString session = m_ctx.args().positional(1);
    const bool needsSession = action != QLatin1String("list");
    if (action != QLatin1String("list") && action != QLatin1String("show") && action != QLatin1String("clear")
        && action != QLatin1String("delete"))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("mneme sessions takes list, show SESSION, clear SESSION or delete SESSION, not \"%1\"").arg(action));
    if (needsSession && session.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("mneme sessions %1 needs the session's id: mneme sessions %1 SESSION").arg(action));
    if (!needsSession && !session.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("mneme sessions list takes no session id"));
    if ((action == QLatin1String("clear") || action == QLatin1String("delete")) && !m_ctx.args().has(QStringLiteral("yes")))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("refusing to %1 without --yes; run \"mneme sessions %1 %2 --yes\" to %3 for good")
                        .arg(action, session,
                             action == QLatin1String("clear") ? QStringLiteral("delete its messages") : QStringLiteral("delete the session")));
    if (action == QLatin1String("list"))
        list();
    else if (action == QLatin1String("show"))
        show(session);
    else
        clear(session, action == QLatin1String("delete"));
}

void ChatCommands::list()
{
    const QString path = m_ctx.storePath();
    QList<SessionInfo> sessions;
    if (QFileInfo::exists(path)) // listing creates no store
        sessions = SqliteChatStore(path).sessions();
    if (m_ctx.json()) {
        Json out = Json::array();
        for (const SessionInfo &s : sessions)
            out.push_back(s.toJson());
        m_ctx.console().writeJson(out);
        return;
    }
    if (sessions.isEmpty()) {
        m_ctx.console().write(QStringLiteral("No chat sessions in %1.\n").arg(QFileInfo(path).absoluteFilePath()));
        return;
    }
    TablePrinter table;
    table.addColumn(QStringLiteral("SESSION"), TablePrinter::Align::Left, 40);
    table.addColumn(QStringLiteral("MESSAGES"), TablePrinter::Align::Right);
    table.addColumn(QStringLiteral("FLUSHED"), TablePrinter::Align::Right);
    table.addColumn(QStringLiteral("FLUSHES"), TablePrinter::Align::Right);
    table.addColumn(QStringLiteral("UPDATED"));
    for (const SessionInfo &s : sessions)
        table.addRow({s.id, QString::number(s.activeMessages), QString::number(s.archivedMessages), QString::number(s.flushes),
                      toIso(s.updatedAt)});
    m_ctx.console().write(table.render());
}

void ChatCommands::show(const QString &session)
{
    const QString path = m_ctx.storePath();
    if (!QFileInfo::exists(path))
        throw Error(ErrorKind::NotFound, QStringLiteral("there is no chat session \"%1\": the store %2 does not exist").arg(session, path));
    SqliteChatStore store(path);
    const std::optional<SessionInfo> info = store.session(session);
    if (!info)
        throw Error(ErrorKind::NotFound,
                    QStringLiteral("there is no chat session \"%1\" in %2; \"mneme sessions list\" names them").arg(session, store.location()));
    const bool archived = m_ctx.args().has(QStringLiteral("archived"));
    const QList<SessionMessage> messages = store.messages(session, archived);
    const QMap<QString, Json> states = store.blockStates(session);
    if (m_ctx.json()) {
        Json list = Json::array();
        for (const SessionMessage &m : messages)
            list.push_back(m.toJson());
        Json blocks = Json::object();
        for (auto it = states.begin(); it != states.end(); ++it)
            blocks[it.key().toStdString()] = it.value();
        m_ctx.console().writeJson(Json{{"session", info->toJson()}, {"messages", list}, {"block_states", blocks}});
        return;
    }
    QString out = QStringLiteral("Session %1: %2 in the history, %3 flushed to its blocks in %4.\n")
                      .arg(info->id, Console::counted(info->activeMessages, QStringLiteral("message")))
                      .arg(info->archivedMessages)
                      .arg(Console::counted(info->flushes, QStringLiteral("flush"), QStringLiteral("flushes")));
    for (const SessionMessage &m : messages) {
        QString text = m.message.content;
        for (const ToolCall &call : m.message.toolCalls)
            text += QStringLiteral(" [calls %1 %2]").arg(call.name, QString::fromStdString(call.arguments.dump()));
        out += QStringLiteral("#%1 %2%3 %4: %5\n")
                   .arg(m.seq)
                   .arg(ChatMessage::roleName(m.message.role))
                   .arg(m.isArchived() ? QStringLiteral(" (flush %1)").arg(m.flush) : QString())
                   .arg(toIso(m.at), Console::oneLine(text));
    }
    for (auto it = states.begin(); it != states.end(); ++it)
        if (!it.value().is_null())
            out += QStringLiteral("block %1: %2\n").arg(it.key(), Console::oneLine(QString::fromStdString(it.value().dump())));
    m_ctx.console().write(out);
}

void ChatCommands::clear(const QString &session, bool andDelete)
{
    const QString path = m_ctx.storePath();
    if (!QFileInfo::exists(path) || !SqliteChatStore(path).session(session))
        throw Error(ErrorKind::NotFound,
                    QStringLiteral("there is no chat session \"%1\" in %2; \"mneme sessions list\" names them").arg(session, path));
    // Through a ChatMemory with the configured blocks, so that a vector block forgets its batches.
    const ChatMemoryConfig chatConfig = chatConfigOf(m_ctx.configSection("chat_memory"));
    Memory &memory = m_ctx.memory();
    auto store = ChatMemory::defaultStore(ChatMemoryConfig(), &memory);
    int deleted = 0;
    {
        ChatMemory chat(session, chatConfig, store, ChatMemory::buildBlocks(chatConfig.memoryBlocks, &memory, chatConfig.llm));
        chat.drain();
        deleted = chat.clear();
    }
    if (andDelete)
        store->deleteSession(session);
    if (m_ctx.json()) {
        m_ctx.console().writeJson(Json{{"session", session}, {andDelete ? "deleted_messages" : "cleared", deleted}, {"deleted", andDelete}});
        return;
    }
    const QString messages = Console::counted(deleted, QStringLiteral("message"));
    m_ctx.console().write(andDelete ? QStringLiteral("Deleted session %1 (%2).\n").arg(session, messages)
                                    : QStringLiteral("Cleared session %1: %2 deleted.\n").arg(session, messages));
}

} // namespace mneme::cli
