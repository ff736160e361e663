#include <mneme/runtime/mcp_client.h>

#include "runtime/json_rpc_p.h"
#include "runtime/mcp_protocol_p.h"
#include "runtime/mcp_transport_p.h"
#include <mneme/core/error.h>
#include <mneme/core/version.h>

#include <QFutureWatcher>
#include <QHash>
#include <QMutex>
#include <QPromise>
#include <QRegularExpression>
#include <QSet>
#include <QThread>
#include <QTimer>
#include <functional>

namespace mneme {

namespace {

constexpr int kMaxToolPages = 100;

// Copies what `inner` ends with into `outer`, on `context`'s thread; cancelling `outer` cancels `inner`.
template<typename T>
void follow(QObject *context, QFuture<T> inner, const std::shared_ptr<QPromise<T>> &outer)
{
    auto *done = new QFutureWatcher<T>(context);
    QObject::connect(done, &QFutureWatcherBase::finished, context, [done, outer] {
        done->deleteLater();
        QFuture<T> f = done->future();
        try {
            f.waitForFinished();
            if (f.resultCount() > 0)
                outer->addResult(f.result());
            else
                outer->future().cancel();
        } catch (...) {
            outer->setException(std::current_exception());
        }
        outer->finish();
    });
    done->setFuture(inner);
    auto *cancel = new QFutureWatcher<T>(context);
    QObject::connect(cancel, &QFutureWatcherBase::canceled, context, [inner]() mutable { inner.cancel(); });
    QObject::connect(cancel, &QFutureWatcherBase::finished, cancel, &QObject::deleteLater);
    cancel->setFuture(outer->future());
}

QString describeContentItem(const Json &item)
{
    const std::string type = item.value("type", std::string());
    const auto str = [&](const char *key) { return QString::fromStdString(item.value(key, std::string())); };
    if (type == "text")
        return str("text");
    if (type == "image" || type == "audio")
        return QStringLiteral("[%1: %2, %3 bytes of base64]")
            .arg(QString::fromStdString(type), str("mimeType"))
            .arg(item.contains("data") && item["data"].is_string() ? item["data"].get_ref<const std::string &>().size() : 0);
    if (type == "resource_link")
        return QStringLiteral("[resource link: %1 <%2>]").arg(str("name"), str("uri"));
    if (type == "resource" && item.contains("resource") && item["resource"].is_object()) {
        const Json &r = item["resource"];
        if (r.contains("text") && r["text"].is_string())
            return QString::fromStdString(r["text"].get<std::string>());
        return QStringLiteral("[resource %1 (%2)]")
            .arg(QString::fromStdString(r.value("uri", std::string())), QString::fromStdString(r.value("mimeType", std::string())));
    }
    return QStringLiteral("[%1 content]").arg(QString::fromStdString(type.empty() ? std::string("unknown") : type));
}

// A name every LLM provider accepts for a tool: letters, digits, '_' and '-', at most 64.
QString toolNameFor(const QString &prefix, const QString &remote)
{
    QString name = prefix + remote;
    for (QChar &c : name)
        if (!(c.isLetterOrNumber() && c.unicode() < 128) && c != QLatin1Char('_') && c != QLatin1Char('-'))
            c = QLatin1Char('_');
    return name.left(64);
}

// The input schema as providers take it: an object schema without a $schema declaration.
Json parametersFor(const Json &inputSchema)
{
    Json schema = inputSchema.is_object() ? inputSchema : Json{{"type", "object"}};
    schema.erase("$schema");
    if (!schema.contains("type"))
        schema["type"] = "object";
    return schema;
}

} // namespace

// ---------------------------------------------------------------------------------------------

struct McpLink;

class McpClientPrivate
{
public:
    struct Pending
    {
        QPromise<Json> promise;
        QString what; // "tools/call \"echo\"", for messages
        QTimer *timer = nullptr;
    };

    McpClientPrivate(McpClient *client, McpServerConfig cfg) : q(client), config(std::move(cfg)) {}

    QString who() const { return QStringLiteral("The MCP server \"%1\"").arg(config.name); }
    void setState(McpClient::State s);

    QFuture<Json> send(const QString &method, const Json &params, int timeoutMs, bool internal);
    void notify(const QString &method, const Json &params = Json());
    QFuture<QString> callText(const QString &remoteName, const Json &arguments);

    void onOpened();
    void onInitialized(const Json &result);
    void listTools(const QString &cursor, std::shared_ptr<std::vector<Json>> collected, int page);
    void adoptTools(const std::vector<Json> &listed);
    void refreshTools();

    void onMessage(const Json &message);
    void answerServerRequest(const JsonRpc::Message &m);
    void onGarbage(const QString &excerpt, const Json &id);
    void onBroken(const Error &error);
    void failStart(const Error &error);
    void failRequest(const QString &key, const Error &error, bool tellServer);
    void failAll(const Error &error);
    void finishStop();
    // Calls next(result) when `f` succeeds, failStart() when it fails.
    void then(QFuture<Json> f, std::function<void(const Json &)> next);

    McpClient *q;
    McpServerConfig config;
    McpClient::State state = McpClient::State::Idle;
    McpTransport *transport = nullptr;
    std::shared_ptr<QPromise<void>> startPromise;
    std::shared_ptr<QPromise<void>> stopPromise;
    QTimer *startupTimer = nullptr;
    QString protocolVersion;
    Json serverInfo = Json::object();
    Json capabilities = Json::object();
    QString instructions;
    qint64 nextId = 1;
    QHash<QString, std::shared_ptr<Pending>> pending;
    std::vector<std::shared_ptr<Tool>> tools;
    std::shared_ptr<McpLink> link;
    bool listing = false;
};

// How the tools reach their client: cleared when the client is destroyed, so a tool kept beyond it
// fails cleanly. The mutex orders a tool's call against that.
struct McpLink
{
    QMutex mutex;
    McpClientPrivate *client = nullptr;
    QString serverName;
};

namespace {

class McpTool : public Tool
{
public:
    McpTool(std::shared_ptr<McpLink> link, QString name, QString remoteName, QString description, Json schema)
        : m_link(std::move(link)), m_name(std::move(name)), m_remote(std::move(remoteName)),
          m_description(std::move(description)), m_schema(std::move(schema))
    {
    }

    QString name() const override { return m_name; }
    QString description() const override { return m_description; }
    Json parametersSchema() const override { return m_schema; }

    QFuture<QString> run(const Json &arguments) override
    {
        QMutexLocker lock(&m_link->mutex);
        if (!m_link->client)
            return QtFuture::makeExceptionalFuture<QString>(
                Error(ErrorKind::Cancelled, QStringLiteral("the MCP server \"%1\" is no longer connected, so its tool %2 "
                                                           "cannot be called")
                                                .arg(m_link->serverName, m_remote)));
        return m_link->client->callText(m_remote, arguments.is_object() ? arguments : Json::object());
    }

private:
    std::shared_ptr<McpLink> m_link;
    QString m_name;
    QString m_remote;
    QString m_description;
    Json m_schema;
};

} // namespace

void McpClientPrivate::setState(McpClient::State s)
{
    if (state == s)
        return;
    state = s;
    Q_EMIT q->stateChanged(s);
}

QFuture<Json> McpClientPrivate::send(const QString &method, const Json &params, int timeoutMs, bool internal)
{
    const bool usable = state == McpClient::State::Ready || (internal && state == McpClient::State::Starting);
    if (!usable || !transport) {
        const QString why = state == McpClient::State::Idle     ? QStringLiteral("has not been started (call start() first)")
                          : state == McpClient::State::Starting ? QStringLiteral("is still starting")
                                                                : QStringLiteral("has stopped");
        return QtFuture::makeExceptionalFuture<Json>(
            Error(ErrorKind::Cancelled, QStringLiteral("%1 %2, so %3 was not sent.").arg(who(), why, method)));
    }
    const Json id = nextId++;
    const QString key = JsonRpc::idKey(id);
    auto p = std::make_shared<Pending>();
    p->what = method;
    if (method == QLatin1String("tools/call") && params.contains("name") && params["name"].is_string())
        p->what = QStringLiteral("tools/call of \"%1\"").arg(QString::fromStdString(params["name"].get<std::string>()));
    p->promise.start();
    const int ms = timeoutMs < 0 ? config.requestTimeoutMs : timeoutMs;
    p->timer = new QTimer(q);
    p->timer->setSingleShot(true);
    QObject::connect(p->timer, &QTimer::timeout, q, [this, key, ms] {
        const auto it = pending.constFind(key);
        if (it == pending.constEnd())
            return;
        failRequest(key,
                    Error(ErrorKind::Timeout,
                          QStringLiteral("%1 did not answer %2 within %3 s; it was told to cancel the request. Raise "
                                         "request_timeout_ms if it needs longer.")
                              .arg(who(), (*it)->what)
                              .arg(ms / 1000.0)),
                    true);
    });
    p->timer->start(ms);
    // A caller that stops waiting (future.cancel()) cancels the request at the server too.
    auto *watch = new QFutureWatcher<Json>(q);
    QObject::connect(watch, &QFutureWatcherBase::canceled, q, [this, key] {
        if (pending.contains(key))
            failRequest(key, Error(ErrorKind::Cancelled, QStringLiteral("cancelled by the caller")), true);
    });
    QObject::connect(watch, &QFutureWatcherBase::finished, watch, &QObject::deleteLater);
    QFuture<Json> future = p->promise.future();
    watch->setFuture(future);
    pending.insert(key, p);
    transport->send(JsonRpc::request(id, method, params.is_null() ? Json::object() : params));
    return future;
}

void McpClientPrivate::notify(const QString &method, const Json &params)
{
    if (transport)
        transport->send(JsonRpc::notification(method, params));
}

void McpClientPrivate::failRequest(const QString &key, const Error &error, bool tellServer)
{
    const std::shared_ptr<Pending> p = pending.take(key);
    if (!p)
        return;
    delete p->timer;
    if (tellServer) {
        const QString raw = key.mid(2);
        notify(QStringLiteral("notifications/cancelled"),
               Json{{"requestId", key.startsWith(QLatin1String("n:")) ? Json::parse(raw.toStdString()) : Json(raw.toStdString())},
                    {"reason", error.message().toStdString()}});
    }
    if (!p->promise.isCanceled())
        p->promise.setException(error);
    p->promise.finish();
}

void McpClientPrivate::failAll(const Error &error)
{
    for (const QString &key : pending.keys())
        failRequest(key, error, false);
}

QFuture<QString> McpClientPrivate::callText(const QString &remoteName, const Json &arguments)
{
    auto out = std::make_shared<QPromise<QString>>();
    out->start();
    QFuture<QString> future = out->future();
    const QString server = config.name;
    // Everything happens on the client's thread; the caller may be anywhere. When the client is gone
    // before this runs, the promise is destroyed unfinished, which cancels the caller's future.
    QMetaObject::invokeMethod(
        q,
        [this, out, remoteName, arguments, server] {
            if (out->isCanceled()) {
                out->finish();
                return;
            }
            QFuture<Json> call = send(QStringLiteral("tools/call"),
                                      Json{{"name", remoteName.toStdString()}, {"arguments", arguments}}, -1, false);
            auto *watch = new QFutureWatcher<Json>(q);
            QObject::connect(watch, &QFutureWatcherBase::finished, q, [watch, out, remoteName, server] {
                watch->deleteLater();
                QFuture<Json> f = watch->future();
                try {
                    f.waitForFinished();
                    if (f.resultCount() == 0) {
                        out->future().cancel();
                    } else {
                        const Json result = f.result();
                        const QString body = McpClient::resultText(result);
                        if (result.value("isError", false) == true)
                            throw Error(ErrorKind::Provider,
                                        QStringLiteral("the tool %1 of MCP server \"%2\" reported an error: %3")
                                            .arg(remoteName, server, body.isEmpty() ? QStringLiteral("(no message)") : body));
                        out->addResult(body);
                    }
                } catch (...) {
                    out->setException(std::current_exception());
                }
                out->finish();
            });
            watch->setFuture(call);
            // The agent stopped waiting (its tool timeout, a cancelled kickoff): the server is told.
            auto *cancel = new QFutureWatcher<QString>(q);
            QObject::connect(cancel, &QFutureWatcherBase::canceled, q, [call]() mutable { call.cancel(); });
            QObject::connect(cancel, &QFutureWatcherBase::finished, cancel, &QObject::deleteLater);
            cancel->setFuture(out->future());
        },
        Qt::QueuedConnection);
    return future;
}

void McpClientPrivate::then(QFuture<Json> f, std::function<void(const Json &)> next)
{
    auto *watch = new QFutureWatcher<Json>(q);
    QObject::connect(watch, &QFutureWatcherBase::finished, q, [this, watch, next] {
        watch->deleteLater();
        if (state != McpClient::State::Starting)
            return;
        QFuture<Json> done = watch->future();
        try {
            done.waitForFinished();
            if (done.resultCount() == 0)
                throw Error(ErrorKind::Cancelled, QStringLiteral("%1: the start was cancelled").arg(who()));
            next(done.result());
        } catch (const Error &e) {
            failStart(e);
        } catch (const std::exception &e) {
            failStart(Error(ErrorKind::MalformedReply, QStringLiteral("%1 answered in an unexpected shape: %2")
                                                           .arg(who(), QString::fromUtf8(e.what()))));
        }
    });
    watch->setFuture(f);
}

void McpClientPrivate::onOpened()
{
    if (state != McpClient::State::Starting)
        return;
    const Json params{{"protocolVersion", Mcp::kLatestVersion},
                      {"capabilities", Json::object()},
                      {"clientInfo", {{"name", "mneme"}, {"title", "Mneme"}, {"version", MNEME_VERSION_STR}}}};
    then(send(QStringLiteral("initialize"), params, config.startupTimeoutMs, true), [this](const Json &r) { onInitialized(r); });
}

void McpClientPrivate::onInitialized(const Json &result)
{
    if (!result.is_object() || !result.contains("protocolVersion") || !result["protocolVersion"].is_string())
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1 answered initialize without a protocolVersion: %2")
                        .arg(who(), QString::fromStdString(result.dump()).left(300)));
    const QString version = QString::fromStdString(result["protocolVersion"].get<std::string>());
    if (!Mcp::isSupportedVersion(version))
        throw Error(ErrorKind::Provider,
                    QStringLiteral("%1 speaks MCP protocol version %2, which Mneme does not (it speaks %3)")
                        .arg(who(), version, Mcp::supportedVersions().join(QStringLiteral(", "))));
    protocolVersion = version;
    capabilities = result.value("capabilities", Json::object());
    serverInfo = result.value("serverInfo", Json::object());
    instructions = QString::fromStdString(result.value("instructions", std::string()));
    transport->setProtocolVersion(version);
    notify(QStringLiteral("notifications/initialized"));
    if (!capabilities.is_object() || !capabilities.contains("tools")) {
        adoptTools({});
        return;
    }
    listTools(QString(), std::make_shared<std::vector<Json>>(), 1);
}

void McpClientPrivate::listTools(const QString &cursor, std::shared_ptr<std::vector<Json>> collected, int page)
{
    Json params = Json::object();
    if (!cursor.isEmpty())
        params["cursor"] = cursor.toStdString();
    const bool starting = state == McpClient::State::Starting;
    QFuture<Json> f = send(QStringLiteral("tools/list"), params, starting ? config.startupTimeoutMs : -1, starting);
    const auto next = [this, collected, page](const Json &r) {
        if (!r.is_object() || !r.contains("tools") || !r["tools"].is_array())
            throw Error(ErrorKind::MalformedReply, QStringLiteral("%1 answered tools/list without a list of tools: %2")
                                                       .arg(who(), QString::fromStdString(r.dump()).left(300)));
        for (const Json &t : r["tools"])
            collected->push_back(t);
        const std::string more = r.value("nextCursor", std::string());
        if (!more.empty() && page < kMaxToolPages) {
            listTools(QString::fromStdString(more), collected, page + 1);
            return;
        }
        adoptTools(*collected);
    };
    if (starting) {
        then(f, next);
        return;
    }
    // A refresh after notifications/tools/list_changed: a failure keeps the tools there were.
    auto *watch = new QFutureWatcher<Json>(q);
    QObject::connect(watch, &QFutureWatcherBase::finished, q, [this, watch, next] {
        watch->deleteLater();
        listing = false;
        try {
            QFuture<Json> f = watch->future();
            f.waitForFinished();
            if (f.resultCount() > 0 && state == McpClient::State::Ready)
                next(f.result());
        } catch (const std::exception &e) {
            Q_EMIT q->logMessage(QStringLiteral("refreshing the tool list failed: %1").arg(QString::fromUtf8(e.what())));
        }
    });
    watch->setFuture(f);
}

void McpClientPrivate::adoptTools(const std::vector<Json> &listed)
{
    std::vector<std::shared_ptr<Tool>> built;
    QSet<QString> names;
    QStringList offered;
    for (const Json &t : listed) {
        if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || t["name"].get_ref<const std::string &>().empty())
            throw Error(ErrorKind::MalformedReply, QStringLiteral("%1 listed a tool without a name: %2")
                                                       .arg(who(), QString::fromStdString(t.dump()).left(300)));
        const QString remote = QString::fromStdString(t["name"].get<std::string>());
        offered << remote;
        if (!config.tools.isEmpty() && !config.tools.contains(remote))
            continue;
        const QString name = toolNameFor(config.toolPrefix, remote);
        if (names.contains(name))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("%1 has two tools that are both called \"%2\" here; choose the ones you want with "
                                       "\"tools\"")
                            .arg(who(), name));
        names.insert(name);
        QString description = QString::fromStdString(t.value("description", std::string()));
        if (description.trimmed().isEmpty())
            description = QString::fromStdString(t.value("title", remote.toStdString()));
        built.push_back(std::make_shared<McpTool>(link, name, remote, description, parametersFor(t.value("inputSchema", Json()))));
    }
    for (const QString &wanted : config.tools)
        if (!offered.contains(wanted))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("%1 has no tool \"%2\" (it offers: %3); fix the \"tools\" list of its configuration")
                            .arg(who(), wanted, offered.isEmpty() ? QStringLiteral("none") : offered.join(QStringLiteral(", "))));
    tools = std::move(built);
    if (state == McpClient::State::Starting) {
        if (startupTimer)
            startupTimer->stop();
        setState(McpClient::State::Ready);
        startPromise->finish();
    } else {
        Q_EMIT q->toolsChanged();
    }
}

void McpClientPrivate::refreshTools()
{
    if (state != McpClient::State::Ready || listing)
        return;
    listing = true;
    listTools(QString(), std::make_shared<std::vector<Json>>(), 1);
}

void McpClientPrivate::onMessage(const Json &message)
{
    if (state == McpClient::State::Stopping || state == McpClient::State::Stopped)
        return;
    const JsonRpc::Message m = JsonRpc::classify(message);
    switch (m.kind) {
    case JsonRpc::Message::Kind::Response: {
        const QString key = JsonRpc::idKey(m.id);
        const std::shared_ptr<Pending> p = pending.take(key);
        if (!p) {
            Q_EMIT q->logMessage(QStringLiteral("ignored a response to unknown request id %1").arg(QString::fromStdString(m.id.dump())));
            return;
        }
        delete p->timer;
        if (!m.error.is_null()) {
            const QString text = QString::fromStdString(m.error.value("message", std::string("no message")));
            p->promise.setException(Error(ErrorKind::Provider, QStringLiteral("%1 refused %2: %3 (JSON-RPC error %4)")
                                                                   .arg(who(), p->what, text)
                                                                   .arg(m.error["code"].get<qint64>())));
        } else {
            p->promise.addResult(m.result);
        }
        p->promise.finish();
        return;
    }
    case JsonRpc::Message::Kind::Request:
        answerServerRequest(m);
        return;
    case JsonRpc::Message::Kind::Notification:
        if (m.method == QLatin1String("notifications/tools/list_changed"))
            refreshTools();
        else if (m.method == QLatin1String("notifications/message") && m.params.is_object()) {
            const Json data = m.params.value("data", Json());
            Q_EMIT q->logMessage(data.is_string() ? QString::fromStdString(data.get<std::string>())
                                                  : QString::fromStdString(data.dump()));
        }
        return; // progress, cancellations of requests we did not get, resource updates: nothing to do
    case JsonRpc::Message::Kind::Invalid:
        onGarbage(QStringLiteral("%1 (%2)").arg(QString::fromStdString(message.dump()).left(200), m.problem),
                  message.is_object() && message.contains("id") ? message["id"] : Json());
        return;
    }
}

void McpClientPrivate::answerServerRequest(const JsonRpc::Message &m)
{
    if (m.method == QLatin1String("ping")) {
        transport->send(JsonRpc::result(m.id, Json::object()));
        return;
    }
    // Mneme declares no client capability (sampling, roots, elicitation), so a server has no reason to ask.
    transport->send(JsonRpc::error(m.id, JsonRpc::MethodNotFound,
                                   QStringLiteral("Mneme's MCP client does not offer %1 (it declared no capabilities)").arg(m.method)));
}

void McpClientPrivate::onGarbage(const QString &excerpt, const Json &id)
{
    const Error error(ErrorKind::MalformedReply,
                      QStringLiteral("%1 wrote something that is not a JSON-RPC message: \"%2\"").arg(who(), excerpt));
    Q_EMIT q->logMessage(error.message());
    if (state == McpClient::State::Starting) {
        failStart(error);
        return;
    }
    if (!id.is_null()) { // HTTP: the answer of one request, which fails alone (if it still waits)
        failRequest(JsonRpc::idKey(id), error, false);
        return;
    }
    // Over stdio nothing tells which request the garbage was meant to answer: every waiting one fails.
    failAll(error);
}

void McpClientPrivate::onBroken(const Error &error)
{
    if (state == McpClient::State::Stopping || state == McpClient::State::Stopped)
        return;
    if (state == McpClient::State::Starting) {
        failStart(error);
        return;
    }
    failAll(error);
    setState(McpClient::State::Stopped);
    Q_EMIT q->failed(error.message());
    if (transport)
        transport->close();
}

void McpClientPrivate::failStart(const Error &error)
{
    if (state != McpClient::State::Starting)
        return;
    if (startupTimer)
        startupTimer->stop();
    QString message = error.message();
    if (transport && !message.contains(QLatin1String("standard error"))) {
        const QString tail = transport->stderrTail();
        if (!tail.isEmpty())
            message += QStringLiteral("; it last wrote on its standard error: ") + tail;
    }
    const Error reported(error.kind(), message, error.httpStatus());
    failAll(reported);
    setState(McpClient::State::Stopping);
    startPromise->setException(reported);
    startPromise->finish();
    Q_EMIT q->failed(reported.message());
    if (transport)
        transport->close();
    else
        finishStop();
}

void McpClientPrivate::finishStop()
{
    setState(McpClient::State::Stopped);
    if (stopPromise) {
        stopPromise->finish();
    }
}

// ---------------------------------------------------------------------------------------------
// McpClient

McpClient::McpClient(McpServerConfig config, QObject *parent)
    : QObject(parent), d(std::make_unique<McpClientPrivate>(this, std::move(config)))
{
    d->config.validate();
    d->link = std::make_shared<McpLink>();
    d->link->client = d.get();
    d->link->serverName = d->config.name;
}

McpClient::~McpClient()
{
    {
        QMutexLocker lock(&d->link->mutex);
        d->link->client = nullptr;
    }
    d->failAll(Error(ErrorKind::Cancelled, QStringLiteral("%1 was disconnected.").arg(d->who())));
    if (d->startPromise && d->state == State::Starting) {
        d->startPromise->setException(Error(ErrorKind::Cancelled, QStringLiteral("%1 was disconnected.").arg(d->who())));
        d->startPromise->finish();
    }
    if (d->transport) {
        d->transport->close(); // a process is reaped on its own from here
        d->transport->disconnect(this);
        delete d->transport; // while d, which its signals reach, still exists
        d->transport = nullptr;
    }
    if (d->stopPromise && !d->stopPromise->future().isFinished())
        d->stopPromise->finish();
}

const McpServerConfig &McpClient::config() const
{
    return d->config;
}

McpClient::State McpClient::state() const
{
    return d->state;
}

QFuture<void> McpClient::start()
{
    if (d->startPromise)
        return d->startPromise->future();
    d->startPromise = std::make_shared<QPromise<void>>();
    d->startPromise->start();
    d->setState(State::Starting);
    if (d->config.transport() == McpServerConfig::Transport::Stdio)
        d->transport = new McpStdioTransport(d->config, this);
    else
        d->transport = new McpHttpTransport(d->config, this);
    McpTransport *t = d->transport;
    connect(t, &McpTransport::opened, this, [this] { d->onOpened(); });
    connect(t, &McpTransport::received, this, [this](const Json &m) { d->onMessage(m); });
    connect(t, &McpTransport::garbage, this, [this](const QString &excerpt, const Json &id) { d->onGarbage(excerpt, id); });
    connect(t, &McpTransport::requestFailed, this, [this](const Json &id, const Error &e) {
        if (d->state == State::Starting)
            d->failStart(e);
        else
            d->failRequest(JsonRpc::idKey(id), e, false);
    });
    connect(t, &McpTransport::broken, this, [this](const Error &e) { d->onBroken(e); });
    connect(t, &McpTransport::logLine, this, &McpClient::logMessage);
    connect(t, &McpTransport::closed, this, [this] { d->finishStop(); });
    d->startupTimer = new QTimer(this);
    d->startupTimer->setSingleShot(true);
    connect(d->startupTimer, &QTimer::timeout, this, [this] {
        d->failStart(Error(ErrorKind::Timeout, QStringLiteral("%1 (%2) was not ready within %3 s; raise startup_timeout_ms if "
                                                              "it needs longer to start")
                                                   .arg(d->who(), d->config.describe())
                                                   .arg(d->config.startupTimeoutMs / 1000.0)));
    });
    d->startupTimer->start(d->config.startupTimeoutMs);
    QFuture<void> future = d->startPromise->future();
    t->open();
    return future;
}

QFuture<void> McpClient::stop()
{
    if (d->stopPromise)
        return d->stopPromise->future();
    d->stopPromise = std::make_shared<QPromise<void>>();
    d->stopPromise->start();
    QFuture<void> future = d->stopPromise->future();
    if (d->state == State::Idle || d->state == State::Stopped || !d->transport) {
        d->finishStop();
        return future;
    }
    if (d->state == State::Stopping)
        return future; // a failed start is closing the transport already; closed() finishes it
    const Error stopped(ErrorKind::Cancelled, QStringLiteral("%1 was stopped.").arg(d->who()));
    if (d->state == State::Starting) {
        d->startupTimer->stop();
        d->failAll(stopped);
        d->startPromise->setException(stopped);
        d->startPromise->finish();
    }
    d->failAll(stopped);
    d->setState(State::Stopping);
    d->transport->close();
    return future;
}

QString McpClient::protocolVersion() const
{
    return d->protocolVersion;
}

Json McpClient::serverInfo() const
{
    return d->serverInfo;
}

Json McpClient::serverCapabilities() const
{
    return d->capabilities;
}

QString McpClient::instructions() const
{
    return d->instructions;
}

qint64 McpClient::processId() const
{
    return d->transport ? d->transport->processId() : 0;
}

std::vector<std::shared_ptr<Tool>> McpClient::tools() const
{
    return d->tools;
}

QFuture<Json> McpClient::callTool(const QString &name, const Json &arguments)
{
    return request(QStringLiteral("tools/call"), Json{{"name", name.toStdString()}, {"arguments", arguments.is_object() ? arguments : Json::object()}});
}

QFuture<Json> McpClient::request(const QString &method, const Json &params, int timeoutMs)
{
    if (QThread::currentThread() == thread())
        return d->send(method, params, timeoutMs, false);
    auto out = std::make_shared<QPromise<Json>>();
    out->start();
    QFuture<Json> future = out->future();
    QMetaObject::invokeMethod(
        this,
        [this, out, method, params, timeoutMs] {
            if (out->isCanceled()) {
                out->finish();
                return;
            }
            follow(this, d->send(method, params, timeoutMs, false), out);
        },
        Qt::QueuedConnection);
    return future;
}

QString McpClient::resultText(const Json &result)
{
    if (!result.is_object() || !result.contains("content") || !result["content"].is_array())
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("the tool result has no \"content\" list: %1").arg(QString::fromStdString(result.dump()).left(300)));
    QStringList parts;
    bool hasText = false;
    for (const Json &item : result["content"]) {
        if (!item.is_object())
            continue;
        hasText = hasText || item.value("type", std::string()) == "text";
        parts << describeContentItem(item);
    }
    if (!hasText && result.contains("structuredContent") && !result["structuredContent"].is_null())
        parts.prepend(QString::fromStdString(result["structuredContent"].dump()));
    return parts.join(QLatin1Char('\n'));
}

} // namespace mneme
