#include "jina_embedder_plugin.h"

#include "jina_embedder.h"

#include <mneme/core/error.h>

namespace mneme {

JinaEmbedderPlugin::JinaEmbedderPlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<Embedder> JinaEmbedderPlugin::createEmbedder(const QString &key, const Json &config)
{
    const QString k = key.trimmed().toLower();
    if (!(k == QLatin1String("jina")))
        throw Error(ErrorKind::Plugin,
                    QStringLiteral("The jina embedder plugin answers to \"jina\", not \"%1\".").arg(key));
    return JinaEmbedder::create(k, config);
}

} // namespace mneme
