#pragma once

#include <mneme/core/export.h>
#include <mneme/core/json.h>
#include <mneme/core/memory_record.h>

#include <QString>
#include <QStringList>
#include <QtPlugin>
#include <memory>
#include <vector>

namespace mneme {

// Turns texts into vectors. embed() may block (a network embedder waits for its reply); Memory calls
// it from its writer thread, from a helper thread when it embeds a batch ahead (isLocal()), and from
// whichever thread recalls. Implementations are thread-safe.
class MNEME_CORE_EXPORT Embedder
{
public:
    virtual ~Embedder() = default;

    // "provider/model", e.g. "builtin/hash-v1"; stored with the data to detect a changed embedder.
    virtual QString id() const = 0;
    // Length of every vector embed() returns.
    virtual int dimension() const = 0;
    // One vector per text, in order. A blank text gets an empty vector. Throws Error(Embedder), or a
    // network embedder's typed provider error (Authentication, RateLimited, Network, Timeout, ...).
    virtual std::vector<Embedding> embed(const QStringList &texts) = 0;
    // True when embedding costs only this machine's processor time (no network, no quota, no fee):
    // Memory then embeds a queued batch while the batch before it is saved, before it knows which
    // of its items are stored already. False unless an embedder says otherwise.
    virtual bool isLocal() const { return false; }
};

// Builds embedders from configuration ({"provider": key, "config": {...}}: `config` is passed here).
class MNEME_CORE_EXPORT EmbedderFactory
{
public:
    virtual ~EmbedderFactory() = default;
    virtual std::unique_ptr<Embedder> createEmbedder(const QString &key, const Json &config) = 0;
};

} // namespace mneme

#define MNEME_EMBEDDER_FACTORY_IID "org.mneme.EmbedderFactory/1.1"
Q_DECLARE_INTERFACE(mneme::EmbedderFactory, MNEME_EMBEDDER_FACTORY_IID)
