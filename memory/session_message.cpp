#include <mneme/memory/session_message.h>

#include <mneme/core/error.h>

namespace mneme {

namespace {

Error bad(const QString &what)
{
    return Error(ErrorKind::InvalidArgument, what);
}

QString stringField(const Json &j, const char *key)
{
    if (!j.contains(key) || j[key].is_null())
        return {};
    if (!j[key].is_string())
        throw bad(QStringLiteral("the message's \"%1\" must be a string").arg(QLatin1String(key)));
    return QString::fromStdString(j[key].get<std::string>());
}

} // namespace

std::optional<ChatMessage::Role> SessionMessage::roleFromName(const QString &name)
{
    for (const ChatMessage::Role role :
         {ChatMessage::Role::System, ChatMessage::Role::User, ChatMessage::Role::Assistant, ChatMessage::Role::Tool})
        if (ChatMessage::roleName(role) == name)
            return role;
    return std::nullopt;
}

Json SessionMessage::toJson() const
{
    Json j = {{"role", ChatMessage::roleName(message.role)}, {"content", message.content}};
    if (seq > 0)
        j["seq"] = seq;
    if (!message.name.isEmpty())
        j["name"] = message.name;
    if (!message.toolCallId.isEmpty())
        j["tool_call_id"] = message.toolCallId;
    if (!message.toolCalls.empty()) {
        Json calls = Json::array();
        for (const ToolCall &c : message.toolCalls)
            calls.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
        j["tool_calls"] = std::move(calls);
    }
    if (metadata.is_object() && !metadata.empty())
        j["metadata"] = metadata;
    if (at.isValid())
        j["at"] = toIso(at);
    if (tokens)
        j["tokens"] = *tokens;
    if (flush > 0)
        j["flush"] = flush;
    return j;
}

SessionMessage SessionMessage::fromJson(const Json &j)
{
    if (!j.is_object())
        throw bad(QStringLiteral("a message must be a JSON object with \"role\" and \"content\""));
    SessionMessage m;
    const QString role = stringField(j, "role");
    const std::optional<ChatMessage::Role> r = roleFromName(role);
    if (!r)
        throw bad(QStringLiteral("the message's role \"%1\" is not one of system, user, assistant, tool").arg(role));
    m.message.role = *r;
    m.message.content = stringField(j, "content");
    m.message.name = stringField(j, "name");
    m.message.toolCallId = stringField(j, "tool_call_id");
    if (j.contains("tool_calls") && !j["tool_calls"].is_null()) {
        if (!j["tool_calls"].is_array())
            throw bad(QStringLiteral("the message's \"tool_calls\" must be an array of {\"id\", \"name\", \"arguments\"}"));
        for (const Json &c : j["tool_calls"]) {
            if (!c.is_object())
                throw bad(QStringLiteral("each of the message's \"tool_calls\" must be an object {\"id\", \"name\", \"arguments\"}"));
            ToolCall call;
            call.id = stringField(c, "id");
            call.name = stringField(c, "name");
            call.arguments = c.value("arguments", Json::object());
            m.message.toolCalls.push_back(std::move(call));
        }
    }
    if (j.contains("metadata") && !j["metadata"].is_null())
        m.metadata = j["metadata"];
    if (j.contains("at") && !j["at"].is_null()) {
        const QString at = stringField(j, "at");
        m.at = fromIso(at);
        if (!m.at.isValid())
            throw bad(QStringLiteral("the message's \"at\" (%1) is not an ISO 8601 time such as 2024-05-01T12:00:00Z").arg(at));
    }
    if (j.contains("tokens") && !j["tokens"].is_null()) {
        if (!j["tokens"].is_number_integer())
            throw bad(QStringLiteral("the message's \"tokens\" must be a whole number"));
        m.tokens = j["tokens"].get<int>();
    }
    if (j.contains("seq") && j["seq"].is_number_integer())
        m.seq = j["seq"].get<qint64>();
    if (j.contains("flush") && j["flush"].is_number_integer())
        m.flush = j["flush"].get<qint64>();
    check(m);
    return m;
}

void SessionMessage::check(const SessionMessage &m)
{
    const ChatMessage &msg = m.message;
    const QString role = ChatMessage::roleName(msg.role);
    // A tool's result may be empty; any other message needs content (or, for the assistant, tool calls).
    if (msg.content.trimmed().isEmpty() && msg.toolCalls.empty() && msg.role != ChatMessage::Role::Tool)
        throw bad(QStringLiteral("a %1 message needs content%2; an empty message cannot be stored")
                      .arg(role, msg.role == ChatMessage::Role::Assistant ? QStringLiteral(" or tool calls") : QString()));
    if (!msg.toolCalls.empty() && msg.role != ChatMessage::Role::Assistant)
        throw bad(QStringLiteral("only an assistant message may carry tool calls, and this one is a %1 message").arg(role));
    for (const ToolCall &call : msg.toolCalls) {
        if (call.name.trimmed().isEmpty())
            throw bad(QStringLiteral("a tool call of the assistant message has no tool name"));
        if (call.id.trimmed().isEmpty())
            throw bad(QStringLiteral("the call of tool %1 has no id; give each tool call the id its result will answer").arg(call.name));
    }
    if (msg.role == ChatMessage::Role::Tool && msg.toolCallId.trimmed().isEmpty())
        throw bad(QStringLiteral("a tool result needs the id of the call it answers (ChatMessage::toolCallId); use "
                                 "ChatMessage::toolResult(callId, toolName, result)"));
    if (msg.role != ChatMessage::Role::Tool && !msg.toolCallId.isEmpty())
        throw bad(QStringLiteral("only a tool result answers a tool call, and this %1 message has a tool_call_id").arg(role));
    if (!m.metadata.is_object())
        throw bad(QStringLiteral("a message's metadata must be a JSON object, not %1").arg(QString::fromLatin1(m.metadata.type_name())));
    if (m.tokens && *m.tokens < 0)
        throw bad(QStringLiteral("a message's token count must not be negative (got %1)").arg(*m.tokens));
}

} // namespace mneme
