#include "gemini_provider.h"

#include "gemini_schema.h"

#include <mneme/core/error.h>

#include <QMutexLocker>

namespace mneme {

namespace {

constexpr size_t MaxRememberedCalls = 4096;

QString textOf(const Json &object, const char *key)
{
    if (!object.is_object() || !object.contains(key) || !object[key].is_string())
        return {};
    return QString::fromStdString(object[key].get<std::string>());
}

int countOf(const Json &object, const char *key)
{
    if (!object.is_object() || !object.contains(key) || !object[key].is_number())
        return 0;
    return object[key].get<int>();
}

// Gemini's finishReason on ChatResponse's scale. Gemini says STOP for a reply that called functions.
QString reasonOf(const QString &geminiReason, bool calledTools)
{
    const QString r = geminiReason.toUpper();
    if (r.isEmpty() || r == QLatin1String("STOP") || r == QLatin1String("FINISH_REASON_UNSPECIFIED"))
        return calledTools ? QStringLiteral("tool_calls") : QStringLiteral("stop");
    if (r == QLatin1String("MAX_TOKENS"))
        return QStringLiteral("length");
    for (const char *filtered : {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}) {
        if (r == QLatin1String(filtered))
            return QStringLiteral("content_filter");
    }
    return r.toLower();
}

// A tool result for functionResponse.response, which must be an object: a JSON object as it is,
// anything else under "result".
Json responseOf(const QString &result)
{
    const QByteArray utf8 = result.trimmed().toUtf8();
    if (utf8.startsWith('{')) {
        Json j = parseJsonOrDiscarded(std::string_view(utf8.constData(), std::size_t(utf8.size())));
        if (j.is_object())
            return j;
    }
    return Json{{"result", result}};
}

// Function parameters for a declaration; null when the function takes none (Gemini refuses an
// OBJECT without properties, and wants the field left out instead).
bool takesNoParameters(const Json &parameters)
{
    if (parameters.is_null())
        return true;
    if (!parameters.is_object())
        return false;
    const bool noProperties = !parameters.contains("properties")
                           || (parameters["properties"].is_object() && parameters["properties"].empty());
    for (const char *k : {"anyOf", "oneOf", "allOf", "$ref", "additionalProperties", "patternProperties"}) {
        if (parameters.contains(k) && !(std::string(k) == "additionalProperties" && parameters[k] == false))
            return false;
    }
    return noProperties;
}

} // namespace

ProviderDefaults GeminiProvider::defaults(const QString &key)
{
    ProviderDefaults d;
    d.provider = key;
    d.defaultModel = QStringLiteral("gemini-2.0-flash");
    d.defaultBaseUrl = QStringLiteral("https://generativelanguage.googleapis.com");
    d.apiKeyEnv = {QStringLiteral("GEMINI_API_KEY"), QStringLiteral("GOOGLE_API_KEY")};
    d.apiKeyRequired = true;
    d.extraKeys = {QStringLiteral("safety_settings")};
    return d;
}

GeminiProvider::GeminiProvider(ProviderSettings settings, ProviderDefaults defaults, QObject *parent)
    : HttpChatProvider(std::move(settings), std::move(defaults), parent)
{
    const Json &config = this->settings().config;
    if (config.contains("safety_settings") && !config["safety_settings"].is_null()) {
        if (!config["safety_settings"].is_array())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("The %1 provider's config key \"safety_settings\" must be a list such as "
                                       "[{\"category\": \"HARM_CATEGORY_HARASSMENT\", \"threshold\": \"BLOCK_ONLY_HIGH\"}].")
                            .arg(this->settings().provider));
        m_safetySettings = config["safety_settings"];
    }
}

GeminiProvider::~GeminiProvider()
{
    shutdown();
}

LlmProvider::Capabilities GeminiProvider::capabilities() const
{
    return Capability::Tools | Capability::JsonSchema | Capability::Streaming | Capability::ParallelTools;
}

QUrl GeminiProvider::methodUrl(bool stream) const
{
    QUrl url = settings().baseUrl;
    url.setQuery(QString());
    url.setFragment(QString());
    QString path = url.path();
    while (path.endsWith(QLatin1Char('/')))
        path.chop(1);
    // A base URL may already name the API version (".../v1beta", ".../v1").
    const QString last = path.mid(path.lastIndexOf(QLatin1Char('/')) + 1).toLower();
    if (last != QLatin1String("v1beta") && last != QLatin1String("v1") && last != QLatin1String("v1alpha"))
        path += QStringLiteral("/v1beta");
    // "gemini-2.0-flash" is models/gemini-2.0-flash; "models/..." and "tunedModels/..." are used as written.
    QString model = settings().model;
    if (!model.contains(QLatin1Char('/')))
        model = QStringLiteral("models/") + model;
    path += QLatin1Char('/') + model + (stream ? QStringLiteral(":streamGenerateContent") : QStringLiteral(":generateContent"));
    url.setPath(path);
    if (stream)
        url.setQuery(QStringLiteral("alt=sse"));
    return url;
}

std::optional<Json> GeminiProvider::responseSchemaFor(const ChatRequest &request) const
{
    // Older Gemini models refuse a JSON response type together with function calling; a request
    // that offers tools uses the instruction path for its schema.
    if (request.responseSchema.is_null() || !request.tools.empty())
        return std::nullopt;
    return GeminiSchema::convert(request.responseSchema);
}

bool GeminiProvider::nativeSchema(const ChatRequest &request) const
{
    return responseSchemaFor(request).has_value();
}

void GeminiProvider::remember(const QString &id, const CallMemo &memo) const
{
    if (memo.signature.isEmpty() && !memo.providerId)
        return;
    QMutexLocker lock(&m_memoMutex);
    if (m_memo.emplace(id, memo).second)
        m_memoOrder.push_back(id);
    while (m_memoOrder.size() > MaxRememberedCalls) {
        m_memo.erase(m_memoOrder.front());
        m_memoOrder.pop_front();
    }
}

std::optional<GeminiProvider::CallMemo> GeminiProvider::recall(const QString &id) const
{
    QMutexLocker lock(&m_memoMutex);
    const auto it = m_memo.find(id);
    if (it == m_memo.end())
        return std::nullopt;
    return it->second;
}

Json GeminiProvider::body(const ChatRequest &request) const
{
    Json systemParts = Json::array();
    Json contents = Json::array();
    std::map<QString, QString> toolNames; // call id -> function name, for results that do not name theirs

    // Consecutive messages of one role share a content (a turn's function responses go together).
    const auto add = [&contents](const char *role, Json parts) {
        if (!contents.empty() && contents.back()["role"] == role) {
            for (Json &p : parts)
                contents.back()["parts"].push_back(std::move(p));
            return;
        }
        contents.push_back({{"role", role}, {"parts", std::move(parts)}});
    };

    for (const ChatMessage &m : request.messages) {
        switch (m.role) {
        case ChatMessage::Role::System:
            systemParts.push_back({{"text", m.content}});
            break;
        case ChatMessage::Role::User:
            add("user", Json::array({{{"text", m.content}}}));
            break;
        case ChatMessage::Role::Assistant: {
            Json parts = Json::array();
            if (!m.content.isEmpty() || m.toolCalls.empty())
                parts.push_back({{"text", m.content}});
            for (const ToolCall &c : m.toolCalls) {
                Json call = {{"name", c.name}, {"args", c.arguments.is_object() ? c.arguments : Json::object()}};
                Json part;
                if (const auto memo = recall(c.id)) {
                    if (memo->providerId)
                        call["id"] = c.id;
                    if (!memo->signature.isEmpty())
                        part["thoughtSignature"] = memo->signature;
                }
                part["functionCall"] = std::move(call);
                parts.push_back(std::move(part));
                if (!c.id.isEmpty())
                    toolNames[c.id] = c.name;
            }
            add("model", std::move(parts));
            break;
        }
        case ChatMessage::Role::Tool: {
            QString name = m.name;
            if (name.isEmpty()) {
                const auto it = toolNames.find(m.toolCallId);
                if (it != toolNames.end())
                    name = it->second;
            }
            Json response = {{"name", name}, {"response", responseOf(m.content)}};
            if (const auto memo = recall(m.toolCallId); memo && memo->providerId)
                response["id"] = m.toolCallId;
            add("user", Json::array({{{"functionResponse", std::move(response)}}}));
            break;
        }
        }
    }

    Json out = {{"contents", std::move(contents)}};
    if (!systemParts.empty())
        out["systemInstruction"] = {{"parts", std::move(systemParts)}};

    if (!request.tools.empty()) {
        Json declarations = Json::array();
        for (const ToolSpec &t : request.tools) {
            Json d = {{"name", t.name}, {"description", t.description}};
            if (!takesNoParameters(t.parameters)) {
                if (const auto converted = GeminiSchema::convert(t.parameters)) {
                    d["parameters"] = *converted;
                } else {
                    // Beyond the OpenAPI subset: Gemini also takes plain JSON schema in parametersJsonSchema.
                    Json schema = t.parameters;
                    schema.erase("$schema");
                    d["parametersJsonSchema"] = std::move(schema);
                }
            }
            declarations.push_back(std::move(d));
        }
        out["tools"] = Json::array({{{"functionDeclarations", std::move(declarations)}}});

        const QString choice = request.toolChoice;
        if (!choice.isEmpty()) {
            Json config;
            if (choice == QLatin1String("auto")) {
                config["mode"] = "AUTO";
            } else if (choice == QLatin1String("none")) {
                config["mode"] = "NONE";
            } else if (choice == QLatin1String("required")) {
                config["mode"] = "ANY";
            } else {
                config["mode"] = "ANY";
                config["allowedFunctionNames"] = Json::array({choice});
            }
            out["toolConfig"] = {{"functionCallingConfig", std::move(config)}};
        }
    }

    Json generation = Json::object();
    if (request.temperature)
        generation["temperature"] = *request.temperature;
    if (request.maxTokens)
        generation["maxOutputTokens"] = *request.maxTokens;
    if (!request.stop.isEmpty())
        generation["stopSequences"] = request.stop;
    if (const auto schema = responseSchemaFor(request)) {
        generation["responseMimeType"] = "application/json";
        generation["responseSchema"] = *schema;
    } else if (!request.responseSchema.is_null() && request.tools.empty()) {
        // The schema is beyond Gemini's dialect: JSON mode, with the schema in the instruction.
        generation["responseMimeType"] = "application/json";
    }
    if (!generation.empty())
        out["generationConfig"] = std::move(generation);
    if (!m_safetySettings.is_null())
        out["safetySettings"] = m_safetySettings;
    return out;
}

HttpRequest GeminiProvider::buildRequest(const ChatRequest &request, bool stream) const
{
    HttpRequest http;
    http.method = "POST";
    http.url = methodUrl(stream);
    http.headers = {{"Content-Type", "application/json"},
                    {"Accept", stream ? QByteArrayLiteral("text/event-stream") : QByteArrayLiteral("application/json")}};
    // The key goes in a header: a URL (?key=...) ends up in proxy logs and error messages.
    if (!settings().apiKey.isEmpty())
        http.headers.append({"x-goog-api-key", settings().apiKey.toUtf8()});
    http.body = QByteArray::fromStdString(body(request).dump());
    return http;
}

Error GeminiProvider::replyError(const Json &error) const
{
    const int code = countOf(error, "code");
    const QString status = textOf(error, "status");
    QString message = textOf(error, "message");
    if (message.isEmpty())
        message = QString::fromStdString(error.dump()).left(300);
    QString reason;
    if (error.is_object() && error.contains("details") && error["details"].is_array()) {
        for (const Json &d : error["details"]) {
            reason = textOf(d, "reason");
            if (!reason.isEmpty())
                break;
        }
    }
    message = HttpClient::redact(message, settings().http.secrets);
    ErrorKind kind = ErrorKind::BadRequest;
    QString advice;
    if (reason == QLatin1String("API_KEY_INVALID") || code == 401 || code == 403 || status == QLatin1String("UNAUTHENTICATED")
        || status == QLatin1String("PERMISSION_DENIED")) {
        kind = ErrorKind::Authentication;
        advice = QStringLiteral(" Check the API key (the config's api_key, or GEMINI_API_KEY / GOOGLE_API_KEY).");
    } else if (code == 429 || status == QLatin1String("RESOURCE_EXHAUSTED")) {
        kind = ErrorKind::RateLimited;
        advice = QStringLiteral(" Lower max_rpm or retry later.");
    } else if (code >= 500 || status == QLatin1String("INTERNAL") || status == QLatin1String("UNAVAILABLE")) {
        kind = ErrorKind::ServerError;
        advice = QStringLiteral(" Gemini is failing; retry later.");
    } else if (message.contains(QLatin1String("token count"), Qt::CaseInsensitive)
               && message.contains(QLatin1String("exceeds"), Qt::CaseInsensitive)) {
        kind = ErrorKind::ContextLength;
        advice = QStringLiteral(" Shorten the prompt or use a model with a larger context window.");
    }
    return Error(kind,
                 QStringLiteral("%1 failed: Gemini answered %2%3: %4.%5")
                     .arg(context(), status.isEmpty() ? QStringLiteral("an error") : status,
                          code ? QStringLiteral(" (%1)").arg(code) : QString(), message, advice),
                 code);
}

Error GeminiProvider::blockedError(const Json &feedback) const
{
    const QString reason = textOf(feedback, "blockReason");
    QString detail = textOf(feedback, "blockReasonMessage");
    if (!detail.isEmpty())
        detail = QStringLiteral(" (%1)").arg(detail);
    return Error(ErrorKind::BadRequest,
                 QStringLiteral("%1: the prompt was blocked: %2%3; Gemini returned no answer. Rephrase the prompt, or "
                                "adjust \"safety_settings\" in the provider's config.")
                     .arg(context(), reason, detail));
}

ToolCall GeminiProvider::callFrom(const Json &part) const
{
    const Json &fc = part["functionCall"];
    ToolCall c;
    c.id = textOf(fc, "id");
    const bool providerId = !c.id.isEmpty();
    if (!providerId)
        c.id = newCallId();
    c.name = textOf(fc, "name");
    if (fc.contains("args") && fc["args"].is_object())
        c.arguments = fc["args"];
    remember(c.id, CallMemo{textOf(part, "thoughtSignature"), providerId});
    return c;
}

ChatResponse GeminiProvider::parseResponse(const Json &body) const
{
    if (!body.is_object())
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: the reply is not a JSON object: %2").arg(context(), QString::fromStdString(body.dump()).left(200)));
    if (body.contains("error") && body["error"].is_object())
        throw replyError(body["error"]);
    const Json candidates = body.value("candidates", Json::array());
    if (!candidates.is_array() || candidates.empty()) {
        if (body.contains("promptFeedback") && !textOf(body["promptFeedback"], "blockReason").isEmpty())
            throw blockedError(body["promptFeedback"]);
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: the reply has no candidates: %2").arg(context(), QString::fromStdString(body.dump()).left(200)));
    }
    const Json &candidate = candidates[0];
    ChatResponse r;
    if (candidate.contains("content") && candidate["content"].is_object() && candidate["content"].contains("parts")) {
        for (const Json &part : candidate["content"]["parts"]) {
            if (part.value("thought", false) == true)
                continue; // a thought summary, not the answer
            if (part.contains("functionCall") && part["functionCall"].is_object())
                r.toolCalls.push_back(callFrom(part));
            else
                r.text += textOf(part, "text");
        }
    }
    r.finishReason = reasonOf(textOf(candidate, "finishReason"), !r.toolCalls.empty());
    if (body.contains("usageMetadata")) {
        const Json &u = body["usageMetadata"];
        r.usage.promptTokens = countOf(u, "promptTokenCount");
        // A thinking model's thoughts are billed as output too.
        r.usage.completionTokens = countOf(u, "candidatesTokenCount") + countOf(u, "thoughtsTokenCount");
    }
    r.model = textOf(body, "modelVersion");
    if (r.model.isEmpty())
        r.model = settings().model;
    return r;
}

void GeminiProvider::onStreamEvent(StreamState &state, const QByteArray &, const Json &data)
{
    if (!data.is_object())
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: a stream event is not a JSON object: %2").arg(context(), QString::fromStdString(data.dump()).left(200)));
    if (data.contains("error") && data["error"].is_object())
        throw replyError(data["error"]);
    const Json candidates = data.value("candidates", Json::array());
    if ((!candidates.is_array() || candidates.empty()) && data.contains("promptFeedback")
        && !textOf(data["promptFeedback"], "blockReason").isEmpty())
        throw blockedError(data["promptFeedback"]);

    const QString model = textOf(data, "modelVersion");
    if (!model.isEmpty())
        state.response.model = model;
    else if (state.response.model.isEmpty())
        state.response.model = settings().model;

    if (candidates.is_array() && !candidates.empty()) {
        const Json &candidate = candidates[0];
        if (candidate.contains("content") && candidate["content"].is_object() && candidate["content"].contains("parts")) {
            for (const Json &part : candidate["content"]["parts"]) {
                if (part.value("thought", false) == true)
                    continue;
                if (part.contains("functionCall") && part["functionCall"].is_object()) {
                    // Gemini streams each call whole: one delta carries all of its arguments.
                    const ToolCall c = callFrom(part);
                    appendToolCall(state, int(state.calls.size()), c.id, c.name, QString::fromStdString(c.arguments.dump()));
                } else {
                    appendText(state, textOf(part, "text"));
                }
            }
        }
        const QString reason = textOf(candidate, "finishReason");
        if (!reason.isEmpty()) {
            state.response.finishReason = reasonOf(reason, !state.calls.empty());
            state.done = true;
        }
    }
    if (data.contains("usageMetadata")) {
        const Json &u = data["usageMetadata"];
        state.response.usage.promptTokens = countOf(u, "promptTokenCount");
        state.response.usage.completionTokens = countOf(u, "candidatesTokenCount") + countOf(u, "thoughtsTokenCount");
    }
}

} // namespace mneme
