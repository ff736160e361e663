// `mneme graph entities|relations|neighbours|export` and `recall --relations --as-of` on a store
// built by the CLI itself with graph_memory on (the offline extractor), in real processes.

#include "cli_test_macros.h"
#include "temp_store.h"

#include <QFile>
#include <QtTest>
#include <sqlite3.h>

using namespace mneme;
using Json = nlohmann::json;
using mneme::test::CliRun;
using mneme::test::runCli;
using mneme::test::TempStore;

namespace {

class Store
{
public:
    Store()
    {
        QFile f(m_dir.path(QStringLiteral("graph.json")));
        if (f.open(QIODevice::WriteOnly))
            f.write(R"({"graph_memory": true})");
    }
    CliRun run(QStringList args, bool graphOn = true) const
    {
        args << QStringLiteral("--db") << m_dir.path();
        if (graphOn)
            args << QStringLiteral("--config") << m_dir.path(QStringLiteral("graph.json"));
        return runCli(QStringLiteral(MNEME_CLI), args, m_dir.dir());
    }
    QString path() const { return m_dir.path(); }
    QString remember(const QString &text, const QString &at, const QStringList &extra = {}) const
    {
        const CliRun r = run(QStringList{QStringLiteral("remember"), text, QStringLiteral("--at"), at, QStringLiteral("--json")} + extra);
        return r.exitCode == 0 ? QString::fromStdString(r.json()["id"].get<std::string>()) : QString();
    }

private:
    TempStore m_dir;
};

} // namespace

class TestCliGraph : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void entities();
    void relationsAndInvalidation();
    void neighbours();
    void exportDotAndJson();
    void recallWithRelations();
    void privacy();
    void errors_data();
    void errors();
    void checkMendsTheGraph();

private:
    std::unique_ptr<Store> m_store;
};

void TestCliGraph::initTestCase()
{
    m_store = std::make_unique<Store>();
    QVERIFY(!m_store->remember(QStringLiteral("Alice lives in Lisbon."), QStringLiteral("2024-03-01")).isEmpty());
    QVERIFY(!m_store->remember(QStringLiteral("Maria is Alice's sister."), QStringLiteral("2024-03-02")).isEmpty());
    QVERIFY(!m_store->remember(QStringLiteral("Maria works at Acme."), QStringLiteral("2024-03-03")).isEmpty());
    QVERIFY(!m_store->remember(QStringLiteral("Alice lives in Porto."), QStringLiteral("2024-04-01")).isEmpty());
}

void TestCliGraph::entities()
{
    const CliRun run = m_store->run({QStringLiteral("graph"), QStringLiteral("entities"), QStringLiteral("--json")});
    EXPECT_JSON_OK(run);
    QStringList names;
    for (const Json &e : run.json())
        names << QString::fromStdString(e["name"].get<std::string>());
    QCOMPARE(names, (QStringList{QStringLiteral("Acme"), QStringLiteral("Alice"), QStringLiteral("Lisbon"), QStringLiteral("Maria"),
                                 QStringLiteral("Porto")}));
    const CliRun text = m_store->run({QStringLiteral("graph"), QStringLiteral("entities")});
    EXPECT_EXIT(text, 0);
    QVERIFY(text.out.startsWith("NAME"));
    QVERIFY(text.out.contains("Alice"));
}

void TestCliGraph::relationsAndInvalidation()
{
    const CliRun valid = m_store->run({QStringLiteral("graph"), QStringLiteral("relations"), QStringLiteral("alice"), QStringLiteral("--json")});
    EXPECT_JSON_OK(valid);
    QCOMPARE(valid.json().size(), std::size_t(2)); // lives_in Porto, sister Maria
    const CliRun all = m_store->run(
        {QStringLiteral("graph"), QStringLiteral("relations"), QStringLiteral("Alice"), QStringLiteral("--include-invalid"), QStringLiteral("--json")});
    EXPECT_JSON_OK(all);
    QCOMPARE(all.json().size(), std::size_t(3));
    bool lisbonInvalid = false;
    for (const Json &r : all.json())
        if (r["destination"] == "Lisbon")
            lisbonInvalid = r["valid"] == false && r["invalidated_at"] == "2024-04-01T00:00:00.000Z" && r["extractor"] == "offline";
    QVERIFY2(lisbonInvalid, all.json().dump().c_str());
    const CliRun then = m_store->run({QStringLiteral("graph"), QStringLiteral("relations"), QStringLiteral("--as-of"),
                                      QStringLiteral("2024-03-15"), QStringLiteral("--json")});
    EXPECT_JSON_OK(then);
    QString lives;
    for (const Json &r : then.json())
        if (r["label"] == "lives_in")
            lives = QString::fromStdString(r["destination"].get<std::string>());
    QCOMPARE(lives, QStringLiteral("Lisbon"));
    const CliRun table = m_store->run({QStringLiteral("graph"), QStringLiteral("relations"), QStringLiteral("--include-invalid")});
    EXPECT_EXIT(table, 0);
    QVERIFY2(table.out.contains("until 2024-04-01") && table.out.contains("replaced by"), table.out.constData());
}

void TestCliGraph::neighbours()
{
    const CliRun one = m_store->run({QStringLiteral("graph"), QStringLiteral("neighbours"), QStringLiteral("Maria"), QStringLiteral("--json")});
    EXPECT_JSON_OK(one);
    COMPARE_JSON(one.json()["neighbours"], (Json{"Acme", "Alice"}));
    const CliRun two = m_store->run({QStringLiteral("graph"), QStringLiteral("neighbours"), QStringLiteral("Maria"), QStringLiteral("--hops"),
                                     QStringLiteral("2"), QStringLiteral("--json")});
    EXPECT_JSON_OK(two);
    COMPARE_JSON(two.json()["neighbours"], (Json{"Acme", "Alice", "Porto"}));
    const CliRun text = m_store->run({QStringLiteral("graph"), QStringLiteral("neighbours"), QStringLiteral("Maria")});
    EXPECT_EXIT(text, 0);
    QVERIFY(text.out.startsWith("Neighbours of Maria (1 hop): "));
}

void TestCliGraph::exportDotAndJson()
{
    const CliRun dot = m_store->run({QStringLiteral("graph"), QStringLiteral("export"), QStringLiteral("--dot"), QStringLiteral("--include-invalid")});
    EXPECT_EXIT(dot, 0);
    QVERIFY(dot.out.startsWith("digraph mneme {"));
    QVERIFY(dot.out.contains("[label=\"lives_in\", style=dashed];"));
    QVERIFY(dot.out.contains("[label=\"Alice\\n(entity)\"];"));
    const CliRun json = m_store->run({QStringLiteral("graph"), QStringLiteral("export"), QStringLiteral("--json")});
    EXPECT_JSON_OK(json);
    QCOMPARE(json.json()["entities"].size(), std::size_t(5));
    QCOMPARE(json.json()["relations"].size(), std::size_t(3));
}

void TestCliGraph::recallWithRelations()
{
    const CliRun run = m_store->run({QStringLiteral("recall"), QStringLiteral("Where does Alice live?"), QStringLiteral("--relations"),
                                     QStringLiteral("--json")});
    EXPECT_JSON_OK(run);
    QVERIFY(!run.json()["relations"].empty());
    COMPARE_JSON(run.json()["relations"][0]["destination"], "Porto");
    QVERIFY(run.json()["relations"][0]["match_reasons"].size() >= 1);
    QVERIFY(!run.json()["matches"].empty());
    const CliRun then = m_store->run({QStringLiteral("recall"), QStringLiteral("Where does Alice live?"), QStringLiteral("--relations"),
                                      QStringLiteral("--as-of"), QStringLiteral("2024-03-15"), QStringLiteral("--json")});
    EXPECT_JSON_OK(then);
    COMPARE_JSON(then.json()["relations"][0]["destination"], "Lisbon");
    for (const Json &m : then.json()["matches"])
        QVERIFY(m["content"] != "Alice lives in Porto.");
    // Graph memory off: --relations is an input error.
    const CliRun off = m_store->run({QStringLiteral("recall"), QStringLiteral("Alice"), QStringLiteral("--relations")}, false);
    EXPECT_FAILURE(off, 2);
    QVERIFY(off.err.contains("graph_memory"));
}

void TestCliGraph::privacy()
{
    Store store;
    QVERIFY(!store.remember(QStringLiteral("Zoe owes Yann money."), QStringLiteral("2024-03-01"),
                            {QStringLiteral("--source"), QStringLiteral("zoe"), QStringLiteral("--private")})
                 .isEmpty());
    const CliRun anonymous = store.run({QStringLiteral("graph"), QStringLiteral("relations"), QStringLiteral("--json")});
    EXPECT_JSON_OK(anonymous);
    QVERIFY(anonymous.json().empty());
    const CliRun zoe = store.run({QStringLiteral("graph"), QStringLiteral("relations"), QStringLiteral("--source"), QStringLiteral("zoe"),
                                  QStringLiteral("--json")});
    EXPECT_JSON_OK(zoe);
    QCOMPARE(zoe.json().size(), std::size_t(1));
    const CliRun curator = store.run({QStringLiteral("graph"), QStringLiteral("entities"), QStringLiteral("--curator"), QStringLiteral("--json")});
    EXPECT_JSON_OK(curator);
    QCOMPARE(curator.json().size(), std::size_t(2));
    const CliRun hidden = store.run({QStringLiteral("graph"), QStringLiteral("neighbours"), QStringLiteral("Zoe")});
    EXPECT_FAILURE(hidden, 2);
}

void TestCliGraph::errors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::newRow("unknown subcommand") << QStringList{"graph", "nodes"} << "unknown graph command";
    QTest::newRow("missing entity") << QStringList{"graph", "neighbours"} << "needs an ENTITY";
    QTest::newRow("unknown entity") << QStringList{"graph", "relations", "Nobody"} << "no entity is named \"Nobody\"";
    QTest::newRow("entity where none is taken") << QStringList{"graph", "entities", "Alice"} << "takes no ENTITY";
    QTest::newRow("hops range") << QStringList{"graph", "neighbours", "Alice", "--hops", "3"} << "--hops must be 1 or 2";
    QTest::newRow("hops elsewhere") << QStringList{"graph", "relations", "--hops", "2"} << "--hops is for graph neighbours";
    QTest::newRow("export format") << QStringList{"graph", "export"} << "exactly one of --dot and --json";
    QTest::newRow("invalid and as of") << QStringList{"graph", "relations", "--include-invalid", "--as-of", "2024-01-01"} << "exclude each other";
    QTest::newRow("bad time") << QStringList{"graph", "relations", "--as-of", "yesterday"} << "--as-of";
}

void TestCliGraph::errors()
{
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    const CliRun run = m_store->run(args);
    EXPECT_FAILURE(run, 2);
    QVERIFY2(run.err.contains(message.toUtf8()), run.describe().constData());
}

void TestCliGraph::checkMendsTheGraph()
{
    Store store;
    QVERIFY(!store.remember(QStringLiteral("Alice lives in Lisbon."), QStringLiteral("2024-03-01")).isEmpty());
    QVERIFY(!store.remember(QStringLiteral("Bob likes jazz."), QStringLiteral("2024-03-02")).isEmpty());
    EXPECT_JSON_OK(store.run({QStringLiteral("check"), QStringLiteral("--json")}));
    // An entity deleted behind the graph's back: its relation points at nothing.
    sqlite3 *db = nullptr;
    QCOMPARE(sqlite3_open(store.path().toUtf8().constData(), &db), SQLITE_OK);
    QCOMPARE(sqlite3_exec(db, "DELETE FROM graph_entities WHERE norm = 'jazz'", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    const CliRun found = store.run({QStringLiteral("check"), QStringLiteral("--json")});
    EXPECT_EXIT(found, 1);
    QVERIFY(found.json()["problems"].size() >= 1);
    for (const Json &p : found.json()["problems"])
        QVERIFY2(QString::fromStdString(p.get<std::string>()).startsWith(QStringLiteral("the graph has")), p.dump().c_str());
    const CliRun repaired = store.run({QStringLiteral("check"), QStringLiteral("--repair"), QStringLiteral("--json")});
    EXPECT_JSON_OK(repaired);
    QVERIFY(!repaired.json()["repaired"].empty());
    EXPECT_JSON_OK(store.run({QStringLiteral("check"), QStringLiteral("--json")}));
    const CliRun relations = store.run({QStringLiteral("graph"), QStringLiteral("relations"), QStringLiteral("--json")});
    EXPECT_JSON_OK(relations);
    QCOMPARE(relations.json().size(), std::size_t(1)); // Alice's, not the one that pointed at nothing
}

QTEST_GUILESS_MAIN(TestCliGraph)
#include "test_cli_graph.moc"
