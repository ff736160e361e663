#pragma once

// Internal to mneme_runtime: how McpClient exchanges JSON-RPC messages with one MCP server.

#include <mneme/core/error.h>
#include <mneme/core/http_client.h>
#include <mneme/core/json.h>
#include <mneme/runtime/mcp_server_config.h>

#include <QByteArray>
#include <QFuture>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <memory>

class QProcess;

namespace mneme {

// A channel to one MCP server. Lives on the McpClient's thread and signals there.
//
// open() emits opened() once the server can take messages, or broken(); send() never blocks;
// received() carries each JSON-RPC message the server sends, garbage() each piece of output that is
// not one; broken() reports that the channel is gone for good (the process exited, the output could
// not be framed), after which nothing else is emitted. close() ends the channel politely and emits
// closed() once it is gone (also when it was broken before).
class McpTransport : public QObject
{
    Q_OBJECT
public:
    explicit McpTransport(const McpServerConfig &config, QObject *parent = nullptr);

    virtual void open() = 0;
    virtual void send(const Json &message) = 0;
    virtual void close() = 0;
    // The protocol version the session agreed on (HTTP sends it as a header).
    virtual void setProtocolVersion(const QString &version) { Q_UNUSED(version) }
    // The server process's id while it runs (stdio), else 0.
    virtual qint64 processId() const { return 0; }

    // What the server last wrote on its standard error (stdio), for error messages.
    QString stderrTail() const;

Q_SIGNALS:
    void opened();
    void received(const mneme::Json &message);
    // `requestId`: the request whose answer it was (HTTP), or null when that cannot be told (stdio).
    void garbage(const QString &excerpt, const mneme::Json &requestId);
    // A request the transport could not deliver or whose answer could not be read (HTTP): the error
    // belongs to that request alone.
    void requestFailed(const mneme::Json &id, const mneme::Error &error);
    void broken(const mneme::Error &error);
    void logLine(const QString &line);
    void closed();

protected:
    void noteStderr(const QString &line);
    // "the MCP server \"name\"".
    QString who() const;

    McpServerConfig m_config;
    QStringList m_stderr; // the last lines, newest last
};

// stdio: a child process in a process group of its own (so stopping it stops what it started, such as
// npx's node), one JSON-RPC message per line on its standard input and output.
class McpStdioTransport : public McpTransport
{
    Q_OBJECT
public:
    explicit McpStdioTransport(const McpServerConfig &config, QObject *parent = nullptr);
    ~McpStdioTransport() override;

    void open() override;
    void send(const Json &message) override;
    // Closes the process's standard input; SIGTERM to its group after 2 s, SIGKILL 2 s after that.
    // The process is handed to a reaper of its own, so this transport may be destroyed at once.
    void close() override;
    qint64 processId() const override;

    // The largest line the server may write (a message with a big result); a longer one breaks the channel.
    static constexpr qint64 kMaxLineBytes = qint64(64) << 20;
    // The environment a server process gets: the safe variables, or everything, plus the config's.
    static QStringList environmentFor(const McpServerConfig &config);

private:
    void readOutput();
    void readErrors();
    void onFinished(int exitCode, int exitStatus);

    QProcess *m_process = nullptr;
    QByteArray m_out;
    QByteArray m_err;
    bool m_closing = false;
    bool m_broken = false;
};

// Streamable HTTP: each message is a POST to the endpoint, answered with JSON or an event stream;
// the session id and protocol version ride along as headers. Server-initiated streams (GET) are not
// opened: Mneme's client declares no capability a server would need them for.
class McpHttpTransport : public McpTransport
{
    Q_OBJECT
public:
    explicit McpHttpTransport(const McpServerConfig &config, QObject *parent = nullptr);
    ~McpHttpTransport() override;

    void open() override;
    void send(const Json &message) override;
    // Ends the session with DELETE (when the server gave one), waiting at most 2 s.
    void close() override;
    void setProtocolVersion(const QString &version) override { m_version = version.toUtf8(); }

private:
    // One JSON-RPC message (or batch) of what the POST of request `id` brought back; true when it held
    // the response to that request.
    bool deliver(const QByteArray &bytes, bool eventStream, const Json &id);

    std::unique_ptr<HttpClient> m_http;
    QByteArray m_session;
    QByteArray m_version;
    bool m_closing = false;
};

} // namespace mneme
