#include "runtime/crew_run_p.h"

#include "runtime/future_util_p.h"
#include <mneme/core/error.h>
#include <mneme/core/json_reply.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>
#include <mneme/runtime/console_listener.h>
#include <mneme/runtime/event_bus.h>
#include <mneme/runtime/function_tool.h>
#include <mneme/runtime/mcp_client.h>
#include <mneme/runtime/memory_tools.h>

#include <QDebug>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QSaveFile>
#include <QtConcurrent>
#include <algorithm>

namespace mneme {

namespace {

const QString kContextSeparator = QStringLiteral("\n\n----------\n\n");
// An output that is a delegation transcript holds no facts of the agent's own.
const QString kDelegationMarker = QStringLiteral("Action: delegate_work_to_coworker");

Event makeEvent(const char *type, const Json &props, const QString &sourceType, const QString &taskId = {},
                const QString &agentId = {}, const QString &parent = {})
{
    return Event::make(QLatin1String(type), props, sourceType, taskId, agentId, parent);
}


// The exception being handled as an Error, its text after `context`.
Error currentError(const QString &context)
{
    const Error e = errorFrom(std::current_exception());
    return Error(e.kind(), QStringLiteral("%1: %2").arg(context, e.message()), e.httpStatus());
}

// chat() reports failures through its future; a provider that throws anyway is treated the same.
QFuture<ChatResponse> chatOf(LlmProvider &llm, const ChatRequest &request)
{
    try {
        return llm.chat(request);
    } catch (...) {
        return QtFuture::makeExceptionalFuture<ChatResponse>(currentError(QStringLiteral("The LLM %1 failed").arg(llm.id())));
    }
}

QString summaryOf(const QString &description)
{
    const QStringList words = description.simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    return words.size() <= 10 ? words.join(QLatin1Char(' ')) : words.mid(0, 10).join(QLatin1Char(' ')) + QStringLiteral("...");
}

QString roleKey(const QString &role)
{
    QString r = role.trimmed();
    static const QString quotes = QStringLiteral("\"'`");
    while (!r.isEmpty() && quotes.contains(r.front()))
        r.remove(0, 1);
    while (!r.isEmpty() && quotes.contains(r.back()))
        r.chop(1);
    return r.trimmed().toCaseFolded();
}

} // namespace

// ---------------------------------------------------------------------------------------------
// CrewRun

CrewRun::CrewRun(Crew *crew, Json inputs) : QObject(crew), m_crew(crew), m_inputs(std::move(inputs))
{
    m_crew->m_runs.push_back(this);
}

CrewRun::~CrewRun()
{
    if (m_crew) {
        auto &runs = m_crew->m_runs;
        runs.erase(std::remove(runs.begin(), runs.end(), this), runs.end());
    }
}

QFuture<CrewOutput> CrewRun::start()
{
    m_promise.start();
    QFuture<CrewOutput> future = m_promise.future();
    auto *watch = new QFutureWatcher<CrewOutput>(this);
    connect(watch, &QFutureWatcherBase::canceled, this, [this] { cancel(); });
    watch->setFuture(future);
    begin();
    return future;
}

QString CrewRun::memoryBlob(const QString &description, const QString &role, const QString &expectedOutput,
                            const QString &output)
{
    return QStringLiteral("Task: %1\nAgent: %2\nExpected result: %3\nResult: %4").arg(description, role, expectedOutput, output);
}

void CrewRun::begin()
{
    const CrewConfig &cfg = m_crew->m_config;
    bool verbose = cfg.verbose || (m_crew->m_manager && m_crew->m_manager->config().verbose);
    for (const auto &a : cfg.agents)
        verbose = verbose || a->config().verbose;
    for (const auto &t : cfg.tasks)
        verbose = verbose || (t->config().agent && t->config().agent->config().verbose);
    if (verbose)
        m_console = std::make_unique<ConsoleListener>(bus(), stderr);

    QStringList inputKeys;
    for (auto it = m_inputs.begin(); it != m_inputs.end(); ++it)
        inputKeys << QString::fromStdString(it.key());
    // Inputs may hold anything, secrets included: the event names them without their values.
    m_eventId = bus()->open(makeEvent(events::kCrewKickoffStarted,
                                      {{"crew_name", cfg.name}, {"crew_id", m_crew->id()}, {"input_keys", inputKeys}, {"process", cfg.process == Process::Hierarchical ? "hierarchical" : "sequential"}},
                                      QStringLiteral("crew")));
    QPointer<CrewRun> self(this);
    Q_EMIT m_crew->kickoffStarted(m_eventId);
    if (!self || m_closed) // a slot deleted the crew or cancelled the kickoff
        return;

    try {
        for (const auto &callback : cfg.beforeKickoff) {
            m_inputs = callback(m_inputs);
            if (!m_inputs.is_object())
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("A beforeKickoff callback of crew \"%1\" returned %2 instead of a JSON object of "
                                           "inputs.")
                                .arg(cfg.name, QString::fromStdString(m_inputs.type_name())));
        }
        const bool fill = !m_inputs.empty();
        const auto text = [&](const QString &value, const QString &where) {
            return fill ? Task::interpolate(value, m_inputs, where) : value;
        };
        std::vector<std::shared_ptr<Agent>> agents = cfg.agents;
        for (const auto &t : cfg.tasks)
            if (t->config().agent)
                agents.push_back(t->config().agent);
        if (m_crew->m_manager)
            agents.push_back(m_crew->m_manager);
        for (const auto &a : agents) {
            if (m_personas.contains(a.get()))
                continue;
            const QString who = QStringLiteral("Agent \"%1\"").arg(a->role());
            m_personas.insert(a.get(), Persona{text(a->config().role, who + QStringLiteral(" role")),
                                               text(a->config().goal, who + QStringLiteral(" goal")),
                                               text(a->config().backstory, who + QStringLiteral(" backstory"))});
            if (mneme::Memory *m = memoryOf(a).memory())
                m_memories.insert(m);
            if (const std::shared_ptr<ChatMemory> chat = m_crew->chatMemoryOf(a))
                m_chatMemories.insert(chat.get());
        }
        if (m_crew->m_memory.memory())
            m_memories.insert(m_crew->m_memory.memory());
        for (const auto &t : cfg.tasks) {
            const QString where = QStringLiteral("Task \"%1\"").arg(t->displayName());
            Slot slot;
            slot.task = t;
            slot.description = text(t->config().description, where + QStringLiteral(" description"));
            slot.expectedOutput = text(t->config().expectedOutput, where + QStringLiteral(" expected output"));
            if (!t->config().outputFile.isNull()) {
                // Checked again once filled in: an input must not lead the file out of its folder.
                slot.outputFile = text(t->config().outputFile, where + QStringLiteral(" output file"));
                Task::checkOutputFile(slot.outputFile, where);
            }
            m_slots.push_back(std::move(slot));
        }
    } catch (const Error &e) {
        failKickoff(e);
        return;
    } catch (...) {
        failKickoff(currentError(QStringLiteral("A beforeKickoff callback of crew \"%1\" failed").arg(cfg.name)));
        return;
    }
    startMcpServers();
}

void CrewRun::startMcpServers()
{
    const CrewConfig &cfg = m_crew->m_config;
    std::vector<std::pair<McpServerConfig, std::shared_ptr<Agent>>> wanted;
    for (const McpServerConfig &server : cfg.mcpServers)
        wanted.push_back({server, nullptr});
    std::vector<std::shared_ptr<Agent>> agents = cfg.agents;
    for (const auto &t : cfg.tasks)
        if (t->config().agent)
            agents.push_back(t->config().agent);
    QSet<const Agent *> seen;
    for (const auto &a : agents) {
        if (seen.contains(a.get()))
            continue;
        seen.insert(a.get());
        for (const McpServerConfig &server : a->config().mcpServers)
            wanted.push_back({server, a});
    }
    if (wanted.empty()) {
        advance();
        return;
    }
    for (const auto &[config, agent] : wanted) {
        McpServer server;
        server.client = new McpClient(config, this);
        server.agent = agent.get();
        const bool http = config.transport() == McpServerConfig::Transport::Http;
        const Json props{{"server_name", config.name},
                         {"transport", http ? "http" : "stdio"},
                         // The program or the URL without credentials and query: arguments may hold secrets.
                         {"server", http ? config.url.toString(QUrl::RemoveUserInfo | QUrl::RemoveQuery) : config.command},
                         {"agent_role", agent ? Json(personaOf(agent).role) : Json()}};
        server.eventId = bus()->open(makeEvent(events::kMcpConnectionStarted, props, QStringLiteral("crew"), {},
                                               agent ? agent->id() : QString(), m_eventId));
        m_mcp.push_back(server);
    }
    m_mcpStarting = m_mcp.size();
    // Started once all are recorded: one that fails fails the kickoff, which stops the others.
    for (size_t i = 0; i < m_mcp.size() && !m_done; ++i)
        whenFinished(this, m_mcp[i].client->start(), [this, i](QFuture<void> f) { mcpServerDone(i, f); });
}

void CrewRun::mcpServerDone(size_t index, QFuture<void> started)
{
    McpServer &server = m_mcp[index];
    const QString name = server.client->config().name;
    const QString eventId = std::exchange(server.eventId, QString());
    if (started.isCanceled() || server.client->state() != McpClient::State::Ready) {
        const Error e = failureOf(started);
        if (!eventId.isEmpty())
            bus()->close(eventId, makeEvent(events::kMcpConnectionFailed, {{"server_name", name}, {"error", e.message()}}, {}));
        failKickoff(Error(e.kind(), QStringLiteral("Crew \"%1\": MCP server \"%2\" could not start: %3").arg(m_crew->name(), name, e.message()),
                          e.httpStatus()));
        return;
    }
    QStringList tools;
    for (const auto &t : server.client->tools())
        tools << t->name();
    const Json info = server.client->serverInfo();
    if (!eventId.isEmpty())
        bus()->close(eventId, makeEvent(events::kMcpConnectionCompleted,
                                        {{"server_name", name},
                                         {"tools", tools},
                                         {"protocol_version", server.client->protocolVersion()},
                                         {"server_info", {{"name", info.value("name", std::string())}, {"version", info.value("version", std::string())}}}},
                                        {}));
    if (--m_mcpStarting > 0 || m_done)
        return;
    // Two servers of one agent offering the same tool name: which one a call reaches would be a guess.
    for (auto it = m_personas.cbegin(); it != m_personas.cend(); ++it) {
        QSet<QString> names;
        for (const auto &t : mcpToolsFor(it.key())) {
            if (names.contains(t->name())) {
                failKickoff(Error(ErrorKind::InvalidArgument,
                                  QStringLiteral("Crew \"%1\": agent \"%2\" gets two MCP tools named \"%3\" from different "
                                                 "servers; give one of the servers a tool_prefix, or choose its tools with "
                                                 "\"tools\".")
                                      .arg(m_crew->name(), it.value().role, t->name())));
                return;
            }
            names.insert(t->name());
        }
    }
    advance();
}

std::vector<std::shared_ptr<Tool>> CrewRun::mcpToolsFor(const Agent *agent) const
{
    std::vector<std::shared_ptr<Tool>> tools;
    const bool manager = m_crew->m_manager && agent == m_crew->m_manager.get();
    for (const McpServer &server : m_mcp) {
        if (server.agent != agent && (server.agent || manager))
            continue;
        if (server.client->state() != McpClient::State::Ready && server.client->state() != McpClient::State::Stopped)
            continue;
        for (const auto &t : server.client->tools())
            tools.push_back(t);
    }
    return tools;
}

void CrewRun::stopMcpServersThen(std::function<void()> then)
{
    for (McpServer &server : m_mcp)
        if (!server.eventId.isEmpty())
            bus()->close(std::exchange(server.eventId, QString()),
                         makeEvent(events::kMcpConnectionFailed,
                                   {{"server_name", server.client->config().name}, {"error", "the kickoff ended before the server was ready"}},
                                   {}));
    if (m_mcp.empty()) {
        then();
        return;
    }
    auto left = std::make_shared<size_t>(m_mcp.size());
    for (McpServer &server : m_mcp)
        whenFinished(this, server.client->stop(), [left, then](QFuture<void>) {
            if (--*left == 0)
                then();
        });
}

void CrewRun::advance()
{
    if (m_done)
        return;
    while (m_next < m_slots.size()) {
        if (m_syncRunning)
            return;
        if (m_slots[m_next].task->config().asyncExecution) {
            ++m_asyncRunning;
            startTask(m_next++);
            if (m_done)
                return;
            continue;
        }
        if (m_asyncRunning > 0)
            return; // a synchronous task waits for the asynchronous ones before it
        m_syncRunning = true;
        startTask(m_next++);
        return;
    }
    if (m_syncRunning || m_asyncRunning > 0)
        return;
    finishKickoff();
}

QString CrewRun::contextFor(size_t index) const
{
    const auto &ctx = m_slots[index].task->config().context;
    QStringList parts;
    if (!ctx) {
        for (size_t i = 0; i < index; ++i)
            if (m_slots[i].output)
                parts << m_slots[i].output->raw;
    } else {
        for (const auto &ref : *ctx)
            for (const Slot &s : m_slots)
                if (s.task == ref && s.output)
                    parts << s.output->raw;
    }
    parts.removeAll(QString());
    return parts.join(kContextSeparator);
}

void CrewRun::startTask(size_t index)
{
    Slot &slot = m_slots[index];
    slot.started = true;
    TaskRun::Job job{slot.task, slot.description, slot.expectedOutput, slot.outputFile, contextFor(index)};
    slot.running = TaskRun::start(this, std::move(job));
    const bool async = slot.task->config().asyncExecution;
    whenFinished(this, slot.running, [this, index, async](QFuture<TaskOutput> f) {
        if (m_done)
            return;
        if (async)
            --m_asyncRunning;
        else
            m_syncRunning = false;
        if (f.resultCount() == 0) {
            failKickoff(failureOf(f));
            return;
        }
        m_slots[index].output = f.result();
        advance();
    });
}

Persona CrewRun::personaOf(const std::shared_ptr<Agent> &agent) const
{
    return m_personas.value(agent.get(), Persona{agent->config().role, agent->config().goal, agent->config().backstory});
}

MemoryRef CrewRun::memoryOf(const std::shared_ptr<Agent> &agent) const
{
    const MemoryRef own = agent->memory();
    if (own.isDefault())
        return m_crew->m_memory;
    return own;
}

void CrewRun::track(QFuture<void> work)
{
    if (m_crew)
        m_crew->track(work);
}

std::vector<std::shared_ptr<Tool>> CrewRun::toolsFor(const std::shared_ptr<Agent> &agent, std::vector<std::shared_ptr<Tool>> base,
                                                     const std::vector<std::shared_ptr<Agent>> &coworkers, QObject *owner,
                                                     const QString &taskId, const QString &taskName,
                                                     const std::shared_ptr<UsageTally> &tally,
                                                     const std::shared_ptr<ExecutionRef> &delegator)
{
    std::vector<std::shared_ptr<Tool>> tools = std::move(base);
    const auto add = [&tools](std::shared_ptr<Tool> tool) {
        const QString name = tool->name();
        if (std::none_of(tools.begin(), tools.end(), [&](const auto &t) { return t->name() == name; }))
            tools.push_back(std::move(tool));
    };
    // The agent's MCP tools; one of its own with the same name wins.
    for (auto &tool : mcpToolsFor(agent.get()))
        add(std::move(tool));

    if (!coworkers.empty()) {
        QStringList roles;
        for (const auto &c : coworkers)
            roles << personaOf(c).role;
        const auto schema = [](const char *what) {
            return Json{{"type", "object"},
                        {"properties",
                         {{what, {{"type", "string"}, {"description", "Everything the coworker needs to know to do it"}}},
                          {"context", {{"type", "string"}, {"description", "What you know that helps: facts, earlier results, constraints"}}},
                          {"coworker", {{"type", "string"}, {"description", "The role of the coworker, exactly as listed"}}}}},
                        {"required", Json::array({what, "coworker"})}};
        };
        QPointer<CrewRun> self(this);
        QPointer<QObject> task(owner);
        const auto delegate = [self, task, coworkers, taskId, taskName, tally, delegator](bool ask) {
            return FunctionTool::AsyncFunction([self, task, coworkers, taskId, taskName, tally, delegator, ask](const Json &args) {
                if (!self || !task)
                    return QtFuture::makeExceptionalFuture<QString>(
                        Error(ErrorKind::Cancelled, QStringLiteral("The crew's kickoff has ended.")));
                return self->runCoworker(coworkers, args, ask, task, taskId, taskName, tally, delegator);
            });
        };
        add(std::make_shared<FunctionTool>(
            QStringLiteral("delegate_work_to_coworker"),
            QStringLiteral("Give a piece of work to one of your coworkers: %1. Describe the work completely and share "
                           "every piece of context they need: they know nothing else about it.")
                .arg(roles.join(QStringLiteral(", "))),
            schema("task"), delegate(false)));
        add(std::make_shared<FunctionTool>(
            QStringLiteral("ask_question_to_coworker"),
            QStringLiteral("Ask one of your coworkers a question: %1. Share every piece of context they need to answer "
                           "it: they know nothing else about it.")
                .arg(roles.join(QStringLiteral(", "))),
            schema("question"), delegate(true)));
    }

    const MemoryRef memory = memoryOf(agent);
    if (memory.isUsable()) {
        // Their jobs are tracked, so the crew outlives none of them (they use its memory).
        QPointer<CrewRun> run(this);
        const MemoryTools::Track track = [run](QFuture<void> job) {
            if (run)
                run->track(job);
        };
        add(MemoryTools::search(memory, AgentRun::memoryPool(), track));
        if (!memory.isReadOnly())
            add(MemoryTools::save(memory, personaOf(agent).role, AgentRun::memoryPool(), track));
    }
    return tools;
}

QFuture<QString> CrewRun::runCoworker(const std::vector<std::shared_ptr<Agent>> &coworkers, const Json &args, bool ask,
                                      QObject *owner, const QString &taskId, const QString &taskName,
                                      const std::shared_ptr<UsageTally> &tally, const std::shared_ptr<ExecutionRef> &delegator)
{
    const QString wanted = QString::fromStdString(args.value("coworker", std::string()));
    std::shared_ptr<Agent> coworker;
    QStringList roles;
    for (const auto &c : coworkers) {
        const QString role = personaOf(c).role;
        roles << role;
        if (roleKey(role) == roleKey(wanted))
            coworker = c;
    }
    if (!coworker)
        return QtFuture::makeExceptionalFuture<QString>(Error(
            ErrorKind::InvalidArgument,
            QStringLiteral("there is no coworker \"%1\". Choose one of: %2.").arg(wanted, roles.join(QStringLiteral(", ")))));

    const QString request = QString::fromStdString(args.value(ask ? "question" : "task", std::string()));
    const QString context = QString::fromStdString(args.value("context", std::string()));
    const QString expected = ask ? QStringLiteral("A clear, complete answer to your coworker's question.")
                                 : QStringLiteral("The complete result of the work your coworker asked for.");
    QString prompt = ask ? QStringLiteral("A coworker asks you: %1").arg(request) : request;
    prompt = Task::prompt(prompt, expected, Json(), false);
    if (!context.trimmed().isEmpty())
        prompt += QStringLiteral("\n\nContext from your coworker:\n") + context.trimmed();

    // A coworker works with its own tools and memory; it does not delegate further.
    auto tools = toolsFor(coworker, coworker->config().tools, {}, owner, taskId, taskName, tally, nullptr);
    const QString parent = delegator && !delegator->eventId.isEmpty() ? delegator->eventId : m_eventId;
    if (delegator && delegator->run)
        owner = delegator->run;
    Assignment a = assignmentFor(coworker, request, prompt, std::move(tools), taskId, taskName, parent, tally);
    QFuture<AgentResult> work = AgentRun::start(std::move(a), owner);

    auto answer = std::make_shared<QPromise<QString>>();
    answer->start();
    QPointer<CrewRun> self(this);
    whenFinished(owner, work, [self, answer, coworker, request, expected, prompt](QFuture<AgentResult> f) {
        if (f.resultCount() > 0) {
            const AgentResult r = f.result();
            if (self) {
                self->saveToMemory(coworker, request, expected, r.finalAnswer);
                self->recordChat(coworker, prompt, r, r.finalAnswer);
            }
            answer->addResult(r.finalAnswer);
        } else {
            try {
                f.waitForFinished();
                answer->future().cancel();
            } catch (...) {
                answer->setException(std::current_exception());
            }
        }
        answer->finish();
    });
    // When the delegating agent stops waiting (its timeout, a cancellation), the coworker stops too.
    auto *watch = new QFutureWatcher<QString>(owner);
    connect(watch, &QFutureWatcherBase::canceled, owner, [work]() mutable { work.cancel(); });
    connect(watch, &QFutureWatcherBase::finished, watch, &QObject::deleteLater);
    watch->setFuture(answer->future());
    return answer->future();
}

Assignment CrewRun::assignmentFor(const std::shared_ptr<Agent> &agent, const QString &recallQuery, const QString &prompt,
                                  std::vector<std::shared_ptr<Tool>> tools, const QString &taskId, const QString &taskName,
                                  const QString &parentEventId, const std::shared_ptr<UsageTally> &tally)
{
    Assignment a;
    a.agent = agent;
    a.persona = personaOf(agent);
    a.recallQuery = recallQuery;
    a.prompt = prompt;
    a.tools = std::move(tools);
    a.memory = memoryOf(agent);
    a.taskId = taskId;
    a.taskName = taskName;
    a.parentEventId = parentEventId;
    a.tally = tally;
    a.bus = bus();
    a.chat = m_crew->chatMemoryOf(agent);
    a.savesBefore = m_saves;
    const auto crewStep = m_crew->m_config.stepCallback;
    const auto agentStep = agent->config().stepCallback;
    if (crewStep || agentStep)
        a.stepCallback = [crewStep, agentStep](const AgentStep &step) {
            if (agentStep)
                agentStep(step);
            if (crewStep)
                crewStep(step);
        };
    QPointer<CrewRun> self(this);
    a.track = [self](QFuture<void> f) {
        if (self)
            self->track(f);
    };
    return a;
}

void CrewRun::saveToMemory(const std::shared_ptr<Agent> &agent, const QString &description, const QString &expectedOutput,
                           const QString &output)
{
    const MemoryRef memory = memoryOf(agent);
    if (m_done || !memory.isUsable() || memory.isReadOnly() || output.contains(kDelegationMarker) || output.trimmed().isEmpty())
        return;
    const QString role = personaOf(agent).role;
    QFuture<void> job = AgentRun::saveFacts(memory, role, memoryBlob(description, role, expectedOutput, output), bus());
    m_saves << job;
    track(job);
}

void CrewRun::recordChat(const std::shared_ptr<Agent> &agent, const QString &prompt, const AgentResult &result, const QString &output)
{
    const std::shared_ptr<ChatMemory> chat = m_crew ? m_crew->chatMemoryOf(agent) : nullptr;
    if (!chat || m_done)
        return;
    AgentResult accepted = result;
    if (!accepted.transcript.isEmpty() && accepted.transcript.last().message.toolCalls.empty()
        && accepted.transcript.last().message.content != output) {
        accepted.transcript.last().message.content = output;
        accepted.transcript.last().tokens.reset(); // the provider's count was for the replaced text
    }
    try {
        QFuture<void> job(ChatTurns::record(chat, prompt, accepted));
        m_saves << job;
        track(job);
    } catch (const Error &e) {
        qWarning().noquote() << "mneme: could not add the exchange of agent" << personaOf(agent).role << "to its chat memory:" << e.message();
    }
}

void CrewRun::drainThen(std::function<void()> then)
{
    const QList<QFuture<void>> saves = m_saves;
    const QList<mneme::Memory *> memories = m_memories.values();
    const QList<ChatMemory *> chats = m_chatMemories.values();
    // Waiting blocks, so it happens on a worker thread: first for the extraction jobs (which submit
    // the saves), then for each memory's writer and each chat memory's flushes.
    QFuture<void> drain = QtConcurrent::run(AgentRun::memoryPool(), [saves, memories, chats] {
        for (QFuture<void> f : saves)
            f.waitForFinished();
        for (ChatMemory *c : chats)
            c->drain();
        for (mneme::Memory *m : memories)
            m->drainWrites();
    });
    track(drain);
    whenFinished(this, drain, [then](QFuture<void>) { then(); });
}

void CrewRun::finishKickoff()
{
    m_done = true;
    CrewOutput output;
    for (const Slot &s : m_slots) {
        if (!s.output)
            continue;
        output.tasksOutput.push_back(*s.output);
        output.tokenUsage += s.output->usage;
        output.llmRequests += s.output->llmRequests;
        if (!s.output->raw.trimmed().isEmpty()) {
            output.raw = s.output->raw;
            output.json = s.output->json;
        }
    }
    try {
        for (const auto &callback : m_crew->m_config.afterKickoff)
            output = callback(output);
    } catch (...) {
        failKickoff(currentError(QStringLiteral("An afterKickoff callback of crew \"%1\" failed").arg(m_crew->name())), true);
        return;
    }
    drainThen([this, output] { stopMcpServersThen([this, output] { reportCompletion(output); }); });
}

void CrewRun::reportCompletion(const CrewOutput &output)
{
    if (std::exchange(m_closed, true))
        return;
    bus()->close(m_eventId, makeEvent(events::kCrewKickoffCompleted,
                                      {{"crew_name", m_crew->name()},
                                       {"output", output.raw},
                                       {"total_tokens", output.tokenUsage.totalTokens()},
                                       {"successful_requests", output.llmRequests}},
                                      {}));
    m_promise.addResult(output);
    // The signal comes last: a slot may cancel or delete the crew (and with it this run).
    QPointer<Crew> crew = m_crew;
    settle();
    if (crew)
        Q_EMIT crew->kickoffCompleted(output);
}

void CrewRun::failKickoff(const Error &error, bool afterTasks)
{
    if (m_done && !afterTasks)
        return;
    m_done = true;
    abortTasks();
    // Saves of the tasks that completed are written before the failure is reported: none is lost.
    drainThen([this, error] { stopMcpServersThen([this, error] { reportFailure(error); }); });
}

void CrewRun::reportFailure(const Error &error)
{
    if (std::exchange(m_closed, true))
        return;
    bus()->close(m_eventId, makeEvent(events::kCrewKickoffFailed, {{"crew_name", m_crew->name()}, {"error", error.message()}}, {}));
    m_promise.setException(error);
    QPointer<Crew> crew = m_crew;
    settle();
    if (crew)
        Q_EMIT crew->kickoffFailed(error.message());
}

void CrewRun::refuseBlockingWait()
{
    if (m_promise.future().isFinished())
        return;
    const Error error(ErrorKind::InvalidArgument,
                      QStringLiteral("Crew \"%1\": the future of kickoff() was waited for on the crew's own thread, where the "
                                     "kickoff advances, so the wait would never end; the kickoff was stopped. Wait with "
                                     "kickoffAndWait() (it runs an event loop meanwhile), or attach a continuation with "
                                     "future.then(context, ...), or connect to kickoffCompleted")
                          .arg(m_crew->name()));
    m_promise.setException(error);
    m_promise.finish();
    QMetaObject::invokeMethod(
        this, [this, error] { failKickoff(error); }, Qt::QueuedConnection);
}

void CrewRun::cancel()
{
    if (m_closed)
        return;
    m_closed = true;
    m_done = true;
    abortTasks();
    if (!m_promise.isCanceled())
        m_promise.future().cancel();
    // The servers are told to stop now and exit on their own timers; nothing waits for them.
    stopMcpServersThen([] {});
    const QString message = QStringLiteral("The kickoff of crew \"%1\" was cancelled.").arg(m_crew->name());
    bus()->close(m_eventId, makeEvent(events::kCrewKickoffFailed, {{"crew_name", m_crew->name()}, {"error", message}}, {}));
    QPointer<Crew> crew = m_crew;
    settle();
    if (crew)
        Q_EMIT crew->kickoffFailed(message);
}

void CrewRun::abortTasks()
{
    for (TaskRun *task : findChildren<TaskRun *>(Qt::FindDirectChildrenOnly))
        task->abort();
}

void CrewRun::settle()
{
    m_promise.finish();
    m_console.reset();
    deleteLater();
}

// ---------------------------------------------------------------------------------------------
// TaskRun

QFuture<TaskOutput> TaskRun::start(CrewRun *run, Job job)
{
    auto *task = new TaskRun(run, std::move(job));
    QFuture<TaskOutput> future = task->m_promise.future();
    auto *watch = new QFutureWatcher<TaskOutput>(task);
    connect(watch, &QFutureWatcherBase::canceled, task, &TaskRun::abort);
    watch->setFuture(future);
    task->begin();
    return future;
}

TaskRun::TaskRun(CrewRun *run, Job job) : QObject(run), m_run(run), m_job(std::move(job))
{
    m_promise.start();
    const TaskConfig &cfg = m_job.task->config();
    const Crew *crew = m_run->crew();
    if (crew->config().process == Process::Hierarchical) {
        m_agent = crew->manager();
        if (cfg.agent)
            m_coworkers = {cfg.agent};
        else
            m_coworkers = crew->config().agents;
    } else {
        m_agent = cfg.agent;
        if (m_agent->config().allowDelegation)
            for (const auto &a : crew->config().agents)
                if (a != m_agent)
                    m_coworkers.push_back(a);
    }
    m_guardrailRetries.assign(cfg.guardrails.size(), 0);

    m_output.taskId = m_job.task->id();
    m_output.name = cfg.name;
    m_output.description = m_job.description;
    m_output.expectedOutput = m_job.expectedOutput;
    m_output.summary = summaryOf(m_job.description);
    m_output.agent = m_run->personaOf(m_agent).role;
    m_output.attempts = 0;
}

void TaskRun::begin()
{
    m_eventId = m_run->bus()->open(makeEvent(events::kTaskStarted,
                                             {{"task_name", m_job.task->displayName()},
                                              {"description", m_job.description},
                                              {"expected_output", m_job.expectedOutput},
                                              {"agent_role", m_output.agent},
                                              {"async_execution", m_job.task->config().asyncExecution},
                                              {"context", m_job.context}},
                                             QStringLiteral("task"), m_job.task->id(), m_agent->id(), m_run->kickoffEventId()));
    QPointer<TaskRun> self(this);
    Q_EMIT m_run->crew()->taskStarted(m_job.task->id(), m_job.task->displayName());
    if (self) // a slot may have cancelled the kickoff (and so this task) or deleted the crew
        attempt();
}

void TaskRun::attempt()
{
    if (m_done)
        return;
    ++m_output.attempts;
    const TaskConfig &cfg = m_job.task->config();
    QString prompt = Task::prompt(m_job.description, m_job.expectedOutput, cfg.outputJson, cfg.markdown);
    if (!m_job.context.trimmed().isEmpty())
        prompt += QStringLiteral("\n\nContext from earlier tasks:\n") + m_job.context;
    m_prompt = prompt;
    if (!m_feedback.isEmpty())
        prompt += m_feedback;

    auto execution = std::make_shared<ExecutionRef>();
    auto base = cfg.tools.empty() ? m_agent->config().tools : cfg.tools;
    if (m_run->crew()->config().process == Process::Hierarchical)
        base = m_agent->config().tools; // the manager works through its coworkers
    auto tools = m_run->toolsFor(m_agent, std::move(base), m_coworkers, this, m_job.task->id(), m_job.task->displayName(),
                                 m_tally, execution);
    Assignment a = m_run->assignmentFor(m_agent, m_job.description, prompt, std::move(tools), m_job.task->id(),
                                        m_job.task->displayName(), m_eventId, m_tally);
    a.execution = execution;
    m_agentFuture = AgentRun::start(std::move(a), this);
    whenFinished(this, m_agentFuture, [this](QFuture<AgentResult> f) { onAgentDone(f); });
}

void TaskRun::onAgentDone(QFuture<AgentResult> f)
{
    if (m_done)
        return;
    if (f.resultCount() == 0) {
        fail(failureOf(f));
        return;
    }
    const AgentResult result = f.result(); // its tokens are in the tally already, call by call
    m_result = result;
    m_output.raw = result.finalAnswer;
    m_output.json = Json();
    m_output.outputFormat = TaskOutput::Format::Raw;
    m_output.toolCalls.insert(m_output.toolCalls.end(), result.toolCalls.begin(), result.toolCalls.end());
    checkGuardrail(0);
}

void TaskRun::checkGuardrail(size_t index)
{
    if (m_done)
        return;
    const auto &guardrails = m_job.task->config().guardrails;
    if (index >= guardrails.size()) {
        convert();
        return;
    }
    const Guardrail &g = guardrails[index];
    if (!g.isCriterion()) {
        GuardrailResult result;
        try {
            result = g.function()(m_output);
        } catch (const std::exception &e) {
            result = GuardrailResult::fail(QString::fromUtf8(e.what()));
        } catch (...) {
            result = GuardrailResult::fail(QStringLiteral("the guardrail threw an exception that is not a std::exception"));
        }
        verdict(index, result);
        return;
    }

    std::shared_ptr<LlmProvider> llm;
    try {
        llm = g.llm().isSet() ? g.llm().resolve() : m_agent->llm();
    } catch (const Error &e) {
        fail(e);
        return;
    }
    const int retry = m_guardrailRetries[index];
    m_callEndType = events::kLlmGuardrailFailed;
    m_callEventId = m_run->bus()->open(makeEvent(events::kLlmGuardrailStarted,
                                                 {{"criterion", g.criterion()}, {"retry_count", retry}},
                                                 QStringLiteral("task"), m_job.task->id(), m_agent->id(), m_eventId));
    ChatRequest request;
    request.messages = {
        ChatMessage::system(QStringLiteral("You review the result of a task against one criterion. Judge only that "
                                           "criterion. Say whether the result meets it, and when it does not, say exactly "
                                           "what is missing or wrong so the author can fix it.")),
        ChatMessage::user(QStringLiteral("Task:\n%1\n\nCriterion:\n%2\n\nResult:\n%3")
                              .arg(m_job.description, g.criterion(), m_output.raw))};
    request.responseSchemaName = QStringLiteral("guardrail_verdict");
    request.responseSchema = Json{{"type", "object"},
                                  {"properties",
                                   {{"valid", {{"type", "boolean"}}},
                                    {"feedback", {{"type", "string"}, {"description", "What is wrong, when it is not valid"}}}}},
                                  {"required", Json::array({"valid", "feedback"})}};
    request.temperature = 0;
    m_llmFuture = chatOf(*llm, request);
    whenFinished(this, m_llmFuture, [this, index, retry](QFuture<ChatResponse> f) {
        if (m_done)
            return;
        const QString startId = std::exchange(m_callEventId, QString());
        if (f.resultCount() == 0) {
            const Error e = failureOf(f);
            m_run->bus()->close(startId, makeEvent(events::kLlmGuardrailFailed, {{"error", e.message()}, {"retry_count", retry}}, {}));
            fail(Error(e.kind(), QStringLiteral("Task \"%1\": its guardrail could not be checked: %2")
                                     .arg(m_job.task->displayName(), e.message())));
            return;
        }
        const ChatResponse reply = f.result();
        m_tally->add(reply.usage, 1);
        const Json v = reply.structured;
        const bool valid = v.is_object() && v.value("valid", false) == true;
        QString feedback = v.is_object() && v.contains("feedback") && v["feedback"].is_string()
                             ? QString::fromStdString(v["feedback"].get<std::string>()).trimmed()
                             : QString();
        if (!valid && feedback.isEmpty())
            feedback = QStringLiteral("The result does not meet the criterion: %1").arg(m_job.task->config().guardrails[index].criterion());
        m_run->bus()->close(startId, makeEvent(events::kLlmGuardrailCompleted,
                                               {{"success", valid}, {"result", valid ? Json(m_output.raw.left(500)) : Json(feedback)}, {"retry_count", retry}},
                                               {}));
        verdict(index, valid ? GuardrailResult::pass() : GuardrailResult::fail(feedback));
    });
}

void TaskRun::verdict(size_t index, const GuardrailResult &result)
{
    if (result.success) {
        if (result.output)
            m_output.raw = *result.output;
        checkGuardrail(index + 1);
        return;
    }
    const int max = m_job.task->config().guardrailMaxRetries;
    if (++m_guardrailRetries[index] > max) {
        fail(Error(ErrorKind::GuardrailFailed,
                   QStringLiteral("Task \"%1\" failed its guardrail after %2 %3. Last error: %4")
                       .arg(m_job.task->displayName())
                       .arg(max)
                       .arg(max == 1 ? QStringLiteral("retry") : QStringLiteral("retries"), result.error)));
        return;
    }
    retry(result.error);
}

void TaskRun::convert()
{
    const Json &schema = m_job.task->config().outputJson;
    if (schema.is_null()) {
        complete();
        return;
    }
    QStringList problems;
    try {
        const Json value = JsonReply::extract(m_output.raw);
        problems = JsonReply::validate(value, schema);
        if (problems.isEmpty()) {
            converted(value, {});
            return;
        }
    } catch (const Error &e) {
        problems << e.message();
    }
    // The answer is not the JSON asked for: one request to the agent's LLM turns it into that JSON
    // (natively structured where the provider can; otherwise instructed, parsed and repaired once).
    m_callEndType = events::kLlmCallFailed;
    m_callEventId = m_run->bus()->open(makeEvent(events::kLlmCallStarted, {{"step", "output_conversion"}},
                                                 QStringLiteral("task"), m_job.task->id(), m_agent->id(), m_eventId));
    ChatRequest request;
    request.messages = {ChatMessage::system(QStringLiteral("You turn a task's result into JSON that follows the given "
                                                           "schema. Keep the content and wording of the result; do not "
                                                           "invent values it does not contain.")),
                        ChatMessage::user(QStringLiteral("Result:\n%1").arg(m_output.raw))};
    request.responseSchema = schema;
    request.responseSchemaName = QStringLiteral("task_output");
    request.temperature = 0;
    m_llmFuture = chatOf(*m_agent->llm(), request);
    whenFinished(this, m_llmFuture, [this, problems](QFuture<ChatResponse> f) {
        if (m_done)
            return;
        const QString startId = std::exchange(m_callEventId, QString());
        if (f.resultCount() == 0) {
            const Error e = failureOf(f);
            m_run->bus()->close(startId, makeEvent(events::kLlmCallFailed, {{"step", "output_conversion"}, {"error", e.message()}}, {}));
            if (e.kind() != ErrorKind::MalformedReply) {
                fail(e);
                return;
            }
            converted(Json(), problems);
            return;
        }
        const ChatResponse reply = f.result();
        m_tally->add(reply.usage, 1);
        m_run->bus()->close(startId, makeEvent(events::kLlmCallCompleted,
                                               {{"step", "output_conversion"},
                                                {"prompt_tokens", reply.usage.promptTokens},
                                                {"completion_tokens", reply.usage.completionTokens}},
                                               {}));
        const QStringList left = reply.structured.is_null() ? problems
                                                            : JsonReply::validate(reply.structured, m_job.task->config().outputJson);
        converted(left.isEmpty() ? reply.structured : Json(), left);
    });
}

void TaskRun::converted(const Json &value, const QStringList &problems)
{
    if (problems.isEmpty()) {
        m_output.json = value;
        m_output.outputFormat = TaskOutput::Format::Json;
        complete();
        return;
    }
    const int max = m_job.task->config().guardrailMaxRetries;
    if (++m_schemaRetries > max) {
        fail(Error(ErrorKind::GuardrailFailed,
                   QStringLiteral("Task \"%1\": the final answer did not follow the task's JSON schema after %2 %3: %4")
                       .arg(m_job.task->displayName())
                       .arg(max)
                       .arg(max == 1 ? QStringLiteral("retry") : QStringLiteral("retries"), problems.join(QLatin1Char(' ')))));
        return;
    }
    retry(QStringLiteral("The final answer is not JSON that follows the required schema: %1").arg(problems.join(QLatin1Char(' '))));
}

void TaskRun::retry(const QString &why)
{
    m_feedback = QStringLiteral("\n\n# Your previous attempt was not accepted\nWhat was wrong: %1\n\nYour previous "
                                "result:\n%2\n\nDo the task again and make sure you fix what was wrong.")
                     .arg(why, m_output.raw);
    attempt();
}

void TaskRun::complete()
{
    if (m_done)
        return;
    const TaskConfig &cfg = m_job.task->config();
    {
        QMutexLocker lock(&m_tally->mutex);
        m_output.usage = m_tally->usage;
        m_output.llmRequests = m_tally->requests;
    }
    // The callbacks first: one that throws fails the task, and nothing of it is written or saved.
    QPointer<TaskRun> self(this);
    try {
        if (cfg.callback)
            cfg.callback(m_output);
        if (self && !m_done && m_run->crew()->config().taskCallback)
            m_run->crew()->config().taskCallback(m_output);
    } catch (...) {
        if (self)
            fail(currentError(QStringLiteral("Task \"%1\": its callback failed").arg(m_job.task->displayName())));
        return;
    }
    if (!self || m_done) // a callback cancelled the kickoff (which aborted this task) or deleted the crew
        return;
    if (!m_job.outputFile.isEmpty()) {
        const QString path = m_job.outputFile.trimmed();
        const QFileInfo info(path);
        QString problem;
        if (cfg.createDirectory && !QDir().mkpath(info.absolutePath()))
            problem = QStringLiteral("its directory %1 could not be created").arg(info.absolutePath());
        if (problem.isEmpty()) {
            QSaveFile file(path);
            const QByteArray bytes = m_output.outputFormat == TaskOutput::Format::Json
                                       ? QByteArray::fromStdString(m_output.json.dump(2)) + '\n'
                                       : m_output.raw.toUtf8();
            if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit())
                problem = file.errorString();
        }
        if (!problem.isEmpty()) {
            fail(Error(ErrorKind::Storage, QStringLiteral("Task \"%1\" could not write its output file %2: %3. Check the "
                                                          "path and its permissions.")
                                               .arg(m_job.task->displayName(), path, problem)));
            return;
        }
    }
    m_job.task->setOutput(m_output);
    m_run->saveToMemory(m_agent, m_job.description, m_job.expectedOutput, m_output.raw);
    m_run->recordChat(m_agent, m_prompt, m_result, m_output.raw);
    m_done = true;
    m_run->bus()->close(m_eventId, makeEvent(events::kTaskCompleted,
                                             {{"task_name", m_job.task->displayName()},
                                              {"agent_role", m_output.agent},
                                              {"output", m_output.raw},
                                              {"output_format", m_output.outputFormat == TaskOutput::Format::Json ? "json" : "raw"},
                                              {"attempts", m_output.attempts}},
                                             {}));
    m_promise.addResult(m_output);
    m_promise.finish();
    deleteLater();
    // The signal comes last: a slot may cancel the kickoff or delete the crew.
    Q_EMIT m_run->crew()->taskCompleted(m_output);
}

void TaskRun::fail(const Error &error)
{
    if (m_done)
        return;
    m_done = true;
    // Its agent run (which stops its coworkers first) ends before the task does.
    for (AgentRun *run : findChildren<AgentRun *>(Qt::FindDirectChildrenOnly))
        run->abort();
    m_llmFuture.cancel();
    if (!m_callEventId.isEmpty())
        m_run->bus()->close(std::exchange(m_callEventId, QString()), makeEvent(m_callEndType, {{"error", error.message()}}, {}));
    // The kickoff's error says which task failed.
    const QString name = m_job.task->displayName();
    const Error reported = error.message().startsWith(QStringLiteral("Task \"%1\"").arg(name))
                             ? error
                             : Error(error.kind(), QStringLiteral("Task \"%1\" (agent \"%2\") failed: %3").arg(name, m_output.agent, error.message()),
                                     error.httpStatus());
    m_run->bus()->close(m_eventId, makeEvent(events::kTaskFailed,
                                             {{"task_name", name}, {"agent_role", m_output.agent}, {"error", reported.message()}, {"attempts", m_output.attempts}},
                                             {}));
    if (!m_promise.isCanceled())
        m_promise.setException(reported);
    m_promise.finish();
    deleteLater();
}

void TaskRun::abort()
{
    fail(Error(ErrorKind::Cancelled, QStringLiteral("Task \"%1\" was cancelled.").arg(m_job.task->displayName())));
}

} // namespace mneme
