#include "replay_provider.h"

#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/provider_settings.h>

#include <QFile>
#include <QMutexLocker>
#include <QPromise>

namespace mneme {

namespace {

[[noreturn]] void bad(const QString &what)
{
    throw Error(ErrorKind::InvalidArgument, QStringLiteral("The replay provider's config %1.").arg(what));
}

QFuture<ChatResponse> ready(const ChatResponse &response)
{
    QPromise<ChatResponse> promise;
    promise.start();
    promise.addResult(response);
    promise.finish();
    return promise.future();
}

QFuture<ChatResponse> failed(const Error &error)
{
    QPromise<ChatResponse> promise;
    promise.start();
    promise.setException(std::make_exception_ptr(error));
    promise.finish();
    return promise.future();
}

// A short description of a request for the "no match" message.
QString describe(const ChatRequest &request)
{
    QString lastUser;
    for (auto it = request.messages.rbegin(); it != request.messages.rend(); ++it) {
        if (it->role == ChatMessage::Role::User || it->role == ChatMessage::Role::Tool) {
            lastUser = it->content.simplified();
            break;
        }
    }
    if (lastUser.size() > 120)
        lastUser = lastUser.left(117) + QStringLiteral("...");
    return QStringLiteral("%1 message(s), %2 tool(s), last user message \"%3\"")
        .arg(request.messages.size())
        .arg(request.tools.size())
        .arg(lastUser);
}

} // namespace

ReplayProvider::Settings ReplayProvider::Settings::read(const Json &config)
{
    Settings s;
    if (!config.is_object())
        bad(QStringLiteral("must be an object with \"cassette\", and \"mode\" / \"llm\" for recording"));
    for (auto it = config.begin(); it != config.end(); ++it) {
        const std::string &k = it.key();
        if (k != "mode" && k != "cassette" && k != "llm" && k != "model")
            bad(QStringLiteral("key \"%1\" is not known; it accepts cassette, mode (\"replay\" or \"record\") and llm")
                    .arg(QString::fromStdString(k)));
    }
    if (!config.contains("cassette") || !config["cassette"].is_string() || config["cassette"].get<std::string>().empty())
        bad(QStringLiteral("needs \"cassette\": the path of the JSON Lines file to replay from or record to"));
    s.cassette = QString::fromStdString(config["cassette"].get<std::string>());
    const std::string mode = config.value("mode", std::string("replay"));
    if (mode == "replay")
        s.mode = Mode::Replay;
    else if (mode == "record")
        s.mode = Mode::Record;
    else
        bad(QStringLiteral("key \"mode\" must be \"replay\" or \"record\" (got \"%1\")").arg(QString::fromStdString(mode)));
    s.llm = config.value("llm", Json());
    if (config.contains("model") && s.llm.is_null())
        s.llm = config["model"];
    if (s.mode == Mode::Record && s.llm.is_null())
        bad(QStringLiteral("needs \"llm\" in record mode: the provider to record, e.g. \"gpt-4o-mini\" or "
                           "{\"provider\": \"ollama\", \"config\": {\"model\": \"llama3.2\"}}"));
    return s;
}

ReplayProvider::ReplayProvider(Settings settings, QObject *parent)
    : LlmProvider(parent), m_settings(std::move(settings)), m_fileMutex(std::make_shared<QMutex>())
{
    if (m_settings.mode == Settings::Mode::Record) {
        PluginRegistry &registry = PluginRegistry::instance();
        const ProviderSpec spec = ProviderSpec::llm(m_settings.llm, registry.keys(PluginRegistry::Kind::Llm));
        if (spec.key == QLatin1String("replay"))
            bad(QStringLiteral("\"llm\" cannot be the replay provider itself"));
        m_inner = registry.createLlm(spec.key, spec.config);
        connect(m_inner.get(), &LlmProvider::textDelta, this, &LlmProvider::textDelta, Qt::DirectConnection);
        connect(m_inner.get(), &LlmProvider::toolCallDelta, this, &LlmProvider::toolCallDelta, Qt::DirectConnection);
        m_model = m_inner->id();
    } else {
        load();
    }
}

ReplayProvider::~ReplayProvider() = default;

QString ReplayProvider::id() const
{
    return QStringLiteral("replay/") + (m_model.isEmpty() ? QStringLiteral("cassette") : m_model);
}

LlmProvider::Capabilities ReplayProvider::capabilities() const
{
    if (m_inner)
        return m_inner->capabilities();
    return Capability::Tools | Capability::JsonSchema | Capability::Streaming | Capability::ParallelTools;
}

Json ReplayProvider::canonical(const ChatRequest &request)
{
    return request.toJson(); // the stream flag is not part of it
}

void ReplayProvider::load()
{
    QFile file(m_settings.cassette);
    if (!file.exists())
        throw Error(ErrorKind::NotFound,
                    QStringLiteral("The replay cassette %1 does not exist; record it first with \"mode\": \"record\".")
                        .arg(m_settings.cassette));
    if (!file.open(QIODevice::ReadOnly))
        throw Error(ErrorKind::PermissionDenied,
                    QStringLiteral("Cannot read the replay cassette %1: %2.").arg(m_settings.cassette, file.errorString()));
    int lineNumber = 0;
    while (!file.atEnd()) {
        const QByteArray line = file.readLine().trimmed();
        ++lineNumber;
        if (line.isEmpty())
            continue;
        const Json j = parseJsonOrDiscarded(std::string_view(line.constData(), std::size_t(line.size())));
        if (j.is_discarded() || !j.is_object() || !j.contains("request") || !j.contains("response"))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("Line %1 of the replay cassette %2 is not an exchange ({\"request\": ..., "
                                       "\"response\": ...}); fix or re-record the cassette.")
                            .arg(lineNumber)
                            .arg(m_settings.cassette));
        try {
            m_exchanges.push_back(Exchange{j["request"], ChatResponse::fromJson(j["response"]), false});
        } catch (const std::exception &e) {
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("Line %1 of the replay cassette %2 has a malformed response (%3).")
                            .arg(lineNumber)
                            .arg(m_settings.cassette, QString::fromUtf8(e.what())));
        }
        if (m_model.isEmpty())
            m_model = m_exchanges.back().response.model;
    }
}

QFuture<ChatResponse> ReplayProvider::chat(const ChatRequest &request)
{
    return m_inner ? record(request) : replay(request);
}

QFuture<ChatResponse> ReplayProvider::replay(const ChatRequest &request)
{
    const Json wanted = canonical(request);
    ChatResponse answer;
    {
        QMutexLocker lock(&m_mutex);
        Exchange *match = nullptr;
        Exchange *lastMatch = nullptr;
        for (Exchange &e : m_exchanges) {
            if (e.request != wanted)
                continue;
            lastMatch = &e;
            if (!e.used) {
                match = &e;
                break;
            }
        }
        if (!match)
            match = lastMatch;
        if (!match)
            return failed(Error(ErrorKind::NotFound,
                                QStringLiteral("replay: no exchange in %1 matches the request (%2). Re-record the "
                                               "cassette with \"mode\": \"record\" if the prompts changed.")
                                    .arg(m_settings.cassette, describe(request))));
        match->used = true;
        answer = match->response;
    }
    if (request.stream) {
        if (!answer.text.isEmpty()) {
            if (request.onTextDelta)
                request.onTextDelta(answer.text);
            Q_EMIT textDelta(answer.text);
        }
        for (size_t i = 0; i < answer.toolCalls.size(); ++i) {
            const ToolCall &c = answer.toolCalls[i];
            Q_EMIT toolCallDelta(int(i), c.id, c.name, QString::fromStdString(c.arguments.dump()));
        }
    }
    return ready(answer);
}

QFuture<ChatResponse> ReplayProvider::record(const ChatRequest &request)
{
    const Json wanted = canonical(request);
    const QString path = m_settings.cassette;
    const std::shared_ptr<QMutex> fileMutex = m_fileMutex;
    return m_inner->chat(request).then(QtFuture::Launch::Sync, [wanted, path, fileMutex](const ChatResponse &response) {
        QMutexLocker lock(fileMutex.get());
        QFile file(path);
        if (!file.open(QIODevice::WriteOnly | QIODevice::Append))
            throw Error(ErrorKind::PermissionDenied,
                        QStringLiteral("replay: cannot append to the cassette %1: %2.").arg(path, file.errorString()));
        const std::string line = Json{{"request", wanted}, {"response", response.toJson()}}.dump() + "\n";
        if (file.write(line.data(), qint64(line.size())) != qint64(line.size()) || !file.flush())
            throw Error(ErrorKind::Storage, QStringLiteral("replay: writing the cassette %1 failed: %2.").arg(path, file.errorString()));
        return response;
    });
}

} // namespace mneme
