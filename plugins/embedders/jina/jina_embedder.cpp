#include "jina_embedder.h"

#include "plugins/embedders/http_common/embedder_util.h"

#include <mneme/core/error.h>

#include <map>

namespace mneme {

using namespace embedders;

namespace {

constexpr int kDefaultBatch = 512;
constexpr int kBatchLimit = 2048; // the API's limit on inputs per request
constexpr int kEmbedTimeoutMs = 60000;

int jinaModelDimension(const QString &model)
{
    static const std::map<QString, int> known = {
        {QStringLiteral("jina-embeddings-v2-base-de"), 768},
        {QStringLiteral("jina-embeddings-v2-base-es"), 768},
        {QStringLiteral("jina-embeddings-v2-base-zh"), 768},
        {QStringLiteral("jina-embeddings-v2-base-code"), 768},
    };
    const auto it = known.find(model.toLower());
    return it != known.end() ? it->second : knownEmbeddingDimension(model);
}

} // namespace

JinaEmbedder::JinaEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch)
    : HttpEmbedder(std::move(settings), defaults, maxBatch)
{
    knownDimension(); // refuses a bad "dimensions" now
}

std::unique_ptr<JinaEmbedder> JinaEmbedder::create(const QString &key, const Json &config)
{
    ProviderDefaults d;
    d.provider = key;
    d.defaultModel = QStringLiteral("jina-embeddings-v2-base-en");
    d.defaultBaseUrl = QStringLiteral("https://api.jina.ai");
    d.apiKeyEnv = {QStringLiteral("JINA_API_KEY")};
    d.apiKeyRequired = true;
    d.defaultTimeoutMs = kEmbedTimeoutMs;
    d.extraKeys = {QStringLiteral("task"), QStringLiteral("dimensions"), QStringLiteral("dimension"),
                   QStringLiteral("normalized"), QStringLiteral("late_chunking"), QStringLiteral("max_batch")};
    ProviderSettings s = ProviderSettings::read(config, d);
    s.string("task"); // type checks
    flag(s, "normalized");
    flag(s, "late_chunking");
    const int batch = maxBatch(s, kDefaultBatch, kBatchLimit);
    return std::unique_ptr<JinaEmbedder>(new JinaEmbedder(std::move(s), d, batch));
}

int JinaEmbedder::knownDimension() const
{
    const int asked = requestedDimension(settings(), {"dimensions", "dimension"});
    return asked > 0 ? asked : jinaModelDimension(settings().model);
}

HttpRequest JinaEmbedder::buildRequest(const QStringList &texts) const
{
    const ProviderSettings &s = settings();
    HttpRequest r;
    r.url = s.endpoint(pathEndsWith(s.baseUrl, QStringLiteral("/v1")) ? QStringLiteral("/embeddings")
                                                                      : QStringLiteral("/v1/embeddings"));
    if (!s.apiKey.isEmpty())
        r.headers.append({"Authorization", "Bearer " + s.apiKey.toUtf8()});
    Json body = Json::object();
    body["model"] = s.model.toStdString();
    body["input"] = textArray(texts);
    const QString task = s.string("task");
    if (!task.isEmpty())
        body["task"] = task.toStdString();
    const int dims = requestedDimension(s, {"dimensions", "dimension"});
    if (dims > 0)
        body["dimensions"] = dims;
    if (const std::optional<bool> normalized = flag(s, "normalized"))
        body["normalized"] = *normalized;
    if (const std::optional<bool> late = flag(s, "late_chunking"))
        body["late_chunking"] = *late;
    r.body = bodyOf(body);
    return r;
}

std::vector<Embedding> JinaEmbedder::parseResponse(const Json &body, int expected) const
{
    throwIfErrorBody(body, context(), settings().http.secrets);
    std::vector<Embedding> out = vectors(embeddingsByIndex(body, expected, context()), expected);
    return out;
}

} // namespace mneme
