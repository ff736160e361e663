#include "ollama_plugin.h"

#include "ollama_provider.h"

#include <mneme/core/error.h>

namespace mneme {

OllamaPlugin::OllamaPlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<LlmProvider> OllamaPlugin::createLlm(const QString &key, const Json &config)
{
    if (key != QLatin1String("ollama"))
        throw Error(ErrorKind::Plugin,
                    QStringLiteral("The ollama LLM plugin answers to the key \"ollama\", not \"%1\".").arg(key));
    const ProviderDefaults defaults = OllamaProvider::defaults();
    return std::make_unique<OllamaProvider>(ProviderSettings::read(config, defaults), defaults);
}

} // namespace mneme
