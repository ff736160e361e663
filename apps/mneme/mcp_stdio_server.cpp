#include "mcp_stdio_server.h"

#include "mcp_session.h"

#include "runtime/json_rpc_p.h"
#include <mneme/core/json.h>

#include <QPointer>
#include <cerrno>
#include <poll.h>
#include <unistd.h>

namespace mneme::cli {

// Reads standard input on a thread of its own and posts each line to the server. It polls with a
// short timeout, so it notices when it is asked to stop even while no input comes.
class McpStdioServer::Reader : public QThread
{
public:
    Reader(McpStdioServer *server, qint64 maxLine) : m_server(server), m_maxLine(maxLine) {}

    void stop() { m_stop = true; }

protected:
    void run() override
    {
        QByteArray line;
        bool skipping = false; // the rest of a line that is too long
        char buffer[65536];
        while (!m_stop) {
            pollfd p{STDIN_FILENO, POLLIN, 0};
            const int ready = ::poll(&p, 1, 200);
            if (ready < 0 && errno == EINTR)
                continue;
            if (ready == 0)
                continue;
            const ssize_t n = ready < 0 ? -1 : ::read(STDIN_FILENO, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break; // the end of the input, or it cannot be read any more
            qsizetype start = 0;
            for (qsizetype i = 0; i < n; ++i) {
                if (buffer[i] != '\n')
                    continue;
                if (!skipping) {
                    line += QByteArray(buffer + start, i - start);
                    if (line.size() > m_maxLine)
                        tooLong(line.size());
                    else
                        post(line);
                }
                skipping = false;
                line.clear();
                start = i + 1;
            }
            if (!skipping)
                line += QByteArray(buffer + start, n - start);
            if (!skipping && line.size() > m_maxLine) {
                tooLong(line.size());
                line.clear();
                skipping = true;
            }
        }
        if (!line.trimmed().isEmpty() && !skipping)
            post(line); // a last message without its line end
        QMetaObject::invokeMethod(
            m_server, [server = m_server] { server->onEnd(); }, Qt::QueuedConnection);
    }

private:
    void tooLong(qint64 size)
    {
        QMetaObject::invokeMethod(
            m_server, [server = m_server, size] { server->onTooLong(size); }, Qt::QueuedConnection);
    }

    void post(QByteArray line)
    {
        if (line.endsWith('\r'))
            line.chop(1);
        if (line.trimmed().isEmpty())
            return;
        QMetaObject::invokeMethod(
            m_server, [server = m_server, line] { server->onLine(line); }, Qt::QueuedConnection);
    }

    McpStdioServer *m_server;
    const qint64 m_maxLine;
    std::atomic_bool m_stop{false};
};

McpStdioServer::McpStdioServer(McpCatalog &catalog, QThreadPool *pool, qint64 maxMessageBytes, QObject *parent)
    : QObject(parent), m_session(new McpSession(catalog, pool, this)), m_maxMessageBytes(maxMessageBytes)
{
    connect(m_session, &McpSession::idle, this, &McpStdioServer::finishWhenIdle);
}

McpStdioServer::~McpStdioServer()
{
    if (m_reader) {
        m_reader->stop();
        m_reader->wait();
        delete m_reader;
    }
}

void McpStdioServer::start()
{
    m_reader = new Reader(this, m_maxMessageBytes);
    m_reader->start();
}

void McpStdioServer::onLine(const QByteArray &line)
{
    if (m_outputGone)
        return;
    QPointer<McpStdioServer> self(this);
    m_session->receive(line, [self](const Json &answer) {
        if (self && !answer.is_null())
            self->send(JsonRpc::serialize(answer) + '\n');
    });
}

void McpStdioServer::onTooLong(qint64 bytes)
{
    send(JsonRpc::serialize(JsonRpc::error(Json(), JsonRpc::InvalidRequest,
                                           QStringLiteral("the message is longer than %1 bytes (%2 so far) and was skipped; "
                                                          "send smaller messages")
                                               .arg(m_maxMessageBytes)
                                               .arg(bytes)))
         + '\n');
}

void McpStdioServer::onEnd()
{
    m_inputEnded = true;
    finishWhenIdle();
}

void McpStdioServer::send(const QByteArray &line)
{
    if (m_outputGone)
        return;
    qsizetype written = 0;
    while (written < line.size()) {
        const ssize_t n = ::write(STDOUT_FILENO, line.constData() + written, size_t(line.size() - written));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            m_outputGone = true; // the client went away (EPIPE): nobody reads the answers any more
            m_inputEnded = true;
            finishWhenIdle();
            return;
        }
        written += n;
    }
}

void McpStdioServer::finishWhenIdle()
{
    if (m_finished || !m_inputEnded)
        return;
    if (!m_outputGone && m_session->pending() > 0)
        return; // the idle() of the last one calls again
    m_finished = true;
    Q_EMIT finished();
}

} // namespace mneme::cli
