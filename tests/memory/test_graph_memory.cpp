// Graph memory through Memory: every save path feeds the graph, entities resolve, conflicts
// invalidate, recall finds relations (entity and triplet paths, as of a time, within privacy and
// scopes), deletes revert, and the LLM extractor over the real `openai` plugin against a scripted
// server on loopback, including a malformed reply. Storage is the backend MNEME_CONTRACT_BACKENDS
// names: the SQLite plugin on a real file (the default), or the postgres plugin on a fresh schema of the
// cluster of the CTest fixture "postgres" (test_graph_memory_postgres).

#include "fake_embedder.h"
#include "memory_test_util.h"
#include "scripted_llm.h"
#include "temp_store.h"
#if MNEME_TEST_WITH_POSTGRES
#include "tests/postgres/pg_test_util.h"
#endif
#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <QSignalSpy>
#include <QtTest>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::FakeEmbedder;
using mneme::test::fields;
using mneme::test::ScriptedLlm;
using mneme::test::TempStore;

namespace {

const QDateTime kDay0(QDate(2024, 3, 1), QTime(9, 0), Qt::UTC);

RememberOptions at(const QDateTime &t, const QString &scope = QStringLiteral("/"))
{
    RememberOptions o = fields(scope);
    o.createdAt = t;
    return o;
}

QStringList texts(const QList<RelationMatch> &matches)
{
    QStringList out;
    for (const RelationMatch &m : matches)
        out << m.relation.text();
    return out;
}

QStringList texts(const std::vector<GraphRelation> &relations)
{
    QStringList out;
    for (const GraphRelation &r : relations)
        out << r.text() + (r.valid ? QString() : QStringLiteral(" (invalid)"));
    out.sort();
    return out;
}

} // namespace

class TestGraphMemory : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void init();
    void offByDefault();
    void configIsChecked_data();
    void configIsChecked();
    void everySavePathFeedsTheGraph();
    void sameEntityWrittenDifferentlyIsOneNode();
    void conflictInvalidatesNeverDeletes();
    void aMoveInvalidatesTheOldResidence();
    void bothRecallPathsAndTimeTravel();
    void privacyAndScopes();
    void forgetRevertsAndUndoRestores();
    void deepRecallUsesTheGraph();
    void asOfHidesLaterRecords();
    void llmExtraction();
    void malformedLlmReplyLeavesTheGraph();

private:
    MemoryConfig config(bool graph = true, bool withLlm = false) const;
    std::unique_ptr<TempStore> m_dir;
    QString m_dsn; // on PostgreSQL: this test function's store
    std::unique_ptr<ScriptedLlm> m_llm;
};

MemoryConfig TestGraphMemory::config(bool graph, bool withLlm) const
{
    MemoryConfig c;
    c.storage = m_dsn.isEmpty() ? Json{{"provider", "sqlite"}, {"config", {{"path", m_dir->path()}}}}
                                : Json{{"provider", "postgres"}, {"config", {{"dsn", m_dsn.toStdString()}}}};
    c.graphMemory = graph;
    if (withLlm)
        c.llm = m_llm->config();
    return c;
}

void TestGraphMemory::initTestCase()
{
    const QString backend = qEnvironmentVariable("MNEME_CONTRACT_BACKENDS", QStringLiteral("sqlite"));
    QVERIFY2(backend == QLatin1String("sqlite") || backend == QLatin1String("postgres"),
             "MNEME_CONTRACT_BACKENDS names one backend: sqlite or postgres");
#if MNEME_TEST_WITH_POSTGRES
    if (backend == QLatin1String("postgres"))
        QVERIFY2(test::PgCluster::load(qEnvironmentVariable("MNEME_PG_DIR")), "no PostgreSQL cluster: run the test through CTest");
#else
    QVERIFY2(backend == QLatin1String("sqlite"), "built without libpq");
#endif
}

void TestGraphMemory::init()
{
    m_dir = std::make_unique<TempStore>();
#if MNEME_TEST_WITH_POSTGRES
    if (qEnvironmentVariable("MNEME_CONTRACT_BACKENDS") == QLatin1String("postgres"))
        m_dsn = test::PgCluster::freshDsn();
#endif
    m_llm = std::make_unique<ScriptedLlm>();
}

void TestGraphMemory::offByDefault()
{
    QVERIFY(!MemoryConfig().graphMemory);
    Memory m(config(false));
    m.remember(QStringLiteral("Alice lives in Lisbon."), fields(QStringLiteral("/")));
    QVERIFY(m.graph());                              // the store has the tables ...
    QVERIFY(m.graph()->entities({}, -1, 0).empty()); // ... and nothing was extracted
    const Error e = errorOf([&] { m.recallRelations(QStringLiteral("Alice")); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QVERIFY2(e.message().contains(QLatin1String("graph_memory")), qPrintable(e.message()));
    for (const MemoryMatch &match : m.recall(QStringLiteral("where does Alice live")))
        QVERIFY(!match.matchReasons.contains(QLatin1String("graph")));
}

void TestGraphMemory::configIsChecked_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("key");
    QTest::newRow("graph_memory type") << R"({"graph_memory": "yes"})"
                                       << "graph_memory";
    QTest::newRow("extractor") << R"({"graph_extractor": "magic"})"
                               << "graph_extractor";
    QTest::newRow("entity threshold") << R"({"graph_entity_threshold": 1.5})"
                                      << "graph_entity_threshold";
    QTest::newRow("relation threshold") << R"({"graph_relation_threshold": -0.1})"
                                        << "graph_relation_threshold";
    QTest::newRow("hops") << R"({"graph_hops": 3})"
                          << "graph_hops";
    QTest::newRow("weight") << R"({"graph_weight": 2})"
                            << "graph_weight";
}

void TestGraphMemory::configIsChecked()
{
    QFETCH(QString, json);
    QFETCH(QString, key);
    const Error e = errorOf([&] { MemoryConfig::fromJson(Json::parse(json.toStdString())); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QVERIFY2(e.message().contains(key), qPrintable(e.message()));
    const MemoryConfig on = MemoryConfig::fromJson(Json{{"graph_memory", true}, {"graph_hops", 1}});
    QVERIFY(on.graphMemory);
    QCOMPARE(MemoryConfig::fromJson(on.toJson()).graphHops, 1);
}

void TestGraphMemory::everySavePathFeedsTheGraph()
{
    Memory m(config());
    m.remember(QStringLiteral("Alice lives in Lisbon."), fields(QStringLiteral("/")));
    m.rememberMany({QStringLiteral("Bob works at Acme."), QStringLiteral("Carol likes chess.")}, fields(QStringLiteral("/"))).waitForFinished();
    m.rememberConversation({ConversationTurn{QStringLiteral("Dan"), QStringLiteral("I moved to Oslo."), kDay0, Json::object()}}).waitForFinished();
    m.importRecords({MemoryRecord::create(QStringLiteral("Eve plays the violin."))}, false);
    QCOMPARE(texts(m.graph()->relations({}, -1)),
             (QStringList{QStringLiteral("Alice -- lives_in -> Lisbon"), QStringLiteral("Bob -- works_at -> Acme"),
                          QStringLiteral("Carol -- likes -> chess"), QStringLiteral("Dan -- lives_in -> Oslo"),
                          QStringLiteral("Dan -- moved_to -> Oslo"), QStringLiteral("Eve -- plays -> violin")}));
    // Each relation names the record it came from, and the (weaker) extractor that found it.
    const std::vector<GraphRelation> all = m.graph()->relations({}, -1);
    for (const GraphRelation &r : all) {
        QCOMPARE(r.extractor, QStringLiteral("offline"));
        QCOMPARE(r.recordIds.size(), 1);
        QVERIFY(m.get(r.recordIds.first()).has_value());
    }
}

void TestGraphMemory::sameEntityWrittenDifferentlyIsOneNode()
{
    Memory m(config());
    m.remember(QStringLiteral("Alice Smith lives in Lisbon."), fields(QStringLiteral("/")));
    m.remember(QStringLiteral("ALICE SMITH likes the Café Lumière."), fields(QStringLiteral("/")));
    m.remember(QStringLiteral("Bob visited the cafe lumiere."), fields(QStringLiteral("/")));
    const std::vector<GraphEntity> alice = m.graph()->entitiesByName({QStringLiteral("alice smith")}, {});
    QCOMPARE(alice.size(), std::size_t(1));
    QCOMPARE(alice[0].recordIds.size(), 2);
    const std::vector<GraphEntity> cafe = m.graph()->entitiesByName({QStringLiteral("cafe lumiere")}, {});
    QCOMPARE(cafe.size(), std::size_t(1));
    QCOMPARE(cafe[0].recordIds.size(), 2);
}

void TestGraphMemory::conflictInvalidatesNeverDeletes()
{
    Memory m(config());
    m.remember(QStringLiteral("Alice lives in Lisbon."), at(kDay0));
    const MemoryRecord moved = m.remember(QStringLiteral("Alice lives in Porto."), at(kDay0.addDays(30)));
    QCOMPARE(texts(m.graph()->relations({}, -1)), QStringList{QStringLiteral("Alice -- lives_in -> Porto")});
    GraphFilter all;
    all.includeInvalid = true;
    const std::vector<GraphRelation> both = m.graph()->relations(all, -1);
    QCOMPARE(texts(both), (QStringList{QStringLiteral("Alice -- lives_in -> Lisbon (invalid)"), QStringLiteral("Alice -- lives_in -> Porto")}));
    for (const GraphRelation &r : both)
        if (!r.valid) {
            QCOMPARE(r.invalidatedAt, kDay0.addDays(30));
            QVERIFY2(r.why.contains(moved.id), qPrintable(r.why));
        }
}

void TestGraphMemory::aMoveInvalidatesTheOldResidence()
{
    Memory m(config());
    m.remember(QStringLiteral("Alice lives in Lisbon."), at(kDay0));
    m.remember(QStringLiteral("Alice moved to Porto in May 2024."), at(kDay0.addDays(90)));
    GraphFilter all;
    all.includeInvalid = true;
    QCOMPARE(texts(m.graph()->relations(all, -1)),
             (QStringList{QStringLiteral("Alice -- lives_in -> Lisbon (invalid)"), QStringLiteral("Alice -- lives_in -> Porto"),
                          QStringLiteral("Alice -- moved_to -> Porto"),
                          QStringLiteral("Alice moved to Porto -- happened_on -> May 2024")}));
    // As of before the move, Lisbon.
    RecallOptions o;
    o.asOf = kDay0.addDays(10);
    const QList<RelationMatch> then = m.recallRelations(QStringLiteral("Where does Alice live?"), o);
    QVERIFY(!then.isEmpty());
    QCOMPARE(then.first().relation.text(), QStringLiteral("Alice -- lives_in -> Lisbon"));
}

void TestGraphMemory::bothRecallPathsAndTimeTravel()
{
    Memory m(config());
    m.remember(QStringLiteral("Alice lives in Lisbon."), at(kDay0));
    m.remember(QStringLiteral("Lisbon is Portugal's capital."), at(kDay0));
    m.remember(QStringLiteral("Alice lives in Porto."), at(kDay0.addDays(30)));
    m.remember(QStringLiteral("Bob likes jazz."), at(kDay0));

    // Entity path: "Alice" names a node; the second hop reaches Portugal through Lisbon only while
    // Alice lived there.
    RecallOptions o;
    const QList<RelationMatch> now = m.recallRelations(QStringLiteral("Where does Alice live?"), o);
    QVERIFY(!now.isEmpty());
    QCOMPARE(now.first().relation.text(), QStringLiteral("Alice -- lives_in -> Porto"));
    QVERIFY(now.first().matchReasons.contains(QLatin1String("entity")));
    QCOMPARE(now.first().hops, 1);
    QVERIFY(!texts(now).contains(QStringLiteral("Alice -- lives_in -> Lisbon")));

    o.asOf = kDay0.addDays(10);
    const QList<RelationMatch> then = m.recallRelations(QStringLiteral("Where does Alice live?"), o);
    QVERIFY(!then.isEmpty());
    QCOMPARE(then.first().relation.text(), QStringLiteral("Alice -- lives_in -> Lisbon"));
    QVERIFY(!texts(then).contains(QStringLiteral("Alice -- lives_in -> Porto")));
    bool twoHops = false;
    for (const RelationMatch &r : then)
        twoHops = twoHops || (r.hops == 2 && r.relation.text() == QLatin1String("Portugal -- capital -> Lisbon"));
    QVERIFY2(twoHops, qPrintable(texts(then).join(QLatin1Char('|'))));
    o.asOf = kDay0.addDays(-1);
    QVERIFY(m.recallRelations(QStringLiteral("Where does Alice live?"), o).isEmpty());

    // Triplet path: no entity of the query is a node, the relation's text is like the query.
    o.asOf = QDateTime();
    const QList<RelationMatch> jazz = m.recallRelations(QStringLiteral("likes jazz"), o);
    QVERIFY(!jazz.isEmpty());
    QCOMPARE(jazz.first().relation.text(), QStringLiteral("Bob -- likes -> jazz"));
    QVERIFY(jazz.first().matchReasons.contains(QLatin1String("triplet")));
    QVERIFY(jazz.first().tripletScore >= m.config().graphRelationThreshold);
    // The record a relation came from comes with it.
    QCOMPARE(m.get(jazz.first().relation.recordIds.first())->content, QStringLiteral("Bob likes jazz."));
    // Ranked: best first.
    for (qsizetype i = 1; i < now.size(); ++i)
        QVERIFY(now[i - 1].score >= now[i].score);
}

void TestGraphMemory::privacyAndScopes()
{
    Memory m(config());
    RememberOptions secret = fields(QStringLiteral("/team"));
    secret.source = QStringLiteral("user:bob");
    secret.isPrivate = true;
    m.remember(QStringLiteral("Alice owes Bob money."), secret);
    m.remember(QStringLiteral("Alice works at Acme."), fields(QStringLiteral("/team")));
    m.remember(QStringLiteral("Alice plays chess."), fields(QStringLiteral("/home")));

    RecallOptions anonymous;
    QCOMPARE(texts(m.recallRelations(QStringLiteral("Alice"), anonymous)).size(), 2);
    QVERIFY(!texts(m.recallRelations(QStringLiteral("Alice"), anonymous)).contains(QStringLiteral("Alice -- owes -> Bob")));
    RecallOptions bob;
    bob.reader = ReadContext::of(QStringLiteral("user:bob"));
    QVERIFY(texts(m.recallRelations(QStringLiteral("Alice"), bob)).contains(QStringLiteral("Alice -- owes -> Bob")));
    RecallOptions eve;
    eve.reader = ReadContext::of(QStringLiteral("user:eve"));
    QCOMPARE(texts(m.recallRelations(QStringLiteral("Alice"), eve)).size(), 2);

    // A scope view and a slice confine the graph like the records.
    RecallOptions team;
    team.scopes = {QStringLiteral("/team")};
    QCOMPARE(texts(m.recallRelations(QStringLiteral("Alice"), team)), QStringList{QStringLiteral("Alice -- works_at -> Acme")});
    MemoryConfig rooted = config();
    rooted.rootScope = QStringLiteral("/home");
    m.close();
    Memory home(rooted);
    QCOMPARE(texts(home.recallRelations(QStringLiteral("Alice"))), QStringList{QStringLiteral("Alice -- plays -> chess")});
    const GraphFilter homeFilter = home.graphFilter();
    QCOMPARE(texts(home.graph()->relations(homeFilter, -1)), QStringList{QStringLiteral("Alice -- plays -> chess")});
    QCOMPARE(texts(home.graph()->relations(home.graphFilter({}, ReadContext::asCurator()), -1)).size(), 1);
    QCOMPARE(texts(home.graph()->relations(GraphFilter{}, -1)).size(), 3);
}

void TestGraphMemory::forgetRevertsAndUndoRestores()
{
    Memory m(config());
    const MemoryRecord lisbon = m.remember(QStringLiteral("Alice lives in Lisbon."), at(kDay0));
    const MemoryRecord porto = m.remember(QStringLiteral("Alice lives in Porto."), at(kDay0.addDays(3)));
    QCOMPARE(texts(m.graph()->relations({}, -1)), QStringList{QStringLiteral("Alice -- lives_in -> Porto")});

    // Deleting the record undoes what its save did to the graph: Lisbon is valid again.
    ForgetOptions f;
    f.ids = {porto.id};
    QCOMPARE(m.forget(f, ReadContext::asCurator()), 1);
    QCOMPARE(texts(m.graph()->relations({}, -1)), QStringList{QStringLiteral("Alice -- lives_in -> Lisbon")});
    GraphFilter all;
    all.includeInvalid = true;
    QCOMPARE(m.graph()->relations(all, -1).size(), std::size_t(1));
    QVERIFY(m.graph()->changesOf(porto.id).empty());

    // Undoing the delete brings the record and its graph back.
    m.undo(porto.id, ReadContext::asCurator());
    QCOMPARE(texts(m.graph()->relations({}, -1)), QStringList{QStringLiteral("Alice -- lives_in -> Porto")});
    QVERIFY(!m.graph()->changesOf(porto.id).empty());

    // An update re-extracts.
    UpdateOptions u;
    u.content = QStringLiteral("Alice lives in Faro.");
    m.update(porto.id, u, ReadContext::asCurator());
    QCOMPARE(texts(m.graph()->relations({}, -1)), QStringList{QStringLiteral("Alice -- lives_in -> Faro")});
    Q_UNUSED(lisbon)

    m.reset();
    QVERIFY(m.graph()->entities({}, -1, 0).empty());
}

void TestGraphMemory::deepRecallUsesTheGraph()
{
    Memory m(config());
    m.remember(QStringLiteral("Maria is Tom's sister."), at(kDay0));
    m.remember(QStringLiteral("Maria lives in Oslo."), at(kDay0));
    for (int i = 0; i < 20; ++i)
        m.remember(QStringLiteral("Note %1 about the weather and the garden.").arg(i), at(kDay0));
    RecallOptions o;
    o.depth = RecallDepth::Deep;
    const QList<MemoryMatch> found = m.recall(QStringLiteral("Where does Tom's sister live?"), o);
    bool graphFound = false;
    for (const MemoryMatch &match : found)
        graphFound = graphFound || (match.record.content == QLatin1String("Maria lives in Oslo.") && match.matchReasons.contains(QLatin1String("graph")));
    QStringList seen;
    for (const MemoryMatch &match : found)
        seen << match.record.content + QLatin1Char(' ') + match.matchReasons.join(QLatin1Char(','));
    QVERIFY2(graphFound, qPrintable(seen.join(QLatin1String(" | "))));
    // The shallow recall too.
    RecallOptions shallow = o;
    shallow.depth = RecallDepth::Shallow;
    graphFound = false;
    for (const MemoryMatch &match : m.recall(QStringLiteral("Where does Tom's sister live?"), shallow))
        graphFound = graphFound || (match.record.content == QLatin1String("Maria lives in Oslo.") && match.matchReasons.contains(QLatin1String("graph")));
    QVERIFY(graphFound);
}

void TestGraphMemory::asOfHidesLaterRecords()
{
    Memory m(config());
    m.remember(QStringLiteral("Alice lives in Lisbon."), at(kDay0));
    m.remember(QStringLiteral("Alice lives in Porto."), at(kDay0.addDays(30)));
    RecallOptions o;
    o.asOf = kDay0.addDays(10);
    for (RecallDepth depth : {RecallDepth::Shallow, RecallDepth::Deep}) {
        o.depth = depth;
        const QList<MemoryMatch> found = m.recall(QStringLiteral("Where does Alice live?"), o);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found[0].record.content, QStringLiteral("Alice lives in Lisbon."));
    }
}

void TestGraphMemory::llmExtraction()
{
    m_llm->onJson(QStringLiteral("graph_entities"),
                  Json{{"entities", {{{"name", "Alice"}, {"type", "person"}}, {{"name", "Lisbon"}, {"type", "city"}}}}});
    m_llm->onJson(QStringLiteral("graph_relations"),
                  Json{{"relations", {{{"source", "Alice"}, {"relation", "Resides In"}, {"destination", "Lisbon"}, {"one_at_a_time", true}}}}});
    m_llm->onJson(QStringLiteral("memory_analysis"), Json::object());
    Memory m(config(true, true));
    QSignalSpy started(&m, &Memory::llmCallStarted);
    QSignalSpy completed(&m, &Memory::analysisCompleted);
    m.remember(QStringLiteral("Alice has made her home in the Portuguese capital."), fields(QStringLiteral("/")));
    // "resides_in" is of the residence family: written lives_in.
    QCOMPARE(texts(m.graph()->relations({}, -1)), QStringList{QStringLiteral("Alice -- lives_in -> Lisbon")});
    QCOMPARE(m.graph()->entitiesByName({QStringLiteral("lisbon")}, {})[0].type, QStringLiteral("city"));
    QCOMPARE(m.graph()->relations({}, -1)[0].extractor, QStringLiteral("llm"));
    QStringList steps;
    for (const QList<QVariant> &args : started)
        steps << args.at(0).toString();
    QVERIFY(steps.contains(QStringLiteral("graph_entities")));
    QVERIFY(steps.contains(QStringLiteral("graph_relations")));
    bool llmPath = false;
    for (const QList<QVariant> &args : completed)
        llmPath = llmPath || (args.at(0).toString() == QLatin1String("graph_relations") && args.at(1).toString() == QLatin1String("llm"));
    QVERIFY(llmPath);
    // The request was structured output, and the relation generator was shown the entities.
    QCOMPARE(m_llm->calls(QStringLiteral("graph_relations")), 1);
    QVERIFY(m_llm->lastPrompt(QStringLiteral("graph_relations")).contains(QLatin1String("Lisbon (city)")));

    // The update resolver: the stored relation is offered by id, and the one it marks obsolete is
    // invalidated although the new label differs.
    const qint64 old = m.graph()->relations({}, -1)[0].id;
    m_llm->onJson(QStringLiteral("graph_entities"),
                  Json{{"entities", {{{"name", "Alice"}, {"type", "person"}}, {{"name", "Berlin"}, {"type", "city"}}}}});
    m_llm->onJson(QStringLiteral("graph_relations"),
                  Json{{"relations", {{{"source", "Alice"}, {"relation", "works_in"}, {"destination", "Berlin"}}}}, {"obsolete", {old, 99999}}});
    m.remember(QStringLiteral("Alice left for a job in Germany's capital."), fields(QStringLiteral("/")));
    QVERIFY(m_llm->lastPrompt(QStringLiteral("graph_relations")).contains(QStringLiteral("[%1] Alice -- lives_in -> Lisbon").arg(old)));
    QCOMPARE(texts(m.graph()->relations({}, -1)), QStringList{QStringLiteral("Alice -- works_in -> Berlin")});
    GraphFilter all;
    all.includeInvalid = true;
    QCOMPARE(m.graph()->relations(all, -1).size(), std::size_t(2));
}

void TestGraphMemory::malformedLlmReplyLeavesTheGraph()
{
    m_llm->onJson(QStringLiteral("graph_entities"), Json{{"entities", {{{"name", "Alice"}, {"type", "person"}}}}});
    m_llm->onText(QStringLiteral("graph_relations"), QStringLiteral("Sure! Alice lives in Lisbon, I think."));
    m_llm->onJson(QStringLiteral("memory_analysis"), Json::object());
    Memory m(config(true, true));
    QSignalSpy failed(&m, &Memory::llmCallFailed);
    QSignalSpy completed(&m, &Memory::analysisCompleted);
    const MemoryRecord r = m.remember(QStringLiteral("Alice lives in Lisbon."), fields(QStringLiteral("/")));
    QVERIFY(m.get(r.id).has_value());                // saved
    QVERIFY(m.graph()->entities({}, -1, 0).empty()); // graph unchanged: not even the entities
    QVERIFY(m.graph()->changesOf(r.id).empty());
    QVERIFY(!failed.isEmpty());
    QString reason;
    for (const QList<QVariant> &args : completed)
        if (args.at(0).toString() == QLatin1String("graph_relations"))
            reason = args.at(2).toString();
    QVERIFY2(reason.contains(QLatin1String("graph extraction failed")) && reason.contains(r.id), qPrintable(reason));

    // A reply without the list is as unusable.
    m_llm->onJson(QStringLiteral("graph_relations"), Json{{"triplets", Json::array()}});
    const MemoryRecord r2 = m.remember(QStringLiteral("Bob lives in Oslo."), fields(QStringLiteral("/")));
    QVERIFY(m.get(r2.id).has_value());
    QVERIFY(m.graph()->entities({}, -1, 0).empty());
}

QTEST_GUILESS_MAIN(TestGraphMemory)
#include "test_graph_memory.moc"
