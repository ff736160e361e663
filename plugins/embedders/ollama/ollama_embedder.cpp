#include "ollama_embedder.h"

#include "plugins/embedders/http_common/embedder_util.h"

#include <mneme/core/error.h>

namespace mneme {

using namespace embedders;

namespace {

constexpr int kDefaultBatch = 512;
constexpr int kBatchLimit = 4096;
constexpr int kDefaultPort = 11434;
constexpr int kEmbedTimeoutMs = 120000; // the first call may wait for the model to load

} // namespace

OllamaEmbedder::OllamaEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch)
    : HttpEmbedder(std::move(settings), defaults, maxBatch)
{
    knownDimension(); // refuses a bad "dimensions" now
}

std::unique_ptr<OllamaEmbedder> OllamaEmbedder::create(const QString &key, const Json &config)
{
    ProviderDefaults d;
    d.provider = key;
    d.defaultModel = QStringLiteral("nomic-embed-text");
    d.defaultBaseUrl = QStringLiteral("http://localhost:11434");
    d.apiKeyEnv = {QStringLiteral("OLLAMA_API_KEY")}; // only for a server behind an authenticating proxy
    d.baseUrlEnv = {QStringLiteral("OLLAMA_HOST")};
    d.apiKeyRequired = false;
    d.defaultTimeoutMs = kEmbedTimeoutMs;
    d.extraKeys = {QStringLiteral("dimensions"), QStringLiteral("dimension"), QStringLiteral("keep_alive"),
                   QStringLiteral("truncate"), QStringLiteral("options"), QStringLiteral("max_batch")};
    ProviderSettings s = ProviderSettings::read(config, d);

    // The URL may name the endpoint itself ("http://localhost:11434/api/embeddings", as older
    // configurations write it): the base is what comes before it.
    s.baseUrl = withoutPathSuffix(s.baseUrl, {QStringLiteral("/api/embeddings"), QStringLiteral("/api/embed"),
                                              QStringLiteral("/api")});
    // OLLAMA_HOST is often just "host" or "0.0.0.0": Ollama's own port then.
    if (s.baseUrl.port() < 0 && s.baseUrl.scheme() == QLatin1String("http")) {
        bool fromConfig = false;
        for (const char *k : {"base_url", "api_base", "url", "host"})
            fromConfig = fromConfig || (s.config.contains(k) && s.config[k].is_string());
        if (!fromConfig)
            s.baseUrl.setPort(kDefaultPort);
    }
    if (s.config.contains("options") && !s.config["options"].is_null() && !s.config["options"].is_object())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder's \"options\" must be an object of model parameters "
                                   "(e.g. {\"num_ctx\": 8192}).")
                        .arg(key));
    if (s.config.contains("keep_alive") && !s.config["keep_alive"].is_null() && !s.config["keep_alive"].is_string()
        && !s.config["keep_alive"].is_number())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder's \"keep_alive\" must be a duration such as \"5m\" or a number "
                                   "of seconds.")
                        .arg(key));
    flag(s, "truncate"); // type check
    const int batch = maxBatch(s, kDefaultBatch, kBatchLimit);
    return std::unique_ptr<OllamaEmbedder>(new OllamaEmbedder(std::move(s), d, batch));
}

int OllamaEmbedder::knownDimension() const
{
    const int asked = requestedDimension(settings(), {"dimensions", "dimension"});
    if (asked > 0)
        return asked;
    // A tag other than "latest" may be another size of the same family (snowflake-arctic-embed:xs
    // has 384 dimensions, the untagged model 1024): only trust the table for the untagged model.
    const QString &model = settings().model;
    const qsizetype colon = model.indexOf(QLatin1Char(':'));
    if (colon > 0 && model.mid(colon + 1).compare(QLatin1String("latest"), Qt::CaseInsensitive) != 0)
        return 0;
    return knownEmbeddingDimension(model);
}

HttpRequest OllamaEmbedder::buildRequest(const QStringList &texts) const
{
    const ProviderSettings &s = settings();
    HttpRequest r;
    r.url = s.endpoint(QStringLiteral("/api/embed"));
    if (!s.apiKey.isEmpty())
        r.headers.append({"Authorization", "Bearer " + s.apiKey.toUtf8()});
    Json body = Json::object();
    body["model"] = s.model.toStdString();
    body["input"] = textArray(texts);
    if (const std::optional<bool> truncate = flag(s, "truncate"))
        body["truncate"] = *truncate;
    const int dims = requestedDimension(s, {"dimensions", "dimension"});
    if (dims > 0)
        body["dimensions"] = dims;
    if (s.config.contains("keep_alive") && !s.config["keep_alive"].is_null())
        body["keep_alive"] = s.config["keep_alive"];
    if (s.config.contains("options") && s.config["options"].is_object())
        body["options"] = s.config["options"];
    r.body = bodyOf(body);
    return r;
}

std::vector<Embedding> OllamaEmbedder::parseResponse(const Json &body, int expected) const
{
    throwIfErrorBody(body, context(), settings().http.secrets);
    if (!body.is_object() || !body.contains("embeddings"))
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: the reply has no \"embeddings\"; Ollama 0.3 or newer is needed for /api/embed.")
                        .arg(context()));
    std::vector<Embedding> out = vectors(body["embeddings"], expected);
    return out;
}

} // namespace mneme
