#pragma once

#include <mneme/core/http_client.h>
#include <mneme/core/json.h>

#include <QByteArray>
#include <QHash>
#include <QHostAddress>
#include <QObject>
#include <QString>
#include <QUrlQuery>
#include <functional>
#include <memory>

class QTcpServer;

namespace mneme::cli {

// One request as HttpServer received it, complete with its body.
struct HttpServerRequest
{
    QByteArray method;
    QByteArray target; // as received: "/v1/memories?source=alice"
    QString path;      // percent-decoded: "/v1/memories"
    QUrlQuery query;   // percent-decoded values, '+' read as a space
    HttpHeaders headers;
    QByteArray body;
    QHostAddress peer;

    // The first header of that name, compared case-insensitively; empty when absent.
    QByteArray header(const QByteArray &name) const;
    bool hasHeader(const QByteArray &name) const;
    // A query parameter's value, or nullopt when absent.
    std::optional<QString> parameter(const QString &name) const;
};

struct HttpServerResponse
{
    int status = 200;
    HttpHeaders headers;
    QByteArray body;

    // A JSON body (Content-Type application/json).
    static HttpServerResponse json(int status, const Json &body);
    // {"error": {"kind": KIND, "message": MESSAGE}}, the shape of every error Mneme's servers send.
    static HttpServerResponse error(int status, const QString &kind, const QString &message);
    // No body (202, 204, 405 with an Allow header, ...).
    static HttpServerResponse empty(int status);
};

// An HTTP/1.1 server on Qt Network (QTcpServer), for `mneme serve` and `mneme mcp --listen`. Qt's own
// HTTP server module is not used: in Qt 6.4 (Debian 12) it is a technical preview without limits on
// body or header size, connections or idle time, which a server facing many clients needs.
//
// It reads each request whole before it hands it to the handler: Content-Length and chunked bodies
// (not both), keep-alive and pipelined requests (answered in order), "Expect: 100-continue", HEAD.
// Limits are enforced before anything is buffered beyond them: a body over maxBodyBytes is refused
// with 413 from its Content-Length (or as its chunks exceed it), a request head over maxHeaderBytes
// or maxHeaderCount with 431, a request not complete within requestTimeoutMs with 408, connections
// beyond maxConnections with 503; malformed requests get 400 (505 for another HTTP version, 501 for
// another transfer coding) and the connection is closed. Idle keep-alive connections are closed
// after idleTimeoutMs.
//
// The server lives on one thread whose event loop runs; the handler is called there and must not
// block. It answers through Respond, which may be called from any thread, once.
class HttpServer : public QObject
{
    Q_OBJECT
public:
    struct Limits
    {
        qint64 maxBodyBytes = qint64(1) << 20;
        int maxHeaderBytes = 16 * 1024; // the request line and the headers together
        int maxHeaderCount = 100;
        int maxConnections = 256;
        int requestTimeoutMs = 30000; // from a request's first byte to its last
        int idleTimeoutMs = 60000;    // a kept-alive connection waiting for its next request
    };
    using Respond = std::function<void(HttpServerResponse response)>;
    using Handler = std::function<void(const HttpServerRequest &request, Respond respond)>;

    HttpServer(const Limits &limits, Handler handler, QObject *parent = nullptr);
    ~HttpServer() override;

    // Starts listening; port 0 picks a free one. Throws Error(InvalidArgument) naming the address
    // when it cannot (in use, not an address of this host, no permission).
    void listen(const QHostAddress &address, quint16 port);
    QHostAddress address() const;
    quint16 port() const;
    int connectionCount() const { return int(m_connections.size()); }
    const Limits &limits() const { return m_limits; }

Q_SIGNALS:
    // After each response was written: for --verbose access lines.
    void requestFinished(const QByteArray &method, const QString &path, int status, double milliseconds);

private:
    class Connection;
    struct Mailbox;
    void accept();
    void closed(quint64 connection);
    void deliver(quint64 connection, quint64 serial, const HttpServerResponse &response);

    Limits m_limits;
    Handler m_handler;
    QTcpServer *m_listener = nullptr;
    QHash<quint64, Connection *> m_connections;
    quint64 m_nextConnection = 1;
    std::shared_ptr<Mailbox> m_mailbox;
};

} // namespace mneme::cli
