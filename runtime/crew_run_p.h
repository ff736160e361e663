#pragma once

// Internal to mneme_runtime: one kickoff of a crew, and one task inside it.

#include "runtime/agent_run_p.h"
#include <mneme/runtime/crew.h>

#include <QFuture>
#include <QHash>
#include <QMutex>
#include <QObject>
#include <QPointer>
#include <QPromise>
#include <QSet>
#include <memory>
#include <optional>
#include <vector>

namespace mneme {

class ConsoleListener;
class McpClient;

class CrewRun : public QObject
{
    Q_OBJECT
public:
    CrewRun(Crew *crew, Json inputs);
    ~CrewRun() override;

    QFuture<CrewOutput> start();
    void cancel();
    // The crew's own thread waits on the kickoff's future, so the run cannot advance: the future
    // fails now (the wait returns with an error that names kickoffAndWait), the rest of the run is
    // wound up when the thread's event loop runs again.
    void refuseBlockingWait();

    // What TaskRun needs from the kickoff.
    Crew *crew() const { return m_crew; }
    EventBus *bus() const { return m_crew->m_bus; }
    QString kickoffEventId() const { return m_eventId; }
    Persona personaOf(const std::shared_ptr<Agent> &agent) const;
    MemoryRef memoryOf(const std::shared_ptr<Agent> &agent) const;
    // The tools of `agent` for one task: `base` (the task's or the agent's own), the delegation tools
    // when it may delegate to `coworkers`, and the memory tools when it has memory. Ours never shadow
    // a tool of the same name the user gave.
    // Coworkers' runs are children of the delegating execution (`delegator`, else `owner`, the task),
    // so stopping it stops them.
    std::vector<std::shared_ptr<Tool>> toolsFor(const std::shared_ptr<Agent> &agent, std::vector<std::shared_ptr<Tool>> base,
                                                const std::vector<std::shared_ptr<Agent>> &coworkers, QObject *owner,
                                                const QString &taskId, const QString &taskName,
                                                const std::shared_ptr<UsageTally> &tally,
                                                const std::shared_ptr<ExecutionRef> &delegator);
    Assignment assignmentFor(const std::shared_ptr<Agent> &agent, const QString &recallQuery, const QString &prompt,
                             std::vector<std::shared_ptr<Tool>> tools, const QString &taskId, const QString &taskName,
                             const QString &parentEventId, const std::shared_ptr<UsageTally> &tally);
    // Turns an agent's output into facts and stores them in its memory, in the background; the kickoff
    // waits for it before it reports. Skipped for read-only memory and for delegation transcripts.
    void saveToMemory(const std::shared_ptr<Agent> &agent, const QString &description, const QString &expectedOutput,
                      const QString &output);
    // Adds an accepted exchange to the agent's chat memory, if it has one, in the background (the
    // kickoff waits for it): the prompt, the run's transcript, its last answer as `output` (a guardrail
    // may have replaced the text). A failure is reported, never thrown.
    void recordChat(const std::shared_ptr<Agent> &agent, const QString &prompt, const AgentResult &result, const QString &output);
    void track(QFuture<void> work);
    // The delegate / ask tools' work: `coworker` (matched by role, ignoring case and quotes) runs the
    // request with its own tools and memory, under the delegating agent's execution.
    QFuture<QString> runCoworker(const std::vector<std::shared_ptr<Agent>> &coworkers, const Json &args, bool ask,
                                 QObject *owner, const QString &taskId, const QString &taskName, const std::shared_ptr<UsageTally> &tally,
                                 const std::shared_ptr<ExecutionRef> &delegator);

    // The raw text given to extractMemories after a task (CrewAI's format).
    static QString memoryBlob(const QString &description, const QString &role, const QString &expectedOutput,
                              const QString &output);

private:
    struct Slot
    {
        std::shared_ptr<Task> task;
        QString description;
        QString expectedOutput;
        QString outputFile;
        std::optional<TaskOutput> output;
        QFuture<TaskOutput> running;
        bool started = false;
    };

    void begin();
    // Starts the MCP servers of the crew and of its agents, then advance(); a server that cannot
    // start fails the kickoff.
    void startMcpServers();
    void mcpServerDone(size_t index, QFuture<void> started);
    // The MCP tools `agent` gets: its own servers' and (unless it is the manager) the crew's.
    std::vector<std::shared_ptr<Tool>> mcpToolsFor(const Agent *agent) const;
    // Stops every MCP server of the kickoff; calls `then` once all have exited.
    void stopMcpServersThen(std::function<void()> then);
    void advance();
    void startTask(size_t index);
    QString contextFor(size_t index) const;
    void finishKickoff();
    void reportCompletion(const CrewOutput &output);
    void reportFailure(const Error &error);
    // `afterTasks`: the tasks are done (an afterKickoff callback failed), so m_done is already set.
    void failKickoff(const Error &error, bool afterTasks = false);
    void abortTasks();
    // Waits (off this thread) for the kickoff's memory work, then calls `then` here.
    void drainThen(std::function<void()> then);
    void settle();

    QPointer<Crew> m_crew;
    Json m_inputs;
    QPromise<CrewOutput> m_promise;
    QString m_eventId;
    std::vector<Slot> m_slots;
    QHash<const Agent *, Persona> m_personas;
    size_t m_next = 0;
    int m_asyncRunning = 0;
    bool m_syncRunning = false;
    bool m_done = false;   // no task starts any more
    bool m_closed = false; // the kickoff's end event is published: nothing more happens
    QList<QFuture<void>> m_saves;
    QSet<mneme::Memory *> m_memories;
    QSet<ChatMemory *> m_chatMemories; // drained before the kickoff reports
    std::unique_ptr<ConsoleListener> m_console;

    // The kickoff's MCP servers, children of this run (so they never outlive it).
    struct McpServer
    {
        McpClient *client = nullptr;
        const Agent *agent = nullptr; // null: the crew's, for every agent but the manager
        QString eventId;              // mcp_connection_started, until it is closed
    };
    std::vector<McpServer> m_mcp;
    size_t m_mcpStarting = 0;
};

// One task of a kickoff: the agent's execution, guardrails, structured output, output file,
// callbacks and the memory save; retries with feedback when a guardrail or the schema refuses an output.
class TaskRun : public QObject
{
    Q_OBJECT
public:
    struct Job
    {
        std::shared_ptr<Task> task;
        QString description;
        QString expectedOutput;
        QString outputFile;
        QString context;
    };
    static QFuture<TaskOutput> start(CrewRun *run, Job job);
    // Stops it now: its agent runs (coworkers first) and any guardrail or conversion call are reported
    // ended, then task_failed, and the future ends cancelled.
    void abort();

private:
    TaskRun(CrewRun *run, Job job);
    void begin();
    void attempt();
    void onAgentDone(QFuture<AgentResult> f);
    void checkGuardrail(size_t index);
    void verdict(size_t index, const GuardrailResult &result);
    void convert();
    void converted(const Json &value, const QStringList &problems);
    void retry(const QString &why);
    void complete();
    void fail(const Error &error);
    // The guardrail or conversion call in flight: its start event and the type that ends it.
    QString m_callEventId;
    const char *m_callEndType = nullptr;

    QPointer<CrewRun> m_run;
    Job m_job;
    std::shared_ptr<Agent> m_agent; // the task's agent, or the manager
    std::vector<std::shared_ptr<Agent>> m_coworkers;
    QPromise<TaskOutput> m_promise;
    TaskOutput m_output;
    std::shared_ptr<UsageTally> m_tally = std::make_shared<UsageTally>();
    QString m_eventId;
    QString m_feedback;
    std::vector<int> m_guardrailRetries;
    int m_schemaRetries = 0;
    bool m_done = false;
    QString m_prompt;     // the last attempt's prompt, without feedback on earlier attempts
    AgentResult m_result; // the last attempt's result
    QFuture<AgentResult> m_agentFuture;
    QFuture<ChatResponse> m_llmFuture;
};

} // namespace mneme
