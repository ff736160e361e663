#pragma once

#include <mneme/core/embedder.h>

#include <QHash>
#include <QMutex>
#include <QSemaphore>
#include <QString>
#include <atomic>

namespace mneme::test {

// An embedder whose vectors a test chooses. Texts with a vector set by setVector() get it; other
// texts get a bag-of-words vector (each lower-case word adds 1 to one bucket), so texts sharing
// words are similar. Records every call; can be told to fail.
class FakeEmbedder : public Embedder
{
public:
    explicit FakeEmbedder(int dimension = 16, QString id = QStringLiteral("test/fake"));

    QString id() const override { return m_id; }
    int dimension() const override { return m_dimension; }
    std::vector<Embedding> embed(const QStringList &texts) override;

    void setVector(const QString &text, const Embedding &vector);
    void failWith(const QString &message); // empty: stop failing
    int calls() const { return m_calls; }
    QList<QStringList> batches() const;

private:
    QString m_id;
    int m_dimension;
    mutable QMutex m_mutex;
    QHash<QString, Embedding> m_vectors;
    QList<QStringList> m_batches;
    QString m_failure;
    std::atomic<int> m_calls{0};
};

// A FakeEmbedder that holds every embed() call until the test releases `gate`, so that a save stays
// pending meanwhile. Not local: Memory embeds no batch ahead of its turn, one call per batch.
class GateEmbedder : public FakeEmbedder
{
public:
    using FakeEmbedder::FakeEmbedder;
    QSemaphore gate;
    bool isLocal() const override { return false; }
    std::vector<Embedding> embed(const QStringList &texts) override
    {
        gate.acquire();
        return FakeEmbedder::embed(texts);
    }
};

} // namespace mneme::test
