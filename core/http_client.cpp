#include <mneme/core/http_client.h>

#include <mneme/core/error.h>
#include <mneme/core/json.h>

#include <QDateTime>
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QHostAddress>
#include <QLocale>
#include <QLoggingCategory>
#include <QNetworkAccessManager>
#include <QNetworkProxy>
#include <QNetworkProxyFactory>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QPointer>
#include <QPromise>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QThread>
#include <QTimer>
#include <deque>
#include <limits>
#include <set>

Q_LOGGING_CATEGORY(lcHttp, "mneme.http", QtWarningMsg)

namespace mneme {

namespace {

// The process-wide thread every HttpClient's requests run on. Started on first use, stopped when
// the program exits.
class NetworkThread
{
public:
    static QThread *get()
    {
        static NetworkThread instance;
        return instance.m_thread;
    }

private:
    NetworkThread()
        : m_thread(new QThread)
    {
        m_thread->setObjectName(QStringLiteral("mneme-network"));
        m_thread->start();
    }
    ~NetworkThread()
    {
        m_thread->quit();
        m_thread->wait();
        delete m_thread;
    }
    QThread *m_thread;
};

bool isLoopback(const QString &host)
{
    if (host.compare(QLatin1String("localhost"), Qt::CaseInsensitive) == 0)
        return true;
    const QHostAddress address(host);
    return !address.isNull() && address.isLoopback();
}

QNetworkProxy proxyFromText(const QString &text)
{
    QUrl url(text.contains(QLatin1String("://")) ? text : QStringLiteral("http://") + text);
    if (!url.isValid() || url.host().isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The proxy \"%1\" is not a URL; write it as http://host:port or "
                                   "socks5://host:port.")
                        .arg(url.toString(QUrl::RemoveUserInfo)));
    const bool socks = url.scheme().startsWith(QLatin1String("socks"));
    return QNetworkProxy(socks ? QNetworkProxy::Socks5Proxy : QNetworkProxy::HttpProxy, url.host(),
                         quint16(url.port(socks ? 1080 : 8080)), url.userName(), url.password());
}

// The configured proxy, or the environment's (HTTPS_PROXY / HTTP_PROXY, NO_PROXY); never for loopback.
class ProxyFactory : public QNetworkProxyFactory
{
public:
    explicit ProxyFactory(const QString &configured)
    {
        if (!configured.isEmpty()) {
            m_https = m_http = proxyFromText(configured);
            return;
        }
        const auto env = [](const char *upper, const char *lower) {
            QString v = qEnvironmentVariable(upper);
            return v.isEmpty() ? qEnvironmentVariable(lower) : v;
        };
        const QString https = env("HTTPS_PROXY", "https_proxy");
        const QString http = env("HTTP_PROXY", "http_proxy");
        try {
            if (!https.isEmpty())
                m_https = proxyFromText(https);
            if (!http.isEmpty())
                m_http = proxyFromText(http);
        } catch (const Error &) {
            qCWarning(lcHttp, "ignoring an unreadable HTTP(S)_PROXY environment variable");
        }
        for (const QString &entry : env("NO_PROXY", "no_proxy").split(QLatin1Char(','), Qt::SkipEmptyParts))
            m_noProxy << entry.trimmed().toLower();
    }

    QList<QNetworkProxy> queryProxy(const QNetworkProxyQuery &query) override
    {
        const QString host = query.peerHostName().toLower();
        const bool https = query.protocolTag() == QLatin1String("https");
        const QNetworkProxy &proxy = https ? m_https : m_http;
        if (proxy.type() == QNetworkProxy::NoProxy || isLoopback(host) || bypassed(host))
            return {QNetworkProxy(QNetworkProxy::NoProxy)};
        return {proxy};
    }

private:
    bool bypassed(const QString &host) const
    {
        for (QString entry : m_noProxy) {
            if (entry == QLatin1String("*"))
                return true;
            if (entry.startsWith(QLatin1Char('.')))
                entry = entry.mid(1);
            if (host == entry || host.endsWith(QLatin1Char('.') + entry))
                return true;
        }
        return false;
    }

    QNetworkProxy m_http{QNetworkProxy::NoProxy};
    QNetworkProxy m_https{QNetworkProxy::NoProxy};
    QStringList m_noProxy;
};

bool retryableStatus(int status)
{
    return status == 408 || status == 429 || status == 500 || status == 502 || status == 503
        || status == 504 || status == 529;
}

bool retryableNetworkError(QNetworkReply::NetworkError e)
{
    switch (e) {
    case QNetworkReply::RemoteHostClosedError:
    case QNetworkReply::ConnectionRefusedError:
    case QNetworkReply::TemporaryNetworkFailureError:
    case QNetworkReply::NetworkSessionFailedError:
    case QNetworkReply::UnknownNetworkError:
    case QNetworkReply::ProxyConnectionClosedError:
        return true;
    default:
        return false;
    }
}

// A refused connection to this machine means that nothing listens there: waiting will not change it.
bool refusedLocally(QNetworkReply::NetworkError e, const QUrl &url)
{
    if (e != QNetworkReply::ConnectionRefusedError)
        return false;
    const QString host = url.host();
    return host.compare(QLatin1String("localhost"), Qt::CaseInsensitive) == 0 || QHostAddress(host).isLoopback();
}

// Retry-After in milliseconds (delta seconds or an HTTP date); -1 when absent or unreadable.
qint64 retryAfterMs(const QByteArray &value)
{
    const QByteArray v = value.trimmed();
    if (v.isEmpty())
        return -1;
    bool ok = false;
    const double seconds = v.toDouble(&ok);
    if (ok)
        return qMax<qint64>(0, qint64(seconds * 1000));
    QDateTime when = QDateTime::fromString(QString::fromLatin1(v), Qt::RFC2822Date);
    if (!when.isValid())
        when = QLocale::c().toDateTime(QString::fromLatin1(v), QStringLiteral("ddd, dd MMM yyyy HH:mm:ss 'GMT'"));
    if (!when.isValid())
        return -1;
    return qMax<qint64>(0, QDateTime::currentDateTimeUtc().msecsTo(when.toUTC()));
}

// How long the server asks to wait: OpenAI's retry-after-ms, else Retry-After; -1 when it says nothing.
qint64 requestedWaitMs(const HttpResponse &response)
{
    bool ok = false;
    const double ms = response.header("retry-after-ms").trimmed().toDouble(&ok);
    if (ok && ms >= 0)
        return qint64(ms);
    return retryAfterMs(response.header("retry-after"));
}

// A 429 that waiting will not cure: the account is out of credit.
bool permanentRateLimit(const QByteArray &body)
{
    return body.contains("insufficient_quota") || body.contains("billing_hard_limit") || body.contains("credit balance is too low");
}

bool mentionsContextLength(const QString &message)
{
    static const QRegularExpression re(
        QStringLiteral("context[ _]length|maximum context|context window|prompt is too long|too many tokens|"
                       "input is too long|reduce the length|exceeds the (?:model'?s? )?(?:maximum|max)"),
        QRegularExpression::CaseInsensitiveOption);
    return re.match(message).hasMatch();
}

QString describeUrl(const QUrl &url)
{
    return url.toString(QUrl::RemoveQuery | QUrl::RemoveUserInfo | QUrl::RemoveFragment);
}

} // namespace

// ---------------------------------------------------------------------------------------------

class HttpClient::Worker : public QObject
{
public:
    struct Job
    {
        HttpRequest request;
        ChunkHandler onChunk;
        QPromise<HttpResponse> promise;
        int attempt = 0; // attempts started
        QPointer<QNetworkReply> reply;
        QTimer *timer = nullptr;
        QTimer *wait = nullptr; // backoff or rate-limit wait
        QByteArray body;
        qint64 received = 0;
        bool streamed = false; // a chunk reached the handler
        bool timedOut = false;
        bool tooLarge = false;
        bool cancelled = false;
        bool done = false;
        QElapsedTimer clock;
        QFutureWatcher<HttpResponse> *watcher = nullptr;
    };
    using JobPtr = std::shared_ptr<Job>;

    explicit Worker(const HttpPolicy &policy)
        : m_policy(policy)
    {
        m_clock.start();
    }

    ~Worker() override
    {
        // Destroyed on the network thread (deleteLater): fail what is still running.
        for (const JobPtr &job : std::set<JobPtr>(m_jobs))
            fail(job, Error(ErrorKind::Cancelled,
                            QStringLiteral("%1 was cancelled: its client was destroyed.").arg(job->request.what)));
    }

    void submit(const JobPtr &job)
    {
        if (m_closing) {
            job->done = true;
            job->promise.setException(std::make_exception_ptr(
                Error(ErrorKind::Cancelled, QStringLiteral("%1 was cancelled: its client was destroyed.").arg(job->request.what))));
            job->promise.finish();
            return;
        }
        m_jobs.insert(job);
        job->watcher = new QFutureWatcher<HttpResponse>(this);
        QObject::connect(job->watcher, &QFutureWatcherBase::canceled, this, [this, job] {
            if (job->done)
                return;
            job->cancelled = true;
            if (job->reply)
                job->reply->abort();
            else
                finish(job);
        });
        job->watcher->setFuture(job->promise.future());
        if (job->request.cancelWith) {
            auto *linked = new QFutureWatcher<void>(job->watcher);
            QObject::connect(linked, &QFutureWatcherBase::canceled, job->watcher, [job] {
                if (!job->done)
                    job->promise.future().cancel();
            });
            linked->setFuture(*job->request.cancelWith);
        }
        if (job->promise.isCanceled() || (job->request.cancelWith && job->request.cancelWith->isCanceled())) {
            job->cancelled = true;
            finish(job);
            return;
        }
        m_queue.push_back(job);
        pump();
    }

    // Fails every job and every wait, and refuses those still to come (the client is going away).
    void close()
    {
        m_closing = true;
        cancelAll();
        for (const auto &wait : std::set<std::shared_ptr<QPromise<void>>>(m_waits)) {
            wait->setException(std::make_exception_ptr(Error(ErrorKind::Cancelled, QStringLiteral("The wait was cancelled: its client was destroyed."))));
            wait->finish();
        }
        m_waits.clear();
    }

    void wait(const std::shared_ptr<QPromise<void>> &promise, int ms)
    {
        if (m_closing) {
            promise->setException(std::make_exception_ptr(Error(ErrorKind::Cancelled, QStringLiteral("The wait was cancelled: its client was destroyed."))));
            promise->finish();
            return;
        }
        m_waits.insert(promise);
        QTimer::singleShot(ms, this, [this, promise] {
            if (m_waits.erase(promise) == 0)
                return;
            promise->finish();
        });
    }

    void cancelAll()
    {
        for (const JobPtr &job : std::set<JobPtr>(m_jobs))
            fail(job, Error(ErrorKind::Cancelled, QStringLiteral("%1 was cancelled.").arg(job->request.what)));
    }

private:
    QNetworkAccessManager *manager()
    {
        if (!m_manager) {
            m_manager = new QNetworkAccessManager(this);
            m_manager->setProxyFactory(new ProxyFactory(m_policy.proxy));
            m_manager->setAutoDeleteReplies(false);
        }
        return m_manager;
    }

    // Starts queued jobs as far as the requests-per-minute limit allows.
    void pump()
    {
        while (!m_queue.empty()) {
            if (m_queue.front()->done) {
                m_queue.pop_front();
                continue;
            }
            if (m_policy.maxRpm > 0) {
                const qint64 now = m_clock.elapsed();
                while (!m_starts.empty() && now - m_starts.front() >= 60000)
                    m_starts.pop_front();
                if (int(m_starts.size()) >= m_policy.maxRpm) {
                    if (!m_rpmTimerArmed) {
                        m_rpmTimerArmed = true;
                        QTimer::singleShot(int(60000 - (now - m_starts.front()) + 1), this, [this] {
                            m_rpmTimerArmed = false;
                            pump();
                        });
                    }
                    return;
                }
                m_starts.push_back(now);
            }
            JobPtr job = m_queue.front();
            m_queue.pop_front();
            start(job);
        }
    }

    void start(const JobPtr &job)
    {
        ++job->attempt;
        job->body.clear();
        job->received = 0;
        job->timedOut = false;
        job->clock.start();

        QNetworkRequest request(job->request.url);
        bool hasContentType = false;
        for (const auto &[name, value] : job->request.headers) {
            request.setRawHeader(name, value);
            if (name.compare("content-type", Qt::CaseInsensitive) == 0)
                hasContentType = true;
        }
        if (!hasContentType && !job->request.body.isEmpty())
            request.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
        request.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::NoLessSafeRedirectPolicy);

        QNetworkReply *reply = manager()->sendCustomRequest(request, job->request.method, job->request.body);
        job->reply = reply;
        armTimer(job);
        QObject::connect(reply, &QNetworkReply::readyRead, this, [this, job, reply] { onReadyRead(job, reply); });
        QObject::connect(reply, &QNetworkReply::finished, this, [this, job, reply] { onFinished(job, reply); });
    }

    void armTimer(const JobPtr &job)
    {
        if (!job->timer) {
            job->timer = new QTimer(this);
            job->timer->setSingleShot(true);
            QObject::connect(job->timer, &QTimer::timeout, this, [job] {
                job->timedOut = true;
                if (job->reply)
                    job->reply->abort();
            });
        }
        job->timer->start(m_policy.timeoutMs);
    }

    static int statusOf(QNetworkReply *reply)
    {
        return reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    }

    void onReadyRead(const JobPtr &job, QNetworkReply *reply)
    {
        if (job->done || reply != job->reply || !reply->isOpen())
            return;
        const QByteArray bytes = reply->readAll();
        if (bytes.isEmpty())
            return;
        job->received += bytes.size();
        if (job->received > m_policy.maxResponseBytes) {
            job->tooLarge = true;
            reply->abort();
            return;
        }
        const int status = statusOf(reply);
        if (job->onChunk && status >= 200 && status < 300) {
            job->streamed = true;
            job->timer->start(m_policy.timeoutMs); // streaming: the timeout is the longest silence
            try {
                job->onChunk(bytes);
            } catch (const Error &e) {
                fail(job, e);
            } catch (const std::exception &e) {
                fail(job, Error(ErrorKind::MalformedReply,
                                QStringLiteral("%1: reading the stream failed: %2").arg(job->request.what, QString::fromUtf8(e.what()))));
            }
        } else {
            job->body += bytes;
        }
    }

    void onFinished(const JobPtr &job, QNetworkReply *reply)
    {
        reply->deleteLater();
        if (job->done || reply != job->reply)
            return;
        onReadyRead(job, reply);
        if (job->done)
            return;
        job->timer->stop();
        job->reply = nullptr;

        const QString what = job->request.what.isEmpty() ? QStringLiteral("the HTTP request") : job->request.what;
        const QString where = describeUrl(job->request.url);
        const int status = statusOf(reply);
        const QNetworkReply::NetworkError error = reply->error();
        qCDebug(lcHttp).noquote() << job->request.method << where << "->" << status << error << "in"
                                  << job->clock.elapsed() << "ms, attempt" << job->attempt;

        if (job->cancelled) {
            finish(job);
            return;
        }
        if (job->tooLarge) {
            fail(job, Error(ErrorKind::MalformedReply,
                            QStringLiteral("%1 failed: the reply from %2 is larger than %3 MiB; it was cut off.")
                                .arg(what, where)
                                .arg(m_policy.maxResponseBytes >> 20),
                            status));
            return;
        }
        if (job->timedOut) {
            const QString how = job->streamed ? QStringLiteral("the stream from %1 was silent for %2 s")
                                              : QStringLiteral("%1 did not answer within %2 s");
            fail(job, Error(ErrorKind::Timeout,
                            QStringLiteral("%1 timed out: %2; raise \"timeout\" (seconds) in the provider's config "
                                           "if the model needs longer.")
                                .arg(what, how.arg(where).arg(m_policy.timeoutMs / 1000.0)),
                            status));
            return;
        }

        const bool retriesLeft = job->attempt <= m_policy.maxRetries;
        // Connection and proxy failures (codes below 200); content and server codes come with a status.
        const bool transportError = error != QNetworkReply::NoError && int(error) < 200;
        if (status == 0 || transportError) {
            if (job->streamed) {
                fail(job, Error(ErrorKind::Network,
                                QStringLiteral("%1 failed: the connection to %2 was dropped in the middle of the "
                                               "reply stream after %3 bytes (%4).")
                                    .arg(what, where)
                                    .arg(job->received)
                                    .arg(reply->errorString()),
                                status));
                return;
            }
            if (refusedLocally(error, job->request.url)) {
                fail(job, Error(ErrorKind::Network,
                                QStringLiteral("%1 failed: nothing listens at %2 (the connection was refused). Start the "
                                               "server, or check the base URL and its port.")
                                    .arg(what, where)));
                return;
            }
            if (retriesLeft && retryableNetworkError(error)) {
                retryLater(job, -1);
                return;
            }
            fail(job, Error(ErrorKind::Network,
                            QStringLiteral("%1 failed: cannot reach %2 (%3)%4. Check that the server is running "
                                           "and the base URL is right.")
                                .arg(what, where, reply->errorString(),
                                     job->attempt > 1 ? QStringLiteral(" after %1 attempts").arg(job->attempt) : QString())));
            return;
        }

        HttpResponse response;
        response.status = status;
        response.attempts = job->attempt;
        for (const auto &pair : reply->rawHeaderPairs())
            response.headers.append(pair);

        if (status >= 200 && status < 300) {
            response.body = job->body;
            job->done = true;
            job->promise.addResult(response);
            finish(job);
            return;
        }
        if (retryableStatus(status) && retriesLeft && !(status == 429 && permanentRateLimit(job->body))) {
            const qint64 after = requestedWaitMs(response);
            if (after <= m_policy.maxRetryAfterMs) {
                retryLater(job, after);
                return;
            }
        }
        fail(job, errorFor(job, response, job->body, where));
    }

    Error errorFor(const JobPtr &job, const HttpResponse &response, const QByteArray &body, const QString &where) const
    {
        const int status = response.status;
        const QString what = job->request.what.isEmpty() ? QStringLiteral("the HTTP request") : job->request.what;
        QString message = HttpClient::providerMessage(body);
        if (message.isEmpty())
            message = QStringLiteral("an empty reply");
        const QString attempts = job->attempt > 1 ? QStringLiteral(" after %1 attempts").arg(job->attempt) : QString();
        ErrorKind kind = ErrorKind::BadRequest;
        QString advice;
        static const QRegularExpression badKey(QStringLiteral("API[ _]?KEY[ _]INVALID|api key not valid|invalid api key|incorrect api key"),
                                               QRegularExpression::CaseInsensitiveOption);
        if (status == 401 || status == 403 || (status == 400 && badKey.match(message).hasMatch())) {
            kind = ErrorKind::Authentication;
            advice = QStringLiteral(" Check the API key (the config's api_key or the provider's environment variable).");
        } else if (status == 429) {
            kind = ErrorKind::RateLimited;
            const qint64 after = requestedWaitMs(response);
            advice = permanentRateLimit(body) ? QStringLiteral(" The account's quota is used up; check its plan and billing.")
                   : after > m_policy.maxRetryAfterMs
                       ? QStringLiteral(" The server asks to wait %1 s; retry later.").arg(after / 1000)
                       : QStringLiteral(" Lower max_rpm or retry later.");
        } else if (status == 408) {
            kind = ErrorKind::Timeout;
            advice = QStringLiteral(" The server gave up waiting; retry later.");
        } else if (status >= 500) {
            kind = ErrorKind::ServerError;
            advice = QStringLiteral(" The provider is failing; retry later.");
        } else if ((status == 400 || status == 413 || status == 422) && mentionsContextLength(message)) {
            kind = ErrorKind::ContextLength;
            advice = QStringLiteral(" Shorten the prompt or use a model with a larger context window.");
        } else if (status == 404) {
            advice = QStringLiteral(" Check the model name and the base URL.");
        }
        return Error(kind,
                     QStringLiteral("%1 failed: %2 answered HTTP %3%4: %5.%6")
                         .arg(what, where)
                         .arg(status)
                         .arg(attempts, message, advice),
                     status);
    }

    void retryLater(const JobPtr &job, qint64 retryAfter)
    {
        qint64 delay = retryAfter;
        if (delay < 0) {
            const qint64 exp = qint64(m_policy.backoffBaseMs) << qMin(job->attempt - 1, 20);
            const qint64 capped = qMin<qint64>(exp, m_policy.backoffMaxMs);
            delay = capped / 2 + qint64(QRandomGenerator::global()->bounded(double(capped / 2 + 1)));
        }
        if (!job->wait) {
            job->wait = new QTimer(this);
            job->wait->setSingleShot(true);
            QObject::connect(job->wait, &QTimer::timeout, this, [this, job] {
                if (job->done)
                    return;
                m_queue.push_front(job);
                pump();
            });
        }
        job->wait->start(int(qMin<qint64>(delay, std::numeric_limits<int>::max())));
    }

    void fail(const JobPtr &job, const Error &error)
    {
        if (job->done)
            return;
        job->done = true;
        const Error redacted(error.kind(), HttpClient::redact(error.message(), m_policy.secrets), error.httpStatus());
        job->promise.setException(std::make_exception_ptr(redacted));
        if (job->reply) {
            QNetworkReply *reply = job->reply;
            job->reply = nullptr;
            reply->abort();
        }
        finish(job);
    }

    // Ends a job. A cancelled job's promise is cancelled too (whoever cancelled: the caller's
    // future, its cancelWith, or cancelAll), so its continuations are cancelled with it and never
    // handed a response that was not given.
    void finish(const JobPtr &job)
    {
        job->done = true;
        if (job->cancelled && !job->promise.isCanceled())
            job->promise.future().cancel();
        if (job->timer) {
            job->timer->deleteLater();
            job->timer = nullptr;
        }
        if (job->wait) {
            job->wait->deleteLater();
            job->wait = nullptr;
        }
        if (job->watcher) {
            job->watcher->disconnect(this);
            job->watcher->deleteLater();
            job->watcher = nullptr;
        }
        if (job->reply) {
            QNetworkReply *reply = job->reply;
            job->reply = nullptr;
            reply->abort();
        }
        job->promise.finish();
        m_jobs.erase(job);
    }

    HttpPolicy m_policy;
    QNetworkAccessManager *m_manager = nullptr;
    std::set<JobPtr> m_jobs;
    std::deque<JobPtr> m_queue;
    std::deque<qint64> m_starts;
    QElapsedTimer m_clock;
    bool m_rpmTimerArmed = false;
    bool m_closing = false;
    std::set<std::shared_ptr<QPromise<void>>> m_waits;
};

// ---------------------------------------------------------------------------------------------

QByteArray HttpResponse::header(const QByteArray &name) const
{
    for (const auto &[key, value] : headers) {
        if (key.compare(name, Qt::CaseInsensitive) == 0)
            return value;
    }
    return {};
}

HttpClient::HttpClient(HttpPolicy policy)
    : m_policy(std::move(policy))
{
    if (!m_policy.proxy.isEmpty())
        proxyFromText(m_policy.proxy); // refuse a bad proxy here, not on the network thread
    m_worker = new Worker(m_policy);
    m_worker->moveToThread(NetworkThread::get());
}

HttpClient::~HttpClient()
{
    Worker *worker = m_worker;
    if (!worker->thread()->isRunning()) {
        delete worker; // the program is ending: the network thread has stopped
    } else if (QThread::currentThread() == worker->thread()) {
        // Possibly inside one of the worker's own handlers: stop every request now, free it later.
        worker->close();
        worker->deleteLater();
    } else
        QMetaObject::invokeMethod(
            worker, [worker] { delete worker; }, Qt::BlockingQueuedConnection);
}

bool HttpClient::isNetworkThread()
{
    return QThread::currentThread() == NetworkThread::get();
}

const HttpPolicy &HttpClient::policy() const
{
    return m_policy;
}

QFuture<HttpResponse> HttpClient::send(HttpRequest request, ChunkHandler onChunk)
{
    auto job = std::make_shared<Worker::Job>();
    job->request = std::move(request);
    job->onChunk = std::move(onChunk);
    job->promise.start();
    QFuture<HttpResponse> future = job->promise.future();
    Worker *worker = m_worker;
    QMetaObject::invokeMethod(
        worker, [worker, job] { worker->submit(job); }, Qt::QueuedConnection);
    return future;
}

QFuture<HttpResponse> HttpClient::postJson(const QUrl &url, const QByteArray &json, HttpHeaders headers,
                                           const QString &what, ChunkHandler onChunk)
{
    HttpRequest request;
    request.url = url;
    request.body = json;
    request.what = what;
    headers.append({QByteArrayLiteral("Content-Type"), QByteArrayLiteral("application/json")});
    if (onChunk)
        headers.append({QByteArrayLiteral("Accept"), QByteArrayLiteral("text/event-stream, application/x-ndjson, application/json")});
    else
        headers.append({QByteArrayLiteral("Accept"), QByteArrayLiteral("application/json")});
    request.headers = std::move(headers);
    return send(std::move(request), std::move(onChunk));
}

QFuture<void> HttpClient::after(int ms)
{
    auto promise = std::make_shared<QPromise<void>>();
    promise->start();
    QFuture<void> future = promise->future();
    Worker *worker = m_worker;
    QMetaObject::invokeMethod(
        worker, [worker, promise, ms] { worker->wait(promise, ms); }, Qt::QueuedConnection);
    return future;
}

void HttpClient::cancelAll()
{
    Worker *worker = m_worker;
    QMetaObject::invokeMethod(
        worker, [worker] { worker->cancelAll(); }, Qt::QueuedConnection);
}

QString HttpClient::redact(QString text, const QStringList &secrets)
{
    for (const QString &secret : secrets) {
        if (secret.size() < 4)
            continue;
        text.replace(secret, QStringLiteral("[redacted]"));
    }
    return text;
}

QString HttpClient::providerMessage(const QByteArray &body)
{
    const QByteArray trimmed = body.trimmed();
    if (trimmed.isEmpty())
        return {};
    const Json j = parseJsonOrDiscarded(std::string_view(trimmed.constData(), std::size_t(trimmed.size())));
    const auto text = [](const Json &v) -> QString {
        if (v.is_string())
            return QString::fromStdString(v.get<std::string>());
        return {};
    };
    const std::function<QString(const Json &)> fromJson = [&](const Json &v) -> QString {
        if (v.is_array() && !v.empty())
            return fromJson(v.front());
        if (!v.is_object())
            return text(v);
        if (v.contains("error")) {
            const Json &e = v["error"];
            if (e.is_string())
                return text(e);
            if (e.is_object()) {
                QString m = e.contains("message") ? text(e["message"]) : QString();
                const QString code = e.contains("code") && e["code"].is_string() ? text(e["code"])
                                   : e.contains("type") && e["type"].is_string() ? text(e["type"])
                                                                                 : QString();
                if (m.isEmpty())
                    m = QString::fromStdString(e.dump());
                return code.isEmpty() || m.contains(code) ? m : QStringLiteral("%1 (%2)").arg(m, code);
            }
        }
        for (const char *key : {"message", "detail", "error_message", "msg"}) {
            if (v.contains(key)) {
                if (v[key].is_string())
                    return text(v[key]);
                if (!v[key].is_null())
                    return QString::fromStdString(v[key].dump());
            }
        }
        return QString::fromStdString(v.dump()).left(300);
    };
    if (!j.is_discarded())
        return fromJson(j).trimmed();

    const QString s = QString::fromUtf8(trimmed);
    if (s.contains(QLatin1String("<html"), Qt::CaseInsensitive) || s.startsWith(QLatin1String("<!DOCTYPE"), Qt::CaseInsensitive)) {
        static const QRegularExpression title(QStringLiteral("<title>\\s*(.*?)\\s*</title>"),
                                              QRegularExpression::CaseInsensitiveOption | QRegularExpression::DotMatchesEverythingOption);
        const auto m = title.match(s);
        return QStringLiteral("an HTML page%1 instead of JSON")
            .arg(m.hasMatch() ? QStringLiteral(" (\"%1\")").arg(m.captured(1).simplified().left(120)) : QString());
    }
    QString plain = s.simplified();
    if (plain.size() > 300)
        plain = plain.left(300) + QStringLiteral("...");
    return plain;
}

} // namespace mneme
