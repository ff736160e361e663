#include "gemini_plugin.h"

#include "gemini_provider.h"

#include <mneme/core/error.h>

namespace mneme {

GeminiPlugin::GeminiPlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<LlmProvider> GeminiPlugin::createLlm(const QString &key, const Json &config)
{
    if (key != QLatin1String("gemini") && key != QLatin1String("google"))
        throw Error(ErrorKind::Plugin,
                    QStringLiteral("The gemini LLM plugin answers to the keys \"gemini\" and \"google\", not \"%1\".").arg(key));
    const ProviderDefaults defaults = GeminiProvider::defaults(key);
    return std::make_unique<GeminiProvider>(ProviderSettings::read(config, defaults), defaults);
}

} // namespace mneme
