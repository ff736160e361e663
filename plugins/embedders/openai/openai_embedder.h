#pragma once

#include <mneme/core/http_embedder.h>

#include <memory>

namespace mneme {

// Embeddings over the OpenAI protocol: POST {base}/embeddings {model, input, encoding_format,
// dimensions}, or an Azure OpenAI deployment's
// {api_base}/openai/deployments/{deployment}/embeddings?api-version=... with an api-key header.
// The reply's data[] is put back in index order.
class OpenAiEmbedder : public HttpEmbedder
{
public:
    enum class Flavor {
        OpenAI,
        Azure
    };

    static std::unique_ptr<OpenAiEmbedder> createOpenAi(const QString &key, const Json &config);
    static std::unique_ptr<OpenAiEmbedder> createAzure(const QString &key, const Json &config);

    QString id() const override; // "openai/<model>", "azure/<model or deployment>"

protected:
    HttpRequest buildRequest(const QStringList &texts) const override;
    std::vector<Embedding> parseResponse(const Json &body, int expected) const override;
    int knownDimension() const override;

private:
    OpenAiEmbedder(ProviderSettings settings, ProviderDefaults defaults, int maxBatch, Flavor flavor,
                   QString deployment, QString apiVersion);

    Flavor m_flavor;
    QString m_deployment; // Azure only
    QString m_apiVersion; // Azure only
    QStringList m_keyEnv;
};

} // namespace mneme
