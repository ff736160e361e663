#pragma once

#include <mneme/core/llm_provider.h>

#include <QObject>

namespace mneme {

// The "ollama" LLM plugin: builds OllamaProvider instances (README.md lists the configuration).
class OllamaPlugin : public QObject, public LlmProviderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_LLM_FACTORY_IID FILE "ollama.json")
    Q_INTERFACES(mneme::LlmProviderFactory)

public:
    explicit OllamaPlugin(QObject *parent = nullptr);

    std::unique_ptr<LlmProvider> createLlm(const QString &key, const Json &config) override;
};

} // namespace mneme
