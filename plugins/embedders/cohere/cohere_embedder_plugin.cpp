#include "cohere_embedder_plugin.h"

#include "cohere_embedder.h"

#include <mneme/core/error.h>

namespace mneme {

CohereEmbedderPlugin::CohereEmbedderPlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<Embedder> CohereEmbedderPlugin::createEmbedder(const QString &key, const Json &config)
{
    const QString k = key.trimmed().toLower();
    if (!(k == QLatin1String("cohere")))
        throw Error(ErrorKind::Plugin,
                    QStringLiteral("The cohere embedder plugin answers to \"cohere\", not \"%1\".").arg(key));
    return CohereEmbedder::create(k, config);
}

} // namespace mneme
