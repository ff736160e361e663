#include "anthropic_plugin.h"

#include "anthropic_provider.h"

#include <mneme/core/error.h>

namespace mneme {

AnthropicPlugin::AnthropicPlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<LlmProvider> AnthropicPlugin::createLlm(const QString &key, const Json &config)
{
    if (key != QLatin1String("anthropic"))
        throw Error(ErrorKind::Plugin,
                    QStringLiteral("The anthropic plugin answers to the key \"anthropic\", not \"%1\".").arg(key));
    return std::make_unique<AnthropicProvider>(config);
}

} // namespace mneme
