#pragma once

#include <mneme/core/json.h>
#include <mneme/memory/chat_memory_config.h>
#include <mneme/memory/memory_config.h>
#include <mneme/runtime/agent.h>
#include <mneme/runtime/export.h>
#include <mneme/runtime/llm_ref.h>
#include <mneme/runtime/mcp_server_config.h>
#include <mneme/runtime/memory_ref.h>
#include <mneme/runtime/task.h>
#include <mneme/runtime/task_output.h>

#include <QFuture>
#include <QHash>
#include <QObject>
#include <QString>
#include <functional>
#include <memory>
#include <vector>

namespace mneme {

class ChatMemory;
class EventBus;
class Memory;
class CrewRun;

enum class Process {
    Sequential,   // each task by its own agent, in order
    Hierarchical, // a manager agent does every task by delegating to the crew's agents
};

// A crew: agents working through tasks. Field names follow CrewAI's Crew.
struct MNEME_RUNTIME_EXPORT CrewConfig
{
    QString name = QStringLiteral("crew"); // names the memory root /crew/<sanitised name>
    std::vector<std::shared_ptr<Agent>> agents;
    std::vector<std::shared_ptr<Task>> tasks; // at least one
    Process process = Process::Sequential;
    LlmRef managerLlm;                   // hierarchical: the LLM of the manager the crew builds
    std::shared_ptr<Agent> managerAgent; // hierarchical: your own manager (no tools, not in `agents`)

    // Memory: off by default. `true` builds a Memory rooted at /crew/<sanitised name> from
    // `memoryConfig`, with `embedder` as its embedder (when not null) and `chatLlm` (else the first
    // agent's LLM) for memory analysis. A given Memory, scope or slice is used as it is.
    MemoryRef memory;
    MemoryConfig memoryConfig; // base of the built Memory (storage path, weights, ...)
    Json embedder;             // the built Memory's embedder (null: memoryConfig's)
    LlmRef chatLlm;

    // Chat sessions: with `chatMemory` on, each agent without a chat memory of its own
    // (AgentConfig::chatMemory) gets the session "crew/<sanitised name>/<sanitised role>", in
    // chatMemoryConfig.storage (else the crew memory's file, else the default memory file), with
    // chatMemoryConfig's settings and blocks (vector and long_term blocks over the crew's memory).
    // Every execution of the agent reads it, and each accepted output is added to it with its
    // prompt, so an agent remembers earlier kickoffs as a conversation.
    bool chatMemory = false;
    ChatMemoryConfig chatMemoryConfig;

    // MCP servers whose tools every agent of the crew gets (not the manager of a hierarchical crew).
    // Each kickoff starts them (and the agents' own, AgentConfig::mcpServers) before its first task,
    // and stops them when it completes, fails or is cancelled; a server that cannot start fails the
    // kickoff. See docs/mcp.md.
    std::vector<McpServerConfig> mcpServers;

    bool verbose = false;                                 // print the event trace to stderr while a kickoff runs
    std::function<void(const TaskOutput &)> taskCallback; // after every task (after the task's own callback)
    std::function<void(const AgentStep &)> stepCallback;  // after every agent step
    // Before a kickoff: each gets the inputs and returns the inputs to use. After: each gets the output
    // and returns the output to report. Called on the crew's thread; an exception fails the kickoff.
    std::vector<std::function<Json(const Json &inputs)>> beforeKickoff;
    std::vector<std::function<CrewOutput(const CrewOutput &output)>> afterKickoff;

    EventBus *eventBus = nullptr; // null: EventBus::instance(); must outlive the crew
};

// Runs its tasks on the Qt event loop of the thread it lives on: kickoff() returns at once and the
// work advances in continuations there, so a GUI thread stays responsive while a crew runs. Memory
// recall, fact extraction and tools run on worker threads; LLM requests on the network thread.
//
// The constructor checks the whole configuration (CrewAI's validators) and throws
// Error(InvalidArgument) with a message naming the task or agent at fault.
//
// Before each task the agent's memory is recalled with the task's description (limit 5) and the
// matches go into the prompt; after it, the output is turned into facts stored under
// <root>/agent/<sanitised role> in the background; a kickoff reports completion only after every
// pending save is written. Memory failures never fail a task.
class MNEME_RUNTIME_EXPORT Crew : public QObject
{
    Q_OBJECT
public:
    explicit Crew(CrewConfig config, QObject *parent = nullptr);
    // Cancels running kickoffs and waits for their background memory work.
    ~Crew() override;

    QString id() const { return m_id; }
    QString name() const { return m_config.name; }
    const CrewConfig &config() const { return m_config; }
    EventBus *eventBus() const { return m_bus; }
    // The crew's memory: the one built for `memory = true` or the Memory behind the given reference;
    // null when memory is off.
    mneme::Memory *memory() const;
    MemoryRef memoryRef() const { return m_memory; }
    // The manager of a hierarchical crew (yours, or the one the crew built); else null.
    std::shared_ptr<Agent> manager() const { return m_manager; }
    // The chat memory `agent` uses in this crew: its own, the crew's session for it, or null.
    std::shared_ptr<ChatMemory> chatMemoryOf(const std::shared_ptr<Agent> &agent) const;

    // Runs the tasks with {placeholders} filled from `inputs` (a JSON object; placeholders are filled
    // only when it is not empty). The future fails with the failing task's typed Error, or is cancelled
    // by cancel() / future.cancel(). Called from another thread, the kickoff is started on the crew's
    // thread (whose event loop must run) and the future follows it. Blocking on the future on the
    // crew's own thread (result(), waitForFinished()) would stop the loop the kickoff needs: the wait
    // fails at once instead, the kickoff stopped, with an Error(InvalidArgument) naming kickoffAndWait().
    QFuture<CrewOutput> kickoff(const Json &inputs = Json::object());
    // Blocking, for scripts and tests: on the crew's thread it runs an event loop until the kickoff
    // ends (not for a GUI thread); on another thread it waits while the crew's thread runs the kickoff.
    // Throws the kickoff's Error.
    CrewOutput kickoffAndWait(const Json &inputs = Json::object());
    // Stops every running kickoff: requests in flight are aborted, no further task starts, and the
    // kickoff's future is cancelled (saves already submitted still complete).
    void cancel();

    // Deletes everything the crew's memory holds (MemoryRef::reset(): the root scope's subtree of the
    // crew's own Memory, so other crews sharing the store file keep theirs) and returns how many
    // records. Throws Error(InvalidArgument) when memory is off, Error(PermissionDenied) for a slice.
    int resetMemories();

Q_SIGNALS:
    void kickoffStarted(const QString &kickoffId);
    void taskStarted(const QString &taskId, const QString &taskName);
    void taskCompleted(const mneme::TaskOutput &output);
    void kickoffCompleted(const mneme::CrewOutput &output);
    void kickoffFailed(const QString &error);

private:
    friend class CrewRun;
    void validate() const;

    CrewConfig m_config;
    QString m_id;
    EventBus *m_bus = nullptr;
    std::unique_ptr<mneme::Memory> m_ownMemory;
    MemoryRef m_memory;
    QHash<const Agent *, std::shared_ptr<ChatMemory>> m_chatMemories; // sessions the crew made (chatMemory on)
    std::shared_ptr<Agent> m_manager;
    std::vector<CrewRun *> m_runs;
    std::vector<QFuture<void>> m_background; // memory work on worker threads, waited for on destruction
    void track(QFuture<void> work);
};

} // namespace mneme
