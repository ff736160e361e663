#pragma once

#include <mneme/core/llm_provider.h>

#include <QObject>

namespace mneme {

// The "anthropic" LLM plugin: builds AnthropicProvider instances (see README.md for the config).
class AnthropicPlugin : public QObject, public LlmProviderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_LLM_FACTORY_IID FILE "anthropic.json")
    Q_INTERFACES(mneme::LlmProviderFactory)

public:
    explicit AnthropicPlugin(QObject *parent = nullptr);

    std::unique_ptr<LlmProvider> createLlm(const QString &key, const Json &config) override;
};

} // namespace mneme
