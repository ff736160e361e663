#pragma once

#include <mneme/memory/session_message.h>
#include <mneme/runtime/agent.h>
#include <mneme/runtime/agent_executor.h>
#include <mneme/runtime/export.h>

#include <QFuture>
#include <QList>
#include <QObject>
#include <QString>
#include <memory>
#include <vector>

namespace mneme {

class ChatMemory;
class ConsoleListener;
class EventBus;

// One turn of an AgentChat.
struct MNEME_RUNTIME_EXPORT ChatReply
{
    QString text; // the agent's answer
    std::vector<AgentToolCall> toolCalls;
    TokenUsage usage; // the turn's LLM calls
    int llmRequests = 0;
    int iterations = 0;
    QList<SessionMessage> stored; // the turn as the chat memory stored it: the user's message, then the agent's

    // {"text", "tool_calls", "token_usage", "llm_requests", "iterations", "stored"}
    Json toJson() const;
};

struct MNEME_RUNTIME_EXPORT AgentChatOptions
{
    EventBus *eventBus = nullptr; // null: EventBus::instance(); must outlive the chat
};

// An agent you chat with: it holds a chat session and runs one turn per user message, with its role,
// tools (and the memory tools when it has memory), streaming (AgentConfig::stream), events and the
// session's chat memory: each turn sends the history that fits with the memory blocks' content, then
// stores the user's message and the agent's answer (its tool calls and their results too). The long-
// term memory enters a chat through the chat memory's blocks (a long_term block), not through a
// recall per turn.
//
// Lives on the thread it was created on and runs on its event loop: send() returns at once, so a GUI
// stays responsive; turns sent while one runs wait for it, in order. Signals are emitted on that
// thread.
class MNEME_RUNTIME_EXPORT AgentChat : public QObject
{
    Q_OBJECT
public:
    // The session is `memory`, else the agent's AgentConfig::chatMemory, else a session of its own in
    // memory (lost with the chat). Throws Error(InvalidArgument) for a null agent.
    AgentChat(std::shared_ptr<Agent> agent, std::shared_ptr<ChatMemory> memory = nullptr, const AgentChatOptions &options = {},
              QObject *parent = nullptr);
    // Cancels the turns still running or waiting.
    ~AgentChat() override;

    std::shared_ptr<Agent> agent() const { return m_agent; }
    std::shared_ptr<ChatMemory> memory() const { return m_memory; }
    bool isBusy() const { return m_running || !m_queue.isEmpty(); }

    // One turn. The future fails with the turn's typed Error (a provider error after the agent's
    // retries, Error(ContextLength) when the message and the blocks that never give way do not fit
    // token_limit, Error(InvalidArgument) for a blank message), or is cancelled by cancel().
    QFuture<ChatReply> send(const QString &message);
    // Blocking, for scripts and tests: runs an event loop until the turn ends (not on a GUI thread).
    ChatReply sendAndWait(const QString &message);
    // Stops the running turn (its request is aborted, nothing of it is stored) and drops the waiting ones.
    void cancel();

Q_SIGNALS:
    void turnStarted(const QString &message);
    // A piece of the answer while it streams (AgentConfig::stream), in order.
    void textChunk(const QString &text);
    void toolStarted(const QString &name, const QString &argumentsJson);
    void toolFinished(const QString &name, const QString &output, bool isError);
    void turnCompleted(const mneme::ChatReply &reply);
    void turnFailed(const QString &error);

private:
    struct Turn;
    void next();
    void run(const std::shared_ptr<Turn> &turn);
    void finish(const std::shared_ptr<Turn> &turn, std::optional<ChatReply> reply, std::optional<Error> error);

    std::shared_ptr<Agent> m_agent;
    std::shared_ptr<ChatMemory> m_memory;
    EventBus *m_bus = nullptr;
    QList<std::shared_ptr<Turn>> m_queue;
    std::shared_ptr<Turn> m_running;
    QList<QFuture<void>> m_background;          // memory tool jobs, waited for when the chat goes
    std::unique_ptr<ConsoleListener> m_console; // AgentConfig::verbose
};

} // namespace mneme

Q_DECLARE_METATYPE(mneme::ChatReply)
