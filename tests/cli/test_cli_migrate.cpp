// `mneme migrate --to TARGET` in real processes: a SQLite store moved to a PostgreSQL schema (the
// cluster of the CTest fixture "postgres") and back to a SQLite file with everything kept (records,
// embeddings, state, graph), chat sessions moved between SQLite files (and left in place for a
// server), a run killed mid-way and run again with its summary, and the refusals.

#include "cli_test_macros.h"
#include "temp_store.h"
#include "tests/postgres/pg_test_util.h"
#include <mneme/memory/sqlite_chat_store.h>

#include <QFile>
#include <QProcess>
#include <QtTest>

using namespace mneme;
using Json = nlohmann::json;
using mneme::test::CliRun;
using mneme::test::PgCluster;
using mneme::test::runCli;
using mneme::test::TempStore;

namespace {

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void writeFile(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

// The lines of an export, sorted (stores list ties in their own order).
QList<QByteArray> sortedLines(const QByteArray &text)
{
    QList<QByteArray> lines = text.split('\n');
    lines.removeAll(QByteArray());
    std::sort(lines.begin(), lines.end());
    return lines;
}

} // namespace

class TestCliMigrate : public QObject
{
    Q_OBJECT

    TempStore m_dir;

    CliRun run(const QStringList &args) { return runCli(QStringLiteral(MNEME_CLI), args, m_dir.dir()); }
    // A --config file with graph memory on over `storage`.
    QString configFile(const QString &name, const Json &storage)
    {
        const QString path = m_dir.path(name + QStringLiteral(".json"));
        writeFile(path, QByteArray::fromStdString(Json{{"graph_memory", true}, {"storage", storage}}.dump()));
        return path;
    }
    QString sqliteConfig(const QString &file)
    {
        return configFile(file, Json{{"provider", "sqlite"}, {"config", {{"path", m_dir.path(file).toStdString()}}}});
    }
    QString postgresConfig(const QString &dsn) { return configFile(QUuid::createUuid().toString(QUuid::Id128), Json{{"provider", "postgres"}, {"config", {{"dsn", dsn.toStdString()}}}}); }
    QByteArray exported(const QString &config, const QString &name)
    {
        const QString file = m_dir.path(name);
        const CliRun r = run({QStringLiteral("--config"), config, QStringLiteral("export"), file, QStringLiteral("--curator")});
        return r.exitCode == 0 ? readAll(file) : r.describe();
    }
    Json graphOf(const QString &config)
    {
        const CliRun r = run({QStringLiteral("--config"), config, QStringLiteral("graph"), QStringLiteral("export"), QStringLiteral("--json"),
                              QStringLiteral("--include-invalid"), QStringLiteral("--curator")});
        return r.json();
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY2(PgCluster::load(qEnvironmentVariable("MNEME_PG_DIR")), "no PostgreSQL cluster: run the test through CTest");
    }

    // SQLite -> PostgreSQL -> SQLite: the two exports (ids, times, scopes, categories, importance,
    // source, privacy, metadata, embeddings) and the graphs are equal, with no re-embedding.
    void thereAndBackKeepsEverything()
    {
        const QString source = sqliteConfig(QStringLiteral("source.db"));
        const QStringList saves[] = {
            {QStringLiteral("Alice lives in Lisbon."), QStringLiteral("--at"), QStringLiteral("2024-03-01"), QStringLiteral("--category"),
             QStringLiteral("places"), QStringLiteral("--importance"), QStringLiteral("0.9")},
            {QStringLiteral("Alice lives in Porto."), QStringLiteral("--at"), QStringLiteral("2024-04-01"), QStringLiteral("--scope"),
             QStringLiteral("/team/ana")},
            {QStringLiteral("Maria works at Acme."), QStringLiteral("--at"), QStringLiteral("2024-04-02"), QStringLiteral("--source"),
             QStringLiteral("ana"), QStringLiteral("--private"), QStringLiteral("--metadata"), QStringLiteral(R"({"n": 1.5, "tags": ["a"]})")},
        };
        for (const QStringList &save : saves)
            EXPECT_EXIT(run(QStringList{QStringLiteral("--config"), source, QStringLiteral("remember")} + save), 0);
        const Json graphBefore = graphOf(source);
        QVERIFY2(graphBefore.is_object() && !graphBefore["relations"].empty(), graphBefore.dump().c_str());

        const QString dsn = PgCluster::freshDsn();
        const CliRun there = run({QStringLiteral("--config"), source, QStringLiteral("migrate"), QStringLiteral("--to"), dsn, QStringLiteral("--json")});
        EXPECT_JSON_OK(there);
        QCOMPARE(there.json()["records"], Json(3));
        QCOMPARE(there.json()["copied"], Json(3));
        QCOMPARE(there.json()["resumed"], Json(false));
        QVERIFY(there.json()["graph"]["relations"].get<int>() > 0);
        const QString onServer = postgresConfig(dsn);
        QVERIFY(!PgCluster::scalar(QStringLiteral("SELECT value FROM mneme_meta WHERE key = 'embedder_id'"), dsn).isEmpty());

        const QString back = m_dir.path(QStringLiteral("back.db"));
        const CliRun home = run({QStringLiteral("--config"), onServer, QStringLiteral("migrate"), QStringLiteral("--to"), back, QStringLiteral("--json")});
        EXPECT_JSON_OK(home);
        QCOMPARE(home.json()["copied"], Json(3));
        const QString backConfig = sqliteConfig(QStringLiteral("back.db"));
        // Between two schemas of one database (one location, two stores).
        const QString sibling = PgCluster::freshDsn();
        const CliRun across = run({QStringLiteral("--config"), onServer, QStringLiteral("migrate"), QStringLiteral("--to"), sibling, QStringLiteral("--json")});
        EXPECT_JSON_OK(across);
        QCOMPARE(across.json()["copied"], Json(3));

        const QList<QByteArray> before = sortedLines(exported(source, QStringLiteral("a.jsonl")));
        QCOMPARE(before.size(), 3);
        QCOMPARE(sortedLines(exported(onServer, QStringLiteral("b.jsonl"))), before);
        QCOMPARE(sortedLines(exported(backConfig, QStringLiteral("c.jsonl"))), before);
        QCOMPARE(sortedLines(exported(postgresConfig(sibling), QStringLiteral("d.jsonl"))), before);
        QCOMPARE(graphOf(onServer), graphBefore);
        QCOMPARE(graphOf(backConfig), graphBefore);
        // The moved store works: recall finds by the moved embeddings, and the graph answers.
        const CliRun recalled = run({QStringLiteral("--config"), onServer, QStringLiteral("recall"), QStringLiteral("where does Alice live"),
                                     QStringLiteral("--relations"), QStringLiteral("--json")});
        EXPECT_JSON_OK(recalled);
        QVERIFY2(!recalled.json()["matches"].empty() && !recalled.json()["relations"].empty(), recalled.describe().constData());
        // History starts with the move: one ADD a record.
        const QString id = QString::fromStdString(Json::parse(before.front().toStdString())["id"].get<std::string>());
        const CliRun history = run({QStringLiteral("--config"), backConfig, QStringLiteral("history"), id, QStringLiteral("--curator"),
                                    QStringLiteral("--json")});
        EXPECT_JSON_OK(history);
        QCOMPARE(history.json().size(), std::size_t(1));
        QCOMPARE(history.json()[0]["event"], Json("ADD"));
        // Run again: nothing to copy.
        const CliRun again = run({QStringLiteral("--config"), source, QStringLiteral("migrate"), QStringLiteral("--to"), dsn, QStringLiteral("--json")});
        EXPECT_EXIT(again, 0);
        QCOMPARE(again.json()["copied"], Json(0));
        QCOMPARE(again.json()["already"], Json(3));
        QCOMPARE(again.json()["resumed"], Json(true));
    }

    // The chat sessions kept in a SQLite store's file move into a SQLite target exactly (uids, seqs,
    // times, archived messages, flushes, block states), once; a PostgreSQL target keeps none, so they
    // stay where they are, and the command says so.
    void chatSessionsMove()
    {
        const QString source = m_dir.path(QStringLiteral("chatty.db"));
        EXPECT_EXIT(run({QStringLiteral("--db"), source, QStringLiteral("remember"), QStringLiteral("Ana likes green tea")}), 0);
        {
            SqliteChatStore chats(source);
            chats.append(QStringLiteral("trip"), {SessionMessage(ChatMessage::user(QStringLiteral("Where do we go?"))),
                                                  SessionMessage(ChatMessage::assistant(QStringLiteral("To Lisbon.")))});
            const std::optional<FlushRecord> flush = chats.beginFlush(QStringLiteral("trip"), 1, 1, 5, {QStringLiteral("facts")}, QStringLiteral("me"));
            QVERIFY(flush);
            chats.completeBlock(QStringLiteral("trip"), flush->flush, QStringLiteral("facts"), Json{{"facts", {"they go to Lisbon"}}});
            chats.append(QStringLiteral("support"), {SessionMessage(ChatMessage::user(QStringLiteral("My build fails.")))});
        }
        const auto sessionsOf = [](const QString &path) {
            SqliteChatStore chats(path);
            Json out = Json::array();
            for (const SessionInfo &s : chats.sessions()) {
                Json messages = Json::array();
                for (const SessionMessage &m : chats.messages(s.id, true))
                    messages.push_back(m.toJson());
                Json blocks = Json::object();
                for (auto [name, state] : chats.blockStates(s.id).asKeyValueRange())
                    blocks[name.toStdString()] = state;
                out.push_back({{"session", s.toJson()}, {"messages", messages}, {"blocks", blocks}});
            }
            return out;
        };
        const Json before = sessionsOf(source);
        QCOMPARE(before.size(), std::size_t(2));

        const QString target = m_dir.path(QStringLiteral("chatty-copy.db"));
        const CliRun moved = run({QStringLiteral("--db"), source, QStringLiteral("migrate"), QStringLiteral("--to"), target, QStringLiteral("--json")});
        EXPECT_JSON_OK(moved);
        QCOMPARE(moved.json()["chat_sessions"], (Json{{"copied", 2}, {"already", 0}, {"left", 0}}));
        QCOMPARE(sessionsOf(target), before);
        // Run again: nothing is copied twice; the summary counts what this run copied.
        const CliRun again = run({QStringLiteral("--db"), source, QStringLiteral("migrate"), QStringLiteral("--to"), target});
        EXPECT_EXIT(again, 0);
        QVERIFY2(again.out.contains("Migrated 0 records from ") && again.out.contains("(1 record already there from an earlier run: 1 in all)")
                     && again.out.contains("; chat: 0 sessions (2 already there)"),
                 again.describe().constData());
        QCOMPARE(sessionsOf(target), before);
        // A session added since moves on the next run.
        SqliteChatStore(source).append(QStringLiteral("later"), {SessionMessage(ChatMessage::user(QStringLiteral("One more.")))});
        const CliRun third = run({QStringLiteral("--db"), source, QStringLiteral("migrate"), QStringLiteral("--to"), target, QStringLiteral("--json")});
        EXPECT_JSON_OK(third);
        QCOMPARE(third.json()["chat_sessions"], (Json{{"copied", 1}, {"already", 2}, {"left", 0}}));
        QCOMPARE(sessionsOf(target), sessionsOf(source));
        // A server keeps no chat sessions: they stay in the source file, and a notice says where.
        const CliRun toServer = run({QStringLiteral("--db"), source, QStringLiteral("migrate"), QStringLiteral("--to"), PgCluster::freshDsn()});
        EXPECT_EXIT(toServer, 0);
        QVERIFY2(toServer.err.contains("3 chat sessions not moved") && toServer.err.contains(source.toUtf8()), toServer.describe().constData());
        QVERIFY2(toServer.out.startsWith("Migrated 1 record from "), toServer.describe().constData());
    }

    // A migrate killed mid-way (SIGKILL of the real process) and run again copies the rest: every
    // record once, none twice.
    void killedMidWayResumes()
    {
        constexpr int kRecords = 3000;
        const QString source = m_dir.path(QStringLiteral("big.db"));
        QByteArray lines;
        for (int i = 0; i < kRecords; ++i)
            lines += "Record " + QByteArray::number(i) + " about the river and the mountain number " + QByteArray::number(i % 97) + "\n";
        const CliRun filled =
            runCli(QStringLiteral(MNEME_CLI), {QStringLiteral("--db"), source, QStringLiteral("remember-many"), QStringLiteral("-"), QStringLiteral("--json")},
                   m_dir.dir(), lines);
        EXPECT_JSON_OK(filled);
        QCOMPARE(filled.json()["stored"], Json(kRecords));

        const QString dsn = PgCluster::freshDsn();
        const auto count = [&] {
            try {
                return PgCluster::scalar(QStringLiteral("SELECT count(*) FROM mneme_records"), dsn).toInt();
            } catch (const std::exception &) {
                return 0; // the schema is not made yet
            }
        };
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("MNEME_STORAGE_DIR"), m_dir.path(QStringLiteral("storage")));
        p.setProcessEnvironment(env);
        p.setWorkingDirectory(m_dir.dir());
        p.start(QStringLiteral(MNEME_CLI), {QStringLiteral("--db"), source, QStringLiteral("migrate"), QStringLiteral("--to"), dsn,
                                            QStringLiteral("--batch"), QStringLiteral("10"), QStringLiteral("--quiet")});
        QVERIFY(p.waitForStarted());
        QElapsedTimer waited;
        waited.start();
        while (count() < 200 && p.state() == QProcess::Running && waited.elapsed() < 60000)
            QTest::qWait(5);
        QVERIFY2(p.state() == QProcess::Running, "the migration ended before it could be killed; make it longer");
        p.kill();
        QVERIFY(p.waitForFinished());
        const int atKill = count();
        QVERIFY2(atKill >= 200 && atKill < kRecords, qPrintable(QString::number(atKill)));
        QCOMPARE(atKill % 10, 0); // whole batches only: each is one transaction

        const CliRun resumed = run({QStringLiteral("--db"), source, QStringLiteral("migrate"), QStringLiteral("--to"), dsn, QStringLiteral("--json")});
        EXPECT_JSON_OK(resumed);
        QCOMPARE(resumed.json()["resumed"], Json(true));
        QCOMPARE(resumed.json()["already"], Json(atKill));
        QCOMPARE(resumed.json()["copied"], Json(kRecords - atKill));
        QCOMPARE(count(), kRecords);
        QCOMPARE(PgCluster::scalar(QStringLiteral("SELECT count(DISTINCT id) FROM mneme_records"), dsn).toInt(), kRecords);
        QCOMPARE(PgCluster::scalar(QStringLiteral("SELECT count(*) FROM mneme_history"), dsn).toInt(), kRecords);
        QCOMPARE(sortedLines(exported(postgresConfig(dsn), QStringLiteral("big-pg.jsonl"))),
                 sortedLines(exported(sqliteConfig(QStringLiteral("big.db")), QStringLiteral("big-sqlite.jsonl"))));
    }

    void refusals()
    {
        const QString source = m_dir.path(QStringLiteral("refusing.db"));
        EXPECT_EXIT(run({QStringLiteral("--db"), source, QStringLiteral("remember"), QStringLiteral("one memory")}), 0);
        const auto migrate = [&](const QString &to) {
            return run({QStringLiteral("--db"), source, QStringLiteral("migrate"), QStringLiteral("--to"), to});
        };
        // The same store, however it is written.
        CliRun r = migrate(QStringLiteral("./refusing.db"));
        EXPECT_FAILURE(r, 2);
        QVERIFY2(r.err.contains("this command reads"), r.describe().constData());
        // A target holding other records.
        const QString other = m_dir.path(QStringLiteral("other.db"));
        EXPECT_EXIT(run({QStringLiteral("--db"), other, QStringLiteral("remember"), QStringLiteral("another memory")}), 0);
        r = migrate(other);
        EXPECT_FAILURE(r, 2);
        QVERIFY2(r.err.contains("not empty (1 record)"), r.describe().constData());
        // A target filled from another store.
        const QString dsn = PgCluster::freshDsn();
        EXPECT_EXIT(run({QStringLiteral("--db"), other, QStringLiteral("migrate"), QStringLiteral("--to"), dsn}), 0);
        r = migrate(dsn);
        EXPECT_FAILURE(r, 2);
        QVERIFY2(r.err.contains("being filled from another store"), r.describe().constData());
        // An empty target bound to another embedder.
        const QString small = m_dir.path(QStringLiteral("small.json"));
        writeFile(small, R"({"embedder": {"provider": "builtin", "config": {"dimension": 64}}})");
        const QString bound = m_dir.path(QStringLiteral("bound.db"));
        const CliRun saved = run({QStringLiteral("--db"), bound, QStringLiteral("--config"), small, QStringLiteral("remember"),
                                  QStringLiteral("gone soon"), QStringLiteral("--json")});
        EXPECT_JSON_OK(saved);
        EXPECT_EXIT(run({QStringLiteral("--db"), bound, QStringLiteral("--config"), small, QStringLiteral("forget"), QStringLiteral("--id"),
                         QString::fromStdString(saved.json()["id"].get<std::string>())}),
                    0);
        r = migrate(bound);
        EXPECT_FAILURE(r, 1);
        QVERIFY2(r.err.contains("dimension 64") && r.err.contains("--reembed"), r.describe().constData());
        // A password in the dsn is refused and never echoed.
        r = migrate(QStringLiteral("postgresql://mneme:s3cret-pw@127.0.0.1:1/mneme"));
        EXPECT_FAILURE(r, 2);
        QVERIFY2(!r.err.contains("s3cret-pw") && r.err.contains("PGPASSWORD"), r.describe().constData());
        // No target.
        r = run({QStringLiteral("--db"), source, QStringLiteral("migrate")});
        EXPECT_FAILURE(r, 2);
        QVERIFY2(r.err.contains("--to TARGET"), r.describe().constData());
        // Nothing was written into the source by any of these.
        const CliRun listed = run({QStringLiteral("--db"), source, QStringLiteral("list"), QStringLiteral("--json")});
        EXPECT_JSON_OK(listed);
        QCOMPARE(listed.json().size(), std::size_t(1));
    }
};

QTEST_GUILESS_MAIN(TestCliMigrate)
#include "test_cli_migrate.moc"
