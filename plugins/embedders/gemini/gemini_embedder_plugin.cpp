#include "gemini_embedder_plugin.h"

#include "gemini_embedder.h"

#include <mneme/core/error.h>

namespace mneme {

GeminiEmbedderPlugin::GeminiEmbedderPlugin(QObject *parent)
    : QObject(parent)
{
}

std::unique_ptr<Embedder> GeminiEmbedderPlugin::createEmbedder(const QString &key, const Json &config)
{
    const QString k = key.trimmed().toLower();
    if (k == QLatin1String("gemini") || k == QLatin1String("google-generativeai") || k == QLatin1String("google"))
        return GeminiEmbedder::create(k, config);
    if (k == QLatin1String("google-vertex") || k == QLatin1String("vertexai"))
        return VertexEmbedder::create(k, config);
    throw Error(ErrorKind::Plugin,
                QStringLiteral("The gemini embedder plugin answers to \"gemini\", \"google-generativeai\", \"google\", "
                               "\"google-vertex\" and \"vertexai\", not \"%1\".")
                    .arg(key));
}

} // namespace mneme
