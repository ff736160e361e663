#pragma once

#include <mneme/core/error.h>
#include <mneme/core/http_chat_provider.h>

namespace mneme {

// A chat model over the OpenAI Chat Completions protocol: POST {base}/chat/completions.
//
// The key "openai" talks to https://api.openai.com/v1 with `Authorization: Bearer <key>`, or to any
// OpenAI-compatible server given by its base URL (no key needed there unless the server wants one).
// Native structured output (response_format json_schema) is used on OpenAI itself; a compatible
// server gets the schema as an instruction unless its config says "supports_json_schema": true.
// AzureOpenAiProvider reuses the wire format with Azure's URL and header. See README.md.
class OpenAiProvider : public HttpChatProvider
{
    Q_OBJECT
public:
    // What the "openai" key reads: model gpt-4o-mini, https://api.openai.com/v1, OPENAI_API_KEY,
    // OPENAI_BASE_URL / OPENAI_API_BASE, and the keys organization, project, supports_json_schema, headers.
    static ProviderDefaults defaults();

    explicit OpenAiProvider(const Json &config, QObject *parent = nullptr);
    ~OpenAiProvider() override;

    Capabilities capabilities() const override;

    // Whether `model` takes max_completion_tokens instead of max_tokens: the o1, o3, o4 and gpt-5
    // families, also behind a vendor prefix ("openai/o3-mini").
    static bool usesMaxCompletionTokens(const QString &model);

protected:
    // `nativeByDefault`: whether response_format json_schema is sent when the config does not say
    // (through "supports_json_schema").
    OpenAiProvider(ProviderSettings settings, ProviderDefaults defaults, bool nativeByDefault, QObject *parent);

    // Where the request goes and the headers that carry the credentials; Azure has its own. May throw
    // Error (Authentication) when credentials are required and missing.
    virtual QUrl chatUrl() const;
    virtual HttpHeaders authHeaders() const;
    // Whether the body names the model (Azure's URL names the deployment instead).
    virtual bool sendsModel() const;

    HttpRequest buildRequest(const ChatRequest &request, bool stream) const override;
    ChatResponse parseResponse(const Json &body) const override;
    StreamFormat streamFormat() const override;
    void onStreamEvent(StreamState &state, const QByteArray &event, const Json &data) override;
    bool nativeSchema(const ChatRequest &request) const override;

private:
    OpenAiProvider(const ProviderSettings &settings, QObject *parent); // "openai": native schema on OpenAI itself
    Json requestBody(const ChatRequest &request, bool stream) const;
    // The typed Error for an error object in a reply or a stream ({"message", "type", "code"}).
    Error errorFrom(const Json &error) const;

    HttpHeaders m_extraHeaders; // organization, project, and the config's "headers"
    bool m_nativeSchema = true;
};

} // namespace mneme
