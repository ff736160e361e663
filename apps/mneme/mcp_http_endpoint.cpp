#include "mcp_http_endpoint.h"

#include "mcp_session.h"

#include "runtime/json_rpc_p.h"
#include "runtime/mcp_protocol_p.h"

#include <QUuid>

namespace mneme::cli {

namespace {

// An HTTP error whose body is a JSON-RPC error without id, as the transport suggests.
HttpServerResponse rpcError(int status, int code, const QString &message)
{
    return HttpServerResponse::json(status, JsonRpc::error(Json(), code, message));
}

QByteArray mediaType(const QByteArray &header)
{
    return header.split(';').front().trimmed().toLower();
}

bool acceptsJson(const QByteArray &accept)
{
    if (accept.trimmed().isEmpty())
        return true;
    for (const QByteArray &part : accept.split(',')) {
        const QByteArray type = mediaType(part);
        if (type == "application/json" || type == "application/*" || type == "*/*")
            return true;
    }
    return false;
}

} // namespace

McpHttpEndpoint::McpHttpEndpoint(McpCatalog &catalog, QThreadPool *pool, HttpAccess access, QObject *parent)
    : QObject(parent), m_catalog(catalog), m_pool(pool), m_access(std::move(access))
{
    connect(&m_sweep, &QTimer::timeout, this, &McpHttpEndpoint::expire);
    m_sweep.start(60 * 1000);
}

McpHttpEndpoint::~McpHttpEndpoint()
{
    for (const Session &s : std::as_const(m_sessions))
        delete s.session;
}

void McpHttpEndpoint::handle(const HttpServerRequest &request, const HttpServer::Respond &respond)
{
    if (request.path != QLatin1String("/mcp")) {
        respond(HttpServerResponse::error(404, QStringLiteral("not_found"),
                                          QStringLiteral("there is nothing at %1; the MCP endpoint is /mcp").arg(request.path.left(200))));
        return;
    }
    if (const std::optional<HttpServerResponse> refused = m_access.check(request)) {
        respond(*refused);
        return;
    }
    if (request.method == "POST") {
        post(request, respond);
    } else if (request.method == "DELETE") {
        end(request, respond);
    } else {
        // No stream for server-initiated messages: this server sends none.
        HttpServerResponse r = HttpServerResponse::error(405, QStringLiteral("method_not_allowed"),
                                                         QStringLiteral("%1 is not served at /mcp; POST JSON-RPC messages, DELETE to end a session")
                                                             .arg(QString::fromLatin1(request.method.left(20))));
        r.headers.append(qMakePair(QByteArray("Allow"), QByteArray("POST, DELETE")));
        respond(r);
    }
}

void McpHttpEndpoint::post(const HttpServerRequest &request, const HttpServer::Respond &respond)
{
    if (mediaType(request.header("Content-Type")) != "application/json") {
        respond(rpcError(415, JsonRpc::InvalidRequest, QStringLiteral("send the JSON-RPC message with Content-Type: application/json")));
        return;
    }
    if (!acceptsJson(request.header("Accept"))) {
        respond(rpcError(406, JsonRpc::InvalidRequest,
                         QStringLiteral("this server answers with application/json; list it in the Accept header")));
        return;
    }
    const QByteArray version = request.header(Mcp::kVersionHeader);
    if (!version.isEmpty() && !Mcp::isSupportedVersion(QString::fromLatin1(version))) {
        respond(rpcError(400, JsonRpc::InvalidRequest,
                         QStringLiteral("Unsupported MCP-Protocol-Version \"%1\"; this server speaks %2")
                             .arg(QString::fromLatin1(version.left(40)), Mcp::supportedVersions().join(QStringLiteral(", ")))));
        return;
    }
    Json message;
    if (const QString problem = readJson(std::string_view(request.body.constData(), std::size_t(request.body.size())), &message); !problem.isEmpty()) {
        respond(rpcError(400, JsonRpc::ParseError, QStringLiteral("Parse error: the body is not JSON (%1)").arg(problem)));
        return;
    }

    const bool initializing = message.is_object() && message.value("method", Json()) == "initialize" && message.contains("id");
    if (initializing) {
        if (m_sessions.size() >= kMaxSessions) {
            respond(rpcError(503, JsonRpc::InternalError,
                             QStringLiteral("this server has %1 sessions open, its limit; end one with DELETE or retry later").arg(kMaxSessions)));
            return;
        }
        auto *session = new McpSession(m_catalog, m_pool);
        // A random version 4 UUID (from the system's secure generator): visible ASCII, as the transport asks.
        const QByteArray id = QUuid::createUuid().toByteArray(QUuid::WithoutBraces);
        QPointer<McpHttpEndpoint> self(this);
        session->receive(message, [self, session, id, respond](const Json &answer) {
            const bool opened = answer.is_object() && answer.contains("result");
            if (!self || !opened) {
                session->deleteLater();
                respond(HttpServerResponse::json(200, answer));
                return;
            }
            Session s;
            s.session = session;
            s.used.start();
            self->m_sessions.insert(id, s);
            HttpServerResponse r = HttpServerResponse::json(200, answer);
            r.headers.append(qMakePair(QByteArray(Mcp::kSessionHeader), id));
            respond(r);
        });
        return;
    }

    const QByteArray id = request.header(Mcp::kSessionHeader);
    if (id.isEmpty()) {
        respond(rpcError(400, JsonRpc::InvalidRequest,
                         QStringLiteral("Bad Request: the Mcp-Session-Id header is missing; send initialize first and then the "
                                        "session id it returned with every request")));
        return;
    }
    const auto it = m_sessions.find(id);
    if (it == m_sessions.end()) {
        respond(rpcError(404, JsonRpc::InvalidRequest,
                         QStringLiteral("Session not found: it ended (DELETE, 30 minutes unused, or a restart of the "
                                        "server); initialize a new one")));
        return;
    }
    it->used.restart();
    it->session->receive(message, [respond](const Json &answer) {
        respond(answer.is_null() ? HttpServerResponse::empty(202) : HttpServerResponse::json(200, answer));
    });
}

void McpHttpEndpoint::end(const HttpServerRequest &request, const HttpServer::Respond &respond)
{
    const QByteArray id = request.header(Mcp::kSessionHeader);
    if (id.isEmpty()) {
        respond(rpcError(400, JsonRpc::InvalidRequest, QStringLiteral("Bad Request: DELETE needs the Mcp-Session-Id header of the session to end")));
        return;
    }
    const auto it = m_sessions.find(id);
    if (it == m_sessions.end()) {
        respond(rpcError(404, JsonRpc::InvalidRequest, QStringLiteral("Session not found: it has ended already")));
        return;
    }
    McpSession *session = it->session;
    m_sessions.erase(it);
    session->deleteLater(); // requests it still runs are answered with an error
    respond(HttpServerResponse::empty(204));
}

void McpHttpEndpoint::expire()
{
    for (auto it = m_sessions.begin(); it != m_sessions.end();) {
        if (it->used.elapsed() > kSessionIdleMs && it->session->pending() == 0) {
            it->session->deleteLater();
            it = m_sessions.erase(it);
        } else {
            ++it;
        }
    }
}

} // namespace mneme::cli
