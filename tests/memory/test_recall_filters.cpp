// What recall returns and how it is narrowed: the relevance floor (min_relevance), the score threshold,
// scores in 0..1, metadata conditions, the Mem0-style identities (user, agent, run) on save, recall and
// forget, and updates of categories and metadata. Over the real SQLite storage plugin, flat and with the
// HNSW graph, with the builtin embedder or one whose vectors the test sets.

#include "fake_embedder.h"
#include "memory_test_util.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <QtTest>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::FakeEmbedder;
using mneme::test::fields;
using mneme::test::TempStore;

namespace {

RecallOptions shallow(int limit = 10)
{
    RecallOptions o;
    o.depth = RecallDepth::Shallow;
    o.limit = limit;
    return o;
}

QStringList contents(const QList<MemoryMatch> &matches)
{
    QStringList out;
    for (const MemoryMatch &m : matches)
        out << m.record.content;
    return out;
}

const QStringList kNotes = {
    QStringLiteral("The staging environment uses port 8080."),
    QStringLiteral("We decided to use PostgreSQL for the user database."),
    QStringLiteral("Sarah from finance approves invoices above 5000 euros."),
    QStringLiteral("The office coffee machine is descaled every Friday."),
    QStringLiteral("Deploys to production need two approvals on the pull request."),
    QStringLiteral("The quarterly planning meeting moved to the second Tuesday."),
};

} // namespace

class TestRecallFilters : public QObject
{
    Q_OBJECT

    std::unique_ptr<TempStore> m_dir;

    // `annThreshold` 0: every search walks the HNSW graph; the default: an exact scan at this size.
    MemoryConfig config(int annThreshold = -1) const
    {
        MemoryConfig c;
        Json storage = {{"path", m_dir->path()}};
        if (annThreshold >= 0)
            storage["ann_threshold"] = annThreshold;
        c.storage = Json{{"provider", "sqlite"}, {"config", storage}};
        return c;
    }
    // The builtin embedder, the notes above stored at "/".
    std::unique_ptr<Memory> notes(int annThreshold = -1)
    {
        auto m = std::make_unique<Memory>(config(annThreshold));
        for (const QString &n : kNotes)
            m->remember(n, fields(QStringLiteral("/")));
        return m;
    }

private Q_SLOTS:
    void init() { m_dir = std::make_unique<TempStore>(); }
    void cleanup() { m_dir.reset(); }

    // Nothing related is stored: nothing comes back, however new and important the records are.
    void unrelatedQueriesReturnNothing_data()
    {
        QTest::addColumn<QString>("query");
        QTest::addColumn<int>("annThreshold");
        for (int ann : {-1, 0}) {
            const char *layout = ann == 0 ? "graph" : "flat";
            QTest::addRow("nonsense, %s", layout) << "quantum banana helicopter" << ann;
            QTest::addRow("made-up words, %s", layout) << "florp zindle kravox" << ann;
            QTest::addRow("off-topic question, %s", layout) << "What is the boiling point of mercury in Kelvin?" << ann;
            QTest::addRow("punctuation only, %s", layout) << "%%$$## @@!!" << ann;
        }
    }
    void unrelatedQueriesReturnNothing()
    {
        QFETCH(QString, query);
        QFETCH(int, annThreshold);
        auto m = notes(annThreshold);
        QVERIFY2(m->recall(query, shallow()).isEmpty(), qPrintable(contents(m->recall(query, shallow())).join('|')));
        RecallOptions deep;
        QVERIFY(m->recall(query, deep).isEmpty());
    }

    void relatedQueriesStillFindTheirRecord_data()
    {
        QTest::addColumn<QString>("query");
        QTest::addColumn<QString>("expected");
        QTest::newRow("database") << "Which database did we choose for users?" << kNotes[1];
        QTest::newRow("port") << "staging port" << kNotes[0];
        QTest::newRow("invoices") << "who approves invoices" << kNotes[2];
        QTest::newRow("deploy approvals") << "How many approvals does a deploy to production need?" << kNotes[4];
    }
    void relatedQueriesStillFindTheirRecord()
    {
        QFETCH(QString, query);
        QFETCH(QString, expected);
        auto m = notes();
        const QList<MemoryMatch> found = m->recall(query, shallow());
        QVERIFY(!found.isEmpty());
        QCOMPARE(found.first().record.content, expected);
        // The best reaches the floor; weak neighbours below half of it are left out: the database question
        // does not bring the port.
        QVERIFY(found.first().signalValues.relevance >= m->config().minRelevance);
        for (const MemoryMatch &match : found) {
            QVERIFY(match.signalValues.relevance >= m->config().minRelevance / 2);
            QVERIFY(match.record.content != kNotes[0] || expected == kNotes[0]);
        }
    }

    // The floor is the configuration's min_relevance, or the call's own; 0 lets every related record through.
    void floorIsConfigurableAndPerCall()
    {
        auto m = notes();
        const QString query = QStringLiteral("Which database did we choose?");
        RecallOptions open = shallow();
        open.minRelevance = 0.0;
        const QList<MemoryMatch> all = m->recall(query, open);
        const QList<MemoryMatch> floored = m->recall(query, shallow());
        QVERIFY(all.size() > floored.size());
        double weakest = 1;
        for (const MemoryMatch &x : all)
            weakest = std::min(weakest, x.signalValues.relevance);
        RecallOptions strict = shallow();
        strict.minRelevance = 0.99;
        QVERIFY(m->recall(query, strict).isEmpty());
        m.reset();

        MemoryConfig c = config();
        c.minRelevance = 0;
        Memory unfloored(c);
        QCOMPARE(unfloored.recall(query, shallow()).size(), all.size());
        RecallOptions bad = shallow();
        bad.minRelevance = 1.5;
        QCOMPARE(errorOf([&] { unfloored.recall(query, bad); }).kind(), ErrorKind::InvalidArgument);
        bad.minRelevance.reset();
        bad.threshold = -0.1;
        QCOMPARE(errorOf([&] { unfloored.recall(query, bad); }).kind(), ErrorKind::InvalidArgument);
    }

    // Scores are in 0..1 and rank the matches; the threshold (Mem0's) keeps those at or above it.
    void scoresAndThreshold()
    {
        MemoryConfig c = config();
        c.minRelevance = 0;
        Memory m(c);
        for (const QString &n : kNotes)
            m.remember(n, fields(QStringLiteral("/"), 0.9));
        const QList<MemoryMatch> all = m.recall(QStringLiteral("approvals for deploys and invoices"), shallow());
        QVERIFY(all.size() >= 3);
        for (qsizetype i = 0; i < all.size(); ++i) {
            QVERIFY(all[i].score > 0 && all[i].score <= 1);
            const MatchSignals &s = all[i].signalValues;
            QVERIFY(qAbs(s.relevance - (c.semanticWeight * s.semantic + c.keywordWeight * s.keywordEvidence) / (c.semanticWeight + c.keywordWeight))
                    < 1e-9);
            QVERIFY(s.keyword >= s.keywordEvidence && s.keyword <= 1);
            if (i > 0)
                QVERIFY(all[i - 1].score >= all[i].score);
        }
        RecallOptions o = shallow();
        o.threshold = (all[0].score + all[all.size() - 1].score) / 2;
        const QList<MemoryMatch> above = m.recall(QStringLiteral("approvals for deploys and invoices"), o);
        QVERIFY(!above.isEmpty() && above.size() < all.size());
        for (const MemoryMatch &x : above)
            QVERIFY(x.score >= *o.threshold);
        o.threshold = 1.0;
        QVERIFY(m.recall(QStringLiteral("approvals for deploys and invoices"), o).isEmpty());
    }

    // Metadata conditions narrow a recall exactly, on the graph and on the exact scan, deep and shallow.
    void metadataConditions_data()
    {
        QTest::addColumn<QString>("filter");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("equal") << R"({"team": "ops"})" << QStringList{"ticket one", "ticket three"};
        QTest::newRow("$gte") << R"({"priority": {"$gte": 2}})" << QStringList{"ticket two", "ticket three"};
        QTest::newRow("$in") << R"({"team": {"$in": ["web", "db"]}})" << QStringList{"ticket two", "ticket four"};
        QTest::newRow("$ne, a missing key holds") << R"({"team": {"$ne": "ops"}})" << QStringList{"ticket two", "ticket four"};
        QTest::newRow("$exists") << R"({"priority": {"$exists": false}})" << QStringList{"ticket four"};
        QTest::newRow("range with $and") << R"({"$and": [{"priority": {"$gt": 1}}, {"priority": {"$lt": 3}}]})"
                                         << QStringList{"ticket two"};
    }
    void metadataConditions()
    {
        QFETCH(QString, filter);
        QFETCH(QStringList, expected);
        for (int ann : {-1, 0}) {
            m_dir = std::make_unique<TempStore>();
            Memory m(config(ann));
            const Json metas[] = {Json{{"team", "ops"}, {"priority", 1}}, Json{{"team", "web"}, {"priority", 2}},
                                  Json{{"team", "ops"}, {"priority", 3}}, Json{{"team", "db"}}};
            const QStringList names = {QStringLiteral("ticket one"), QStringLiteral("ticket two"), QStringLiteral("ticket three"),
                                       QStringLiteral("ticket four")};
            for (int i = 0; i < 4; ++i) {
                RememberOptions o = fields(QStringLiteral("/"));
                o.metadata = metas[i];
                m.remember(names[i], o);
            }
            for (RecallDepth depth : {RecallDepth::Shallow, RecallDepth::Deep}) {
                RecallOptions o = shallow();
                o.depth = depth;
                o.minRelevance = 0;
                o.metadata = Json::parse(filter.toStdString());
                QStringList got = contents(m.recall(QStringLiteral("ticket"), o));
                got.sort();
                QStringList want = expected;
                want.sort();
                QCOMPARE(got, want);
            }
            ForgetOptions f;
            f.metadata = Json::parse(filter.toStdString());
            QCOMPARE(m.forget(f), int(expected.size()));
            QCOMPARE(m.info(QStringLiteral("/")).recordCount, 4 - int(expected.size()));
        }
    }

    void badMetadataFilterIsRefusedBeforeAnything()
    {
        Memory m(config());
        m.remember(QStringLiteral("a note"), fields(QStringLiteral("/")));
        RecallOptions o = shallow();
        o.metadata = Json{{"x", Json{{"$regex", "a"}}}};
        const Error e = errorOf([&] { m.recall(QStringLiteral("note"), o); });
        QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        QVERIFY(e.message().contains(QLatin1String("$regex")));
        ForgetOptions f;
        f.metadata = Json::array();
        QCOMPARE(errorOf([&] { m.forget(f); }).kind(), ErrorKind::InvalidArgument);
        QCOMPARE(m.info(QStringLiteral("/")).recordCount, 1);
    }

    // Identities are stored as metadata keys and filter recall like Mem0's user_id, agent_id and run_id:
    // each given one must match, the others are free. The nearest record of another user never shows.
    void identitiesFilterRecall()
    {
        for (int ann : {-1, 0}) {
            m_dir = std::make_unique<TempStore>();
            auto e = std::make_shared<FakeEmbedder>(4);
            e->setVector(QStringLiteral("bob likes green tea"), {1, 0, 0, 0});
            e->setVector(QStringLiteral("alice likes black tea"), {0.8f, 0.6f, 0, 0});
            e->setVector(QStringLiteral("alice's planner notes tea"), {0.7f, 0.7f, 0, 0});
            e->setVector(QStringLiteral("tea"), {1, 0, 0, 0});
            Memory m(config(ann), nullptr, e);
            RememberOptions bob = fields(QStringLiteral("/"));
            bob.userId = QStringLiteral("bob");
            m.remember(QStringLiteral("bob likes green tea"), bob);
            RememberOptions alice = fields(QStringLiteral("/"));
            alice.userId = QStringLiteral("alice");
            const MemoryRecord stored = m.remember(QStringLiteral("alice likes black tea"), alice);
            QVERIFY(stored.metadata["user_id"] == "alice");
            alice.agentId = QStringLiteral("planner");
            alice.runId = QStringLiteral("r1");
            m.remember(QStringLiteral("alice's planner notes tea"), alice);

            RecallOptions o = shallow();
            o.minRelevance = 0;
            QCOMPARE(m.recall(QStringLiteral("tea"), o).size(), 3);
            o.userId = QStringLiteral("alice");
            QCOMPARE(contents(m.recall(QStringLiteral("tea"), o)),
                     (QStringList{QStringLiteral("alice likes black tea"), QStringLiteral("alice's planner notes tea")}));
            o.agentId = QStringLiteral("planner");
            QCOMPARE(contents(m.recall(QStringLiteral("tea"), o)), QStringList{QStringLiteral("alice's planner notes tea")});
            RecallOptions byRun = shallow();
            byRun.minRelevance = 0;
            byRun.runId = QStringLiteral("r1");
            QCOMPARE(m.recall(QStringLiteral("tea"), byRun).size(), 1);
            byRun.runId = QStringLiteral("nobody's run");
            QVERIFY(m.recall(QStringLiteral("tea"), byRun).isEmpty());
            // Combined with a metadata condition on the same key: both hold.
            RecallOptions both = shallow();
            both.minRelevance = 0;
            both.userId = QStringLiteral("alice");
            both.metadata = Json{{"user_id", Json{{"$ne", "alice"}}}};
            QVERIFY(m.recall(QStringLiteral("tea"), both).isEmpty());

            ForgetOptions f;
            f.userId = QStringLiteral("alice");
            QCOMPARE(m.forget(f), 2);
            QCOMPARE(m.info(QStringLiteral("/")).recordCount, 1);
        }
    }

    // The same words saved for two users are two records; saved again for one of them, nothing new.
    void identitiesKeepSavesApart()
    {
        Memory m(config());
        RememberOptions a = fields(QStringLiteral("/"));
        a.userId = QStringLiteral("alice");
        RememberOptions b = fields(QStringLiteral("/"));
        b.userId = QStringLiteral("bob");
        const MemoryRecord ra = m.remember(QStringLiteral("I like pizza."), a);
        const MemoryRecord rb = m.remember(QStringLiteral("I like pizza."), b);
        QVERIFY(ra.id != rb.id);
        QCOMPARE(m.remember(QStringLiteral("I like pizza."), b).id, rb.id);
        QCOMPARE(m.remember(QStringLiteral("I like pizza."), fields(QStringLiteral("/"))).metadata.contains("user_id"), false);
        QCOMPARE(m.info(QStringLiteral("/")).recordCount, 3);

        // A batch too, and the offline scope vote only hears records of the same user.
        RememberOptions scoped = fields(QStringLiteral("/users/alice/food"));
        scoped.userId = QStringLiteral("alice");
        m.remember(QStringLiteral("Alice orders pizza with mushrooms every Friday."), scoped);
        RememberOptions unscoped; // scope, categories and importance left to the offline analyzer
        unscoped.userId = QStringLiteral("bob");
        const SaveResult r =
            m.rememberMany(QStringList{QStringLiteral("Bob orders pizza with mushrooms every Friday.")}, unscoped).result();
        QCOMPARE(r.stored, 1);
        QCOMPARE(m.get(r.ids.first())->scope, QStringLiteral("/")); // not alice's scope
    }

    // Filters narrow what the reader may see, never widen it: a private record of alice's is found by
    // her user filter only when the reader is her source (or the curator), and forget by identity
    // deletes only what the caller sees.
    void filtersKeepPrivacy()
    {
        for (int ann : {-1, 0}) {
            m_dir = std::make_unique<TempStore>();
            Memory m(config(ann));
            RememberOptions shared = fields(QStringLiteral("/"));
            shared.userId = QStringLiteral("alice");
            shared.metadata = Json{{"topic", "tea"}};
            m.remember(QStringLiteral("Alice drinks green tea in the morning."), shared);
            RememberOptions own = shared;
            own.source = QStringLiteral("user:alice");
            own.isPrivate = true;
            m.remember(QStringLiteral("Alice keeps her tea budget secret."), own);

            RecallOptions o = shallow();
            o.minRelevance = 0;
            o.userId = QStringLiteral("alice");
            o.metadata = Json{{"topic", "tea"}};
            QCOMPARE(contents(m.recall(QStringLiteral("tea"), o)), QStringList{QStringLiteral("Alice drinks green tea in the morning.")});
            o.reader = ReadContext::of(QStringLiteral("user:bob"));
            QCOMPARE(m.recall(QStringLiteral("tea"), o).size(), 1);
            o.reader = ReadContext::of(QStringLiteral("user:alice"));
            QCOMPARE(m.recall(QStringLiteral("tea"), o).size(), 2);
            o.reader = ReadContext::asCurator();
            QCOMPARE(m.recall(QStringLiteral("tea"), o).size(), 2);

            ForgetOptions f;
            f.userId = QStringLiteral("alice");
            QCOMPARE(m.forget(f), 1); // the anonymous caller deletes the shared record only
            QCOMPARE(m.info(QStringLiteral("/"), ReadContext::asCurator()).recordCount, 1);
            QCOMPARE(m.forget(f, ReadContext::of(QStringLiteral("user:bob"))), 0);
            QCOMPARE(m.forget(f, ReadContext::of(QStringLiteral("user:alice"))), 1);
            QCOMPARE(m.info(QStringLiteral("/"), ReadContext::asCurator()).recordCount, 0);
        }
    }

    // In one batch, the same words for two users are two records (the in-batch near-duplicate drop
    // and the identical-record lookup of the write both keep identities apart), and again for one of
    // them nothing new.
    void batchKeepsIdentitiesApart()
    {
        Memory m(config());
        QList<MemoryInput> items;
        for (const char *user : {"alice", "bob", "alice"}) {
            MemoryInput in;
            in.content = QStringLiteral("I like pizza.");
            in.options = fields(QStringLiteral("/"));
            in.options.userId = QString::fromLatin1(user);
            items << in;
        }
        const SaveResult r = m.rememberMany(items).result();
        QCOMPARE(r.stored, 2);
        QCOMPARE(m.info(QStringLiteral("/")).recordCount, 2);
        QCOMPARE(m.rememberMany(items).result().stored, 0);
    }

    void identityMustAgreeWithMetadata()
    {
        Memory m(config());
        RememberOptions o = fields(QStringLiteral("/"));
        o.userId = QStringLiteral("alice");
        o.metadata = Json{{"user_id", "bob"}};
        const Error e = errorOf([&] { m.remember(QStringLiteral("x"), o); });
        QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        QVERIFY(e.message().contains(QLatin1String("user_id")));
        o.metadata = Json{{"user_id", "alice"}}; // the same: fine
        QVERIFY(m.remember(QStringLiteral("x"), o).metadata["user_id"] == "alice");
        o.userId = QStringLiteral("bad\x01id");
        QCOMPARE(errorOf([&] { m.remember(QStringLiteral("y"), o); }).kind(), ErrorKind::InvalidArgument);
    }

    void updatesClearCategoriesAndPatchMetadata()
    {
        Memory m(config());
        RememberOptions o = fields(QStringLiteral("/"), 0.5, {QStringLiteral("a"), QStringLiteral("b")});
        o.metadata = Json{{"keep", 1}, {"drop", 2}};
        const MemoryRecord r = m.remember(QStringLiteral("a record"), o);
        UpdateOptions u;
        u.categories = QStringList();
        u.metadata = Json{{"drop", nullptr}, {"new", "x"}};
        u.mergeMetadata = true;
        const MemoryRecord patched = m.update(r.id, u);
        QVERIFY(patched.categories.isEmpty());
        QCOMPARE(patched.metadata, (Json{{"keep", 1}, {"new", "x"}}));
        UpdateOptions replace;
        replace.metadata = Json{{"only", true}};
        QCOMPARE(m.update(r.id, replace).metadata, (Json{{"only", true}}));
        QCOMPARE(m.history(r.id).size(), 3); // each update is in the history
        QCOMPARE(m.undo(r.id).metadata, (Json{{"keep", 1}, {"new", "x"}}));
    }
};

QTEST_GUILESS_MAIN(TestRecallFilters)
#include "test_recall_filters.moc"
