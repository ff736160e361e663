// HttpClient against a scripted local server: requests as sent, status codes mapped to error kinds,
// retries and Retry-After, timeouts, streaming, malformed and oversized replies, cancellation,
// requests-per-minute limits and secret redaction.

#include "scripted_http_server.h"
#include <mneme/core/error.h>
#include <mneme/core/http_client.h>
#include <mneme/core/json.h>

#include <QDateTime>
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QHostAddress>
#include <QLocale>
#include <QMutex>
#include <QPromise>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTcpSocket>
#include <QThread>
#include <QtTest>
#include <memory>
#include <optional>

using namespace mneme;
using mneme::test::RecordedRequest;
using mneme::test::ScriptedHttpServer;
using mneme::test::ScriptedReply;

namespace {

const QByteArray Secret = "sk-test-SECRET-123456";

// Fast retries, generous timeouts: the tests wait for behaviour, never for the clock.
HttpPolicy fastPolicy()
{
    HttpPolicy p;
    p.timeoutMs = 10000;
    p.maxRetries = 2;
    p.backoffBaseMs = 10;
    p.backoffMaxMs = 40;
    p.maxRetryAfterMs = 5000;
    return p;
}

QUrl endpoint(const ScriptedHttpServer &server, const QString &pathAndQuery)
{
    return QUrl(server.baseUrl().toString() + pathAndQuery);
}

// How a future ended: a response, a mneme::Error, cancelled without an error, or something else.
struct Outcome
{
    std::optional<HttpResponse> response;
    std::optional<Error> error;
    bool cancelled = false;
    QString other;

    // A cancelled future, whether it carries an Error(Cancelled) or nothing.
    bool isCancellation() const { return cancelled || (error && error->kind() == ErrorKind::Cancelled); }

    QString describe() const
    {
        if (response)
            return QStringLiteral("succeeded with HTTP %1 after %2 attempt(s)").arg(response->status).arg(response->attempts);
        if (error)
            return QStringLiteral("failed with %1 (HTTP %2): %3")
                .arg(Error::kindName(error->kind()))
                .arg(error->httpStatus())
                .arg(error->message());
        if (cancelled)
            return QStringLiteral("was cancelled without an error");
        return QStringLiteral("threw something else: ") + other;
    }
};

// Blocks until the future is finished (the server answers on its own thread meanwhile).
Outcome outcomeOf(QFuture<HttpResponse> future)
{
    Outcome o;
    try {
        future.waitForFinished();
        if (future.resultCount() > 0)
            o.response = future.result();
        else if (future.isCanceled())
            o.cancelled = true;
        else
            o.other = QStringLiteral("finished without a result");
    } catch (const Error &e) {
        o.error = e;
    } catch (const std::exception &e) {
        o.other = QString::fromUtf8(e.what());
    } catch (...) {
        o.other = QStringLiteral("an unknown exception");
    }
    return o;
}

// What the chunk handler received, in order; filled on the network thread.
struct Pieces
{
    mutable QMutex mutex;
    QList<QByteArray> list;

    QList<QByteArray> all() const
    {
        QMutexLocker lock(&mutex);
        return list;
    }
    QByteArray joined() const { return all().join(); }
};

HttpClient::ChunkHandler collectInto(const std::shared_ptr<Pieces> &pieces)
{
    return [pieces](const QByteArray &chunk) {
        QMutexLocker lock(&pieces->mutex);
        pieces->list.append(chunk);
    };
}

QString httpDate(const QDateTime &utc)
{
    return QLocale::c().toString(utc, QStringLiteral("ddd, dd MMM yyyy hh:mm:ss 'GMT'"));
}

const QByteArray HtmlBadGateway =
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
    "</center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n";

} // namespace

class TestHttpClient : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    // ---- the scripted server itself ------------------------------------------------------------

    // Requests split across many reads, a chunked request body, two requests on one connection
    // (the second with Connection: close).
    void serverParsesSplitChunkedAndKeepAliveRequests()
    {
        ScriptedHttpServer server;
        QVERIFY(server.isListening());
        server.enqueue(ScriptedReply::json("{\"n\":1}"));
        server.enqueue(ScriptedReply::json("{\"n\":2}", 201));

        QTcpSocket socket;
        socket.connectToHost(QHostAddress::LocalHost, quint16(server.baseUrl().port()));
        QVERIFY(socket.waitForConnected(5000));
        const QByteArray first = "POST /a?x=1 HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n"
                                 "X-Test:  one \r\n\r\nhello";
        const QByteArray second = "POST /b HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
                                  "Connection: close\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n";
        const QByteArray wire = first + second;
        for (qsizetype i = 0; i < wire.size(); i += 7) {
            socket.write(wire.mid(i, 7));
            QVERIFY(socket.waitForBytesWritten(5000));
            QThread::msleep(1);
        }
        QByteArray received;
        while (socket.state() == QAbstractSocket::ConnectedState && socket.waitForReadyRead(5000))
            received += socket.readAll();
        received += socket.readAll();

        QCOMPARE(received.count("HTTP/1.1 "), 2);
        QVERIFY(received.startsWith("HTTP/1.1 200 OK\r\n"));
        QVERIFY(received.contains("HTTP/1.1 201 Created\r\n"));
        QVERIFY(received.contains("Connection: close\r\n"));
        QVERIFY(received.contains("Content-Type: application/json\r\n"));
        QVERIFY(received.endsWith("{\"n\":2}"));

        const QList<RecordedRequest> requests = server.requests();
        QCOMPARE(requests.size(), 2);
        QCOMPARE(requests[0].method, QByteArray("POST"));
        QCOMPARE(requests[0].path, QByteArray("/a?x=1"));
        QCOMPARE(requests[0].header("x-test"), QByteArray("one"));
        QCOMPARE(requests[0].body, QByteArray("hello"));
        QCOMPARE(requests[1].path, QByteArray("/b"));
        QCOMPARE(requests[1].body, QByteArray("abcde"));
        QVERIFY(requests[1].header("X-Missing").isEmpty());
    }

    // A delayed reply on one connection does not hold up another; no reply queued answers 500.
    void serverServesConnectionsConcurrently()
    {
        ScriptedHttpServer server;
        server.setHandler([](const RecordedRequest &r) {
            ScriptedReply reply = ScriptedReply::json("{\"path\":\"" + r.path + "\"}");
            if (r.path == "/slow")
                reply.delayMs = 3000;
            return reply;
        });
        HttpClient client(fastPolicy());
        QFuture<HttpResponse> slow = client.postJson(endpoint(server, "/slow"), "{}", {}, QStringLiteral("slow"));
        QTRY_COMPARE_WITH_TIMEOUT(server.requestCount(), 1, 5000);
        const Outcome fast = outcomeOf(client.postJson(endpoint(server, "/fast"), "{}", {}, QStringLiteral("fast")));
        QVERIFY2(fast.response, qPrintable(fast.describe()));
        QCOMPARE(fast.response->body, QByteArray("{\"path\":\"/fast\"}"));
        QVERIFY(!slow.isFinished());
        slow.cancel();

        ScriptedHttpServer empty;
        const Outcome none = outcomeOf(client.send({"GET", endpoint(empty, "/x"), {}, {}, QStringLiteral("nothing"), {}}));
        QVERIFY2(none.error, qPrintable(none.describe()));
        QCOMPARE(none.error->httpStatus(), 500);
        QVERIFY2(none.error->message().contains(QLatin1String("no scripted reply")), qPrintable(none.describe()));
    }

    // ---- requests as sent ----------------------------------------------------------------------

    void postJsonSendsMethodPathHeadersAndBody()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json("{\"id\":\"chatcmpl-1\",\"choices\":[]}"));
        HttpClient client(fastPolicy());
        const QByteArray body = "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"héllo\"}]}";
        const HttpHeaders headers{{"Authorization", "Bearer sk-abc"}, {"X-Custom-Header", "custom value"}};

        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), body, headers,
                                                    QStringLiteral("openai chat")));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->status, 200);
        QCOMPARE(o.response->body, QByteArray("{\"id\":\"chatcmpl-1\",\"choices\":[]}"));
        QCOMPARE(o.response->attempts, 1);
        QCOMPARE(o.response->header("content-type"), QByteArray("application/json"));
        QCOMPARE(o.response->header("CONTENT-LENGTH"), QByteArray::number(o.response->body.size()));
        QVERIFY(o.response->header("x-absent").isEmpty());

        QCOMPARE(server.requestCount(), 1);
        const RecordedRequest r = server.requests().first();
        QCOMPARE(r.method, QByteArray("POST"));
        QCOMPARE(r.path, QByteArray("/v1/chat/completions"));
        QVERIFY2(r.header("content-type").startsWith("application/json"), r.header("content-type").constData());
        QVERIFY2(r.header("accept").contains("application/json"), r.header("accept").constData());
        QCOMPARE(r.header("authorization"), QByteArray("Bearer sk-abc"));
        QCOMPARE(r.header("X-CUSTOM-HEADER"), QByteArray("custom value"));
        QCOMPARE(r.body, body);
        QCOMPARE(r.json()["messages"][0]["content"].get<std::string>(), std::string("héllo"));
    }

    void sendKeepsMethodAndQuery()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json("{\"models\":[]}"));
        server.enqueue(ScriptedReply::json("{}"));
        HttpClient client(fastPolicy());

        HttpRequest get;
        get.method = "GET";
        get.url = endpoint(server, "/api/tags?verbose=true");
        get.what = QStringLiteral("ollama tags");
        const Outcome o = outcomeOf(client.send(get));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->body, QByteArray("{\"models\":[]}"));

        HttpRequest post;
        post.url = endpoint(server, "/v1beta/models/gemini-2.0-flash:generateContent?alt=sse");
        post.body = "{\"contents\":[]}";
        post.what = QStringLiteral("gemini chat");
        const Outcome p = outcomeOf(client.send(post));
        QVERIFY2(p.response, qPrintable(p.describe()));

        const QList<RecordedRequest> requests = server.requests();
        QCOMPARE(requests.size(), 2);
        QCOMPARE(requests[0].method, QByteArray("GET"));
        QCOMPARE(requests[0].path, QByteArray("/api/tags?verbose=true"));
        QVERIFY(requests[0].body.isEmpty());
        QCOMPARE(requests[1].method, QByteArray("POST"));
        QCOMPARE(requests[1].path, QByteArray("/v1beta/models/gemini-2.0-flash:generateContent?alt=sse"));
        QVERIFY2(requests[1].header("content-type").startsWith("application/json"), requests[1].header("content-type").constData());
        QCOMPARE(requests[1].body, QByteArray("{\"contents\":[]}"));
    }

    // ---- status codes to error kinds -----------------------------------------------------------

    void statusMapsToErrorKind_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("message");
        QTest::addColumn<bool>("retried");

        const QString badRequest = Error::kindName(ErrorKind::BadRequest);
        const QString auth = Error::kindName(ErrorKind::Authentication);
        const QString context = Error::kindName(ErrorKind::ContextLength);
        const QString rate = Error::kindName(ErrorKind::RateLimited);
        const QString server = Error::kindName(ErrorKind::ServerError);

        QTest::newRow("400 openai") << 400 << QByteArray("{\"error\":{\"message\":\"Invalid value for 'temperature'\",\"type\":\"invalid_request_error\"}}")
                                    << badRequest << "Invalid value for 'temperature'" << false;
        QTest::newRow("401 openai") << 401 << QByteArray("{\"error\":{\"message\":\"Incorrect API key provided\"}}")
                                    << auth << "Incorrect API key provided" << false;
        QTest::newRow("403 ollama") << 403 << QByteArray("{\"error\":\"access to this model is forbidden\"}")
                                    << auth << "access to this model is forbidden" << false;
        QTest::newRow("404 message") << 404 << QByteArray("{\"message\":\"model 'llama9' not found\"}")
                                     << badRequest << "model 'llama9' not found" << false;
        QTest::newRow("422 detail") << 422 << QByteArray("{\"detail\":\"field 'input' required\"}")
                                    << badRequest << "field 'input' required" << false;
        QTest::newRow("400 maximum context length")
            << 400 << QByteArray("{\"error\":{\"message\":\"This model's maximum context length is 8192 tokens. However, your "
                                 "messages resulted in 9000 tokens.\",\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}")
            << context << "maximum context length is 8192 tokens" << false;
        QTest::newRow("400 context_length_exceeded code")
            << 400 << QByteArray("{\"error\":{\"message\":\"Input too large for this model.\",\"code\":\"context_length_exceeded\"}}")
            << context << "Input too large for this model." << false;
        QTest::newRow("400 prompt is too long")
            << 400 << QByteArray("{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 208310 tokens > 200000 maximum\"}}")
            << context << "prompt is too long: 208310 tokens > 200000 maximum" << false;
        QTest::newRow("413 context length")
            << 413 << QByteArray("{\"error\":{\"message\":\"Request exceeds the maximum context length of the model\"}}")
            << context << "exceeds the maximum context length" << false;
        QTest::newRow("429 openai") << 429 << QByteArray("{\"error\":{\"message\":\"Rate limit reached for requests\"}}")
                                    << rate << "Rate limit reached for requests" << true;
        QTest::newRow("500 detail") << 500 << QByteArray("{\"detail\":\"Internal failure in worker 7\"}")
                                    << server << "Internal failure in worker 7" << true;
        QTest::newRow("503 openai") << 503 << QByteArray("{\"error\":{\"message\":\"The engine is currently overloaded\"}}")
                                    << server << "The engine is currently overloaded" << true;
        QTest::newRow("503 ollama") << 503 << QByteArray("{\"error\":\"server busy, please try again\"}")
                                    << server << "server busy, please try again" << true;
    }

    void statusMapsToErrorKind()
    {
        QFETCH(int, status);
        QFETCH(QByteArray, body);
        QFETCH(QString, kind);
        QFETCH(QString, message);
        QFETCH(bool, retried);

        ScriptedHttpServer server;
        server.setHandler([=](const RecordedRequest &) { return ScriptedReply::json(body, status); });
        const HttpPolicy policy = fastPolicy();
        HttpClient client(policy);
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{\"model\":\"m\"}", {},
                                                    QStringLiteral("test chat")));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(Error::kindName(o.error->kind()), kind);
        QCOMPARE(o.error->httpStatus(), status);
        QVERIFY(o.error->isProviderError());
        QVERIFY2(o.error->message().contains(message), qPrintable(o.describe()));
        QVERIFY2(o.error->message().contains(QLatin1String("test chat")), qPrintable(o.describe()));
        QCOMPARE(server.requestCount(), retried ? policy.maxRetries + 1 : 1);
    }

    // ---- retries -------------------------------------------------------------------------------

    void retryAfterSecondsIsHonoured()
    {
        ScriptedHttpServer server;
        ScriptedReply limited = ScriptedReply::json("{\"error\":{\"message\":\"slow down\"}}", 429);
        limited.headers.emplaceBack("Retry-After", "1");
        server.enqueue(limited);
        server.enqueue(ScriptedReply::json("{\"ok\":true}"));
        HttpClient client(fastPolicy());

        QElapsedTimer clock;
        clock.start();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {}, QStringLiteral("chat")));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QVERIFY2(clock.elapsed() >= 900, qPrintable(QString::number(clock.elapsed())));
        QCOMPARE(o.response->body, QByteArray("{\"ok\":true}"));
        QCOMPARE(o.response->attempts, 2);
        QCOMPARE(server.requestCount(), 2);
    }

    void retryAfterHttpDateIsHonoured()
    {
        ScriptedHttpServer server;
        ScriptedReply limited = ScriptedReply::json("{\"error\":{\"message\":\"slow down\"}}", 429);
        // Whole seconds: the wait is between 1 and 2 s from now.
        limited.headers.emplaceBack("Retry-After", httpDate(QDateTime::currentDateTimeUtc().addSecs(2)).toLatin1());
        server.enqueue(limited);
        server.enqueue(ScriptedReply::json("{\"ok\":true}"));
        HttpClient client(fastPolicy());

        QElapsedTimer clock;
        clock.start();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/messages"), "{}", {}, QStringLiteral("chat")));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QVERIFY2(clock.elapsed() >= 700, qPrintable(QString::number(clock.elapsed())));
        QCOMPARE(o.response->attempts, 2);
        QCOMPARE(server.requestCount(), 2);
    }

    void rateLimitGivesUpAfterMaxRetries()
    {
        ScriptedHttpServer server;
        server.setHandler([](const RecordedRequest &) {
            return ScriptedReply::json("{\"error\":{\"message\":\"Rate limit reached\"}}", 429);
        });
        HttpPolicy policy = fastPolicy();
        policy.maxRetries = 3;
        HttpClient client(policy);
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/embeddings"), "{}", {}, QStringLiteral("embed")));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::RateLimited);
        QCOMPARE(o.error->httpStatus(), 429);
        QCOMPARE(server.requestCount(), 4);
    }

    void retryAfterBeyondLimitGivesUpAtOnce()
    {
        ScriptedHttpServer server;
        server.setHandler([](const RecordedRequest &) {
            ScriptedReply r = ScriptedReply::json("{\"error\":{\"message\":\"quota exhausted\"}}", 429);
            r.headers.emplaceBack("Retry-After", "120");
            return r;
        });
        HttpPolicy policy = fastPolicy();
        policy.maxRetryAfterMs = 2000;
        HttpClient client(policy);
        QElapsedTimer clock;
        clock.start();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {}, QStringLiteral("chat")));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::RateLimited);
        QVERIFY2(o.error->message().contains(QLatin1String("quota exhausted")), qPrintable(o.describe()));
        QCOMPARE(server.requestCount(), 1);
        QVERIFY2(clock.elapsed() < 10000, qPrintable(QString::number(clock.elapsed())));
    }

    void retriedStatusThenSuccess_data()
    {
        QTest::addColumn<int>("status");
        for (int status : {429, 500, 502, 503, 504, 529})
            QTest::addRow("%d", status) << status;
    }

    void retriedStatusThenSuccess()
    {
        QFETCH(int, status);
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json("{\"error\":{\"message\":\"try again\"}}", status));
        server.enqueue(ScriptedReply::json("{\"ok\":true}"));
        HttpClient client(fastPolicy());
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/api/chat"), "{}", {}, QStringLiteral("chat")));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->status, 200);
        QCOMPARE(o.response->attempts, 2);
        QCOMPARE(server.requestCount(), 2);
    }

    void retryAfterMsIsHonoured()
    {
        ScriptedHttpServer server;
        ScriptedReply limited = ScriptedReply::json("{\"error\":{\"message\":\"slow down\"}}", 429);
        limited.headers.emplaceBack("retry-after-ms", "600");
        limited.headers.emplaceBack("Retry-After", "30"); // the finer header wins
        server.enqueue(limited);
        server.enqueue(ScriptedReply::json("{\"ok\":true}"));
        HttpClient client(fastPolicy());
        QElapsedTimer clock;
        clock.start();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {}, QStringLiteral("chat")));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QVERIFY2(clock.elapsed() >= 500, qPrintable(QString::number(clock.elapsed())));
        QCOMPARE(server.requestCount(), 2);
    }

    void exhaustedQuotaIsNotRetried()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json("{\"error\":{\"message\":\"You exceeded your current quota.\",\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}", 429));
        server.enqueue(ScriptedReply::json("{\"ok\":true}"));
        HttpClient client(fastPolicy());
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {}, QStringLiteral("chat")));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::RateLimited);
        QVERIFY2(o.error->message().contains(QLatin1String("quota")), qPrintable(o.describe()));
        QTest::qWait(100);
        QCOMPARE(server.requestCount(), 1);
    }

    void badRequestIsNotRetried()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json("{\"error\":{\"message\":\"Unknown parameter: 'foo'\"}}", 400));
        server.enqueue(ScriptedReply::json("{\"ok\":true}"));
        HttpClient client(fastPolicy());
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {}, QStringLiteral("chat")));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::BadRequest);
        QTest::qWait(100);
        QCOMPARE(server.requestCount(), 1);
    }

    // ---- timeouts and dropped connections ------------------------------------------------------

    void slowReplyTimesOut()
    {
        ScriptedHttpServer server;
        ScriptedReply late = ScriptedReply::json("{\"ok\":true}");
        late.delayMs = 5000;
        server.enqueue(late);
        HttpPolicy policy = fastPolicy();
        policy.timeoutMs = 300;
        policy.maxRetries = 0;
        HttpClient client(policy);
        QElapsedTimer clock;
        clock.start();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {}, QStringLiteral("chat")));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::Timeout);
        QVERIFY2(clock.elapsed() >= 250, qPrintable(QString::number(clock.elapsed())));
        QCOMPARE(server.requestCount(), 1);
    }

    // A timed-out (aborted) request fails quietly: no Qt warning on the way.
    void abortedRequestLogsNoWarning()
    {
        QTest::failOnWarning(QRegularExpression(QStringLiteral(".+")));
        ScriptedHttpServer server;
        ScriptedReply late = ScriptedReply::json("{}");
        late.delayMs = 5000;
        server.enqueue(late);
        HttpPolicy policy = fastPolicy();
        policy.timeoutMs = 200;
        policy.maxRetries = 0;
        HttpClient client(policy);
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {}, QStringLiteral("chat")));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::Timeout);
    }

    // The timeout bounds a whole attempt, except while streaming, where it bounds the silence
    // between two chunks: 6 chunks 150 ms apart take longer than 600 ms but never fall silent that long.
    void timeoutWholeAttemptOrSilence_data()
    {
        QTest::addColumn<bool>("streamed");
        QTest::addColumn<bool>("succeeds");
        QTest::newRow("buffered: whole attempt") << false << false;
        QTest::newRow("streamed: silence") << true << true;
    }

    void timeoutWholeAttemptOrSilence()
    {
        QFETCH(bool, streamed);
        QFETCH(bool, succeeds);
        const QList<QByteArray> events{"data: 1\n\n", "data: 2\n\n", "data: 3\n\n", "data: 4\n\n", "data: 5\n\n", "data: 6\n\n"};
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::sse(events, 150));
        HttpPolicy policy = fastPolicy();
        policy.timeoutMs = 600;
        policy.maxRetries = 0;
        HttpClient client(policy);
        auto pieces = std::make_shared<Pieces>();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {},
                                                    QStringLiteral("chat"), streamed ? collectInto(pieces) : HttpClient::ChunkHandler()));
        if (succeeds) {
            QVERIFY2(o.response, qPrintable(o.describe()));
            QCOMPARE(pieces->joined(), events.join());
        } else {
            QVERIFY2(o.error, qPrintable(o.describe()));
            QCOMPARE(o.error->kind(), ErrorKind::Timeout);
        }
    }

    void streamFallingSilentTimesOut()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::sse({"data: first\n\n", "data: second\n\n"}, 3000));
        HttpPolicy policy = fastPolicy();
        policy.timeoutMs = 400;
        HttpClient client(policy);
        auto pieces = std::make_shared<Pieces>();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {},
                                                    QStringLiteral("chat"), collectInto(pieces)));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::Timeout);
        QCOMPARE(pieces->joined(), QByteArray("data: first\n\n"));
        QCOMPARE(server.requestCount(), 1);
    }

    void closedWithoutReplyIsNetworkErrorAfterRetries()
    {
        ScriptedHttpServer server;
        server.setHandler([](const RecordedRequest &) {
            ScriptedReply r;
            r.closeWithoutReply = true;
            return r;
        });
        HttpPolicy policy = fastPolicy();
        policy.maxRetries = 2;
        HttpClient client(policy);
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/api/embed"), "{}", {}, QStringLiteral("ollama embed")));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::Network);
        QCOMPARE(o.error->httpStatus(), 0);
        QVERIFY2(o.error->message().contains(QLatin1String("ollama embed")), qPrintable(o.describe()));
        // At least 1 + maxRetries; QNetworkAccessManager itself may silently resend a request whose
        // connection closed before any reply, so the server can see more.
        QVERIFY2(server.requestCount() >= policy.maxRetries + 1, qPrintable(QString::number(server.requestCount())));
    }

    void connectionRefusedIsNetworkError()
    {
        QUrl url;
        {
            ScriptedHttpServer gone;
            url = endpoint(gone, "/v1/chat/completions");
        }
        HttpPolicy policy = fastPolicy();
        policy.maxRetries = 3;
        HttpClient client(policy);
        const Outcome o = outcomeOf(client.postJson(url, "{}", {}, QStringLiteral("chat")));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::Network);
        QCOMPARE(o.error->httpStatus(), 0);
        // Nothing listens on this machine's port: no retry would change that, so none is made (a dead
        // local server cost seconds of backoff per call, times the agent's own retries).
        QVERIFY2(o.error->message().contains(QLatin1String("nothing listens at")), qPrintable(o.error->message()));
        QVERIFY2(!o.error->message().contains(QLatin1String("attempts")), qPrintable(o.error->message()));
    }

    // ---- streaming -----------------------------------------------------------------------------

    void streamDeliversChunksInOrder_data()
    {
        QTest::addColumn<QString>("format");
        QTest::addColumn<QList<QByteArray>>("items");
        QTest::addColumn<int>("delayMs");
        QTest::addColumn<QByteArray>("expected");

        const QList<QByteArray> sse{"data: {\"delta\":\"Hel\"}\n\n", "data: {\"delta\":\"lo\"}\n\n", "data: [DONE]\n\n"};
        const QList<QByteArray> lines{"{\"message\":{\"content\":\"Hel\"},\"done\":false}",
                                      "{\"message\":{\"content\":\"lo\"},\"done\":false}", "{\"done\":true}"};
        QTest::newRow("sse at once") << "sse" << sse << 0 << sse.join();
        QTest::newRow("sse paced") << "sse" << sse << 30 << sse.join();
        QTest::newRow("ndjson paced") << "ndjson" << lines << 20 << (lines.join('\n') + '\n');
    }

    void streamDeliversChunksInOrder()
    {
        QFETCH(QString, format);
        QFETCH(QList<QByteArray>, items);
        QFETCH(int, delayMs);
        QFETCH(QByteArray, expected);

        ScriptedHttpServer server;
        const bool sse = format == QLatin1String("sse");
        server.enqueue(sse ? ScriptedReply::sse(items, delayMs) : ScriptedReply::ndjson(items, delayMs));
        HttpClient client(fastPolicy());
        auto pieces = std::make_shared<Pieces>();

        QFutureWatcher<HttpResponse> watcher;
        QSignalSpy finished(&watcher, &QFutureWatcherBase::finished);
        watcher.setFuture(client.postJson(endpoint(server, "/v1/chat/completions"), "{\"stream\":true}", {},
                                          QStringLiteral("chat"), collectInto(pieces)));
        QVERIFY(finished.wait(10000));
        const Outcome o = outcomeOf(watcher.future());
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->status, 200);
        QVERIFY(o.response->body.isEmpty());
        QCOMPARE(o.response->header("content-type"), sse ? QByteArray("text/event-stream") : QByteArray("application/x-ndjson"));
        QCOMPARE(pieces->joined(), expected);
        QVERIFY2(server.requests().first().header("accept").contains(sse ? "text/event-stream" : "application/x-ndjson"),
                 server.requests().first().header("accept").constData());
    }

    // The handler sees pieces of the body, never an empty one (not even when the reply ends).
    void streamPiecesAreNeverEmpty()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::sse({"data: a\n\n", "data: b\n\n"}, 20));
        HttpClient client(fastPolicy());
        auto pieces = std::make_shared<Pieces>();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {},
                                                    QStringLiteral("chat"), collectInto(pieces)));
        QVERIFY2(o.response, qPrintable(o.describe()));
        const QList<QByteArray> got = pieces->all();
        for (qsizetype i = 0; i < got.size(); ++i)
            QVERIFY2(!got[i].isEmpty(), qPrintable(QStringLiteral("piece %1 of %2 is empty").arg(i + 1).arg(got.size())));
    }

    // Chunks reach the handler as they arrive, not when the reply is complete: the first piece
    // came before the server had even sent the third chunk, 500 ms later.
    void streamIsIncremental()
    {
        const QList<QByteArray> events{"data: one\n\n", "data: two\n\n", "data: three\n\n"};
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::sse(events, 250));
        HttpClient client(fastPolicy());
        auto pieces = std::make_shared<Pieces>();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {},
                                                    QStringLiteral("chat"), collectInto(pieces)));
        QVERIFY2(o.response, qPrintable(o.describe()));
        const QList<QByteArray> got = pieces->all();
        QVERIFY2(got.size() >= 2, qPrintable(QString::number(got.size())));
        QVERIFY(got.first().startsWith("data: one\n\n"));
        QVERIFY(!got.first().contains("three"));
        QCOMPARE(got.join(), events.join());
    }

    void streamDroppedMidwayIsNetworkErrorNotRetried()
    {
        ScriptedHttpServer server;
        ScriptedReply dropped = ScriptedReply::sse({"data: {\"delta\":\"Hel\"}\n\n", "data: {\"delta\":\"lo\"}\n\n"}, 50);
        dropped.dropAfterChunks = true;
        server.enqueue(dropped);
        server.enqueue(ScriptedReply::sse({"data: retried\n\n"}));
        HttpClient client(fastPolicy());
        auto pieces = std::make_shared<Pieces>();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {},
                                                    QStringLiteral("chat"), collectInto(pieces)));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::Network);
        QCOMPARE(pieces->joined(), QByteArray("data: {\"delta\":\"Hel\"}\n\ndata: {\"delta\":\"lo\"}\n\n"));
        QTest::qWait(200);
        QCOMPARE(server.requestCount(), 1);
    }

    void streamedErrorStatusIsNotStreamed()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json("{\"error\":{\"message\":\"Unsupported parameter: 'stream_options'\"}}", 400));
        HttpClient client(fastPolicy());
        auto pieces = std::make_shared<Pieces>();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {},
                                                    QStringLiteral("chat"), collectInto(pieces)));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::BadRequest);
        QVERIFY2(o.error->message().contains(QLatin1String("Unsupported parameter: 'stream_options'")), qPrintable(o.describe()));
        QVERIFY(pieces->all().isEmpty());
    }

    // A failure before the first chunk is retried, and the handler only sees the good stream.
    void streamRetriedBeforeFirstChunk()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json("{\"error\":{\"message\":\"overloaded\"}}", 529));
        server.enqueue(ScriptedReply::sse({"data: a\n\n", "data: b\n\n"}));
        HttpClient client(fastPolicy());
        auto pieces = std::make_shared<Pieces>();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/messages"), "{}", {},
                                                    QStringLiteral("anthropic chat"), collectInto(pieces)));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->attempts, 2);
        QCOMPARE(pieces->joined(), QByteArray("data: a\n\ndata: b\n\n"));
        QCOMPARE(server.requestCount(), 2);
    }

    // ---- malformed and oversized replies -------------------------------------------------------

    void htmlErrorPageIsServerError()
    {
        ScriptedHttpServer server;
        server.setHandler([](const RecordedRequest &) {
            ScriptedReply r;
            r.status = 502;
            r.headers.emplaceBack("Content-Type", "text/html");
            r.body = HtmlBadGateway;
            return r;
        });
        HttpPolicy policy = fastPolicy();
        policy.maxRetries = 1;
        HttpClient client(policy);
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {}, QStringLiteral("chat")));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::ServerError);
        QCOMPARE(o.error->httpStatus(), 502);
        QVERIFY2(o.error->message().contains(QLatin1String("Bad Gateway")), qPrintable(o.describe()));
        QVERIFY2(!o.error->message().contains(QLatin1String("<html")), qPrintable(o.describe()));
        QCOMPARE(server.requestCount(), 2);
    }

    void emptyServerErrorBody()
    {
        ScriptedHttpServer server;
        server.setHandler([](const RecordedRequest &) { return ScriptedReply::json({}, 500); });
        HttpPolicy policy = fastPolicy();
        policy.maxRetries = 1;
        HttpClient client(policy);
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/api/chat"), "{}", {}, QStringLiteral("ollama chat")));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::ServerError);
        QCOMPARE(o.error->httpStatus(), 500);
        QVERIFY2(o.error->message().contains(QLatin1String("ollama chat")), qPrintable(o.describe()));
    }

    void hugeReplyArrivesWhole()
    {
        QByteArray body = "{\"data\":\"";
        body += QByteArray(20 << 20, 'x');
        for (qsizetype i = 9; i < body.size(); i += 4093)
            body[i] = char('a' + i % 26); // not all the same byte: a reordering would show
        body += "\"}";
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(body));
        HttpClient client(fastPolicy());
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/embeddings"), "{}", {}, QStringLiteral("embed")));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->body.size(), body.size());
        QVERIFY(o.response->body == body);
    }

    void replyAboveLimitIsMalformed_data()
    {
        QTest::addColumn<bool>("chunked");
        QTest::addColumn<bool>("streamed");
        QTest::newRow("content-length") << false << false;
        QTest::newRow("chunked") << true << false;
        QTest::newRow("chunked, streamed") << true << true;
    }

    void replyAboveLimitIsMalformed()
    {
        QFETCH(bool, chunked);
        QFETCH(bool, streamed);
        ScriptedHttpServer server;
        ScriptedReply big;
        if (chunked) {
            for (int i = 0; i < 8; ++i)
                big.chunks.append(QByteArray(256 << 10, char('a' + i)));
        } else {
            big.body = QByteArray(2 << 20, 'y');
        }
        server.setHandler([big](const RecordedRequest &) { return big; });
        HttpPolicy policy = fastPolicy();
        policy.maxResponseBytes = 1 << 20;
        HttpClient client(policy);
        auto pieces = std::make_shared<Pieces>();
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {}, QStringLiteral("chat"),
                                                    streamed ? collectInto(pieces) : HttpClient::ChunkHandler()));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::MalformedReply);
        QVERIFY2(pieces->joined().size() <= policy.maxResponseBytes, qPrintable(QString::number(pieces->joined().size())));
        QCOMPARE(server.requestCount(), 1);
    }

    // ---- cancellation --------------------------------------------------------------------------

    void cancellingTheFutureAborts()
    {
        ScriptedHttpServer server;
        ScriptedReply slow = ScriptedReply::json("{\"ok\":true}");
        slow.delayMs = 10000;
        server.enqueue(slow);
        HttpClient client(fastPolicy());

        QFutureWatcher<HttpResponse> watcher;
        QSignalSpy finished(&watcher, &QFutureWatcherBase::finished);
        QSignalSpy canceled(&watcher, &QFutureWatcherBase::canceled);
        QFuture<HttpResponse> future = client.postJson(endpoint(server, "/v1/chat/completions"), "{}", {}, QStringLiteral("chat"));
        watcher.setFuture(future);
        QTRY_COMPARE_WITH_TIMEOUT(server.requestCount(), 1, 5000);
        QVERIFY(!future.isFinished());

        QElapsedTimer clock;
        clock.start();
        future.cancel();
        QTRY_VERIFY_WITH_TIMEOUT(future.isFinished(), 3000);
        QVERIFY2(clock.elapsed() < 3000, qPrintable(QString::number(clock.elapsed())));
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 3000);
        QVERIFY(canceled.size() >= 1);
        const Outcome o = outcomeOf(future);
        QVERIFY2(o.isCancellation(), qPrintable(o.describe()));
        QTest::qWait(100);
        QCOMPARE(server.requestCount(), 1);
    }

    void cancelAllAbortsRunningAndWaitingRequests()
    {
        ScriptedHttpServer server;
        server.setHandler([](const RecordedRequest &r) {
            if (r.path == "/limited") {
                ScriptedReply limited = ScriptedReply::json("{\"error\":{\"message\":\"later\"}}", 429);
                limited.headers.emplaceBack("Retry-After", "4");
                return limited;
            }
            ScriptedReply slow = ScriptedReply::json("{\"ok\":true}");
            slow.delayMs = 10000;
            return slow;
        });
        HttpClient client(fastPolicy());
        QList<QFuture<HttpResponse>> futures{
            client.postJson(endpoint(server, "/slow1"), "{}", {}, QStringLiteral("one")),
            client.postJson(endpoint(server, "/slow2"), "{}", {}, QStringLiteral("two")),
            client.postJson(endpoint(server, "/limited"), "{}", {}, QStringLiteral("three"), collectInto(std::make_shared<Pieces>())),
        };
        QTRY_COMPARE_WITH_TIMEOUT(server.requestCount(), 3, 5000);
        QTest::qWait(100); // the 429 has arrived; the third request waits out its Retry-After
        for (const auto &f : futures)
            QVERIFY(!f.isFinished());

        client.cancelAll();
        for (const auto &f : futures) {
            QTRY_VERIFY_WITH_TIMEOUT(f.isFinished(), 3000);
            const Outcome o = outcomeOf(f);
            QVERIFY2(o.isCancellation(), qPrintable(o.describe()));
        }
        QCOMPARE(server.requestCount(), 3);
    }

    void cancelWithFutureAborts()
    {
        ScriptedHttpServer server;
        ScriptedReply slow = ScriptedReply::json("{\"ok\":true}");
        slow.delayMs = 10000;
        server.enqueue(slow);
        HttpClient client(fastPolicy());
        QPromise<void> caller;
        caller.start();
        HttpRequest request;
        request.url = endpoint(server, "/v1/chat/completions");
        request.body = "{}";
        request.what = QStringLiteral("chat");
        request.cancelWith = caller.future();
        QFuture<HttpResponse> future = client.send(request);
        QTRY_COMPARE_WITH_TIMEOUT(server.requestCount(), 1, 5000);

        caller.future().cancel();
        QTRY_VERIFY_WITH_TIMEOUT(future.isFinished(), 3000);
        const Outcome o = outcomeOf(future);
        QVERIFY2(o.isCancellation(), qPrintable(o.describe()));
        caller.finish();
    }

    void cancelledBeforeItIsSentIsCancelled()
    {
        // The caller cancels before the network thread takes the request (a run stopped right after
        // its kickoff): the request is never sent, and the future is cancelled, so a continuation
        // is cancelled with it instead of being handed a response that does not exist.
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json("{\"ok\":true}"));
        HttpClient client(fastPolicy());
        QPromise<void> caller;
        caller.start();
        caller.future().cancel();
        HttpRequest request;
        request.url = endpoint(server, "/v1/chat/completions");
        request.body = "{}";
        request.what = QStringLiteral("chat");
        request.cancelWith = caller.future();
        QFuture<HttpResponse> future = client.send(request);
        auto ran = std::make_shared<std::atomic_bool>(false);
        QFuture<int> next = future.then(QtFuture::Launch::Sync, [ran](const HttpResponse &response) {
            *ran = true;
            return response.status;
        });
        QTRY_VERIFY_WITH_TIMEOUT(next.isFinished(), 3000);
        QVERIFY(future.isCanceled());
        QVERIFY(next.isCanceled());
        QVERIFY(!*ran);
        const Outcome o = outcomeOf(future);
        QVERIFY2(o.isCancellation(), qPrintable(o.describe()));
        QCOMPARE(server.requestCount(), 0);
        caller.finish();
    }

    void destroyingTheClientCancels()
    {
        ScriptedHttpServer server;
        ScriptedReply slow = ScriptedReply::json("{\"ok\":true}");
        slow.delayMs = 10000;
        server.enqueue(slow);
        auto client = std::make_unique<HttpClient>(fastPolicy());
        QFuture<HttpResponse> future = client->postJson(endpoint(server, "/v1/chat/completions"), "{}", {}, QStringLiteral("chat"));
        QTRY_COMPARE_WITH_TIMEOUT(server.requestCount(), 1, 5000);
        client.reset();
        QTRY_VERIFY_WITH_TIMEOUT(future.isFinished(), 3000);
        const Outcome o = outcomeOf(future);
        QVERIFY2(o.isCancellation(), qPrintable(o.describe()));
    }

    // ---- requests per minute -------------------------------------------------------------------

    void maxRpmHoldsBackTheThirdRequest()
    {
        ScriptedHttpServer server;
        server.setHandler([](const RecordedRequest &) { return ScriptedReply::json("{\"ok\":true}"); });
        HttpPolicy policy = fastPolicy();
        policy.maxRpm = 2;
        HttpClient client(policy);
        QList<QFuture<HttpResponse>> futures;
        for (int i = 0; i < 3; ++i)
            futures << client.postJson(endpoint(server, QStringLiteral("/n%1").arg(i)), "{}", {}, QStringLiteral("chat"));

        QTRY_COMPARE_WITH_TIMEOUT(server.requestCount(), 2, 5000);
        for (int i = 0; i < 2; ++i) {
            const Outcome o = outcomeOf(futures[i]);
            QVERIFY2(o.response, qPrintable(o.describe()));
        }
        QTest::qWait(1000);
        QCOMPARE(server.requestCount(), 2);
        QVERIFY(!futures[2].isFinished());

        client.cancelAll();
        QTRY_VERIFY_WITH_TIMEOUT(futures[2].isFinished(), 3000);
        const Outcome third = outcomeOf(futures[2]);
        QVERIFY2(third.isCancellation(), qPrintable(third.describe()));
        QCOMPARE(server.requestCount(), 2);
    }

    // ---- secrets -------------------------------------------------------------------------------

    void secretsAreRedactedFromErrors()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(
            "{\"error\":{\"message\":\"Incorrect API key provided: sk-test-SECRET-123456. You can find your API key at https://platform.openai.com/account/api-keys.\",\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}",
            401));
        HttpPolicy policy = fastPolicy();
        policy.secrets = QStringList{QString::fromLatin1(Secret)};
        HttpClient client(policy);
        const Outcome o = outcomeOf(client.postJson(endpoint(server, "/v1/chat/completions"), "{}",
                                                    {{"Authorization", "Bearer " + Secret}}, QStringLiteral("openai chat")));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::Authentication);
        QCOMPARE(o.error->httpStatus(), 401);
        const QByteArray what = o.error->what();
        QVERIFY2(!what.contains(Secret), what.constData());
        QVERIFY2(what.contains("[redacted]"), what.constData());
        QVERIFY2(what.contains("Incorrect API key provided"), what.constData());
    }

    // A key in the query (Gemini's ?key=) never reaches an error text.
    void urlQueryNeverInErrors()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json("{\"error\":{\"code\":404,\"message\":\"models/nope is not found\",\"status\":\"NOT_FOUND\"}}", 404));
        HttpPolicy policy = fastPolicy();
        policy.maxRetries = 0;
        HttpClient client(policy);
        const QUrl url = endpoint(server, "/v1beta/models/nope:generateContent?key=" + QString::fromLatin1(Secret));
        const Outcome notFound = outcomeOf(client.postJson(url, "{}", {}, QStringLiteral("gemini chat")));
        QVERIFY2(notFound.error, qPrintable(notFound.describe()));
        QCOMPARE(notFound.error->kind(), ErrorKind::BadRequest);
        QVERIFY2(notFound.error->message().contains(QLatin1String("models/nope is not found")), qPrintable(notFound.describe()));
        QVERIFY2(!QByteArray(notFound.error->what()).contains(Secret), notFound.error->what());

        QUrl goneUrl;
        {
            ScriptedHttpServer gone;
            goneUrl = endpoint(gone, "/v1beta/models/x:generateContent?key=" + QString::fromLatin1(Secret));
        }
        const Outcome refused = outcomeOf(client.postJson(goneUrl, "{}", {}, QStringLiteral("gemini chat")));
        QVERIFY2(refused.error, qPrintable(refused.describe()));
        QVERIFY2(!QByteArray(refused.error->what()).contains(Secret), refused.error->what());
    }

    void redact_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("secrets");
        QTest::addColumn<QString>("expected");

        const QString key = QString::fromLatin1(Secret);
        QTest::newRow("one") << "Incorrect API key provided: " + key + "." << QStringList{key}
                             << "Incorrect API key provided: [redacted].";
        QTest::newRow("twice") << key + " and again " + key << QStringList{key} << "[redacted] and again [redacted]";
        QTest::newRow("two secrets") << "a=sk-aaaa-11111111 b=tok-bbbb-22222222"
                                     << QStringList{"sk-aaaa-11111111", "tok-bbbb-22222222"} << "a=[redacted] b=[redacted]";
        QTest::newRow("inside a url") << "https://host/v1?key=" + key + "&alt=sse" << QStringList{key}
                                      << "https://host/v1?key=[redacted]&alt=sse";
        QTest::newRow("absent") << "nothing to hide here" << QStringList{key} << "nothing to hide here";
        QTest::newRow("no secrets") << "Bearer " + key << QStringList{} << "Bearer " + key;
        QTest::newRow("empty secret ignored") << "some text" << QStringList{QString()} << "some text";
        QTest::newRow("empty text") << QString() << QStringList{key} << QString();
    }

    void redact()
    {
        QFETCH(QString, text);
        QFETCH(QStringList, secrets);
        QFETCH(QString, expected);
        QCOMPARE(HttpClient::redact(text, secrets), expected);
    }

    void providerMessage_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("expected");

        QTest::newRow("openai") << QByteArray("{\"error\":{\"message\":\"Invalid model: gpt-9\"}}") << "Invalid model: gpt-9";
        QTest::newRow("ollama") << QByteArray("{\"error\":\"model \\\"llama9\\\" not found, try pulling it first\"}")
                                << "model \"llama9\" not found, try pulling it first";
        QTest::newRow("message") << QByteArray("{\"message\":\"Rate limit reached\"}") << "Rate limit reached";
        QTest::newRow("detail") << QByteArray("{\"detail\":\"Not authenticated\"}") << "Not authenticated";
        QTest::newRow("array") << QByteArray("[{\"error\":{\"code\":400,\"message\":\"API key not valid.\",\"status\":\"INVALID_ARGUMENT\"}}]")
                               << "API key not valid.";
        QTest::newRow("padded") << QByteArray("\n  {\"error\":{\"message\":\"x failed\"}}  \r\n") << "x failed";
        QTest::newRow("plain text") << QByteArray("upstream connect error or disconnect/reset before headers")
                                    << "upstream connect error or disconnect/reset before headers";
    }

    void providerMessage()
    {
        QFETCH(QByteArray, body);
        QFETCH(QString, expected);
        QCOMPARE(HttpClient::providerMessage(body), expected);
    }

    void providerMessageOfHtmlAndLongText()
    {
        const QString html = HttpClient::providerMessage(HtmlBadGateway);
        QVERIFY2(html.contains(QLatin1String("502 Bad Gateway")), qPrintable(html));
        QVERIFY2(!html.contains(QLatin1String("nginx")), qPrintable(html));
        QVERIFY2(!html.contains(QLatin1Char('<')), qPrintable(html));

        const QByteArray longText = QByteArray(300, 'a') + " TAIL-MARKER " + QByteArray(700, 'b');
        const QString cut = HttpClient::providerMessage(longText);
        QVERIFY2(cut.startsWith(QString(300, QLatin1Char('a'))), qPrintable(cut));
        QVERIFY2(!cut.contains(QLatin1String("TAIL-MARKER")), qPrintable(cut));
        QVERIFY2(cut.size() < 320, qPrintable(QString::number(cut.size())));
    }
};

QTEST_GUILESS_MAIN(TestHttpClient)
#include "test_http_client.moc"
