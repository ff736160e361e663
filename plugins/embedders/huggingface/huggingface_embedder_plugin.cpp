#include "huggingface_embedder_plugin.h"

#include "huggingface_embedder.h"

#include <mneme/core/error.h>

namespace mneme {

HuggingFaceEmbedderPlugin::HuggingFaceEmbedderPlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<Embedder> HuggingFaceEmbedderPlugin::createEmbedder(const QString &key, const Json &config)
{
    const QString k = key.trimmed().toLower();
    if (!(k == QLatin1String("huggingface") || k == QLatin1String("text-embeddings-inference")))
        throw Error(ErrorKind::Plugin,
                    QStringLiteral("The huggingface embedder plugin answers to \"huggingface\" and \"text-embeddings-inference\", not \"%1\".").arg(key));
    return HuggingFaceEmbedder::create(k, config);
}

} // namespace mneme
