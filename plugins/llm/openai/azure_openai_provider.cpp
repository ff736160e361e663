#include "azure_openai_provider.h"

#include <mneme/core/error.h>

#include <QRegularExpression>
#include <QUrlQuery>

namespace mneme {

namespace {

// Stands in for the endpoint while reading the settings: Azure has no public default, so a base URL
// still equal to it means none was configured.
const QString kNoEndpoint = QStringLiteral("https://resource.openai.azure.com");

ProviderSettings azureSettings(const Json &config)
{
    const ProviderDefaults defaults = AzureOpenAiProvider::defaults();
    ProviderSettings s = ProviderSettings::read(config, defaults);
    if (s.baseUrlIsDefault)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The azure provider needs the endpoint of your Azure OpenAI resource: set \"api_base\" "
                                   "(https://<resource>.openai.azure.com) in its config or the environment variable %1.")
                        .arg(defaults.baseUrlEnv.join(QStringLiteral(" / "))));
    const QString deployment = s.string("deployment_id");
    if (deployment.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The azure provider needs \"deployment_id\", the name of your deployment, in its config "
                                   "(or write the model as \"azure/<deployment>\")."));
    static const QRegularExpression name(QStringLiteral("^[A-Za-z0-9._-]+$"));
    if (!name.match(deployment).hasMatch())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The azure provider's \"deployment_id\" \"%1\" is not a deployment name (letters, digits, "
                                   "'.', '_' and '-').")
                        .arg(deployment));
    // The base may be written with Azure's own /openai path; the deployment URL adds it.
    QString path = s.baseUrl.path();
    while (path.endsWith(QLatin1Char('/')))
        path.chop(1);
    if (path.endsWith(QLatin1String("/openai")))
        s.baseUrl.setPath(path.chopped(7));
    if (s.model.isEmpty())
        s.model = deployment; // the deployment usually bears the model's name
    return s;
}

} // namespace

ProviderDefaults AzureOpenAiProvider::defaults()
{
    ProviderDefaults d;
    d.provider = QStringLiteral("azure");
    d.defaultBaseUrl = kNoEndpoint;
    d.apiKeyEnv = QStringList{QStringLiteral("AZURE_API_KEY"), QStringLiteral("AZURE_OPENAI_API_KEY")};
    d.baseUrlEnv = QStringList{QStringLiteral("AZURE_API_BASE"), QStringLiteral("AZURE_OPENAI_ENDPOINT")};
    d.apiKeyRequired = true;
    d.extraKeys = QStringList{QStringLiteral("deployment_id"), QStringLiteral("api_version"),
                              QStringLiteral("supports_json_schema"), QStringLiteral("headers")};
    return d;
}

AzureOpenAiProvider::AzureOpenAiProvider(const Json &config, QObject *parent)
    : OpenAiProvider(azureSettings(config), defaults(), true, parent), m_deployment(settings().string("deployment_id"))
{
    m_apiVersion = settings().string("api_version", qEnvironmentVariable("AZURE_API_VERSION").trimmed());
    if (m_apiVersion.isEmpty())
        m_apiVersion = QString::fromLatin1(DefaultApiVersion);
}

QString AzureOpenAiProvider::id() const
{
    return QStringLiteral("azure/") + m_deployment;
}

QUrl AzureOpenAiProvider::chatUrl() const
{
    QUrl url = settings().endpoint(QStringLiteral("/openai/deployments/%1/chat/completions").arg(m_deployment));
    QUrlQuery query;
    query.addQueryItem(QStringLiteral("api-version"), m_apiVersion);
    url.setQuery(query);
    return url;
}

HttpHeaders AzureOpenAiProvider::authHeaders() const
{
    if (settings().apiKey.isEmpty())
        throw Error(ErrorKind::Authentication,
                    QStringLiteral("The azure provider has no API key: set \"api_key\" in its config or the environment "
                                   "variable %1.")
                        .arg(defaults().apiKeyEnv.join(QStringLiteral(" / "))));
    return {{QByteArrayLiteral("api-key"), settings().apiKey.toUtf8()}};
}

bool AzureOpenAiProvider::sendsModel() const
{
    return false;
}

AzureOpenAiProvider::~AzureOpenAiProvider()
{
    shutdown(); // before this class's members go: requests in flight call chatUrl()
}

} // namespace mneme
