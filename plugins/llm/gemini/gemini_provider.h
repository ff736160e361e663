#pragma once

#include <mneme/core/error.h>
#include <mneme/core/http_chat_provider.h>

#include <QMutex>
#include <QUrl>
#include <deque>
#include <map>
#include <optional>

namespace mneme {

// A Gemini model over the Gemini API: POST {base}/v1beta/models/{model}:generateContent, streamed
// with :streamGenerateContent?alt=sse. The API key travels in the x-goog-api-key header, never in
// the URL.
//
// System messages become systemInstruction; the conversation becomes "user" / "model" contents whose
// parts are text, functionCall (the model's tool calls) and functionResponse (tool results, sent as
// "user" parts). A response schema goes natively to generationConfig.responseSchema once rewritten in
// Gemini's schema dialect (GeminiSchema::convert); a schema that cannot be rewritten, or a request
// that also offers tools, falls back to the instruction-and-validation path. See README.md.
class GeminiProvider : public HttpChatProvider
{
    Q_OBJECT
public:
    static ProviderDefaults defaults(const QString &key);

    GeminiProvider(ProviderSettings settings, ProviderDefaults defaults, QObject *parent = nullptr);
    ~GeminiProvider() override;

    Capabilities capabilities() const override;

protected:
    HttpRequest buildRequest(const ChatRequest &request, bool stream) const override;
    ChatResponse parseResponse(const Json &body) const override;
    StreamFormat streamFormat() const override { return StreamFormat::ServerSentEvents; }
    void onStreamEvent(StreamState &state, const QByteArray &event, const Json &data) override;
    bool nativeSchema(const ChatRequest &request) const override;

private:
    QUrl methodUrl(bool stream) const;
    Json body(const ChatRequest &request) const;
    std::optional<Json> responseSchemaFor(const ChatRequest &request) const;
    Error replyError(const Json &error) const;
    Error blockedError(const Json &feedback) const;
    ToolCall callFrom(const Json &part) const;

    // What a tool call of an earlier reply needs when it is sent back: Gemini's own call id (when it
    // gave one) and the part's thoughtSignature (thinking models require it on later turns).
    struct CallMemo
    {
        QString signature;
        bool providerId = false;
    };
    void remember(const QString &id, const CallMemo &memo) const;
    std::optional<CallMemo> recall(const QString &id) const;

    Json m_safetySettings; // the config's safety_settings, passed through; null: Gemini's defaults
    mutable QMutex m_memoMutex;
    mutable std::map<QString, CallMemo> m_memo;
    mutable std::deque<QString> m_memoOrder;
};

} // namespace mneme
