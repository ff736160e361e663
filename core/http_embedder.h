#pragma once

#include <mneme/core/embedder.h>
#include <mneme/core/export.h>
#include <mneme/core/http_client.h>
#include <mneme/core/provider_settings.h>

#include <QMutex>
#include <memory>

namespace mneme {

// The common half of every HTTP embedder: settings, the HTTP client, batching to the provider's
// limit, blank texts, the dimension (from the config's `dimensions`, a table of well-known models,
// or one probe request) and checks that every vector has it.
class MNEME_CORE_EXPORT HttpEmbedder : public Embedder
{
public:
    HttpEmbedder(ProviderSettings settings, ProviderDefaults defaults, int maxBatch);
    ~HttpEmbedder() override;

    QString id() const override; // "<provider>/<model>"
    int dimension() const override;
    std::vector<Embedding> embed(const QStringList &texts) override;

    const ProviderSettings &settings() const { return m_settings; }

protected:
    // The request embedding `texts` (1..maxBatch non-blank texts).
    virtual HttpRequest buildRequest(const QStringList &texts) const = 0;
    // One vector per text, in the texts' order. Throw Error(MalformedReply) for a wrong shape.
    virtual std::vector<Embedding> parseResponse(const Json &body, int expected) const = 0;
    // The dimension the config asks for, or the model's known one; 0 when unknown (then probed).
    virtual int knownDimension() const;

    // Reads a list of float arrays ([[...], ...]) into vectors; throws Error(MalformedReply).
    std::vector<Embedding> vectors(const Json &arrays, int expected) const;
    QString context() const; // "<provider> embed (<model>)"

private:
    std::vector<Embedding> embedBatch(const QStringList &texts);

    ProviderSettings m_settings;
    ProviderDefaults m_defaults;
    int m_maxBatch;
    std::unique_ptr<HttpClient> m_client;
    mutable QMutex m_mutex;
    mutable int m_dimension = 0;
};

// Dimensions of well-known embedding models ("text-embedding-3-small" -> 1536); 0 when unknown.
MNEME_CORE_EXPORT int knownEmbeddingDimension(const QString &model);

} // namespace mneme
