#pragma once

#include <mneme/core/embedder.h>

#include <QObject>

namespace mneme {

// The "voyageai" embedder plugin (also "voyage"): Voyage AI's /v1/embeddings. See README.md.
class VoyageAiEmbedderPlugin : public QObject, public EmbedderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_EMBEDDER_FACTORY_IID FILE "voyageai.json")
    Q_INTERFACES(mneme::EmbedderFactory)

public:
    explicit VoyageAiEmbedderPlugin(QObject *parent = nullptr);

    std::unique_ptr<Embedder> createEmbedder(const QString &key, const Json &config) override;
};

} // namespace mneme
