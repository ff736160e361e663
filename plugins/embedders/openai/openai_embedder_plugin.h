#pragma once

#include <mneme/core/embedder.h>

#include <QObject>

namespace mneme {

// The "openai" embedder plugin: keys "openai" (api.openai.com or any OpenAI-compatible server by
// base_url) and "azure" (also "azure-openai", "azure_openai": an Azure OpenAI deployment).
// See README.md for the configuration.
class OpenAiEmbedderPlugin : public QObject, public EmbedderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_EMBEDDER_FACTORY_IID FILE "openai.json")
    Q_INTERFACES(mneme::EmbedderFactory)

public:
    explicit OpenAiEmbedderPlugin(QObject *parent = nullptr);

    std::unique_ptr<Embedder> createEmbedder(const QString &key, const Json &config) override;
};

} // namespace mneme
