#pragma once

#include <mneme/core/tool.h>
#include <mneme/runtime/agent_executor.h>
#include <mneme/runtime/export.h>
#include <mneme/runtime/llm_ref.h>
#include <mneme/runtime/mcp_server_config.h>
#include <mneme/runtime/memory_ref.h>

#include <QFuture>
#include <QString>
#include <functional>
#include <memory>
#include <vector>

namespace mneme {

class ChatMemory;
class EventBus;
class Memory;

// What an agent is: who it is (role, goal, backstory), the model it thinks with, the tools it may
// use, and how its turns are bounded. Field names follow CrewAI's Agent.
struct MNEME_RUNTIME_EXPORT AgentConfig
{
    QString role;                                        // required; also names the agent's memory subtree
    QString goal;                                        // required
    QString backstory;                                   // required
    LlmRef llm;                                          // required: a provider, or a model string / spec
    std::vector<std::shared_ptr<Tool>> tools;            // a task's own tools replace these
    MemoryRef memory;                                    // not set: the crew's memory; see MemoryRef
    std::shared_ptr<ChatMemory> chatMemory;              // a chat session every execution reads and adds to (docs/chat-memory.md)
    int maxIter = 25;                                    // LLM calls with tools before the final answer is forced
    int maxExecutionTime = 0;                            // seconds one execution may take; 0: no limit
    int maxRetryLimit = 2;                               // re-executions after a transient failure (see docs/crews.md)
    bool allowDelegation = false;                        // gets the delegate / ask coworker tools in a crew
    bool verbose = false;                                // prints the crew's event trace to stderr while it runs
    bool stream = false;                                 // streams replies as llm_stream_chunk events
    std::function<void(const AgentStep &)> stepCallback; // after each tool step and the final answer
    // MCP servers whose tools this agent gets besides its own: started by each kickoff of a crew that
    // runs the agent, stopped when the kickoff ends. Agent::kickoff and AgentChat refuse an agent that
    // has them (give an McpClient's tools() in `tools` instead). See docs/mcp.md.
    std::vector<McpServerConfig> mcpServers;
};

// How Agent::kickoff() runs.
struct MNEME_RUNTIME_EXPORT AgentKickoffOptions
{
    EventBus *eventBus = nullptr; // null: EventBus::instance(); must outlive the kickoff
};

// What Agent::kickoff() returns (CrewAI's LiteAgentOutput).
struct MNEME_RUNTIME_EXPORT AgentOutput
{
    QString raw; // the final answer
    QString agentRole;
    std::vector<AgentToolCall> toolCalls;
    TokenUsage usage; // every LLM call of the kickoff
    int llmRequests = 0;
    int iterations = 0;

    // {"raw", "agent_role", "tool_calls", "token_usage": {...}, "llm_requests", "iterations"}
    Json toJson() const;
};

// An agent. Built once and shared (std::shared_ptr) by the tasks and crews that use it; it holds no
// state of any one run, so several crews may use it at the same time.
//
// The constructor checks the configuration and throws Error(InvalidArgument) naming the field
// (Error(Plugin) for an LLM provider no plugin answers to). With `memory = true` the agent gets a
// Memory of its own, built from MemoryRef::own's configuration (default: the embedded store), with
// this agent's LLM for memory analysis.
class MNEME_RUNTIME_EXPORT Agent : public std::enable_shared_from_this<Agent>
{
public:
    explicit Agent(AgentConfig config);
    ~Agent();
    Agent(const Agent &) = delete;
    Agent &operator=(const Agent &) = delete;

    QString id() const { return m_id; }
    const AgentConfig &config() const { return m_config; }
    QString role() const { return m_config.role; }
    std::shared_ptr<LlmProvider> llm() const { return m_llm; }
    // The agent's own memory reference: a usable one when it has its own Memory or was given one,
    // Default when it uses its crew's, Off when it has none.
    MemoryRef memory() const { return m_memory; }
    // The Memory built for `memory = true`, else null.
    mneme::Memory *ownMemory() const { return m_own.get(); }

    // The system message of the agent's turns.
    static QString systemPrompt(const QString &role, const QString &goal, const QString &backstory);

    // Runs the agent on its own, without a crew (CrewAI's Agent.kickoff): with its role, its tools,
    // its memory (recalled into the prompt first, the answer's facts saved after; the memory tools
    // too) and its chat memory, publishing the same events as in a crew. Returns at once; the run
    // advances on the event loop of the calling thread. The future fails with the run's typed Error;
    // cancelling it stops the run. It resolves after the memory saves it started are written. An
    // agent not held by a std::shared_ptr must outlive the kickoff. Blocking on the future on the
    // calling thread (result(), waitForFinished()) would stop the loop the run needs: the wait fails
    // at once instead, the kickoff stopped, with an Error(InvalidArgument) naming kickoffAndWait().
    QFuture<AgentOutput> kickoff(const QString &prompt, const AgentKickoffOptions &options = {});
    // Blocking, for scripts and tests: runs an event loop until the kickoff ends (not on a GUI thread).
    AgentOutput kickoffAndWait(const QString &prompt, const AgentKickoffOptions &options = {});

private:
    AgentConfig m_config;
    QString m_id;
    std::shared_ptr<LlmProvider> m_llm;
    std::unique_ptr<mneme::Memory> m_own;
    MemoryRef m_memory;
};

} // namespace mneme
