#pragma once

#include <mneme/core/embedder.h>

#include <QObject>

namespace mneme {

// The "huggingface" embedder plugin (also "text-embeddings-inference"): a text-embeddings-inference server's /embed. See README.md.
class HuggingFaceEmbedderPlugin : public QObject, public EmbedderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_EMBEDDER_FACTORY_IID FILE "huggingface.json")
    Q_INTERFACES(mneme::EmbedderFactory)

public:
    explicit HuggingFaceEmbedderPlugin(QObject *parent = nullptr);

    std::unique_ptr<Embedder> createEmbedder(const QString &key, const Json &config) override;
};

} // namespace mneme
