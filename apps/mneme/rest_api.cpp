#include "rest_api.h"

#include "memory_operations.h"
#include "source_view.h"

#include <mneme/core/error.h>
#include <mneme/core/version.h>
#include <mneme/memory/memory.h>

#include <QFile>
#include <QThreadPool>

namespace mneme::cli {

namespace {

using Operation = std::function<Json(MemoryOperations &, Json args, const QString &id)>;

int statusOf(ErrorKind kind)
{
    switch (kind) {
    case ErrorKind::InvalidArgument: return 400;
    case ErrorKind::NotFound: return 404;
    case ErrorKind::PermissionDenied:
    case ErrorKind::ReadOnlyStore: return 403;
    case ErrorKind::Timeout: return 504;
    case ErrorKind::Embedder:
    case ErrorKind::Plugin:
    case ErrorKind::Provider:
    case ErrorKind::Authentication:
    case ErrorKind::RateLimited:
    case ErrorKind::ContextLength:
    case ErrorKind::BadRequest:
    case ErrorKind::ServerError:
    case ErrorKind::Network:
    case ErrorKind::MalformedReply: return 502;
    default: return 500;
    }
}

HttpServerResponse errorResponse(const Error &e)
{
    return HttpServerResponse::error(statusOf(e.kind()), Error::kindName(e.kind()), e.message());
}

HttpServerResponse invalid(const QString &message)
{
    return HttpServerResponse::error(400, Error::kindName(ErrorKind::InvalidArgument), message);
}

// The path's segments against the pattern's: "{id}" matches any one segment, which it returns.
bool matches(const QString &pattern, const QString &path, QString *id)
{
    const QStringList want = pattern.split(QLatin1Char('/'));
    const QStringList have = path.split(QLatin1Char('/'));
    if (want.size() != have.size())
        return false;
    for (qsizetype i = 0; i < want.size(); ++i) {
        if (want[i] == QLatin1String("{id}")) {
            if (have[i].isEmpty())
                return false;
            *id = have[i];
        } else if (want[i] != have[i]) {
            return false;
        }
    }
    return true;
}

// The source a request is for: the "source" query parameter, checked.
std::optional<QString> sourceOf(const HttpServerRequest &request, QString *problem)
{
    const std::optional<QString> source = request.parameter(QStringLiteral("source"));
    if (!source)
        return QString();
    const QString s = source->trimmed();
    if (s.isEmpty() || s.size() > 200 || std::any_of(s.begin(), s.end(), [](QChar c) { return c.category() == QChar::Other_Control; })) {
        *problem = QStringLiteral("the query parameter \"source\" must be 1 to 200 printable characters (or left out for "
                                  "public records only)");
        return std::nullopt;
    }
    return s;
}

} // namespace

struct RestApi::Route
{
    QByteArray method;
    QString pattern;
    int status;     // of a success
    bool takesBody; // the arguments are the JSON body, else the query parameters
    Operation operation;
};

const std::vector<RestApi::Route> &RestApi::table()
{
    using M = MemoryOperations;
    const auto withId = [](Json args, const QString &id) {
        args["id"] = id.toStdString();
        return args;
    };
    static const std::vector<Route> routes = {
        {"POST", QStringLiteral("/v1/memories"), 201, true, [](M &o, Json a, const QString &) { return o.remember(a); }},
        {"GET", QStringLiteral("/v1/memories"), 200, false, [](M &o, Json a, const QString &) { return o.list(a); }},
        {"POST", QStringLiteral("/v1/memories/batch"), 200, true, [](M &o, Json a, const QString &) { return o.rememberMany(a); }},
        {"GET", QStringLiteral("/v1/memories/{id}"), 200, false, [withId](M &o, Json a, const QString &id) { return o.get(withId(a, id)); }},
        {"PATCH", QStringLiteral("/v1/memories/{id}"), 200, true, [withId](M &o, Json a, const QString &id) { return o.update(withId(a, id)); }},
        {"DELETE", QStringLiteral("/v1/memories/{id}"), 200, false,
         [](M &o, Json a, const QString &id) {
             a["ids"] = Json::array({id.toStdString()});
             const Json result = o.forget(a);
             if (result.value("deleted", 0) == 0)
                 SourceView::unknownId(id);
             return result;
         }},
        {"GET", QStringLiteral("/v1/memories/{id}/history"), 200, false, [withId](M &o, Json a, const QString &id) { return o.history(withId(a, id)); }},
        {"POST", QStringLiteral("/v1/memories/{id}/undo"), 200, true, [withId](M &o, Json a, const QString &id) { return o.undo(withId(a, id)); }},
        {"POST", QStringLiteral("/v1/recall"), 200, true, [](M &o, Json a, const QString &) { return o.recall(a); }},
        {"POST", QStringLiteral("/v1/forget"), 200, true, [](M &o, Json a, const QString &) { return o.forget(a); }},
        {"GET", QStringLiteral("/v1/tree"), 200, false, [](M &o, Json a, const QString &) { return o.tree(a); }},
        {"GET", QStringLiteral("/v1/info"), 200, false, [](M &o, Json a, const QString &) { return o.info(a); }},
        {"GET", QStringLiteral("/v1/scopes"), 200, false, [](M &o, Json a, const QString &) { return o.scopes(a); }},
        {"GET", QStringLiteral("/v1/categories"), 200, false, [](M &o, Json a, const QString &) { return o.categories(a); }},
        {"POST", QStringLiteral("/v1/extract"), 200, true, [](M &o, Json a, const QString &) { return o.extract(a); }},
    };
    return routes;
}

QStringList RestApi::routes()
{
    QStringList out{QStringLiteral("GET /openapi.json"), QStringLiteral("GET /v1/health")};
    for (const Route &r : table())
        out << QString::fromLatin1(r.method) + QLatin1Char(' ') + r.pattern;
    return out;
}

RestApi::RestApi(Memory &memory, QThreadPool *pool, HttpAccess access, QString baseUrl)
    : m_memory(memory), m_pool(pool), m_access(std::move(access)), m_baseUrl(std::move(baseUrl))
{
}

QByteArray RestApi::openApiDocument()
{
    QFile f(QStringLiteral(":/mneme/openapi.json"));
    if (!f.open(QIODevice::ReadOnly))
        throw Error(ErrorKind::Internal, QStringLiteral("the OpenAPI document is missing from the program"));
    return f.readAll();
}

void RestApi::handle(const HttpServerRequest &request, const HttpServer::Respond &respond)
{
    if (const std::optional<HttpServerResponse> refused = m_access.check(request)) {
        respond(*refused);
        return;
    }
    const bool get = request.method == "GET" || request.method == "HEAD";
    if (request.path == QLatin1String("/openapi.json") && get) {
        Json document = Json::parse(openApiDocument().toStdString());
        document["servers"] = Json::array({Json{{"url", m_baseUrl.toStdString()}}});
        respond(HttpServerResponse::json(200, document));
        return;
    }
    if (request.path == QLatin1String("/v1/health") && get) {
        respond(HttpServerResponse::json(200, Json{{"status", "ok"}, {"version", MNEME_VERSION_STR}}));
        return;
    }
    QStringList allowed;
    for (const Route &route : table()) {
        QString id;
        if (!matches(route.pattern, request.path, &id))
            continue;
        if (route.method == request.method || (route.method == "GET" && request.method == "HEAD")) {
            run(route, request, id, respond);
            return;
        }
        allowed << QString::fromLatin1(route.method);
    }
    if (!allowed.isEmpty()) {
        HttpServerResponse r = HttpServerResponse::error(405, QStringLiteral("method_not_allowed"),
                                                         QStringLiteral("%1 takes %2, not %3")
                                                             .arg(request.path, allowed.join(QStringLiteral(", ")), QString::fromLatin1(request.method.left(20))));
        r.headers.append(qMakePair(QByteArray("Allow"), allowed.join(QStringLiteral(", ")).toLatin1()));
        respond(r);
        return;
    }
    respond(HttpServerResponse::error(404, Error::kindName(ErrorKind::NotFound),
                                      QStringLiteral("there is no endpoint %1; the endpoints are listed at /openapi.json").arg(request.path.left(200))));
}

void RestApi::run(const Route &route, const HttpServerRequest &request, const QString &id, const HttpServer::Respond &respond)
{
    QString problem;
    const std::optional<QString> source = sourceOf(request, &problem);
    if (!source) {
        respond(invalid(problem));
        return;
    }
    Json args = Json::object();
    if (route.takesBody) {
        for (const auto &item : request.query.queryItems())
            if (item.first != QLatin1String("source")) {
                respond(invalid(QStringLiteral("%1 %2 takes its arguments in the JSON body; the only query parameter is "
                                               "\"source\" (got \"%3\")")
                                    .arg(QString::fromLatin1(route.method), route.pattern, item.first)));
                return;
            }
        if (!request.body.trimmed().isEmpty()) {
            const QByteArray type = request.header("Content-Type").split(';').front().trimmed().toLower();
            if (type != "application/json") {
                respond(HttpServerResponse::error(415, Error::kindName(ErrorKind::InvalidArgument),
                                                  QStringLiteral("send the body as JSON with Content-Type: application/json")));
                return;
            }
            const QString problem = readJson(std::string_view(request.body.constData(), std::size_t(request.body.size())), &args);
            if (!problem.isEmpty() || !args.is_object()) {
                respond(invalid(!problem.isEmpty()
                                    ? QStringLiteral("the body is not valid JSON (%1); send one JSON object of arguments").arg(problem)
                                    : QStringLiteral("the body must be a JSON object of arguments, not %1").arg(QLatin1String(args.type_name()))));
                return;
            }
        }
    } else {
        for (const auto &item : request.query.queryItems(QUrl::FullyDecoded))
            if (item.first != QLatin1String("source"))
                args[item.first.toStdString()] = item.second.toStdString();
    }
    Memory *memory = &m_memory;
    const int status = route.status;
    const Operation operation = route.operation;
    const bool stringNumbers = !route.takesBody;
    m_pool->start([memory, source = *source, args, id, operation, status, stringNumbers, respond] {
        try {
            SourceView view(*memory, source);
            MemoryOperations operations(view, stringNumbers);
            respond(HttpServerResponse::json(status, operation(operations, args, id)));
        } catch (const Error &e) {
            respond(errorResponse(e));
        } catch (const std::exception &e) {
            respond(HttpServerResponse::error(500, Error::kindName(ErrorKind::Internal), QString::fromUtf8(e.what())));
        }
    });
}

} // namespace mneme::cli
