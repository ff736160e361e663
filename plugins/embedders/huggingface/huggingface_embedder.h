#pragma once

#include <mneme/core/http_embedder.h>

#include <memory>

namespace mneme {

// A text-embeddings-inference server: POST {base}/embed {inputs, normalize, truncate, ...} -> [[...]].
// The model is whatever the server runs; the configured name only names the embedder's id.
class HuggingFaceEmbedder : public HttpEmbedder
{
public:
    static std::unique_ptr<HuggingFaceEmbedder> create(const QString &key, const Json &config);

    QString id() const override; // "huggingface/<model>" whichever key named it

protected:
    HttpRequest buildRequest(const QStringList &texts) const override;
    std::vector<Embedding> parseResponse(const Json &body, int expected) const override;
    int knownDimension() const override;

private:
    HuggingFaceEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch,
                        QString truncationDirection);

    QString m_truncationDirection; // "Left", "Right" or empty (not sent)
};

} // namespace mneme
