#pragma once

#include <mneme/core/embedder.h>

#include <QObject>

namespace mneme {

// The "jina" embedder plugin: Jina AI's /v1/embeddings. See README.md.
class JinaEmbedderPlugin : public QObject, public EmbedderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_EMBEDDER_FACTORY_IID FILE "jina.json")
    Q_INTERFACES(mneme::EmbedderFactory)

public:
    explicit JinaEmbedderPlugin(QObject *parent = nullptr);

    std::unique_ptr<Embedder> createEmbedder(const QString &key, const Json &config) override;
};

} // namespace mneme
