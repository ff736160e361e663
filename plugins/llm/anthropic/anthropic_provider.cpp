#include "anthropic_provider.h"

#include <mneme/core/error.h>

#include <QRegularExpression>

namespace mneme {

namespace {

const QString kDefaultModel = QStringLiteral("claude-3-5-haiku-latest");
const QString kDefaultVersion = QStringLiteral("2023-06-01");

std::string utf8(const QString &s)
{
    return s.toStdString();
}

// The string at `key` of an object, empty when absent or not a string.
QString stringAt(const Json &object, const char *key)
{
    if (!object.is_object())
        return {};
    const auto it = object.find(key);
    if (it == object.end() || !it->is_string())
        return {};
    return QString::fromStdString(it->get<std::string>());
}

// The integer at `key` of an object, or `fallback`.
int intAt(const Json &object, const char *key, int fallback = 0)
{
    if (!object.is_object())
        return fallback;
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number())
        return fallback;
    return int(it->get<double>());
}

// Anthropic accepts tool_use ids made of letters, digits, '_' and '-'. Ids written by other providers
// (or by hand) are mapped onto that alphabet the same way in tool_use and tool_result blocks, so the
// pairs still match.
QString toolUseId(const QString &id)
{
    static const QRegularExpression other(QStringLiteral("[^A-Za-z0-9_-]"));
    QString out = id;
    out.replace(other, QStringLiteral("_"));
    return out;
}

// Prompt tokens as Anthropic counts them: uncached input plus what was written to and read from the
// prompt cache.
int promptTokensOf(const Json &usage)
{
    return intAt(usage, "input_tokens") + intAt(usage, "cache_creation_input_tokens")
         + intAt(usage, "cache_read_input_tokens");
}

// Appends `blocks` to the conversation, merging them into the last turn when it has the same role.
void addTurn(Json &messages, const char *role, Json blocks)
{
    if (!messages.empty() && messages.back()["role"] == role) {
        Json &content = messages.back()["content"];
        for (Json &b : blocks)
            content.push_back(std::move(b));
        return;
    }
    messages.push_back(Json{{"role", role}, {"content", std::move(blocks)}});
}

Json textBlock(const QString &text)
{
    return Json{{"type", "text"}, {"text", utf8(text)}};
}

} // namespace

ProviderDefaults AnthropicProvider::defaults()
{
    ProviderDefaults d;
    d.provider = QStringLiteral("anthropic");
    d.defaultModel = kDefaultModel;
    d.defaultBaseUrl = QStringLiteral("https://api.anthropic.com");
    d.apiKeyEnv = {QStringLiteral("ANTHROPIC_API_KEY")};
    d.baseUrlEnv = {QStringLiteral("ANTHROPIC_BASE_URL")};
    d.apiKeyRequired = true;
    d.extraKeys = {QStringLiteral("anthropic_version"), QStringLiteral("anthropic_beta")};
    return d;
}

AnthropicProvider::AnthropicProvider(const Json &config, QObject *parent)
    : HttpChatProvider(ProviderSettings::read(config, defaults()), defaults(), parent)
{
    m_version = settings().string("anthropic_version", kDefaultVersion);
    m_beta = settings().string("anthropic_beta");
}

AnthropicProvider::~AnthropicProvider()
{
    shutdown();
}

LlmProvider::Capabilities AnthropicProvider::capabilities() const
{
    return Capability::Tools | Capability::Streaming | Capability::ParallelTools;
}

HttpRequest AnthropicProvider::buildRequest(const ChatRequest &request, bool stream) const
{
    const ProviderSettings &s = settings();
    const auto invalid = [this](const QString &what) {
        return Error(ErrorKind::InvalidArgument, QStringLiteral("%1: %2").arg(context(), what));
    };

    Json body = Json::object();
    body["model"] = utf8(s.model);
    // The API insists on max_tokens; the request's, else the config's (already applied), else ours.
    body["max_tokens"] = request.maxTokens.value_or(DefaultMaxTokens);

    // System messages go to the top-level "system" text, in order.
    QStringList system;
    Json messages = Json::array();
    for (const ChatMessage &m : request.messages) {
        switch (m.role) {
        case ChatMessage::Role::System:
            if (!m.content.trimmed().isEmpty())
                system << m.content;
            break;
        case ChatMessage::Role::User:
            // The API refuses empty text blocks; an empty user message says nothing anyway.
            if (!m.content.isEmpty())
                addTurn(messages, "user", Json::array({textBlock(m.content)}));
            break;
        case ChatMessage::Role::Assistant: {
            Json blocks = Json::array();
            if (!m.content.isEmpty())
                blocks.push_back(textBlock(m.content));
            for (const ToolCall &call : m.toolCalls) {
                blocks.push_back(Json{{"type", "tool_use"},
                                      {"id", utf8(toolUseId(call.id))},
                                      {"name", utf8(call.name)},
                                      {"input", call.arguments.is_object() ? call.arguments : Json::object()}});
            }
            if (!blocks.empty())
                addTurn(messages, "assistant", std::move(blocks));
            break;
        }
        case ChatMessage::Role::Tool: {
            // A tool's answer is a tool_result block of the next user turn; consecutive results (and a
            // user message right after them) share that turn.
            Json block{{"type", "tool_result"}, {"tool_use_id", utf8(toolUseId(m.toolCallId))}};
            if (!m.content.isEmpty())
                block["content"] = utf8(m.content);
            addTurn(messages, "user", Json::array({std::move(block)}));
            break;
        }
        }
    }
    if (messages.empty())
        throw invalid(QStringLiteral("the request has no user or assistant message with content; "
                                     "Anthropic needs at least one."));
    // A final assistant turn is a prefill the model continues; the API refuses trailing whitespace there.
    if (messages.back()["role"] == "assistant") {
        Json &last = messages.back()["content"].back();
        if (last["type"] == "text") {
            QString text = QString::fromStdString(last["text"].get<std::string>());
            while (!text.isEmpty() && text.back().isSpace())
                text.chop(1);
            if (text.isEmpty())
                messages.back()["content"].erase(messages.back()["content"].size() - 1);
            else
                last["text"] = utf8(text);
            if (messages.back()["content"].empty())
                messages.erase(messages.size() - 1);
        }
    }
    if (!system.isEmpty())
        body["system"] = utf8(system.join(QStringLiteral("\n\n")));
    body["messages"] = std::move(messages);

    const QString choice = request.toolChoice.trimmed();
    if (!request.tools.empty()) {
        Json tools = Json::array();
        QStringList names;
        for (const ToolSpec &t : request.tools) {
            Json tool{{"name", utf8(t.name)}};
            if (!t.description.isEmpty())
                tool["description"] = utf8(t.description);
            tool["input_schema"] = t.parameters.is_object() ? t.parameters
                                                            : Json{{"type", "object"}, {"properties", Json::object()}};
            tools.push_back(std::move(tool));
            names << t.name;
        }
        body["tools"] = std::move(tools);

        Json toolChoice;
        if (choice.isEmpty() || choice == QLatin1String("auto"))
            toolChoice = Json{{"type", "auto"}};
        else if (choice == QLatin1String("required") || choice == QLatin1String("any"))
            toolChoice = Json{{"type", "any"}};
        else if (choice == QLatin1String("none"))
            toolChoice = Json{{"type", "none"}};
        else if (names.contains(choice))
            toolChoice = Json{{"type", "tool"}, {"name", utf8(choice)}};
        else
            throw invalid(QStringLiteral("the tool choice \"%1\" is not one of the request's tools (%2); name one "
                                         "of them, or use \"auto\", \"required\" or \"none\".")
                              .arg(choice, names.join(QStringLiteral(", "))));
        const bool single = !request.parallelToolCalls && toolChoice["type"] != "none";
        if (single)
            toolChoice["disable_parallel_tool_use"] = true;
        // The API's default is "auto" with parallel calls allowed; say so only when asked otherwise.
        if (!choice.isEmpty() || single)
            body["tool_choice"] = std::move(toolChoice);
    } else if (!choice.isEmpty() && choice != QLatin1String("auto") && choice != QLatin1String("none")) {
        throw invalid(QStringLiteral("the tool choice \"%1\" needs tools, but the request offers none; add the tools "
                                     "or leave the tool choice empty.")
                          .arg(choice));
    }

    if (request.temperature) {
        const double t = *request.temperature;
        if (!(t >= 0.0 && t <= 1.0))
            throw invalid(QStringLiteral("Anthropic accepts a temperature from 0 to 1, not %1; lower the temperature "
                                         "in the request or the config.")
                              .arg(t));
        body["temperature"] = t;
    }
    if (!request.stop.isEmpty()) {
        Json stops = Json::array();
        for (const QString &stop : request.stop)
            stops.push_back(utf8(stop));
        body["stop_sequences"] = std::move(stops);
    }
    if (stream)
        body["stream"] = true;

    HttpRequest http;
    http.method = "POST";
    // The base URL is normally the host alone; accept one that already ends in /v1, as other
    // clients write it.
    const bool hasVersionPath = s.baseUrl.path().endsWith(QLatin1String("/v1"));
    http.url = s.endpoint(hasVersionPath ? QStringLiteral("/messages") : QStringLiteral("/v1/messages"));
    if (!s.apiKey.isEmpty())
        http.headers.append({QByteArrayLiteral("x-api-key"), s.apiKey.toUtf8()});
    http.headers.append({QByteArrayLiteral("anthropic-version"), m_version.toUtf8()});
    if (!m_beta.isEmpty())
        http.headers.append({QByteArrayLiteral("anthropic-beta"), m_beta.toUtf8()});
    http.headers.append({QByteArrayLiteral("content-type"), QByteArrayLiteral("application/json")});
    http.headers.append({QByteArrayLiteral("accept"), stream ? QByteArrayLiteral("text/event-stream")
                                                             : QByteArrayLiteral("application/json")});
    http.body = QByteArray::fromStdString(body.dump());
    http.what = context();
    return http;
}

ChatResponse AnthropicProvider::parseResponse(const Json &body) const
{
    if (!body.is_object())
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: the reply is not a JSON object: %2").arg(context(), QString::fromStdString(body.dump()).left(200)));
    if (stringAt(body, "type") == QLatin1String("error"))
        throw errorFromObject(body.value("error", Json::object()));
    const auto content = body.find("content");
    if (content == body.end() || !content->is_array())
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: the reply has no \"content\" array, so it is not a Messages API reply: %2")
                        .arg(context(), QString::fromStdString(body.dump()).left(200)));

    ChatResponse out;
    for (const Json &block : *content) {
        const QString type = stringAt(block, "type");
        if (type == QLatin1String("text")) {
            out.text += stringAt(block, "text");
        } else if (type == QLatin1String("tool_use")) {
            ToolCall call;
            call.id = stringAt(block, "id");
            if (call.id.isEmpty())
                call.id = newCallId();
            call.name = stringAt(block, "name");
            const auto input = block.find("input");
            if (input != block.end() && input->is_object())
                call.arguments = *input;
            else if (input != block.end() && input->is_string())
                call.arguments = parseArguments(QString::fromStdString(input->get<std::string>()));
            out.toolCalls.push_back(std::move(call));
        }
        // thinking, redacted_thinking and server-side tool blocks carry nothing ChatResponse holds.
    }
    const QString stop = stringAt(body, "stop_reason");
    out.finishReason = !stop.isEmpty()       ? finishReason(stop)
                     : out.toolCalls.empty() ? QStringLiteral("stop")
                                             : QStringLiteral("tool_calls");
    const Json usage = body.value("usage", Json::object());
    out.usage.promptTokens = promptTokensOf(usage);
    out.usage.completionTokens = intAt(usage, "output_tokens");
    out.model = stringAt(body, "model");
    if (out.model.isEmpty())
        out.model = settings().model;
    return out;
}

void AnthropicProvider::onStreamEvent(StreamState &state, const QByteArray &event, const Json &data)
{
    QString type = stringAt(data, "type");
    if (type.isEmpty())
        type = QString::fromUtf8(event);
    const int index = intAt(data, "index", -1);

    if (type == QLatin1String("message_start")) {
        const Json message = data.value("message", Json::object());
        const QString model = stringAt(message, "model");
        if (!model.isEmpty())
            state.response.model = model;
        const Json usage = message.value("usage", Json::object());
        state.response.usage.promptTokens = promptTokensOf(usage);
        state.response.usage.completionTokens = intAt(usage, "output_tokens");
    } else if (type == QLatin1String("content_block_start")) {
        const Json block = data.value("content_block", Json::object());
        const QString blockType = stringAt(block, "type");
        if (blockType == QLatin1String("text")) {
            appendText(state, stringAt(block, "text"));
        } else if (blockType == QLatin1String("tool_use")) {
            // The input starts as {} and arrives as input_json_delta pieces; a start that already
            // carries the whole input counts as its first piece.
            const Json input = block.value("input", Json::object());
            const QString first = input.is_object() && !input.empty() ? QString::fromStdString(input.dump()) : QString();
            appendToolCall(state, index, stringAt(block, "id"), stringAt(block, "name"), first);
        }
    } else if (type == QLatin1String("content_block_delta")) {
        const Json delta = data.value("delta", Json::object());
        const QString deltaType = stringAt(delta, "type");
        if (deltaType == QLatin1String("text_delta")) {
            appendText(state, stringAt(delta, "text"));
        } else if (deltaType == QLatin1String("input_json_delta")) {
            // Only for the tool_use blocks this reply started (server-side tools stream input too).
            if (state.calls.count(index))
                appendToolCall(state, index, QString(), QString(), stringAt(delta, "partial_json"));
        }
        // thinking_delta, signature_delta, citations_delta: nothing ChatResponse holds.
    } else if (type == QLatin1String("message_delta")) {
        const QString stop = stringAt(data.value("delta", Json::object()), "stop_reason");
        if (!stop.isEmpty())
            state.response.finishReason = finishReason(stop);
        const Json usage = data.value("usage", Json::object());
        // Counts in message_delta are running totals, not increments.
        if (usage.contains("output_tokens"))
            state.response.usage.completionTokens = intAt(usage, "output_tokens");
        if (usage.contains("input_tokens"))
            state.response.usage.promptTokens = promptTokensOf(usage);
    } else if (type == QLatin1String("message_stop")) {
        state.done = true;
    } else if (type == QLatin1String("error")) {
        throw errorFromObject(data.value("error", Json::object()));
    }
    // ping, content_block_stop and event types added later carry nothing to assemble.
}

Error AnthropicProvider::errorFromObject(const Json &error) const
{
    const QString type = stringAt(error, "type");
    QString message = stringAt(error, "message");
    if (message.isEmpty())
        message = error.is_null() ? QStringLiteral("no details") : QString::fromStdString(error.dump()).left(300);
    message = HttpClient::redact(message, settings().http.secrets).trimmed();
    while (message.endsWith(QLatin1Char('.')))
        message.chop(1);

    // The kinds and the HTTP statuses Anthropic documents for each error type.
    ErrorKind kind = ErrorKind::Provider;
    int status = 0;
    QString advice;
    if (type == QLatin1String("overloaded_error")) {
        kind = ErrorKind::ServerError;
        status = 529;
        advice = QStringLiteral("Anthropic is overloaded; retry later.");
    } else if (type == QLatin1String("api_error")) {
        kind = ErrorKind::ServerError;
        status = 500;
        advice = QStringLiteral("Anthropic failed internally; retry later.");
    } else if (type == QLatin1String("rate_limit_error")) {
        kind = ErrorKind::RateLimited;
        status = 429;
        advice = QStringLiteral("Lower max_rpm or retry later.");
    } else if (type == QLatin1String("authentication_error")) {
        kind = ErrorKind::Authentication;
        status = 401;
        advice = QStringLiteral("Check the API key (api_key in the config or ANTHROPIC_API_KEY).");
    } else if (type == QLatin1String("permission_error")) {
        kind = ErrorKind::Authentication;
        status = 403;
        advice = QStringLiteral("The API key may not use this model or feature; check its permissions.");
    } else if (type == QLatin1String("billing_error")) {
        kind = ErrorKind::Provider;
        status = 402;
        advice = QStringLiteral("Check the Anthropic account's billing.");
    } else if (type == QLatin1String("timeout_error")) {
        kind = ErrorKind::Timeout;
        status = 504;
        advice = QStringLiteral("Retry later, or ask for fewer tokens.");
    } else if (type == QLatin1String("not_found_error")) {
        kind = ErrorKind::BadRequest;
        status = 404;
        advice = QStringLiteral("Check the model name and the base URL.");
    } else if (type == QLatin1String("request_too_large")) {
        kind = ErrorKind::BadRequest;
        status = 413;
        advice = QStringLiteral("Send less: the request is larger than the API accepts.");
    } else if (type == QLatin1String("invalid_request_error")) {
        static const QRegularExpression tooLong(QStringLiteral("prompt is too long|context (?:window|length)|too many tokens"),
                                                QRegularExpression::CaseInsensitiveOption);
        status = 400;
        if (tooLong.match(message).hasMatch()) {
            kind = ErrorKind::ContextLength;
            advice = QStringLiteral("Shorten the prompt or use a model with a larger context window.");
        } else {
            kind = ErrorKind::BadRequest;
            advice = QStringLiteral("The request was refused as invalid; the message above says which part.");
        }
    } else {
        advice = QStringLiteral("Retry later; if it persists, report the message above.");
    }
    const QString shownType = type.isEmpty() ? QStringLiteral("an error") : type;
    return Error(kind, QStringLiteral("%1 failed: Anthropic reported %2: %3. %4").arg(context(), shownType, message, advice),
                 status);
}

} // namespace mneme
