#pragma once

#include <mneme/core/json.h>
#include <mneme/core/llm_provider.h>
#include <mneme/runtime/export.h>

#include <QString>
#include <memory>

namespace mneme {

// How an agent, a crew's manager or a guardrail names its LLM: a provider object, or a configuration
// (a model string such as "gpt-4o-mini" or "ollama/llama3.2", or {"provider", "config"}) that is built
// through the PluginRegistry on first use. Copies share what they build, so every copy of one LlmRef
// talks to the same provider object.
class MNEME_RUNTIME_EXPORT LlmRef
{
public:
    LlmRef() = default;
    LlmRef(std::shared_ptr<LlmProvider> provider);
    LlmRef(const char *model);
    LlmRef(const QString &model);
    LlmRef(const Json &spec);

    bool isSet() const { return d != nullptr; }
    // The provider, built on the first call. Throws Error(Plugin) for an unknown provider key and
    // Error(InvalidArgument) for a bad provider configuration (never for a missing API key: that is
    // reported by the first request).
    std::shared_ptr<LlmProvider> resolve() const;
    // The model as configured ("openai/gpt-4o-mini", or the provider's id once built), for messages;
    // never holds secrets.
    QString describe() const;

private:
    struct State;
    std::shared_ptr<State> d;
};

} // namespace mneme
