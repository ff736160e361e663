#pragma once

#include "core/json.h"

#include <QFlags>
#include <QFuture>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QtPlugin>
#include <memory>
#include <vector>

namespace mneme {

struct ChatMessage
{
    enum class Role { System, User, Assistant, Tool };
    Role role = Role::User;
    QString content;
    QString toolCallId;     // Role::Tool: the call this message answers
    QString name;           // Role::Tool: the tool's name
    Json toolCalls = Json::array(); // Role::Assistant: [{"id","name","arguments":{...}}]
};

struct ToolCall
{
    QString id;
    QString name;
    Json arguments = Json::object();
};

struct TokenUsage
{
    int promptTokens = 0;
    int completionTokens = 0;
    int totalTokens() const { return promptTokens + completionTokens; }
};

struct ChatRequest
{
    std::vector<ChatMessage> messages;
    Json tools = Json::array();         // [{"name","description","parameters": JSON schema}]
    Json responseSchema;                // null, or a JSON schema the reply must follow
    double temperature = -1;            // < 0: the provider's default
    int maxTokens = 0;                  // 0: the provider's default
    QStringList stop;
};

struct ChatResponse
{
    QString text;
    std::vector<ToolCall> toolCalls;
    TokenUsage usage;
    QString finishReason;
    QString model;
};

// A chat model behind some provider. chat() never blocks; it resolves on the provider's thread or
// fails with mneme::Error(Provider). Streaming providers emit textDelta() as text arrives.
class LlmProvider : public QObject
{
    Q_OBJECT
public:
    enum class Capability {
        Tools = 0x1,
        JsonSchema = 0x2,
        Streaming = 0x4,
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
};

class LlmProviderFactory
{
public:
    virtual ~LlmProviderFactory() = default;
    virtual std::unique_ptr<LlmProvider> createLlm(const QString &key, const Json &config) = 0;
};

} // namespace mneme

Q_DECLARE_OPERATORS_FOR_FLAGS(mneme::LlmProvider::Capabilities)

#define MNEME_LLM_FACTORY_IID "org.mneme.LlmProviderFactory/1.0"
Q_DECLARE_INTERFACE(mneme::LlmProviderFactory, MNEME_LLM_FACTORY_IID)
