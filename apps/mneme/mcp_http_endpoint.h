#pragma once

#include "http_access.h"
#include "http_server.h"

#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QPointer>
#include <QTimer>

class QThreadPool;

namespace mneme::cli {

class McpCatalog;
class McpSession;

// `mneme mcp --listen HOST:PORT`: MCP's streamable HTTP transport at the path /mcp. A POST carries
// one JSON-RPC message (a batch in a 2025-03-26 session) and is answered with application/json: the
// response to a request, or 202 Accepted with no body for a notification or response. initialize
// opens a session whose id comes back in Mcp-Session-Id; every later request must carry it (400
// without, 404 for one that ended). DELETE ends a session; GET is answered 405 (this server sends
// nothing unasked, so it offers no stream). MCP-Protocol-Version, when sent, must be a version this
// server speaks (400 otherwise). Requests are checked by HttpAccess first (token, origin).
//
// At most 1000 sessions at once (503 beyond); a session unused for 30 minutes ends.
class McpHttpEndpoint : public QObject
{
    Q_OBJECT
public:
    static constexpr int kMaxSessions = 1000;
    static constexpr int kSessionIdleMs = 30 * 60 * 1000;

    McpHttpEndpoint(McpCatalog &catalog, QThreadPool *pool, HttpAccess access, QObject *parent = nullptr);
    ~McpHttpEndpoint() override;

    void handle(const HttpServerRequest &request, const HttpServer::Respond &respond);
    int sessionCount() const { return int(m_sessions.size()); }

private:
    struct Session
    {
        McpSession *session = nullptr;
        QElapsedTimer used;
    };

    void post(const HttpServerRequest &request, const HttpServer::Respond &respond);
    void end(const HttpServerRequest &request, const HttpServer::Respond &respond);
    void expire();

    McpCatalog &m_catalog;
    QThreadPool *m_pool;
    HttpAccess m_access;
    QHash<QByteArray, Session> m_sessions;
    QTimer m_sweep;
};

} // namespace mneme::cli
