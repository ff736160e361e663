#include <mneme/runtime/agent_chat.h>

#include "runtime/agent_run_p.h"
#include "runtime/future_util_p.h"
#include <mneme/core/error.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/sqlite_chat_store.h>
#include <mneme/runtime/console_listener.h>
#include <mneme/runtime/event_bus.h>
#include <mneme/runtime/memory_tools.h>

#include <QCoreApplication>
#include <QEventLoop>
#include <QFutureWatcher>
#include <QPromise>

namespace mneme {

struct AgentChat::Turn
{
    QString message;
    QPromise<ChatReply> promise;
    QFuture<AgentResult> run;
    std::shared_ptr<UsageTally> tally = std::make_shared<UsageTally>();
    bool done = false;
};

AgentChat::AgentChat(std::shared_ptr<Agent> agent, std::shared_ptr<ChatMemory> memory, const AgentChatOptions &options, QObject *parent)
    : QObject(parent), m_agent(std::move(agent))
{
    qRegisterMetaType<mneme::ChatReply>();
    if (!m_agent)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("an AgentChat needs an agent"));
    if (!m_agent->config().mcpServers.empty())
        throw mcpServersNeedACrew(*m_agent, QStringLiteral("an AgentChat"));
    m_memory = memory ? memory : m_agent->config().chatMemory;
    if (!m_memory)
        m_memory = std::make_shared<ChatMemory>(QStringLiteral("chat"), ChatMemoryConfig(),
                                                std::make_shared<SqliteChatStore>(QStringLiteral(":memory:")));
    m_bus = options.eventBus ? options.eventBus : &EventBus::instance();
    m_bus->attachChatMemory(m_memory.get());
    if (Memory *m = m_agent->memory().memory())
        m_bus->attachMemory(m);
    if (m_agent->config().verbose)
        m_console = std::make_unique<ConsoleListener>(m_bus, stderr);
}

AgentChat::~AgentChat()
{
    cancel();
    for (QFuture<void> &f : m_background)
        f.waitForFinished();
}

QFuture<ChatReply> AgentChat::send(const QString &message)
{
    auto turn = std::make_shared<Turn>();
    turn->message = message;
    turn->promise.start();
    QFuture<ChatReply> future = turn->promise.future();
    if (message.trimmed().isEmpty()) {
        turn->promise.setException(Error(ErrorKind::InvalidArgument, QStringLiteral("a chat turn needs a message; this one is blank")));
        turn->promise.finish();
        return future;
    }
    m_queue << turn;
    // Cancelling a turn's future stops it (or drops it while it waits).
    auto *watch = new QFutureWatcher<ChatReply>(this);
    connect(watch, &QFutureWatcherBase::canceled, this, [this, turn] {
        if (m_running == turn)
            turn->run.cancel();
        else if (m_queue.removeAll(turn) > 0)
            finish(turn, std::nullopt, Error(ErrorKind::Cancelled, QStringLiteral("the chat turn was cancelled")));
    });
    connect(watch, &QFutureWatcherBase::finished, watch, &QObject::deleteLater);
    watch->setFuture(future);
    if (!m_running)
        QMetaObject::invokeMethod(this, &AgentChat::next, Qt::QueuedConnection);
    return future;
}

ChatReply AgentChat::sendAndWait(const QString &message)
{
    if (!QCoreApplication::instance())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("AgentChat::sendAndWait needs a QCoreApplication: create one first."));
    QFuture<ChatReply> future = send(message);
    QEventLoop loop;
    QFutureWatcher<ChatReply> watcher;
    connect(&watcher, &QFutureWatcherBase::finished, &loop, &QEventLoop::quit);
    watcher.setFuture(future);
    if (!future.isFinished())
        loop.exec();
    future.waitForFinished(); // rethrows the turn's Error
    if (future.isCanceled() || future.resultCount() == 0)
        throw Error(ErrorKind::Cancelled, QStringLiteral("the chat turn was cancelled"));
    return future.result();
}

void AgentChat::cancel()
{
    for (const std::shared_ptr<Turn> &turn : QList<std::shared_ptr<Turn>>(m_queue))
        finish(turn, std::nullopt, Error(ErrorKind::Cancelled, QStringLiteral("the chat turn was cancelled")));
    m_queue.clear();
    if (m_running)
        m_running->run.cancel();
}

void AgentChat::next()
{
    if (m_running || m_queue.isEmpty())
        return;
    m_running = m_queue.takeFirst();
    run(m_running);
}

void AgentChat::run(const std::shared_ptr<Turn> &turn)
{
    const AgentConfig &cfg = m_agent->config();
    Q_EMIT turnStarted(turn->message);
    QPointer<AgentChat> self(this);
    const auto track = [self](QFuture<void> job) {
        if (self)
            self->m_background << job;
    };
    std::vector<std::shared_ptr<Tool>> tools = cfg.tools;
    const MemoryRef memory = m_agent->memory();
    if (memory.isUsable()) {
        const auto add = [&tools](std::shared_ptr<Tool> tool) {
            const QString name = tool->name();
            if (std::none_of(tools.begin(), tools.end(), [&](const auto &t) { return t->name() == name; }))
                tools.push_back(std::move(tool));
        };
        add(MemoryTools::search(memory, AgentRun::memoryPool(), track));
        if (!memory.isReadOnly())
            add(MemoryTools::save(memory, cfg.role, AgentRun::memoryPool(), track));
    }

    Assignment a;
    a.agent = m_agent;
    a.persona = Persona{cfg.role, cfg.goal, cfg.backstory};
    a.recallQuery = turn->message;
    a.prompt = turn->message;
    a.tools = std::move(tools);
    a.memory = MemoryRef(false); // a chat's long-term memory comes through its chat memory's blocks
    a.taskName = QStringLiteral("chat");
    a.bus = m_bus;
    a.stepCallback = cfg.stepCallback;
    a.track = track;
    a.tally = turn->tally;
    a.chat = m_memory;
    a.onExecutor = [self](AgentExecutor *executor) {
        if (!self)
            return;
        connect(executor, &AgentExecutor::textChunk, self, [self](int, const QString &text) { Q_EMIT self->textChunk(text); });
        connect(executor, &AgentExecutor::toolStarted, self,
                [self](const QString &name, const QString &args, const QString &) { Q_EMIT self->toolStarted(name, args); });
        connect(executor, &AgentExecutor::toolFinished, self,
                [self](const QString &name, const QString &output, bool isError, qint64, const QString &) {
                    Q_EMIT self->toolFinished(name, output, isError);
                });
    };
    turn->run = AgentRun::start(std::move(a), this);
    whenFinished(this, turn->run, [this, turn](QFuture<AgentResult> f) {
        if (turn->done)
            return;
        if (f.resultCount() == 0) {
            finish(turn, std::nullopt, failureOf(f, QStringLiteral("the chat turn was cancelled")));
            return;
        }
        const AgentResult result = f.result();
        ChatReply reply;
        reply.text = result.finalAnswer;
        reply.toolCalls = result.toolCalls;
        reply.iterations = result.iterations;
        {
            QMutexLocker lock(&turn->tally->mutex);
            reply.usage = turn->tally->usage;
            reply.llmRequests = turn->tally->requests;
        }
        QFuture<QList<SessionMessage>> stored;
        try {
            stored = ChatTurns::record(m_memory, turn->message, result);
        } catch (const Error &e) {
            finish(turn, std::nullopt, e);
            return;
        }
        whenFinished(this, stored, [this, turn, reply](QFuture<QList<SessionMessage>> s) mutable {
            if (s.resultCount() == 0) {
                finish(turn, std::nullopt, failureOf(s));
                return;
            }
            reply.stored = s.result();
            finish(turn, reply, std::nullopt);
        });
    });
}

void AgentChat::finish(const std::shared_ptr<Turn> &turn, std::optional<ChatReply> reply, std::optional<Error> error)
{
    if (std::exchange(turn->done, true))
        return;
    if (reply && !turn->promise.isCanceled())
        turn->promise.addResult(*reply);
    else if (error && !turn->promise.isCanceled())
        turn->promise.setException(*error);
    turn->promise.finish();
    if (m_running == turn) {
        m_running.reset();
        QMetaObject::invokeMethod(this, &AgentChat::next, Qt::QueuedConnection);
    }
    // The signals come last: a slot may send the next message or delete the chat.
    if (reply)
        Q_EMIT turnCompleted(*reply);
    else if (error)
        Q_EMIT turnFailed(error->message());
}

Json ChatReply::toJson() const
{
    Json calls = Json::array();
    for (const AgentToolCall &c : toolCalls)
        calls.push_back({{"name", c.name}, {"arguments", c.arguments}, {"output", c.output}, {"is_error", c.isError}});
    Json messages = Json::array();
    for (const SessionMessage &m : stored)
        messages.push_back(m.toJson());
    return Json{{"text", text},
                {"tool_calls", calls},
                {"token_usage",
                 {{"prompt_tokens", usage.promptTokens}, {"completion_tokens", usage.completionTokens}, {"total_tokens", usage.totalTokens()}}},
                {"llm_requests", llmRequests},
                {"iterations", iterations},
                {"stored", messages}};
}

} // namespace mneme
