#include "openai_plugin.h"

#include "azure_openai_provider.h"
#include "openai_provider.h"

#include <mneme/core/error.h>

namespace mneme {

std::unique_ptr<LlmProvider> OpenAiPlugin::createLlm(const QString &key, const Json &config)
{
    if (key == QLatin1String("openai"))
        return std::make_unique<OpenAiProvider>(config);
    if (key == QLatin1String("azure"))
        return std::make_unique<AzureOpenAiProvider>(config);
    throw Error(ErrorKind::Plugin,
                QStringLiteral("The openai LLM plugin answers to the keys \"openai\" and \"azure\", not \"%1\".").arg(key));
}

} // namespace mneme
