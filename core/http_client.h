#pragma once

#include <mneme/core/export.h>

#include <QByteArray>
#include <QFuture>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QUrl>
#include <functional>
#include <memory>
#include <optional>

namespace mneme {

using HttpHeaders = QList<QPair<QByteArray, QByteArray>>;

struct MNEME_CORE_EXPORT HttpRequest
{
    QByteArray method = "POST";
    QUrl url;
    HttpHeaders headers; // Content-Type defaults to application/json when a body is given
    QByteArray body;
    // Names the call in errors and logs ("openai chat", "ollama embed"). The URL's query never appears.
    QString what;
    // Cancelling this future (the caller's own, derived from the request's) aborts the request too.
    std::optional<QFuture<void>> cancelWith;
};

struct MNEME_CORE_EXPORT HttpResponse
{
    int status = 0;
    HttpHeaders headers;
    QByteArray body;  // empty when the body was streamed to the chunk handler
    int attempts = 1; // 1 + the retries it took

    // The first header of that name, compared case-insensitively; empty when absent.
    QByteArray header(const QByteArray &name) const;
};

// How one client talks to one provider. The provider's settings fill it (see ProviderSettings).
struct MNEME_CORE_EXPORT HttpPolicy
{
    int timeoutMs = 120000;  // a whole attempt; while streaming, the longest silence between chunks
    int maxRetries = 3;      // retries after the first attempt, on 429, 5xx and dropped connections
    int maxRpm = 0;          // requests started per rolling minute; 0: no limit
    int backoffBaseMs = 500; // first retry waits about this long, doubling each time, with jitter
    int backoffMaxMs = 20000;
    int maxRetryAfterMs = 60000; // a longer Retry-After gives up at once with a RateLimited error
    qint64 maxResponseBytes = qint64(64) << 20;
    QString proxy;       // "http://host:port" or "socks5://host:port"; empty: HTTPS_PROXY /
                         // HTTP_PROXY from the environment (NO_PROXY and loopback honoured)
    QStringList secrets; // replaced by "[redacted]" in every error text this client produces
};

// The HTTP layer every provider shares. Requests run on one process-wide network thread with an
// event loop (QNetworkAccessManager lives there); send() can be called from any thread and never
// blocks. The returned future resolves with a 2xx response or fails with a typed mneme::Error
// (Authentication, RateLimited, ContextLength, BadRequest, ServerError, Network, Timeout,
// MalformedReply, Cancelled) whose text carries the provider's own message with secrets redacted.
//
// Retries: 429, 500, 502, 503, 504, 529 and dropped or refused connections are retried up to
// maxRetries times, waiting Retry-After when the server sends it (seconds or an HTTP date), else an
// exponential backoff with jitter. A streamed request is retried only before its first chunk
// arrived; a connection dropped mid-stream fails with Network.
//
// Cancelling the future (QFuture::cancel()) aborts the request; so does destroying the client.
class MNEME_CORE_EXPORT HttpClient
{
public:
    // Called on the network thread with each piece of a 2xx body, in order.
    using ChunkHandler = std::function<void(const QByteArray &chunk)>;

    explicit HttpClient(HttpPolicy policy = {});
    ~HttpClient();
    HttpClient(const HttpClient &) = delete;
    HttpClient &operator=(const HttpClient &) = delete;

    const HttpPolicy &policy() const;
    // True on the thread requests run on; waiting there for a reply would wait forever.
    static bool isNetworkThread();

    QFuture<HttpResponse> send(HttpRequest request, ChunkHandler onChunk = {});
    // Sends a JSON body (Content-Type and Accept set) and is otherwise send().
    QFuture<HttpResponse> postJson(const QUrl &url, const QByteArray &json, HttpHeaders headers,
                                   const QString &what, ChunkHandler onChunk = {});
    // Aborts every request of this client; their futures fail with Cancelled.
    void cancelAll();
    // Resolves on the network thread after `ms` milliseconds; fails with Cancelled when the client is
    // destroyed first (so a continuation that resumes a provider's work never outlives the provider).
    QFuture<void> after(int ms);

    // Replaces every occurrence of every secret by "[redacted]" (secrets shorter than 4 characters
    // are left alone: replacing them would garble the text without hiding anything).
    static QString redact(QString text, const QStringList &secrets);
    // The provider's own message from an error body: {"error":{"message"}}, {"error":"..."},
    // {"message"}, {"detail"}, [{"error":...}], an HTML page's <title>, or the first 300 characters.
    static QString providerMessage(const QByteArray &body);

    class Worker;

private:
    HttpPolicy m_policy;
    Worker *m_worker; // lives on the network thread; deleted there
};

} // namespace mneme
