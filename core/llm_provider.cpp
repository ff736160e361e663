#include <mneme/core/llm_provider.h>

namespace mneme {

namespace {

Json callsToJson(const std::vector<ToolCall> &calls)
{
    Json a = Json::array();
    for (const ToolCall &c : calls)
        a.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
    return a;
}

std::vector<ToolCall> callsFromJson(const Json &a)
{
    std::vector<ToolCall> calls;
    if (!a.is_array())
        return calls;
    for (const Json &c : a)
        calls.push_back(ToolCall{c.value("id", std::string()).c_str(), c.value("name", std::string()).c_str(),
                                 c.value("arguments", Json::object())});
    return calls;
}

} // namespace

ChatMessage ChatMessage::system(const QString &text)
{
    ChatMessage m;
    m.role = Role::System;
    m.content = text;
    return m;
}

ChatMessage ChatMessage::user(const QString &text)
{
    ChatMessage m;
    m.role = Role::User;
    m.content = text;
    return m;
}

ChatMessage ChatMessage::assistant(const QString &text, std::vector<ToolCall> calls)
{
    ChatMessage m;
    m.role = Role::Assistant;
    m.content = text;
    m.toolCalls = std::move(calls);
    return m;
}

ChatMessage ChatMessage::toolResult(const QString &callId, const QString &toolName, const QString &result)
{
    ChatMessage m;
    m.role = Role::Tool;
    m.toolCallId = callId;
    m.name = toolName;
    m.content = result;
    return m;
}

QString ChatMessage::roleName(Role role)
{
    switch (role) {
    case Role::System: return QStringLiteral("system");
    case Role::User: return QStringLiteral("user");
    case Role::Assistant: return QStringLiteral("assistant");
    case Role::Tool: return QStringLiteral("tool");
    }
    return QStringLiteral("user");
}

Json ChatRequest::toJson() const
{
    Json messagesJson = Json::array();
    for (const ChatMessage &m : messages) {
        Json j = {{"role", ChatMessage::roleName(m.role)}, {"content", m.content}};
        if (!m.toolCallId.isEmpty())
            j["tool_call_id"] = m.toolCallId;
        if (!m.name.isEmpty())
            j["name"] = m.name;
        if (!m.toolCalls.empty())
            j["tool_calls"] = callsToJson(m.toolCalls);
        messagesJson.push_back(std::move(j));
    }
    Json j = {{"messages", std::move(messagesJson)}};
    if (!tools.empty()) {
        Json t = Json::array();
        for (const ToolSpec &s : tools)
            t.push_back({{"name", s.name}, {"description", s.description}, {"parameters", s.parameters}});
        j["tools"] = std::move(t);
        if (!toolChoice.isEmpty())
            j["tool_choice"] = toolChoice;
        if (!parallelToolCalls)
            j["parallel_tool_calls"] = false;
    }
    if (!responseSchema.is_null())
        j["response_schema"] = {{"name", responseSchemaName}, {"schema", responseSchema}};
    if (temperature)
        j["temperature"] = *temperature;
    if (maxTokens)
        j["max_tokens"] = *maxTokens;
    if (!stop.isEmpty())
        j["stop"] = stop;
    return j;
}

Json ChatResponse::toJson() const
{
    Json j = {{"text", text},
              {"tool_calls", callsToJson(toolCalls)},
              {"usage", {{"prompt_tokens", usage.promptTokens}, {"completion_tokens", usage.completionTokens}}},
              {"finish_reason", finishReason},
              {"model", model}};
    if (!structured.is_null())
        j["structured"] = structured;
    return j;
}

ChatResponse ChatResponse::fromJson(const Json &j)
{
    ChatResponse r;
    r.text = QString::fromStdString(j.value("text", std::string()));
    r.toolCalls = callsFromJson(j.value("tool_calls", Json::array()));
    const Json usage = j.value("usage", Json::object());
    r.usage.promptTokens = usage.value("prompt_tokens", 0);
    r.usage.completionTokens = usage.value("completion_tokens", 0);
    r.finishReason = QString::fromStdString(j.value("finish_reason", std::string()));
    r.model = QString::fromStdString(j.value("model", std::string()));
    r.structured = j.value("structured", Json());
    return r;
}

} // namespace mneme
