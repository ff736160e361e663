#include "runtime/agent_kickoff_p.h"

#include "memory/blocking_wait_guard_p.h"
#include "runtime/crew_run_p.h"
#include "runtime/future_util_p.h"
#include <mneme/core/error.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>
#include <mneme/runtime/console_listener.h>
#include <mneme/runtime/event_bus.h>
#include <mneme/runtime/memory_tools.h>

#include <QFutureWatcher>
#include <QPointer>
#include <QtConcurrent>

namespace mneme {

QFuture<AgentOutput> AgentKickoff::start(std::shared_ptr<Agent> agent, const QString &prompt, const AgentKickoffOptions &options)
{
    auto *kickoff = new AgentKickoff(std::move(agent), prompt, options);
    QFuture<AgentOutput> future = kickoff->m_promise.future();
    auto *watch = new QFutureWatcher<AgentOutput>(kickoff);
    connect(watch, &QFutureWatcherBase::canceled, kickoff, [kickoff] { kickoff->m_run.cancel(); });
    watch->setFuture(future);
    const QPointer<AgentKickoff> started(kickoff);
    BlockingWaitGuard::arm(QFuture<void>(future), kickoff->thread(), [started] {
        if (started)
            started->refuseBlockingWait();
    });
    kickoff->begin();
    return future;
}

void AgentKickoff::refuseBlockingWait()
{
    if (m_promise.future().isFinished())
        return;
    m_promise.setException(Error(ErrorKind::InvalidArgument,
                                 QStringLiteral("Agent \"%1\": the future of kickoff() was waited for on the agent's own thread, where the "
                                                "kickoff advances, so the wait would never end; the kickoff was stopped. Wait with "
                                                "kickoffAndWait() (it runs an event loop meanwhile), or attach a continuation with "
                                                "future.then(context, ...)")
                                     .arg(m_agent->role())));
    m_promise.finish();
    // The run winds up when the thread's event loop runs again; what it settles then is ignored.
    QMetaObject::invokeMethod(
        this, [this] { m_run.cancel(); }, Qt::QueuedConnection);
}

AgentKickoff::AgentKickoff(std::shared_ptr<Agent> agent, const QString &prompt, const AgentKickoffOptions &options)
    : m_agent(std::move(agent)), m_prompt(prompt), m_bus(options.eventBus ? options.eventBus : &EventBus::instance())
{
    m_promise.start();
    // Outside a crew the agent has the memory it was given, or none.
    m_memory = m_agent->memory().isUsable() ? m_agent->memory() : MemoryRef(false);
    if (m_agent->config().verbose)
        m_console = std::make_unique<ConsoleListener>(m_bus, stderr);
}

AgentKickoff::~AgentKickoff() = default;

void AgentKickoff::begin()
{
    const AgentConfig &cfg = m_agent->config();
    if (Memory *m = m_memory.memory())
        m_bus->attachMemory(m);
    if (cfg.chatMemory)
        m_bus->attachChatMemory(cfg.chatMemory.get());

    QPointer<AgentKickoff> self(this);
    const auto track = [self](QFuture<void> job) {
        if (self)
            self->m_background << job;
    };
    std::vector<std::shared_ptr<Tool>> tools = cfg.tools;
    if (m_memory.isUsable()) {
        const auto add = [&tools](std::shared_ptr<Tool> tool) {
            const QString name = tool->name();
            if (std::none_of(tools.begin(), tools.end(), [&](const auto &t) { return t->name() == name; }))
                tools.push_back(std::move(tool));
        };
        add(MemoryTools::search(m_memory, AgentRun::memoryPool(), track));
        if (!m_memory.isReadOnly())
            add(MemoryTools::save(m_memory, cfg.role, AgentRun::memoryPool(), track));
    }

    Assignment a;
    a.agent = m_agent;
    a.persona = Persona{cfg.role, cfg.goal, cfg.backstory};
    a.recallQuery = m_prompt;
    a.prompt = m_prompt;
    a.tools = std::move(tools);
    a.memory = m_memory;
    a.bus = m_bus;
    a.stepCallback = cfg.stepCallback;
    a.track = track;
    a.tally = m_tally;
    a.chat = cfg.chatMemory;
    m_run = AgentRun::start(std::move(a), this);
    whenFinished(this, m_run, [this](QFuture<AgentResult> f) { onExecuted(f); });
}

void AgentKickoff::onExecuted(QFuture<AgentResult> f)
{
    if (f.resultCount() == 0) {
        settle(std::nullopt, failureOf(f, QStringLiteral("Agent \"%1\": the kickoff was cancelled.").arg(m_agent->role())));
        return;
    }
    const AgentResult result = f.result();
    AgentOutput out;
    out.raw = result.finalAnswer;
    out.agentRole = m_agent->role();
    out.toolCalls = result.toolCalls;
    out.iterations = result.iterations;
    {
        QMutexLocker lock(&m_tally->mutex);
        out.usage = m_tally->usage;
        out.llmRequests = m_tally->requests;
    }
    if (m_memory.isUsable() && !m_memory.isReadOnly() && !out.raw.trimmed().isEmpty())
        m_background << AgentRun::saveFacts(m_memory, out.agentRole,
                                            CrewRun::memoryBlob(m_prompt, out.agentRole, QStringLiteral("A complete answer."), out.raw), m_bus);
    if (const std::shared_ptr<ChatMemory> chat = m_agent->config().chatMemory) {
        QFuture<QList<SessionMessage>> stored;
        try {
            stored = ChatTurns::record(chat, m_prompt, result);
        } catch (const Error &e) {
            settle(std::nullopt, e);
            return;
        }
        whenFinished(this, stored, [this, out](QFuture<QList<SessionMessage>> s) {
            if (s.resultCount() == 0)
                settle(std::nullopt, failureOf(s));
            else
                settle(out, std::nullopt);
        });
        return;
    }
    settle(out, std::nullopt);
}

void AgentKickoff::settle(std::optional<AgentOutput> output, std::optional<Error> error)
{
    if (std::exchange(m_settling, true))
        return;
    const QList<QFuture<void>> background = m_background;
    Memory *memory = m_memory.memory();
    QFuture<void> drain = QtConcurrent::run(AgentRun::memoryPool(), [background, memory] {
        for (QFuture<void> f : background)
            f.waitForFinished();
        if (memory)
            memory->drainWrites();
    });
    whenFinished(this, drain, [this, output, error](QFuture<void>) {
        if (output && !m_promise.isCanceled())
            m_promise.addResult(*output);
        else if (error && !m_promise.isCanceled())
            m_promise.setException(*error);
        m_promise.finish();
        deleteLater();
    });
}

} // namespace mneme
