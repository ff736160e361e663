#pragma once

#include <mneme/core/llm_provider.h>

#include <QObject>

namespace mneme {

// The "gemini" (also "google") LLM plugin: builds GeminiProvider instances (README.md lists the
// configuration).
class GeminiPlugin : public QObject, public LlmProviderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_LLM_FACTORY_IID FILE "gemini.json")
    Q_INTERFACES(mneme::LlmProviderFactory)

public:
    explicit GeminiPlugin(QObject *parent = nullptr);

    std::unique_ptr<LlmProvider> createLlm(const QString &key, const Json &config) override;
};

} // namespace mneme
