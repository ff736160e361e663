#include "openai_embedder.h"

#include "plugins/embedders/http_common/embedder_util.h"

#include <mneme/core/error.h>

#include <QUrlQuery>

namespace mneme {

using namespace embedders;

namespace {

constexpr int kOpenAiBatchLimit = 2048; // inputs per request the API accepts
constexpr int kEmbedTimeoutMs = 60000;
const char *const kDefaultAzureApiVersion = "2024-10-21";

// A placeholder that cannot be reached: Azure has no public default endpoint, so a config without
// api_base (and without AZURE_API_BASE) is refused before anything is sent.
const char *const kNoAzureEndpoint = "https://azure-endpoint-not-configured.invalid";

} // namespace

OpenAiEmbedder::OpenAiEmbedder(ProviderSettings settings, ProviderDefaults defaults, int maxBatch, Flavor flavor,
                               QString deployment, QString apiVersion)
    : HttpEmbedder(std::move(settings), defaults, maxBatch), m_flavor(flavor), m_deployment(std::move(deployment)), m_apiVersion(std::move(apiVersion)), m_keyEnv(defaults.apiKeyEnv)
{
    knownDimension(); // refuses a bad "dimensions" now rather than at the first embed
}

std::unique_ptr<OpenAiEmbedder> OpenAiEmbedder::createOpenAi(const QString &key, const Json &config)
{
    ProviderDefaults d;
    d.provider = key;
    d.defaultModel = QStringLiteral("text-embedding-3-small");
    d.defaultBaseUrl = QStringLiteral("https://api.openai.com/v1");
    d.apiKeyEnv = {QStringLiteral("OPENAI_API_KEY")};
    d.baseUrlEnv = {QStringLiteral("OPENAI_BASE_URL"), QStringLiteral("OPENAI_API_BASE")};
    d.apiKeyRequired = true; // for api.openai.com; a server of your own at base_url may need none
    d.defaultTimeoutMs = kEmbedTimeoutMs;
    d.extraKeys = {QStringLiteral("dimensions"), QStringLiteral("dimension"), QStringLiteral("max_batch")};
    ProviderSettings s = ProviderSettings::read(config, d);
    const int batch = maxBatch(s, kOpenAiBatchLimit, kOpenAiBatchLimit);
    return std::unique_ptr<OpenAiEmbedder>(new OpenAiEmbedder(std::move(s), d, batch, Flavor::OpenAI, {}, {}));
}

std::unique_ptr<OpenAiEmbedder> OpenAiEmbedder::createAzure(const QString &key, const Json &config)
{
    ProviderDefaults d;
    d.provider = key;
    d.defaultModel = QString(); // the deployment names the model
    d.defaultBaseUrl = QString::fromLatin1(kNoAzureEndpoint);
    d.apiKeyEnv = {QStringLiteral("AZURE_API_KEY"), QStringLiteral("AZURE_OPENAI_API_KEY")};
    d.baseUrlEnv = {QStringLiteral("AZURE_API_BASE"), QStringLiteral("AZURE_OPENAI_ENDPOINT")};
    d.apiKeyRequired = false; // checked in buildRequest: Azure always needs one, whatever the URL
    d.defaultTimeoutMs = kEmbedTimeoutMs;
    d.extraKeys = {QStringLiteral("deployment_id"), QStringLiteral("deployment"), QStringLiteral("api_version"),
                   QStringLiteral("dimensions"), QStringLiteral("dimension"), QStringLiteral("max_batch")};
    ProviderSettings s = ProviderSettings::read(config, d);
    if (s.baseUrlIsDefault)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder needs the Azure OpenAI resource's endpoint: set \"api_base\" "
                                   "(e.g. \"https://<resource>.openai.azure.com\") in its config or the environment "
                                   "variable AZURE_API_BASE.")
                        .arg(key));
    // An endpoint written with its "/openai" part is the same endpoint.
    s.baseUrl = withoutPathSuffix(s.baseUrl, {QStringLiteral("/openai")});

    QString deployment = s.string("deployment_id");
    if (deployment.isEmpty())
        deployment = s.string("deployment");
    if (deployment.isEmpty())
        deployment = s.model; // deployments are often named after their model
    if (deployment.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The %1 embedder needs a deployment: set \"deployment_id\" to the name of your "
                                   "embedding model's deployment in the Azure OpenAI resource.")
                        .arg(key));
    if (s.model.isEmpty())
        s.model = deployment;

    QString apiVersion = s.string("api_version");
    if (apiVersion.isEmpty())
        apiVersion = qEnvironmentVariable("AZURE_API_VERSION").trimmed();
    if (apiVersion.isEmpty())
        apiVersion = qEnvironmentVariable("OPENAI_API_VERSION").trimmed();
    if (apiVersion.isEmpty())
        apiVersion = QString::fromLatin1(kDefaultAzureApiVersion);

    const int batch = maxBatch(s, kOpenAiBatchLimit, kOpenAiBatchLimit);
    return std::unique_ptr<OpenAiEmbedder>(
        new OpenAiEmbedder(std::move(s), d, batch, Flavor::Azure, deployment, apiVersion));
}

QString OpenAiEmbedder::id() const
{
    return (m_flavor == Flavor::Azure ? QStringLiteral("azure/") : QStringLiteral("openai/")) + settings().model;
}

int OpenAiEmbedder::knownDimension() const
{
    const int asked = requestedDimension(settings(), {"dimensions", "dimension"});
    return asked > 0 ? asked : knownEmbeddingDimension(settings().model);
}

HttpRequest OpenAiEmbedder::buildRequest(const QStringList &texts) const
{
    const ProviderSettings &s = settings();
    HttpRequest r;
    Json body = Json::object();
    if (m_flavor == Flavor::Azure) {
        if (s.apiKey.isEmpty())
            throw Error(ErrorKind::Authentication,
                        QStringLiteral("The %1 embedder has no API key: set \"api_key\" in its config or the "
                                       "environment variable %2 (the resource's key from the Azure portal).")
                            .arg(s.provider, m_keyEnv.join(QStringLiteral(" / "))));
        QUrl url = s.endpoint(QStringLiteral("/openai/deployments/%1/embeddings").arg(m_deployment));
        QUrlQuery query;
        query.addQueryItem(QStringLiteral("api-version"), m_apiVersion);
        url.setQuery(query);
        r.url = url;
        r.headers.append({"api-key", s.apiKey.toUtf8()});
    } else {
        r.url = s.endpoint(QStringLiteral("/embeddings"));
        if (!s.apiKey.isEmpty())
            r.headers.append({"Authorization", "Bearer " + s.apiKey.toUtf8()});
        body["model"] = s.model.toStdString();
    }
    body["input"] = textArray(texts);
    body["encoding_format"] = "float";
    const int dims = requestedDimension(s, {"dimensions", "dimension"});
    if (dims > 0)
        body["dimensions"] = dims;
    r.body = bodyOf(body);
    return r;
}

std::vector<Embedding> OpenAiEmbedder::parseResponse(const Json &body, int expected) const
{
    throwIfErrorBody(body, context(), settings().http.secrets);
    std::vector<Embedding> out = vectors(embeddingsByIndex(body, expected, context()), expected);
    return out;
}

} // namespace mneme
