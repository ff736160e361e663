#pragma once

#include <mneme/core/json.h>
#include <mneme/core/tool.h>
#include <mneme/runtime/export.h>
#include <mneme/runtime/mcp_server_config.h>

#include <QFuture>
#include <QObject>
#include <QString>
#include <memory>
#include <vector>

namespace mneme {

class McpClientPrivate;

// A client of one MCP server (protocol revision 2025-11-25; servers that answer with 2025-06-18,
// 2025-03-26 or 2024-11-05 are accepted): it starts the server (stdio) or opens a session with it
// (streamable HTTP), reads its tools, and turns each into a mneme::Tool an agent calls like any
// other. A crew does all of this for the servers in AgentConfig::mcpServers and CrewConfig::mcpServers;
// use McpClient directly with an AgentExecutor or for requests of your own.
//
// Threads. The client lives on the thread that creates it, whose event loop must run; the process,
// its pipes and the HTTP replies are served there. request(), callTool() and the tools' run() may be
// called from any thread. Nothing blocks.
//
// Failures never crash the caller: a server that cannot start fails start(); one that exits, crashes
// or writes something that is not JSON-RPC fails the requests waiting for it with an Error naming the
// server and quoting what it last wrote on its standard error (which a tool call hands back to the
// model as a tool error); a request without an answer fails with Error(Timeout) after
// McpServerConfig::requestTimeoutMs and the server is told it was cancelled.
class MNEME_RUNTIME_EXPORT McpClient : public QObject
{
    Q_OBJECT
public:
    enum class State {
        Idle,     // not started
        Starting, // the process starts, or the session is being initialized
        Ready,    // initialized; tools() is filled
        Stopping,
        Stopped, // stop() was called, or the server went away
    };
    Q_ENUM(State)

    // Checks the configuration (McpServerConfig::validate()); starts nothing.
    explicit McpClient(McpServerConfig config, QObject *parent = nullptr);
    // Stops the server as stop() does, without waiting: the process gets its input closed, then
    // SIGTERM and SIGKILL on a timer of its own.
    ~McpClient() override;

    const McpServerConfig &config() const;
    State state() const;

    // Starts the server, initializes the session and reads the tool list (every page). The future
    // fails with the reason (the command cannot be run, the server exits, answers garbage, speaks an
    // unknown protocol version, or is not ready within startupTimeoutMs) after stopping what was
    // started. Calling it again returns the same future.
    QFuture<void> start();
    // Ends the session politely: an HTTP session is deleted; a process gets its standard input closed
    // and, if still running, SIGTERM after 2 s and SIGKILL 2 s later (to its whole process group).
    // Requests still waiting fail with Error(Cancelled). The future finishes once the process has
    // exited (the session is ended).
    QFuture<void> stop();

    // After start(): what the server said about itself.
    QString protocolVersion() const;
    Json serverInfo() const;         // {"name", "version", ...}
    Json serverCapabilities() const; // {"tools": {...}, "resources": {...}, ...}
    QString instructions() const;
    // The server's process id while it runs (stdio); 0 otherwise.
    qint64 processId() const;

    // The server's tools (those McpServerConfig::tools selects), named with toolPrefix. Each calls
    // this client; once it has stopped, or when it is destroyed, a call fails with a clear Error.
    // Refreshed when the server announces that its tool list changed.
    std::vector<std::shared_ptr<Tool>> tools() const;

    // tools/call with the tool's name on the server; the future carries the result object as the
    // server sent it ({"content": [...], "isError": ..., "structuredContent": ...}).
    QFuture<Json> callTool(const QString &name, const Json &arguments);
    // Any request ("resources/list", "prompts/get", "ping", ...) with its params; the future carries
    // the result, or fails with the server's JSON-RPC error (Error(Provider) quoting its message and
    // code). timeoutMs < 0: the configuration's requestTimeoutMs.
    QFuture<Json> request(const QString &method, const Json &params = Json::object(), int timeoutMs = -1);

    // The text an agent is given for a tools/call result: the text parts in order, a line for each
    // image, audio or resource part, and the structured content as JSON when there is no text.
    // Throws Error(MalformedReply) when the result has no content list.
    static QString resultText(const Json &result);

Q_SIGNALS:
    void stateChanged(mneme::McpClient::State state);
    // The server went away without stop(): it exited or its output could not be read.
    void failed(const QString &error);
    void toolsChanged();
    // A line the server wrote on its standard error, or a log message it sent (notifications/message).
    void logMessage(const QString &line);

private:
    friend class McpClientPrivate;
    std::unique_ptr<McpClientPrivate> d;
};

} // namespace mneme
