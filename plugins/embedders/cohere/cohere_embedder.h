#pragma once

#include <mneme/core/http_embedder.h>

#include <memory>

namespace mneme {

// Cohere: POST {base}/v2/embed {model, texts, input_type, embedding_types: ["float"],
// output_dimension, truncate} -> {"embeddings": {"float": [[...]]}}.
class CohereEmbedder : public HttpEmbedder
{
public:
    static std::unique_ptr<CohereEmbedder> create(const QString &key, const Json &config);

protected:
    HttpRequest buildRequest(const QStringList &texts) const override;
    std::vector<Embedding> parseResponse(const Json &body, int expected) const override;
    int knownDimension() const override;

private:
    CohereEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch, QString inputType,
                   QString truncate);

    QString m_inputType; // empty: not sent
    QString m_truncate;  // empty: not sent
};

} // namespace mneme
