#include "memory/batch_dedup_p.h"
#include <mneme/core/vector_math.h>

#include <QRandomGenerator>
#include <QtTest>

using namespace mneme;

namespace {

// The definition: every item against every earlier kept item, on the full cosine.
std::vector<bool> byDefinition(const std::vector<const Embedding *> &vectors, double threshold)
{
    std::vector<bool> out(vectors.size(), false);
    std::vector<size_t> kept;
    for (size_t i = 0; i < vectors.size(); ++i) {
        const Embedding *a = vectors[i];
        const float na = a ? VectorMath::norm(a->data(), a->size()) : 0.0f;
        bool duplicate = false;
        if (na > 0) {
            for (size_t j : kept) {
                const Embedding *b = vectors[j];
                const float nb = b ? VectorMath::norm(b->data(), b->size()) : 0.0f;
                if (!b || b->size() != a->size() || nb <= 0)
                    continue;
                if (VectorMath::dot(a->data(), b->data(), a->size()) / (na * nb) >= threshold) {
                    duplicate = true;
                    break;
                }
            }
        }
        if (duplicate)
            out[i] = true;
        else
            kept.push_back(i);
    }
    return out;
}

Embedding randomVector(QRandomGenerator &rng, int dimension, int tailFrom, double tailScale)
{
    Embedding v(size_t(dimension), 0.0f);
    for (int k = 0; k < dimension; ++k)
        v[size_t(k)] = float((rng.generateDouble() - 0.5) * (k >= tailFrom ? tailScale : 1.0));
    return v;
}

// A copy of v moved by noise of the given size (relative to each coordinate's spread).
Embedding nearCopy(QRandomGenerator &rng, const Embedding &v, double noise)
{
    Embedding w = v;
    for (float &x : w)
        x += float((rng.generateDouble() - 0.5) * noise);
    return w;
}

} // namespace

class TestBatchDedup : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // Random batches with planted near-copies at several distances: the bounded comparison keeps and
    // drops exactly what the pairwise definition keeps and drops.
    void matchesTheDefinition_data()
    {
        QTest::addColumn<int>("dimension");
        QTest::addColumn<double>("threshold");
        QTest::addColumn<double>("tailScale"); // > 1: the vectors' length sits in the dimensions the bound skips
        QTest::newRow("384 dims, 0.98") << 384 << 0.98 << 1.0;
        QTest::newRow("384 dims, 0.9") << 384 << 0.9 << 1.0;
        QTest::newRow("384 dims, 0.5") << 384 << 0.5 << 1.0;
        QTest::newRow("384 dims, 0 (everything matches)") << 384 << 0.0 << 1.0;
        QTest::newRow("384 dims, 1 (only exact copies)") << 384 << 1.0 << 1.0;
        QTest::newRow("384 dims, weight in the tail") << 384 << 0.98 << 20.0;
        QTest::newRow("1536 dims, 0.98") << 1536 << 0.98 << 1.0;
        QTest::newRow("8 dims (compared in full)") << 8 << 0.98 << 1.0;
        QTest::newRow("100 dims (head not a multiple of 8)") << 100 << 0.95 << 1.0;
    }
    void matchesTheDefinition()
    {
        QFETCH(int, dimension);
        QFETCH(double, threshold);
        QFETCH(double, tailScale);
        QRandomGenerator rng(uint(dimension * 1000 + threshold * 100));
        std::vector<Embedding> store;
        for (int i = 0; i < 300; ++i) {
            if (i > 0 && i % 3 == 0) {
                // Noise from far below to far above the threshold's distance.
                const double noise = 0.02 * (1 << (i % 6));
                store.push_back(nearCopy(rng, store[rng.bounded(quint32(store.size()))], noise));
            } else if (i % 50 == 7) {
                store.push_back(store[size_t(i - 1)]); // an exact copy
            } else {
                store.push_back(randomVector(rng, dimension, dimension / 4, tailScale));
            }
        }
        std::vector<const Embedding *> vectors;
        for (const Embedding &v : store)
            vectors.push_back(&v);
        const std::vector<bool> expected = byDefinition(vectors, threshold);
        const std::vector<bool> got = BatchDedup::duplicates(vectors, threshold);
        QCOMPARE(got, expected);
        const auto dropped = std::count(expected.begin(), expected.end(), true);
        QVERIFY2(threshold >= 1.0 || dropped > 0, "the planted copies must be found");
        QVERIFY(threshold <= 0.0 || dropped < qsizetype(vectors.size()) - 1);
    }

    // Items without a vector, zero vectors and vectors of another length are kept and never match.
    void missingZeroAndMixedVectors()
    {
        const Embedding a{1, 0, 0, 0};
        const Embedding a2{1, 0, 0, 0};
        const Embedding zero{0, 0, 0, 0};
        const Embedding zero2{0, 0, 0, 0};
        const Embedding empty;
        const Embedding longer{1, 0, 0, 0, 0};
        const std::vector<const Embedding *> vectors{&zero, nullptr, &a, &empty, &zero2, &longer, &a2};
        const std::vector<bool> expected{false, false, false, false, false, false, true};
        QCOMPARE(BatchDedup::duplicates(vectors, 0.98), expected);
        QCOMPARE(BatchDedup::duplicates(vectors, 0.98), byDefinition(vectors, 0.98));
    }

    // An item is compared with kept items only: a chain of near-copies where each is close to the
    // previous but the third is far from the first keeps the first and the third.
    void comparesWithKeptItemsOnly()
    {
        const Embedding first{1, 0};
        const Embedding second{0.995f, 0.0999f}; // cosine 0.995 with first
        const Embedding third{0.98f, 0.199f};    // cosine 0.995 with second, 0.98 with first
        const std::vector<const Embedding *> vectors{&first, &second, &third};
        QCOMPARE(BatchDedup::duplicates(vectors, 0.99), (std::vector<bool>{false, true, false}));
    }
};

QTEST_APPLESS_MAIN(TestBatchDedup)
#include "test_batch_dedup.moc"
