#pragma once

#include <mneme/core/json.h>

#include <QByteArray>
#include <QList>
#include <QMutex>
#include <QPair>
#include <QQueue>
#include <QUrl>
#include <functional>

class QThread;

namespace mneme::test {

// One scripted answer of ScriptedHttpServer.
struct ScriptedReply
{
    int status = 200;
    QList<QPair<QByteArray, QByteArray>> headers; // extra headers (Content-Type defaults to application/json unless given)
    QByteArray body;                              // sent with Content-Length (unless chunks is non-empty)
    QList<QByteArray> chunks;                     // non-empty: sent with Transfer-Encoding: chunked, one HTTP chunk each, chunkDelayMs apart
    int chunkDelayMs = 0;
    int delayMs = 0;                // wait before sending the status line (timeouts)
    bool dropAfterChunks = false;   // after the chunks, close the socket without the terminating 0-chunk
    bool closeWithoutReply = false; // read the request, then close the connection without answering

    static ScriptedReply json(const QByteArray &body, int status = 200);
    // Content-Type text/event-stream, each element one chunk (the caller writes the "data: ...\n\n" framing).
    static ScriptedReply sse(const QList<QByteArray> &events, int chunkDelayMs = 0);
    // Content-Type application/x-ndjson, each line + "\n" one chunk.
    static ScriptedReply ndjson(const QList<QByteArray> &lines, int chunkDelayMs = 0);
};

// One request as the server received it.
struct RecordedRequest
{
    QByteArray method;
    QByteArray path;                              // path with query: "/v1beta/models/x:generateContent?alt=sse"
    QList<QPair<QByteArray, QByteArray>> headers; // as received
    QByteArray body;                              // de-chunked when it came chunked

    // The first header of that name, compared case-insensitively; empty when absent.
    QByteArray header(const QByteArray &name) const;
    // The body parsed as JSON; throws nlohmann::json::parse_error when it is not JSON.
    Json json() const;
};

// A local HTTP/1.1 server for tests, answering from a script. It listens on 127.0.0.1 on a free
// port and runs on a thread of its own, so a test may block its own thread (future.result())
// while the server answers. Every public method is thread-safe.
//
// Each request takes the handler's reply when a handler is set, else the next queued reply, else
// 500 {"error":{"message":"no scripted reply"}}. Keep-alive connections, "Connection: close",
// Content-Length and chunked request bodies are understood. Delays never block the server thread,
// so other connections are served meanwhile.
class ScriptedHttpServer
{
public:
    ScriptedHttpServer();
    ~ScriptedHttpServer();
    ScriptedHttpServer(const ScriptedHttpServer &) = delete;
    ScriptedHttpServer &operator=(const ScriptedHttpServer &) = delete;

    bool isListening() const;
    QUrl baseUrl() const; // "http://127.0.0.1:<port>"

    void enqueue(const ScriptedReply &reply); // replies are used FIFO, one per request
    // When set, used for every request instead of the queue; called on the server's thread.
    void setHandler(std::function<ScriptedReply(const RecordedRequest &)> handler);

    QList<RecordedRequest> requests() const; // every request received so far, in order
    int requestCount() const;

    class Worker;

private:
    friend class Worker;
    // Records the request and picks its reply (called on the server's thread).
    ScriptedReply take(const RecordedRequest &request);

    mutable QMutex m_mutex;
    QQueue<ScriptedReply> m_queue;
    std::function<ScriptedReply(const RecordedRequest &)> m_handler;
    QList<RecordedRequest> m_requests;

    QThread *m_thread = nullptr;
    Worker *m_worker = nullptr; // lives on m_thread
    quint16 m_port = 0;
};

} // namespace mneme::test
