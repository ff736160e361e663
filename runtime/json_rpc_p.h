#pragma once

// Internal to Mneme (mneme_runtime_internal: the MCP client in the runtime and the MCP server of the
// command line): JSON-RPC 2.0 messages as MCP uses them.

#include <mneme/core/json.h>

#include <QByteArray>
#include <QString>

namespace mneme::JsonRpc {

// The error codes of JSON-RPC 2.0, and the one MCP adds for resources.
enum Code {
    ParseError = -32700,     // the text is not JSON
    InvalidRequest = -32600, // JSON, but not a JSON-RPC message
    MethodNotFound = -32601,
    InvalidParams = -32602,
    InternalError = -32603,
    ResourceNotFound = -32002, // MCP: resources/read of a URI the server does not have
};

// One message as received, classified. A request has an id and a method, a notification a method
// and no id, a response an id and a result or an error. Anything else is Invalid, with `problem`
// saying why and `id` set when one could be read (so the error response can carry it).
struct Message
{
    enum class Kind {
        Request,
        Notification,
        Response,
        Invalid
    };
    Kind kind = Kind::Invalid;
    Json id; // a string or an integer; null when absent or unreadable
    QString method;
    Json params; // an object, an array, or null when absent
    Json result; // a response's result (null for an error response)
    Json error;  // a response's error object (null for a result)
    QString problem;

    bool isRequest() const { return kind == Kind::Request; }
    bool isNotification() const { return kind == Kind::Notification; }
    bool isResponse() const { return kind == Kind::Response; }
};

// Reads one message. MCP forbids null ids, so a request or response with one is Invalid.
Message classify(const Json &message);

Json request(const Json &id, const QString &method, const Json &params = Json());
Json notification(const QString &method, const Json &params = Json());
Json result(const Json &id, const Json &result);
// An error response; `id` null when the request's id could not be read. `data` is left out when null.
Json error(const Json &id, int code, const QString &message, const Json &data = Json());

// The message as one line of compact UTF-8 JSON (stdio framing: no embedded newline; invalid UTF-8
// in strings is replaced rather than thrown on).
QByteArray serialize(const Json &message);
// A request id as a map key ("s:abc", "n:42"), since JSON-RPC ids may be strings or numbers.
QString idKey(const Json &id);

} // namespace mneme::JsonRpc
