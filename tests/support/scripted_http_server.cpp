#include "scripted_http_server.h"

#include <QHostAddress>
#include <QMutexLocker>
#include <QObject>
#include <QTcpServer>
#include <QTcpSocket>
#include <QThread>
#include <QTimer>
#include <exception>
#include <memory>

namespace mneme::test {

namespace {

using Headers = QList<QPair<QByteArray, QByteArray>>;

QByteArray headerValue(const Headers &headers, const QByteArray &name)
{
    for (const auto &h : headers) {
        if (h.first.compare(name, Qt::CaseInsensitive) == 0)
            return h.second;
    }
    return {};
}

bool hasHeader(const Headers &headers, const QByteArray &name)
{
    for (const auto &h : headers) {
        if (h.first.compare(name, Qt::CaseInsensitive) == 0)
            return true;
    }
    return false;
}

// The comma-separated tokens of every header of that name, lower-cased and trimmed.
QList<QByteArray> headerTokens(const Headers &headers, const QByteArray &name)
{
    QList<QByteArray> tokens;
    for (const auto &h : headers) {
        if (h.first.compare(name, Qt::CaseInsensitive) != 0)
            continue;
        for (const QByteArray &t : h.second.split(','))
            tokens << t.trimmed().toLower();
    }
    return tokens;
}

QByteArray reasonPhrase(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 529: return "Site Overloaded";
    default: return "Status";
    }
}

constexpr qsizetype MaxHeaderBytes = 1 << 20;

enum class Parse {
    Incomplete,
    Complete,
    Bad
};

struct ParsedRequest
{
    RecordedRequest request;
    bool keepAlive = true;
    bool expectContinue = false; // headers complete, body still missing, client waits for 100
};

// Parses one request from the front of buffer; on Complete, removes its bytes from buffer.
Parse parseRequest(QByteArray &buffer, ParsedRequest &out)
{
    // Empty lines before a request line are allowed (RFC 9112, 2.2).
    qsizetype start = 0;
    while (buffer.size() >= start + 2 && buffer.at(start) == '\r' && buffer.at(start + 1) == '\n')
        start += 2;
    const qsizetype headerEnd = buffer.indexOf("\r\n\r\n", start);
    if (headerEnd < 0)
        return buffer.size() > MaxHeaderBytes ? Parse::Bad : Parse::Incomplete;

    const QList<QByteArray> lines = buffer.mid(start, headerEnd - start).split('\n');
    const QList<QByteArray> requestLine = lines.first().trimmed().split(' ');
    if (requestLine.size() != 3 || !requestLine.at(2).startsWith("HTTP/1."))
        return Parse::Bad;

    RecordedRequest request;
    request.method = requestLine.at(0);
    request.path = requestLine.at(1);
    if (request.path.startsWith("http://") || request.path.startsWith("https://")) {
        // Absolute form (as sent to a proxy): keep the path and query.
        const QUrl url(QString::fromLatin1(request.path));
        request.path = url.path(QUrl::FullyEncoded).toLatin1();
        if (request.path.isEmpty())
            request.path = "/";
        if (url.hasQuery())
            request.path += '?' + url.query(QUrl::FullyEncoded).toLatin1();
    }
    const bool http10 = requestLine.at(2) == "HTTP/1.0";

    for (qsizetype i = 1; i < lines.size(); ++i) {
        QByteArray line = lines.at(i);
        if (line.endsWith('\r'))
            line.chop(1);
        if (line.isEmpty())
            continue;
        if ((line.at(0) == ' ' || line.at(0) == '\t') && !request.headers.isEmpty()) {
            // Obsolete line folding: continues the previous header's value.
            request.headers.last().second += ' ' + line.trimmed();
            continue;
        }
        const qsizetype colon = line.indexOf(':');
        if (colon <= 0)
            return Parse::Bad;
        request.headers.emplaceBack(line.left(colon).trimmed(), line.mid(colon + 1).trimmed());
    }

    const QList<QByteArray> connection = headerTokens(request.headers, "Connection");
    out.keepAlive = http10 ? connection.contains("keep-alive") : !connection.contains("close");
    const bool expects100 = headerTokens(request.headers, "Expect").contains("100-continue");

    qsizetype pos = headerEnd + 4;
    const QList<QByteArray> codings = headerTokens(request.headers, "Transfer-Encoding");
    if (!codings.isEmpty() && codings.last() == "chunked") {
        QByteArray body;
        for (;;) {
            const qsizetype lineEnd = buffer.indexOf("\r\n", pos);
            if (lineEnd < 0) {
                out.expectContinue = expects100;
                return Parse::Incomplete;
            }
            QByteArray sizeText = buffer.mid(pos, lineEnd - pos);
            const qsizetype semicolon = sizeText.indexOf(';');
            if (semicolon >= 0)
                sizeText.truncate(semicolon);
            bool ok = false;
            const qlonglong size = sizeText.trimmed().toLongLong(&ok, 16);
            if (!ok || size < 0)
                return Parse::Bad;
            pos = lineEnd + 2;
            if (size == 0) {
                // Trailers, up to an empty line; ignored.
                for (;;) {
                    const qsizetype trailerEnd = buffer.indexOf("\r\n", pos);
                    if (trailerEnd < 0)
                        return Parse::Incomplete;
                    const bool last = trailerEnd == pos;
                    pos = trailerEnd + 2;
                    if (last)
                        break;
                }
                break;
            }
            if (buffer.size() < pos + size + 2) {
                out.expectContinue = expects100;
                return Parse::Incomplete;
            }
            body.append(buffer.constData() + pos, size);
            if (buffer.at(pos + size) != '\r' || buffer.at(pos + size + 1) != '\n')
                return Parse::Bad;
            pos += size + 2;
        }
        request.body = body;
    } else if (!codings.isEmpty()) {
        return Parse::Bad; // a transfer coding we do not speak
    } else if (hasHeader(request.headers, "Content-Length")) {
        bool ok = false;
        const qlonglong length = headerValue(request.headers, "Content-Length").toLongLong(&ok);
        if (!ok || length < 0)
            return Parse::Bad;
        if (buffer.size() < pos + length) {
            out.expectContinue = expects100;
            return Parse::Incomplete;
        }
        request.body = buffer.mid(pos, length);
        pos += length;
    }

    buffer.remove(0, pos);
    out.request = std::move(request);
    return Parse::Complete;
}

struct Connection
{
    QTcpSocket *socket = nullptr;
    QByteArray buffer;
    bool busy = false;       // a reply is under way (possibly delayed or streaming)
    bool closeAfter = false; // the request being answered asked to close the connection
    bool closed = false;
    bool continueSent = false;
};

using ConnectionPtr = std::shared_ptr<Connection>;

} // namespace

// Lives on the server's thread; owns the QTcpServer and, through it, every socket.
class ScriptedHttpServer::Worker : public QObject
{
public:
    explicit Worker(ScriptedHttpServer *owner) : m_owner(owner) {}

    quint16 listen()
    {
        m_server = new QTcpServer(this);
        QObject::connect(m_server, &QTcpServer::newConnection, this, [this] { accept(); });
        if (!m_server->listen(QHostAddress::LocalHost, 0))
            return 0;
        return m_server->serverPort();
    }

private:
    void accept()
    {
        while (m_server->hasPendingConnections()) {
            QTcpSocket *socket = m_server->nextPendingConnection();
            auto conn = std::make_shared<Connection>();
            conn->socket = socket;
            QObject::connect(socket, &QTcpSocket::readyRead, socket, [this, conn] {
                conn->buffer += conn->socket->readAll();
                process(conn);
            });
            QObject::connect(socket, &QTcpSocket::disconnected, socket, [conn] {
                conn->closed = true;
                conn->socket->deleteLater();
            });
            if (socket->bytesAvailable() > 0) {
                conn->buffer += socket->readAll();
                process(conn);
            }
        }
    }

    static bool usable(const ConnectionPtr &conn)
    {
        return !conn->closed && conn->socket->state() == QAbstractSocket::ConnectedState;
    }

    static void close(const ConnectionPtr &conn)
    {
        if (conn->closed)
            return;
        conn->closed = true;
        conn->socket->disconnectFromHost(); // after whatever is still buffered has been written
    }

    // Answers the next complete request in the buffer, if there is one and nothing is under way.
    void process(const ConnectionPtr &conn)
    {
        if (conn->busy || !usable(conn))
            return;
        ParsedRequest parsed;
        switch (parseRequest(conn->buffer, parsed)) {
        case Parse::Incomplete:
            if (parsed.expectContinue && !conn->continueSent) {
                conn->continueSent = true;
                conn->socket->write("HTTP/1.1 100 Continue\r\n\r\n");
            }
            return;
        case Parse::Bad:
            conn->socket->write("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
                                "Content-Length: 19\r\nConnection: close\r\n\r\nmalformed request\r\n");
            close(conn);
            return;
        case Parse::Complete:
            break;
        }
        conn->continueSent = false;
        conn->busy = true;
        conn->closeAfter = !parsed.keepAlive;
        const ScriptedReply reply = m_owner->take(parsed.request);
        if (reply.delayMs > 0)
            QTimer::singleShot(reply.delayMs, conn->socket, [this, conn, reply] { send(conn, reply); });
        else
            send(conn, reply);
    }

    void send(const ConnectionPtr &conn, const ScriptedReply &reply)
    {
        if (!usable(conn))
            return;
        if (reply.closeWithoutReply) {
            close(conn);
            return;
        }
        const bool chunked = !reply.chunks.isEmpty();
        const bool closing = conn->closeAfter || reply.dropAfterChunks;
        QByteArray head = "HTTP/1.1 " + QByteArray::number(reply.status) + ' '
                        + reasonPhrase(reply.status) + "\r\n";
        if (!hasHeader(reply.headers, "Content-Type"))
            head += "Content-Type: application/json\r\n";
        for (const auto &h : reply.headers)
            head += h.first + ": " + h.second + "\r\n";
        if (chunked) {
            if (!hasHeader(reply.headers, "Transfer-Encoding"))
                head += "Transfer-Encoding: chunked\r\n";
        } else if (!hasHeader(reply.headers, "Content-Length")) {
            head += "Content-Length: " + QByteArray::number(reply.body.size()) + "\r\n";
        }
        if (!hasHeader(reply.headers, "Connection"))
            head += closing ? "Connection: close\r\n" : "Connection: keep-alive\r\n";
        head += "\r\n";
        conn->socket->write(head);
        if (!chunked) {
            conn->socket->write(reply.body);
            finish(conn);
            return;
        }
        conn->socket->flush();
        sendChunks(conn, reply, 0);
    }

    // Writes chunks from index `next` on, waiting chunkDelayMs between two of them.
    void sendChunks(const ConnectionPtr &conn, const ScriptedReply &reply, qsizetype next)
    {
        if (!usable(conn))
            return;
        for (qsizetype i = next; i < reply.chunks.size(); ++i) {
            const QByteArray &chunk = reply.chunks.at(i);
            if (!chunk.isEmpty()) // an empty chunk would end the body
                conn->socket->write(QByteArray::number(chunk.size(), 16) + "\r\n" + chunk + "\r\n");
            conn->socket->flush();
            const bool last = i + 1 == reply.chunks.size();
            if (reply.chunkDelayMs > 0 && (!last || reply.dropAfterChunks)) {
                QTimer::singleShot(reply.chunkDelayMs, conn->socket,
                                   [this, conn, reply, i] { sendChunks(conn, reply, i + 1); });
                return;
            }
        }
        if (reply.dropAfterChunks) {
            close(conn);
            return;
        }
        conn->socket->write("0\r\n\r\n");
        finish(conn);
    }

    void finish(const ConnectionPtr &conn)
    {
        conn->busy = false;
        if (conn->closeAfter) {
            close(conn);
            return;
        }
        conn->socket->flush();
        process(conn); // a request that arrived meanwhile (pipelined)
    }

    ScriptedHttpServer *m_owner;
    QTcpServer *m_server = nullptr;
};

ScriptedReply ScriptedReply::json(const QByteArray &body, int status)
{
    ScriptedReply r;
    r.status = status;
    r.body = body;
    return r;
}

ScriptedReply ScriptedReply::sse(const QList<QByteArray> &events, int chunkDelayMs)
{
    ScriptedReply r;
    r.headers.emplaceBack("Content-Type", "text/event-stream");
    r.headers.emplaceBack("Cache-Control", "no-cache");
    r.chunks = events;
    r.chunkDelayMs = chunkDelayMs;
    return r;
}

ScriptedReply ScriptedReply::ndjson(const QList<QByteArray> &lines, int chunkDelayMs)
{
    ScriptedReply r;
    r.headers.emplaceBack("Content-Type", "application/x-ndjson");
    for (const QByteArray &line : lines)
        r.chunks.append(line + '\n');
    r.chunkDelayMs = chunkDelayMs;
    return r;
}

QByteArray RecordedRequest::header(const QByteArray &name) const
{
    return headerValue(headers, name);
}

Json RecordedRequest::json() const
{
    return Json::parse(body.constBegin(), body.constEnd());
}

ScriptedHttpServer::ScriptedHttpServer()
{
    m_thread = new QThread;
    m_thread->setObjectName(QStringLiteral("ScriptedHttpServer"));
    m_worker = new Worker(this);
    m_worker->moveToThread(m_thread);
    // The worker, its QTcpServer and every socket are deleted on the server's thread as it ends.
    QObject::connect(m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    m_thread->start();
    quint16 port = 0;
    QMetaObject::invokeMethod(
        m_worker, [this, &port] { port = m_worker->listen(); },
        Qt::BlockingQueuedConnection);
    m_port = port;
}

ScriptedHttpServer::~ScriptedHttpServer()
{
    m_thread->quit();
    m_thread->wait();
    delete m_thread;
}

bool ScriptedHttpServer::isListening() const
{
    return m_port != 0;
}

QUrl ScriptedHttpServer::baseUrl() const
{
    return QUrl(QStringLiteral("http://127.0.0.1:%1").arg(m_port));
}

void ScriptedHttpServer::enqueue(const ScriptedReply &reply)
{
    QMutexLocker lock(&m_mutex);
    m_queue.enqueue(reply);
}

void ScriptedHttpServer::setHandler(std::function<ScriptedReply(const RecordedRequest &)> handler)
{
    QMutexLocker lock(&m_mutex);
    m_handler = std::move(handler);
}

QList<RecordedRequest> ScriptedHttpServer::requests() const
{
    QMutexLocker lock(&m_mutex);
    return m_requests;
}

int ScriptedHttpServer::requestCount() const
{
    QMutexLocker lock(&m_mutex);
    return int(m_requests.size());
}

ScriptedReply ScriptedHttpServer::take(const RecordedRequest &request)
{
    std::function<ScriptedReply(const RecordedRequest &)> handler;
    {
        QMutexLocker lock(&m_mutex);
        m_requests.append(request);
        if (m_handler)
            handler = m_handler;
        else if (!m_queue.isEmpty())
            return m_queue.dequeue();
    }
    if (handler) {
        try {
            return handler(request);
        } catch (const std::exception &e) {
            return ScriptedReply::json(Json{{"error", {{"message", std::string("scripted handler threw: ") + e.what()}}}}
                                           .dump()
                                           .c_str(),
                                       500);
        }
    }
    return ScriptedReply::json(R"({"error":{"message":"no scripted reply"}})", 500);
}

} // namespace mneme::test
