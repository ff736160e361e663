#include "runtime/mcp_transport_p.h"

#include "runtime/json_rpc_p.h"
#include "runtime/mcp_protocol_p.h"
#include <mneme/core/stream_parsers.h>

#include <QFutureWatcher>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTimer>
#include <csignal>
#include <sys/types.h>
#include <unistd.h>

namespace mneme {

namespace {

constexpr int kStderrLines = 20;
constexpr int kGraceMs = 2000; // after closing stdin, before SIGTERM; after SIGTERM, before SIGKILL

QString excerptOf(const QByteArray &bytes)
{
    QString text = QString::fromUtf8(bytes.left(200)).simplified();
    if (bytes.size() > 200)
        text += QStringLiteral("...");
    return text;
}

// Sends `signal` to the process group `pid` leads (the server and what it started), else to `pid` alone.
void signalGroup(qint64 pid, int signal)
{
    if (pid <= 0)
        return;
    if (::kill(-pid_t(pid), signal) != 0)
        ::kill(pid_t(pid), signal);
}

} // namespace

// ---------------------------------------------------------------------------------------------
// McpTransport

McpTransport::McpTransport(const McpServerConfig &config, QObject *parent) : QObject(parent), m_config(config)
{
}

QString McpTransport::stderrTail() const
{
    return m_stderr.join(QStringLiteral(" | "));
}

void McpTransport::noteStderr(const QString &line)
{
    m_stderr << line.left(500);
    while (m_stderr.size() > kStderrLines)
        m_stderr.removeFirst();
    Q_EMIT logLine(line);
}

QString McpTransport::who() const
{
    return QStringLiteral("the MCP server \"%1\"").arg(m_config.name);
}

// ---------------------------------------------------------------------------------------------
// McpStdioTransport

McpStdioTransport::McpStdioTransport(const McpServerConfig &config, QObject *parent) : McpTransport(config, parent)
{
}

McpStdioTransport::~McpStdioTransport()
{
    close();
}

QStringList McpStdioTransport::environmentFor(const McpServerConfig &config)
{
    const QProcessEnvironment system = QProcessEnvironment::systemEnvironment();
    QProcessEnvironment env;
    if (config.inheritEnvironment) {
        env = system;
    } else {
        static const char *const safe[] = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR"};
        for (const char *name : safe)
            if (system.contains(QLatin1String(name)))
                env.insert(QLatin1String(name), system.value(QLatin1String(name)));
    }
    for (auto it = config.env.cbegin(); it != config.env.cend(); ++it)
        env.insert(it.key(), it.value());
    return env.toStringList();
}

void McpStdioTransport::open()
{
    m_process = new QProcess(this);
    m_process->setProgram(m_config.command);
    m_process->setArguments(m_config.args);
    m_process->setEnvironment(environmentFor(m_config));
    if (!m_config.workingDirectory.isEmpty())
        m_process->setWorkingDirectory(m_config.workingDirectory);
    // A group of its own: stopping the server stops whatever it started (npx runs node, a shell
    // script runs its program), and a Ctrl-C meant for this program does not reach it first.
    m_process->setChildProcessModifier([] { ::setpgid(0, 0); });
    connect(m_process, &QProcess::started, this, &McpTransport::opened);
    connect(m_process, &QProcess::readyReadStandardOutput, this, &McpStdioTransport::readOutput);
    connect(m_process, &QProcess::readyReadStandardError, this, &McpStdioTransport::readErrors);
    connect(m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart || m_broken)
            return;
        m_broken = true;
        Q_EMIT broken(Error(ErrorKind::Provider,
                            QStringLiteral("%1 could not be started (%2): %3. Check that the command exists and is on the "
                                           "PATH the server gets (%4).")
                                .arg(who(), m_config.describe(), m_process->errorString(),
                                     QProcessEnvironment::systemEnvironment().value(QStringLiteral("PATH")))));
    });
    connect(m_process, &QProcess::finished, this,
            [this](int exitCode, QProcess::ExitStatus status) { onFinished(exitCode, int(status)); });
    m_process->start(QIODevice::ReadWrite);
}

qint64 McpStdioTransport::processId() const
{
    return m_process ? m_process->processId() : 0;
}

void McpStdioTransport::send(const Json &message)
{
    if (!m_process || m_closing || m_broken || m_process->state() != QProcess::Running)
        return; // the client has heard of the failure already (broken) or is closing
    m_process->write(JsonRpc::serialize(message) + '\n');
}

void McpStdioTransport::readOutput()
{
    if (!m_process)
        return;
    m_out += m_process->readAllStandardOutput();
    qsizetype start = 0;
    for (qsizetype nl = m_out.indexOf('\n'); nl >= 0 && !m_broken; nl = m_out.indexOf('\n', start)) {
        const QByteArray line = m_out.mid(start, nl - start).trimmed();
        start = nl + 1;
        if (line.isEmpty())
            continue;
        Json message = Json::parse(line.constBegin(), line.constEnd(), nullptr, false);
        if (message.is_discarded())
            Q_EMIT garbage(excerptOf(line), Json());
        else
            Q_EMIT received(message);
    }
    m_out.remove(0, start);
    if (m_out.size() > kMaxLineBytes && !m_broken) {
        m_broken = true;
        m_out.clear();
        Q_EMIT broken(Error(ErrorKind::MalformedReply,
                            QStringLiteral("%1 wrote more than %2 MiB on its standard output without a line break; a "
                                           "message must be one line. The server was stopped.")
                                .arg(who())
                                .arg(kMaxLineBytes >> 20)));
        close();
    }
}

void McpStdioTransport::readErrors()
{
    if (!m_process)
        return;
    m_err += m_process->readAllStandardError();
    qsizetype start = 0;
    for (qsizetype nl = m_err.indexOf('\n'); nl >= 0; nl = m_err.indexOf('\n', start)) {
        const QString line = QString::fromUtf8(m_err.mid(start, nl - start)).trimmed();
        start = nl + 1;
        if (!line.isEmpty())
            noteStderr(line);
    }
    m_err.remove(0, start);
    if (m_err.size() > 4096) { // a very long line without an end: keep its start
        noteStderr(QString::fromUtf8(m_err.left(500)));
        m_err.clear();
    }
}

void McpStdioTransport::onFinished(int exitCode, int exitStatus)
{
    readOutput();
    readErrors();
    if (m_closing) {
        Q_EMIT closed();
        return;
    }
    if (m_broken)
        return;
    m_broken = true;
    const QString how = exitStatus == QProcess::CrashExit ? QStringLiteral("crashed")
                                                          : QStringLiteral("exited with status %1").arg(exitCode);
    const QString tail = stderrTail();
    Q_EMIT broken(Error(ErrorKind::Provider,
                        QStringLiteral("%1 (%2) %3%4")
                            .arg(who(), m_config.describe(), how,
                                 tail.isEmpty() ? QStringLiteral(" without writing anything on its standard error")
                                                : QStringLiteral("; it last wrote on its standard error: ") + tail)));
}

void McpStdioTransport::close()
{
    if (m_closing)
        return;
    m_closing = true;
    QProcess *process = m_process;
    if (!process || process->state() == QProcess::NotRunning) {
        QTimer::singleShot(0, this, &McpTransport::closed);
        return;
    }
    // The reaper: the process outlives this transport until it has exited. Spec order: close its
    // input, wait, SIGTERM, wait, SIGKILL.
    process->setParent(nullptr);
    process->disconnect(this);
    connect(process, &QProcess::finished, this, [this] { Q_EMIT closed(); });
    const qint64 pid = process->processId();
    auto *term = new QTimer(process);
    term->setSingleShot(true);
    connect(term, &QTimer::timeout, process, [pid] { signalGroup(pid, SIGTERM); });
    auto *kill = new QTimer(process);
    kill->setSingleShot(true);
    connect(kill, &QTimer::timeout, process, [pid] { signalGroup(pid, SIGKILL); });
    connect(process, &QProcess::finished, process, [process, pid] {
        signalGroup(pid, SIGTERM); // what the server started and left behind goes with it
        process->deleteLater();
    });
    connect(process, &QProcess::errorOccurred, process, [process](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart)
            process->deleteLater();
    });
    process->closeWriteChannel();
    term->start(kGraceMs);
    kill->start(2 * kGraceMs);
    m_process = nullptr;
}

// ---------------------------------------------------------------------------------------------
// McpHttpTransport

namespace {

// What one POST brings back, read on the transport's thread as the bytes arrive.
struct PostReply
{
    QByteArray bytes;
    bool decided = false;
    bool eventStream = false;
    bool answered = false; // the response to the POST's request was among the messages
    SseParser sse;
};

} // namespace

McpHttpTransport::McpHttpTransport(const McpServerConfig &config, QObject *parent) : McpTransport(config, parent)
{
    HttpPolicy policy;
    // McpClient times each request itself; this only bounds a silent connection.
    policy.timeoutMs = std::max(config.requestTimeoutMs, config.startupTimeoutMs) + 5000;
    policy.maxRetries = 0; // a tool call may have effects: never sent twice
    for (const auto &header : config.headers)
        policy.secrets << QString::fromUtf8(header.second);
    m_http = std::make_unique<HttpClient>(policy);
}

McpHttpTransport::~McpHttpTransport() = default;

void McpHttpTransport::open()
{
    QTimer::singleShot(0, this, &McpTransport::opened);
}

void McpHttpTransport::send(const Json &message)
{
    if (m_closing)
        return;
    const JsonRpc::Message sent = JsonRpc::classify(message);
    HttpRequest request;
    request.method = "POST";
    request.url = m_config.url;
    request.body = JsonRpc::serialize(message);
    request.what = QStringLiteral("MCP server \"%1\"").arg(m_config.name);
    request.headers = {{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"}};
    if (!m_session.isEmpty())
        request.headers.append({Mcp::kSessionHeader, m_session});
    if (!m_version.isEmpty())
        request.headers.append({Mcp::kVersionHeader, m_version});
    request.headers.append(m_config.headers);

    auto reply = std::make_shared<PostReply>();
    QPointer<McpHttpTransport> self(this);
    // Called on the network thread: the bytes are read here, on this object's thread, in order. The
    // answer to initialize is read only once the whole reply is in, with its session header: the client
    // answers it at once (notifications/initialized), and that must carry the session.
    const Json id = sent.isRequest() ? sent.id : Json();
    const bool initializing = sent.isRequest() && sent.method == QLatin1String("initialize");
    const HttpClient::ChunkHandler onChunk = [self, reply, id, initializing](const QByteArray &chunk) {
        QMetaObject::invokeMethod(
            self.data(),
            [self, reply, chunk, id, initializing] {
                if (!self)
                    return;
                reply->bytes += chunk;
                if (initializing)
                    return;
                if (!reply->decided) {
                    const QByteArray start = reply->bytes.trimmed();
                    if (start.isEmpty())
                        return;
                    reply->decided = true;
                    reply->eventStream = !(start.startsWith('{') || start.startsWith('['));
                    if (reply->eventStream)
                        reply->sse.feed(reply->bytes);
                } else if (reply->eventStream) {
                    reply->sse.feed(chunk);
                }
                if (reply->eventStream)
                    for (const SseParser::Event &e : reply->sse.take())
                        reply->answered = self->deliver(e.data, true, id) || reply->answered;
            },
            Qt::QueuedConnection);
    };
    const bool hadSession = !m_session.isEmpty();
    auto *watch = new QFutureWatcher<HttpResponse>(this);
    connect(watch, &QFutureWatcherBase::finished, this, [this, watch, reply, id, hadSession, initializing] {
        watch->deleteLater();
        const QFuture<HttpResponse> f = watch->future();
        HttpResponse response;
        try {
            response = f.result();
        } catch (const Error &e) {
            if (id.is_null()) {
                noteStderr(QStringLiteral("a notification was not delivered: %1").arg(e.message()));
                return;
            }
            if (hadSession && e.httpStatus() == 404)
                Q_EMIT requestFailed(id, Error(ErrorKind::Provider,
                                               QStringLiteral("%1 no longer knows this session (HTTP 404): it was ended by "
                                                              "the server; start the client again")
                                                   .arg(who())));
            else
                Q_EMIT requestFailed(id, e);
            return;
        }
        if (initializing) {
            const QByteArray session = response.header(Mcp::kSessionHeader);
            const bool visible = std::all_of(session.begin(), session.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
            if (!session.isEmpty() && visible)
                m_session = session;
        }
        if (response.status == 202 || id.is_null())
            return;
        const QByteArray type = response.header("Content-Type").toLower();
        const QByteArray essence = type.split(';').front().trimmed();
        if (!reply->decided && !response.body.isEmpty())
            reply->bytes = response.body;
        if (essence == "text/event-stream") {
            if (!reply->eventStream) { // the body looked like JSON, but the server says it is a stream
                reply->sse = SseParser();
                reply->sse.feed(reply->bytes);
            }
            reply->sse.finish();
            for (const SseParser::Event &e : reply->sse.take())
                reply->answered = deliver(e.data, true, id) || reply->answered;
        } else if (essence == "application/json") {
            reply->answered = deliver(reply->bytes, false, id);
        } else if (!reply->bytes.trimmed().isEmpty()) {
            Q_EMIT garbage(QStringLiteral("%1 (Content-Type \"%2\")").arg(excerptOf(reply->bytes), QString::fromLatin1(type)), id);
        }
        if (!reply->answered)
            Q_EMIT requestFailed(id, Error(ErrorKind::MalformedReply,
                                           QStringLiteral("%1 answered a request with HTTP %2 (Content-Type \"%3\") but not "
                                                          "with its JSON-RPC response")
                                               .arg(who())
                                               .arg(response.status)
                                               .arg(QString::fromLatin1(type))));
    });
    watch->setFuture(m_http->send(std::move(request), onChunk));
}

bool McpHttpTransport::deliver(const QByteArray &bytes, bool eventStream, const Json &id)
{
    if (bytes.trimmed().isEmpty())
        return false; // an event without data (a stream's priming event)
    const Json parsed = Json::parse(bytes.constBegin(), bytes.constEnd(), nullptr, false);
    if (parsed.is_discarded()) {
        Q_EMIT garbage(excerptOf(bytes) + (eventStream ? QStringLiteral(" (in an event stream)") : QString()), id);
        return false;
    }
    bool answered = false;
    const auto one = [&](const Json &m) {
        answered = answered || (m.is_object() && m.contains("id") && m["id"] == id && !m.contains("method"));
        Q_EMIT received(m);
    };
    if (parsed.is_array()) {
        for (const Json &m : parsed)
            one(m);
    } else {
        one(parsed);
    }
    return answered;
}

void McpHttpTransport::close()
{
    if (m_closing)
        return;
    m_closing = true;
    if (m_session.isEmpty()) {
        QTimer::singleShot(0, this, &McpTransport::closed);
        return;
    }
    HttpRequest request;
    request.method = "DELETE";
    request.url = m_config.url;
    request.what = QStringLiteral("MCP server \"%1\" (ending the session)").arg(m_config.name);
    request.headers = {{Mcp::kSessionHeader, m_session}};
    if (!m_version.isEmpty())
        request.headers.append({Mcp::kVersionHeader, m_version});
    request.headers.append(m_config.headers);
    auto done = std::make_shared<bool>(false);
    const auto finish = [this, done] {
        if (!std::exchange(*done, true))
            Q_EMIT closed();
    };
    auto *watch = new QFutureWatcher<HttpResponse>(this);
    connect(watch, &QFutureWatcherBase::finished, this, [watch, finish] {
        watch->deleteLater();
        finish();
    });
    QFuture<HttpResponse> deletion = m_http->send(std::move(request));
    watch->setFuture(deletion);
    QTimer::singleShot(kGraceMs, this, [finish, deletion]() mutable {
        deletion.cancel();
        finish();
    });
}

} // namespace mneme
