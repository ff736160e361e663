#pragma once

#include <mneme/core/llm_provider.h>

#include <QObject>

namespace mneme {

// The "openai" LLM plugin: builds an OpenAiProvider for the key "openai" and an
// AzureOpenAiProvider for "azure". See README.md for their configuration.
class OpenAiPlugin : public QObject, public LlmProviderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_LLM_FACTORY_IID FILE "openai.json")
    Q_INTERFACES(mneme::LlmProviderFactory)

public:
    using QObject::QObject;
    std::unique_ptr<LlmProvider> createLlm(const QString &key, const Json &config) override;
};

} // namespace mneme
