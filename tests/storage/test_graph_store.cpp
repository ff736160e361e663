// The GraphStore contract (core/graph_store.h) through StorageBackend::graph(), the same cases on every
// backend with a graph: the backend named in MNEME_CONTRACT_BACKENDS ("sqlite", the default: real
// files; "postgres": a fresh schema per store on the cluster of the CTest fixture "postgres"), opened
// through its storage plugin. CTest registers one test a backend.

#include "tests/support/temp_store.h"
#if MNEME_TEST_WITH_POSTGRES
#include "tests/postgres/pg_test_util.h"
#endif
#include <mneme/core/error.h>
#include <mneme/core/graph_store.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/storage_backend.h>

#include <QTest>
#include <sqlite3.h>

using namespace mneme;

namespace {

PluginRegistry &registry()
{
    static PluginRegistry r(QStringList{QStringLiteral(MNEME_PLUGIN_BUILD_DIR)});
    return r;
}

QString backend()
{
    return qEnvironmentVariable("MNEME_CONTRACT_BACKENDS", QStringLiteral("sqlite"));
}

bool onSqlite()
{
    return backend() == QLatin1String("sqlite");
}

#if MNEME_TEST_WITH_POSTGRES
// The schema standing for a store path on PostgreSQL: made on first use, the same on reopening.
QString dsnOf(const QString &path)
{
    static QHash<QString, QString> dsns;
    if (!dsns.contains(path))
        dsns.insert(path, test::PgCluster::freshDsn());
    return dsns.value(path);
}
#endif

std::unique_ptr<StorageBackend> openStore(const QString &path)
{
#if MNEME_TEST_WITH_POSTGRES
    if (!onSqlite())
        return registry().createStorage(backend(), Json{{"dsn", dsnOf(path).toStdString()}});
#endif
    return registry().createStorage(QStringLiteral("sqlite"), Json{{"path", path.toStdString()}});
}

const QDateTime kBase = QDateTime(QDate(2024, 5, 1), QTime(12, 0), Qt::UTC);

GraphOrigin origin(const QString &recordId, int day = 0, const QString &scope = QStringLiteral("/"),
                   const QString &source = {}, bool isPrivate = false)
{
    return GraphOrigin{recordId, scope, source, isPrivate, kBase.addDays(day)};
}

GraphTripletInput triplet(const QString &from, const QString &label, const QString &to, bool exclusive = false,
                          Embedding embedding = {})
{
    GraphTripletInput t;
    t.source.name = from;
    t.source.type = QStringLiteral("person");
    t.label = label;
    t.destination.name = to;
    t.destination.type = QStringLiteral("place");
    t.exclusive = exclusive;
    t.embedding = std::move(embedding);
    return t;
}

GraphExtraction extraction(const GraphOrigin &o, std::vector<GraphTripletInput> triplets)
{
    GraphExtraction x;
    x.origin = o;
    x.triplets = std::move(triplets);
    return x;
}

QStringList texts(const std::vector<GraphRelation> &relations)
{
    QStringList out;
    for (const GraphRelation &r : relations)
        out << r.text() + (r.valid ? QString() : QStringLiteral(" (invalid)"));
    out.sort();
    return out;
}

void rawExec(const QString &path, const QString &sql)
{
    sqlite3 *db = nullptr;
    sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READWRITE, nullptr);
    char *error = nullptr;
    const int rc = sqlite3_exec(db, sql.toUtf8().constData(), nullptr, nullptr, &error);
    const QString message = error ? QString::fromUtf8(error) : QString();
    sqlite3_free(error);
    sqlite3_close(db);
    QVERIFY2(rc == SQLITE_OK, qPrintable(message));
}

MemoryRecord record(const QString &id)
{
    MemoryRecord r = MemoryRecord::create(QStringLiteral("the record ") + id);
    r.id = id;
    r.createdAt = kBase;
    r.updatedAt = kBase;
    return r;
}

// The problems of a check that are the graph's.
QStringList graphProblems(const StoreCheck &check)
{
    QStringList out;
    for (const QString &p : check.problems)
        if (p.startsWith(QStringLiteral("the graph")))
            out << p;
    return out;
}

// The first column of the first row of `sql` over the store's own tables ("graph_..." on SQLite,
// "mneme_graph_..." on PostgreSQL), read beside the backend.
QString rawScalar(const QString &path, const QString &sql)
{
#if MNEME_TEST_WITH_POSTGRES
    if (!onSqlite())
        return test::PgCluster::scalar(QString(sql).replace(QStringLiteral("graph_"), QStringLiteral("mneme_graph_")), dsnOf(path));
#endif
    sqlite3 *db = nullptr;
    sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt *st = nullptr;
    sqlite3_prepare_v2(db, sql.toUtf8().constData(), -1, &st, nullptr);
    QString out;
    if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        out = QString::fromUtf8(reinterpret_cast<const char *>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

struct Caught
{
    bool thrown = false;
    ErrorKind kind = ErrorKind::Internal;
};

} // namespace

class TestGraphStore : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void normalizedNames_data();
    void normalizedNames();
    void writesAndReadsBackAcrossReopening();
    void sameEntityWrittenDifferentlyResolves();
    void similarNamesResolveAboveTheThreshold();
    void exclusiveLabelInvalidatesNeverDeletes();
    void asOfSeesRelationsValidThen();
    void hopsReachNeighbours();
    void privacyAndScopesConfineReads();
    void revertingARecordUndoesItsGraphChanges();
    void resetOfASubtreeKeepsTheRest();
    void similarRelationsAreRankedByCosine();
    void checkFindsAndRepairsGraphDamage();
    void vectorSearchesFollowEveryChange();
    void rowsMoveWholeToAnotherStore();
};

void TestGraphStore::initTestCase()
{
#if MNEME_TEST_WITH_POSTGRES
    if (!onSqlite())
        QVERIFY2(test::PgCluster::load(qEnvironmentVariable("MNEME_PG_DIR")), "no PostgreSQL cluster: run the test through CTest");
#endif
    QVERIFY2(onSqlite() || backend() == QLatin1String("postgres"), "MNEME_CONTRACT_BACKENDS names one backend: sqlite or postgres");
}

void TestGraphStore::normalizedNames_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("normalized");
    QTest::newRow("case and spaces") << "  Alice   SMITH "
                                     << "alice smith";
    QTest::newRow("diacritics") << "Café Lumière"
                                << "cafe lumiere";
    QTest::newRow("article") << "The Lighthouse"
                             << "lighthouse";
    QTest::newRow("punctuation") << "St.-Malo!"
                                 << "st malo";
    QTest::newRow("apostrophe") << "O'Brien"
                                << "obrien";
    QTest::newRow("only an article") << "the"
                                     << "the";
    QTest::newRow("nothing") << "?!"
                             << "";
}

void TestGraphStore::normalizedNames()
{
    QFETCH(QString, name);
    QFETCH(QString, normalized);
    QCOMPARE(GraphEntity::normalize(name), normalized);
}

void TestGraphStore::writesAndReadsBackAcrossReopening()
{
    test::TempStore tmp;
    {
        auto store = openStore(tmp.path());
        QVERIFY(store->graph());
        QVERIFY(store->info().has(StorageInfo::Graph));
        if (onSqlite())
            QCOMPARE(store->schemaVersion(), 6);
        store->save({record(QStringLiteral("r1"))});
        const GraphWriteResult w = store->graph()->write({extraction(origin(QStringLiteral("r1")),
                                                                     {triplet(QStringLiteral("Alice"), QStringLiteral("Lives in"),
                                                                              QStringLiteral("Lisbon"))})},
                                                         {});
        QCOMPARE(w.entitiesAdded, 2);
        QCOMPARE(w.relationsAdded, 1);
    }
    auto store = openStore(tmp.path());
    const std::vector<GraphRelation> all = store->graph()->relations({}, -1);
    QCOMPARE(all.size(), std::size_t(1));
    QCOMPARE(all[0].label, QStringLiteral("lives_in"));
    QCOMPARE(all[0].sourceName, QStringLiteral("Alice"));
    QCOMPARE(all[0].destinationName, QStringLiteral("Lisbon"));
    QCOMPARE(all[0].recordIds, QStringList{QStringLiteral("r1")});
    QCOMPARE(all[0].createdAt, kBase);
    QVERIFY(all[0].valid);
    const std::vector<GraphEntity> entities = store->graph()->entities({}, -1, 0);
    QCOMPARE(entities.size(), std::size_t(2));
    QCOMPARE(entities[0].normalizedName, QStringLiteral("alice"));
    QCOMPARE(entities[0].type, QStringLiteral("person"));
    QCOMPARE(entities[1].type, QStringLiteral("place"));
    const std::vector<GraphChange> changes = store->graph()->changesOf(QStringLiteral("r1"));
    QCOMPARE(changes.size(), std::size_t(3));
    QCOMPARE(changes[2].kind, GraphChange::Kind::AddRelation);
    if (onSqlite())
        QCOMPARE(rawScalar(tmp.path(), QStringLiteral("PRAGMA integrity_check")), QStringLiteral("ok"));
    if (store->info().has(StorageInfo::Check))
        QVERIFY(store->check(false).ok());
}

void TestGraphStore::sameEntityWrittenDifferentlyResolves()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    GraphStore &g = *store->graph();
    g.write({extraction(origin(QStringLiteral("r1")), {triplet(QStringLiteral("Alice"), QStringLiteral("likes"), QStringLiteral("Café Lumière"))})}, {});
    const GraphWriteResult w = g.write(
        {extraction(origin(QStringLiteral("r2"), 1), {triplet(QStringLiteral("ALICE"), QStringLiteral("visited"), QStringLiteral("the cafe lumiere"))})},
        {});
    QCOMPARE(w.entitiesAdded, 0);
    QCOMPARE(w.entitiesResolved, 2);
    QCOMPARE(g.entities({}, -1, 0).size(), std::size_t(2));
    const std::vector<GraphEntity> alice = g.entitiesByName({QStringLiteral("alice")}, {});
    QCOMPARE(alice.size(), std::size_t(1));
    QCOMPARE(alice[0].name, QStringLiteral("Alice")); // as first written
    QCOMPARE(alice[0].recordIds, (QStringList{QStringLiteral("r1"), QStringLiteral("r2")}));
    // The same relation again only adds the record to its sources.
    const GraphWriteResult again = g.write(
        {extraction(origin(QStringLiteral("r3"), 2), {triplet(QStringLiteral("alice"), QStringLiteral("LIKES"), QStringLiteral("Cafe Lumiere"))})}, {});
    QCOMPARE(again.relationsAdded, 0);
    QCOMPARE(again.relationsLinked, 1);
    QCOMPARE(g.relations({}, -1).size(), std::size_t(2));
}

void TestGraphStore::similarNamesResolveAboveTheThreshold()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    GraphStore &g = *store->graph();
    GraphExtraction first = extraction(origin(QStringLiteral("r1")), {});
    first.entities.push_back({QStringLiteral("Robert"), QStringLiteral("person"), {1, 0, 0}});
    g.write({first}, {});
    GraphExtraction close = extraction(origin(QStringLiteral("r2")), {});
    close.entities.push_back({QStringLiteral("Bob"), QStringLiteral("person"), {0.99f, 0.14f, 0}});
    GraphExtraction far = extraction(origin(QStringLiteral("r3")), {});
    far.entities.push_back({QStringLiteral("Lisbon"), QStringLiteral("place"), {0, 1, 0}});
    GraphWriteOptions o;
    o.entitySimilarity = 0.95;
    const GraphWriteResult w = g.write({close, far}, o);
    QCOMPARE(w.entitiesResolved, 1);
    QCOMPARE(w.entitiesAdded, 1);
    QCOMPARE(g.entitiesByName({QStringLiteral("robert")}, {})[0].recordIds, (QStringList{QStringLiteral("r1"), QStringLiteral("r2")}));
    // Above 1: by name only.
    GraphExtraction other = extraction(origin(QStringLiteral("r4")), {});
    other.entities.push_back({QStringLiteral("Bobby"), QStringLiteral("person"), {1, 0, 0}});
    o.entitySimilarity = 1.01;
    QCOMPARE(g.write({other}, o).entitiesAdded, 1);
    const std::vector<ScoredEntity> similar = g.similarEntities({1, 0, 0}, {}, 0.9, 10);
    QCOMPARE(similar.size(), std::size_t(2));
    QCOMPARE(similar[0].score, 1.0);
}

void TestGraphStore::exclusiveLabelInvalidatesNeverDeletes()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    GraphStore &g = *store->graph();
    g.write({extraction(origin(QStringLiteral("r1")), {triplet(QStringLiteral("Alice"), QStringLiteral("lives_in"), QStringLiteral("Lisbon"), true),
                                                       triplet(QStringLiteral("Alice"), QStringLiteral("likes"), QStringLiteral("tea"))})},
            {});
    const GraphWriteResult w = g.write(
        {extraction(origin(QStringLiteral("r2"), 10), {triplet(QStringLiteral("Alice"), QStringLiteral("lives_in"), QStringLiteral("Porto"), true),
                                                       triplet(QStringLiteral("Alice"), QStringLiteral("likes"), QStringLiteral("coffee"))})},
        {});
    QCOMPARE(w.relationsInvalidated, 1); // "likes" is not exclusive: both stay valid
    QCOMPARE(texts(g.relations({}, -1)), (QStringList{QStringLiteral("Alice -- likes -> coffee"), QStringLiteral("Alice -- likes -> tea"),
                                                      QStringLiteral("Alice -- lives_in -> Porto")}));
    GraphFilter all;
    all.includeInvalid = true;
    const std::vector<GraphRelation> everything = g.relations(all, -1);
    QCOMPARE(everything.size(), std::size_t(4));
    const auto lisbon = std::find_if(everything.begin(), everything.end(), [](const GraphRelation &r) { return !r.valid; });
    QVERIFY(lisbon != everything.end());
    QCOMPARE(lisbon->destinationName, QStringLiteral("Lisbon"));
    QCOMPARE(lisbon->invalidatedAt, kBase.addDays(10));
    QVERIFY2(lisbon->why.contains(QStringLiteral("Porto")) && lisbon->why.contains(QStringLiteral("r2")), qPrintable(lisbon->why));
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM graph_relations")), QStringLiteral("4"));
    // A contradiction named by id (an LLM's update resolver) invalidates a non-exclusive relation.
    GraphTripletInput stop = triplet(QStringLiteral("Alice"), QStringLiteral("dislikes"), QStringLiteral("tea"));
    for (const GraphRelation &r : g.relations({}, -1))
        if (r.destinationName == QLatin1String("tea"))
            stop.contradicts.push_back(r.id);
    QCOMPARE(g.write({extraction(origin(QStringLiteral("r3"), 11), {stop})}, {}).relationsInvalidated, 1);
    QCOMPARE(g.relations({}, -1).size(), std::size_t(3));
    // Naming it again once it is invalid changes nothing: not counted, nothing in the record's history.
    GraphTripletInput again = triplet(QStringLiteral("Alice"), QStringLiteral("avoids"), QStringLiteral("tea"));
    again.contradicts = stop.contradicts;
    QCOMPARE(g.write({extraction(origin(QStringLiteral("r4"), 12), {again})}, {}).relationsInvalidated, 0);
    for (const GraphChange &c : g.changesOf(QStringLiteral("r4")))
        QVERIFY(c.kind != GraphChange::Kind::Invalidate);
}

void TestGraphStore::asOfSeesRelationsValidThen()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    GraphStore &g = *store->graph();
    g.write({extraction(origin(QStringLiteral("r1")), {triplet(QStringLiteral("Alice"), QStringLiteral("lives_in"), QStringLiteral("Lisbon"), true)})}, {});
    g.write({extraction(origin(QStringLiteral("r2"), 10), {triplet(QStringLiteral("Alice"), QStringLiteral("lives_in"), QStringLiteral("Porto"), true)})}, {});
    GraphFilter then;
    then.asOf = kBase.addDays(5);
    QCOMPARE(texts(g.relations(then, -1)), QStringList{QStringLiteral("Alice -- lives_in -> Lisbon (invalid)")});
    then.asOf = kBase.addDays(-1);
    QVERIFY(g.relations(then, -1).empty());
    then.asOf = kBase.addDays(10);
    QCOMPARE(texts(g.relations(then, -1)), QStringList{QStringLiteral("Alice -- lives_in -> Porto")});
    const qint64 alice = g.entitiesByName({QStringLiteral("alice")}, {})[0].id;
    then.asOf = kBase.addDays(5);
    QCOMPARE(texts(g.relationsOf({alice}, 1, then)), QStringList{QStringLiteral("Alice -- lives_in -> Lisbon (invalid)")});
}

void TestGraphStore::hopsReachNeighbours()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    GraphStore &g = *store->graph();
    g.write({extraction(origin(QStringLiteral("r1")), {triplet(QStringLiteral("Tom"), QStringLiteral("sister"), QStringLiteral("Maria")),
                                                       triplet(QStringLiteral("Maria"), QStringLiteral("lives_in"), QStringLiteral("Oslo")),
                                                       triplet(QStringLiteral("Oslo"), QStringLiteral("in"), QStringLiteral("Norway"))})},
            {});
    const qint64 tom = g.entitiesByName({QStringLiteral("tom")}, {})[0].id;
    QCOMPARE(texts(g.relationsOf({tom}, 1, {})), QStringList{QStringLiteral("Tom -- sister -> Maria")});
    QCOMPARE(texts(g.relationsOf({tom}, 2, {})),
             (QStringList{QStringLiteral("Maria -- lives_in -> Oslo"), QStringLiteral("Tom -- sister -> Maria")}));
    const qint64 oslo = g.entitiesByName({QStringLiteral("oslo")}, {})[0].id;
    QCOMPARE(g.relationsOf({oslo}, 1, {}).size(), std::size_t(2)); // incoming and outgoing
}

void TestGraphStore::privacyAndScopesConfineReads()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    GraphStore &g = *store->graph();
    g.write({extraction(origin(QStringLiteral("shared"), 0, QStringLiteral("/team")),
                        {triplet(QStringLiteral("Alice"), QStringLiteral("works_at"), QStringLiteral("Acme"))}),
             extraction(origin(QStringLiteral("secret"), 0, QStringLiteral("/team"), QStringLiteral("bob"), true),
                        {triplet(QStringLiteral("Alice"), QStringLiteral("owes"), QStringLiteral("Bob"))}),
             extraction(origin(QStringLiteral("home"), 0, QStringLiteral("/teamwork")),
                        {triplet(QStringLiteral("Carol"), QStringLiteral("likes"), QStringLiteral("chess"))})},
            {});
    GraphFilter anonymous;
    anonymous.applyPrivacy = true;
    QCOMPARE(texts(g.relations(anonymous, -1)),
             (QStringList{QStringLiteral("Alice -- works_at -> Acme"), QStringLiteral("Carol -- likes -> chess")}));
    QCOMPARE(g.entities(anonymous, -1, 0).size(), std::size_t(4)); // the private "Alice" and "Bob" hidden
    GraphFilter bob = anonymous;
    bob.source = QStringLiteral("bob");
    QCOMPARE(g.relations(bob, -1).size(), std::size_t(3));
    GraphFilter other = anonymous;
    other.source = QStringLiteral("eve");
    QCOMPARE(g.relations(other, -1).size(), std::size_t(2));
    // A private entity is its own node: the shared "Alice" does not gain the private record.
    QCOMPARE(g.entitiesByName({QStringLiteral("alice")}, anonymous)[0].recordIds, QStringList{QStringLiteral("shared")});
    GraphFilter team = anonymous;
    team.scopes = {QStringLiteral("/team")};
    QCOMPARE(texts(g.relations(team, -1)), QStringList{QStringLiteral("Alice -- works_at -> Acme")});
    const qint64 alice = g.entitiesByName({QStringLiteral("alice")}, anonymous)[0].id;
    QCOMPARE(g.relationsOf({alice}, 2, team).size(), std::size_t(1));
}

void TestGraphStore::revertingARecordUndoesItsGraphChanges()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    GraphStore &g = *store->graph();
    g.write({extraction(origin(QStringLiteral("r1")), {triplet(QStringLiteral("Alice"), QStringLiteral("lives_in"), QStringLiteral("Lisbon"), true)})}, {});
    g.write({extraction(origin(QStringLiteral("r2"), 3), {triplet(QStringLiteral("Alice"), QStringLiteral("lives_in"), QStringLiteral("Porto"), true),
                                                          triplet(QStringLiteral("Alice"), QStringLiteral("likes"), QStringLiteral("surfing"))})},
            {});
    QCOMPARE(texts(g.relations({}, -1)), (QStringList{QStringLiteral("Alice -- likes -> surfing"), QStringLiteral("Alice -- lives_in -> Porto")}));
    QVERIFY(g.revertRecords({QStringLiteral("r2")}) >= 4);
    // Back to what r1 alone made: Lisbon valid again, Porto, surfing and their entities gone.
    QCOMPARE(texts(g.relations({}, -1)), QStringList{QStringLiteral("Alice -- lives_in -> Lisbon")});
    const std::vector<GraphRelation> lisbon = g.relations({}, -1);
    QVERIFY(!lisbon[0].invalidatedAt.isValid());
    QVERIFY(lisbon[0].why.isEmpty());
    QCOMPARE(g.entities({}, -1, 0).size(), std::size_t(2));
    QCOMPARE(g.entitiesByName({QStringLiteral("alice")}, {})[0].recordIds, QStringList{QStringLiteral("r1")});
    QVERIFY(g.changesOf(QStringLiteral("r2")).empty());
    QCOMPARE(g.revertRecords({QStringLiteral("r2")}), 0);
    g.revertRecords({QStringLiteral("r1")});
    QVERIFY(g.relations({}, -1).empty());
    QVERIFY(g.entities({}, -1, 0).empty());
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM graph_sources")), QStringLiteral("0"));
}

void TestGraphStore::resetOfASubtreeKeepsTheRest()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    GraphStore &g = *store->graph();
    g.write({extraction(origin(QStringLiteral("a"), 0, QStringLiteral("/a")), {triplet(QStringLiteral("Ann"), QStringLiteral("likes"), QStringLiteral("tea"))}),
             extraction(origin(QStringLiteral("b"), 0, QStringLiteral("/b")), {triplet(QStringLiteral("Ben"), QStringLiteral("likes"), QStringLiteral("jazz"))})},
            {});
    g.reset(QStringLiteral("/a"));
    QCOMPARE(texts(g.relations({}, -1)), QStringList{QStringLiteral("Ben -- likes -> jazz")});
    QCOMPARE(g.entities({}, -1, 0).size(), std::size_t(2));
    QVERIFY(g.changesOf(QStringLiteral("a")).empty());
    QCOMPARE(g.changesOf(QStringLiteral("b")).size(), std::size_t(3));
    g.reset(QStringLiteral("/"));
    QVERIFY(g.entities({}, -1, 0).empty());
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM graph_history")), QStringLiteral("0"));
}

void TestGraphStore::similarRelationsAreRankedByCosine()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    GraphStore &g = *store->graph();
    g.write({extraction(origin(QStringLiteral("r")), {triplet(QStringLiteral("Alice"), QStringLiteral("likes"), QStringLiteral("tea"), false, {1, 0}),
                                                      triplet(QStringLiteral("Bob"), QStringLiteral("likes"), QStringLiteral("jazz"), false, {0.6f, 0.8f}),
                                                      triplet(QStringLiteral("Cid"), QStringLiteral("likes"), QStringLiteral("golf"), false, {0, 1})})},
            {});
    const std::vector<ScoredRelation> hits = g.similarRelations({1, 0}, {}, 0.5, 10);
    QCOMPARE(hits.size(), std::size_t(2));
    QCOMPARE(hits[0].relation.sourceName, QStringLiteral("Alice"));
    QCOMPARE(hits[1].relation.sourceName, QStringLiteral("Bob"));
    QVERIFY(qAbs(hits[1].score - 0.6) < 1e-6);
    QCOMPARE(g.similarRelations({1, 0}, {}, 0.5, 1).size(), std::size_t(1));
}

void TestGraphStore::checkFindsAndRepairsGraphDamage()
{
    if (!onSqlite())
        QSKIP("the graph part of a store check is SQLite's (PostgreSQL has no Check capability)");
    test::TempStore tmp;
    const QString alice = QStringLiteral("Alice");
    {
        auto store = openStore(tmp.path());
        store->save({record(QStringLiteral("r1")), record(QStringLiteral("r2"))});
        GraphStore &g = *store->graph();
        g.write({extraction(origin(QStringLiteral("r1")), {triplet(alice, QStringLiteral("lives_in"), QStringLiteral("Lisbon"), true),
                                                           triplet(alice, QStringLiteral("likes"), QStringLiteral("surfing"))})},
                {});
        g.write({extraction(origin(QStringLiteral("r2"), 3), {triplet(alice, QStringLiteral("lives_in"), QStringLiteral("Porto"), true)})}, {});
        // The graph of a record deleted without its graph being reverted.
        g.write({extraction(origin(QStringLiteral("gone"), 4), {triplet(QStringLiteral("Bob"), QStringLiteral("knows"), QStringLiteral("Carol"))})}, {});
        QCOMPARE(graphProblems(store->check(false)).size(), 1);
        rawExec(tmp.path(), QStringLiteral("DELETE FROM graph_entities WHERE norm = 'surfing'"));
    }
    rawExec(tmp.path(), QStringLiteral("DELETE FROM graph_history WHERE change IN ('INVALIDATE', 'LINK_ENTITY');"
                                       "INSERT INTO graph_sources VALUES (0, 999, 'r1');"
                                       "INSERT INTO graph_history(record_id, change, row_id, at) VALUES ('r1', 'ADD_RELATION', 999, 0)"));
    const QString before = rawScalar(tmp.path(), QStringLiteral("SELECT (SELECT count(*) FROM graph_relations) || '/' || "
                                                                "(SELECT count(*) FROM graph_sources) || '/' || (SELECT count(*) FROM graph_history)"));
    auto store = openStore(tmp.path());
    // Found, each with what to do, and nothing changed by looking.
    const QStringList found = graphProblems(store->check(false));
    QCOMPARE(found.size(), 6);
    for (const QString &p : found)
        QVERIFY2(p.contains(QStringLiteral("mneme check --repair")), qPrintable(p));
    QVERIFY2(found.join(QLatin1Char('\n')).contains(QStringLiteral("1 relations pointing at missing entities")), qPrintable(found.join(QLatin1Char('\n'))));
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT (SELECT count(*) FROM graph_relations) || '/' || (SELECT count(*) FROM "
                                                  "graph_sources) || '/' || (SELECT count(*) FROM graph_history)")),
             before);

    const StoreCheck repaired = store->check(true);
    QVERIFY2(graphProblems(repaired).isEmpty(), qPrintable(repaired.problems.join(QLatin1Char('\n'))));
    QVERIFY(repaired.repaired.size() >= 6);
    QVERIFY2(store->check(false).ok(), qPrintable(store->check(false).problems.join(QLatin1Char('\n'))));
    GraphFilter everything;
    everything.includeInvalid = true;
    GraphStore &g = *store->graph();
    QCOMPARE(texts(g.relations(everything, -1)),
             (QStringList{QStringLiteral("Alice -- lives_in -> Lisbon (invalid)"), QStringLiteral("Alice -- lives_in -> Porto")}));
    QVERIFY(g.entitiesByName({QStringLiteral("bob")}, {}).empty());
    // The history holds again what undo needs: reverting r2 makes Lisbon valid and unlinks Alice from r2.
    g.revertRecords({QStringLiteral("r2")});
    QCOMPARE(texts(g.relations(everything, -1)), QStringList{QStringLiteral("Alice -- lives_in -> Lisbon")});
    QCOMPARE(g.entitiesByName({QStringLiteral("alice")}, {})[0].recordIds, QStringList{QStringLiteral("r1")});
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("PRAGMA integrity_check")), QStringLiteral("ok"));
}

// The in-process indexes of the entity and relation vectors against the tables: writes,
// invalidations, reverts, privacy, and another connection's commits.
void TestGraphStore::vectorSearchesFollowEveryChange()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    auto other = openStore(tmp.path());
    GraphStore &g = *store->graph();
    const auto sources = [&g](const Embedding &q, const GraphFilter &f = {}) {
        QStringList out;
        for (const ScoredRelation &s : g.similarRelations(q, f, 0.9, 10))
            out << s.relation.sourceName + QLatin1Char(' ') + s.relation.destinationName;
        return out;
    };
    g.write({extraction(origin(QStringLiteral("r1")), {triplet(QStringLiteral("Alice"), QStringLiteral("lives_in"), QStringLiteral("Lisbon"), true, {1, 0})})}, {});
    QCOMPARE(sources({1, 0}), QStringList{QStringLiteral("Alice Lisbon")}); // the indexes are read
    // Written through this store: in the index at once; the relation it invalidates is not found now, but as of before.
    g.write({extraction(origin(QStringLiteral("r2"), 3), {triplet(QStringLiteral("Alice"), QStringLiteral("lives_in"), QStringLiteral("Porto"), true, {1, 0.01f})})}, {});
    QCOMPARE(sources({1, 0}), QStringList{QStringLiteral("Alice Porto")});
    GraphFilter then;
    then.asOf = kBase.addDays(1);
    QCOMPARE(sources({1, 0}, then), QStringList{QStringLiteral("Alice Lisbon")});
    // Written by another connection: seen on the next search.
    other->graph()->write({extraction(origin(QStringLiteral("r3"), 4, QStringLiteral("/"), QStringLiteral("bob"), true),
                                      {triplet(QStringLiteral("Bob"), QStringLiteral("likes"), QStringLiteral("tea"), false, {0, 1})})},
                          {});
    QCOMPARE(sources({0, 1}), QStringList{QStringLiteral("Bob tea")});
    GraphFilter reader;
    reader.applyPrivacy = true;
    reader.source = QStringLiteral("carol");
    QVERIFY(sources({0, 1}, reader).isEmpty()); // private to bob
    // Reverted: gone from the searches, and what it invalidated found again.
    g.revertRecords({QStringLiteral("r2"), QStringLiteral("r3")});
    QCOMPARE(sources({1, 0}), QStringList{QStringLiteral("Alice Lisbon")});
    QVERIFY(sources({0, 1}).isEmpty());
    // Entities resolve by similarity through the index too, and similarEntities finds them.
    GraphTripletInput first = triplet(QStringLiteral("Carla"), QStringLiteral("likes"), QStringLiteral("coffee"));
    first.source.embedding = {1, 0};
    GraphTripletInput again = triplet(QStringLiteral("Karla"), QStringLiteral("likes"), QStringLiteral("tea"));
    again.source.embedding = {1, 0.01f};
    g.write({extraction(origin(QStringLiteral("r4"), 5), {first})}, {});
    const GraphWriteResult w = g.write({extraction(origin(QStringLiteral("r5"), 6), {again})}, {});
    QCOMPARE(w.entitiesResolved, 1); // Karla is Carla
    const std::vector<ScoredEntity> near = g.similarEntities({1, 0}, {}, 0.9, 5);
    QCOMPARE(near.size(), std::size_t(1));
    QCOMPARE(near[0].entity.name, QStringLiteral("Carla"));
    QCOMPARE(near[0].entity.recordIds, (QStringList{QStringLiteral("r4"), QStringLiteral("r5")}));
}

// dumpRows() and loadRows() (mneme migrate): the graph arrives whole, keys, invalidations and the
// history kept, so undoing a record in the new store reverts what it did; loading twice adds nothing.
void TestGraphStore::rowsMoveWholeToAnotherStore()
{
    test::TempStore a, b;
    auto from = openStore(a.path());
    auto to = openStore(b.path());
    GraphStore &g = *from->graph();
    g.write({extraction(origin(QStringLiteral("r1")), {triplet(QStringLiteral("Alice"), QStringLiteral("lives_in"), QStringLiteral("Lisbon"), true, {1, 0})})}, {});
    g.write({extraction(origin(QStringLiteral("r2"), 3, QStringLiteral("/team"), QStringLiteral("ana"), true),
                        {triplet(QStringLiteral("Bob"), QStringLiteral("likes"), QStringLiteral("jazz"))}),
             extraction(origin(QStringLiteral("r3"), 4), {triplet(QStringLiteral("Alice"), QStringLiteral("lives_in"), QStringLiteral("Porto"), true, {0, 1})})},
            {});
    for (int round = 0; round < 2; ++round)
        for (GraphStore::Table table : {GraphStore::Table::Entities, GraphStore::Table::Relations, GraphStore::Table::History}) {
            const char *key = table == GraphStore::Table::History ? "seq" : "id";
            qint64 after = 0;
            for (Json page = g.dumpRows(table, after, 2); !page.empty(); page = g.dumpRows(table, after, 2)) {
                QVERIFY(page.size() <= 2);
                to->graph()->loadRows(table, page);
                after = page.back().at(key).get<qint64>();
            }
        }
    GraphFilter all;
    all.includeInvalid = true;
    const std::vector<GraphRelation> before = g.relations(all, -1), after = to->graph()->relations(all, -1);
    QCOMPARE(after.size(), before.size());
    for (std::size_t i = 0; i < before.size(); ++i) {
        QCOMPARE(after[i].id, before[i].id);
        QCOMPARE(after[i].text(), before[i].text());
        QCOMPARE(after[i].valid, before[i].valid);
        QCOMPARE(after[i].invalidatedAt, before[i].invalidatedAt);
        QCOMPARE(after[i].why, before[i].why);
        QCOMPARE(after[i].recordIds, before[i].recordIds);
        QCOMPARE(after[i].isPrivate, before[i].isPrivate);
        QCOMPARE(after[i].source, before[i].source);
        QCOMPARE(after[i].scope, before[i].scope);
    }
    QCOMPARE(to->graph()->entities({}, -1, 0).size(), g.entities({}, -1, 0).size());
    QCOMPARE(to->graph()->changesOf(QStringLiteral("r3")).size(), g.changesOf(QStringLiteral("r3")).size());
    QCOMPARE(to->graph()->similarRelations({0, 1}, {}, 0.9, 5).size(), std::size_t(1));
    // The moved history still undoes: Lisbon is valid again in the new store.
    to->graph()->revertRecords({QStringLiteral("r3")});
    QCOMPARE(texts(to->graph()->relations({}, -1)),
             (QStringList{QStringLiteral("Alice -- lives_in -> Lisbon"), QStringLiteral("Bob -- likes -> jazz")}));
    // New rows get keys of their own (no clash with the moved ones).
    to->graph()->write({extraction(origin(QStringLiteral("r4"), 5), {triplet(QStringLiteral("Cid"), QStringLiteral("likes"), QStringLiteral("golf")),
                                                                     triplet(QStringLiteral("Dan"), QStringLiteral("likes"), QStringLiteral("tea"))})},
                       {});
    QCOMPARE(to->graph()->relations({}, -1).size(), std::size_t(4));
    QCOMPARE(to->graph()->entities({}, -1, 0).size(), std::size_t(8));
    // A malformed row is refused and loads nothing.
    const Caught bad = [&] {
        try {
            to->graph()->loadRows(GraphStore::Table::History, Json::array({Json{{"seq", 999}, {"record_id", "x"}}}));
        } catch (const Error &e) {
            return Caught{true, e.kind()};
        }
        return Caught{};
    }();
    QVERIFY(bad.thrown);
    QCOMPARE(bad.kind, ErrorKind::InvalidArgument);
    QVERIFY(to->graph()->changesOf(QStringLiteral("x")).empty());
}

QTEST_GUILESS_MAIN(TestGraphStore)
#include "test_graph_store.moc"
