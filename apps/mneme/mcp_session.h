#pragma once

#include <mneme/core/json.h>

#include <QHash>
#include <QObject>
#include <QString>
#include <functional>
#include <memory>

class QThreadPool;

namespace mneme::JsonRpc {
struct Message;
}

namespace mneme::cli {

class McpCatalog;

// The MCP protocol of one connection to `mneme mcp`: the stdio server has one, the HTTP endpoint one
// per session. It negotiates the protocol version (2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05;
// a client asking for another gets 2025-11-25), answers initialize, ping, tools/list, tools/call,
// resources/list, resources/templates/list and resources/read, honours notifications/cancelled, and
// answers anything malformed with a JSON-RPC error instead of failing: text that is not JSON
// (-32700), a message that is not JSON-RPC or a request before initialize (-32600), an unknown
// method (-32601), bad params (-32602). Batches are accepted in a 2025-03-26 session only, as that
// revision defines them.
//
// Lives on one thread (whose event loop runs); the memory's work runs on `pool`, and every reply is
// made on this object's thread.
class McpSession : public QObject
{
    Q_OBJECT
public:
    // The message to send back; a null Json when there is none (a notification, a response, a
    // request cancelled before it was answered).
    using Reply = std::function<void(const Json &message)>;

    McpSession(McpCatalog &catalog, QThreadPool *pool, QObject *parent = nullptr);
    // Requests still running are answered with an error saying the session ended (their work goes on).
    ~McpSession() override;

    // One message (or batch) as received; `reply` is called exactly once, at once or later.
    void receive(const QByteArray &text, Reply reply);
    void receive(const Json &message, Reply reply);

    bool isInitialized() const { return !m_version.isEmpty(); }
    QString protocolVersion() const { return m_version; }
    // Requests received and not answered yet.
    int pending() const { return int(m_running.size()); }

Q_SIGNALS:
    // The last pending request was answered.
    void idle();

private:
    struct Running
    {
        Json id;
        bool cancelled = false;
        Reply reply;
    };

    void receiveOne(const Json &message, Reply reply);
    void receiveBatch(const Json &batch, Reply reply);
    void request(const JsonRpc::Message &m, Reply reply);
    void notification(const JsonRpc::Message &m);
    Json initialize(const Json &params);
    // Runs `work` on the pool; its result (or McpProtocolError, or failure) answers request `m`.
    void runLater(const JsonRpc::Message &m, std::function<Json()> work, Reply reply);
    void finish(const QString &key, const Json &message);

    McpCatalog &m_catalog;
    QThreadPool *m_pool;
    QString m_version;                                  // set by initialize
    QHash<QString, std::shared_ptr<Running>> m_running; // by request id key
};

} // namespace mneme::cli
