#pragma once

#include <mneme/core/json.h>
#include <mneme/runtime/export.h>

#include <QDateTime>
#include <QHash>
#include <QMetaType>
#include <QMutex>
#include <QObject>
#include <QSet>
#include <QString>
#include <vector>

namespace mneme {

class AgentExecutor;
class ChatMemory;
class Memory;

// Event type names. A `*_started` type opens a scope that its completed / failed (finished / error)
// counterpart closes; the others are single events.
namespace events {
inline constexpr char kCrewKickoffStarted[] = "crew_kickoff_started";
inline constexpr char kCrewKickoffCompleted[] = "crew_kickoff_completed";
inline constexpr char kCrewKickoffFailed[] = "crew_kickoff_failed";
inline constexpr char kTaskStarted[] = "task_started";
inline constexpr char kTaskCompleted[] = "task_completed";
inline constexpr char kTaskFailed[] = "task_failed";
inline constexpr char kAgentExecutionStarted[] = "agent_execution_started";
inline constexpr char kAgentExecutionCompleted[] = "agent_execution_completed";
inline constexpr char kAgentExecutionError[] = "agent_execution_error";
inline constexpr char kLlmCallStarted[] = "llm_call_started";
inline constexpr char kLlmCallCompleted[] = "llm_call_completed";
inline constexpr char kLlmCallFailed[] = "llm_call_failed";
inline constexpr char kLlmStreamChunk[] = "llm_stream_chunk";
inline constexpr char kToolUsageStarted[] = "tool_usage_started";
inline constexpr char kToolUsageFinished[] = "tool_usage_finished";
inline constexpr char kToolUsageError[] = "tool_usage_error";
inline constexpr char kMemoryQueryStarted[] = "memory_query_started";
inline constexpr char kMemoryQueryCompleted[] = "memory_query_completed";
inline constexpr char kMemoryQueryFailed[] = "memory_query_failed";
inline constexpr char kMemorySaveStarted[] = "memory_save_started";
inline constexpr char kMemorySaveCompleted[] = "memory_save_completed";
inline constexpr char kMemorySaveFailed[] = "memory_save_failed";
inline constexpr char kMemoryRetrievalStarted[] = "memory_retrieval_started";
inline constexpr char kMemoryRetrievalCompleted[] = "memory_retrieval_completed";
inline constexpr char kMemoryRetrievalFailed[] = "memory_retrieval_failed";
inline constexpr char kLlmGuardrailStarted[] = "llm_guardrail_started";
inline constexpr char kLlmGuardrailCompleted[] = "llm_guardrail_completed";
inline constexpr char kLlmGuardrailFailed[] = "llm_guardrail_failed";
// A kickoff starting one MCP server (McpServerConfig) and reading its tools.
inline constexpr char kMcpConnectionStarted[] = "mcp_connection_started";
inline constexpr char kMcpConnectionCompleted[] = "mcp_connection_completed";
inline constexpr char kMcpConnectionFailed[] = "mcp_connection_failed";
// Flows (flows/): a run, its steps (CrewAI's method execution events) and the labels routers emit.
inline constexpr char kFlowStarted[] = "flow_started";
inline constexpr char kFlowFinished[] = "flow_finished";
inline constexpr char kFlowFailed[] = "flow_failed";
inline constexpr char kMethodExecutionStarted[] = "method_execution_started";
inline constexpr char kMethodExecutionFinished[] = "method_execution_finished";
inline constexpr char kMethodExecutionFailed[] = "method_execution_failed";
inline constexpr char kFlowRouterLabelEmitted[] = "flow_router_label_emitted";
// Chat memory (memory/ChatMemory): messages stored, flushes to the memory blocks, truncations.
inline constexpr char kChatMessageStored[] = "chat_message_stored";
inline constexpr char kChatMemoryFlushStarted[] = "chat_memory_flush_started";
inline constexpr char kChatMemoryFlushCompleted[] = "chat_memory_flush_completed";
inline constexpr char kChatMemoryFlushFailed[] = "chat_memory_flush_failed";
inline constexpr char kChatMemoryBlockFlushed[] = "chat_memory_block_flushed";
inline constexpr char kChatMemoryBlockTruncated[] = "chat_memory_block_truncated";
inline constexpr char kChatMemoryBlockFailed[] = "chat_memory_block_failed";

// The `*_started` type an end type closes; empty when `type` closes nothing.
MNEME_RUNTIME_EXPORT QString startTypeOf(const QString &type);
MNEME_RUNTIME_EXPORT bool isStartType(const QString &type);
} // namespace events

struct MNEME_RUNTIME_EXPORT Event
{
    QString type;
    QString id;          // a uuid, set by the bus when empty
    QString parentId;    // the start event an end event closes, else the innermost open scope
    QDateTime timestamp; // UTC, set by the bus when invalid
    QString sourceType;  // "unified_memory", "agent", "crew", ...
    QString taskId;
    QString agentId;
    Json properties = Json::object();

    static Event make(const QString &type, const Json &properties = Json::object(), const QString &sourceType = {},
                      const QString &taskId = {}, const QString &agentId = {}, const QString &parentId = {});
    Json toJson() const;
};

// The process's event stream. publish() may be called from any thread; the signals are emitted on
// the publishing thread, so Qt's connection rules decide where receivers run (queued into a
// receiver's thread with AutoConnection, at once with DirectConnection).
//
// Scopes. begin() publishes a start event and pushes it on the calling thread's scope stack; end()
// closes the innermost open start of the matching type on that thread and takes it as parent.
// Every other event published on a thread with an open scope gets the innermost one as parent. The
// stacks are per thread because work that starts on one thread ends on it (Memory's writer, the
// executor's thread), and so that concurrent threads do not adopt each other's scopes.
class MNEME_RUNTIME_EXPORT EventBus : public QObject
{
    Q_OBJECT
public:
    explicit EventBus(QObject *parent = nullptr);
    ~EventBus() override;

    // The process-wide bus crews publish on unless they are given another. Created on first use and
    // never destroyed (it outlives every crew and thread that may publish on it).
    static EventBus &instance();

    // Publishes as given, filling an empty id, an invalid timestamp and (from the open scope) an
    // empty parent id. Returns the id.
    QString publish(Event event);
    QString publish(const QString &type, const Json &properties = Json::object(), const QString &sourceType = {},
                    const QString &taskId = {}, const QString &agentId = {});

    // Publishes a start event and opens its scope on this thread. Returns its id.
    QString begin(const QString &type, const Json &properties = Json::object(), const QString &sourceType = {},
                  const QString &taskId = {}, const QString &agentId = {});
    // Publishes an end event paired with the innermost open start of the matching type on this
    // thread (or with the open start `startId` when given), closing it; source, task and agent ids
    // missing here are taken from the start. An end with no such open start is a caller bug: it is
    // reported with qWarning and still published, without parent.
    QString end(const QString &type, const Json &properties = Json::object(), const QString &sourceType = {},
                const QString &taskId = {}, const QString &agentId = {}, const QString &startId = {});

    // Like begin(type, ...), with the event as given: an explicit parentId is kept (else the innermost
    // open scope is the parent).
    QString begin(Event start);

    // Explicit pairing, for work that interleaves on one thread or moves between threads (a crew's
    // tasks and agents all advance on the event loop's thread): open() publishes a start event with
    // the given parent (when empty, the innermost open scope of this thread) without pushing it on any
    // thread's stack, and remembers it; close() publishes the end paired with it (parent = the start;
    // source, task and agent ids the end leaves empty are taken from the start) and forgets it. Any
    // thread may close what another opened. close() of an unknown id is a caller bug: reported with
    // qWarning and published without parent.
    QString open(Event start);
    QString close(const QString &startId, Event end);

    // Makes an already published start the innermost scope of this thread while it lives, so events
    // published meanwhile on this thread without a parent become its children (the work a flow step
    // starts while it is called). Nothing is published; scopes of different buses never mix.
    class Scope
    {
    public:
        Scope(EventBus *bus, const QString &eventId);
        ~Scope();
        Scope(const Scope &) = delete;
        Scope &operator=(const Scope &) = delete;

    private:
        EventBus *m_bus;
        QString m_id;
    };

    // Whether this thread has an open start of `startType`.
    bool isOpen(const QString &startType) const;
    // How many scopes are open on this thread.
    int openScopes() const;

    // Republishes Memory's signals as memory events (source "unified_memory") and its analysis LLM
    // calls as llm_call events with a `step`. Connected directly: they come from the writer thread
    // and must pair there. Attaching a Memory that is already attached does nothing.
    void attachMemory(Memory *memory);
    bool isAttached(Memory *memory) const;
    // Republishes a ChatMemory's signals as chat events (source "chat_memory"): chat_message_stored,
    // chat_memory_flush_started / _completed / _failed (paired by id) with a chat_memory_block_flushed
    // per block inside, chat_memory_block_truncated, chat_memory_block_failed, and its blocks' LLM calls
    // as llm_call events with a `step`. Attaching one that is already attached does nothing.
    void attachChatMemory(ChatMemory *chatMemory);
    // Republishes the executor's LLM calls, stream chunks and tool runs (source "agent") with these
    // agent and task ids. The events of one executor pair among themselves (open() / close()), so
    // executors interleaving on one thread keep theirs apart; their parent is `parentId` (an agent
    // execution's start), or else the innermost scope open on the executor's thread when each starts.
    void attachExecutor(AgentExecutor *executor, const QString &agentId = {}, const QString &taskId = {},
                        const QString &parentId = {});

Q_SIGNALS:
    void eventPublished(const mneme::Event &event);
    void crewEvent(const mneme::Event &event);
    void taskEvent(const mneme::Event &event);
    void agentEvent(const mneme::Event &event);
    void llmEvent(const mneme::Event &event);
    void toolEvent(const mneme::Event &event);
    void memoryEvent(const mneme::Event &event);
    // flow_* and method_execution_* events.
    void flowEvent(const mneme::Event &event);
    // chat_* events.
    void chatEvent(const mneme::Event &event);

private:
    struct Frame
    {
        QString id;
        QString type;
        QString sourceType;
        QString taskId;
        QString agentId;
        Json properties;
    };
    // This thread's open scopes of this bus (created empty on demand).
    std::vector<Frame> &stack() const;
    // Drops this thread's stack entry once empty, so threads keep nothing for buses they are done with.
    void releaseIfEmpty() const;
    QString publishAs(Event event, bool inheritParent);
    // An end event takes its start as parent, and the source, task and agent ids it leaves empty.
    static void pairWith(Event &end, const Frame &start);
    // The open frame `end` would close, or null.
    const Frame *openFrame(const QString &startType, const QString &startId = {}) const;
    // end() when a matching start is open, else a plain publish without a warning (for sources
    // that report some failures without a start, like Memory's background saves).
    QString endOrPublish(const QString &type, const Json &properties, const QString &sourceType);

    mutable QMutex m_openMutex;
    QHash<QString, Frame> m_open; // open() starts not yet closed, by id
    QSet<Memory *> m_memories;    // attached, until destroyed
    QSet<ChatMemory *> m_chatMemories;
    // Republishes the llmCall* signals of a Memory or ChatMemory as llm_call events of `source`.
    template<typename Sender>
    void attachLlmCalls(Sender *sender, const QString &source);

    // Stacks live in a thread_local map keyed by a per-bus serial (never reused, unlike an address):
    // unlike QThreadStorage it tolerates a bus dying before the threads that published on it.
    const quint64 m_serial;
};

} // namespace mneme

Q_DECLARE_METATYPE(mneme::Event)
