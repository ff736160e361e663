#pragma once

#include <mneme/core/json.h>
#include <mneme/core/llm_provider.h>
#include <mneme/core/tool.h>
#include <mneme/memory/session_message.h>
#include <mneme/runtime/export.h>

#include <QFuture>
#include <QObject>
#include <QString>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace mneme {

struct AgentStep;

struct MNEME_RUNTIME_EXPORT AgentOptions
{
    // LLM calls with tools before the executor asks for the final answer without tools (CrewAI's max_iter).
    int maxIterations = 25;
    // How often one tool may run with the same arguments in a turn; further identical calls are not run,
    // the model is told it already has that result.
    int maxRepeatedCalls = 1;
    // Forwarded to every request when set.
    std::optional<double> temperature;
    std::optional<int> maxTokens;
    // A tool that has not answered after this many milliseconds is abandoned (its future cancelled) and
    // the model is told it timed out; 0 waits as long as the tool takes.
    int toolTimeoutMs = 0;
    // Stream the replies: each piece of text is emitted as textChunk() while it arrives.
    bool stream = false;
    // Called on the executor's thread after each step: a batch of tool calls with their results, and the
    // final answer. An exception it throws is reported with qWarning and ignored.
    std::function<void(const AgentStep &)> stepCallback;
};

// One tool call the executor handled.
struct MNEME_RUNTIME_EXPORT AgentToolCall
{
    QString name;
    Json arguments;
    QString output;       // what the model was given back
    bool isError = false; // unknown tool, invalid arguments, a failing tool, a refused repeat
};

// One step of a run, as given to AgentOptions::stepCallback.
struct MNEME_RUNTIME_EXPORT AgentStep
{
    int iteration = 0;                    // the LLM call this step followed
    QString text;                         // what the model wrote (its thought, or the final answer)
    std::vector<AgentToolCall> toolCalls; // the calls it made, with their outputs; empty for the final step
    bool isFinal = false;
};

struct MNEME_RUNTIME_EXPORT AgentResult
{
    QString finalAnswer;
    int iterations = 0; // LLM calls made, the forced final one included
    std::vector<AgentToolCall> toolCalls;
    TokenUsage usage;         // summed over every LLM call
    bool forcedFinal = false; // maxIterations was reached and the answer was asked for without tools
    // What the turn added to the conversation, as a chat memory stores it: with native tool calling the
    // assistant's messages with their tool calls, each call's result, and the final answer; with the
    // text protocol the final answer alone. Assistant messages carry the provider's completion tokens.
    QList<SessionMessage> transcript;
};

// Runs one agent turn to a final answer: sends the messages with the tools, runs the tools the model
// calls, feeds their results back, and repeats until a reply calls no tool. Native tool calling is used
// when the provider supports it; otherwise a ReAct text protocol (Thought / Action / Action Input /
// Observation / Final Answer) described in the system prompt.
//
// Nothing blocks the thread that owns the executor: run() returns at once and the loop advances in
// continuations on that thread. Cancelling the returned future stops the loop; no request follows.
// An LLM failure fails the future with the provider's mneme::Error. Tool failures do not: their text
// goes back to the model. Signals are emitted on the owner's thread.
class MNEME_RUNTIME_EXPORT AgentExecutor : public QObject
{
    Q_OBJECT
public:
    explicit AgentExecutor(std::shared_ptr<LlmProvider> llm, QObject *parent = nullptr);
    ~AgentExecutor() override;

    QFuture<AgentResult> run(const std::vector<ChatMessage> &messages, const std::vector<std::shared_ptr<Tool>> &tools,
                             const AgentOptions &options = {});
    // Cancels every run at once, on this thread: the request in flight is aborted and reported with
    // llmCallFailed, tools still running are reported with toolFinished (as errors), and the runs'
    // futures end cancelled. Cancelling a run's future does the same for that run, when the
    // cancellation reaches this thread.
    void cancel();

    // The text protocol's system-prompt section for these tools (used when the provider lacks native tools).
    static QString reactInstructions(const std::vector<std::shared_ptr<Tool>> &tools);

    // A reply of the text protocol, parsed.
    struct ReactStep
    {
        bool isFinal = true;
        QString finalAnswer;  // isFinal
        QString tool;         // !isFinal
        Json arguments;       // !isFinal; null when the input was not JSON
        QString inputProblem; // !isFinal and arguments null: what was wrong with the input
    };
    static ReactStep parseReact(const QString &text);

Q_SIGNALS:
    void iterationStarted(int iteration);
    void llmCallStarted(int iteration);
    void llmCallCompleted(int iteration, int promptTokens, int completionTokens);
    void llmCallFailed(int iteration, const QString &error);
    // `callId` tells concurrent calls apart (the provider's call id, or "react-<n>"): a finish carries
    // the id of its start.
    void toolStarted(const QString &name, const QString &argumentsJson, const QString &callId);
    void toolFinished(const QString &name, const QString &output, bool isError, qint64 durationMs, const QString &callId);
    // A piece of a streamed reply (AgentOptions::stream), in order, before llmCallCompleted of its iteration.
    void textChunk(int iteration, const QString &text);

private:
    struct Run;
    void step(const std::shared_ptr<Run> &run);
    void onReply(const std::shared_ptr<Run> &run, const ChatResponse &reply);
    void runTools(const std::shared_ptr<Run> &run, std::vector<ToolCall> calls);
    void finish(const std::shared_ptr<Run> &run);
    void reportStep(const std::shared_ptr<Run> &run, AgentStep step);
    void abort(const std::shared_ptr<Run> &run);

    std::shared_ptr<LlmProvider> m_llm;
    // Lets stream pieces arriving on the network thread reach this executor only while it exists.
    struct Relay;
    std::shared_ptr<Relay> m_relay;
    std::vector<std::weak_ptr<Run>> m_runs; // to abort their requests when the executor goes
};

} // namespace mneme
