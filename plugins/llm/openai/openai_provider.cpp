#include "openai_provider.h"

#include <mneme/core/error.h>

#include <QRegularExpression>
#include <algorithm>

namespace mneme {

namespace {

QString stringOf(const Json &object, const char *key)
{
    if (!object.is_object())
        return {};
    const auto it = object.find(key);
    if (it == object.end() || !it->is_string())
        return {};
    return QString::fromStdString(it->get<std::string>());
}

int intOf(const Json &object, const char *key)
{
    if (!object.is_object())
        return 0;
    const auto it = object.find(key);
    return it != object.end() && it->is_number() ? it->get<int>() : 0;
}

// A message's content: a string, null, or (some compatible servers) a list of {"type": "text", "text"} parts.
QString contentText(const Json &content)
{
    if (content.is_string())
        return QString::fromStdString(content.get<std::string>());
    QString text;
    if (content.is_array()) {
        for (const Json &part : content)
            text += stringOf(part, "text");
    }
    return text;
}

// Function arguments arrive as a JSON string; a few compatible servers send the object itself.
QString argumentsText(const Json &arguments)
{
    if (arguments.is_string())
        return QString::fromStdString(arguments.get<std::string>());
    if (arguments.is_null())
        return {};
    return QString::fromStdString(arguments.dump());
}

// The arguments of a call we send back in an assistant message, as the JSON string the protocol wants.
std::string argumentsString(const Json &arguments)
{
    if (arguments.is_object() && arguments.size() == 1 && arguments.contains("_raw") && arguments["_raw"].is_string())
        return arguments["_raw"].get<std::string>(); // what the model wrote, when it was not JSON
    return arguments.dump();
}

Json messageJson(const ChatMessage &m)
{
    Json j = {{"role", ChatMessage::roleName(m.role)}};
    switch (m.role) {
    case ChatMessage::Role::Assistant:
        if (m.toolCalls.empty()) {
            j["content"] = m.content;
            break;
        }
        j["content"] = m.content.isEmpty() ? Json(nullptr) : Json(m.content);
        j["tool_calls"] = Json::array();
        for (const ToolCall &c : m.toolCalls)
            j["tool_calls"].push_back({{"id", c.id},
                                       {"type", "function"},
                                       {"function", {{"name", c.name}, {"arguments", argumentsString(c.arguments)}}}});
        break;
    case ChatMessage::Role::Tool:
        j["tool_call_id"] = m.toolCallId;
        j["content"] = m.content;
        break;
    default:
        j["content"] = m.content;
        break;
    }
    return j;
}

// json_schema names must match ^[a-zA-Z0-9_-]{1,64}$.
QString schemaName(const QString &name)
{
    QString out;
    for (const QChar c : name) {
        const bool ok = (c >= QLatin1Char('a') && c <= QLatin1Char('z')) || (c >= QLatin1Char('A') && c <= QLatin1Char('Z'))
                     || (c >= QLatin1Char('0') && c <= QLatin1Char('9')) || c == QLatin1Char('_') || c == QLatin1Char('-');
        out += ok ? c : QLatin1Char('_');
    }
    out.truncate(64);
    return out.isEmpty() ? QStringLiteral("response") : out;
}

// Whether OpenAI's strict mode accepts the schema: every object lists all its properties as required
// and forbids additional ones. Otherwise the schema is sent with strict false (OpenAI refuses a
// non-conforming schema in strict mode), and the reply is still validated against it.
bool strictCompatible(const Json &schema)
{
    if (schema.is_array()) {
        for (const Json &s : schema) {
            if (!strictCompatible(s))
                return false;
        }
        return true;
    }
    if (!schema.is_object())
        return true;
    if (schema.contains("properties")) {
        const Json &properties = schema["properties"];
        if (!properties.is_object())
            return false;
        const auto ap = schema.find("additionalProperties");
        if (ap == schema.end() || *ap != false)
            return false;
        const Json required = schema.value("required", Json::array());
        for (auto it = properties.begin(); it != properties.end(); ++it) {
            if (std::find(required.begin(), required.end(), Json(it.key())) == required.end() || !strictCompatible(it.value()))
                return false;
        }
    } else if (schema.value("type", Json()) == "object" && schema.value("additionalProperties", Json(true)) != false) {
        return false;
    }
    for (const char *key : {"items", "anyOf", "$defs", "definitions"}) {
        if (!schema.contains(key))
            continue;
        const Json &sub = schema[key];
        if (sub.is_object() && (std::string(key) == "$defs" || std::string(key) == "definitions")) {
            for (const Json &s : sub) {
                if (!strictCompatible(s))
                    return false;
            }
        } else if (!strictCompatible(sub)) {
            return false;
        }
    }
    return true;
}

bool sensitiveHeader(const QString &name)
{
    static const QRegularExpression re(QStringLiteral("auth|key|token|secret|cookie|password"),
                                       QRegularExpression::CaseInsensitiveOption);
    return re.match(name).hasMatch();
}

// The config's "headers" object, checked: {"name": "value", ...}.
HttpHeaders configHeaders(const ProviderSettings &settings)
{
    HttpHeaders headers;
    const auto it = settings.config.find("headers");
    if (it == settings.config.end() || it->is_null())
        return headers;
    const auto bad = [&] {
        return Error(ErrorKind::InvalidArgument,
                     QStringLiteral("The %1 provider's config key \"headers\" must be an object of header names and "
                                    "string values, e.g. {\"HTTP-Referer\": \"https://example.com\"}.")
                         .arg(settings.provider));
    };
    if (!it->is_object())
        throw bad();
    for (auto h = it->begin(); h != it->end(); ++h) {
        if (!h->is_string() || h.key().empty())
            throw bad();
        headers.append({QByteArray::fromStdString(h.key()), QByteArray::fromStdString(h->get<std::string>())});
    }
    return headers;
}

// Settings with every credential-like extra header value added to the secrets the HTTP client redacts.
ProviderSettings withHeaderSecrets(ProviderSettings settings)
{
    for (const auto &[name, value] : configHeaders(settings)) {
        if (sensitiveHeader(QString::fromLatin1(name)) && !value.isEmpty())
            settings.http.secrets << QString::fromUtf8(value);
    }
    return settings;
}

ProviderSettings openAiSettings(const Json &config)
{
    ProviderSettings s = ProviderSettings::read(config, OpenAiProvider::defaults());
    // OpenAI's own endpoint written out (OPENAI_BASE_URL=https://api.openai.com/v1) is still OpenAI:
    // the key is required and structured output is native.
    if (s.baseUrl.host().compare(QLatin1String("api.openai.com"), Qt::CaseInsensitive) == 0)
        s.baseUrlIsDefault = true;
    return s;
}

} // namespace

ProviderDefaults OpenAiProvider::defaults()
{
    ProviderDefaults d;
    d.provider = QStringLiteral("openai");
    d.defaultModel = QStringLiteral("gpt-4o-mini");
    d.defaultBaseUrl = QStringLiteral("https://api.openai.com/v1");
    d.apiKeyEnv = QStringList{QStringLiteral("OPENAI_API_KEY")};
    d.baseUrlEnv = QStringList{QStringLiteral("OPENAI_BASE_URL"), QStringLiteral("OPENAI_API_BASE")};
    d.apiKeyRequired = true;
    d.extraKeys = QStringList{QStringLiteral("organization"), QStringLiteral("project"),
                              QStringLiteral("supports_json_schema"), QStringLiteral("headers")};
    return d;
}

OpenAiProvider::OpenAiProvider(const Json &config, QObject *parent)
    : OpenAiProvider(openAiSettings(config), parent)
{
}

OpenAiProvider::OpenAiProvider(const ProviderSettings &settings, QObject *parent)
    : OpenAiProvider(settings, defaults(), settings.baseUrlIsDefault, parent)
{
    const QString organization = settings.string("organization");
    if (!organization.isEmpty())
        m_extraHeaders.prepend({QByteArrayLiteral("OpenAI-Organization"), organization.toUtf8()});
    const QString project = settings.string("project");
    if (!project.isEmpty())
        m_extraHeaders.prepend({QByteArrayLiteral("OpenAI-Project"), project.toUtf8()});
}

OpenAiProvider::OpenAiProvider(ProviderSettings settings, ProviderDefaults defaults, bool nativeByDefault, QObject *parent)
    : HttpChatProvider(withHeaderSecrets(std::move(settings)), std::move(defaults), parent), m_extraHeaders(configHeaders(this->settings())), m_nativeSchema(nativeByDefault)
{
    const auto it = this->settings().config.find("supports_json_schema");
    if (it != this->settings().config.end() && !it->is_null()) {
        if (!it->is_boolean())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("The %1 provider's config key \"supports_json_schema\" must be true or false.")
                            .arg(this->settings().provider));
        m_nativeSchema = it->get<bool>();
    }
}

OpenAiProvider::~OpenAiProvider()
{
    shutdown();
}

LlmProvider::Capabilities OpenAiProvider::capabilities() const
{
    Capabilities c = Capability::Tools | Capability::Streaming | Capability::ParallelTools;
    if (m_nativeSchema)
        c |= Capability::JsonSchema;
    return c;
}

bool OpenAiProvider::usesMaxCompletionTokens(const QString &model)
{
    static const QRegularExpression re(QStringLiteral("^(?:o[134](?:$|[-_.:])|gpt-5)"), QRegularExpression::CaseInsensitiveOption);
    return re.match(model.mid(model.lastIndexOf(QLatin1Char('/')) + 1)).hasMatch();
}

QUrl OpenAiProvider::chatUrl() const
{
    return settings().endpoint(QStringLiteral("/chat/completions"));
}

HttpHeaders OpenAiProvider::authHeaders() const
{
    if (settings().apiKey.isEmpty())
        return {}; // a compatible server without a key (the public endpoint was refused before)
    return {{QByteArrayLiteral("Authorization"), QByteArrayLiteral("Bearer ") + settings().apiKey.toUtf8()}};
}

bool OpenAiProvider::sendsModel() const
{
    return true;
}

bool OpenAiProvider::nativeSchema(const ChatRequest &request) const
{
    // OpenAI's json_schema wants an object at the root; anything else goes through the instruction.
    const Json &schema = request.responseSchema;
    return m_nativeSchema && schema.is_object()
        && (schema.value("type", Json()) == "object" || (!schema.contains("type") && schema.contains("properties")));
}

Json OpenAiProvider::requestBody(const ChatRequest &request, bool stream) const
{
    Json body = Json::object();
    if (sendsModel())
        body["model"] = settings().model;
    Json messages = Json::array();
    for (const ChatMessage &m : request.messages)
        messages.push_back(messageJson(m));
    body["messages"] = std::move(messages);

    if (!request.tools.empty()) {
        Json tools = Json::array();
        for (const ToolSpec &t : request.tools) {
            Json function = {{"name", t.name}, {"parameters", t.parameters}};
            if (!t.description.isEmpty())
                function["description"] = t.description;
            tools.push_back({{"type", "function"}, {"function", std::move(function)}});
        }
        body["tools"] = std::move(tools);
        const QString choice = request.toolChoice;
        if (choice == QLatin1String("auto") || choice == QLatin1String("none") || choice == QLatin1String("required"))
            body["tool_choice"] = choice;
        else if (!choice.isEmpty())
            body["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice}}}};
        if (!request.parallelToolCalls)
            body["parallel_tool_calls"] = false;
    }

    if (!request.responseSchema.is_null() && nativeSchema(request))
        body["response_format"] = {{"type", "json_schema"},
                                   {"json_schema", {{"name", schemaName(request.responseSchemaName)}, {"schema", request.responseSchema}, {"strict", strictCompatible(request.responseSchema)}}}};
    if (request.temperature)
        body["temperature"] = *request.temperature;
    if (request.maxTokens)
        body[usesMaxCompletionTokens(settings().model) ? "max_completion_tokens" : "max_tokens"] = *request.maxTokens;
    if (!request.stop.isEmpty())
        body["stop"] = request.stop;
    if (stream) {
        body["stream"] = true;
        body["stream_options"] = {{"include_usage", true}};
    }
    return body;
}

HttpRequest OpenAiProvider::buildRequest(const ChatRequest &request, bool stream) const
{
    HttpRequest http;
    http.url = chatUrl();
    http.headers = authHeaders();
    http.headers += m_extraHeaders; // after the credentials, so a configured header replaces ours
    http.headers.append({QByteArrayLiteral("Content-Type"), QByteArrayLiteral("application/json")});
    http.headers.append({QByteArrayLiteral("Accept"), stream ? QByteArrayLiteral("text/event-stream") : QByteArrayLiteral("application/json")});
    http.body = QByteArray::fromStdString(requestBody(request, stream).dump(-1, ' ', false, Json::error_handler_t::replace));
    return http;
}

Error OpenAiProvider::errorFrom(const Json &error) const
{
    QString message = error.is_string() ? QString::fromStdString(error.get<std::string>()) : stringOf(error, "message");
    const QString type = stringOf(error, "type").toLower();
    QString code = stringOf(error, "code").toLower();
    int status = 0;
    if (error.is_object() && error.contains("code") && error["code"].is_number_integer()) {
        status = error["code"].get<int>(); // vLLM puts the HTTP status there
        code.clear();
    }
    if (message.isEmpty())
        message = QString::fromStdString(error.dump()).left(300);

    ErrorKind kind = ErrorKind::Provider;
    if (code == QLatin1String("context_length_exceeded") || message.contains(QLatin1String("maximum context length"), Qt::CaseInsensitive))
        kind = ErrorKind::ContextLength;
    else if (code == QLatin1String("invalid_api_key") || type.contains(QLatin1String("auth")) || status == 401 || status == 403)
        kind = ErrorKind::Authentication;
    else if (code.contains(QLatin1String("rate_limit")) || code == QLatin1String("insufficient_quota")
             || type.contains(QLatin1String("rate_limit")) || status == 429)
        kind = ErrorKind::RateLimited;
    else if (type.contains(QLatin1String("server")) || type.contains(QLatin1String("internal")) || status >= 500)
        kind = ErrorKind::ServerError;
    else if (type.contains(QLatin1String("invalid_request")) || type.contains(QLatin1String("badrequest"))
             || type.contains(QLatin1String("bad_request")) || (status >= 400 && status < 500))
        kind = ErrorKind::BadRequest;

    QString detail = code.isEmpty() ? type : code;
    if (!detail.isEmpty() && !message.contains(detail))
        message += QStringLiteral(" (%1)").arg(detail);
    return Error(kind,
                 HttpClient::redact(QStringLiteral("%1 failed: the provider reported an error: %2").arg(context(), message),
                                    settings().http.secrets),
                 status);
}

ChatResponse OpenAiProvider::parseResponse(const Json &body) const
{
    if (!body.is_object())
        throw Error(ErrorKind::MalformedReply, QStringLiteral("%1: the reply is not a JSON object.").arg(context()));
    if (body.contains("error") && !body["error"].is_null())
        throw errorFrom(body["error"]);

    ChatResponse r;
    r.model = stringOf(body, "model");
    const Json usage = body.value("usage", Json::object());
    r.usage.promptTokens = intOf(usage, "prompt_tokens");
    r.usage.completionTokens = intOf(usage, "completion_tokens");

    const Json choices = body.value("choices", Json());
    if (!choices.is_array() || choices.empty() || !choices[0].is_object() || !choices[0].contains("message"))
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: the reply has no choices[0].message: %2")
                        .arg(context(), QString::fromStdString(body.dump()).left(200)));
    const Json &choice = choices[0];
    const Json &message = choice["message"];
    r.text = contentText(message.value("content", Json()));
    for (const Json &call : message.value("tool_calls", Json::array())) {
        const Json function = call.value("function", Json::object());
        const QString id = stringOf(call, "id");
        r.toolCalls.push_back(ToolCall{id.isEmpty() ? newCallId() : id, stringOf(function, "name"),
                                       parseArguments(argumentsText(function.value("arguments", Json())))});
    }
    r.finishReason = finishReason(stringOf(choice, "finish_reason"));
    const QString refusal = stringOf(message, "refusal");
    if (!refusal.isEmpty()) {
        r.text = refusal;
        r.finishReason = QStringLiteral("content_filter");
    }
    if (r.finishReason.isEmpty())
        r.finishReason = r.toolCalls.empty() ? QStringLiteral("stop") : QStringLiteral("tool_calls");
    return r;
}

HttpChatProvider::StreamFormat OpenAiProvider::streamFormat() const
{
    return StreamFormat::ServerSentEvents;
}

void OpenAiProvider::onStreamEvent(StreamState &state, const QByteArray &, const Json &data)
{
    if (!data.is_object())
        return;
    if (data.contains("error") && !data["error"].is_null())
        throw errorFrom(data["error"]);
    if (state.response.model.isEmpty())
        state.response.model = stringOf(data, "model");
    if (data.contains("usage") && data["usage"].is_object()) {
        state.response.usage.promptTokens = intOf(data["usage"], "prompt_tokens");
        state.response.usage.completionTokens = intOf(data["usage"], "completion_tokens");
    }
    const Json choices = data.value("choices", Json::array());
    for (const Json &choice : choices) {
        if (!choice.is_object() || intOf(choice, "index") != 0)
            continue; // one reply is asked for (n = 1)
        const Json delta = choice.value("delta", Json::object());
        appendText(state, contentText(delta.value("content", Json())));
        const QString refusal = stringOf(delta, "refusal");
        if (!refusal.isEmpty()) {
            appendText(state, refusal);
            state.response.finishReason = QStringLiteral("content_filter");
        }
        for (const Json &call : delta.value("tool_calls", Json::array())) {
            const QString id = stringOf(call, "id");
            int index = 0;
            if (call.contains("index") && call["index"].is_number_integer()) {
                index = call["index"].get<int>();
            } else if (!state.calls.empty()) {
                // No index (a few compatible servers): a new id starts a new call, else it continues the last.
                index = state.calls.rbegin()->first;
                if (!id.isEmpty() && state.calls.rbegin()->second.id != id)
                    ++index;
            }
            const Json function = call.value("function", Json::object());
            appendToolCall(state, index, id, stringOf(function, "name"), argumentsText(function.value("arguments", Json())));
        }
        const QString reason = stringOf(choice, "finish_reason");
        if (!reason.isEmpty() && state.response.finishReason != QLatin1String("content_filter"))
            state.response.finishReason = finishReason(reason);
    }
}

} // namespace mneme
