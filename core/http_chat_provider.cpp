#include <mneme/core/http_chat_provider.h>

#include <mneme/core/error.h>
#include <mneme/core/json_reply.h>
#include <mneme/core/stream_parsers.h>

#include <QPromise>
#include <QRandomGenerator>
#include <QThread>
#include <atomic>

namespace mneme {

namespace {

template<typename T>
QFuture<T> failedFuture(const Error &error)
{
    QPromise<T> promise;
    promise.start();
    promise.setException(std::make_exception_ptr(error));
    promise.finish();
    return promise.future();
}

// Adds `text` to the first system message, or puts a system message first.
void addSystemText(ChatRequest &request, const QString &text)
{
    for (ChatMessage &m : request.messages) {
        if (m.role == ChatMessage::Role::System) {
            m.content = m.content.isEmpty() ? text : m.content + QStringLiteral("\n\n") + text;
            return;
        }
    }
    request.messages.insert(request.messages.begin(), ChatMessage::system(text));
}

} // namespace

HttpChatProvider::HttpChatProvider(ProviderSettings settings, ProviderDefaults defaults, QObject *parent)
    : LlmProvider(parent), m_settings(std::move(settings)), m_defaults(std::move(defaults)), m_client(std::make_unique<HttpClient>(m_settings.http))
{
}

HttpChatProvider::~HttpChatProvider()
{
    shutdown();
}

void HttpChatProvider::shutdown()
{
    std::unique_ptr<HttpClient> client;
    {
        QMutexLocker lock(&m_clientMutex);
        client = std::move(m_client);
    }
    // Destroying the client waits until the network thread is out of every handler of ours.
    client.reset();
}

HttpClient *HttpChatProvider::currentClient() const
{
    // A handler running on the network thread may use the pointer it gets: the client's destruction
    // waits for the network thread, so it cannot happen while that handler runs.
    QMutexLocker lock(&m_clientMutex);
    return m_client.get();
}

QString HttpChatProvider::id() const
{
    return m_settings.provider + QLatin1Char('/') + m_settings.model;
}

QString HttpChatProvider::context() const
{
    return QStringLiteral("%1 chat (%2)").arg(m_settings.provider, m_settings.model);
}

Error HttpChatProvider::refineError(const Error &error) const
{
    return error;
}

bool HttpChatProvider::nativeSchema(const ChatRequest &) const
{
    return capabilities().testFlag(Capability::JsonSchema);
}

QFuture<ChatResponse> HttpChatProvider::chat(const ChatRequest &requestIn)
{
    if (!currentClient())
        return failedFuture<ChatResponse>(Error(ErrorKind::Cancelled, QStringLiteral("%1: the provider was shut down.").arg(context())));
    ChatRequest request = requestIn;
    if (!request.temperature && m_settings.temperature)
        request.temperature = m_settings.temperature;
    if (!request.maxTokens && m_settings.maxTokens)
        request.maxTokens = m_settings.maxTokens;
    if (request.messages.empty())
        return failedFuture<ChatResponse>(Error(ErrorKind::InvalidArgument,
                                                QStringLiteral("%1: the request has no messages.").arg(context())));
    if (!request.tools.empty() && !supportsFunctionCalling())
        return failedFuture<ChatResponse>(Error(ErrorKind::InvalidArgument,
                                                QStringLiteral("%1 does not support native tool calling; use a text "
                                                               "protocol for tools with this model.")
                                                    .arg(id())));
    try {
        m_settings.requireApiKey(m_defaults);
    } catch (const Error &e) {
        return failedFuture<ChatResponse>(e);
    }

    const bool wantsSchema = !request.responseSchema.is_null();
    if (wantsSchema && !nativeSchema(request))
        addSystemText(request, JsonReply::instructionFor(request.responseSchema));

    auto promise = std::make_shared<QPromise<ChatResponse>>();
    promise->start();
    QFuture<ChatResponse> out = promise->future();
    const QFuture<void> cancelWith(out);

    const QStringList secrets = m_settings.http.secrets;
    const auto settle = [this, promise, secrets](const std::function<ChatResponse()> &get) {
        try {
            promise->addResult(redacted(get(), secrets));
        } catch (const Error &e) {
            promise->setException(std::make_exception_ptr(refineError(e)));
        } catch (...) {
            promise->setException(std::current_exception());
        }
        promise->finish();
    };

    sendOnce(request, cancelWith).then(QtFuture::Launch::Sync, [this, request, promise, settle, cancelWith, wantsSchema](QFuture<ChatResponse> f) {
        if (!wantsSchema) {
            settle([&] { return f.result(); });
            return;
        }
        ChatResponse first;
        QStringList problems;
        try {
            first = f.result();
            first.structured = JsonReply::extract(first.text);
            problems = JsonReply::validate(first.structured, request.responseSchema);
        } catch (const Error &e) {
            if (e.kind() != ErrorKind::MalformedReply) {
                settle([&]() -> ChatResponse { throw; });
                return;
            }
            problems << e.message();
        } catch (...) {
            settle([&]() -> ChatResponse { throw; });
            return;
        }
        if (problems.isEmpty()) {
            settle([&] { return first; });
            return;
        }
        // One repair round: show the model its reply and what is wrong with it.
        ChatRequest repair = request;
        repair.stream = false;
        repair.messages.push_back(ChatMessage::assistant(first.text));
        repair.messages.push_back(ChatMessage::user(
            QStringLiteral("That reply does not follow the JSON schema: %1\nAnswer again with only the corrected JSON value.")
                .arg(problems.join(QStringLiteral("; ")))));
        const TokenUsage firstUsage = first.usage;
        const Json schema = request.responseSchema;
        const QString what = context();
        if (!currentClient()) {
            settle([&]() -> ChatResponse { throw Error(ErrorKind::Cancelled, QStringLiteral("%1: the provider was shut down.").arg(what)); });
            return;
        }
        sendOnce(repair, cancelWith).then(QtFuture::Launch::Sync, [settle, firstUsage, schema, what](QFuture<ChatResponse> g) {
            settle([&] {
                ChatResponse second = g.result();
                second.usage += firstUsage;
                second.structured = JsonReply::extract(second.text);
                const QStringList still = JsonReply::validate(second.structured, schema);
                if (!still.isEmpty())
                    throw Error(ErrorKind::MalformedReply,
                                QStringLiteral("%1: the reply does not follow the requested JSON schema, even after "
                                               "one correction: %2")
                                    .arg(what, still.join(QStringLiteral("; "))));
                return second;
            });
        });
    });
    return out;
}

QFuture<ChatResponse> HttpChatProvider::sendOnce(const ChatRequest &request, const QFuture<void> &cancelWith)
{
    HttpRequest http;
    try {
        http = buildRequest(request, request.stream);
    } catch (const Error &e) {
        return failedFuture<ChatResponse>(e);
    }
    if (http.what.isEmpty())
        http.what = context();
    http.cancelWith = cancelWith;
    if (request.stream)
        return streamWithRetries(http, 0, request.onTextDelta);
    HttpClient *client = currentClient();
    if (!client)
        return failedFuture<ChatResponse>(Error(ErrorKind::Cancelled, QStringLiteral("%1: the provider was shut down.").arg(context())));

    const QString what = context();
    const QStringList secrets = m_settings.http.secrets;
    return client->send(std::move(http)).then(QtFuture::Launch::Sync, [this, what, secrets](const HttpResponse &response) {
        const Json body = parseJsonOrDiscarded(std::string_view(response.body.constData(), std::size_t(response.body.size())));
        if (body.is_discarded())
            throw Error(ErrorKind::MalformedReply,
                        QStringLiteral("%1: the reply is not JSON: %2").arg(what, HttpClient::redact(HttpClient::providerMessage(response.body).left(200), secrets)),
                        response.status);
        try {
            return parseResponse(body);
        } catch (const Error &) {
            throw;
        } catch (const std::exception &e) {
            throw Error(ErrorKind::MalformedReply,
                        QStringLiteral("%1: the reply does not have the expected shape (%2).").arg(what, QString::fromUtf8(e.what())),
                        response.status);
        }
    });
}

QFuture<ChatResponse> HttpChatProvider::streamWithRetries(const HttpRequest &http, int retry,
                                                          const std::function<void(const QString &)> &onTextDelta)
{
    HttpClient *client = currentClient();
    if (!client)
        return failedFuture<ChatResponse>(Error(ErrorKind::Cancelled, QStringLiteral("%1: the provider was shut down.").arg(context())));
    auto committed = std::make_shared<std::atomic_bool>(false);
    auto promise = std::make_shared<QPromise<ChatResponse>>();
    promise->start();
    QFuture<ChatResponse> out = promise->future();
    const HttpPolicy policy = m_settings.http;
    sendStreaming(*client, http, committed, onTextDelta).then(QtFuture::Launch::Sync, [this, http, retry, committed, promise, policy, onTextDelta](QFuture<ChatResponse> f) {
        try {
            promise->addResult(f.result());
        } catch (const Error &e) {
            // An error event before anything was passed on (Anthropic's "overloaded" arrives so, on
            // HTTP 200) is retried like an error status: nobody has seen a piece of this reply yet.
            const bool transient = e.kind() == ErrorKind::ServerError || e.kind() == ErrorKind::RateLimited;
            if (transient && !*committed && retry < policy.maxRetries && !(http.cancelWith && http.cancelWith->isCanceled())) {
                const qint64 exp = qint64(policy.backoffBaseMs) << qMin(retry, 20);
                const qint64 capped = qMin<qint64>(exp, policy.backoffMaxMs);
                const int delay = int(capped / 2 + QRandomGenerator::global()->bounded(double(capped / 2 + 1)));
                // The wait ends on the network thread while the client (and so this provider) is alive,
                // or fails with Cancelled when the provider shuts down first.
                HttpClient *client = currentClient();
                if (client) {
                    client->after(delay).then(QtFuture::Launch::Sync, [this, http, retry, promise, onTextDelta](QFuture<void> waited) {
                        try {
                            waited.waitForFinished(); // rethrows Cancelled
                        } catch (...) {
                            promise->setException(std::current_exception());
                            promise->finish();
                            return;
                        }
                        streamWithRetries(http, retry + 1, onTextDelta).then(QtFuture::Launch::Sync, [promise](QFuture<ChatResponse> g) {
                            try {
                                promise->addResult(g.result());
                            } catch (...) {
                                promise->setException(std::current_exception());
                            }
                            promise->finish();
                        });
                    });
                    return;
                }
            }
            promise->setException(std::current_exception());
        } catch (...) {
            promise->setException(std::current_exception());
        }
        promise->finish();
    });
    return out;
}

QFuture<ChatResponse> HttpChatProvider::sendStreaming(HttpClient &client, const HttpRequest &http,
                                                      const std::shared_ptr<std::atomic_bool> &committed,
                                                      const std::function<void(const QString &)> &onTextDelta)
{
    struct Stream
    {
        StreamState state;
        SseParser sse;
        NdjsonParser ndjson;
        QByteArray raw; // the bytes received while no event was recognised
        bool sawEvent = false;
    };
    auto stream = std::make_shared<Stream>();
    stream->state.onTextDelta = onTextDelta;
    stream->state.secrets = m_settings.http.secrets;
    const StreamFormat format = streamFormat();
    const QString what = context();
    const QStringList secrets = m_settings.http.secrets;

    const auto process = [this, stream, format, what, secrets, committed](bool finished) {
        const auto handle = [&](const QByteArray &event, const QByteArray &data) {
            const QByteArray trimmed = data.trimmed();
            if (trimmed.isEmpty())
                return;
            if (trimmed == "[DONE]") {
                stream->state.done = true;
                return;
            }
            const Json j = parseJsonOrDiscarded(std::string_view(trimmed.constData(), std::size_t(trimmed.size())));
            if (j.is_discarded())
                throw Error(ErrorKind::MalformedReply,
                            QStringLiteral("%1: a stream event is not JSON: %2").arg(what, HttpClient::redact(QString::fromUtf8(trimmed.left(200)), secrets)));
            stream->sawEvent = true;
            try {
                onStreamEvent(stream->state, event, j);
                *committed = stream->state.committed;
            } catch (const Error &) {
                *committed = stream->state.committed;
                throw;
            } catch (const std::exception &e) {
                *committed = stream->state.committed;
                throw Error(ErrorKind::MalformedReply,
                            QStringLiteral("%1: a stream event does not have the expected shape (%2).").arg(what, QString::fromUtf8(e.what())));
            }
        };
        if (format == StreamFormat::ServerSentEvents) {
            if (finished)
                stream->sse.finish();
            for (const SseParser::Event &e : stream->sse.take())
                handle(e.event, e.data);
        } else {
            if (finished)
                stream->ndjson.finish();
            for (const QByteArray &line : stream->ndjson.take())
                handle(QByteArray(), line);
        }
    };

    HttpRequest request = http;
    return client
        .send(std::move(request),
              [stream, format, process](const QByteArray &chunk) {
                  if (!stream->sawEvent && stream->raw.size() < (8 << 20))
                      stream->raw += chunk;
                  if (format == StreamFormat::ServerSentEvents)
                      stream->sse.feed(chunk);
                  else
                      stream->ndjson.feed(chunk);
                  process(false);
              })
        .then(QtFuture::Launch::Sync, [this, stream, process, what](const HttpResponse &) {
            process(true);
            emitText(stream->state, true);
            if (!stream->sawEvent && !stream->raw.trimmed().isEmpty()) {
                // Some compatible servers ignore "stream" and answer with one JSON body.
                const Json body = parseJsonOrDiscarded(std::string_view(stream->raw.constData(), std::size_t(stream->raw.size())));
                if (body.is_object())
                    return parseResponse(body);
            }
            if (!stream->state.done)
                throw Error(ErrorKind::Network,
                            QStringLiteral("%1: the reply stream ended before the provider said it was complete; the "
                                           "connection was probably cut. Retry the request.")
                                .arg(what));
            ChatResponse out = stream->state.response;
            for (const auto &[index, call] : stream->state.calls)
                out.toolCalls.push_back(ToolCall{call.id.isEmpty() ? newCallId() : call.id, call.name, parseArguments(call.arguments)});
            if (out.finishReason.isEmpty())
                out.finishReason = out.toolCalls.empty() ? QStringLiteral("stop") : QStringLiteral("tool_calls");
            return out;
        });
}

void HttpChatProvider::appendText(StreamState &state, const QString &text)
{
    if (text.isEmpty())
        return;
    state.committed = true;
    state.response.text += text;
    state.heldBack += text;
    emitText(state, false);
}

void HttpChatProvider::emitText(StreamState &state, bool end)
{
    QString ready = HttpClient::redact(state.heldBack, state.secrets);
    // Keep the longest end of the text that a secret starts with, until the next delta tells.
    qsizetype keep = 0;
    if (!end) {
        for (const QString &secret : std::as_const(state.secrets)) {
            if (secret.size() < 4) // as redact(): too short to be told from text
                continue;
            for (qsizetype k = std::min(ready.size(), secret.size() - 1); k > keep; --k) {
                if (QStringView(ready).right(k) == QStringView(secret).left(k)) {
                    keep = k;
                    break;
                }
            }
        }
    }
    state.heldBack = ready.right(keep);
    ready.chop(keep);
    if (ready.isEmpty())
        return;
    if (state.onTextDelta)
        state.onTextDelta(ready);
    Q_EMIT textDelta(ready);
}

namespace {

Json redactedJson(const Json &value, const QStringList &secrets)
{
    if (value.is_string())
        return HttpClient::redact(QString::fromStdString(value.get<std::string>()), secrets).toStdString();
    if (value.is_array()) {
        Json out = Json::array();
        for (const Json &v : value)
            out.push_back(redactedJson(v, secrets));
        return out;
    }
    if (value.is_object()) {
        Json out = Json::object();
        for (auto it = value.begin(); it != value.end(); ++it)
            out[HttpClient::redact(QString::fromStdString(it.key()), secrets).toStdString()] = redactedJson(it.value(), secrets);
        return out;
    }
    return value;
}

} // namespace

ChatResponse HttpChatProvider::redacted(ChatResponse response, const QStringList &secrets)
{
    if (secrets.isEmpty())
        return response;
    response.text = HttpClient::redact(response.text, secrets);
    response.structured = redactedJson(response.structured, secrets);
    for (ToolCall &call : response.toolCalls) {
        call.name = HttpClient::redact(call.name, secrets);
        call.arguments = redactedJson(call.arguments, secrets);
    }
    return response;
}

void HttpChatProvider::appendToolCall(StreamState &state, int index, const QString &id, const QString &name,
                                      const QString &argumentsDelta)
{
    state.committed = true;
    auto &call = state.calls[index];
    if (!id.isEmpty())
        call.id = id;
    if (!name.isEmpty())
        call.name = name;
    call.arguments += argumentsDelta;
    Q_EMIT toolCallDelta(index, id, name, argumentsDelta);
}

QString HttpChatProvider::finishReason(const QString &providerReason)
{
    const QString r = providerReason.toLower();
    if (r == QLatin1String("stop") || r == QLatin1String("end_turn") || r == QLatin1String("stop_sequence")
        || r == QLatin1String("eos") || r == QLatin1String("end"))
        return QStringLiteral("stop");
    if (r == QLatin1String("length") || r == QLatin1String("max_tokens"))
        return QStringLiteral("length");
    if (r == QLatin1String("tool_calls") || r == QLatin1String("tool_use") || r == QLatin1String("function_call"))
        return QStringLiteral("tool_calls");
    if (r == QLatin1String("content_filter") || r == QLatin1String("safety") || r == QLatin1String("recitation")
        || r == QLatin1String("refusal"))
        return QStringLiteral("content_filter");
    return r;
}

Json HttpChatProvider::parseArguments(const QString &text)
{
    const QByteArray utf8 = text.trimmed().toUtf8();
    if (utf8.isEmpty())
        return Json::object();
    Json j = parseJsonOrDiscarded(std::string_view(utf8.constData(), std::size_t(utf8.size())));
    if (j.is_discarded() || !j.is_object())
        return Json{{"_raw", text}};
    return j;
}

QString HttpChatProvider::newCallId()
{
    return QStringLiteral("call_%1").arg(QRandomGenerator::global()->generate64(), 16, 16, QLatin1Char('0'));
}

} // namespace mneme
