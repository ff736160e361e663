#pragma once

#include <mneme/core/embedder.h>

#include <QObject>

namespace mneme {

// The "builtin" embedder plugin: builds HashEmbedder instances.
//
// Configuration (all optional):
//   dimension             integer 16..4096, default 384
//   model / model_name    "hash-v2" (default) or "hash-v1"
// Anything else is refused with Error(InvalidArgument) naming the key and what is accepted.
class BuiltinEmbedderPlugin : public QObject, public EmbedderFactory
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID MNEME_EMBEDDER_FACTORY_IID FILE "builtin.json")
    Q_INTERFACES(mneme::EmbedderFactory)

public:
    explicit BuiltinEmbedderPlugin(QObject *parent = nullptr);

    std::unique_ptr<Embedder> createEmbedder(const QString &key, const Json &config) override;
};

} // namespace mneme
