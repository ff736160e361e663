#include "mcp_session.h"

#include "mcp_catalog.h"

#include "runtime/json_rpc_p.h"
#include "runtime/mcp_protocol_p.h"
#include <mneme/core/error.h>
#include <mneme/core/version.h>

#include <QFutureWatcher>
#include <QThreadPool>
#include <QtConcurrent>

namespace mneme::cli {

using JsonRpc::Message;

McpSession::McpSession(McpCatalog &catalog, QThreadPool *pool, QObject *parent) : QObject(parent), m_catalog(catalog), m_pool(pool) {}

McpSession::~McpSession()
{
    for (auto it = m_running.begin(); it != m_running.end(); ++it)
        if (!it.value()->cancelled)
            it.value()->reply(JsonRpc::error(it.value()->id, JsonRpc::InternalError,
                                             QStringLiteral("the session ended before the request was answered")));
}

void McpSession::receive(const QByteArray &text, Reply reply)
{
    Json message;
    if (const QString problem = readJson(std::string_view(text.constData(), std::size_t(text.size())), &message); !problem.isEmpty()) {
        reply(JsonRpc::error(Json(), JsonRpc::ParseError,
                             QStringLiteral("Parse error: the message is not JSON (%1); send one JSON-RPC 2.0 object per message").arg(problem)));
        return;
    }
    receive(message, std::move(reply));
}

void McpSession::receive(const Json &message, Reply reply)
{
    if (message.is_array())
        receiveBatch(message, std::move(reply));
    else
        receiveOne(message, std::move(reply));
}

void McpSession::receiveBatch(const Json &batch, Reply reply)
{
    if (!Mcp::allowsBatches(m_version)) {
        reply(JsonRpc::error(Json(), JsonRpc::InvalidRequest,
                             QStringLiteral("JSON-RPC batches are part of MCP 2025-03-26 only, and this session speaks %1; "
                                            "send one message at a time")
                                 .arg(m_version.isEmpty() ? QStringLiteral("no version yet (initialize first)") : m_version)));
        return;
    }
    if (batch.empty()) {
        reply(JsonRpc::error(Json(), JsonRpc::InvalidRequest, QStringLiteral("an empty batch holds no message")));
        return;
    }
    // Each element is answered on its own; the batch's answer is the array of those there are.
    struct Collect
    {
        Json answers = Json::array();
        size_t left = 0;
    };
    auto collect = std::make_shared<Collect>();
    collect->left = batch.size();
    for (const Json &m : batch)
        receiveOne(m, [collect, reply](const Json &answer) {
            if (!answer.is_null())
                collect->answers.push_back(answer);
            if (--collect->left == 0)
                reply(collect->answers.empty() ? Json() : collect->answers);
        });
}

void McpSession::receiveOne(const Json &message, Reply reply)
{
    const Message m = JsonRpc::classify(message);
    switch (m.kind) {
    case Message::Kind::Invalid:
        reply(JsonRpc::error(m.id, JsonRpc::InvalidRequest, QStringLiteral("Invalid Request: %1").arg(m.problem)));
        return;
    case Message::Kind::Notification:
        notification(m);
        reply(Json());
        return;
    case Message::Kind::Response:
        reply(Json()); // this server sends no requests, so there is nothing to match
        return;
    case Message::Kind::Request:
        request(m, std::move(reply));
        return;
    }
}

void McpSession::notification(const Message &m)
{
    if (m.method != QLatin1String("notifications/cancelled") || !m.params.is_object())
        return; // notifications/initialized, and any this server has no use for
    const Json id = m.params.value("requestId", Json());
    const auto it = m_running.find(JsonRpc::idKey(id));
    if (it != m_running.end() && !it.value()->cancelled) {
        // The work cannot be stopped halfway (a save is one transaction); its answer is dropped.
        it.value()->cancelled = true;
        it.value()->reply(Json());
    }
}

Json McpSession::initialize(const Json &params)
{
    if (!params.is_object() || !params.contains("protocolVersion") || !params["protocolVersion"].is_string())
        throw McpProtocolError{JsonRpc::InvalidParams,
                               QStringLiteral("initialize needs params {\"protocolVersion\", \"capabilities\", \"clientInfo\"}"), Json()};
    const QString asked = QString::fromStdString(params["protocolVersion"].get<std::string>());
    // The client's version when this server speaks it, else the newest (the client then decides).
    m_version = Mcp::isSupportedVersion(asked) ? asked : QString::fromLatin1(Mcp::kLatestVersion);
    return Json{{"protocolVersion", m_version.toStdString()},
                {"capabilities", {{"tools", {{"listChanged", false}}}, {"resources", {{"subscribe", false}, {"listChanged", false}}}}},
                {"serverInfo", {{"name", "mneme"}, {"title", "Mneme memory"}, {"version", MNEME_VERSION_STR}}},
                {"instructions", McpCatalog::instructions().toStdString()}};
}

void McpSession::request(const Message &m, Reply reply)
{
    const auto answer = [&](const std::function<Json()> &now) {
        try {
            reply(JsonRpc::result(m.id, now()));
        } catch (const McpProtocolError &e) {
            reply(JsonRpc::error(m.id, e.code, e.message, e.data));
        }
    };
    if (m.method == QLatin1String("ping")) {
        answer([] { return Json::object(); });
        return;
    }
    if (m.method == QLatin1String("initialize")) {
        if (isInitialized()) {
            reply(JsonRpc::error(m.id, JsonRpc::InvalidRequest,
                                 QStringLiteral("this session is initialized already (protocol %1); start a new connection to "
                                                "initialize again")
                                     .arg(m_version)));
            return;
        }
        answer([&] { return initialize(m.params); });
        return;
    }
    if (!isInitialized()) {
        reply(JsonRpc::error(m.id, JsonRpc::InvalidRequest,
                             QStringLiteral("%1 before initialize: send initialize first, then notifications/initialized").arg(m.method)));
        return;
    }
    if (m_running.contains(JsonRpc::idKey(m.id))) {
        reply(JsonRpc::error(m.id, JsonRpc::InvalidRequest,
                             QStringLiteral("request id %1 is still in use by a request being answered; use a new id")
                                 .arg(QString::fromStdString(m.id.dump()))));
        return;
    }
    const QString version = m_version;
    const Json params = m.params.is_null() ? Json::object() : m.params;
    McpCatalog &catalog = m_catalog;
    if (m.method == QLatin1String("tools/list")) {
        answer([&] { return catalog.tools(version); });
    } else if (m.method == QLatin1String("resources/templates/list")) {
        answer([&] { return catalog.resourceTemplates(); });
    } else if (m.method == QLatin1String("tools/call")) {
        runLater(
            m, [&catalog, params, version] { return catalog.callTool(params, version); }, std::move(reply));
    } else if (m.method == QLatin1String("resources/list")) {
        runLater(
            m, [&catalog, params] { return catalog.resources(params); }, std::move(reply));
    } else if (m.method == QLatin1String("resources/read")) {
        runLater(
            m, [&catalog, params] { return catalog.readResource(params); }, std::move(reply));
    } else {
        reply(JsonRpc::error(m.id, JsonRpc::MethodNotFound,
                             QStringLiteral("Method not found: %1; this server offers tools and resources").arg(m.method),
                             Json{{"method", m.method.toStdString()}}));
    }
}

void McpSession::runLater(const Message &m, std::function<Json()> work, Reply reply)
{
    const QString key = JsonRpc::idKey(m.id);
    auto running = std::make_shared<Running>();
    running->id = m.id;
    running->reply = std::move(reply);
    m_running.insert(key, running);
    const Json id = m.id;
    const QFuture<Json> done = QtConcurrent::run(m_pool, [work = std::move(work), id]() -> Json {
        try {
            return JsonRpc::result(id, work());
        } catch (const McpProtocolError &e) {
            return JsonRpc::error(id, e.code, e.message, e.data);
        } catch (const std::exception &e) {
            return JsonRpc::error(id, JsonRpc::InternalError, QStringLiteral("Internal error: %1").arg(QString::fromUtf8(e.what())));
        }
    });
    auto *watch = new QFutureWatcher<Json>(this);
    connect(watch, &QFutureWatcherBase::finished, this, [this, watch, key] {
        watch->deleteLater();
        finish(key, watch->future().result());
    });
    watch->setFuture(done);
}

void McpSession::finish(const QString &key, const Json &message)
{
    const std::shared_ptr<Running> running = m_running.take(key);
    if (running && !running->cancelled)
        running->reply(message);
    if (m_running.isEmpty())
        Q_EMIT idle();
}

} // namespace mneme::cli
