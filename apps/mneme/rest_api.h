#pragma once

#include "http_access.h"
#include "http_server.h"

#include <mneme/core/json.h>

#include <QByteArray>
#include <QString>
#include <functional>
#include <vector>

class QThreadPool;

namespace mneme {
class Memory;
}

namespace mneme::cli {

class MemoryOperations;

// `mneme serve`: the operations of the command line as JSON endpoints under /v1, answering with the
// JSON the command prints with --json (docs/rest.md, and the OpenAPI document at /openapi.json).
// Every request is for one source, named by the query parameter "source" (none: public records only);
// what it sees and changes goes through a SourceView of that source. Requests are checked by
// HttpAccess first (token, origin); the memory's work runs on `pool`, so many clients are served at
// once. Errors are {"error": {"kind", "message"}} with a status for their kind: 400 invalid_argument,
// 404 not_found, 403 permission_denied / read_only_store, 502 for a provider (LLM, embedder), 504
// timeout, 500 otherwise.
class RestApi
{
public:
    RestApi(Memory &memory, QThreadPool *pool, HttpAccess access, QString baseUrl);

    void handle(const HttpServerRequest &request, const HttpServer::Respond &respond);

    // The OpenAPI 3.1 document as shipped (share/mneme/openapi.json); served with its "servers" set to
    // this server's URL.
    static QByteArray openApiDocument();
    // "GET /v1/memories/{id}", ... : every route, for the check that the document describes them all.
    static QStringList routes();

private:
    struct Route;
    static const std::vector<Route> &table();
    void run(const Route &route, const HttpServerRequest &request, const QString &id, const HttpServer::Respond &respond);

    Memory &m_memory;
    QThreadPool *m_pool;
    HttpAccess m_access;
    QString m_baseUrl;
};

} // namespace mneme::cli
