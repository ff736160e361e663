#include "voyageai_embedder.h"

#include "plugins/embedders/http_common/embedder_util.h"

#include <mneme/core/error.h>

#include <map>

namespace mneme {

using namespace embedders;

namespace {

constexpr int kDefaultBatch = 128;
constexpr int kBatchLimit = 1000; // the API's limit on inputs per request
constexpr int kEmbedTimeoutMs = 60000;

int voyageModelDimension(const QString &model)
{
    static const std::map<QString, int> known = {
        {QStringLiteral("voyage-3.5"), 1024},
        {QStringLiteral("voyage-3.5-lite"), 1024},
        {QStringLiteral("voyage-2"), 1024},
        {QStringLiteral("voyage-large-2"), 1536},
        {QStringLiteral("voyage-code-2"), 1536},
        {QStringLiteral("voyage-law-2"), 1024},
        {QStringLiteral("voyage-finance-2"), 1024},
        {QStringLiteral("voyage-multilingual-2"), 1024},
    };
    const auto it = known.find(model.toLower());
    return it != known.end() ? it->second : knownEmbeddingDimension(model);
}

} // namespace

VoyageAiEmbedder::VoyageAiEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch)
    : HttpEmbedder(std::move(settings), defaults, maxBatch)
{
    knownDimension(); // refuses a bad "dimensions" now
}

std::unique_ptr<VoyageAiEmbedder> VoyageAiEmbedder::create(const QString &key, const Json &config)
{
    ProviderDefaults d;
    d.provider = key;
    d.defaultModel = QStringLiteral("voyage-3");
    d.defaultBaseUrl = QStringLiteral("https://api.voyageai.com");
    d.apiKeyEnv = {QStringLiteral("VOYAGE_API_KEY")};
    d.apiKeyRequired = true;
    d.defaultTimeoutMs = kEmbedTimeoutMs;
    d.extraKeys = {QStringLiteral("input_type"), QStringLiteral("truncation"), QStringLiteral("dimensions"),
                   QStringLiteral("dimension"), QStringLiteral("output_dimension"), QStringLiteral("max_batch")};
    ProviderSettings s = ProviderSettings::read(config, d);
    const QString inputType = s.string("input_type").toLower();
    if (!inputType.isEmpty() && inputType != QLatin1String("query") && inputType != QLatin1String("document"))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder's \"input_type\" must be \"query\", \"document\" or null "
                                   "(got \"%2\").")
                        .arg(key, s.string("input_type")));
    flag(s, "truncation"); // type check
    const int batch = maxBatch(s, kDefaultBatch, kBatchLimit);
    return std::unique_ptr<VoyageAiEmbedder>(new VoyageAiEmbedder(std::move(s), d, batch));
}

QString VoyageAiEmbedder::id() const
{
    return QStringLiteral("voyageai/") + settings().model;
}

int VoyageAiEmbedder::knownDimension() const
{
    const int asked = requestedDimension(settings(), {"dimensions", "dimension", "output_dimension"});
    return asked > 0 ? asked : voyageModelDimension(settings().model);
}

HttpRequest VoyageAiEmbedder::buildRequest(const QStringList &texts) const
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
    const QString inputType = s.string("input_type").toLower();
    if (!inputType.isEmpty())
        body["input_type"] = inputType.toStdString();
    const int dims = requestedDimension(s, {"dimensions", "dimension", "output_dimension"});
    if (dims > 0)
        body["output_dimension"] = dims;
    if (const std::optional<bool> truncation = flag(s, "truncation"))
        body["truncation"] = *truncation;
    r.body = bodyOf(body);
    return r;
}

std::vector<Embedding> VoyageAiEmbedder::parseResponse(const Json &body, int expected) const
{
    throwIfErrorBody(body, context(), settings().http.secrets);
    std::vector<Embedding> out = vectors(embeddingsByIndex(body, expected, context()), expected);
    return out;
}

} // namespace mneme
