#include <mneme/runtime/crew.h>

#include "memory/blocking_wait_guard_p.h"
#include "runtime/crew_run_p.h"
#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>
#include <mneme/runtime/console_listener.h>
#include <mneme/runtime/event_bus.h>

#include <QCoreApplication>
#include <QEventLoop>
#include <QFutureWatcher>
#include <QPointer>
#include <QPromise>
#include <QSet>
#include <QThread>
#include <QUuid>
#include <algorithm>

namespace mneme {

namespace {

QString taskLabel(const std::shared_ptr<Task> &task)
{
    return QStringLiteral("Task \"%1\"").arg(task->displayName());
}

} // namespace

Crew::Crew(CrewConfig config, QObject *parent)
    : QObject(parent), m_config(std::move(config)), m_id(QUuid::createUuid().toString(QUuid::WithoutBraces))
{
    qRegisterMetaType<mneme::TaskOutput>();
    qRegisterMetaType<mneme::CrewOutput>();
    if (m_config.name.trimmed().isEmpty())
        m_config.name = QStringLiteral("crew");
    m_bus = m_config.eventBus ? m_config.eventBus : &EventBus::instance();
    validate();

    if (m_config.process == Process::Hierarchical) {
        if (m_config.managerAgent) {
            m_manager = m_config.managerAgent;
        } else {
            AgentConfig manager;
            manager.role = QStringLiteral("Crew Manager");
            manager.goal = QStringLiteral("Get every task done well by giving the right parts of it to the right "
                                          "coworkers and combining their answers.");
            manager.backstory = QStringLiteral("You lead a team of specialists. You know what each of them does best, "
                                               "you hand out work with all the context it needs, you check what comes "
                                               "back, and you put the final answer together yourself.");
            manager.llm = m_config.managerLlm;
            manager.allowDelegation = true;
            m_manager = std::make_shared<Agent>(std::move(manager));
        }
    }

    m_memory = m_config.memory;
    if (m_memory.kind() == MemoryRef::Kind::Own) {
        MemoryConfig cfg = m_config.memoryConfig;
        cfg.rootScope = QStringLiteral("/crew/") + ScopePath::sanitizeName(m_config.name);
        if (!m_config.embedder.is_null())
            cfg.embedder = m_config.embedder;
        m_ownMemory = std::make_unique<mneme::Memory>(cfg);
        if (cfg.llm.is_null()) {
            // CrewAI: the crew's chat LLM, else the first agent's, shared (the same provider object).
            if (m_config.chatLlm.isSet())
                m_ownMemory->setLlm(m_config.chatLlm.resolve());
            else if (!m_config.agents.empty())
                m_ownMemory->setLlm(m_config.agents.front()->llm());
        }
        m_memory = MemoryRef(m_ownMemory.get());
    } else if (!m_memory.isUsable()) {
        m_memory = MemoryRef(false);
    }

    // Memory events reach the bus for every memory a kickoff may use.
    QSet<mneme::Memory *> memories;
    if (m_memory.memory())
        memories.insert(m_memory.memory());
    std::vector<std::shared_ptr<Agent>> everyone = m_config.agents;
    for (const auto &t : m_config.tasks)
        if (t->config().agent)
            everyone.push_back(t->config().agent);
    if (m_manager)
        everyone.push_back(m_manager);
    for (const auto &a : everyone)
        if (mneme::Memory *m = a->memory().memory())
            memories.insert(m);
    for (mneme::Memory *m : memories)
        m_bus->attachMemory(m);

    // Chat sessions for the agents without one of their own, in one store.
    if (m_config.chatMemory) {
        const std::shared_ptr<ChatStore> store = ChatMemory::defaultStore(m_config.chatMemoryConfig, m_memory.memory());
        for (const auto &a : everyone) {
            if (a->config().chatMemory || m_chatMemories.contains(a.get()))
                continue;
            const QString session = QStringLiteral("crew/%1/%2").arg(ScopePath::sanitizeName(m_config.name), ScopePath::sanitizeName(a->role()));
            m_chatMemories.insert(a.get(), std::make_shared<ChatMemory>(
                                               session, m_config.chatMemoryConfig, store,
                                               ChatMemory::buildBlocks(m_config.chatMemoryConfig.memoryBlocks, m_memory.memory(),
                                                                       m_config.chatMemoryConfig.llm)));
        }
    }
    for (const auto &a : everyone)
        if (const std::shared_ptr<ChatMemory> chat = chatMemoryOf(a))
            m_bus->attachChatMemory(chat.get());
}

std::shared_ptr<ChatMemory> Crew::chatMemoryOf(const std::shared_ptr<Agent> &agent) const
{
    if (!agent)
        return nullptr;
    return agent->config().chatMemory ? agent->config().chatMemory : m_chatMemories.value(agent.get());
}

Crew::~Crew()
{
    for (CrewRun *run : std::vector<CrewRun *>(m_runs))
        run->cancel();
    // Background memory work (recalls, fact extraction) uses memories this crew may own.
    for (QFuture<void> &f : m_background)
        f.waitForFinished();
    m_chatMemories.clear(); // their blocks use the crew's memory: they go first
    if (m_ownMemory)
        m_ownMemory->close();
}

void Crew::validate() const
{
    const CrewConfig &c = m_config;
    const QString crew = QStringLiteral("Crew \"%1\"").arg(c.name);
    if (c.tasks.empty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1 has no tasks: add at least one to CrewConfig::tasks.").arg(crew));
    for (const auto &a : c.agents)
        if (!a)
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1 has a null agent in CrewConfig::agents.").arg(crew));
    QHash<const Task *, size_t> position;
    for (size_t i = 0; i < c.tasks.size(); ++i) {
        if (!c.tasks[i])
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1 has a null task in CrewConfig::tasks.").arg(crew));
        if (position.contains(c.tasks[i].get()))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("%1: %2 is listed twice; create a second Task to run it again.").arg(crew, taskLabel(c.tasks[i])));
        position.insert(c.tasks[i].get(), i);
    }

    if (c.process == Process::Sequential) {
        for (const auto &t : c.tasks)
            if (!t->config().agent)
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("%1 runs sequentially, so every task needs an agent, and %2 has none: set "
                                           "TaskConfig::agent.")
                                .arg(crew, taskLabel(t)));
    } else {
        if (!c.managerLlm.isSet() && !c.managerAgent)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("%1 is hierarchical and needs a manager: set CrewConfig::managerLlm (the crew builds "
                                       "the manager) or CrewConfig::managerAgent.")
                            .arg(crew));
        if (c.managerAgent) {
            if (std::find(c.agents.begin(), c.agents.end(), c.managerAgent) != c.agents.end())
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("%1: the manager agent \"%2\" must not also be one of CrewConfig::agents.")
                                .arg(crew, c.managerAgent->role()));
            if (!c.managerAgent->config().tools.empty())
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("%1: the manager agent \"%2\" must have no tools of its own; it works by delegating "
                                           "to the crew's agents.")
                                .arg(crew, c.managerAgent->role()));
        }
        if (c.agents.empty())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("%1 is hierarchical but has no agents for its manager to delegate to.").arg(crew));
        for (const auto &t : c.tasks)
            if (c.managerAgent && t->config().agent == c.managerAgent)
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("%1: %2 names the manager as its agent; in a hierarchical crew a task's agent "
                                           "is the coworker the manager delegates to. Name one of CrewConfig::agents, "
                                           "or none.")
                                .arg(crew, taskLabel(t)));
    }

    QSet<QString> servers;
    for (const McpServerConfig &server : c.mcpServers) {
        try {
            server.validate();
        } catch (const Error &e) {
            throw Error(e.kind(), QStringLiteral("%1: %2").arg(crew, e.message()));
        }
        if (servers.contains(server.name))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("%1 has two MCP servers named \"%2\"; give each a unique name.").arg(crew, server.name));
        servers.insert(server.name);
    }
    std::vector<std::shared_ptr<Agent>> everyone = c.agents;
    for (const auto &t : c.tasks)
        if (t->config().agent)
            everyone.push_back(t->config().agent);
    for (const auto &a : everyone)
        for (const McpServerConfig &server : a->config().mcpServers)
            if (servers.contains(server.name))
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("%1: agent \"%2\" has an MCP server named \"%3\" like one of the crew's; "
                                           "rename one of them (names tell them apart in events and errors).")
                                .arg(crew, a->role(), server.name));
    if (c.managerAgent && !c.managerAgent->config().mcpServers.empty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1: the manager agent \"%2\" must have no MCP servers; it works by delegating to the "
                                   "crew's agents, who may have them.")
                        .arg(crew, c.managerAgent->role()));

    size_t trailingAsync = 0;
    for (auto it = c.tasks.rbegin(); it != c.tasks.rend() && (*it)->config().asyncExecution; ++it)
        ++trailingAsync;
    if (trailingAsync > 1)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1 ends with %2 asynchronous tasks in a row; at most one may end a crew. Make the "
                                   "others synchronous or add a synchronous task after them.")
                        .arg(crew)
                        .arg(trailingAsync));

    for (size_t i = 0; i < c.tasks.size(); ++i) {
        const auto &t = c.tasks[i];
        if (!t->config().context)
            continue;
        for (const auto &ref : *t->config().context) {
            if (!position.contains(ref.get()))
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("%1: %2 has %3 in its context, which is not one of this crew's tasks.")
                                .arg(crew, taskLabel(t), taskLabel(ref)));
            const size_t j = position.value(ref.get());
            if (j > i)
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("%1: %2 has %3 in its context, but that task comes later; a task can only use "
                                           "the output of tasks before it.")
                                .arg(crew, taskLabel(t), taskLabel(ref)));
        }
        if (t->config().asyncExecution) {
            // The asynchronous tasks right before this one run at the same time: their output does not exist yet.
            for (size_t j = i; j-- > 0 && c.tasks[j]->config().asyncExecution;) {
                const auto &ctx = *t->config().context;
                if (std::find(ctx.begin(), ctx.end(), c.tasks[j]) != ctx.end())
                    throw Error(ErrorKind::InvalidArgument,
                                QStringLiteral("%1: asynchronous %2 has %3 in its context, but that asynchronous task runs "
                                               "at the same time; put a synchronous task between them or drop it from "
                                               "the context.")
                                    .arg(crew, taskLabel(t), taskLabel(c.tasks[j])));
            }
        }
    }
}

mneme::Memory *Crew::memory() const
{
    return m_memory.memory();
}

void Crew::track(QFuture<void> work)
{
    m_background.erase(std::remove_if(m_background.begin(), m_background.end(), [](const QFuture<void> &f) { return f.isFinished(); }),
                       m_background.end());
    m_background.push_back(std::move(work));
}

QFuture<CrewOutput> Crew::kickoff(const Json &inputs)
{
    if (QThread::currentThread() != thread()) {
        // The kickoff runs on the crew's thread; this thread gets a future that follows it.
        auto promise = std::make_shared<QPromise<CrewOutput>>();
        promise->start();
        QFuture<CrewOutput> out = promise->future();
        QMetaObject::invokeMethod(
            this, [this, inputs, promise] {
                if (promise->isCanceled()) {
                    promise->finish();
                    return;
                }
                QFuture<CrewOutput> inner = kickoff(inputs);
                auto *follow = new QFutureWatcher<CrewOutput>(this);
                connect(follow, &QFutureWatcherBase::finished, this, [follow, promise] {
                    follow->deleteLater();
                    QFuture<CrewOutput> f = follow->future();
                    try {
                        f.waitForFinished();
                        if (f.resultCount() > 0)
                            promise->addResult(f.result());
                        else
                            promise->future().cancel();
                    } catch (...) {
                        promise->setException(std::current_exception());
                    }
                    promise->finish();
                });
                follow->setFuture(inner);
                auto *cancelWatch = new QFutureWatcher<CrewOutput>(this);
                connect(cancelWatch, &QFutureWatcherBase::canceled, this, [inner]() mutable { inner.cancel(); });
                connect(cancelWatch, &QFutureWatcherBase::finished, cancelWatch, &QObject::deleteLater);
                cancelWatch->setFuture(promise->future());
            },
            Qt::QueuedConnection);
        return out;
    }
    if (!inputs.is_null() && !inputs.is_object())
        return QtFuture::makeExceptionalFuture<CrewOutput>(
            Error(ErrorKind::InvalidArgument,
                  QStringLiteral("Crew \"%1\": kickoff inputs must be a JSON object such as {\"topic\": \"AI\"}.").arg(m_config.name)));
    auto *run = new CrewRun(this, inputs.is_null() ? Json::object() : inputs);
    QFuture<CrewOutput> future = run->start();
    const QPointer<CrewRun> started(run);
    BlockingWaitGuard::arm(QFuture<void>(future), thread(), [started] {
        if (started)
            started->refuseBlockingWait();
    });
    return future;
}

CrewOutput Crew::kickoffAndWait(const Json &inputs)
{
    if (!QCoreApplication::instance())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("Crew::kickoffAndWait needs a QCoreApplication (or QApplication): create one first."));
    QFuture<CrewOutput> future = kickoff(inputs);
    // On another thread the crew's own event loop runs the kickoff, and this thread just waits.
    if (QThread::currentThread() == thread()) {
        // The kickoff advances on this thread's event loop: run one until it ends.
        QEventLoop loop;
        QFutureWatcher<CrewOutput> watcher;
        connect(&watcher, &QFutureWatcherBase::finished, &loop, &QEventLoop::quit);
        watcher.setFuture(future);
        if (!future.isFinished())
            loop.exec();
    }
    future.waitForFinished(); // rethrows the kickoff's Error
    if (future.isCanceled() || future.resultCount() == 0)
        throw Error(ErrorKind::Cancelled, QStringLiteral("Crew \"%1\": the kickoff was cancelled.").arg(m_config.name));
    return future.result();
}

void Crew::cancel()
{
    for (CrewRun *run : std::vector<CrewRun *>(m_runs))
        run->cancel();
}

int Crew::resetMemories()
{
    if (!m_memory.isUsable())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("Crew \"%1\" has no memory to reset; set CrewConfig::memory.").arg(m_config.name));
    return m_memory.reset();
}

} // namespace mneme
