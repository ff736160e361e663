// What the postgres storage plugin does beyond the contract (test_storage_contract runs that on it):
// its configuration, the password kept out of every error, the schema and its versions, several
// processes writing at once, and Memory on it. On the cluster of the CTest fixture "postgres".

#include "fake_embedder.h"
#include "pg_test_util.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/chat_memory_config.h>
#include <mneme/memory/memory.h>

#include <QProcess>
#include <QtTest>

using namespace mneme;

namespace {

QString errorOf(const std::function<void()> &f, ErrorKind *kind = nullptr)
{
    try {
        f();
    } catch (const Error &e) {
        if (kind)
            *kind = e.kind();
        return e.message();
    }
    return QString();
}

std::unique_ptr<StorageBackend> openPg(const QString &dsn)
{
    return PluginRegistry::instance().createStorage(QStringLiteral("postgres"), Json{{"dsn", dsn.toStdString()}});
}

} // namespace

class TestPostgresStorage : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QVERIFY2(test::PgCluster::load(qEnvironmentVariable("MNEME_PG_DIR")), "no PostgreSQL cluster: run the test through CTest"); }

    void configIsChecked_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("says");
        // (No raw string literals here: moc stops reading the class at one.)
        QTest::newRow("no dsn") << QStringLiteral("{}") << QStringLiteral("needs \"dsn\"");
        QTest::newRow("empty dsn") << QStringLiteral("{\"dsn\": \"\"}") << QStringLiteral("\"dsn\" must be");
        QTest::newRow("unknown key") << QStringLiteral("{\"dsn\": \"host=x\", \"pasword\": \"x\"}")
                                     << QStringLiteral("unknown postgres storage config key \"pasword\"");
        QTest::newRow("bad timeout") << QStringLiteral("{\"dsn\": \"host=x\", \"connect_timeout_s\": 0}") << QStringLiteral("connect_timeout_s");
        QTest::newRow("not a dsn") << QStringLiteral("{\"dsn\": \"host='unterminated\"}") << QStringLiteral("is not a libpq connection string");
    }
    void configIsChecked()
    {
        QFETCH(QString, config);
        QFETCH(QString, says);
        ErrorKind kind = ErrorKind::Internal;
        const QString message =
            errorOf([&] { PluginRegistry::instance().createStorage(QStringLiteral("postgres"), Json::parse(config.toStdString())); }, &kind);
        QCOMPARE(kind, ErrorKind::InvalidArgument);
        QVERIFY2(message.contains(says), qPrintable(message));
    }

    // A password never reaches an error: not one written into the dsn (refused), not a wrong one
    // given in the environment (the login fails, saying how to give it).
    void passwordStaysOutOfErrors()
    {
        const QString secret = QStringLiteral("Sup3r-secret-pw");
        for (const QString &dsn : {test::PgCluster::dsnFor(QStringLiteral("public")) + QStringLiteral(" password=") + secret,
                                   QStringLiteral("postgresql://mneme:%1@127.0.0.1:%2/mneme").arg(secret, qEnvironmentVariable("PGPORT"))}) {
            ErrorKind kind = ErrorKind::Internal;
            const QString message = errorOf([&] { openPg(dsn); }, &kind);
            QCOMPARE(kind, ErrorKind::InvalidArgument);
            QVERIFY2(message.contains(QLatin1String("PGPASSWORD")), qPrintable(message));
            QVERIFY2(!message.contains(secret), qPrintable(message));
        }
        const QByteArray passfile = qgetenv("PGPASSFILE");
        qputenv("PGPASSFILE", "/dev/null");
        qputenv("PGPASSWORD", secret.toUtf8());
        ErrorKind kind = ErrorKind::Internal;
        const QString message = errorOf([&] { openPg(test::PgCluster::dsnFor(QStringLiteral("public"))); }, &kind);
        qunsetenv("PGPASSWORD");
        qputenv("PGPASSFILE", passfile);
        QCOMPARE(kind, ErrorKind::Storage);
        QVERIFY2(message.contains(QLatin1String("password authentication failed")), qPrintable(message));
        QVERIFY2(!message.contains(secret), qPrintable(message));
        // The right password from the environment works as well as the .pgpass file.
        QVERIFY(openPg(test::PgCluster::freshDsn())->info().location.startsWith(QLatin1String("postgresql://mneme@127.0.0.1:")));
    }

    void unreachableServerSaysWhatToCheck()
    {
        ErrorKind kind = ErrorKind::Internal;
        const QString message = errorOf([&] { openPg(QStringLiteral("host=127.0.0.1 port=1 dbname=mneme user=mneme connect_timeout=2")); }, &kind);
        QCOMPARE(kind, ErrorKind::Storage);
        QVERIFY2(message.contains(QLatin1String("check the dsn")), qPrintable(message));
    }

    void schemaIsVersioned()
    {
        const QString dsn = test::PgCluster::freshDsn();
        auto s = openPg(dsn);
        const int latest = s->info().schemaVersion;
        QVERIFY(latest >= 2); // step 2: the graph tables
        s->close();
        auto again = openPg(dsn); // an existing schema is opened as it is
        QCOMPARE(again->info().schemaVersion, latest);
        again->close();
        test::PgCluster::run(QStringLiteral("UPDATE mneme_meta SET value = '99' WHERE key = 'schema_version'"), dsn);
        ErrorKind kind = ErrorKind::Internal;
        const QString message = errorOf([&] { openPg(dsn); }, &kind);
        QCOMPARE(kind, ErrorKind::SchemaTooNew);
        QVERIFY2(message.contains(QLatin1String("upgrade Mneme")), qPrintable(message));
    }

    // A store made before graph memory (schema 1) gains the graph tables when opened, its records kept.
    void graphTablesArriveByMigration()
    {
        const QString dsn = test::PgCluster::freshDsn();
        MemoryRecord r = MemoryRecord::create(QStringLiteral("Alice lives in Lisbon"));
        {
            auto s = openPg(dsn);
            s->save({r});
        }
        test::PgCluster::run(QStringLiteral("DROP TABLE mneme_graph_entities, mneme_graph_relations, mneme_graph_sources, "
                                            "mneme_graph_history; UPDATE mneme_meta SET value = '1' WHERE key = 'schema_version'"),
                             dsn);
        auto s = openPg(dsn);
        QVERIFY(s->info().schemaVersion >= 2);
        QVERIFY(s->info().has(StorageInfo::Graph));
        QCOMPARE(s->get(r.id)->content, r.content);
        GraphExtraction x;
        x.origin = GraphOrigin{r.id, QStringLiteral("/"), QString(), false, r.createdAt};
        x.entities.push_back({QStringLiteral("Alice"), QStringLiteral("person"), {}});
        QCOMPARE(s->graph()->write({x}, {}).entitiesAdded, 1);
        QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT count(*) FROM mneme_graph_history"), dsn), QStringLiteral("1"));
    }

    // Two processes (hosts, as far as the server can tell) save at once, each its own records and the
    // same shared ones with saveUnlessIdentical: none is lost, none is stored twice.
    void twoWritersLoseAndDuplicateNothing()
    {
        const QString dsn = test::PgCluster::freshDsn();
        openPg(dsn)->close(); // the schema, so that both writers find it
        constexpr int kOwn = 150, kShared = 60;
        QProcess a, b;
        for (QProcess *p : {&a, &b}) {
            p->setProcessChannelMode(QProcess::ForwardedErrorChannel);
            p->start(QStringLiteral(PG_WRITER_PATH), {dsn, p == &a ? QStringLiteral("a") : QStringLiteral("b"), QString::number(kOwn), QString::number(kShared)});
        }
        for (QProcess *p : {&a, &b}) {
            QVERIFY(p->waitForFinished(120000));
            QCOMPARE(p->exitCode(), 0);
            QCOMPARE(p->readAllStandardOutput().trimmed(), QByteArray("done"));
        }
        auto s = openPg(dsn);
        QCOMPARE(s->count({}), 2 * kOwn + kShared);
        for (int i = 0; i < kShared; ++i) {
            RecordFilter f;
            f.contentContains = QStringLiteral("shared record %1").arg(i);
            f.scopes = {QStringLiteral("/shared")};
            int exact = 0;
            for (const MemoryRecord &r : s->list(f, -1, 0))
                exact += r.content == f.contentContains;
            QCOMPARE(exact, 1);
        }
        for (const QString &tag : {QStringLiteral("a"), QStringLiteral("b")}) {
            RecordFilter f;
            f.scopes = {QStringLiteral("/writers/") + tag};
            QCOMPARE(s->count(f), kOwn);
        }
    }

    // Memory on a PostgreSQL store: remember, recall (vectors and keywords), forget and undo.
    void memoryWorksOnIt()
    {
        MemoryConfig config;
        config.storage = Json{{"provider", "postgres"}, {"config", {{"dsn", test::PgCluster::freshDsn().toStdString()}}}};
        Memory m(config, nullptr, std::make_shared<test::FakeEmbedder>());
        const MemoryRecord tea = m.remember(QStringLiteral("Ana drinks green tea every morning"));
        m.remember(QStringLiteral("The build server lives in Lisbon"));
        QCOMPARE(m.remember(QStringLiteral("Ana drinks green tea every morning")).id, tea.id); // stored once
        const QList<MemoryMatch> found = m.recall(QStringLiteral("green tea"));
        QVERIFY(!found.isEmpty());
        QCOMPARE(found.first().record.id, tea.id);
        QVERIFY(m.storage().location().startsWith(QLatin1String("postgresql://")));
        ForgetOptions f;
        f.ids = {tea.id};
        QCOMPARE(m.forget(f), 1);
        QVERIFY(!m.get(tea.id));
        QCOMPARE(m.undo(tea.id).content, tea.content);
        QCOMPARE(m.get(tea.id)->content, tea.content);
        QCOMPARE(m.history(tea.id).size(), 3);
        // Chat sessions are kept in a SQLite file: a chat memory over this store needs one of its own.
        ErrorKind kind = ErrorKind::Internal;
        const QString message = errorOf([&] { ChatMemory::defaultStore(ChatMemoryConfig(), &m); }, &kind);
        QCOMPARE(kind, ErrorKind::InvalidArgument);
        QVERIFY2(message.contains(QLatin1String("\"storage\" key")), qPrintable(message));
    }
};

QTEST_GUILESS_MAIN(TestPostgresStorage)
#include "test_postgres_storage.moc"
