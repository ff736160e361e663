// Batches embedded ahead of their turn on the writer (a local embedder): the same records, vectors
// and results as embedding each batch in its turn, and an embedder failure lands on its own batch.
#include "fake_embedder.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/memory/memory.h>

#include <QSignalSpy>
#include <QtTest>

using namespace mneme;
using mneme::test::FakeEmbedder;
using mneme::test::TempStore;

namespace {

// The builtin embedder, said to be remote or local: the same vectors either way.
class Wrapped : public Embedder
{
public:
    Wrapped(bool local) : m_inner(PluginRegistry::instance().createEmbedder(QStringLiteral("builtin"), Json{{"dimension", 64}})), m_local(local) {}
    QString id() const override { return m_inner->id(); }
    int dimension() const override { return m_inner->dimension(); }
    std::vector<Embedding> embed(const QStringList &texts) override
    {
        {
            QMutexLocker lock(&m_mutex);
            for (const QString &t : texts)
                ++seen[t];
        }
        return m_inner->embed(texts);
    }
    bool isLocal() const override { return m_local; }
    int embedded(const QString &text)
    {
        QMutexLocker lock(&m_mutex);
        return seen.value(text);
    }
    QHash<QString, int> seen;

private:
    QMutex m_mutex;
    std::unique_ptr<Embedder> m_inner;
    bool m_local;
};

// A local fake that fails for any batch holding "boom".
class LocalFake : public FakeEmbedder
{
public:
    using FakeEmbedder::FakeEmbedder;
    bool isLocal() const override { return true; }
    std::vector<Embedding> embed(const QStringList &texts) override
    {
        for (const QString &t : texts)
            if (t.contains(QLatin1String("boom")))
                throw Error(ErrorKind::Embedder, QStringLiteral("the fake embedder fails on boom"));
        return FakeEmbedder::embed(texts);
    }
};

MemoryConfig configAt(const QString &path)
{
    MemoryConfig c;
    c.storage = Json{{"provider", "sqlite"}, {"config", {{"path", path.toStdString()}}}};
    return c;
}

// Batch b: 120 sentences, a blank one, one that repeats a sentence of the batch before (stored
// already), and one nearly the same as another of its own.
QList<MemoryInput> batch(int b)
{
    QList<MemoryInput> out;
    const auto item = [](const QString &text) {
        MemoryInput in;
        in.content = text;
        in.options.scope = QStringLiteral("/e");
        in.options.categories = QStringList{QStringLiteral("c")};
        in.options.importance = 0.5;
        return in;
    };
    for (int i = 0; i < 120; ++i)
        out << item(QStringLiteral("batch %1 sentence %2 about item%3 and topic%4").arg(b).arg(i).arg(i * 7 % 13).arg(b * 31 + i));
    out << item(QStringLiteral("   "));
    if (b > 0)
        out << item(QStringLiteral("batch %1 sentence 5 about item%2 and topic%3").arg(b - 1).arg(5 * 7 % 13).arg((b - 1) * 31 + 5));
    out << item(QStringLiteral("batch %1 sentence 3 about item%2 and topic%3!").arg(b).arg(3 * 7 % 13).arg(b * 31 + 3));
    return out;
}

} // namespace

class TestEmbedAhead : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sameAsEmbeddingInTurn()
    {
        TempStore dirs[2];
        QList<QList<SaveResult>> results;
        QList<QStringList> contents;
        for (bool local : {true, false}) {
            auto embedder = std::make_shared<Wrapped>(local);
            const QString path = dirs[local ? 0 : 1].path();
            Memory m(configAt(path), PluginRegistry::instance().createStorage(QStringLiteral("sqlite"), Json{{"path", path.toStdString()}}),
                     embedder);
            // Queued back to back: while the writer saves one, the next is embedded.
            QList<QFuture<SaveResult>> futures;
            for (int b = 0; b < 8; ++b)
                futures << m.rememberMany(batch(b));
            QList<SaveResult> got;
            for (QFuture<SaveResult> &f : futures)
                got << f.result();
            results << got;
            // Embedded ahead, a batch's items are embedded before the writer finds that one is stored
            // already (its repeat of the batch before, embedded a second time); in their turn, only
            // the new ones are. Batches from the third on are queued while one before them is saved.
            int twice = 0;
            for (int b = 1; b < 8; ++b)
                twice += embedder->embedded(batch(b).at(121).content) == 2 ? 1 : 0;
            if (local)
                QVERIFY2(twice >= 4, qPrintable(QString::number(twice)));
            else
                QCOMPARE(twice, 0);
            QStringList stored;
            for (const MemoryRecord &r : m.storage().list({}, -1, 0)) {
                stored << r.content;
                // Every stored vector is the text's own.
                const std::optional<MemoryRecord> full = m.storage().get(r.id, true);
                QCOMPARE(full->embedding, m.embedder().embed({r.content}).front());
            }
            stored.sort();
            contents << stored;
            m.close();
        }
        QCOMPARE(results[0].size(), results[1].size());
        for (qsizetype b = 0; b < results[0].size(); ++b) {
            const SaveResult &a = results[0][b], &c = results[1][b];
            QCOMPARE(a.stored, c.stored);
            QCOMPARE(a.existing, c.existing);
            QCOMPARE(a.dropped, c.dropped);
            QCOMPARE(a.ids.size(), c.ids.size());
        }
        QCOMPARE(results[0][1].existing, 1);
        QCOMPARE(results[0][1].dropped, 2); // the blank item and the near-copy
        QCOMPARE(contents[0], contents[1]);
        QCOMPARE(results[0][1].stored, 120);
        QCOMPARE(contents[0].size(), 8 * 120);
    }

    void failureLandsOnItsBatch()
    {
        TempStore dir;
        auto embedder = std::make_shared<LocalFake>(16);
        Memory m(configAt(dir.path()), PluginRegistry::instance().createStorage(QStringLiteral("sqlite"), Json{{"path", dir.path().toStdString()}}),
                 embedder);
        QSignalSpy failed(&m, &Memory::saveFailed);
        QList<QFuture<SaveResult>> futures;
        for (int b = 0; b < 5; ++b) {
            QList<MemoryInput> items = batch(b);
            if (b == 2)
                items[7].content = QStringLiteral("this one goes boom");
            futures << m.rememberMany(items);
        }
        int stored = 0;
        for (int b = 0; b < 5; ++b) {
            if (b == 2) {
                bool threw = false;
                try {
                    futures[b].waitForFinished();
                } catch (const Error &e) {
                    threw = e.kind() == ErrorKind::Embedder;
                }
                QVERIFY(threw);
            } else {
                const SaveResult r = futures[b].result();
                QVERIFY(r.stored > 0);
                stored += r.stored;
            }
        }
        QCOMPARE(failed.size(), 1);
        QCOMPARE(m.storage().count({}), stored);
        QVERIFY(embedder->calls() >= 4);
    }
};

QTEST_GUILESS_MAIN(TestEmbedAhead)
#include "test_embed_ahead.moc"
