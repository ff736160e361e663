#include "server_commands.h"

#include "command_context.h"
#include "http_access.h"
#include "http_server.h"
#include "mcp_catalog.h"
#include "mcp_http_endpoint.h"
#include "mcp_stdio_server.h"
#include "rest_api.h"
#include "source_view.h"

#include <mneme/core/error.h>

#include <QEventLoop>
#include <QSocketNotifier>
#include <QThreadPool>
#include <csignal>
#include <fcntl.h>
#include <unistd.h>

namespace mneme::cli {

namespace {

constexpr int kDefaultMaxBody = 4 << 20;
constexpr int kDefaultThreads = 8;
const char kDefaultListen[] = "127.0.0.1:8765";

// SIGINT and SIGTERM end the server's event loop, through a pipe (all a signal handler may do is
// write()). SIGPIPE is ignored while it lives: a client that goes away is a failed write, not death.
class StopSignals
{
public:
    explicit StopSignals(QEventLoop &loop)
    {
        if (::pipe2(m_fds, O_CLOEXEC | O_NONBLOCK) != 0)
            throw Error(ErrorKind::Internal, QStringLiteral("cannot create a pipe for the stop signals"));
        s_writeEnd = m_fds[1];
        struct sigaction stop = {};
        stop.sa_handler = [](int) {
            const char byte = 1;
            [[maybe_unused]] const ssize_t n = ::write(s_writeEnd, &byte, 1);
        };
        sigemptyset(&stop.sa_mask);
        ::sigaction(SIGINT, &stop, &m_oldInt);
        ::sigaction(SIGTERM, &stop, &m_oldTerm);
        struct sigaction ignore = {};
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        ::sigaction(SIGPIPE, &ignore, &m_oldPipe);
        m_notifier = new QSocketNotifier(m_fds[0], QSocketNotifier::Read);
        QObject::connect(m_notifier, &QSocketNotifier::activated, &loop, [this, &loop] {
            char byte;
            while (::read(m_fds[0], &byte, 1) > 0) {
            }
            m_received = true;
            loop.quit();
        });
    }
    ~StopSignals()
    {
        ::sigaction(SIGINT, &m_oldInt, nullptr);
        ::sigaction(SIGTERM, &m_oldTerm, nullptr);
        ::sigaction(SIGPIPE, &m_oldPipe, nullptr);
        delete m_notifier;
        ::close(m_fds[0]);
        ::close(m_fds[1]);
    }
    bool received() const { return m_received; }

private:
    static inline int s_writeEnd = -1;
    int m_fds[2] = {-1, -1};
    struct sigaction m_oldInt = {}, m_oldTerm = {}, m_oldPipe = {};
    QSocketNotifier *m_notifier = nullptr;
    bool m_received = false;
};

// The source a server acts for (--source), checked; empty when not given.
QString sourceOption(const CliArguments &a)
{
    const std::optional<QString> source = a.value(QStringLiteral("source"));
    if (!source)
        return {};
    const QString s = source->trimmed();
    if (s.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("--source needs a name (leave it out to serve public records only)"));
    return s;
}

HttpServer::Limits limitsOf(const CliArguments &a)
{
    HttpServer::Limits limits;
    limits.maxBodyBytes = a.integer(QStringLiteral("max-body"), 1024).value_or(kDefaultMaxBody);
    if (a.command()->option(QStringLiteral("max-connections")))
        limits.maxConnections = a.integer(QStringLiteral("max-connections"), 1).value_or(limits.maxConnections);
    if (const std::optional<int> seconds = a.integer(QStringLiteral("request-timeout"), 1)) {
        if (*seconds > 3600)
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("--request-timeout is in seconds, at most 3600 (got %1)").arg(*seconds));
        limits.requestTimeoutMs = *seconds * 1000;
    }
    return limits;
}

void configurePool(QThreadPool &pool, const CliArguments &a)
{
    pool.setMaxThreadCount(a.integer(QStringLiteral("threads"), 1).value_or(kDefaultThreads));
}

// The URL, as one line for people and (with --json) one JSON document.
void announce(CommandContext &ctx, const QString &what, const Json &document)
{
    if (ctx.json())
        ctx.console().writeJson(document);
    ctx.console().notice(what);
}

void logRequests(CommandContext &ctx, HttpServer &server)
{
    if (!ctx.console().isVerbose())
        return;
    Console *console = &ctx.console();
    QObject::connect(&server, &HttpServer::requestFinished, &server,
                     [console](const QByteArray &method, const QString &path, int status, double ms) {
                         console->event(QStringLiteral("%1 %2 %3 %4 ms")
                                            .arg(QString::fromLatin1(method), Console::oneLine(path.left(200)))
                                            .arg(status)
                                            .arg(ms, 0, 'f', 1));
                     });
}

} // namespace

ServerCommands::ServerCommands(CommandContext &context) : m_ctx(context) {}

void ServerCommands::mcp()
{
    const CliArguments &a = m_ctx.args();
    const QString source = sourceOption(a);
    const std::optional<QString> listen = a.value(QStringLiteral("listen"));
    if (!listen) {
        if (a.json())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("mneme mcp over stdio writes the protocol on standard output, so --json cannot be used; "
                                       "it applies with --listen"));
        for (const char *option : {"token-file", "allow-origin", "request-timeout"})
            if (a.has(QLatin1String(option)))
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("--%1 applies with --listen only (over stdio the client starts the server itself)").arg(QLatin1String(option)));
    }
    const HttpServer::Limits limits = limitsOf(a);
    std::optional<std::pair<QHostAddress, quint16>> address;
    // The token is kept as its digest only, from here on.
    const HttpAccess access(listen ? HttpAccess::readToken(a.value(QStringLiteral("token-file"))) : QByteArray(),
                            a.values(QStringLiteral("allow-origin")));
    if (listen) {
        address = HttpAccess::parseListen(*listen, QStringLiteral("--listen"));
        HttpAccess::checkExposure(address->first, access.requiresToken(), QStringLiteral("mneme mcp --listen"));
    }
    QThreadPool pool;
    configurePool(pool, a);

    Memory &memory = m_ctx.memory(); // every argument is checked before the store is opened
    SourceView view(memory, source);
    McpCatalog catalog(view);
    QEventLoop loop;
    StopSignals stop(loop);
    const QString who = source.isEmpty() ? QStringLiteral("public records only") : QStringLiteral("source \"%1\"").arg(source);

    if (!listen) {
        McpStdioServer server(catalog, &pool, limits.maxBodyBytes);
        QObject::connect(&server, &McpStdioServer::finished, &loop, &QEventLoop::quit);
        m_ctx.console().notice(QStringLiteral("mneme mcp: serving %1 over stdio for %2").arg(memory.storage().location(), who));
        server.start();
        loop.exec();
        pool.waitForDone();
        return;
    }

    McpHttpEndpoint endpoint(catalog, &pool, access);
    HttpServer server(limits, [&endpoint](const HttpServerRequest &r, HttpServer::Respond respond) { endpoint.handle(r, std::move(respond)); });
    server.listen(address->first, address->second);
    logRequests(m_ctx, server);
    const QString url = HttpAccess::urlOf(server.address(), server.port()) + QStringLiteral("/mcp");
    announce(m_ctx,
             QStringLiteral("mneme mcp: serving %1 at %2 for %3%4; Ctrl-C stops it")
                 .arg(memory.storage().location(), url, who, access.requiresToken() ? QStringLiteral(" (bearer token required)") : QString()),
             Json{{"url", url}, {"source", source.isEmpty() ? Json() : Json(source)}, {"token_required", access.requiresToken()}});
    loop.exec();
    pool.waitForDone();
}

void ServerCommands::serve()
{
    const CliArguments &a = m_ctx.args();
    const auto [address, port] = HttpAccess::parseListen(a.value(QStringLiteral("listen")).value_or(QLatin1String(kDefaultListen)),
                                                         QStringLiteral("--listen"));
    const HttpAccess access(HttpAccess::readToken(a.value(QStringLiteral("token-file"))), a.values(QStringLiteral("allow-origin")));
    HttpAccess::checkExposure(address, access.requiresToken(), QStringLiteral("mneme serve"));
    const HttpServer::Limits limits = limitsOf(a);
    QThreadPool pool;
    configurePool(pool, a);

    Memory &memory = m_ctx.memory();
    QEventLoop loop;
    StopSignals stop(loop);
    std::unique_ptr<RestApi> api;
    HttpServer server(limits, [&api](const HttpServerRequest &r, HttpServer::Respond respond) { api->handle(r, std::move(respond)); });
    server.listen(address, port);
    const QString url = HttpAccess::urlOf(server.address(), server.port());
    api = std::make_unique<RestApi>(memory, &pool, access, url);
    logRequests(m_ctx, server);
    announce(m_ctx,
             QStringLiteral("mneme serve: serving %1 at %2 (OpenAPI at %2/openapi.json)%3; Ctrl-C stops it")
                 .arg(memory.storage().location(), url, access.requiresToken() ? QStringLiteral(", bearer token required") : QString()),
             Json{{"url", url}, {"openapi", url + QStringLiteral("/openapi.json")}, {"token_required", access.requiresToken()}});
    loop.exec();
    pool.waitForDone();
}

} // namespace mneme::cli
