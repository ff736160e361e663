#pragma once

#include <mneme/core/embedder.h>
#include <mneme/core/export.h>

#include <QString>
#include <functional>

namespace mneme {

// Embeddings from a C++ callable: the "custom" embedder key.
//
//     mneme::registerEmbeddingCallable("my-model", [](const QStringList &texts) { ... return vectors; });
//     config.embedder = Json{{"provider", "custom"}, {"config", {{"embedding_callable", "my-model"}}}};
//
// `embedding_callable` defaults to "default". The callable may be called from Memory's writer and
// recall threads at once: make it thread-safe. It returns one vector per text, all of one length
// (`dimension` when given, else the length of the first vector it returns, probed once); it may
// throw. The embedder's id is "custom/<name>".
using EmbeddingCallable = std::function<std::vector<Embedding>(const QStringList &texts)>;

MNEME_CORE_EXPORT void registerEmbeddingCallable(const QString &name, EmbeddingCallable callable, int dimension = 0);
MNEME_CORE_EXPORT void unregisterEmbeddingCallable(const QString &name);

// The factory behind the "custom" key (PluginRegistry::instance() registers it).
class MNEME_CORE_EXPORT CustomEmbedderFactory : public EmbedderFactory
{
public:
    std::unique_ptr<Embedder> createEmbedder(const QString &key, const Json &config) override;
};

} // namespace mneme
