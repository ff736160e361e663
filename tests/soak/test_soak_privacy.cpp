// Soak: thousands of random recalls and reads by random readers over a store of several sources'
// shared and private records. No read ever shows a reader a record it may not see.

#include "temp_store.h"
#include <mneme/memory/memory.h>

#include <QRandomGenerator>
#include <QTest>

using namespace mneme;

class TestSoakPrivacy : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void noReadShowsAnotherSourcesPrivateRecord()
    {
        test::TempStore tmp;
        MemoryConfig config;
        config.storage = Json{{"provider", "sqlite"}, {"config", {{"path", tmp.path().toStdString()}}}};
        Memory memory(config);
        const QStringList sources = {QString(), "user:ann", "user:bob", "user:cho", "user:dev", "team:ops", "team:dev", "bot:x"};
        const QStringList words = {"budget", "deploy", "salary", "password", "holiday", "invoice", "roadmap", "incident",
                                   "meeting", "launch", "review", "contract", "server", "customer", "office", "release"};
        QRandomGenerator rng(4000);
        QList<MemoryInput> inputs;
        for (int i = 0; i < 3000; ++i) {
            MemoryInput in;
            const QString source = sources.at(int(rng.bounded(sources.size())));
            in.content = QStringLiteral("%1 %2 %3 note %4").arg(words.at(int(rng.bounded(words.size()))), words.at(int(rng.bounded(words.size()))), words.at(int(rng.bounded(words.size())))).arg(i);
            in.options.scope = QStringLiteral("/s%1/%2").arg(rng.bounded(6)).arg(source.isEmpty() ? QStringLiteral("shared") : source.section(':', 1));
            in.options.categories = QStringList{words.at(int(rng.bounded(words.size())))};
            in.options.importance = 0.5;
            in.options.source = source;
            in.options.isPrivate = !source.isEmpty() && rng.bounded(2) == 0;
            inputs << in;
        }
        memory.rememberMany(inputs).result();
        const auto readerOf = [&](int k) {
            const QString source = sources.at(k % sources.size());
            switch (k % 4) {
            case 0: return ReadContext::anonymous();
            case 1: return ReadContext::of(source);
            case 2: return ReadContext::of(source, false);
            default: return k % 13 == 0 ? ReadContext::asCurator() : ReadContext::of(source);
            }
        };
        int checked = 0;
        for (int q = 0; q < 4000; ++q) {
            const ReadContext reader = readerOf(int(rng.bounded(1000)));
            RecallOptions o;
            o.depth = rng.bounded(2) ? RecallDepth::Deep : RecallDepth::Shallow;
            o.limit = 20;
            o.reader = reader;
            if (rng.bounded(3) == 0)
                o.scopes = {QStringLiteral("/s%1").arg(rng.bounded(6))};
            const QString query = QStringLiteral("%1 %2").arg(words.at(int(rng.bounded(words.size()))), words.at(int(rng.bounded(words.size()))));
            for (const MemoryMatch &m : memory.recall(query, o)) {
                QVERIFY2(reader.sees(m.record), qPrintable(QStringLiteral("recall %1 as %2 showed %3").arg(q).arg(reader.source, m.record.id)));
                ++checked;
            }
            if (q % 50 == 0) {
                for (const MemoryRecord &r : memory.listRecords(QStringLiteral("/"), 300, int(rng.bounded(2000)), reader))
                    QVERIFY(reader.sees(r));
                const int visible = memory.info(QStringLiteral("/"), reader).recordCount;
                QCOMPARE(memory.scopeTree(QStringLiteral("/"), 2, reader).recordCount, visible);
            }
        }
        qInfo("%d matches checked over 4000 recalls", checked);
        QVERIFY(checked > 4000);
    }
};

QTEST_GUILESS_MAIN(TestSoakPrivacy)
#include "test_soak_privacy.moc"
