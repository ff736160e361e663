// Recall on the backend's two-phase search (hits ranked from the index, only the kept records read)
// against recall reading every candidate's record: the same matches, in the same order, with the same
// scores, over the real SQLite plugin and the builtin embedder.
#include "counting_storage.h"
#include "temp_store.h"
#include <mneme/core/plugin_registry.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/memory_match.h>

#include <QRandomGenerator>
#include <QtTest>
#include <cmath>

using namespace mneme;
using mneme::test::CountingStorage;
using mneme::test::TempStore;

namespace {

const QDateTime kNow(QDate(2025, 3, 1), QTime(9, 0), Qt::UTC);

const char *const kWords[] = {"invoice", "deploy", "server", "meeting", "sarah", "budget", "release", "paris",
                              "garden", "guitar", "backup", "ticket", "coffee", "kafka", "policy", "tokyo"};

std::shared_ptr<CountingStorage> openCounting(const QString &path, const Json &extra, bool twoPhase)
{
    Json config = extra;
    config["path"] = path.toStdString();
    auto s = std::make_shared<CountingStorage>(PluginRegistry::instance().createStorage(QStringLiteral("sqlite"), config));
    s->setTwoPhase(twoPhase);
    return s;
}

std::shared_ptr<Embedder> builtin()
{
    return PluginRegistry::instance().createEmbedder(QStringLiteral("builtin"), Json{{"dimension", 64}});
}

// 400 memories: random sentences over a small vocabulary, a rare word in a few, importance and age
// spread out, four scopes and three categories; some sentences stored in two scopes, which makes
// records tied on every signal (their order is by id). `twins`: those copies, for a second batch (a
// batch drops its own near-copies).
QList<MemoryInput> corpus(bool twins = false)
{
    QRandomGenerator rng(11);
    QList<MemoryInput> out;
    for (int i = 0; i < 400; ++i) {
        QStringList w;
        for (int k = 0, n = 5 + int(rng.bounded(6)); k < n; ++k)
            w << QLatin1String(kWords[rng.bounded(int(std::size(kWords)))]);
        if (i % 40 == 0)
            w << QStringLiteral("quokka");
        MemoryInput in;
        in.content = w.join(QLatin1Char(' ')) + QStringLiteral(" %1.").arg(i % 25 == 0 ? 0 : i);
        in.options.scope = QStringLiteral("/t/s%1").arg(i % 4);
        in.options.categories = QStringList{QStringLiteral("c%1").arg(i % 3)};
        in.options.importance = i % 25 == 0 ? 0.5 : double(rng.bounded(10)) / 10.0;
        in.options.createdAt = kNow.addSecs(-3600LL * (i % 25 == 0 ? 30 : qint64(rng.bounded(24 * 60))));
        if (i % 25 == 0 && twins) {
            in.options.scope = QStringLiteral("/t/twin");
            out << in;
        } else if (!twins) {
            out << in;
        }
    }
    return out;
}

QStringList queries()
{
    QStringList q{QStringLiteral("quokka"), QStringLiteral("invoice deploy"), QStringLiteral("sarah in paris"),
                  QStringLiteral("guitar coffee garden"), QStringLiteral("kafka backup policy ticket"),
                  QStringLiteral("tokyo 0"), QStringLiteral("budget release meeting 17"), QStringLiteral("server")};
    // Each sentence stored twice: its two records are tied at the top.
    for (const MemoryInput &in : corpus(true))
        q << in.content;
    return q;
}

// Between the search and the reading of the records, moves the first record asked for out of its
// scope and deletes the second: what another process may do meanwhile.
class ChangingStorage : public CountingStorage
{
public:
    using CountingStorage::CountingStorage;
    QStringList changed;
protected:
    std::vector<std::optional<MemoryRecord>> readHits(const std::vector<qint64> &keys) override
    {
        if (changed.isEmpty() && keys.size() >= 2) {
            std::vector<std::optional<MemoryRecord>> first = CountingStorage::readHits({keys[0], keys[1]});
            MemoryRecord moved = *first[0];
            moved.scope = QStringLiteral("/elsewhere");
            update(moved);
            RecordFilter gone;
            gone.ids = {first[1]->id};
            remove(gone);
            changed << first[0]->id << first[1]->id;
        }
        return CountingStorage::readHits(keys);
    }
};

} // namespace

class TestRankedRecall : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sameAsReadingEveryCandidate_data()
    {
        QTest::addColumn<QString>("weights");
        QTest::addColumn<int>("annThreshold");
        QTest::newRow("defaults, exact scan") << "" << 1000000;
        QTest::newRow("defaults, graph") << "" << 100;
        QTest::newRow("no keyword signal") << "keyword_weight=0" << 1000000;
        QTest::newRow("recency first") << "recency_weight=0.8,recency_half_life_days=2" << 1000000;
        QTest::newRow("importance first, linear decay") << "importance_weight=0.9,decay_function=linear" << 100;
    }
    void sameAsReadingEveryCandidate()
    {
        QFETCH(QString, weights);
        QFETCH(int, annThreshold);
        MemoryConfig config;
        for (const QString &kv : weights.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            const QString key = kv.section(QLatin1Char('='), 0, 0), value = kv.section(QLatin1Char('='), 1);
            if (key == QLatin1String("keyword_weight"))
                config.keywordWeight = value.toDouble();
            else if (key == QLatin1String("recency_weight"))
                config.recencyWeight = value.toDouble();
            else if (key == QLatin1String("recency_half_life_days"))
                config.recencyHalfLifeDays = value.toDouble();
            else if (key == QLatin1String("importance_weight"))
                config.importanceWeight = value.toDouble();
            else if (key == QLatin1String("decay_function"))
                config.decayFunction = value;
        }
        TempStore dir;
        const Json storeConfig{{"ann_threshold", annThreshold}};
        auto twoPhase = openCounting(dir.path(), storeConfig, true);
        auto everyRecord = openCounting(dir.path(), storeConfig, false);
        Memory a(config, twoPhase, builtin());
        Memory b(config, everyRecord, builtin());
        QCOMPARE(a.rememberMany(corpus()).result().stored, 400);
        QCOMPARE(a.rememberMany(corpus(true)).result().stored, 16);
        // Ids are time-ordered, like the rowids: each copy is stored again under an id that sorts
        // before its original's, so that ties are ordered against the rowids.
        RecordFilter copies;
        copies.scopes = {QStringLiteral("/t/twin")};
        const std::vector<MemoryRecord> twins = twoPhase->list(copies, -1, 0);
        QCOMPARE(int(twins.size()), 16);
        for (std::size_t k = 0; k < twins.size(); ++k) {
            MemoryRecord r = *twoPhase->get(twins[k].id, true);
            RecordFilter one;
            one.ids = {r.id};
            QCOMPARE(twoPhase->remove(one), 1);
            r.id = QStringLiteral("00000000-0000-7000-8000-%1").arg(qulonglong(k), 12, 10, QLatin1Char('0'));
            twoPhase->restore(r);
        }

        int compared = 0, limits = 0, ties = 0;
        for (const QString &q : queries()) {
            for (int limit : {1, 3, 10, 25}) {
                for (int filter = 0; filter < 3; ++filter) {
                    RecallOptions o;
                    o.depth = RecallDepth::Shallow;
                    o.limit = limit;
                    o.now = kNow;
                    if (filter == 1)
                        o.scopes = {QStringLiteral("/t/s1")};
                    if (filter == 2)
                        o.categories = {QStringLiteral("c2")};
                    const QList<MemoryMatch> got = a.recall(q, o);
                    const QList<MemoryMatch> want = b.recall(q, o);
                    const QString where = QStringLiteral("%1, limit %2, filter %3").arg(q).arg(limit).arg(filter);
                    QVERIFY2(got.size() == want.size(), qPrintable(where));
                    for (qsizetype i = 0; i < want.size(); ++i) {
                        QVERIFY2(got[i].record.id == want[i].record.id, qPrintable(where + QStringLiteral(", match %1").arg(i)));
                        QCOMPARE(got[i].record.content, want[i].record.content);
                        // A keyword-only candidate's cosine comes from the index here, from the stored
                        // vector there: the same to float precision.
                        QVERIFY2(std::abs(got[i].score - want[i].score) < 1e-6, qPrintable(where));
                        QVERIFY(std::abs(got[i].signalValues.semantic - want[i].signalValues.semantic) < 1e-6);
                        QCOMPARE(got[i].signalValues.keyword, want[i].signalValues.keyword);
                        QCOMPARE(got[i].signalValues.recency, want[i].signalValues.recency);
                        QCOMPARE(got[i].signalValues.importance, want[i].signalValues.importance);
                        QCOMPARE(got[i].matchReasons, want[i].matchReasons);
                        if (i > 0 && got[i].score == got[i - 1].score)
                            ++ties;
                    }
                    compared += int(want.size());
                    limits += limit;
                }
            }
        }
        QVERIFY(compared > 500);
        QVERIFY2(ties > 0, "the corpus should give tied matches");
        // Every candidate of the other path is a record read (at least 30 a recall); here at most the
        // limit a recall, and the records tied with the last kept one.
        QVERIFY2(twoPhase->hitRecordsRead() <= limits + ties + 40,
                 qPrintable(QStringLiteral("%1 records read for limits adding up to %2").arg(twoPhase->hitRecordsRead()).arg(limits)));
        QVERIFY(twoPhase->hitRecordsRead() >= compared);
        QCOMPARE(everyRecord->hitRecordsRead(), 0);
    }

    // Conversation turns, whose records weigh in after the signals (the speaker the query names, a
    // turn that asks): still the same matches, scores and order as reading every candidate.
    void conversationTurnsSameAsReadingEveryCandidate()
    {
        TempStore dir;
        auto twoPhase = openCounting(dir.path(), Json::object(), true);
        auto everyRecord = openCounting(dir.path(), Json::object(), false);
        Memory a(MemoryConfig(), twoPhase, builtin());
        Memory b(MemoryConfig(), everyRecord, builtin());
        const QStringList speakers{QStringLiteral("Ann"), QStringLiteral("Bob"), QStringLiteral("Cleo")};
        QRandomGenerator rng(7);
        for (int session = 0; session < 10; ++session) {
            QList<ConversationTurn> turns;
            for (int t = 0; t < 30; ++t) {
                QStringList w;
                for (int k = 0, n = 3 + int(rng.bounded(6)); k < n; ++k)
                    w << QLatin1String(kWords[rng.bounded(int(std::size(kWords)))]);
                if (rng.bounded(5) == 0)
                    w << speakers[rng.bounded(3)]; // a turn that names someone
                const QString text = w.join(QLatin1Char(' ')) + (rng.bounded(3) == 0 ? QStringLiteral("?") : QStringLiteral("."));
                turns << ConversationTurn{speakers[(session + t) % (t % 4 == 3 ? 3 : 2)], text, kNow.addDays(session - 10),
                                          Json::object()};
            }
            QCOMPARE(a.rememberConversation(turns).result().stored, 30);
        }
        int compared = 0, named = 0;
        const QStringList asked{QStringLiteral("what did Ann say about the invoice"), QStringLiteral("Bob deploy server"),
                                QStringLiteral("cleo and ann in paris?"), QStringLiteral("guitar coffee"),
                                QStringLiteral("kafka backup policy"), QStringLiteral("Bob")};
        for (const QString &q : asked) {
            for (int limit : {1, 3, 10, 25}) {
                RecallOptions o;
                o.depth = RecallDepth::Shallow;
                o.limit = limit;
                o.now = kNow;
                const QList<MemoryMatch> got = a.recall(q, o);
                const QList<MemoryMatch> want = b.recall(q, o);
                const QString where = QStringLiteral("%1, limit %2").arg(q).arg(limit);
                QVERIFY2(got.size() == want.size(), qPrintable(where));
                for (qsizetype i = 0; i < want.size(); ++i) {
                    QVERIFY2(got[i].record.id == want[i].record.id, qPrintable(where + QStringLiteral(", match %1").arg(i)));
                    QVERIFY2(std::abs(got[i].score - want[i].score) < 1e-6, qPrintable(where));
                    const QString speaker = QString::fromStdString(want[i].record.metadata.value("speaker", ""));
                    if (q.contains(speaker, Qt::CaseInsensitive))
                        ++named;
                }
                compared += int(want.size());
            }
        }
        QVERIFY(compared > 100);
        QVERIFY2(named > 20, "the queries should find turns of the speakers they name");
    }

    // A record changed out of the filter, or deleted, after the search is left out, and the next
    // candidates take its place.
    void recordsChangedMeanwhileAreLeftOut()
    {
        TempStore dir;
        auto storage = std::make_shared<ChangingStorage>(
            PluginRegistry::instance().createStorage(QStringLiteral("sqlite"), Json{{"path", dir.path().toStdString()}}));
        storage->setTwoPhase(true);
        Memory m(MemoryConfig(), storage, builtin());
        m.rememberMany(corpus()).waitForFinished();
        RecallOptions o;
        o.depth = RecallDepth::Shallow;
        o.now = kNow;
        o.limit = 5;
        o.scopes = {QStringLiteral("/t/s1")};
        const QList<MemoryMatch> got = m.recall(QStringLiteral("invoice deploy"), o);
        QCOMPARE(storage->changed.size(), 2);
        QCOMPARE(got.size(), 5);
        for (const MemoryMatch &match : got) {
            QVERIFY(!storage->changed.contains(match.record.id));
            QCOMPARE(match.record.scope, QStringLiteral("/t/s1"));
        }
    }

    // Hits carry no access counts: a ranking that weighs them reads every candidate's record.
    void accessBoostReadsEveryRecord()
    {
        TempStore dir;
        MemoryConfig config;
        config.accessBoost = 0.2;
        auto storage = openCounting(dir.path(), Json::object(), true);
        Memory m(config, storage, builtin());
        m.rememberMany(corpus()).waitForFinished();
        RecallOptions o;
        o.depth = RecallDepth::Shallow;
        o.now = kNow;
        QVERIFY(!m.recall(QStringLiteral("invoice deploy"), o).isEmpty());
        QCOMPARE(storage->hitRecordsRead(), 0);
        config.accessBoost = 0;
        Memory plain(config, storage, builtin());
        QVERIFY(!plain.recall(QStringLiteral("invoice deploy"), o).isEmpty());
        QVERIFY(storage->hitRecordsRead() > 0);
    }

    // RecallOptions::stats says how the recall was answered: by the HNSW graph (approximate) or by an
    // exact scan, on both of rank()'s paths, cleared at each recall, through recallAsync() too.
    void statsSayHowRecallWasAnswered_data()
    {
        QTest::addColumn<bool>("twoPhase");
        QTest::addColumn<int>("annThreshold");
        QTest::addColumn<bool>("deep");
        QTest::newRow("hits, exact scan") << true << 1000000 << false;
        QTest::newRow("hits, graph") << true << 100 << false;
        QTest::newRow("records, exact scan") << false << 1000000 << false;
        QTest::newRow("records, graph") << false << 100 << false;
        QTest::newRow("deep, graph") << true << 100 << true;
    }
    void statsSayHowRecallWasAnswered()
    {
        QFETCH(bool, twoPhase);
        QFETCH(int, annThreshold);
        QFETCH(bool, deep);
        TempStore dir;
        auto storage = openCounting(dir.path(), Json{{"ann_threshold", annThreshold}}, twoPhase);
        Memory m(MemoryConfig(), storage, builtin());
        m.rememberMany(corpus()).waitForFinished();
        const int stored = storage->count({});
        RecallStats stats; // left from before: cleared by the recall
        stats.exact = false;
        stats.indexBuilding = true;
        stats.answers << QStringLiteral("left from before");
        stats.vectorSearches = 99;
        RecallOptions o;
        o.depth = deep ? RecallDepth::Deep : RecallDepth::Shallow;
        o.now = kNow;
        o.stats = &stats;
        QVERIFY(!m.recall(QStringLiteral("invoice deploy"), o).isEmpty());
        const bool graph = annThreshold <= stored;
        QCOMPARE(stats.exact, !graph);
        QVERIFY(!stats.indexBuilding);
        QVERIFY(stats.vectorSearches >= 1);
        if (!deep)
            QCOMPARE(stats.vectorSearches, 1);
        const QString expected = graph ? QStringLiteral("HNSW graph of %1 records") : QStringLiteral("exact scan of %1 records");
        QCOMPARE(stats.answers, QStringList{expected.arg(stored)});
        QVERIFY(stats.elapsedMs > 0);

        // The JSON the CLI and servers print.
        const Json j = stats;
        QCOMPARE(j["exact"].get<bool>(), !graph);
        QCOMPARE(j["vector_searches"].get<int>(), stats.vectorSearches);
        QCOMPARE(QString::fromStdString(j["answers"][0].get<std::string>()), expected.arg(stored));
        QVERIFY(j.contains("index_building") && j.contains("elapsed_ms"));

        // A recall in the background fills it too; a recall without it is untouched by it.
        RecallStats later;
        o.stats = &later;
        QVERIFY(!m.recallAsync(QStringLiteral("budget paris"), o).result().isEmpty());
        QCOMPARE(later.answers, QStringList{expected.arg(stored)});
        o.stats = nullptr;
        QVERIFY(!m.recall(QStringLiteral("budget paris"), o).isEmpty());
    }

    // A store opened without its graph file builds the graph in the background: the recall that starts
    // the build is answered by an exact scan of every vector, and its stats say so.
    void statsSayWhenTheGraphIsBeingBuilt()
    {
        TempStore dir;
        const Json storeConfig{{"ann_threshold", 200}, {"ann_background_from", 200}};
        {
            // The first search builds the graph (below ann_background_from: at once), and close writes its file.
            Memory m(MemoryConfig(), openCounting(dir.path(), Json{{"ann_threshold", 200}}, true), builtin());
            m.rememberMany(corpus()).waitForFinished();
            QVERIFY(!m.recall(QStringLiteral("invoice deploy")).isEmpty());
        }
        QVERIFY(QFile::remove(dir.path() + QStringLiteral(".hnsw")));
        auto storage = openCounting(dir.path(), storeConfig, true);
        Memory m(MemoryConfig(), storage, builtin());
        RecallStats stats;
        RecallOptions o;
        o.depth = RecallDepth::Shallow;
        o.now = kNow;
        o.stats = &stats;
        QVERIFY(!m.recall(QStringLiteral("invoice deploy"), o).isEmpty());
        QVERIFY(stats.exact);
        QVERIFY(stats.indexBuilding);
        QCOMPARE(stats.answers,
                 QStringList{QStringLiteral("exact scan of %1 records: the HNSW graph is being built").arg(storage->count({}))});
    }
};

QTEST_GUILESS_MAIN(TestRankedRecall)
#include "test_ranked_recall.moc"
