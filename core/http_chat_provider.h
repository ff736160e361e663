#pragma once

#include <mneme/core/error.h>
#include <mneme/core/export.h>
#include <mneme/core/http_client.h>
#include <mneme/core/llm_provider.h>
#include <mneme/core/provider_settings.h>

#include <QByteArray>
#include <QMutex>
#include <atomic>
#include <map>
#include <memory>

namespace mneme {

// The common half of every HTTP chat provider: settings, the HTTP client, streaming, structured
// output and error wording. A plugin supplies the wire format: how a ChatRequest becomes an HTTP
// request, how a reply body becomes a ChatResponse, and how stream events add to the reply.
//
// Structured output: when the request has a responseSchema and the provider lacks
// Capability::JsonSchema (or nativeSchema() says no for this request), an instruction with the
// schema is added to the system message; the reply text is then read with JsonReply::extract and
// checked with JsonReply::validate, and one repair round asks the model to fix what failed before
// giving up with Error(MalformedReply). The parsed value lands in ChatResponse::structured.
class MNEME_CORE_EXPORT HttpChatProvider : public LlmProvider
{
    Q_OBJECT
public:
    HttpChatProvider(ProviderSettings settings, ProviderDefaults defaults, QObject *parent = nullptr);
    ~HttpChatProvider() override;

    QString id() const override; // "<provider>/<model>"
    QFuture<ChatResponse> chat(const ChatRequest &request) final;

    const ProviderSettings &settings() const { return m_settings; }

protected:
    enum class StreamFormat {
        ServerSentEvents,
        NdJson
    };

    // What is being assembled while a reply streams in.
    struct StreamState
    {
        ChatResponse response;
        struct PartialCall
        {
            QString id, name, arguments;
        };
        std::map<int, PartialCall> calls; // by the provider's index
        // The provider said the reply is complete ("[DONE]" is recognised here; a subclass sets it on its
        // own end marker). A stream that ends without it fails with Error(Network): it was cut.
        bool done = false;
        bool committed = false;                           // a delta was emitted: the reply can no longer be retried
        std::function<void(const QString &)> onTextDelta; // the request's own sink, if any
        QStringList secrets;                              // redacted from every delta
        QString heldBack;                                 // text not emitted yet: it may be the start of a secret the next delta completes
    };

    // The request for `request` (with the settings' temperature / max tokens already applied when the
    // request left them unset). `stream` asks for the provider's streaming form.
    virtual HttpRequest buildRequest(const ChatRequest &request, bool stream) const = 0;
    // The reply of a non-streamed request. Throws Error(MalformedReply) when the body does not have
    // the protocol's shape.
    virtual ChatResponse parseResponse(const Json &body) const = 0;
    virtual StreamFormat streamFormat() const = 0;
    // One streamed event: SSE event name and parsed data, or (NdJson) an empty name and the line.
    // Use appendText / appendToolCall so the deltas are emitted. Throw Error for an error event.
    virtual void onStreamEvent(StreamState &state, const QByteArray &event, const Json &data) = 0;
    // A chance to add provider-specific advice to a failed chat's error (keep its kind and status).
    virtual Error refineError(const Error &error) const;
    // Whether this request's schema goes to the provider natively (default: the JsonSchema capability).
    virtual bool nativeSchema(const ChatRequest &request) const;

    // Cancels the requests in flight and waits until the network thread has let go of this
    // provider. A subclass calls it first thing in its destructor (the handlers of a request in
    // flight call its virtual functions); calling it twice is harmless.
    void shutdown();

    void appendText(StreamState &state, const QString &text);
    void appendToolCall(StreamState &state, int index, const QString &id, const QString &name,
                        const QString &argumentsDelta);

    // The reply with every secret of the settings (the API key, a proxy password) replaced by
    // "[redacted]": in its text, its structured value and its tool calls. A model that repeats its
    // key never gets it stored, logged or shown. chat() applies it to every reply.
    static ChatResponse redacted(ChatResponse response, const QStringList &secrets);

    // Helpers for the wire formats.
    static QString finishReason(const QString &providerReason); // maps provider words onto ChatResponse's
    static Json parseArguments(const QString &text);            // {"_raw": text} when not JSON
    static QString newCallId();                                 // "call_<random>"
    QString context() const;                                    // "<provider> chat (<model>)" for errors


private:
    QFuture<ChatResponse> sendOnce(const ChatRequest &request, const QFuture<void> &cancelWith);
    // Emits what of the held-back text can no longer be the start of a secret (all of it at the end).
    void emitText(StreamState &state, bool end);
    // Streams, retrying (with the client's backoff and retry budget) when the stream fails with a
    // server or rate-limit error before any delta was emitted.
    QFuture<ChatResponse> streamWithRetries(const HttpRequest &http, int retry,
                                            const std::function<void(const QString &)> &onTextDelta);
    QFuture<ChatResponse> sendStreaming(HttpClient &client, const HttpRequest &http,
                                        const std::shared_ptr<std::atomic_bool> &committed,
                                        const std::function<void(const QString &)> &onTextDelta);

    ProviderSettings m_settings;
    ProviderDefaults m_defaults;
    HttpClient *currentClient() const; // null after shutdown()

    mutable QMutex m_clientMutex;
    std::unique_ptr<HttpClient> m_client;
};

} // namespace mneme
