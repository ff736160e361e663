#pragma once

#include <mneme/core/http_embedder.h>

#include <memory>

namespace mneme {

// The Gemini API: POST {base}/v1beta/models/{model}:batchEmbedContents with the key in the
// x-goog-api-key header, {"requests": [{"model": "models/<model>", "content": {"parts": [{"text"}]},
// "taskType", "outputDimensionality"}]} -> {"embeddings": [{"values": [...]}]}.
class GeminiEmbedder : public HttpEmbedder
{
public:
    static std::unique_ptr<GeminiEmbedder> create(const QString &key, const Json &config);

    QString id() const override; // "gemini/<model>" whichever key named it

protected:
    HttpRequest buildRequest(const QStringList &texts) const override;
    std::vector<Embedding> parseResponse(const Json &body, int expected) const override;
    int knownDimension() const override;

private:
    GeminiEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch, QString taskType);

    QString m_taskType; // empty: not sent
};

// Vertex AI: POST https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/
// {location}/publishers/google/models/{model}:predict with a Bearer access token,
// {"instances": [{"content", "task_type"}], "parameters": {...}} -> predictions[].embeddings.values.
class VertexEmbedder : public HttpEmbedder
{
public:
    static std::unique_ptr<VertexEmbedder> create(const QString &key, const Json &config);

    QString id() const override; // "google-vertex/<model>"

protected:
    HttpRequest buildRequest(const QStringList &texts) const override;
    std::vector<Embedding> parseResponse(const Json &body, int expected) const override;
    int knownDimension() const override;

private:
    VertexEmbedder(ProviderSettings settings, const ProviderDefaults &defaults, int maxBatch, QString project,
                   QString location, QString taskType);

    QString m_project;
    QString m_location;
    QString m_taskType;
};

} // namespace mneme
