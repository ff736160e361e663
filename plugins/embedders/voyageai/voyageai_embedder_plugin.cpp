#include "voyageai_embedder_plugin.h"

#include "voyageai_embedder.h"

#include <mneme/core/error.h>

namespace mneme {

VoyageAiEmbedderPlugin::VoyageAiEmbedderPlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<Embedder> VoyageAiEmbedderPlugin::createEmbedder(const QString &key, const Json &config)
{
    const QString k = key.trimmed().toLower();
    if (!(k == QLatin1String("voyageai") || k == QLatin1String("voyage")))
        throw Error(ErrorKind::Plugin,
                    QStringLiteral("The voyageai embedder plugin answers to \"voyageai\" and \"voyage\", not \"%1\".").arg(key));
    return VoyageAiEmbedder::create(k, config);
}

} // namespace mneme
