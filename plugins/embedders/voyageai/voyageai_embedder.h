#pragma once

#include <mneme/core/http_embedder.h>

#include <memory>

namespace mneme {

// Voyage AI: POST {base}/v1/embeddings {model, input, input_type, output_dimension, truncation}
// -> {"data": [{"embedding": [...], "index": i}]}, put back in index order.
class VoyageAiEmbedder : public HttpEmbedder
{
public:
    static std::unique_ptr<VoyageAiEmbedder> create(const QString &key, const Json &config);

    QString id() const override; // "voyageai/<model>" whichever key named it

protected:
    HttpRequest buildRequest(const QStringList &texts) const override;
    std::vector<Embedding> parseResponse(const Json &body, int expected) const override;
    int knownDimension() const override;

private:
    VoyageAiEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch);
};

} // namespace mneme
