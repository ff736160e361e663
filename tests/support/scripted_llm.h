#pragma once

#include "scripted_http_server.h"
#include <mneme/core/json.h>
#include <mneme/core/llm_provider.h>

#include <QMap>
#include <QMutex>
#include <QString>
#include <functional>
#include <memory>

namespace mneme::test {

// An OpenAI-compatible chat server on loopback for memory tests: each request is answered by the
// responder registered for its step, which is the JSON-schema name of its response_format
// ("memory_analysis", "consolidation_plan", ...) or, for a request with tools and no schema, the
// first tool's name. A step with no responder gets HTTP 500 (so the call fails and memory falls back).
// Replies go through the real `openai` plugin loaded by the PluginRegistry.
class ScriptedLlm
{
public:
    using Responder = std::function<ScriptedReply(const Json &requestBody)>;

    ScriptedLlm();

    void on(const QString &step, Responder responder);
    // The reply's message content is `value` serialised: the well-behaved model.
    void onJson(const QString &step, const Json &value);
    // The reply's message content is `text` verbatim (prose, fences, garbage).
    void onText(const QString &step, const QString &text);
    // Each request of `step` answers with an HTTP error of this status.
    void onError(const QString &step, int status);
    // The reply is one tool call of `tool` with these arguments.
    void onToolCall(const QString &step, const QString &tool, const Json &arguments);
    // Every step without a responder fails with this status (default 500).
    void failUnscripted(int status) { m_unscriptedStatus = status; }
    // Answers every step that has no responder of its own (agents' turns, routed by their prompts).
    void setFallback(Responder responder);

    int calls(const QString &step) const;
    int totalCalls() const;
    // The request bodies of a step, in order.
    QList<Json> requests(const QString &step) const;
    // The text of every message of the last request of `step`, joined.
    QString lastPrompt(const QString &step) const;

    // For MemoryConfig::llm: {"provider":"openai","config":{model, base_url, api_key, max_retries 0,
    // supports_json_schema true}}; `extra` overrides keys.
    Json config(const Json &extra = Json::object()) const;
    // The provider itself, built through the registry.
    std::shared_ptr<LlmProvider> provider(const Json &extra = Json::object()) const;

    // A chat completion whose message content is `content`, reporting this token usage.
    static ScriptedReply completion(const QString &content, int promptTokens = 11, int completionTokens = 7);
    // A chat completion with these tool calls (name, arguments verbatim, JSON or not; ids call_1,
    // call_2, ...), reporting this token usage.
    static ScriptedReply toolCallsReply(const QList<QPair<QString, QString>> &calls, int promptTokens = 11,
                                        int completionTokens = 7);
    // One call of `tool` whose arguments are `rawArguments`.
    static ScriptedReply toolCallReply(const QString &tool, const QString &rawArguments);
    static QString stepOf(const Json &body);
    // The content of the first message of `role` ("system", "user", ...) in a request body, or of the
    // last one with `last`; empty when there is none.
    static QString messageOf(const Json &body, const char *role, bool last = false);
    // The names of the tools a request offers, in order.
    static QStringList toolNamesOf(const Json &body);
    // Whether the request carries tool results (a follow-up turn of the tool loop).
    static bool hasToolResults(const Json &body);

private:
    ScriptedReply answer(const RecordedRequest &request);

    ScriptedHttpServer m_server;
    mutable QMutex m_mutex;
    QMap<QString, Responder> m_responders;
    Responder m_fallback;
    QMap<QString, QList<Json>> m_requests;
    int m_unscriptedStatus = 500;
};

} // namespace mneme::test
