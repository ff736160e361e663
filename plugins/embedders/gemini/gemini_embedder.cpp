#include "gemini_embedder.h"

#include "plugins/embedders/http_common/embedder_util.h"

#include <mneme/core/error.h>

#include <QRegularExpression>

namespace mneme {

using namespace embedders;

namespace {

constexpr int kGeminiDefaultBatch = 100; // requests per batchEmbedContents call
constexpr int kGeminiBatchLimit = 250;
constexpr int kVertexDefaultBatch = 8; // 8 inputs of at most 2048 tokens stay under the 20k-token cap
constexpr int kVertexBatchLimit = 250; // instances per :predict call
constexpr int kEmbedTimeoutMs = 60000;

// Memory embeds what it stores and what it is asked with the same embedder, and compares stored
// records with each other to find duplicates, so the symmetric task is the default.
const char *const kDefaultTaskType = "SEMANTIC_SIMILARITY";

// The configured task type, upper-cased; the default when the key is absent, empty (not sent)
// when it is null, "" or "none".
QString taskTypeOf(const ProviderSettings &s)
{
    if (!s.config.contains("task_type"))
        return QString::fromLatin1(kDefaultTaskType);
    if (s.config["task_type"].is_null())
        return {};
    const QString t = s.string("task_type").toUpper();
    if (t.isEmpty() || t == QLatin1String("NONE"))
        return {};
    static const QRegularExpression valid(QStringLiteral("^[A-Z_]+$"));
    if (!valid.match(t).hasMatch())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder's \"task_type\" must be a task name such as SEMANTIC_SIMILARITY, "
                                   "RETRIEVAL_DOCUMENT, RETRIEVAL_QUERY, CLASSIFICATION or CLUSTERING (got \"%2\").")
                        .arg(s.provider, s.string("task_type")));
    return t;
}

QString withoutModelsPrefix(const QString &model)
{
    return model.startsWith(QLatin1String("models/")) ? model.mid(7) : model;
}

int googleModelDimension(const QString &model)
{
    const QString m = withoutModelsPrefix(model).toLower();
    if (m == QLatin1String("text-embedding-005") || m == QLatin1String("text-multilingual-embedding-002"))
        return 768;
    return knownEmbeddingDimension(m);
}

} // namespace

// ------------------------------------------------------------------------------------------------
// Gemini API

GeminiEmbedder::GeminiEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch,
                               QString taskType)
    : HttpEmbedder(std::move(settings), defaults, maxBatch), m_taskType(std::move(taskType))
{
    knownDimension(); // refuses a bad "dimensions" now
}

std::unique_ptr<GeminiEmbedder> GeminiEmbedder::create(const QString &key, const Json &config)
{
    ProviderDefaults d;
    d.provider = key;
    d.defaultModel = QStringLiteral("gemini-embedding-001");
    d.defaultBaseUrl = QStringLiteral("https://generativelanguage.googleapis.com");
    d.apiKeyEnv = {QStringLiteral("GEMINI_API_KEY"), QStringLiteral("GOOGLE_API_KEY")};
    d.apiKeyRequired = true;
    d.defaultTimeoutMs = kEmbedTimeoutMs;
    d.extraKeys = {QStringLiteral("task_type"), QStringLiteral("dimensions"), QStringLiteral("dimension"),
                   QStringLiteral("output_dimensionality"), QStringLiteral("max_batch")};
    ProviderSettings s = ProviderSettings::read(config, d);
    s.model = withoutModelsPrefix(s.model);
    QString task = taskTypeOf(s);
    const int batch = maxBatch(s, kGeminiDefaultBatch, kGeminiBatchLimit);
    return std::unique_ptr<GeminiEmbedder>(new GeminiEmbedder(std::move(s), d, batch, std::move(task)));
}

QString GeminiEmbedder::id() const
{
    return QStringLiteral("gemini/") + settings().model;
}

int GeminiEmbedder::knownDimension() const
{
    const int asked = requestedDimension(settings(), {"dimensions", "dimension", "output_dimensionality"});
    return asked > 0 ? asked : googleModelDimension(settings().model);
}

HttpRequest GeminiEmbedder::buildRequest(const QStringList &texts) const
{
    const ProviderSettings &s = settings();
    HttpRequest r;
    const bool versioned = pathEndsWith(s.baseUrl, QStringLiteral("/v1beta")) || pathEndsWith(s.baseUrl, QStringLiteral("/v1"))
                        || pathEndsWith(s.baseUrl, QStringLiteral("/v1alpha"));
    r.url = s.endpoint((versioned ? QString() : QStringLiteral("/v1beta"))
                       + QStringLiteral("/models/%1:batchEmbedContents").arg(s.model));
    // The key travels in a header, never in the URL (URLs end up in logs and proxies).
    if (!s.apiKey.isEmpty())
        r.headers.append({"x-goog-api-key", s.apiKey.toUtf8()});
    const std::string modelName = "models/" + s.model.toStdString();
    const int dims = requestedDimension(s, {"dimensions", "dimension", "output_dimensionality"});
    Json requests = Json::array();
    for (const QString &text : texts) {
        Json item = Json::object();
        item["model"] = modelName;
        item["content"] = {{"parts", Json::array({Json{{"text", text.toStdString()}}})}};
        if (!m_taskType.isEmpty())
            item["taskType"] = m_taskType.toStdString();
        if (dims > 0)
            item["outputDimensionality"] = dims;
        requests.push_back(std::move(item));
    }
    r.body = bodyOf(Json{{"requests", std::move(requests)}});
    return r;
}

std::vector<Embedding> GeminiEmbedder::parseResponse(const Json &body, int expected) const
{
    throwIfErrorBody(body, context(), settings().http.secrets);
    if (!body.is_object() || !body.contains("embeddings") || !body["embeddings"].is_array())
        throw Error(ErrorKind::MalformedReply, QStringLiteral("%1: the reply has no \"embeddings\" list.").arg(context()));
    Json arrays = Json::array();
    for (const Json &e : body["embeddings"]) {
        if (!e.is_object() || !e.contains("values"))
            throw Error(ErrorKind::MalformedReply,
                        QStringLiteral("%1: an entry of the reply's \"embeddings\" has no \"values\".").arg(context()));
        arrays.push_back(e["values"]);
    }
    std::vector<Embedding> out = vectors(arrays, expected);
    return out;
}

// ------------------------------------------------------------------------------------------------
// Vertex AI

VertexEmbedder::VertexEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch,
                               QString project, QString location, QString taskType)
    : HttpEmbedder(std::move(settings), defaults, maxBatch), m_project(std::move(project)), m_location(std::move(location)), m_taskType(std::move(taskType))
{
    knownDimension();
}

std::unique_ptr<VertexEmbedder> VertexEmbedder::create(const QString &key, const Json &config)
{
    const Json cfg = config.is_null() ? Json::object() : config;
    // The location decides the default endpoint, so it is read first.
    QString location;
    if (cfg.is_object() && cfg.contains("location") && cfg["location"].is_string())
        location = QString::fromStdString(cfg["location"].get<std::string>()).trimmed().toLower();
    if (location.isEmpty())
        location = qEnvironmentVariable("GOOGLE_CLOUD_LOCATION").trimmed().toLower();
    if (location.isEmpty())
        location = QStringLiteral("us-central1");
    static const QRegularExpression validLocation(QStringLiteral("^[a-z0-9-]+$"));
    if (!validLocation.match(location).hasMatch())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder's \"location\" must be a Google Cloud region such as "
                                   "\"us-central1\" or \"global\" (got \"%2\").")
                        .arg(key, location));

    ProviderDefaults d;
    d.provider = key;
    d.defaultModel = QStringLiteral("gemini-embedding-001");
    d.defaultBaseUrl = location == QLatin1String("global")
                         ? QStringLiteral("https://aiplatform.googleapis.com")
                         : QStringLiteral("https://%1-aiplatform.googleapis.com").arg(location);
    d.apiKeyEnv = {QStringLiteral("GOOGLE_CLOUD_ACCESS_TOKEN")};
    d.apiKeyRequired = false; // checked in buildRequest, with advice on getting a token
    d.defaultTimeoutMs = kEmbedTimeoutMs;
    d.extraKeys = {QStringLiteral("project_id"), QStringLiteral("project"), QStringLiteral("location"),
                   QStringLiteral("access_token"), QStringLiteral("task_type"), QStringLiteral("dimensions"),
                   QStringLiteral("dimension"), QStringLiteral("output_dimensionality"),
                   QStringLiteral("auto_truncate"), QStringLiteral("max_batch")};
    ProviderSettings s = ProviderSettings::read(cfg, d);
    s.model = withoutModelsPrefix(s.model);

    const QString token = s.string("access_token");
    if (!token.isEmpty()) {
        s.apiKey = token;
        s.apiKeySource = QStringLiteral("config");
        s.http.secrets << token;
    }

    QString project = s.string("project_id");
    if (project.isEmpty())
        project = s.string("project");
    if (project.isEmpty())
        project = qEnvironmentVariable("GOOGLE_CLOUD_PROJECT").trimmed();
    if (project.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder needs a Google Cloud project: set \"project_id\" in its config "
                                   "or the environment variable GOOGLE_CLOUD_PROJECT.")
                        .arg(key));
    flag(s, "auto_truncate"); // type check
    QString task = taskTypeOf(s);

    // gemini-embedding-001 takes one input per request on Vertex AI.
    const bool singleInput = s.model.startsWith(QLatin1String("gemini-embedding"), Qt::CaseInsensitive);
    const int batch = singleInput ? maxBatch(s, 1, 1) : maxBatch(s, kVertexDefaultBatch, kVertexBatchLimit);
    return std::unique_ptr<VertexEmbedder>(
        new VertexEmbedder(std::move(s), d, batch, project, location, std::move(task)));
}

QString VertexEmbedder::id() const
{
    return QStringLiteral("google-vertex/") + settings().model;
}

int VertexEmbedder::knownDimension() const
{
    const int asked = requestedDimension(settings(), {"dimensions", "dimension", "output_dimensionality"});
    return asked > 0 ? asked : googleModelDimension(settings().model);
}

HttpRequest VertexEmbedder::buildRequest(const QStringList &texts) const
{
    const ProviderSettings &s = settings();
    if (s.apiKey.isEmpty() && s.baseUrlIsDefault)
        throw Error(ErrorKind::Authentication,
                    QStringLiteral("The %1 embedder has no access token: set \"access_token\" in its config or the "
                                   "environment variable GOOGLE_CLOUD_ACCESS_TOKEN (for example to the output of "
                                   "`gcloud auth print-access-token`; such tokens expire after about an hour).")
                        .arg(s.provider));
    HttpRequest r;
    const bool versioned = pathEndsWith(s.baseUrl, QStringLiteral("/v1")) || pathEndsWith(s.baseUrl, QStringLiteral("/v1beta1"));
    r.url = s.endpoint((versioned ? QString() : QStringLiteral("/v1"))
                       + QStringLiteral("/projects/%1/locations/%2/publishers/google/models/%3:predict")
                             .arg(m_project, m_location, s.model));
    if (!s.apiKey.isEmpty())
        r.headers.append({"Authorization", "Bearer " + s.apiKey.toUtf8()});
    Json instances = Json::array();
    for (const QString &text : texts) {
        Json item = Json{{"content", text.toStdString()}};
        if (!m_taskType.isEmpty())
            item["task_type"] = m_taskType.toStdString();
        instances.push_back(std::move(item));
    }
    Json body = Json{{"instances", std::move(instances)}};
    Json parameters = Json::object();
    const int dims = requestedDimension(s, {"dimensions", "dimension", "output_dimensionality"});
    if (dims > 0)
        parameters["outputDimensionality"] = dims;
    if (const std::optional<bool> truncate = flag(s, "auto_truncate"))
        parameters["autoTruncate"] = *truncate;
    if (!parameters.empty())
        body["parameters"] = std::move(parameters);
    r.body = bodyOf(body);
    return r;
}

std::vector<Embedding> VertexEmbedder::parseResponse(const Json &body, int expected) const
{
    throwIfErrorBody(body, context(), settings().http.secrets);
    if (!body.is_object() || !body.contains("predictions") || !body["predictions"].is_array())
        throw Error(ErrorKind::MalformedReply, QStringLiteral("%1: the reply has no \"predictions\" list.").arg(context()));
    Json arrays = Json::array();
    for (const Json &p : body["predictions"]) {
        if (!p.is_object() || !p.contains("embeddings") || !p["embeddings"].is_object()
            || !p["embeddings"].contains("values"))
            throw Error(ErrorKind::MalformedReply,
                        QStringLiteral("%1: a prediction in the reply has no \"embeddings\".\"values\".").arg(context()));
        arrays.push_back(p["embeddings"]["values"]);
    }
    std::vector<Embedding> out = vectors(arrays, expected);
    return out;
}

} // namespace mneme
