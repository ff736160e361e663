// What the postgres storage plugin does beyond the contract (test_storage_contract runs that on it):
// its configuration, the password kept out of every error, the schema and its versions, several
// processes writing at once, the change log read in commit order, several hosts (processes with
// index folders of their own) sharing one memory, parallel reads, and Memory on it. On the cluster of
// the CTest fixture "postgres".

#include "fake_embedder.h"
#include "pg_test_util.h"
#include "plugins/storage/postgres/postgres_storage.h"
#include "plugins/storage/postgres/text_words.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/chat_memory_config.h>
#include <mneme/memory/memory.h>

#include <QProcess>
#include <QRandomGenerator>
#include <QSemaphore>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <set>
#include <thread>

using namespace mneme;
using mneme::test::errorOf;

namespace {

std::unique_ptr<StorageBackend> openPg(const QString &dsn)
{
    return PluginRegistry::instance().createStorage(QStringLiteral("postgres"), Json{{"dsn", dsn.toStdString()}});
}

MemoryRecord vectorRecord(const QString &content, std::vector<float> embedding)
{
    MemoryRecord r = MemoryRecord::create(content);
    r.embedding = std::move(embedding);
    return r;
}

// A pg_peer process: a host of its own (its own connection pool and vector index folder), asked one
// line at a time.
class Peer
{
public:
    Peer(const QString &dsn, const QString &indexDir, int annThreshold)
    {
        m_p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        m_p.start(QStringLiteral(PG_PEER_PATH), {dsn, indexDir, QString::number(annThreshold)});
    }
    ~Peer()
    {
        m_p.closeWriteChannel();
        if (!m_p.waitForFinished(30000))
            m_p.kill();
    }
    void send(const QString &line) { m_p.write(line.toUtf8() + '\n'); }
    QString answer()
    {
        while (!m_p.canReadLine())
            if (!m_p.waitForReadyRead(120000))
                return QStringLiteral("no answer");
        return QString::fromUtf8(m_p.readLine()).trimmed();
    }
    QString ask(const QString &line)
    {
        send(line);
        return answer();
    }

private:
    QProcess m_p;
};

// A keyword search's (id, score) pairs, best first.
QList<QPair<QString, double>> keywordScores(StorageBackend &s, const QString &text, const RecordFilter &filter = RecordFilter())
{
    QList<QPair<QString, double>> out;
    for (const ScoredRecord &r : s.keywordSearch(text, filter, 50, 0.5))
        out.append({r.record.id, r.score});
    return out;
}

// A keyword search through the contract: (id, score) pairs, best first, and which answered it.
QList<QPair<QString, double>> keywordAnswer(StorageBackend &s, const QString &text, const RecordFilter &filter, double contextWeight,
                                            QString *answer)
{
    SearchRequest q;
    q.kind = SearchRequest::Kind::Keyword;
    q.text = text;
    q.filter = filter;
    q.limit = 50;
    q.contextWeight = contextWeight;
    const SearchResult r = s.find(q);
    *answer = r.answer.detail;
    QList<QPair<QString, double>> out;
    for (const ScoredRecord &m : r.records)
        out.append({m.record.id, m.score});
    return out;
}

// Whether two keyword searches found the same records in the same order with the same scores.
bool sameMatches(const std::vector<KeywordIndex::Match> &a, const std::vector<KeywordIndex::Match> &b)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].rid != b[i].rid || std::abs(a[i].score - b[i].score) > 1e-9)
            return false;
    return true;
}

// Whether two lists of scores name the same records in the same order with the same scores.
bool sameScores(const QList<QPair<QString, double>> &a, const QList<QPair<QString, double>> &b)
{
    if (a.size() != b.size())
        return false;
    for (qsizetype i = 0; i < a.size(); ++i)
        if (a[i].first != b[i].first || std::abs(a[i].second - b[i].second) > 1e-9)
            return false;
    return true;
}

// A tsvector's text form of these words, each at one position (as the server writes 'word':1).
std::string tsv(const QStringList &words)
{
    std::string out;
    int position = 1;
    for (const QString &w : words)
        out += (out.empty() ? "'" : " '") + w.toStdString() + "':" + std::to_string(position++);
    return out;
}

} // namespace

class TestPostgresStorage : public QObject
{
    Q_OBJECT

private:
    // The store of the keyword answer tests, filled once: 600 records in two scopes, some private,
    // some with a context, then a few updated and deleted.
    PostgresStorage::Options keywordCorpus()
    {
        if (!m_corpus.dsn.isEmpty())
            return m_corpus;
        PostgresStorage::Options o;
        o.dsn = test::PgCluster::freshDsn();
        o.indexDir = m_corpusDir.path();
        o.listen = false;
        const QStringList texts{QStringLiteral("Ana drinks green tea in Lisbon, cup %1"),
                                QStringLiteral("The teas were drinking well on day %1"),
                                QStringLiteral("Meeting notes about the review, item %1"),
                                QStringLiteral("Bob's plan for the week %1 of the notes"),
                                QStringLiteral("Notes on Lisbon trams and green hills, page %1"),
                                QStringLiteral("Notes: the place serves tea, visit %1")};
        // Words of every commonness: the texts' in a sixth of the records or more (over the cap), and
        // these in fewer.
        const std::vector<std::pair<int, QString>> rarer{{12, QStringLiteral(" at the Café Müller")},
                                                         {20, QStringLiteral(" near Zanzibar")},
                                                         {13, QStringLiteral(", a naïve budget")},
                                                         {14, QStringLiteral(" in the garden")}};
        std::vector<MemoryRecord> records;
        for (int i = 0; i < 600; ++i) {
            QString content = texts[i % texts.size()].arg(i);
            for (const auto &[every, words] : rarer)
                if (i % every == 0)
                    content += words;
            if (i % 100 == 7)
                content += QStringLiteral(", a quokka smiled");
            MemoryRecord r = MemoryRecord::create(content);
            r.scope = i % 3 ? QStringLiteral("/team/b") : QStringLiteral("/team/a");
            r.source = i % 2 ? QStringLiteral("bob") : QStringLiteral("ana");
            r.isPrivate = i % 10 == 0;
            if (i % 4 == 0)
                r.context = QStringLiteral("they spoke of tea and Zanzibar, again and again and again");
            records.push_back(r);
        }
        PostgresStorage storage(o);
        StorageBackend &s = storage; // the contract's operations
        s.save(records);
        for (int i = 1; i < 60; i += 6) {
            MemoryRecord changed = records[std::size_t(i)];
            changed.content = QStringLiteral("Now about green tea and a quokka in Lisbon, %1").arg(i);
            changed.context = i % 12 == 1 ? QStringLiteral("zanzibar") : QString();
            s.update(changed);
        }
        RecordFilter doomed;
        for (int i = 100; i < 600; i += 50)
            doomed.ids << records[std::size_t(i)].id;
        s.remove(doomed);
        m_corpus = o;
        return o;
    }
    QTemporaryDir m_corpusDir;
    PostgresStorage::Options m_corpus;

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
        QTest::newRow("bad change log size") << QStringLiteral("{\"dsn\": \"host=x\", \"change_log_keep\": 0}")
                                             << QStringLiteral("\"change_log_keep\" must be a whole number of change-log entries from 1");
        QTest::newRow("bad vector_search") << QStringLiteral("{\"dsn\": \"host=x\", \"vector_search\": \"server\"}")
                                           << QStringLiteral("\"vector_search\" must be \"auto\"");
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

    // This cluster's server has no pgvector: "auto" searches with the per-process index, and "pgvector"
    // is refused, saying what to do (test_pgvector covers a server with it).
    void pgvectorIsAskedOfAServerWithout()
    {
        QTemporaryDir dir;
        const QString dsn = test::PgCluster::freshDsn();
        const Json config{{"dsn", dsn.toStdString()}, {"index_dir", dir.path().toStdString()}};
        PostgresStorage automatic(PostgresStorage::Options::fromJson(config));
        QVERIFY(!automatic.searchesWithPgvector());
        QVERIFY(automatic.vectorExtension().isEmpty());
        Json forced = config;
        forced["vector_search"] = "pgvector";
        ErrorKind kind = ErrorKind::Internal;
        const QString message = errorOf([&] { PostgresStorage s(PostgresStorage::Options::fromJson(forced)); }, &kind);
        QCOMPARE(kind, ErrorKind::Storage);
        QVERIFY2(message.contains(QLatin1String("does not have the extension `vector` (pgvector)")), qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("\"vector_search\" to \"auto\" or \"local\"")), qPrintable(message));
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
        QVERIFY(latest >= 3); // step 3: the graph tables
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

    // A store made before graph memory (schema 2) gains the graph tables when opened, its records kept.
    void graphTablesArriveByMigration()
    {
        const QString dsn = test::PgCluster::freshDsn();
        MemoryRecord r = MemoryRecord::create(QStringLiteral("Alice lives in Lisbon"));
        {
            auto s = openPg(dsn);
            s->save({r});
        }
        test::PgCluster::run(QStringLiteral("DROP TABLE mneme_graph_entities, mneme_graph_relations, mneme_graph_sources, "
                                            "mneme_graph_history; UPDATE mneme_meta SET value = '2' WHERE key = 'schema_version'"),
                             dsn);
        auto s = openPg(dsn);
        QVERIFY(s->info().schemaVersion >= 3);
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

    // Change-log entries are numbered in commit order: a writer that commits late (held between its
    // entry and its COMMIT) makes the others' entries wait, so a reader that looked at the log in
    // between skips nothing (with sequence values alone it would have moved past the late one's).
    void changeLogIsReadInCommitOrder()
    {
        QTemporaryDir dir;
        PostgresStorage::Options o;
        o.dsn = test::PgCluster::freshDsn();
        o.indexDir = dir.path();
        PostgresStorage late(o), early(o), reader(o);
        late.save({vectorRecord(QStringLiteral("first"), {1, 0, 0})});
        const RecordFilter all;
        QCOMPARE(reader.search({1, 0, 0}, all, 10).size(), std::size_t(1));
        QSemaphore held, release, earlyDone;
        std::atomic<bool> armed{true};
        late.setBeforeCommitHook([&] {
            if (armed.exchange(false)) {
                held.release();
                release.acquire();
            }
        });
        std::thread slow([&] { late.save({vectorRecord(QStringLiteral("committed late"), {0, 1, 0})}); });
        held.acquire();
        std::thread quick([&] {
            early.save({vectorRecord(QStringLiteral("ready early"), {0, 0, 1})});
            earlyDone.release();
        });
        // The early writer cannot commit its entry while the late one holds the log.
        QVERIFY(!earlyDone.tryAcquire(1, 500));
        reader.syncIndex();
        QCOMPARE(reader.search({1, 0, 0}, all, 10).size(), std::size_t(1));
        release.release();
        slow.join();
        quick.join();
        QStringList found;
        for (const ScoredRecord &s : reader.search({1, 1, 1}, all, 10))
            found << s.record.content;
        found.sort();
        QCOMPARE(found, QStringList({QStringLiteral("committed late"), QStringLiteral("first"), QStringLiteral("ready early")}));
    }

    // A process that only reads learns of another's writes from their notifications: its index is
    // brought up to date by the listener thread, before its next search asks.
    void notificationsBringTheIndexUpToDate()
    {
        QTemporaryDir dir;
        PostgresStorage::Options o;
        o.dsn = test::PgCluster::freshDsn();
        o.indexDir = dir.path();
        PostgresStorage writer(o), reader(o);
        writer.save({vectorRecord(QStringLiteral("first"), {1, 0, 0})});
        QCOMPARE(reader.search({1, 0, 0}, RecordFilter(), 10).size(), std::size_t(1)); // loads its index
        writer.save({vectorRecord(QStringLiteral("second"), {0, 1, 0})});
        QTRY_VERIFY_WITH_TIMEOUT(reader.indexStats().notified >= 1, 20000);
        QTRY_COMPARE_WITH_TIMEOUT(reader.indexStats().vectors, std::size_t(2), 20000);
        const qint64 replayed = reader.indexStats().replayed;
        QCOMPARE(reader.search({0, 1, 0}, RecordFilter(), 1).front().record.content, QStringLiteral("second"));
        QCOMPARE(reader.indexStats().replayed, replayed); // nothing left for the search to apply
        // A store with "listen": false has no listener; its searches still see every write.
        o.listen = false;
        PostgresStorage quiet(o);
        QCOMPARE(quiet.search({0, 1, 0}, RecordFilter(), 10).size(), std::size_t(2));
        writer.save({vectorRecord(QStringLiteral("third"), {0, 0, 1})});
        QCOMPARE(quiet.search({0, 0, 1}, RecordFilter(), 1).front().record.content, QStringLiteral("third"));
        QCOMPARE(quiet.indexStats().notified, 0);
    }

    // Several hosts on one server: processes with index folders of their own write at once and recall
    // each other's records. No record is lost or stored twice; privacy is the same everywhere; a
    // record saved on one host is in the very next search of another (each search first applies the
    // change log up to the moment it starts); a host that restarts reads its index file and catches up.
    void severalHostsShareOneMemory()
    {
        const QString dsn = test::PgCluster::freshDsn();
        QTemporaryDir dirA, dirB;
        constexpr int kBulk = 300, kThreshold = 200; // past the threshold: the HNSW graph is searched
        auto a = std::make_unique<Peer>(dsn, dirA.path(), kThreshold);
        auto b = std::make_unique<Peer>(dsn, dirB.path(), kThreshold);
        QCOMPARE(a->ask(QStringLiteral("count")), QStringLiteral("count 0"));
        QCOMPARE(b->ask(QStringLiteral("count")), QStringLiteral("count 0"));
        a->send(QStringLiteral("bulk a %1").arg(kBulk)); // both at once
        b->send(QStringLiteral("bulk b %1").arg(kBulk));
        QCOMPARE(a->answer(), QStringLiteral("bulk done"));
        QCOMPARE(b->answer(), QStringLiteral("bulk done"));
        for (int i = 0; i < 20; ++i) {
            Peer *writer = i % 2 ? a.get() : b.get();
            Peer *reader = i % 2 ? b.get() : a.get();
            const QString content = QStringLiteral("fact %1 that only the other host has seen, zebra %2").arg(i).arg(i * i);
            QVERIFY(writer->ask(QStringLiteral("save 0 w ") + content).startsWith(QLatin1String("saved ")));
            const QString found = reader->ask(QStringLiteral("find r ") + content);
            QVERIFY2(found.startsWith(QStringLiteral("found ") + content), qPrintable(found));
            if (i == 10) { // the graph is built in the background by now, or waited for
                QCOMPARE(reader->ask(QStringLiteral("wait")), QStringLiteral("waited"));
                QVERIFY(reader->ask(QStringLiteral("stats")).startsWith(QLatin1String("stats 1 ")));
            }
        }
        // The same content saved by both hosts is stored once.
        const QString both = a->ask(QStringLiteral("save 0 w the same words from two hosts"));
        QCOMPARE(b->ask(QStringLiteral("save 0 w the same words from two hosts")), both);
        // Privacy: a private record is found for its own source only, on every host.
        const QString secret = QStringLiteral("alice keeps her locker code under the blue mug");
        QVERIFY(a->ask(QStringLiteral("save 1 alice ") + secret).startsWith(QLatin1String("saved ")));
        for (Peer *p : {a.get(), b.get()}) {
            QVERIFY(!p->ask(QStringLiteral("find bob ") + secret).contains(secret));
            QVERIFY(p->ask(QStringLiteral("find alice ") + secret).startsWith(QStringLiteral("found ") + secret));
        }
        const QString total = QStringLiteral("count %1").arg(2 * kBulk + 20 + 2);
        QCOMPARE(a->ask(QStringLiteral("count")), total);
        QCOMPARE(b->ask(QStringLiteral("count")), total);
        // B stops (writing its index file); A writes meanwhile; B comes back from its file and catches up.
        QCOMPARE(b->ask(QStringLiteral("wait")), QStringLiteral("waited"));
        b.reset();
        const QString meanwhile = QStringLiteral("written while the other host was down, quokka");
        QVERIFY(a->ask(QStringLiteral("save 0 w ") + meanwhile).startsWith(QLatin1String("saved ")));
        b = std::make_unique<Peer>(dsn, dirB.path(), kThreshold);
        QVERIFY(b->ask(QStringLiteral("find r ") + meanwhile).startsWith(QStringLiteral("found ") + meanwhile));
        QCOMPARE(b->ask(QStringLiteral("stats")), QStringLiteral("stats 1 1 0")); // a graph, from the file, no full load
        QVERIFY(QDir(dirB.path()).entryList({QStringLiteral("pg-*.hnsw")}, QDir::Files).size() == 1);
    }

    // The change log keeps its newest change_log_keep entries. A process whose index is older than the
    // oldest kept entry (it was away while the log moved on) reloads it whole, and finds every record;
    // one that is not catches up from the entries as before; a reset starts the log afresh.
    void changeLogIsPrunedAndLaggingPeersConverge()
    {
        QTemporaryDir dirW, dirR;
        PostgresStorage::Options o;
        o.dsn = test::PgCluster::freshDsn();
        o.changeLogKeep = 5;
        o.listen = false; // the reader's index moves only when it searches
        o.indexDir = dirW.path();
        PostgresStorage writerStore(o);
        StorageBackend &writer = writerStore; // (the store's own remove() and reset() are its helpers')
        o.indexDir = dirR.path();
        PostgresStorage reader(o);
        const auto entries = [&] { return test::PgCluster::scalar(QStringLiteral("SELECT count(*) FROM mneme_changes"), o.dsn).toInt(); };
        const auto prunedThrough = [&] {
            return test::PgCluster::scalar(QStringLiteral("SELECT value FROM mneme_meta WHERE key = 'changes_pruned_through'"), o.dsn)
                .toLongLong();
        };
        writer.save({vectorRecord(QStringLiteral("before"), {1, 0, 0})});
        QCOMPARE(reader.search({1, 0, 0}, RecordFilter(), 10).size(), std::size_t(1));
        const qint64 readerAt = reader.indexStats().seq;
        for (int i = 0; i < 30; ++i)
            writer.save({vectorRecord(QStringLiteral("while away %1").arg(i), {float(i), 1, 0})});
        QVERIFY(entries() <= 5);
        QVERIFY(prunedThrough() > readerAt);
        // The lagging reader reloads: every record is found, none twice.
        const qint64 loads = reader.indexStats().fullLoads;
        const auto all = reader.search({1, 1, 0}, RecordFilter(), 100);
        QCOMPARE(all.size(), std::size_t(31));
        QSet<QString> ids;
        for (const ScoredRecord &r : all)
            ids.insert(r.record.id);
        QCOMPARE(ids.size(), 31);
        QCOMPARE(reader.indexStats().fullLoads, loads + 1);
        // A reader within the kept entries replays them.
        const qint64 replayed = reader.indexStats().replayed;
        writer.save({vectorRecord(QStringLiteral("after"), {0, 0, 1})});
        RecordFilter after;
        after.contentContains = QStringLiteral("after");
        QCOMPARE(writer.count(after), 1);
        QCOMPARE(reader.search({0, 0, 1}, RecordFilter(), 1).front().record.content, QStringLiteral("after"));
        QCOMPARE(reader.indexStats().fullLoads, loads + 1);
        QCOMPARE(reader.indexStats().replayed, replayed + 1);
        // Deletes are pruned like inserts: the lagging reader does not find a deleted record.
        RecordFilter away;
        away.contentContains = QStringLiteral("while away");
        for (const MemoryRecord &r : writer.list(away, 10, 0)) {
            RecordFilter one;
            one.ids = {r.id};
            QCOMPARE(writer.remove(one), 1);
        }
        QVERIFY(reader.indexStats().seq < prunedThrough());
        QCOMPARE(reader.search({1, 1, 0}, RecordFilter(), 100).size(), std::size_t(32 - 10));
        // A reset empties the log and its mark; the next writes are caught up from entries again.
        writer.reset(QStringLiteral("/"));
        QCOMPARE(prunedThrough(), 0);
        writer.save({vectorRecord(QStringLiteral("afresh"), {1, 0, 0})});
        QCOMPARE(reader.search({1, 0, 0}, RecordFilter(), 10).size(), std::size_t(1));
        writer.save({vectorRecord(QStringLiteral("afresh too"), {0, 1, 0})});
        const qint64 loadsAfterReset = reader.indexStats().fullLoads;
        QCOMPARE(reader.search({0, 1, 0}, RecordFilter(), 10).size(), std::size_t(2));
        QCOMPARE(reader.indexStats().fullLoads, loadsAfterReset);
    }

    // Past ann_threshold the index becomes an HNSW graph built in the background; waitForIndex() waits
    // for it and takes it, and it is written to index_dir, named without the user or a password.
    void graphIsBuiltAndWritten()
    {
        QTemporaryDir dir;
        PostgresStorage::Options o;
        o.dsn = test::PgCluster::freshDsn();
        o.indexDir = dir.path();
        o.annThreshold = 100;
        PostgresStorage s(o);
        std::vector<MemoryRecord> records;
        for (int i = 0; i < 3000; ++i) {
            QRandomGenerator rng(quint32(i) + 1); // a vector of its own
            std::vector<float> v(32);
            for (float &x : v)
                x = float(rng.generateDouble() - 0.5);
            records.push_back(vectorRecord(QStringLiteral("vector %1").arg(i), v));
        }
        s.save(records);
        s.syncIndex(); // loads 3,000 vectors: past the threshold, the graph build starts
        s.waitForIndex();
        const PostgresStorage::IndexStats stats = s.indexStats();
        QVERIFY(stats.approximate);
        QCOMPARE(stats.builds, 1);
        QCOMPARE(stats.vectors, std::size_t(3000));
        QVERIFY(stats.saves >= 1);
        QVERIFY(QFileInfo::exists(s.indexFilePath()));
        QVERIFY(s.indexFilePath().startsWith(dir.path() + QStringLiteral("/pg-")));
        QVERIFY(!s.indexFilePath().contains(qEnvironmentVariable("PGUSER")));
        VectorSearchAnswer answer; // what a recall's stats report
        const auto found = s.search(records[1234].embedding, RecordFilter(), 1, &answer);
        QCOMPARE(found.size(), std::size_t(1));
        QCOMPARE(found.front().record.content, records[1234].content);
        QCOMPARE(answer.method, VectorSearchAnswer::Method::Index);
        QVERIFY(!answer.indexBuilding);
        QCOMPARE(answer.detail, QStringLiteral("HNSW graph of 3,000 records"));
    }

    // The aggregates a batch of saves asks for (categories, child scopes, the newest records of each
    // scope) are kept between calls and stay exact: this process's inserts are added to them, and a
    // write of another process (an insert, a delete, an update, a reset) is seen by the next call.
    void keptAggregatesSeeEveryWrite()
    {
        QTemporaryDir dirA, dirB;
        PostgresStorage::Options o;
        o.dsn = test::PgCluster::freshDsn();
        o.indexDir = dirA.path();
        PostgresStorage storeA(o);
        o.indexDir = dirB.path();
        PostgresStorage storeB(o);
        StorageBackend &a = storeA, &b = storeB; // (the store's own remove() and reset() are its helpers')
        const auto record = [](const QString &content, const QString &scope, const QStringList &categories) {
            MemoryRecord r = vectorRecord(content, {1, 0, 0});
            r.scope = scope;
            r.categories = categories;
            return r;
        };
        RecordFilter below;
        below.scopes = {QStringLiteral("/p")};
        const auto samplesOf = [&](StorageBackend &s) {
            QStringList out;
            for (const MemoryRecord &r : s.scopeSamples(below, 2))
                out << r.scope + QLatin1Char(' ') + r.content;
            return out;
        };
        const auto categoriesOf = [&](StorageBackend &s) { return s.categories(below); };
        a.save({record(QStringLiteral("one"), QStringLiteral("/p/x"), {QStringLiteral("c1")})});
        QCOMPARE(categoriesOf(a), (QMap<QString, int>{{QStringLiteral("c1"), 1}}));
        QCOMPARE(a.childScopes(QStringLiteral("/p"), RecordFilter()), QStringList{QStringLiteral("/p/x")});
        QCOMPARE(samplesOf(a), QStringList{QStringLiteral("/p/x one")});
        // Its own saves (three in one scope: the newest two are its samples).
        a.save({record(QStringLiteral("two"), QStringLiteral("/p/x"), {QStringLiteral("c1"), QStringLiteral("c2")}),
                record(QStringLiteral("three"), QStringLiteral("/p/x"), {})});
        QCOMPARE(categoriesOf(a), (QMap<QString, int>{{QStringLiteral("c1"), 2}, {QStringLiteral("c2"), 1}}));
        QCOMPARE(samplesOf(a), (QStringList{QStringLiteral("/p/x three"), QStringLiteral("/p/x two")}));
        QCOMPARE(samplesOf(a), samplesOf(b));
        // Another process's insert, into a new scope.
        b.save({record(QStringLiteral("four"), QStringLiteral("/p/y"), {QStringLiteral("c3")})});
        QCOMPARE(a.childScopes(QStringLiteral("/p"), RecordFilter()), (QStringList{QStringLiteral("/p/x"), QStringLiteral("/p/y")}));
        QCOMPARE(categoriesOf(a), (QMap<QString, int>{{QStringLiteral("c1"), 2}, {QStringLiteral("c2"), 1}, {QStringLiteral("c3"), 1}}));
        QCOMPARE(samplesOf(a), (QStringList{QStringLiteral("/p/x three"), QStringLiteral("/p/x two"), QStringLiteral("/p/y four")}));
        // Its own insert after another's: still exact.
        a.save({record(QStringLiteral("five"), QStringLiteral("/p/y"), {QStringLiteral("c3")})});
        QCOMPARE(categoriesOf(a), categoriesOf(b));
        QCOMPARE(categoriesOf(a).value(QStringLiteral("c3")), 2);
        // Another's update and delete.
        RecordFilter four;
        four.contentContains = QStringLiteral("four");
        MemoryRecord changed = b.list(four, 1, 0).front();
        changed.categories = {QStringLiteral("c4")};
        b.update(changed);
        QCOMPARE(categoriesOf(a).value(QStringLiteral("c4")), 1);
        QCOMPARE(categoriesOf(a).value(QStringLiteral("c3")), 1);
        RecordFilter y;
        y.scopes = {QStringLiteral("/p/y")};
        QCOMPARE(b.remove(y), 2);
        QCOMPARE(a.childScopes(QStringLiteral("/p"), RecordFilter()), QStringList{QStringLiteral("/p/x")});
        QCOMPARE(samplesOf(a), (QStringList{QStringLiteral("/p/x three"), QStringLiteral("/p/x two")}));
        // A filter SQL does not judge (a category condition) is answered on the rows, and kept as well.
        RecordFilter c1 = below;
        c1.categories = {QStringLiteral("c1")};
        QCOMPARE(a.scopeSamples(c1, 5).size(), std::size_t(2));
        b.save({record(QStringLiteral("six"), QStringLiteral("/p/z"), {QStringLiteral("c1")})});
        QCOMPARE(a.scopeSamples(c1, 5).size(), std::size_t(3));
        // Another's reset of everything.
        b.reset(QStringLiteral("/"));
        QVERIFY(categoriesOf(a).isEmpty());
        QVERIFY(a.childScopes(QStringLiteral("/p"), RecordFilter()).isEmpty());
        QVERIFY(samplesOf(a).isEmpty());
    }

    // Reads run in parallel on the pool's connections while a writer writes: every search answers.
    void readsRunInParallel()
    {
        QTemporaryDir dir;
        PostgresStorage::Options o;
        o.dsn = test::PgCluster::freshDsn();
        o.indexDir = dir.path();
        o.poolSize = 3;
        PostgresStorage s(o);
        for (int i = 0; i < 50; ++i)
            s.save({vectorRecord(QStringLiteral("seed %1").arg(i), {float(i), 1, 1})});
        std::atomic<int> failures{0}, searches{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                for (int i = 0; i < 40; ++i) {
                    try {
                        const auto found = t % 2 ? s.search({float(i), 1, 1}, RecordFilter(), 5)
                                                 : s.keywordSearch(QStringLiteral("seed"), RecordFilter(), 5);
                        if (found.size() == 5)
                            ++searches;
                    } catch (const Error &) {
                        ++failures;
                    }
                }
            });
        for (int i = 0; i < 40; ++i)
            s.save({vectorRecord(QStringLiteral("more %1").arg(i), {1, float(i), 1})});
        for (std::thread &t : threads)
            t.join();
        QCOMPARE(failures.load(), 0);
        QCOMPARE(searches.load(), 160);
        QCOMPARE(s.count({}), 90);
    }

    // The keyword index scores as the SQLite store's evidence does: BM25 (k1 1.2, b 0.75) with the
    // store's idf, normalised by the query words' idf sum; a context word counts contextWeight of one.
    void keywordIndexScoresLikeSqlite()
    {
        KeywordIndex k;
        // Each of 8 words with its context (a length is the words' positions): the other words pad.
        const auto padded = [](const QStringList &words, const QString &pad, int n) {
            QStringList out = words;
            for (int i = out.size(); i < n; ++i)
                out << pad + QString::number(i);
            return tsv(out);
        };
        k.upsert(1, padded({QStringLiteral("tea"), QStringLiteral("green")}, QStringLiteral("a"), 8), "");
        k.upsert(2, padded({QStringLiteral("coffee")}, QStringLiteral("b"), 4), padded({QStringLiteral("tea")}, QStringLiteral("c"), 4));
        k.upsert(3, "'tea':1,3 'pot':2 'd4':4 'd5':5 'd6':6 'd7':7 'd8':8", "");
        QCOMPARE(k.records(), 3);
        QCOMPARE(k.holding(QStringLiteral("tea")), 2); // the content's, as the SQLite store counts
        const auto idf = [](double rows, double hits) { return std::log(1 + (rows + 100 - hits + 0.5) / (hits + 0.5)); };
        // Every record is of the average length (8 words with its context): BM25 is f * 2.2 / (f + 1.2).
        const auto bm25 = [](double f) { return f * 2.2 / (f + 1.2); };
        const double tea = idf(3, 2), green = idf(3, 1);
        const std::vector<KeywordIndex::Match> m = k.search({QStringLiteral("tea"), QStringLiteral("green")}, 0.5, 1000);
        QCOMPARE(m.size(), std::size_t(3));
        QCOMPARE(m[0].rid, 1);
        QVERIFY(std::abs(m[0].score - 1.0) < 1e-12); // both words once: the ideal
        QCOMPARE(m[1].rid, 3);
        QVERIFY(std::abs(m[1].score - tea * bm25(2) / (tea + green)) < 1e-12);
        QCOMPARE(m[2].rid, 2); // in its context only, a word there counting half
        QVERIFY(std::abs(m[2].score - tea * bm25(0.5) / (tea + green)) < 1e-12);
        QCOMPARE(k.search({QStringLiteral("tea")}, 0, 1000).size(), std::size_t(2)); // without the context
        QCOMPARE(k.search({QStringLiteral("tea")}, 0, 1000).front().score, 1.0);     // capped at 1, as in SQLite
        QVERIFY(k.search({QStringLiteral("absent")}, 0, 1000).empty());
    }

    // Replacing and removing records keeps the counts exact, and a search never finds a record by
    // words it no longer has.
    void keywordIndexFollowsReplacements()
    {
        KeywordIndex k;
        for (int i = 0; i < 100; ++i)
            k.upsert(i, tsv({QStringLiteral("common"), QStringLiteral("w%1").arg(i)}), "");
        QCOMPARE(k.holding(QStringLiteral("common")), 100);
        for (int round = 0; round < 5; ++round)
            for (int i = 0; i < 60; ++i)
                k.upsert(i, tsv({round % 2 ? QStringLiteral("common") : QStringLiteral("other"), QStringLiteral("w%1").arg(i)}), "");
        QCOMPARE(k.holding(QStringLiteral("common")), 40);
        QCOMPARE(k.holding(QStringLiteral("other")), 60);
        for (int i = 90; i < 100; ++i)
            k.remove(i);
        QCOMPARE(k.records(), 90);
        QCOMPARE(k.holding(QStringLiteral("common")), 30);
        std::set<qint64> found;
        for (const KeywordIndex::Match &m : k.search({QStringLiteral("common")}, 0, 0))
            QVERIFY(found.insert(m.rid).second); // each once
        QCOMPARE(found.size(), std::size_t(30));
        QVERIFY(*found.begin() >= 60 && *found.rbegin() < 90);

        // A word named twice in one text (never from the server; bytes that are not UTF-8 read alike)
        // is one word of the record, its frequencies summed: the record is counted and found once.
        KeywordIndex twice;
        twice.upsert(1, "'same':1 'same':2,3 'other':4", "");
        QCOMPARE(twice.holding(QStringLiteral("same")), 1);
        QCOMPARE(twice.search({QStringLiteral("same")}, 0, 0).size(), std::size_t(1));
        twice.remove(1);
        QCOMPARE(twice.holding(QStringLiteral("same")), 0);
    }

    // The cost of a search is bounded as the SQLite store's keyword_row_budget bounds it: a word in more
    // than a tenth of the records selects none alone (its idf still scales the scores), and past the
    // budget only the records holding the rarest words, or two of the others, are scored.
    void keywordIndexBoundsItsWork()
    {
        KeywordIndex k;
        // 2,000 records (a cap of 200): "everywhere" in all, "often" in 600, "pairone" and "pairtwo" in
        // 150 each (40 in both), "rare" in 5.
        for (int i = 0; i < 2000; ++i) {
            QStringList w{QStringLiteral("everywhere")};
            if (i % 10 < 3)
                w << QStringLiteral("often");
            if (i >= 100 && i < 250)
                w << QStringLiteral("pairone");
            if (i >= 210 && i < 360)
                w << QStringLiteral("pairtwo");
            if (i < 5)
                w << QStringLiteral("rare");
            k.upsert(i, tsv(w), "");
        }
        // "everywhere" and "often" are over the cap: alone they select nothing; beside a rare word they
        // select nothing either, and their idf still scales the scores.
        QVERIFY(k.search({QStringLiteral("everywhere")}, 0, 1000).empty());
        const auto alone = k.search({QStringLiteral("rare")}, 0, 1000);
        const auto beside = k.search({QStringLiteral("rare"), QStringLiteral("everywhere")}, 0, 1000);
        QCOMPARE(beside.size(), std::size_t(5));
        const auto idf = [](double rows, double hits) { return std::log(1 + (rows + 100 - hits + 0.5) / (hits + 0.5)); };
        QCOMPARE(beside.front().rid, alone.front().rid);
        QVERIFY(std::abs(beside.front().score - alone.front().score * idf(2000, 5) / (idf(2000, 5) + idf(2000, 2000))) < 1e-12);
        // Under the cap, 265 records hold one of the three words: with a budget of 100, the rarest word's
        // records and those holding both others (40) are scored, not those holding one common word only.
        const QStringList words{QStringLiteral("rare"), QStringLiteral("pairone"), QStringLiteral("pairtwo")};
        QCOMPARE(k.search(words, 0, 0).size(), std::size_t(5 + 150 + 150 - 40));
        const auto bounded = k.search(words, 0, 100);
        QCOMPARE(bounded.size(), std::size_t(5 + 40));
        for (const KeywordIndex::Match &m : bounded)
            QVERIFY(m.rid < 5 || (m.rid >= 210 && m.rid < 250));
        // With room for the rarest two words, their records are all scored.
        QCOMPARE(k.search(words, 0, 200).size(), std::size_t(5 + 150));
    }

    // Another process's keyword index follows every kind of write from the change log: its scores after
    // saves, an update, a delete, its undo (a restore) and a reset of a scope are those of an index
    // loaded afresh, in the very next search (no notification needed).
    void keywordIndexFollowsTheChangeLog()
    {
        QTemporaryDir dir;
        PostgresStorage::Options o;
        o.dsn = test::PgCluster::freshDsn();
        o.indexDir = dir.path();
        o.listen = false;
        PostgresStorage writing(o), reader(o);
        StorageBackend &writer = writing; // the contract's operations
        const QString question = QStringLiteral("green tea in Lisbon");
        std::vector<MemoryRecord> records;
        for (int i = 0; i < 30; ++i) {
            MemoryRecord r = MemoryRecord::create(i % 3 ? QStringLiteral("Ana drinks green tea, cup %1").arg(i)
                                                        : QStringLiteral("The office in Lisbon, floor %1").arg(i));
            r.scope = i < 10 ? QStringLiteral("/a") : QStringLiteral("/b");
            r.context = i % 5 ? QString() : QStringLiteral("they spoke of tea");
            records.push_back(r);
        }
        writer.save(records);
        QCOMPARE(keywordScores(reader, question).size(), 30);
        const auto matchesFresh = [&](const char *step) {
            PostgresStorage fresh(o);
            const auto expected = keywordScores(fresh, question);
            const auto got = keywordScores(reader, question);
            if (!sameScores(got, expected))
                qWarning() << step << got << expected;
            return sameScores(got, expected);
        };
        QVERIFY(matchesFresh("after the saves"));
        MemoryRecord changed = records[1];
        changed.content = QStringLiteral("Ana now drinks coffee");
        writer.update(changed);
        QVERIFY(matchesFresh("after an update"));
        QVERIFY(!keywordScores(reader, QStringLiteral("coffee")).isEmpty());
        RecordFilter one;
        one.ids = {records[2].id};
        QCOMPARE(writer.remove(one), 1);
        QVERIFY(matchesFresh("after a delete"));
        writer.restore(records[2]);
        QVERIFY(matchesFresh("after its undo"));
        QCOMPARE(writer.reset(QStringLiteral("/a")), 10);
        QVERIFY(matchesFresh("after a reset of a scope"));
        QCOMPARE(keywordScores(reader, question).size(), 20);
        QCOMPARE(writer.reset(QStringLiteral("/")), 20); // a new generation: the index is loaded again
        QVERIFY(keywordScores(reader, question).isEmpty());
        writer.save({MemoryRecord::create(QStringLiteral("green tea again"))});
        QCOMPARE(keywordScores(reader, question).size(), 1);
    }

    // Writers on two connections (two store objects, as two hosts) save at once while a third searches:
    // afterwards its keyword index holds every record once, as one loaded afresh does.
    void keywordIndexFollowsConcurrentWriters()
    {
        QTemporaryDir dir;
        PostgresStorage::Options o;
        o.dsn = test::PgCluster::freshDsn();
        o.indexDir = dir.path();
        PostgresStorage a(o), b(o), reader(o);
        const auto token = [](const QString &tag, int i, int j) { return QStringLiteral("%1%2x%3").arg(tag).arg(i).arg(j); };
        std::atomic<bool> done{false};
        std::atomic<int> failures{0};
        std::thread searching([&] {
            while (!done) {
                try {
                    reader.keywordSearch(QStringLiteral("meeting notes a3x1 b7x2"), RecordFilter(), 10);
                } catch (const Error &) {
                    ++failures;
                }
            }
        });
        std::vector<std::thread> writers;
        for (PostgresStorage *s : {&a, &b})
            writers.emplace_back([s, &failures, &token, tag = s == &a ? QStringLiteral("a") : QStringLiteral("b")] {
                for (int i = 0; i < 20; ++i) {
                    std::vector<MemoryRecord> batch;
                    for (int j = 0; j < 10; ++j)
                        batch.push_back(MemoryRecord::create(QStringLiteral("meeting notes %1").arg(token(tag, i, j))));
                    try {
                        s->save(batch);
                    } catch (const Error &) {
                        ++failures;
                    }
                }
            });
        for (std::thread &t : writers)
            t.join();
        done = true;
        searching.join();
        QCOMPARE(failures.load(), 0);
        // Every record, once, by its own word.
        for (const QString &tag : {QStringLiteral("a"), QStringLiteral("b")})
            for (int i = 0; i < 20; ++i)
                for (int j = 0; j < 10; ++j) {
                    const auto found = reader.keywordSearch(token(tag, i, j), RecordFilter(), 5);
                    QCOMPARE(found.size(), std::size_t(1));
                    QCOMPARE(found.front().record.content, QStringLiteral("meeting notes %1").arg(token(tag, i, j)));
                }
        PostgresStorage fresh(o);
        const QString question = QStringLiteral("notes a3x1 b7x2 a19x9");
        QCOMPARE(keywordScores(reader, question).size(), 3);
        QVERIFY(sameScores(keywordScores(reader, question), keywordScores(fresh, question)));
    }

    // A store of schema 3 (GIN indexes on the words, word counts) loses them when opened (schema 4):
    // keyword searches read each process's keyword index, and saves no longer keep two GIN indexes up.
    void ginIndexesLeaveByMigration()
    {
        const QString dsn = test::PgCluster::freshDsn();
        MemoryRecord r = MemoryRecord::create(QStringLiteral("Alice lives in Lisbon"));
        openPg(dsn)->save({r});
        test::PgCluster::run(QStringLiteral("DROP INDEX mneme_records_words_gin; "
                                            "CREATE INDEX mneme_records_words ON mneme_records USING gin (words); "
                                            "CREATE INDEX mneme_records_context_words ON mneme_records USING gin (context_words); "
                                            "ALTER TABLE mneme_records ADD COLUMN word_count integer NOT NULL DEFAULT 0, "
                                            "ADD COLUMN context_word_count integer NOT NULL DEFAULT 0; "
                                            "UPDATE mneme_meta SET value = '3' WHERE key = 'schema_version'"),
                             dsn);
        const QString gin = QStringLiteral("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexdef LIKE '%USING gin%'");
        QCOMPARE(test::PgCluster::scalar(gin, dsn), QStringLiteral("2"));
        auto s = openPg(dsn);
        QVERIFY(s->info().schemaVersion >= 4);
        // Schema 6's index of both words columns (keyword answers while a process's index loads) alone.
        QCOMPARE(test::PgCluster::scalar(gin, dsn), QStringLiteral("1"));
        QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
                                                        "AND indexdef LIKE '%USING gin%'"),
                                         dsn),
                 QStringLiteral("mneme_records_words_gin"));
        QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT count(*) FROM information_schema.columns WHERE table_schema = "
                                                        "current_schema() AND column_name LIKE '%word_count'"),
                                         dsn),
                 QStringLiteral("0"));
        const auto found = s->keywordSearch(QStringLiteral("Lisbon"), RecordFilter(), 5);
        QCOMPARE(found.size(), std::size_t(1));
        QCOMPARE(found.front().record.id, r.id);
    }

    // The server's answer to a keyword search (while a process's keyword index loads) is the keyword
    // index's: the same records, order and scores, on a store of 600 records (a word's cap: 60) after
    // updates and deletes, for words stemmed, with diacritics, stop words only, none found, common
    // words, the context weighed or not, the row budget's bound, and through the contract with scopes,
    // privacy and sources.
    void serverKeywordAnswerEqualsTheIndex_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<double>("contextWeight");
        QTest::addColumn<int>("rowBudget");
        QTest::addColumn<QString>("filter");
        QTest::addColumn<bool>("found");
        QTest::newRow("stems") << QStringLiteral("smiling quokkas") << 0.3 << 1000 << QString() << true;
        QTest::newRow("diacritics") << QStringLiteral("Cafe MULLER") << 0.3 << 1000 << QString() << true;
        QTest::newRow("stop words only") << QStringLiteral("the and of it") << 0.3 << 1000 << QString() << false;
        QTest::newRow("no match") << QStringLiteral("xylophone") << 0.3 << 1000 << QString() << false;
        QTest::newRow("a common word alone") << QStringLiteral("notes") << 0.3 << 1000 << QString() << false;
        QTest::newRow("a rare word and a common one") << QStringLiteral("quokka notes") << 0.3 << 1000 << QString() << true;
        QTest::newRow("the context weighed") << QStringLiteral("zanzibar") << 0.5 << 1000 << QString() << true;
        QTest::newRow("the context left out") << QStringLiteral("zanzibar") << 0.0 << 1000 << QString() << true;
        QTest::newRow("bounded, content") << QStringLiteral("quokka zanzibar budget garden") << 0.0 << 40 << QString() << true;
        QTest::newRow("bounded, context") << QStringLiteral("quokka zanzibar budget garden") << 0.5 << 40 << QString() << true;
        QTest::newRow("unbounded") << QStringLiteral("quokka zanzibar budget garden") << 0.5 << 0 << QString() << true;
        QTest::newRow("a scope") << QStringLiteral("Café Müller green tea") << 0.3 << 1000 << QStringLiteral("scope") << true;
        QTest::newRow("privacy, another source") << QStringLiteral("Café Müller green tea") << 0.3 << 1000 << QStringLiteral("privacy") << true;
        QTest::newRow("privacy, the owner") << QStringLiteral("Café Müller green tea") << 0.3 << 1000 << QStringLiteral("owner") << true;
        QTest::newRow("one source") << QStringLiteral("Café Müller green tea") << 0.3 << 1000 << QStringLiteral("source") << true;
    }
    void serverKeywordAnswerEqualsTheIndex()
    {
        QFETCH(QString, text);
        QFETCH(double, contextWeight);
        QFETCH(int, rowBudget);
        QFETCH(QString, filter);
        QFETCH(bool, found);
        PostgresStorage::Options o = keywordCorpus();
        // The search itself, each way.
        PostgresStorage direct(o);
        const auto onServer = direct.keywordSearchOnServer(text, contextWeight, rowBudget);
        const auto inIndex = direct.keywordSearchInIndex(text, contextWeight, rowBudget);
        QCOMPARE(!onServer.empty(), found);
        QVERIFY2(sameMatches(onServer, inIndex), qPrintable(QStringLiteral("%1 on the server, %2 in the index").arg(onServer.size()).arg(inIndex.size())));
        // Through the contract: a store whose keyword index is not loaded yet, and one whose is.
        RecordFilter f;
        if (filter == QLatin1String("scope"))
            f.scopes = {QStringLiteral("/team/a")};
        if (filter == QLatin1String("privacy") || filter == QLatin1String("owner")) {
            f.applyPrivacy = true;
            f.source = filter == QLatin1String("owner") ? QStringLiteral("ana") : QStringLiteral("bob");
        }
        if (filter == QLatin1String("source"))
            f.onlySource = QStringLiteral("ana");
        PostgresStorage loading(o);
        QString answer;
        const auto first = keywordAnswer(loading, text, f, contextWeight, &answer);
        if (found)
            QVERIFY2(answer.contains(QLatin1String("server")), qPrintable(answer));
        loading.waitForKeywords();
        const auto loaded = keywordAnswer(loading, text, f, contextWeight, &answer);
        if (found)
            QVERIFY2(answer.contains(QLatin1String("keyword index of")), qPrintable(answer));
        QCOMPARE(!first.isEmpty(), found);
        QVERIFY2(sameScores(first, loaded), qPrintable(QStringLiteral("%1 from the server, %2 from the index").arg(first.size()).arg(loaded.size())));
        if (filter == QLatin1String("privacy"))
            for (const auto &[id, score] : first)
                QVERIFY(!direct.get(id)->isPrivate);
    }

    // While the keyword index loads, keyword searches (records and hits, as a recall asks) are answered
    // by the server at once: the load is held until they are done, so a search that waited for it would
    // never return. Once loaded, the index answers, the same.
    void searchesDuringTheLoadDoNotWait()
    {
        PostgresStorage::Options o = keywordCorpus();
        PostgresStorage s(o);
        QSemaphore held, started;
        s.setBeforeKeywordLoadHook([&] {
            started.release();
            held.acquire();
        });
        QString answer;
        const QString question = QStringLiteral("Cafe Muller green tea");
        const auto first = keywordAnswer(s, question, RecordFilter(), 0.3, &answer);
        QVERIFY2(answer.contains(QLatin1String("server")), qPrintable(answer));
        QVERIFY(!first.isEmpty());
        QVERIFY(started.tryAcquire(1, 30000)); // the load began, and waits
        for (int i = 0; i < 3; ++i) {
            QVERIFY(sameScores(keywordAnswer(s, question, RecordFilter(), 0.3, &answer), first));
            QVERIFY2(answer.contains(QLatin1String("server")), qPrintable(answer));
        }
        const auto hits = static_cast<StorageBackend &>(s).keywordHits(question, {}, RecordFilter(), 50, 0.3);
        QVERIFY(hits && int(hits->size()) == first.size());
        held.release();
        s.waitForKeywords();
        QVERIFY(sameScores(keywordAnswer(s, question, RecordFilter(), 0.3, &answer), first));
        QVERIFY2(answer.contains(QLatin1String("keyword index of")), qPrintable(answer));
    }

    // A populated store of schema 5 gains what the server's keyword answers need when opened: the word
    // totals as the records have them, and the GIN index, built concurrently (more than 1,000 records);
    // the totals then follow saves, updates, deletes and resets.
    void wordsIndexArrivesByMigration()
    {
        QTemporaryDir dir;
        PostgresStorage::Options o;
        o.dsn = test::PgCluster::freshDsn();
        o.indexDir = dir.path();
        o.listen = false;
        std::vector<MemoryRecord> records;
        for (int i = 0; i < 1200; ++i) {
            MemoryRecord r = MemoryRecord::create(QStringLiteral("Note %1 on the Café of Lisbon, tea number %2").arg(i).arg(i % 7));
            r.context = i % 3 ? QString() : QStringLiteral("said over green tea");
            records.push_back(r);
        }
        PostgresStorage(o).save(records);
        test::PgCluster::run(QStringLiteral("DROP INDEX mneme_records_words_gin; DROP TRIGGER mneme_records_words_insert ON mneme_records; "
                                            "DROP TRIGGER mneme_records_words_delete ON mneme_records; "
                                            "DROP TRIGGER mneme_records_words_update ON mneme_records; DROP TABLE mneme_word_totals; "
                                            "DROP FUNCTION mneme_word_totals_change(); DROP FUNCTION mneme_words_length(tsvector); "
                                            "UPDATE mneme_meta SET value = '5' WHERE key = 'schema_version'"),
                             o.dsn);
        const auto totals = [&] {
            return test::PgCluster::scalar(QStringLiteral("SELECT sum(records) || ' ' || sum(length) FROM mneme_word_totals"), o.dsn);
        };
        const auto lengthOf = [](const MemoryRecord &r) {
            qint64 n = 0;
            for (const QString &text : {r.content, r.context}) {
                const QByteArray w = TextWords::tsvector(text);
                for (const auto &[lexeme, positions] : KeywordIndex::parse(std::string_view(w.constData(), std::size_t(w.size()))))
                    n += positions;
            }
            return n;
        };
        qint64 expected = 0;
        for (const MemoryRecord &r : records)
            expected += lengthOf(r);
        PostgresStorage s(o);
        QCOMPARE(s.info().schemaVersion, 6);
        QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('mneme_records_words_gin')"), o.dsn),
                 QStringLiteral("t"));
        QCOMPARE(totals(), QStringLiteral("1200 %1").arg(expected));
        const QString question = QStringLiteral("note 42 green tea");
        QVERIFY(!s.keywordSearchOnServer(question, 0.3, 1000).empty());
        QVERIFY(sameMatches(s.keywordSearchOnServer(question, 0.3, 1000), s.keywordSearchInIndex(question, 0.3, 1000)));
        // The totals follow every write.
        StorageBackend &writer = s; // the contract's operations
        MemoryRecord changed = records[5];
        changed.content = QStringLiteral("A much longer note than it was, about green tea in Porto and Lisbon");
        writer.update(changed);
        RecordFilter two;
        two.ids = {records[7].id, records[8].id};
        QCOMPARE(writer.remove(two), 2);
        MemoryRecord added = MemoryRecord::create(QStringLiteral("one more note"));
        writer.save({added});
        expected += lengthOf(changed) - lengthOf(records[5]) - lengthOf(records[7]) - lengthOf(records[8]) + lengthOf(added);
        QCOMPARE(totals(), QStringLiteral("1199 %1").arg(expected));
        QVERIFY(sameMatches(s.keywordSearchOnServer(question, 0.3, 1000), s.keywordSearchInIndex(question, 0.3, 1000)));
        QCOMPARE(writer.reset(QStringLiteral("/")), 1199);
        QCOMPARE(totals(), QStringLiteral("0 0"));
        QVERIFY(s.keywordSearchOnServer(question, 0.3, 1000).empty());
    }

    // A batch's columns go to the server as binary arrays: in one batch, a record without an
    // embedding, access time or metadata beside one with all of them, read back exactly.
    void batchColumnsReadBack()
    {
        auto s = openPg(test::PgCluster::freshDsn());
        MemoryRecord bare = MemoryRecord::create(QStringLiteral("quote ' and \" and \\ and {braces}, NULL"));
        bare.lastAccessed = QDateTime();
        bare.importance = 0;
        MemoryRecord full = vectorRecord(QStringLiteral("Ana's café — «ünïcode» 😀"), {0.25f, -1.5f, 3.0f, 1e-7f});
        full.scope = QStringLiteral("/team/ana");
        full.categories = {QStringLiteral("places"), QStringLiteral("times")};
        full.importance = 0.123456789012345;
        full.source = QStringLiteral("ana");
        full.isPrivate = true;
        full.metadata = Json{{"big", 9007199254740993LL}, {"text", "a \"quoted\" value"}};
        full.accessCount = 2147483647;
        full.lastAccessed = QDateTime::fromMSecsSinceEpoch(1700000000123LL, Qt::UTC);
        full.context = QStringLiteral("the context, with \\ and \"");
        s->save({bare, full});
        const std::optional<MemoryRecord> gotBare = s->get(bare.id, true);
        const std::optional<MemoryRecord> gotFull = s->get(full.id, true);
        QVERIFY(gotBare && gotFull);
        QCOMPARE(*gotBare, bare);
        QVERIFY(gotBare->embedding.empty());
        QVERIFY(!gotBare->lastAccessed.isValid());
        QCOMPARE(*gotFull, full);
        QCOMPARE(gotFull->embedding, full.embedding);
        QCOMPARE(s->keywordSearch(QStringLiteral("cafe unicode"), RecordFilter(), 5).front().record.id, full.id);
        QCOMPARE(s->keywordSearch(QStringLiteral("braces"), RecordFilter(), 5).front().record.id, bare.id);
    }

    // The words of a text, as records are indexed and queries analysed (TextWords).
    void textWordsOfATextAndAQuery_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QByteArray>("words");
        QTest::newRow("stemmed") << QStringLiteral("Alice drinks green tea") << QByteArray("'alic':1 'drink':2 'green':3 'tea':4");
        // Stop words take a position; an apostrophe between letters joins them ("don't" is "dont").
        QTest::newRow("stop words") << QStringLiteral("Don't stop the music!") << QByteArray("'music':4 'stop':2");
        QTest::newRow("diacritics and case") << QStringLiteral("Café Müller, NAÏVE") << QByteArray("'cafe':1 'muller':2 'naiv':3");
        QTest::newRow("numbers") << QStringLiteral("In 2023 the reports") << QByteArray("'2023':2 'report':4");
        QTest::newRow("apostrophes") << QStringLiteral("O'Brien\u2019s dogs'") << QByteArray("'dog':2 'obrien':1");
        QTest::newRow("no words") << QStringLiteral("... -- !?") << QByteArray();
        QTest::newRow("ligature, emoji, hyphen") << QStringLiteral("A \uFB01nal \U0001F600 emoji-word") << QByteArray("'emoji':3 'final':2 'word':4");
        QTest::newRow("a repeated word") << QStringLiteral("tea cup tea") << QByteArray("'cup':2 'tea':1,3");
        // A word too long for a tsvector is not indexed (it takes its position).
        QTest::newRow("too long") << QString(3000, QLatin1Char('x')) + QStringLiteral(" tea") << QByteArray("'tea':2");
    }
    void textWordsOfATextAndAQuery()
    {
        QFETCH(QString, text);
        QFETCH(QByteArray, words);
        QCOMPARE(TextWords::tsvector(text), words);
        // A query's words are the same words.
        QStringList lexemes;
        for (const auto &[lexeme, n] : KeywordIndex::parse(std::string_view(words.constData(), std::size_t(words.size()))))
            lexemes << lexeme;
        QCOMPARE(TextWords::distinct(text), lexemes);
    }

    // What a tsvector holds at most: 256 positions a word, positions up to 16,383 (later words share
    // it); the server takes the words as they are written.
    void textWordsFitATsvector()
    {
        const QByteArray many = TextWords::tsvector(QStringLiteral("tea ").repeated(300));
        QCOMPARE(many.count(','), TextWords::kMaxPositions - 1);
        const QByteArray far = TextWords::tsvector(QStringLiteral("pad ").repeated(17000) + QStringLiteral("tea cup"));
        QVERIFY(far.contains("'cup':16383 "));
        QVERIFY(far.endsWith("'tea':16383"));
        const QString dsn = test::PgCluster::freshDsn();
        for (const QByteArray &w : {many, far, TextWords::tsvector(QStringLiteral("Don't stop the music!"))}) {
            QString literal = QString::fromUtf8(w);
            literal.replace(QLatin1Char('\''), QStringLiteral("''"));
            QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT '%1'::tsvector::text").arg(literal), dsn), QString::fromUtf8(w));
        }
    }

    // A store of schema 4 (its words the server's to_tsvector('english', ...)) has every record's words
    // rewritten as this process writes them when opened: a query finds the records by them.
    void wordsAreRewrittenByMigration()
    {
        const QString dsn = test::PgCluster::freshDsn();
        std::vector<MemoryRecord> records;
        for (int i = 0; i < 12; ++i) {
            MemoryRecord r = MemoryRecord::create(QStringLiteral("We met at the Café Müller, table %1").arg(i));
            r.context = QStringLiteral("a naïve note %1").arg(i);
            records.push_back(r);
        }
        openPg(dsn)->save(records);
        test::PgCluster::run(QStringLiteral("UPDATE mneme_records SET words = to_tsvector('english', content), "
                                            "context_words = to_tsvector('english', context); "
                                            "DELETE FROM mneme_meta WHERE key = 'words'; "
                                            "UPDATE mneme_meta SET value = '4' WHERE key = 'schema_version'"),
                             dsn);
        QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT count(*) FROM mneme_records WHERE words @@ 'cafe'::tsquery"), dsn),
                 QStringLiteral("0"));
        auto s = openPg(dsn);
        QVERIFY(s->info().schemaVersion >= 5);
        QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT value FROM mneme_meta WHERE key = 'words'"), dsn), QStringLiteral("mneme-english-1"));
        for (const MemoryRecord &r : records) {
            const QString where = QStringLiteral(" FROM mneme_records WHERE id = '%1'").arg(r.id);
            QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT words::text") + where, dsn), QString::fromUtf8(TextWords::tsvector(r.content)));
            QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT context_words::text") + where, dsn), QString::fromUtf8(TextWords::tsvector(r.context)));
        }
        QCOMPARE(s->keywordSearch(QStringLiteral("cafe muller"), RecordFilter(), 50).size(), records.size());
        const auto one = s->keywordSearch(QStringLiteral("Cafe table 7"), RecordFilter(), 5);
        QVERIFY(!one.empty());
        QCOMPARE(one.front().record.id, records[7].id);
        QCOMPARE(s->keywordSearch(QStringLiteral("naive"), RecordFilter(), 50, 0.5).size(), records.size()); // the context's words
        // An update writes the words of its new texts.
        MemoryRecord changed = records[3];
        changed.content = QStringLiteral("Dinner at the Brasserie");
        s->update(changed);
        QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT words::text FROM mneme_records WHERE id = '%1'").arg(changed.id), dsn),
                 QStringLiteral("'brasseri':4 'dinner':1"));
        QCOMPARE(s->keywordSearch(QStringLiteral("brasserie"), RecordFilter(), 5).front().record.id, changed.id);
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
        // The first recall's keyword search is the server's (the keyword index loads meanwhile); the
        // stats say so, and then that the index answers, with the same ranking.
        RecallStats stats;
        RecallOptions withStats;
        withStats.stats = &stats;
        const QList<MemoryMatch> found = m.recall(QStringLiteral("green tea"), withStats);
        QVERIFY(!found.isEmpty());
        QCOMPARE(found.first().record.id, tea.id);
        QVERIFY2(stats.answers.contains(QStringLiteral("keywords on the server (GIN index): the keyword index is loading")),
                 qPrintable(stats.answers.join(QLatin1String("; "))));
        QTRY_VERIFY_WITH_TIMEOUT((m.recall(QStringLiteral("green tea"), withStats), stats.answers.contains(QStringLiteral("keyword index of 2 records"))),
                                 30000);
        QCOMPARE(m.recall(QStringLiteral("green tea"), withStats).first().record.id, tea.id);
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
