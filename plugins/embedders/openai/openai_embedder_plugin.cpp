#include "openai_embedder_plugin.h"

#include "openai_embedder.h"

#include <mneme/core/error.h>

namespace mneme {

OpenAiEmbedderPlugin::OpenAiEmbedderPlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<Embedder> OpenAiEmbedderPlugin::createEmbedder(const QString &key, const Json &config)
{
    const QString k = key.trimmed().toLower();
    if (k == QLatin1String("openai"))
        return OpenAiEmbedder::createOpenAi(k, config);
    if (k == QLatin1String("azure") || k == QLatin1String("azure-openai") || k == QLatin1String("azure_openai"))
        return OpenAiEmbedder::createAzure(k, config);
    throw Error(ErrorKind::Plugin,
                QStringLiteral("The openai embedder plugin answers to \"openai\" and \"azure\", not \"%1\".").arg(key));
}

} // namespace mneme
