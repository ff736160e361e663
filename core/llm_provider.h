#pragma once

#include <mneme/core/export.h>
#include <mneme/core/json.h>

#include <QFlags>
#include <QFuture>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QtPlugin>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace mneme {

struct MNEME_CORE_EXPORT ToolCall
{
    QString id; // the provider's id; generated when the provider sends none
    QString name;
    Json arguments = Json::object(); // parsed; a call whose arguments were not JSON keeps {"_raw": text}
};

struct MNEME_CORE_EXPORT ChatMessage
{
    enum class Role {
        System,
        User,
        Assistant,
        Tool
    };
    Role role = Role::User;
    QString content;
    QString toolCallId;              // Role::Tool: the call this message answers
    QString name;                    // Role::Tool: the tool's name
    std::vector<ToolCall> toolCalls; // Role::Assistant: the calls the model made

    static ChatMessage system(const QString &text);
    static ChatMessage user(const QString &text);
    static ChatMessage assistant(const QString &text, std::vector<ToolCall> calls = {});
    static ChatMessage toolResult(const QString &callId, const QString &toolName, const QString &result);
    static QString roleName(Role role); // "system", "user", "assistant", "tool"
};

struct MNEME_CORE_EXPORT ToolSpec
{
    QString name;
    QString description;
    Json parameters = Json{{"type", "object"}, {"properties", Json::object()}}; // a JSON schema
};

struct MNEME_CORE_EXPORT TokenUsage
{
    int promptTokens = 0;
    int completionTokens = 0;
    int totalTokens() const { return promptTokens + completionTokens; }
    TokenUsage &operator+=(const TokenUsage &o)
    {
        promptTokens += o.promptTokens;
        completionTokens += o.completionTokens;
        return *this;
    }
};

struct MNEME_CORE_EXPORT ChatRequest
{
    std::vector<ChatMessage> messages;
    std::vector<ToolSpec> tools;
    QString toolChoice; // empty or "auto", "none", "required", or a tool's name
    bool parallelToolCalls = true;
    Json responseSchema; // null, or a JSON schema the reply must follow
    QString responseSchemaName = QStringLiteral("response");
    std::optional<double> temperature; // unset: the provider config's, else the provider's default
    std::optional<int> maxTokens;
    QStringList stop;
    bool stream = false; // emit textDelta / toolCallDelta while the reply arrives
    // Streaming: also called with each piece of text of this request's reply, on the thread it arrives
    // on (the network thread), so pieces stay tied to their request when several share a provider.
    // Not part of toJson().
    std::function<void(const QString &text)> onTextDelta;

    Json toJson() const; // canonical form (cassettes, logs without secrets)
};

struct MNEME_CORE_EXPORT ChatResponse
{
    QString text;
    std::vector<ToolCall> toolCalls;
    TokenUsage usage;
    QString finishReason; // normalised: "stop", "length", "tool_calls", "content_filter", or the provider's
    QString model;        // as the provider reported it
    Json structured;      // with a responseSchema: the parsed, validated value; else null

    Json toJson() const;
    static ChatResponse fromJson(const Json &j);
};

// A chat model behind some provider. chat() never blocks: the future resolves on the network
// thread, or fails with a typed mneme::Error (Authentication, RateLimited, ContextLength,
// BadRequest, ServerError, Network, Timeout, MalformedReply, Cancelled) carrying the provider's own
// message. Cancelling the future aborts the request; a future you cancelled holds no result (check
// isCanceled() before result()). Streaming requests emit textDelta and
// toolCallDelta from the network thread, in order, before the future resolves with the whole reply.
class MNEME_CORE_EXPORT LlmProvider : public QObject
{
    Q_OBJECT
public:
    enum class Capability {
        Tools = 0x1,      // native tool calling
        JsonSchema = 0x2, // native structured output (otherwise an instruction and robust parsing)
        Streaming = 0x4,
        ParallelTools = 0x8, // several tool calls in one reply
    };
    Q_DECLARE_FLAGS(Capabilities, Capability)

    using QObject::QObject;
    ~LlmProvider() override = default;

    // "provider/model", e.g. "openai/gpt-4o-mini".
    virtual QString id() const = 0;
    virtual Capabilities capabilities() const = 0;
    bool supportsFunctionCalling() const { return capabilities().testFlag(Capability::Tools); }
    virtual QFuture<ChatResponse> chat(const ChatRequest &request) = 0;

Q_SIGNALS:
    void textDelta(const QString &text);
    // A piece of tool call `index` of the reply being streamed: id and name arrive once (usually
    // with the first piece), the arguments' JSON text in pieces.
    void toolCallDelta(int index, const QString &id, const QString &name, const QString &argumentsDelta);
};

class MNEME_CORE_EXPORT LlmProviderFactory
{
public:
    virtual ~LlmProviderFactory() = default;
    virtual std::unique_ptr<LlmProvider> createLlm(const QString &key, const Json &config) = 0;
};

} // namespace mneme

Q_DECLARE_OPERATORS_FOR_FLAGS(mneme::LlmProvider::Capabilities)

#define MNEME_LLM_FACTORY_IID "org.mneme.LlmProviderFactory/1.0"
Q_DECLARE_INTERFACE(mneme::LlmProviderFactory, MNEME_LLM_FACTORY_IID)
