#include "scripted_llm.h"

#include <mneme/core/plugin_registry.h>

#include <QMutexLocker>

namespace mneme::test {

ScriptedLlm::ScriptedLlm()
{
    m_server.setHandler([this](const RecordedRequest &r) { return answer(r); });
}

QString ScriptedLlm::stepOf(const Json &body)
{
    if (body.contains("response_format") && body["response_format"].contains("json_schema"))
        return QString::fromStdString(body["response_format"]["json_schema"].value("name", std::string()));
    if (body.contains("tools") && body["tools"].is_array() && !body["tools"].empty())
        return QString::fromStdString(body["tools"][0]["function"].value("name", std::string()));
    return QStringLiteral("(none)");
}

ScriptedReply ScriptedLlm::answer(const RecordedRequest &request)
{
    Json body;
    try {
        body = request.json();
    } catch (...) {
        return ScriptedReply::json(R"({"error":{"message":"the request body is not JSON"}})", 400);
    }
    const QString step = stepOf(body);
    Responder responder;
    {
        QMutexLocker lock(&m_mutex);
        m_requests[step] << body;
        responder = m_responders.value(step, m_fallback);
    }
    if (!responder)
        return ScriptedReply::json(QByteArray(R"({"error":{"message":"no scripted reply for )") + step.toUtf8() + "\"}}",
                                   m_unscriptedStatus);
    return responder(body);
}

void ScriptedLlm::setFallback(Responder responder)
{
    QMutexLocker lock(&m_mutex);
    m_fallback = std::move(responder);
}

QString ScriptedLlm::messageOf(const Json &body, const char *role, bool last)
{
    QString found;
    if (!body.contains("messages"))
        return found;
    for (const Json &m : body["messages"]) {
        if (m.value("role", std::string()) != role || !m.contains("content") || !m["content"].is_string())
            continue;
        found = QString::fromStdString(m["content"].get<std::string>());
        if (!last)
            break;
    }
    return found;
}

QStringList ScriptedLlm::toolNamesOf(const Json &body)
{
    QStringList names;
    if (body.contains("tools") && body["tools"].is_array())
        for (const Json &t : body["tools"])
            names << QString::fromStdString(t["function"].value("name", std::string()));
    return names;
}

bool ScriptedLlm::hasToolResults(const Json &body)
{
    if (body.contains("messages"))
        for (const Json &m : body["messages"])
            if (m.value("role", std::string()) == "tool")
                return true;
    return false;
}

void ScriptedLlm::on(const QString &step, Responder responder)
{
    QMutexLocker lock(&m_mutex);
    m_responders[step] = std::move(responder);
}

namespace {

ScriptedReply chatCompletion(const Json &message, const char *finishReason, int promptTokens, int completionTokens)
{
    const Json reply = {{"id", "chatcmpl-test"},
                        {"object", "chat.completion"},
                        {"model", "gpt-test"},
                        {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", finishReason}}}},
                        {"usage",
                         {{"prompt_tokens", promptTokens},
                          {"completion_tokens", completionTokens},
                          {"total_tokens", promptTokens + completionTokens}}}};
    return ScriptedReply::json(QByteArray::fromStdString(reply.dump()));
}

} // namespace

ScriptedReply ScriptedLlm::completion(const QString &content, int promptTokens, int completionTokens)
{
    return chatCompletion(Json{{"role", "assistant"}, {"content", content.toStdString()}}, "stop", promptTokens, completionTokens);
}

ScriptedReply ScriptedLlm::toolCallsReply(const QList<QPair<QString, QString>> &calls, int promptTokens, int completionTokens)
{
    Json list = Json::array();
    int n = 0;
    for (const auto &[name, arguments] : calls)
        list.push_back({{"id", "call_" + std::to_string(++n)},
                        {"type", "function"},
                        {"function", {{"name", name.toStdString()}, {"arguments", arguments.toStdString()}}}});
    return chatCompletion(Json{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", list}}, "tool_calls", promptTokens,
                          completionTokens);
}

ScriptedReply ScriptedLlm::toolCallReply(const QString &tool, const QString &rawArguments)
{
    return toolCallsReply({{tool, rawArguments}});
}

void ScriptedLlm::onJson(const QString &step, const Json &value)
{
    const QString text = QString::fromStdString(value.dump());
    on(step, [text](const Json &) { return completion(text); });
}

void ScriptedLlm::onText(const QString &step, const QString &text)
{
    on(step, [text](const Json &) { return completion(text); });
}

void ScriptedLlm::onError(const QString &step, int status)
{
    on(step, [status](const Json &) {
        return ScriptedReply::json(R"({"error":{"message":"scripted failure","type":"server_error"}})", status);
    });
}

void ScriptedLlm::onToolCall(const QString &step, const QString &tool, const Json &arguments)
{
    const ScriptedReply reply = toolCallReply(tool, QString::fromStdString(arguments.dump()));
    on(step, [reply](const Json &) { return reply; });
}

int ScriptedLlm::calls(const QString &step) const
{
    QMutexLocker lock(&m_mutex);
    return int(m_requests.value(step).size());
}

int ScriptedLlm::totalCalls() const
{
    QMutexLocker lock(&m_mutex);
    int n = 0;
    for (const auto &l : m_requests)
        n += int(l.size());
    return n;
}

QList<Json> ScriptedLlm::requests(const QString &step) const
{
    QMutexLocker lock(&m_mutex);
    return m_requests.value(step);
}

QString ScriptedLlm::lastPrompt(const QString &step) const
{
    const QList<Json> all = requests(step);
    if (all.isEmpty())
        return {};
    QStringList parts;
    for (const Json &m : all.back()["messages"])
        if (m.contains("content") && m["content"].is_string())
            parts << QString::fromStdString(m["content"].get<std::string>());
    return parts.join(QLatin1Char('\n'));
}

Json ScriptedLlm::config(const Json &extra) const
{
    Json cfg = {{"model", "gpt-test"},
                {"base_url", (m_server.baseUrl().toString() + QStringLiteral("/v1")).toStdString()},
                {"api_key", "sk-test-secret-key"},
                {"max_retries", 0},
                {"supports_json_schema", true}, // a custom base URL otherwise gets the instruction path
                {"timeout", 20}};
    cfg.update(extra);
    return Json{{"provider", "openai"}, {"config", cfg}};
}

std::shared_ptr<LlmProvider> ScriptedLlm::provider(const Json &extra) const
{
    const Json c = config(extra);
    return PluginRegistry::instance().createLlm(QStringLiteral("openai"), c["config"]);
}

} // namespace mneme::test
