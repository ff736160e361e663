#include "http_server.h"

#include <mneme/core/error.h>
#include <mneme/core/version.h>

#include <QElapsedTimer>
#include <QLocale>
#include <QMutex>
#include <QPointer>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>
#include <QUrl>

namespace mneme::cli {

namespace {

QByteArray reasonOf(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
    }
}

bool isTokenChar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
        || QByteArrayView("!#$%&'*+-.^_`|~").contains(c);
}

bool isToken(const QByteArray &s)
{
    return !s.isEmpty() && std::all_of(s.begin(), s.end(), isTokenChar);
}

QByteArray httpDate()
{
    return QLocale::c().toString(QDateTime::currentDateTimeUtc(), QStringLiteral("ddd, dd MMM yyyy hh:mm:ss 'GMT'")).toLatin1();
}

// Where the line that starts at `from` ends ("\r\n" or a lone "\n"), and how long the line end is.
qsizetype lineEnd(const QByteArray &buffer, qsizetype from, int *endLength)
{
    const qsizetype nl = buffer.indexOf('\n', from);
    if (nl < 0)
        return -1;
    const bool crlf = nl > from && buffer[nl - 1] == '\r';
    *endLength = crlf ? 2 : 1;
    return crlf ? nl - 1 : nl;
}

// A problem with the request that ends the connection after its answer.
struct Refusal
{
    int status;
    QString message;
};

} // namespace

// ---------------------------------------------------------------------------------------------
// Requests and responses

QByteArray HttpServerRequest::header(const QByteArray &name) const
{
    for (const auto &h : headers)
        if (h.first.compare(name, Qt::CaseInsensitive) == 0)
            return h.second;
    return {};
}

bool HttpServerRequest::hasHeader(const QByteArray &name) const
{
    return std::any_of(headers.begin(), headers.end(), [&](const auto &h) { return h.first.compare(name, Qt::CaseInsensitive) == 0; });
}

std::optional<QString> HttpServerRequest::parameter(const QString &name) const
{
    if (!query.hasQueryItem(name))
        return std::nullopt;
    return query.queryItemValue(name, QUrl::FullyDecoded);
}

HttpServerResponse HttpServerResponse::json(int status, const Json &body)
{
    HttpServerResponse r;
    r.status = status;
    r.headers = {{"Content-Type", "application/json"}};
    r.body = QByteArray::fromStdString(body.dump(-1, ' ', false, Json::error_handler_t::replace)) + '\n';
    return r;
}

HttpServerResponse HttpServerResponse::error(int status, const QString &kind, const QString &message)
{
    return json(status, Json{{"error", {{"kind", kind.toStdString()}, {"message", message.toStdString()}}}});
}

HttpServerResponse HttpServerResponse::empty(int status)
{
    HttpServerResponse r;
    r.status = status;
    return r;
}

// ---------------------------------------------------------------------------------------------
// The mailbox: how a Respond called on any thread reaches the server, if it still exists.

struct HttpServer::Mailbox
{
    QMutex mutex;
    HttpServer *server = nullptr;
};

// ---------------------------------------------------------------------------------------------
// One connection: reads requests one at a time, hands each to the handler, writes its response.

class HttpServer::Connection : public QObject
{
public:
    enum class State {
        Head,
        Body,
        ChunkSize,
        ChunkData,
        Trailers,
        Handling,
        Closing
    };

    Connection(HttpServer *server, quint64 id, QTcpSocket *socket) : QObject(server), m_server(server), m_id(id), m_socket(socket)
    {
        socket->setParent(this);
        // Nothing is read while a request is being handled: the kernel's buffers then push back.
        socket->setReadBufferSize(qint64(server->m_limits.maxHeaderBytes) + 65536);
        m_timer.setSingleShot(true);
        connect(&m_timer, &QTimer::timeout, this, [this] { onTimeout(); });
        connect(socket, &QTcpSocket::readyRead, this, [this] { read(); });
        connect(socket, &QTcpSocket::disconnected, this, [this] { m_server->closed(m_id); });
        m_timer.start(m_server->m_limits.idleTimeoutMs);
    }

    quint64 serial() const { return m_serial; }

    void read()
    {
        if (m_state == State::Handling || m_state == State::Closing)
            return;
        // At most one request's head and body (each refused beyond its limit) and a little of the next.
        const HttpServer::Limits &limits = m_server->m_limits;
        const qint64 room = limits.maxHeaderBytes + limits.maxBodyBytes + 65536 - m_buffer.size();
        if (room > 0)
            m_buffer += m_socket->read(room);
        try {
            parse();
        } catch (const Refusal &r) {
            refuse(r.status, r.message);
        }
    }

    void answer(const HttpServerResponse &response)
    {
        if (m_state != State::Handling)
            return;
        write(response, m_request.method == "HEAD");
        Q_EMIT m_server->requestFinished(m_request.method, m_request.path, response.status,
                                         double(m_clock.nsecsElapsed()) / 1e6);
        if (!m_keepAlive) {
            close();
            return;
        }
        m_state = State::Head;
        m_request = HttpServerRequest();
        m_timer.start(m_server->m_limits.idleTimeoutMs);
        read(); // a pipelined request may be waiting
    }

private:
    void onTimeout()
    {
        if (m_state == State::Closing) {
            m_socket->abort(); // the peer does not take what was written
            return;
        }
        if (m_state == State::Head && m_buffer.trimmed().isEmpty()) {
            close(); // an idle keep-alive connection
            return;
        }
        if (m_state != State::Handling && m_state != State::Closing)
            refuse(408, QStringLiteral("the request was not complete within %1 s").arg(m_server->m_limits.requestTimeoutMs / 1000.0));
    }

    void beginRequest()
    {
        if (!m_started) {
            m_started = true;
            m_clock.start();
            m_timer.start(m_server->m_limits.requestTimeoutMs);
        }
    }

    void parse()
    {
        const HttpServer::Limits &limits = m_server->m_limits;
        while (true) {
            switch (m_state) {
            case State::Head: {
                // Empty lines before a request line are ignored (RFC 9112, 2.2).
                while (m_buffer.startsWith("\r\n") || m_buffer.startsWith('\n'))
                    m_buffer.remove(0, m_buffer.startsWith('\n') ? 1 : 2);
                if (m_buffer.isEmpty())
                    return;
                beginRequest();
                qsizetype end = m_buffer.indexOf("\r\n\r\n");
                int endLength = 4;
                const qsizetype lf = m_buffer.indexOf("\n\n");
                if (lf >= 0 && (end < 0 || lf < end)) {
                    end = lf;
                    endLength = 2;
                }
                if (end < 0) {
                    if (m_buffer.size() > limits.maxHeaderBytes)
                        throw Refusal{431, QStringLiteral("the request line and headers are larger than %1 bytes").arg(limits.maxHeaderBytes)};
                    return;
                }
                if (end > limits.maxHeaderBytes)
                    throw Refusal{431, QStringLiteral("the request line and headers are larger than %1 bytes").arg(limits.maxHeaderBytes)};
                const QByteArray head = m_buffer.left(end);
                m_buffer.remove(0, end + endLength);
                readHead(head);
                break;
            }
            case State::Body:
                if (m_buffer.size() < m_remaining)
                    return;
                m_request.body = m_buffer.left(m_remaining);
                m_buffer.remove(0, m_remaining);
                dispatch();
                return;
            case State::ChunkSize: {
                int endLength = 0;
                const qsizetype end = lineEnd(m_buffer, 0, &endLength);
                if (end < 0) {
                    if (m_buffer.size() > 1024)
                        throw Refusal{400, QStringLiteral("a chunk size line is longer than 1024 bytes")};
                    return;
                }
                QByteArray line = m_buffer.left(end);
                m_buffer.remove(0, end + endLength);
                if (const qsizetype semicolon = line.indexOf(';'); semicolon >= 0)
                    line.truncate(semicolon); // chunk extensions are ignored
                line = line.trimmed();
                bool ok = false;
                const qint64 size = line.size() <= 15 ? line.toLongLong(&ok, 16) : -1;
                if (!ok || size < 0)
                    throw Refusal{400, QStringLiteral("a chunk size is not a hexadecimal number")};
                if (size == 0) {
                    m_state = State::Trailers;
                    break;
                }
                if (m_request.body.size() + size > limits.maxBodyBytes)
                    throw Refusal{413, QStringLiteral("the body is larger than %1 bytes").arg(limits.maxBodyBytes)};
                m_remaining = size;
                m_state = State::ChunkData;
                break;
            }
            case State::ChunkData: {
                if (m_buffer.size() < m_remaining + 1)
                    return;
                const bool crlf = m_buffer.size() >= m_remaining + 2 && m_buffer.mid(m_remaining, 2) == "\r\n";
                const bool lf = m_buffer[m_remaining] == '\n';
                if (!crlf && !lf) {
                    if (m_buffer.size() < m_remaining + 2)
                        return;
                    throw Refusal{400, QStringLiteral("a chunk is not followed by a line end")};
                }
                m_request.body += m_buffer.left(m_remaining);
                m_buffer.remove(0, m_remaining + (crlf ? 2 : 1));
                m_state = State::ChunkSize;
                break;
            }
            case State::Trailers: {
                int endLength = 0;
                const qsizetype end = lineEnd(m_buffer, 0, &endLength);
                if (end < 0) {
                    if (m_buffer.size() > limits.maxHeaderBytes)
                        throw Refusal{431, QStringLiteral("the trailer fields are too large")};
                    return;
                }
                m_buffer.remove(0, end + endLength);
                if (end == 0) { // the empty line after the trailers (which are ignored)
                    dispatch();
                    return;
                }
                break;
            }
            case State::Handling:
            case State::Closing:
                return;
            }
        }
    }

    void readHead(const QByteArray &head)
    {
        const HttpServer::Limits &limits = m_server->m_limits;
        QList<QByteArray> lines = head.split('\n');
        for (QByteArray &l : lines)
            if (l.endsWith('\r'))
                l.chop(1);
        const QList<QByteArray> parts = lines.takeFirst().split(' ');
        if (parts.size() != 3 || !isToken(parts[0]) || parts[1].isEmpty())
            throw Refusal{400, QStringLiteral("the request line must be METHOD TARGET HTTP/1.1")};
        const QByteArray &version = parts[2];
        if (version != "HTTP/1.1" && version != "HTTP/1.0") {
            if (version.startsWith("HTTP/"))
                throw Refusal{505, QStringLiteral("only HTTP/1.1 and HTTP/1.0 are spoken here")};
            throw Refusal{400, QStringLiteral("the request line must end with HTTP/1.1")};
        }
        if (!parts[1].startsWith('/'))
            throw Refusal{400, QStringLiteral("the request target must be a path starting with /")};
        if (std::any_of(parts[1].begin(), parts[1].end(), [](char c) { return uchar(c) <= 0x20 || uchar(c) >= 0x7f; }))
            throw Refusal{400, QStringLiteral("the request target holds characters that must be percent-encoded")};
        m_request.method = parts[0];
        m_request.target = parts[1];
        m_request.peer = m_socket->peerAddress();
        if (lines.size() > limits.maxHeaderCount)
            throw Refusal{431, QStringLiteral("more than %1 header fields").arg(limits.maxHeaderCount)};
        for (const QByteArray &line : std::as_const(lines)) {
            if (line.startsWith(' ') || line.startsWith('\t'))
                throw Refusal{400, QStringLiteral("folded header lines are not accepted")};
            const qsizetype colon = line.indexOf(':');
            const QByteArray name = colon > 0 ? line.left(colon) : QByteArray();
            if (!isToken(name))
                throw Refusal{400, QStringLiteral("a header line is not NAME: VALUE")};
            const QByteArray value = line.mid(colon + 1).trimmed();
            if (std::any_of(value.begin(), value.end(), [](char c) { return c == '\0' || c == '\r' || c == '\n'; }))
                throw Refusal{400, QStringLiteral("a header value holds a control character")};
            m_request.headers.append(qMakePair(name, value));
        }

        const qsizetype question = m_request.target.indexOf('?');
        const QByteArray rawPath = question < 0 ? m_request.target : m_request.target.left(question);
        m_request.path = QUrl::fromPercentEncoding(rawPath);
        if (question >= 0) {
            QByteArray rawQuery = m_request.target.mid(question + 1);
            rawQuery.replace('+', "%20"); // form encoding, as URLSearchParams writes it
            m_request.query = QUrlQuery(QString::fromLatin1(rawQuery));
        }

        const bool http11 = version == "HTTP/1.1";
        const QList<QByteArray> connection = m_request.header("Connection").toLower().split(',');
        const auto has = [&](const char *token) {
            return std::any_of(connection.begin(), connection.end(), [&](const QByteArray &t) { return t.trimmed() == token; });
        };
        m_keepAlive = http11 ? !has("close") : has("keep-alive");
        if (http11 && !m_request.hasHeader("Host"))
            throw Refusal{400, QStringLiteral("an HTTP/1.1 request needs a Host header")};

        // The body: chunked, or Content-Length, never both (a request smuggling vector).
        const QByteArray coding = m_request.header("Transfer-Encoding").toLower().trimmed();
        QByteArray lengthText;
        for (const auto &h : std::as_const(m_request.headers)) {
            if (h.first.compare("Content-Length", Qt::CaseInsensitive) != 0)
                continue;
            if (!lengthText.isNull() && lengthText != h.second.trimmed())
                throw Refusal{400, QStringLiteral("the request has two different Content-Length headers")};
            lengthText = h.second.trimmed();
        }
        if (!coding.isEmpty() && !lengthText.isNull())
            throw Refusal{400, QStringLiteral("the request has both Transfer-Encoding and Content-Length")};
        if (!coding.isEmpty() && coding != "chunked")
            throw Refusal{501, QStringLiteral("the transfer coding \"%1\" is not supported; send the body with Content-Length or chunked")
                                   .arg(QString::fromLatin1(coding))};
        qint64 length = 0;
        if (!lengthText.isNull()) {
            bool ok = !lengthText.isEmpty() && std::all_of(lengthText.begin(), lengthText.end(), [](char c) { return c >= '0' && c <= '9'; });
            length = ok && lengthText.size() <= 18 ? lengthText.toLongLong(&ok) : -1;
            if (!ok || length < 0)
                throw Refusal{400, QStringLiteral("Content-Length is not a number")};
            if (length > limits.maxBodyBytes)
                throw Refusal{413, QStringLiteral("the body (%1 bytes) is larger than the limit of %2 bytes").arg(length).arg(limits.maxBodyBytes)};
        }
        const QByteArray expect = m_request.header("Expect").toLower();
        if (!expect.isEmpty() && expect != "100-continue")
            throw Refusal{417, QStringLiteral("the expectation \"%1\" cannot be met").arg(QString::fromLatin1(expect))};
        const bool chunked = coding == "chunked";
        if (expect == "100-continue" && (chunked || length > 0) && http11)
            m_socket->write("HTTP/1.1 100 Continue\r\n\r\n");
        if (chunked) {
            m_state = State::ChunkSize;
        } else if (length > 0) {
            m_remaining = length;
            m_state = State::Body;
        } else {
            dispatch();
        }
    }

    void dispatch()
    {
        m_state = State::Handling;
        m_timer.stop();
        m_started = false;
        const quint64 serial = ++m_serial;
        const quint64 id = m_id;
        auto mailbox = m_server->m_mailbox;
        auto used = std::make_shared<std::atomic_bool>(false);
        const Respond respond = [mailbox, id, serial, used](HttpServerResponse response) {
            if (used->exchange(true))
                return;
            QMutexLocker lock(&mailbox->mutex);
            if (!mailbox->server)
                return;
            HttpServer *server = mailbox->server;
            QMetaObject::invokeMethod(
                server, [server, id, serial, response] { server->deliver(id, serial, response); }, Qt::QueuedConnection);
        };
        try {
            m_server->m_handler(m_request, respond);
        } catch (const std::exception &e) {
            respond(HttpServerResponse::error(500, QStringLiteral("internal"), QString::fromUtf8(e.what())));
        }
    }

    void write(const HttpServerResponse &response, bool headOnly)
    {
        QByteArray out = "HTTP/1.1 " + QByteArray::number(response.status) + ' ' + reasonOf(response.status) + "\r\n";
        out += "Date: " + httpDate() + "\r\n";
        out += "Server: mneme/" MNEME_VERSION_STR "\r\n";
        bool hasType = false;
        for (const auto &h : response.headers) {
            hasType = hasType || h.first.compare("Content-Type", Qt::CaseInsensitive) == 0;
            out += h.first + ": " + h.second + "\r\n";
        }
        if (!hasType && !response.body.isEmpty())
            out += "Content-Type: application/octet-stream\r\n";
        if (response.status != 204 && response.status >= 200)
            out += "Content-Length: " + QByteArray::number(response.body.size()) + "\r\n";
        out += "Cache-Control: no-store\r\n";
        out += m_keepAlive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
        out += "\r\n";
        if (!headOnly && response.status != 204)
            out += response.body;
        m_socket->write(out);
    }

    void refuse(int status, const QString &message)
    {
        if (m_state == State::Closing)
            return;
        m_keepAlive = false;
        m_state = State::Handling; // so that answer() writes
        const QByteArray method = m_request.method;
        m_request.method = "GET";
        write(HttpServerResponse::error(status, QStringLiteral("bad_request"), message), false);
        Q_EMIT m_server->requestFinished(method, m_request.path, status, m_started ? double(m_clock.nsecsElapsed()) / 1e6 : 0);
        close();
    }

    void close()
    {
        m_state = State::Closing;
        m_timer.start(5000);
        m_socket->disconnectFromHost(); // after what was written has been sent
    }

    HttpServer *m_server;
    const quint64 m_id;
    QTcpSocket *m_socket;
    QTimer m_timer;
    QByteArray m_buffer;
    State m_state = State::Head;
    HttpServerRequest m_request;
    qint64 m_remaining = 0;
    bool m_keepAlive = true;
    bool m_started = false;
    quint64 m_serial = 0;
    QElapsedTimer m_clock;
};

// ---------------------------------------------------------------------------------------------
// HttpServer

HttpServer::HttpServer(const Limits &limits, Handler handler, QObject *parent)
    : QObject(parent), m_limits(limits), m_handler(std::move(handler)), m_mailbox(std::make_shared<Mailbox>())
{
    m_mailbox->server = this;
    m_listener = new QTcpServer(this);
    m_listener->setMaxPendingConnections(128);
    connect(m_listener, &QTcpServer::newConnection, this, &HttpServer::accept);
}

HttpServer::~HttpServer()
{
    QMutexLocker lock(&m_mailbox->mutex);
    m_mailbox->server = nullptr;
}

void HttpServer::listen(const QHostAddress &address, quint16 port)
{
    if (!m_listener->listen(address, port))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("cannot listen on %1 port %2: %3; choose another address or port with --listen HOST:PORT")
                        .arg(address.toString())
                        .arg(port)
                        .arg(m_listener->errorString()));
}

QHostAddress HttpServer::address() const
{
    return m_listener->serverAddress();
}

quint16 HttpServer::port() const
{
    return m_listener->serverPort();
}

void HttpServer::accept()
{
    while (QTcpSocket *socket = m_listener->nextPendingConnection()) {
        if (int(m_connections.size()) >= m_limits.maxConnections) {
            const QByteArray body = R"({"error":{"kind":"unavailable","message":"too many connections; retry in a moment"}})";
            socket->write("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
                          "Retry-After: 1\r\nContent-Length: "
                          + QByteArray::number(body.size()) + "\r\n\r\n" + body);
            socket->disconnectFromHost();
            connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
            continue;
        }
        const quint64 id = m_nextConnection++;
        m_connections.insert(id, new Connection(this, id, socket));
    }
}

void HttpServer::closed(quint64 id)
{
    if (Connection *c = m_connections.take(id))
        c->deleteLater();
}

void HttpServer::deliver(quint64 connection, quint64 serial, const HttpServerResponse &response)
{
    Connection *c = m_connections.value(connection);
    if (c && c->serial() == serial)
        c->answer(response);
}

} // namespace mneme::cli
