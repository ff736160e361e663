#pragma once

#include <mneme/core/llm_provider.h>

#include <QObject>

namespace mneme {

// The "replay" LLM plugin; see README.md for its configuration.
class ReplayPlugin : public QObject, public LlmProviderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_LLM_FACTORY_IID FILE "replay.json")
    Q_INTERFACES(mneme::LlmProviderFactory)

public:
    using QObject::QObject;
    std::unique_ptr<LlmProvider> createLlm(const QString &key, const Json &config) override;
};

} // namespace mneme
