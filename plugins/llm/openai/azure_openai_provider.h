#pragma once

#include "openai_provider.h"

namespace mneme {

// An Azure OpenAI deployment: the Chat Completions wire format at
// {api_base}/openai/deployments/{deployment_id}/chat/completions?api-version={api_version},
// authenticated with the `api-key` header. id() is "azure/<deployment>". See README.md.
class AzureOpenAiProvider : public OpenAiProvider
{
    Q_OBJECT
public:
    static constexpr const char *DefaultApiVersion = "2024-10-21";

    // What the "azure" key reads: AZURE_API_KEY / AZURE_OPENAI_API_KEY, AZURE_API_BASE /
    // AZURE_OPENAI_ENDPOINT, and the keys deployment_id, api_version, supports_json_schema, headers.
    static ProviderDefaults defaults();

    // Throws Error(InvalidArgument) without a deployment_id or an endpoint.
    explicit AzureOpenAiProvider(const Json &config, QObject *parent = nullptr);
    ~AzureOpenAiProvider() override;

    QString id() const override;

protected:
    QUrl chatUrl() const override;
    HttpHeaders authHeaders() const override; // throws Error(Authentication) without a key
    bool sendsModel() const override;

private:
    QString m_deployment;
    QString m_apiVersion;
};

} // namespace mneme
