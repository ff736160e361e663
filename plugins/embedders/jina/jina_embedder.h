#pragma once

#include <mneme/core/http_embedder.h>

#include <memory>

namespace mneme {

// Jina AI: POST {base}/v1/embeddings {model, input, task, dimensions, normalized, late_chunking}
// -> {"data": [{"embedding": [...], "index": i}]}, put back in index order.
class JinaEmbedder : public HttpEmbedder
{
public:
    static std::unique_ptr<JinaEmbedder> create(const QString &key, const Json &config);

protected:
    HttpRequest buildRequest(const QStringList &texts) const override;
    std::vector<Embedding> parseResponse(const Json &body, int expected) const override;
    int knownDimension() const override;

private:
    JinaEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch);
};

} // namespace mneme
