#include "huggingface_embedder.h"

#include "plugins/embedders/http_common/embedder_util.h"

#include <mneme/core/error.h>

namespace mneme {

using namespace embedders;

namespace {

constexpr int kDefaultBatch = 32; // text-embeddings-inference's default --max-client-batch-size
constexpr int kBatchLimit = 8192; // the server's own limit decides; this only bounds typos
constexpr int kEmbedTimeoutMs = 60000;

} // namespace

HuggingFaceEmbedder::HuggingFaceEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch,
                                         QString truncationDirection)
    : HttpEmbedder(std::move(settings), defaults, maxBatch), m_truncationDirection(std::move(truncationDirection))
{
    knownDimension(); // refuses a bad "dimensions" now
}

std::unique_ptr<HuggingFaceEmbedder> HuggingFaceEmbedder::create(const QString &key, const Json &config)
{
    ProviderDefaults d;
    d.provider = key;
    d.defaultModel = QStringLiteral("sentence-transformers/all-MiniLM-L6-v2");
    d.defaultBaseUrl = QStringLiteral("http://localhost:8080");
    d.apiKeyEnv = {QStringLiteral("HF_TOKEN"), QStringLiteral("HUGGINGFACE_API_KEY")};
    d.baseUrlEnv = {QStringLiteral("HF_TEI_URL"), QStringLiteral("TEI_URL")};
    d.apiKeyRequired = false; // a local server needs none; an Inference Endpoint takes the token
    d.defaultTimeoutMs = kEmbedTimeoutMs;
    d.extraKeys = {QStringLiteral("normalize"), QStringLiteral("truncate"), QStringLiteral("truncation_direction"),
                   QStringLiteral("prompt_name"), QStringLiteral("dimensions"), QStringLiteral("dimension"),
                   QStringLiteral("max_batch")};
    ProviderSettings s = ProviderSettings::read(config, d);
    // A URL written with the endpoint is the same server.
    s.baseUrl = withoutPathSuffix(s.baseUrl, {QStringLiteral("/embed")});
    flag(s, "normalize");
    flag(s, "truncate");
    s.string("prompt_name");
    QString direction = s.string("truncation_direction").toLower();
    if (direction == QLatin1String("left"))
        direction = QStringLiteral("Left");
    else if (direction == QLatin1String("right"))
        direction = QStringLiteral("Right");
    else if (!direction.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder's \"truncation_direction\" must be \"left\" or \"right\" (got \"%2\").")
                        .arg(key, s.string("truncation_direction")));
    const int batch = maxBatch(s, kDefaultBatch, kBatchLimit);
    return std::unique_ptr<HuggingFaceEmbedder>(new HuggingFaceEmbedder(std::move(s), d, batch, direction));
}

QString HuggingFaceEmbedder::id() const
{
    return QStringLiteral("huggingface/") + settings().model;
}

int HuggingFaceEmbedder::knownDimension() const
{
    const int asked = requestedDimension(settings(), {"dimensions", "dimension"});
    return asked > 0 ? asked : knownEmbeddingDimension(settings().model);
}

HttpRequest HuggingFaceEmbedder::buildRequest(const QStringList &texts) const
{
    const ProviderSettings &s = settings();
    HttpRequest r;
    r.url = s.endpoint(QStringLiteral("/embed"));
    if (!s.apiKey.isEmpty())
        r.headers.append({"Authorization", "Bearer " + s.apiKey.toUtf8()});
    Json body = Json::object();
    body["inputs"] = textArray(texts);
    body["normalize"] = flag(s, "normalize").value_or(true);
    body["truncate"] = flag(s, "truncate").value_or(true);
    if (!m_truncationDirection.isEmpty())
        body["truncation_direction"] = m_truncationDirection.toStdString();
    const QString prompt = s.string("prompt_name");
    if (!prompt.isEmpty())
        body["prompt_name"] = prompt.toStdString();
    const int dims = requestedDimension(s, {"dimensions", "dimension"});
    if (dims > 0)
        body["dimensions"] = dims;
    r.body = bodyOf(body);
    return r;
}

std::vector<Embedding> HuggingFaceEmbedder::parseResponse(const Json &body, int expected) const
{
    throwIfErrorBody(body, context(), settings().http.secrets);
    std::vector<Embedding> out = vectors(body, expected);
    return out;
}

} // namespace mneme
