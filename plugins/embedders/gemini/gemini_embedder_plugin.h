#pragma once

#include <mneme/core/embedder.h>

#include <QObject>

namespace mneme {

// The "gemini" embedder plugin: keys "gemini", "google-generativeai", "google" (the Gemini API with
// an API key) and "google-vertex", "vertexai" (Vertex AI with an access token). See README.md.
class GeminiEmbedderPlugin : public QObject, public EmbedderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_EMBEDDER_FACTORY_IID FILE "gemini.json")
    Q_INTERFACES(mneme::EmbedderFactory)

public:
    explicit GeminiEmbedderPlugin(QObject *parent = nullptr);

    std::unique_ptr<Embedder> createEmbedder(const QString &key, const Json &config) override;
};

} // namespace mneme
