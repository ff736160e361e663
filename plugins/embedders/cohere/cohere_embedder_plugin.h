#pragma once

#include <mneme/core/embedder.h>

#include <QObject>

namespace mneme {

// The "cohere" embedder plugin: Cohere's v2 /embed. See README.md.
class CohereEmbedderPlugin : public QObject, public EmbedderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_EMBEDDER_FACTORY_IID FILE "cohere.json")
    Q_INTERFACES(mneme::EmbedderFactory)

public:
    explicit CohereEmbedderPlugin(QObject *parent = nullptr);

    std::unique_ptr<Embedder> createEmbedder(const QString &key, const Json &config) override;
};

} // namespace mneme
