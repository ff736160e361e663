#include "ollama_provider.h"

#include <mneme/core/error.h>

#include <map>

namespace mneme {

namespace {

// The base URL exactly as the user wrote it (config first, then OLLAMA_HOST); empty for the default.
QString rawBaseUrl(const ProviderSettings &settings)
{
    for (const char *key : {"base_url", "api_base", "url", "host"}) {
        const Json &config = settings.config;
        if (config.contains(key) && config[key].is_string()) {
            const QString text = QString::fromStdString(config[key].get<std::string>()).trimmed();
            if (!text.isEmpty())
                return text;
        }
    }
    return qEnvironmentVariable("OLLAMA_HOST").trimmed();
}

QString textOf(const Json &object, const char *key)
{
    if (!object.is_object() || !object.contains(key) || !object[key].is_string())
        return {};
    return QString::fromStdString(object[key].get<std::string>());
}

int countOf(const Json &object, const char *key)
{
    if (!object.contains(key) || !object[key].is_number())
        return 0;
    return object[key].get<int>();
}

// Ollama's done_reason on ChatResponse's scale. Ollama says "stop" for a reply that called tools.
QString reasonOf(const QString &doneReason, bool calledTools)
{
    if (calledTools && (doneReason.isEmpty() || doneReason == QLatin1String("stop")))
        return QStringLiteral("tool_calls");
    if (doneReason.isEmpty())
        return QStringLiteral("stop");
    return doneReason;
}

// A tool call's arguments as Ollama sends them (an object; some models' templates yield a string).
Json argumentsOf(const Json &function)
{
    if (!function.contains("arguments") || function["arguments"].is_null())
        return Json::object();
    const Json &a = function["arguments"];
    if (a.is_string())
        return Json(a.get<std::string>());
    return a;
}

} // namespace

ProviderDefaults OllamaProvider::defaults()
{
    ProviderDefaults d;
    d.provider = QStringLiteral("ollama");
    d.defaultModel = QStringLiteral("llama3.2");
    d.defaultBaseUrl = QStringLiteral("http://localhost:11434");
    d.apiKeyEnv = {QStringLiteral("OLLAMA_API_KEY")};
    d.baseUrlEnv = {QStringLiteral("OLLAMA_HOST")};
    d.apiKeyRequired = false;
    d.defaultTimeoutMs = 300000; // loading a large model from disk can take minutes
    d.extraKeys = {QStringLiteral("num_ctx"), QStringLiteral("keep_alive"), QStringLiteral("think"),
                   QStringLiteral("options")};
    return d;
}

OllamaProvider::OllamaProvider(ProviderSettings settings, ProviderDefaults defaults, QObject *parent)
    : HttpChatProvider(std::move(settings), std::move(defaults), parent)
{
    const ProviderSettings &s = this->settings();
    m_chatUrl = chatUrl(s);
    const Json &config = s.config;
    const auto bad = [](const char *key, const QString &what) {
        return Error(ErrorKind::InvalidArgument,
                     QStringLiteral("The ollama provider's config key \"%1\" %2.").arg(QLatin1String(key), what));
    };
    if (config.contains("options") && !config["options"].is_null()) {
        if (!config["options"].is_object())
            throw bad("options", QStringLiteral("must be an object of Ollama model options, e.g. {\"top_p\": 0.9, \"seed\": 42}"));
        m_options = config["options"];
    }
    const int numCtx = s.integer("num_ctx", 0);
    if (config.contains("num_ctx") && numCtx < 1)
        throw bad("num_ctx", QStringLiteral("must be a positive number of tokens (e.g. 8192)"));
    if (numCtx > 0)
        m_options["num_ctx"] = numCtx;
    if (config.contains("keep_alive") && !config["keep_alive"].is_null()) {
        if (!config["keep_alive"].is_string() && !config["keep_alive"].is_number())
            throw bad("keep_alive", QStringLiteral("must be a duration such as \"10m\" or a number of seconds"));
        m_keepAlive = config["keep_alive"];
    }
    if (config.contains("think") && !config["think"].is_null()) {
        if (!config["think"].is_boolean() && !config["think"].is_string())
            throw bad("think", QStringLiteral("must be true, false, or a level such as \"low\", \"medium\" or \"high\""));
        m_think = config["think"];
    }
}

OllamaProvider::~OllamaProvider()
{
    shutdown();
}

LlmProvider::Capabilities OllamaProvider::capabilities() const
{
    return Capability::Tools | Capability::JsonSchema | Capability::Streaming | Capability::ParallelTools;
}

QUrl OllamaProvider::chatUrl(const ProviderSettings &settings)
{
    QUrl url = settings.baseUrl;
    url.setQuery(QString());
    url.setFragment(QString());
    QString path = url.path();
    while (path.endsWith(QLatin1Char('/')))
        path.chop(1);
    for (const QLatin1String suffix : {QLatin1String("/api/chat"), QLatin1String("/api"), QLatin1String("/v1")}) {
        if (path.endsWith(suffix, Qt::CaseInsensitive)) {
            path.chop(suffix.size());
            break;
        }
    }
    url.setPath(path + QStringLiteral("/api/chat"));
    // OLLAMA_HOST=gpu-box means gpu-box:11434, as for the ollama command itself.
    if (url.port() == -1 && !settings.baseUrlIsDefault && !rawBaseUrl(settings).contains(QLatin1String("://")))
        url.setPort(11434);
    return url;
}

Json OllamaProvider::body(const ChatRequest &request, bool stream) const
{
    Json messages = Json::array();
    std::map<QString, QString> toolNames; // call id -> tool name, for tool results that do not name theirs
    for (const ChatMessage &m : request.messages) {
        Json j = {{"role", ChatMessage::roleName(m.role)}, {"content", m.content}};
        if (m.role == ChatMessage::Role::Assistant && !m.toolCalls.empty()) {
            Json calls = Json::array();
            for (const ToolCall &c : m.toolCalls) {
                calls.push_back({{"function", {{"name", c.name}, {"arguments", c.arguments.is_object() ? c.arguments : Json::object()}}}});
                if (!c.id.isEmpty())
                    toolNames[c.id] = c.name;
            }
            j["tool_calls"] = std::move(calls);
        } else if (m.role == ChatMessage::Role::Tool) {
            QString name = m.name;
            if (name.isEmpty()) {
                const auto it = toolNames.find(m.toolCallId);
                if (it != toolNames.end())
                    name = it->second;
            }
            if (!name.isEmpty())
                j["tool_name"] = name;
        }
        messages.push_back(std::move(j));
    }

    Json out = {{"model", settings().model}, {"messages", std::move(messages)}, {"stream", stream}};

    // Ollama cannot force a tool call; "none" is honoured by not offering the tools.
    if (!request.tools.empty() && request.toolChoice != QLatin1String("none")) {
        Json tools = Json::array();
        for (const ToolSpec &t : request.tools)
            tools.push_back({{"type", "function"},
                             {"function", {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
        out["tools"] = std::move(tools);
    }
    if (!request.responseSchema.is_null())
        out["format"] = request.responseSchema;

    Json options = m_options;
    if (request.temperature)
        options["temperature"] = *request.temperature;
    if (request.maxTokens)
        options["num_predict"] = *request.maxTokens;
    if (!request.stop.isEmpty())
        options["stop"] = request.stop;
    if (!options.empty())
        out["options"] = std::move(options);
    if (!m_keepAlive.is_null())
        out["keep_alive"] = m_keepAlive;
    if (!m_think.is_null())
        out["think"] = m_think;
    return out;
}

HttpRequest OllamaProvider::buildRequest(const ChatRequest &request, bool stream) const
{
    HttpRequest http;
    http.method = "POST";
    http.url = m_chatUrl;
    http.headers = {{"Content-Type", "application/json"},
                    {"Accept", stream ? QByteArrayLiteral("application/x-ndjson") : QByteArrayLiteral("application/json")}};
    // A local server needs no key; a hosted Ollama or an authenticating proxy takes a bearer token.
    if (!settings().apiKey.isEmpty())
        http.headers.append({"Authorization", "Bearer " + settings().apiKey.toUtf8()});
    const Json j = body(request, stream);
    http.body = QByteArray::fromStdString(j.dump());
    return http;
}

Error OllamaProvider::streamError(const Json &error) const
{
    QString message = error.is_string() ? QString::fromStdString(error.get<std::string>())
                    : error.is_object() && error.contains("message") && error["message"].is_string()
                        ? QString::fromStdString(error["message"].get<std::string>())
                        : QString::fromStdString(error.dump());
    message = HttpClient::redact(message, settings().http.secrets);
    const QString lower = message.toLower();
    if (lower.contains(QLatin1String("not found")) && lower.contains(QLatin1String("model")))
        return Error(ErrorKind::BadRequest,
                     QStringLiteral("%1 failed: Ollama answered: %2. Download the model with `ollama pull %3`, or "
                                    "check the model name (`ollama list` shows what is installed).")
                         .arg(context(), message, settings().model));
    if (lower.contains(QLatin1String("context")) && (lower.contains(QLatin1String("length")) || lower.contains(QLatin1String("window")) || lower.contains(QLatin1String("exceed"))))
        return Error(ErrorKind::ContextLength,
                     QStringLiteral("%1 failed: Ollama answered: %2. Shorten the prompt or raise \"num_ctx\" in the "
                                    "provider's config.")
                         .arg(context(), message));
    return Error(ErrorKind::ServerError,
                 QStringLiteral("%1 failed: Ollama reported an error while generating the reply: %2. Check the "
                                "Ollama server's log (the model may have run out of memory); retry later.")
                     .arg(context(), message));
}

ChatResponse OllamaProvider::parseResponse(const Json &body) const
{
    if (!body.is_object())
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: the reply is not a JSON object: %2").arg(context(), QString::fromStdString(body.dump()).left(200)));
    if (body.contains("error") && !body["error"].is_null())
        throw streamError(body["error"]);
    if (!body.contains("message") || !body["message"].is_object())
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: the reply has no \"message\" object; is the base URL an Ollama server? Got: %2")
                        .arg(context(), QString::fromStdString(body.dump()).left(200)));
    const Json &message = body["message"];
    ChatResponse r;
    r.text = textOf(message, "content");
    if (message.contains("tool_calls") && message["tool_calls"].is_array()) {
        for (const Json &call : message["tool_calls"]) {
            const Json function = call.value("function", Json::object());
            const Json args = argumentsOf(function);
            ToolCall c;
            c.id = textOf(call, "id");
            if (c.id.isEmpty())
                c.id = newCallId();
            c.name = textOf(function, "name");
            c.arguments = args.is_string() ? parseArguments(QString::fromStdString(args.get<std::string>())) : args;
            r.toolCalls.push_back(std::move(c));
        }
    }
    r.finishReason = reasonOf(finishReason(textOf(body, "done_reason")), !r.toolCalls.empty());
    r.usage.promptTokens = countOf(body, "prompt_eval_count");
    r.usage.completionTokens = countOf(body, "eval_count");
    r.model = textOf(body, "model");
    if (r.model.isEmpty())
        r.model = settings().model;
    return r;
}

void OllamaProvider::onStreamEvent(StreamState &state, const QByteArray &, const Json &data)
{
    if (!data.is_object())
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: a stream line is not a JSON object: %2").arg(context(), QString::fromStdString(data.dump()).left(200)));
    if (data.contains("error") && !data["error"].is_null())
        throw streamError(data["error"]);
    const QString model = textOf(data, "model");
    if (!model.isEmpty())
        state.response.model = model;
    else if (state.response.model.isEmpty())
        state.response.model = settings().model;
    if (data.contains("message") && data["message"].is_object()) {
        const Json &message = data["message"];
        appendText(state, textOf(message, "content"));
        if (message.contains("tool_calls") && message["tool_calls"].is_array()) {
            // Ollama sends each call whole, in one line: one delta carries all of its arguments.
            for (const Json &call : message["tool_calls"]) {
                const Json function = call.value("function", Json::object());
                const Json args = argumentsOf(function);
                QString id = textOf(call, "id");
                if (id.isEmpty())
                    id = newCallId();
                appendToolCall(state, int(state.calls.size()), id, textOf(function, "name"),
                               args.is_string() ? QString::fromStdString(args.get<std::string>())
                                                : QString::fromStdString(args.dump()));
            }
        }
    }
    if (data.value("done", false)) {
        state.done = true;
        state.response.finishReason = reasonOf(finishReason(textOf(data, "done_reason")), !state.calls.empty());
        state.response.usage.promptTokens = countOf(data, "prompt_eval_count");
        state.response.usage.completionTokens = countOf(data, "eval_count");
    }
}

Error OllamaProvider::refineError(const Error &error) const
{
    const QString lower = error.message().toLower();
    if (error.httpStatus() == 404 && lower.contains(QLatin1String("model")) && lower.contains(QLatin1String("not found")))
        return Error(error.kind(),
                     QStringLiteral("%1 Download the model with `ollama pull %2`, or check the model name (`ollama list` "
                                    "shows what is installed).")
                         .arg(error.message(), settings().model),
                     error.httpStatus());
    return error;
}

} // namespace mneme
