#pragma once

#include <mneme/core/error.h>
#include <mneme/core/http_chat_provider.h>

namespace mneme {

// Claude through Anthropic's Messages API: POST {base}/v1/messages with x-api-key and
// anthropic-version headers. System messages become the top-level "system" text; tool results
// become tool_result blocks of a user turn; turns of the same role are merged, as the API wants
// user and assistant turns to alternate. Streaming reads the API's server-sent events. There is no
// native JSON-schema output, so structured output uses HttpChatProvider's instruction fallback.
class AnthropicProvider : public HttpChatProvider
{
    Q_OBJECT
public:
    static constexpr int DefaultMaxTokens = 4096;

    explicit AnthropicProvider(const Json &config, QObject *parent = nullptr);
    ~AnthropicProvider() override;

    Capabilities capabilities() const override;

    // What ProviderSettings needs to read an "anthropic" config.
    static ProviderDefaults defaults();

protected:
    HttpRequest buildRequest(const ChatRequest &request, bool stream) const override;
    ChatResponse parseResponse(const Json &body) const override;
    StreamFormat streamFormat() const override { return StreamFormat::ServerSentEvents; }
    void onStreamEvent(StreamState &state, const QByteArray &event, const Json &data) override;

private:
    // The typed error for an {"type":"error","error":{...}} object that arrived with HTTP 200 (a
    // stream's error event).
    Error errorFromObject(const Json &error) const;

    QString m_version; // anthropic-version header
    QString m_beta;    // anthropic-beta header, empty: none
};

} // namespace mneme
