#pragma once

#include <mneme/core/error.h>
#include <mneme/core/http_chat_provider.h>

#include <QUrl>

namespace mneme {

// A chat model served by Ollama, over its native API: POST {base}/api/chat.
//
// Messages, tools and structured output map onto Ollama's own fields (tool calls carry their
// arguments as JSON objects, tool results name their tool with "tool_name", a response schema goes
// in "format"). Streaming replies are newline-delimited JSON objects, one per generated piece, the
// last with "done": true and the token counts. See README.md for the configuration keys.
class OllamaProvider : public HttpChatProvider
{
    Q_OBJECT
public:
    static ProviderDefaults defaults();

    OllamaProvider(ProviderSettings settings, ProviderDefaults defaults, QObject *parent = nullptr);
    ~OllamaProvider() override;

    Capabilities capabilities() const override;

    // The chat endpoint for these settings: a base URL ending in /api, /api/chat or /v1 is cut back
    // to the server's root, and a bare host ("OLLAMA_HOST=gpu-box") gets Ollama's port 11434.
    static QUrl chatUrl(const ProviderSettings &settings);

protected:
    HttpRequest buildRequest(const ChatRequest &request, bool stream) const override;
    ChatResponse parseResponse(const Json &body) const override;
    StreamFormat streamFormat() const override { return StreamFormat::NdJson; }
    void onStreamEvent(StreamState &state, const QByteArray &event, const Json &data) override;
    Error refineError(const Error &error) const override;

private:
    Json body(const ChatRequest &request, bool stream) const;
    Error streamError(const Json &error) const;

    QUrl m_chatUrl;
    Json m_options = Json::object(); // the config's "options", under the request's own
    Json m_keepAlive;                // null: Ollama's default
    Json m_think;                    // null: the model's default
};

} // namespace mneme
