#pragma once

// Internal to mneme_runtime: one execution of an agent inside a crew.

#include <mneme/core/error.h>
#include <mneme/runtime/agent.h>
#include <mneme/runtime/agent_executor.h>
#include <mneme/runtime/memory_ref.h>

#include <QFuture>
#include <QMutex>
#include <QObject>
#include <QPointer>
#include <QPromise>
#include <QString>
#include <atomic>
#include <functional>
#include <memory>

class QThreadPool;
class QTimer;

namespace mneme {

class ChatMemory;
class EventBus;

// Token usage of one task, added to by every LLM call its agents make (every attempt, delegated
// coworkers included), its guardrails and the conversion of its output.
struct UsageTally
{
    QMutex mutex;
    TokenUsage usage;
    int requests = 0;
    void add(const TokenUsage &u, int n)
    {
        QMutexLocker lock(&mutex);
        usage += u;
        requests += n;
    }
};

class AgentRun;

// An agent execution as the tools it runs see it, filled once it starts: delegation tools nest the
// coworker's run under it (its events, and its lifetime: the coworker stops when it does).
struct ExecutionRef
{
    QString eventId;
    QPointer<AgentRun> run;
};

// Who the agent is in this run (its texts with the kickoff's placeholders filled in).
struct Persona
{
    QString role;
    QString goal;
    QString backstory;
};

struct Assignment
{
    std::shared_ptr<Agent> agent;
    Persona persona;
    QString recallQuery; // what memory is recalled with: the task's description
    QString prompt;      // the user message, without the memories
    std::vector<std::shared_ptr<Tool>> tools;
    MemoryRef memory; // usable, or none
    QString taskId;
    QString taskName;
    QString parentEventId; // the task's start event
    EventBus *bus = nullptr;
    std::function<void(const AgentStep &)> stepCallback;
    std::function<void(QFuture<void>)> track; // background work the crew waits for before it is destroyed
    // Saves of earlier work in the kickoff (fact extraction jobs): the recall waits for them, so a task
    // finds what the tasks before it stored.
    QList<QFuture<void>> savesBefore;
    // Filled when the execution starts (see ExecutionRef).
    std::shared_ptr<ExecutionRef> execution;
    // Where each LLM call's tokens are counted as it completes.
    std::shared_ptr<UsageTally> tally;
    // A chat session that frames the run: the messages are its get() of the system prompt and the user
    // message (the history that fits and its blocks' content around them). Storing the exchange is the
    // caller's (ChatTurns::record), once it accepts the output.
    std::shared_ptr<ChatMemory> chat;
    // Called with each attempt's executor as it is created (to follow its stream and tool signals).
    std::function<void(AgentExecutor *)> onExecutor;
};

// The error of running an agent that has MCP servers without a crew (`how`: "Agent::kickoff",
// "AgentChat"): only a crew's kickoff starts an agent's MCP servers.
Error mcpServersNeedACrew(const Agent &agent, const QString &how);

// The exchanges of agents with a chat memory.
namespace ChatTurns {
// Stores `input` as the user's message and the run's transcript after it, in the background.
QFuture<QList<SessionMessage>> record(const std::shared_ptr<ChatMemory> &chat, const QString &input, const AgentResult &result);
} // namespace ChatTurns

// Recalls memories into the prompt, runs the agent's tool loop, and retries transient failures
// (server errors, rate limits, network, timeouts, malformed replies) up to the agent's maxRetryLimit.
// Publishes agent_execution_* and memory_retrieval_* events; the executor's llm_call_* and
// tool_usage_* events nest under agent_execution_started. Deletes itself when done. Cancelling the
// returned future stops it.
class AgentRun : public QObject
{
    Q_OBJECT
public:
    static QFuture<AgentResult> start(Assignment assignment, QObject *parent);

    // Whether a failure of this kind is worth executing the agent again.
    static bool isTransient(const Error &error);
    // The prompt section holding recalled memories.
    static QString memorySection(const QString &block);
    // The threads blocking memory work runs on (recall, fact extraction, drains): a pool of the
    // runtime's own, so slow LLM-backed memory calls never hold the global pool that tools run on.
    static QThreadPool *memoryPool();
    // Turns `blob` (an agent's work and its output) into facts and saves them under the agent's root
    // of `memory`, on the memory pool. Failures are reported (memory_save_failed on `bus`, a warning),
    // never thrown.
    static QFuture<void> saveFacts(const MemoryRef &memory, const QString &role, const QString &blob, EventBus *bus);

    ~AgentRun() override;
    // Stops it now: the executor's request and tools are reported ended, then agent_execution_error,
    // and the future ends cancelled.
    void abort();

private:
    AgentRun(Assignment assignment, QObject *parent);
    void begin();
    void retrieve();
    // With a chat memory: the messages of the run, from it, then execute().
    void prepare();
    void execute();
    void onExecuted(QFuture<AgentResult> f);
    void fail(const Error &error);
    void finish();
    // The user message: the prompt, with the recalled memories when there are any.
    QString userPrompt() const;
    // Aborts the coworker runs this execution's delegation tools started, newest first.
    void abortCoworkers();

    Assignment m_a;
    QPromise<AgentResult> m_promise;
    QString m_eventId;
    QString m_memoryBlock;
    std::vector<ChatMessage> m_messages; // from the chat memory; empty: the system and user message
    int m_attempt = 0;
    bool m_timedOut = false;
    bool m_done = false;
    QFuture<AgentResult> m_running;
    QPointer<AgentExecutor> m_executor;
    QTimer *m_deadline = nullptr;
    // Set when the run ends: a recall still waiting on a worker thread then does nothing.
    std::shared_ptr<std::atomic_bool> m_stopped = std::make_shared<std::atomic_bool>(false);
};

} // namespace mneme
