#include "cohere_embedder.h"

#include "plugins/embedders/http_common/embedder_util.h"

#include <mneme/core/error.h>

#include <map>

namespace mneme {

using namespace embedders;

namespace {

constexpr int kBatchLimit = 96; // texts per /embed call
constexpr int kEmbedTimeoutMs = 60000;

// Cohere's v3 and v4 models embed a text differently for a search index ("search_document") and
// for a search query ("search_query"). Memory's Embedder has one embed() for both, and the vectors
// that last are the stored ones, so they get the documented type for stored texts. Queries
// embedded the same way still land in that space (document-to-document similarity), which is also
// what Memory's duplicate detection compares.
const char *const kDefaultInputType = "search_document";

int cohereModelDimension(const QString &model)
{
    static const std::map<QString, int> known = {
        {QStringLiteral("embed-v4.0"), 1536},
        {QStringLiteral("embed-english-v2.0"), 4096},
        {QStringLiteral("embed-english-light-v2.0"), 1024},
        {QStringLiteral("embed-multilingual-v2.0"), 768},
    };
    const auto it = known.find(model.toLower());
    return it != known.end() ? it->second : knownEmbeddingDimension(model);
}

} // namespace

CohereEmbedder::CohereEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch,
                               QString inputType, QString truncate)
    : HttpEmbedder(std::move(settings), defaults, maxBatch), m_inputType(std::move(inputType)), m_truncate(std::move(truncate))
{
    knownDimension(); // refuses a bad "dimensions" now
}

std::unique_ptr<CohereEmbedder> CohereEmbedder::create(const QString &key, const Json &config)
{
    ProviderDefaults d;
    d.provider = key;
    d.defaultModel = QStringLiteral("embed-english-v3.0");
    d.defaultBaseUrl = QStringLiteral("https://api.cohere.com");
    d.apiKeyEnv = {QStringLiteral("COHERE_API_KEY"), QStringLiteral("CO_API_KEY")};
    d.baseUrlEnv = {QStringLiteral("CO_API_URL")};
    d.apiKeyRequired = true;
    d.defaultTimeoutMs = kEmbedTimeoutMs;
    d.extraKeys = {QStringLiteral("input_type"), QStringLiteral("truncate"), QStringLiteral("dimensions"),
                   QStringLiteral("dimension"), QStringLiteral("output_dimension"), QStringLiteral("max_batch")};
    ProviderSettings s = ProviderSettings::read(config, d);

    QString inputType = QString::fromLatin1(kDefaultInputType);
    if (s.config.contains("input_type")) {
        inputType = s.string("input_type").toLower();
        if (inputType == QLatin1String("none"))
            inputType.clear();
    }
    QString truncate = s.string("truncate").toUpper();
    if (!truncate.isEmpty() && truncate != QLatin1String("NONE") && truncate != QLatin1String("START")
        && truncate != QLatin1String("END"))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder's \"truncate\" must be \"NONE\", \"START\" or \"END\" (got \"%2\").")
                        .arg(key, s.string("truncate")));
    const int batch = maxBatch(s, kBatchLimit, kBatchLimit);
    return std::unique_ptr<CohereEmbedder>(new CohereEmbedder(std::move(s), d, batch, inputType, truncate));
}

int CohereEmbedder::knownDimension() const
{
    const int asked = requestedDimension(settings(), {"dimensions", "dimension", "output_dimension"});
    return asked > 0 ? asked : cohereModelDimension(settings().model);
}

HttpRequest CohereEmbedder::buildRequest(const QStringList &texts) const
{
    const ProviderSettings &s = settings();
    HttpRequest r;
    r.url = s.endpoint(pathEndsWith(s.baseUrl, QStringLiteral("/v2")) ? QStringLiteral("/embed")
                                                                      : QStringLiteral("/v2/embed"));
    if (!s.apiKey.isEmpty())
        r.headers.append({"Authorization", "Bearer " + s.apiKey.toUtf8()});
    Json body = Json::object();
    body["model"] = s.model.toStdString();
    body["texts"] = textArray(texts);
    if (!m_inputType.isEmpty())
        body["input_type"] = m_inputType.toStdString();
    body["embedding_types"] = Json::array({"float"});
    const int dims = requestedDimension(s, {"dimensions", "dimension", "output_dimension"});
    if (dims > 0)
        body["output_dimension"] = dims;
    if (!m_truncate.isEmpty())
        body["truncate"] = m_truncate.toStdString();
    r.body = bodyOf(body);
    return r;
}

std::vector<Embedding> CohereEmbedder::parseResponse(const Json &body, int expected) const
{
    throwIfErrorBody(body, context(), settings().http.secrets);
    if (!body.is_object() || !body.contains("embeddings") || !body["embeddings"].is_object()
        || !body["embeddings"].contains("float"))
        throw Error(ErrorKind::MalformedReply,
                    QStringLiteral("%1: the reply has no \"embeddings\".\"float\" list.").arg(context()));
    std::vector<Embedding> out = vectors(body["embeddings"]["float"], expected);
    return out;
}

} // namespace mneme
