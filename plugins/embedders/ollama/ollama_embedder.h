#pragma once

#include <mneme/core/http_embedder.h>

#include <memory>

namespace mneme {

// Embeddings from Ollama: POST {base}/api/embed {model, input: [...]} -> {"embeddings": [[...]]}.
class OllamaEmbedder : public HttpEmbedder
{
public:
    static std::unique_ptr<OllamaEmbedder> create(const QString &key, const Json &config);

protected:
    HttpRequest buildRequest(const QStringList &texts) const override;
    std::vector<Embedding> parseResponse(const Json &body, int expected) const override;
    int knownDimension() const override;

private:
    OllamaEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch);
};

} // namespace mneme
