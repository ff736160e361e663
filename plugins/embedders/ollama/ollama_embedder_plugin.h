#pragma once

#include <mneme/core/embedder.h>

#include <QObject>

namespace mneme {

// The "ollama" embedder plugin: a local (or remote) Ollama server. See README.md.
class OllamaEmbedderPlugin : public QObject, public EmbedderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_EMBEDDER_FACTORY_IID FILE "ollama.json")
    Q_INTERFACES(mneme::EmbedderFactory)

public:
    explicit OllamaEmbedderPlugin(QObject *parent = nullptr);

    std::unique_ptr<Embedder> createEmbedder(const QString &key, const Json &config) override;
};

} // namespace mneme
