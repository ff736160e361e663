#pragma once

#include <QByteArray>
#include <QObject>
#include <QThread>
#include <atomic>

class QThreadPool;

namespace mneme::cli {

class McpCatalog;
class McpSession;

// `mneme mcp` over stdio: one JSON-RPC message per line on standard input, answers one per line on
// standard output (nothing else is ever written there), logs on standard error. A reader thread
// reads standard input, so a long message never holds up the answers. A line longer than
// maxMessageBytes is answered with an error and skipped. When the input ends (the client closed it)
// the requests still running are answered, then finished() is emitted; when standard output is
// gone, finished() is emitted at once.
class McpStdioServer : public QObject
{
    Q_OBJECT
public:
    McpStdioServer(McpCatalog &catalog, QThreadPool *pool, qint64 maxMessageBytes, QObject *parent = nullptr);
    ~McpStdioServer() override;

    void start();

Q_SIGNALS:
    void finished();

private:
    class Reader;
    void onLine(const QByteArray &line);
    void onTooLong(qint64 bytes);
    void onEnd();
    void send(const QByteArray &line);
    void finishWhenIdle();

    McpSession *m_session;
    Reader *m_reader = nullptr;
    qint64 m_maxMessageBytes;
    bool m_inputEnded = false;
    bool m_outputGone = false;
    bool m_finished = false;
};

} // namespace mneme::cli
