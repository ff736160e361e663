#include "runtime/agent_run_p.h"

#include "runtime/future_util_p.h"
#include <mneme/core/error.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>
#include <mneme/runtime/event_bus.h>

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QThreadPool>
#include <QTimer>
#include <QtConcurrent>
#include <algorithm>

namespace mneme {

namespace {

constexpr int kRecallLimit = 5;


Event agentEvent(const char *type, const Json &props, const QString &taskId, const QString &agentId, const QString &parent = {})
{
    return Event::make(QLatin1String(type), props, QStringLiteral("agent"), taskId, agentId, parent);
}

} // namespace

QFuture<AgentResult> AgentRun::start(Assignment assignment, QObject *parent)
{
    auto *run = new AgentRun(std::move(assignment), parent);
    QFuture<AgentResult> future = run->m_promise.future();
    auto *watch = new QFutureWatcher<AgentResult>(run);
    connect(watch, &QFutureWatcherBase::canceled, run, &AgentRun::abort);
    watch->setFuture(future);
    run->begin();
    return future;
}

AgentRun::AgentRun(Assignment assignment, QObject *parent) : QObject(parent), m_a(std::move(assignment))
{
    m_promise.start();
}

AgentRun::~AgentRun()
{
    abort();
}

void AgentRun::abortCoworkers()
{
    QList<AgentRun *> coworkers = findChildren<AgentRun *>(Qt::FindDirectChildrenOnly);
    std::reverse(coworkers.begin(), coworkers.end());
    for (AgentRun *run : coworkers)
        run->abort();
}

void AgentRun::abort()
{
    if (m_done)
        return;
    if (m_deadline)
        m_deadline->stop();
    // Inside out: the coworkers' runs, then this run's request and tools, then the run itself.
    abortCoworkers();
    if (m_executor)
        m_executor->cancel();
    fail(Error(ErrorKind::Cancelled, QStringLiteral("The agent's run was cancelled.")));
}

Error mcpServersNeedACrew(const Agent &agent, const QString &how)
{
    return Error(ErrorKind::InvalidArgument,
                 QStringLiteral("Agent \"%1\" has MCP servers (AgentConfig::mcpServers), which only a crew's kickoff starts; %2 "
                                "does not. Run the agent in a Crew, or start an McpClient yourself and give its tools() in "
                                "AgentConfig::tools (docs/mcp.md).")
                     .arg(agent.role(), how));
}

bool AgentRun::isTransient(const Error &error)
{
    switch (error.kind()) {
    case ErrorKind::ServerError:
    case ErrorKind::RateLimited:
    case ErrorKind::Network:
    case ErrorKind::Timeout:
    case ErrorKind::MalformedReply:
    case ErrorKind::Provider:
        return true;
    default:
        return false;
    }
}

QThreadPool *AgentRun::memoryPool()
{
    // Leaked on purpose: work may still be finishing while statics are destroyed at exit.
    static QThreadPool *pool = [] {
        auto *p = new QThreadPool;
        p->setMaxThreadCount(8);
        p->setObjectName(QStringLiteral("mneme-memory"));
        return p;
    }();
    return pool;
}

QFuture<void> AgentRun::saveFacts(const MemoryRef &memory, const QString &role, const QString &blob, EventBus *bus)
{
    // Extraction may call the LLM and blocks: it runs on a worker thread. Failures are reported, never thrown.
    return QtConcurrent::run(memoryPool(), [memory, role, blob, bus] {
        try {
            const QStringList facts = memory.extractMemories(blob);
            if (!facts.isEmpty())
                memory.rememberFacts(facts, role);
        } catch (const std::exception &e) {
            qWarning().noquote() << "mneme: could not save the output of agent" << role << "to memory:" << e.what();
            bus->publish(agentEvent(events::kMemorySaveFailed,
                                    {{"value", "task output"}, {"agent_role", role}, {"error", QString::fromUtf8(e.what())}}, {}, {}));
        }
    });
}

QString AgentRun::memorySection(const QString &block)
{
    return QStringLiteral("\n\n# Memories from earlier work\n%1\n\nThese memories were chosen automatically and may be "
                          "incomplete. When the task asks you to count, list or total things, search memory with several "
                          "different queries before you answer, and enumerate each distinct item you find.")
        .arg(block);
}

void AgentRun::begin()
{
    QStringList toolNames;
    for (const auto &t : m_a.tools)
        toolNames << t->name();
    m_eventId = m_a.bus->open(agentEvent(events::kAgentExecutionStarted,
                                         {{"agent_role", m_a.persona.role}, {"task_name", m_a.taskName}, {"tools", toolNames}},
                                         m_a.taskId, m_a.agent->id(), m_a.parentEventId));
    if (m_a.execution) {
        m_a.execution->eventId = m_eventId;
        m_a.execution->run = this;
    }
    if (m_a.memory.isUsable())
        retrieve();
    else
        prepare();
}

void AgentRun::retrieve()
{
    // Recall blocks, so it runs on a worker thread; its events open a scope there, so the memory
    // query events Memory emits on that thread nest under the retrieval.
    EventBus *bus = m_a.bus;
    const MemoryRef memory = m_a.memory;
    const QString query = m_a.recallQuery;
    const QString taskId = m_a.taskId;
    const QString agentId = m_a.agent->id();
    const QString parent = m_eventId;
    const QList<QFuture<void>> savesBefore = m_a.savesBefore;
    const auto stopped = m_stopped;
    QFuture<QString> job = QtConcurrent::run(memoryPool(), [bus, memory, query, taskId, agentId, parent, savesBefore, stopped]() -> QString {
        QElapsedTimer clock;
        clock.start();
        for (QFuture<void> save : savesBefore)
            save.waitForFinished();
        if (*stopped) // the run was cancelled or failed meanwhile: no recall, no events
            return {};
        bus->begin(agentEvent(events::kMemoryRetrievalStarted, {{"task_id", taskId}}, taskId, agentId, parent));
        try {
            RecallOptions options;
            options.limit = kRecallLimit;
            const QList<MemoryMatch> matches = memory.recall(query, options);
            QStringList lines;
            for (const MemoryMatch &m : matches)
                lines << m.format();
            QString block = lines.isEmpty() ? QString() : QStringLiteral("Relevant memories:\n") + lines.join(QLatin1Char('\n'));
            // Graph memory: the relations the task's entities take part in.
            QStringList relations;
            for (const RelationMatch &r : memory.recallRelations(query, options))
                relations << r.format();
            if (!relations.isEmpty())
                block += (block.isEmpty() ? QString() : QStringLiteral("\n\n")) + QStringLiteral("Known relations:\n")
                       + relations.join(QLatin1Char('\n'));
            bus->end(QLatin1String(events::kMemoryRetrievalCompleted),
                     {{"task_id", taskId}, {"memory_content", block}, {"retrieval_time_ms", double(clock.nsecsElapsed()) / 1e6}});
            return block;
        } catch (const std::exception &e) {
            // A memory failure never fails the task: it runs without memories.
            bus->end(QLatin1String(events::kMemoryRetrievalFailed), {{"task_id", taskId}, {"error", QString::fromUtf8(e.what())}});
            return {};
        }
    });
    if (m_a.track)
        m_a.track(QFuture<void>(job));
    auto *watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher] {
        watcher->deleteLater();
        if (m_done)
            return;
        const QFuture<QString> f = watcher->future();
        m_memoryBlock = f.resultCount() > 0 ? f.result() : QString();
        prepare();
    });
    watcher->setFuture(job);
}

QString AgentRun::userPrompt() const
{
    QString prompt = m_a.prompt;
    if (!m_memoryBlock.trimmed().isEmpty())
        prompt += memorySection(m_memoryBlock);
    return prompt;
}

void AgentRun::prepare()
{
    if (m_done)
        return;
    if (!m_a.chat) {
        execute();
        return;
    }
    const std::vector<ChatMessage> framing = {
        ChatMessage::system(Agent::systemPrompt(m_a.persona.role, m_a.persona.goal, m_a.persona.backstory)),
        ChatMessage::user(userPrompt())};
    QFuture<std::vector<ChatMessage>> messages;
    try {
        messages = m_a.chat->getAsync(framing);
    } catch (const Error &e) {
        fail(e);
        return;
    }
    whenFinished(this, messages, [this](QFuture<std::vector<ChatMessage>> f) {
        if (m_done)
            return;
        if (f.resultCount() == 0) {
            fail(failureOf(f, QStringLiteral("Reading the chat memory was cancelled.")));
            return;
        }
        m_messages = f.result();
        execute();
    });
}

void AgentRun::execute()
{
    if (m_done)
        return;
    ++m_attempt;
    m_timedOut = false;
    const AgentConfig &cfg = m_a.agent->config();
    std::vector<ChatMessage> messages = m_messages;
    if (messages.empty()) {
        messages.push_back(ChatMessage::system(Agent::systemPrompt(m_a.persona.role, m_a.persona.goal, m_a.persona.backstory)));
        messages.push_back(ChatMessage::user(userPrompt()));
    }

    AgentOptions options;
    options.maxIterations = cfg.maxIter;
    options.stream = cfg.stream;
    options.stepCallback = m_a.stepCallback;

    if (m_executor)
        m_executor->deleteLater();
    m_executor = new AgentExecutor(m_a.agent->llm(), this);
    m_a.bus->attachExecutor(m_executor, m_a.agent->id(), m_a.taskId, m_eventId);
    if (m_a.onExecutor)
        m_a.onExecutor(m_executor);
    if (const auto tally = m_a.tally)
        connect(m_executor, &AgentExecutor::llmCallCompleted, this,
                [tally](int, int prompt, int completion) { tally->add(TokenUsage{prompt, completion}, 1); });
    m_running = m_executor->run(messages, m_a.tools, options);

    if (cfg.maxExecutionTime > 0) {
        delete m_deadline;
        m_deadline = new QTimer(this);
        m_deadline->setSingleShot(true);
        connect(m_deadline, &QTimer::timeout, this, [this] {
            m_timedOut = true;
            abortCoworkers();
            if (m_executor)
                m_executor->cancel();
        });
        m_deadline->start(cfg.maxExecutionTime * 1000);
    }
    auto *watcher = new QFutureWatcher<AgentResult>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher] {
        watcher->deleteLater();
        onExecuted(watcher->future());
    });
    watcher->setFuture(m_running);
}

void AgentRun::onExecuted(QFuture<AgentResult> f)
{
    if (m_deadline)
        m_deadline->stop();
    if (m_done)
        return;
    if (f.resultCount() > 0) {
        const AgentResult result = f.result();
        m_a.bus->close(m_eventId, agentEvent(events::kAgentExecutionCompleted,
                                             {{"agent_role", m_a.persona.role},
                                              {"output", result.finalAnswer},
                                              {"iterations", result.iterations},
                                              {"attempts", m_attempt}},
                                             {}, {}));
        m_done = true;
        *m_stopped = true;
        m_promise.addResult(result);
        finish();
        return;
    }
    Error error = failureOf(f, QStringLiteral("The agent's run was cancelled."));
    if (m_timedOut)
        error = Error(ErrorKind::Timeout,
                      QStringLiteral("Agent \"%1\" did not finish %2 within its maxExecutionTime of %3 s; raise "
                                     "AgentConfig::maxExecutionTime, or set it to 0 for no limit.")
                          .arg(m_a.persona.role,
                               m_a.taskName.isEmpty() ? QStringLiteral("its work") : QStringLiteral("task \"%1\"").arg(m_a.taskName))
                          .arg(m_a.agent->config().maxExecutionTime));
    const bool cancelled = m_promise.isCanceled() || (error.kind() == ErrorKind::Cancelled && !m_timedOut);
    if (!cancelled && isTransient(error) && m_attempt <= m_a.agent->config().maxRetryLimit) {
        qInfo().noquote() << QStringLiteral("mneme: agent \"%1\" failed (%2); executing it again (%3 of %4 retries)")
                                 .arg(m_a.persona.role, error.message())
                                 .arg(m_attempt)
                                 .arg(m_a.agent->config().maxRetryLimit);
        execute();
        return;
    }
    fail(error);
}

void AgentRun::fail(const Error &error)
{
    if (m_done)
        return;
    m_done = true;
    *m_stopped = true;
    abortCoworkers();
    m_a.bus->close(m_eventId, agentEvent(events::kAgentExecutionError,
                                         {{"agent_role", m_a.persona.role}, {"error", error.message()}, {"attempts", m_attempt}},
                                         {}, {}));
    if (!m_promise.isCanceled())
        m_promise.setException(error);
    finish();
}

void AgentRun::finish()
{
    m_promise.finish();
    if (m_executor)
        m_executor->deleteLater();
    deleteLater();
}

QFuture<QList<SessionMessage>> ChatTurns::record(const std::shared_ptr<ChatMemory> &chat, const QString &input, const AgentResult &result)
{
    QList<SessionMessage> turn{SessionMessage(ChatMessage::user(input))};
    turn += result.transcript;
    return chat->putMessagesAsync(turn);
}

} // namespace mneme
