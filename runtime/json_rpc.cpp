#include "runtime/json_rpc_p.h"

namespace mneme::JsonRpc {

namespace {

bool validId(const Json &id)
{
    return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

Message invalid(const Json &id, const QString &problem)
{
    Message m;
    m.kind = Message::Kind::Invalid;
    m.id = validId(id) ? id : Json();
    m.problem = problem;
    return m;
}

} // namespace

Message classify(const Json &message)
{
    if (!message.is_object())
        return invalid(Json(), QStringLiteral("a JSON-RPC message is a JSON object, not %1")
                                   .arg(QString::fromLatin1(message.type_name())));
    const Json id = message.contains("id") ? message["id"] : Json();
    const auto version = message.find("jsonrpc");
    if (version == message.end() || *version != "2.0")
        return invalid(id, QStringLiteral("the message needs \"jsonrpc\": \"2.0\""));
    if (message.contains("id") && !validId(id))
        return invalid(Json(), QStringLiteral("a message id must be a string or an integer, not %1")
                                   .arg(QString::fromLatin1(id.type_name())));

    Message m;
    m.id = id;
    if (const auto method = message.find("method"); method != message.end()) {
        if (!method->is_string() || method->get_ref<const std::string &>().empty())
            return invalid(id, QStringLiteral("\"method\" must be a non-empty string"));
        m.method = QString::fromStdString(method->get<std::string>());
        if (const auto params = message.find("params"); params != message.end()) {
            if (!params->is_object() && !params->is_array())
                return invalid(id, QStringLiteral("\"params\" of %1 must be an object").arg(m.method));
            m.params = *params;
        }
        m.kind = message.contains("id") ? Message::Kind::Request : Message::Kind::Notification;
        return m;
    }
    const bool hasResult = message.contains("result");
    const bool hasError = message.contains("error");
    if (!message.contains("id") || hasResult == hasError)
        return invalid(id, QStringLiteral("the message is neither a request (\"method\"), a notification, nor a "
                                          "response (\"id\" with \"result\" or \"error\")"));
    if (hasError) {
        const Json &e = message["error"];
        if (!e.is_object() || !e.contains("code") || !e["code"].is_number_integer())
            return invalid(id, QStringLiteral("an error response needs an \"error\" object with an integer \"code\""));
        m.error = e;
    } else {
        m.result = message["result"];
    }
    m.kind = Message::Kind::Response;
    return m;
}

Json request(const Json &id, const QString &method, const Json &params)
{
    Json m{{"jsonrpc", "2.0"}, {"id", id}, {"method", method.toStdString()}};
    if (!params.is_null())
        m["params"] = params;
    return m;
}

Json notification(const QString &method, const Json &params)
{
    Json m{{"jsonrpc", "2.0"}, {"method", method.toStdString()}};
    if (!params.is_null())
        m["params"] = params;
    return m;
}

Json result(const Json &id, const Json &value)
{
    return Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", value.is_null() ? Json::object() : value}};
}

Json error(const Json &id, int code, const QString &message, const Json &data)
{
    Json e{{"code", code}, {"message", message.toStdString()}};
    if (!data.is_null())
        e["data"] = data;
    return Json{{"jsonrpc", "2.0"}, {"id", id}, {"error", e}};
}

QByteArray serialize(const Json &message)
{
    return QByteArray::fromStdString(message.dump(-1, ' ', false, Json::error_handler_t::replace));
}

QString idKey(const Json &id)
{
    if (id.is_string())
        return QStringLiteral("s:") + QString::fromStdString(id.get<std::string>());
    return QStringLiteral("n:") + QString::fromStdString(id.dump());
}

} // namespace mneme::JsonRpc
