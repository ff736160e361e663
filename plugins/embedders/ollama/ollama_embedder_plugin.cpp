#include "ollama_embedder_plugin.h"

#include "ollama_embedder.h"

#include <mneme/core/error.h>

namespace mneme {

OllamaEmbedderPlugin::OllamaEmbedderPlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<Embedder> OllamaEmbedderPlugin::createEmbedder(const QString &key, const Json &config)
{
    const QString k = key.trimmed().toLower();
    if (k != QLatin1String("ollama"))
        throw Error(ErrorKind::Plugin,
                    QStringLiteral("The ollama embedder plugin answers to \"ollama\", not \"%1\".").arg(key));
    return OllamaEmbedder::create(k, config);
}

} // namespace mneme
