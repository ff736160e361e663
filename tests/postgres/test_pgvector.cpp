// The postgres storage plugin's vector searches on the server, with pgvector: the choice at open
// ("vector_search"), the column and its index made for new stores and filled for old ones, results
// that match the per-process index's on the same data, privacy and filters alike, several writers,
// moving a store between the two ways, and a reset to an embedder of another dimension. On the
// cluster of the CTest fixture "pgvector" (a server with pgvector available: scripts/pgvector.sh).

#include "pg_test_util.h"
#include "plugins/storage/postgres/postgres_storage.h"
#include <mneme/core/error.h>

#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QUuid>
#include <QtTest>
#include <cmath>
#include <set>
#include <thread>

using namespace mneme;
using mneme::test::errorOf;
using VectorSearch = PostgresStorage::Options::VectorSearch;

namespace {

constexpr int kDimension = 32;

std::vector<float> randomVector(quint32 seed, int dimension = kDimension)
{
    QRandomGenerator rng(seed);
    std::vector<float> v(static_cast<std::size_t>(dimension));
    for (float &x : v)
        x = float(rng.generateDouble() - 0.5);
    return v;
}

MemoryRecord vectorRecord(const QString &content, std::vector<float> embedding)
{
    MemoryRecord r = MemoryRecord::create(content);
    r.embedding = std::move(embedding);
    return r;
}

// Records with vectors of their own, in scopes /s/0../s/3, every fifth private to "ana", categories
// "even" or "odd", and a user_id of u0..u2 in the metadata.
std::vector<MemoryRecord> manyRecords(int n, quint32 seed = 1)
{
    std::vector<MemoryRecord> out;
    for (int i = 0; i < n; ++i) {
        MemoryRecord r = vectorRecord(QStringLiteral("record %1 of seed %2").arg(i).arg(seed), randomVector(seed * 100000 + quint32(i)));
        r.scope = QStringLiteral("/s/%1").arg(i % 4);
        r.categories = {i % 2 ? QStringLiteral("odd") : QStringLiteral("even")};
        r.metadata = Json{{"user_id", "u" + std::to_string(i % 3)}};
        if (i % 5 == 0) {
            r.isPrivate = true;
            r.source = QStringLiteral("ana");
        }
        out.push_back(std::move(r));
    }
    return out;
}

// A database of its own (the extension belongs to a database): not there until a store creates it.
QString freshDatabaseDsn()
{
    const QString name = QStringLiteral("d_") + QUuid::createUuid().toString(QUuid::Id128).left(16);
    test::PgCluster::run(QStringLiteral("CREATE DATABASE %1").arg(name));
    return QStringLiteral("host=%1 port=%2 dbname=%3 user=%4")
        .arg(qEnvironmentVariable("PGHOST"), qEnvironmentVariable("PGPORT"), name, qEnvironmentVariable("PGUSER"));
}

// A fresh schema of a database that has the extension.
QString freshDsn()
{
    test::PgCluster::run(QStringLiteral("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public"));
    return test::PgCluster::freshDsn();
}

PostgresStorage::Options options(const QString &dsn, VectorSearch mode, const QString &indexDir)
{
    PostgresStorage::Options o;
    o.dsn = dsn;
    o.vectorSearch = mode;
    o.indexDir = indexDir;
    o.annThreshold = 100; // the per-process index as a graph too: both ways approximate
    return o;
}

int vectorColumn(const QString &dsn)
{
    return test::PgCluster::scalar(QStringLiteral("SELECT coalesce((SELECT atttypmod FROM pg_attribute WHERE attrelid = "
                                                  "'mneme_records'::regclass AND attname = 'embedding_v' AND NOT attisdropped), 0)"),
                                   dsn)
        .toInt();
}

// pgvector's negated inner product of record `id`'s column with the client's text form of `embedding`:
// -1 when the column holds that unit vector.
double columnAgainstClient(const QString &dsn, const QString &id, const Embedding &embedding)
{
    const QString client = QString::fromLatin1(*PostgresStorage::pgvectorText(embedding));
    return test::PgCluster::scalar(
               QStringLiteral("SELECT embedding_v OPERATOR(public.<#>) '%1'::public.vector FROM mneme_records WHERE id = '%2'").arg(client, id),
               dsn)
        .toDouble();
}

} // namespace

class TestPgvector : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QVERIFY2(test::PgCluster::load(qEnvironmentVariable("MNEME_PG_DIR")), "no pgvector cluster: run the test through CTest"); }

    // "auto" uses an installed extension only; "pgvector" creates it (the server has it, the role may);
    // "local" never uses it.
    void modeIsChosenAtOpen()
    {
        QTemporaryDir dir;
        const QString dsn = freshDatabaseDsn();
        {
            PostgresStorage automatic(options(dsn, VectorSearch::Auto, dir.path()));
            QVERIFY(!automatic.searchesWithPgvector());
            QVERIFY(automatic.vectorExtension().isEmpty());
        }
        {
            PostgresStorage forced(options(dsn, VectorSearch::Pgvector, dir.path()));
            QVERIFY(forced.searchesWithPgvector());
            QVERIFY2(forced.vectorExtension().startsWith(QLatin1String("0.8")), qPrintable(forced.vectorExtension()));
        }
        PostgresStorage automatic(options(dsn, VectorSearch::Auto, dir.path()));
        QVERIFY(automatic.searchesWithPgvector());
        PostgresStorage local(options(dsn, VectorSearch::Local, dir.path()));
        QVERIFY(!local.searchesWithPgvector());
        QCOMPARE(local.vectorExtension(), automatic.vectorExtension());
    }

    // A role that may not create the extension is told what to do.
    void pgvectorNeedsTheExtension()
    {
        QTemporaryDir dir;
        const QString dsn = freshDatabaseDsn();
        const QString role = QStringLiteral("r_") + QUuid::createUuid().toString(QUuid::Id128).left(12);
        test::PgCluster::run(QStringLiteral("CREATE ROLE %1 LOGIN PASSWORD 'x'").arg(role));
        test::PgCluster::run(QStringLiteral("GRANT CREATE ON SCHEMA public TO %1").arg(role), dsn);
        qputenv("PGPASSWORD", "x");
        ErrorKind kind = ErrorKind::Internal;
        const QString message =
            errorOf([&] { PostgresStorage s(options(dsn.section(QStringLiteral(" user="), 0, 0) + " user=" + role, VectorSearch::Pgvector, dir.path())); },
                    &kind);
        qunsetenv("PGPASSWORD");
        QCOMPARE(kind, ErrorKind::Storage);
        QVERIFY2(message.contains(QLatin1String("could not be created")), qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("CREATE EXTENSION vector")), qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("\"vector_search\"")), qPrintable(message));
        QVERIFY2(!message.contains(QLatin1String("'x'")), qPrintable(message));
    }

    // A new store gets the column with its first embedding (its dimension), and the HNSW index; no
    // local index is loaded or written.
    void newStoreGetsColumnAndIndex()
    {
        QTemporaryDir dir;
        const QString dsn = freshDsn();
        PostgresStorage s(options(dsn, VectorSearch::Pgvector, dir.path()));
        QCOMPARE(vectorColumn(dsn), 0);
        const std::vector<MemoryRecord> records = manyRecords(200);
        s.save(records);
        QCOMPARE(vectorColumn(dsn), kDimension);
        QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT count(*) FROM pg_indexes WHERE indexname = 'mneme_records_embedding_v' "
                                                        "AND schemaname = current_schema() AND indexdef LIKE '%hnsw%vector_ip_ops%'"),
                                         dsn),
                 QStringLiteral("1"));
        for (int i : {0, 17, 199}) {
            const auto found = s.search(records[std::size_t(i)].embedding, RecordFilter(), 1);
            QCOMPARE(found.size(), std::size_t(1));
            QCOMPARE(found.front().record.id, records[std::size_t(i)].id);
            QVERIFY(std::abs(found.front().score - 1.0) < 1e-5);
        }
        // How each was answered: by pgvector's graph, or (ids) exactly.
        VectorSearchAnswer answer;
        s.search(records[3].embedding, RecordFilter(), 5, &answer);
        QCOMPARE(answer.method, VectorSearchAnswer::Method::Index);
        RecordFilter ids;
        ids.ids = {records[3].id, records[4].id};
        QCOMPARE(s.search(records[3].embedding, ids, 5, &answer).size(), std::size_t(2));
        QCOMPARE(answer.method, VectorSearchAnswer::Method::Exact);
        QVERIFY(answer.detail.contains(QLatin1String("pgvector")));
        const PostgresStorage::IndexStats stats = s.indexStats();
        QVERIFY(!stats.loaded);
        QCOMPARE(stats.fullLoads, 0);
        s.close();
        QVERIFY(QDir(dir.path()).entryList(QDir::Files).isEmpty());
    }

    void matchesLocalIndex_data()
    {
        QTest::addColumn<QString>("filter");
        QTest::newRow("everything") << QString();
        QTest::newRow("scope") << QStringLiteral("scope");
        QTest::newRow("privacy") << QStringLiteral("privacy");
        QTest::newRow("private of ana") << QStringLiteral("ana");
        QTest::newRow("category") << QStringLiteral("category");
        QTest::newRow("user_id") << QStringLiteral("user");
        QTest::newRow("few ids") << QStringLiteral("ids");
    }
    // Both ways on one store: the same top 10 but for the approximation of both graphs (on average
    // at least 9 of 10 shared), equal scores for the records both found, and never a record the filter
    // does not select (privacy identical).
    void matchesLocalIndex()
    {
        QFETCH(QString, filter);
        QTemporaryDir dir;
        const QString dsn = freshDsn();
        const std::vector<MemoryRecord> records = manyRecords(3000);
        {
            // Saved without the column, which the first open with pgvector then makes in one go
            // (faster than pgvector's graph grown row by row).
            PostgresStorage writer(options(dsn, VectorSearch::Local, dir.path()));
            writer.save(records);
        }
        PostgresStorage local(options(dsn, VectorSearch::Local, dir.path()));
        PostgresStorage server(options(dsn, VectorSearch::Pgvector, dir.path()));
        QVERIFY(!local.searchesWithPgvector());
        QVERIFY(server.searchesWithPgvector());
        local.syncIndex();
        local.waitForIndex();
        QVERIFY(local.indexStats().approximate);

        RecordFilter f;
        if (filter == QLatin1String("scope"))
            f.scopes = {QStringLiteral("/s/2")};
        if (filter == QLatin1String("privacy") || filter == QLatin1String("ana")) {
            f.applyPrivacy = true;
            f.source = filter == QLatin1String("ana") ? QStringLiteral("ana") : QStringLiteral("bob");
        }
        if (filter == QLatin1String("category"))
            f.categories = {QStringLiteral("odd")};
        if (filter == QLatin1String("user"))
            f.metadata = Json{{"user_id", "u1"}};
        if (filter == QLatin1String("ids"))
            for (int i = 0; i < 3000; i += 150)
                f.ids << records[std::size_t(i)].id;

        int shared = 0, queries = 0;
        for (quint32 q = 0; q < 40; ++q) {
            const std::vector<float> query = randomVector(900000 + q);
            const auto a = local.search(query, f, 10);
            const auto b = server.search(query, f, 10);
            QCOMPARE(b.size(), a.size());
            for (const ScoredRecord &r : b)
                QVERIFY2(f.matches(r.record), qPrintable(r.record.id));
            for (std::size_t i = 1; i < b.size(); ++i)
                QVERIFY(b[i - 1].score >= b[i].score);
            std::map<QString, double> scores;
            for (const ScoredRecord &r : a)
                scores[r.record.id] = r.score;
            for (const ScoredRecord &r : b) {
                const auto it = scores.find(r.record.id);
                if (it == scores.end())
                    continue;
                ++shared;
                QVERIFY2(std::abs(it->second - r.score) < 1e-5, qPrintable(QString::number(it->second - r.score)));
            }
            queries += int(a.size());
            // Hits (the ranking's first phase) give the same records and scores as the records.
            const auto hits = server.searchHits(query, f, 10);
            if (filter == QLatin1String("user")) {
                QVERIFY(!hits || hits->size() == b.size());
            } else {
                QVERIFY(hits);
                QCOMPARE(hits->size(), b.size());
                for (std::size_t i = 0; i < b.size(); ++i) {
                    QVERIFY(std::abs((*hits)[i].score - b[i].score) < 1e-9);
                    QCOMPARE((*hits)[i].cosine, (*hits)[i].score);
                    QCOMPARE((*hits)[i].importance, b[i].record.importance);
                    QCOMPARE((*hits)[i].createdAt, b[i].record.createdAt);
                }
            }
        }
        QVERIFY(queries > 0);
        QVERIFY2(shared >= queries * 9 / 10, qPrintable(QStringLiteral("%1 of %2 shared").arg(shared).arg(queries)));
    }

    // Keyword hits carry each record's cosine to the query vector, the same both ways.
    void keywordHitsCarryCosines()
    {
        QTemporaryDir dir;
        const QString dsn = freshDsn();
        std::vector<MemoryRecord> records = manyRecords(50);
        records[7].content = QStringLiteral("the lighthouse keeper");
        records[9].content = QStringLiteral("a lighthouse in the fog");
        PostgresStorage server(options(dsn, VectorSearch::Pgvector, dir.path()));
        server.save(records);
        PostgresStorage local(options(dsn, VectorSearch::Local, dir.path()));
        local.syncIndex(); // (the per-process index gives cosines once a search loaded it)
        const std::vector<float> query = randomVector(77);
        StorageBackend &l = local, &p = server; // (the store's own keywordHits() is its helper)
        const auto a = l.keywordHits(QStringLiteral("lighthouse"), query, RecordFilter(), 10, 0);
        const auto b = p.keywordHits(QStringLiteral("lighthouse"), query, RecordFilter(), 10, 0);
        QVERIFY(a && b);
        QCOMPARE(b->size(), std::size_t(2));
        QCOMPARE(b->size(), a->size());
        for (std::size_t i = 0; i < a->size(); ++i) {
            QCOMPARE((*b)[i].key, (*a)[i].key);
            QVERIFY(std::abs((*b)[i].cosine - (*a)[i].cosine) < 1e-5);
            QVERIFY((*b)[i].cosine != 0);
        }
    }

    // A store the per-process index searched is upgraded at its first open with pgvector (the column
    // filled, the index made) and can go back: no record lost either way, the same answers.
    void storeMovesBetweenModes()
    {
        QTemporaryDir dir;
        const QString dsn = freshDsn();
        const std::vector<MemoryRecord> first = manyRecords(600, 3), later = manyRecords(100, 4);
        {
            PostgresStorage local(options(dsn, VectorSearch::Local, dir.path()));
            local.save(first);
        }
        QCOMPARE(vectorColumn(dsn), 0);
        const auto topOf = [&](PostgresStorage &s, const MemoryRecord &r) {
            const auto found = s.search(r.embedding, RecordFilter(), 1);
            return found.empty() ? QString() : found.front().record.id;
        };
        {
            PostgresStorage server(options(dsn, VectorSearch::Pgvector, dir.path()));
            QCOMPARE(vectorColumn(dsn), kDimension);
            QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT count(*) FROM mneme_records WHERE embedding_v IS NOT NULL"), dsn),
                     QStringLiteral("600"));
            for (std::size_t i = 0; i < first.size(); i += 37)
                QCOMPARE(topOf(server, first[i]), first[i].id);
            server.save(later);
        }
        // Back to the per-process index: every record, those saved with pgvector too.
        PostgresStorage local(options(dsn, VectorSearch::Local, dir.path()));
        QCOMPARE(local.count(RecordFilter()), 700);
        for (std::size_t i = 0; i < later.size(); i += 9)
            QCOMPARE(topOf(local, later[i]), later[i].id);
        // Its writes keep the column up to date for the processes that search with pgvector.
        const std::vector<MemoryRecord> third = manyRecords(50, 5);
        local.save(third);
        MemoryRecord moved = first[5];
        moved.embedding = randomVector(4242);
        static_cast<StorageBackend &>(local).update(moved);
        PostgresStorage server(options(dsn, VectorSearch::Pgvector, dir.path()));
        QCOMPARE(topOf(server, third[10]), third[10].id);
        QCOMPARE(topOf(server, moved), moved.id);
        QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT count(*) FROM mneme_records WHERE embedding_v IS NULL"), dsn),
                 QStringLiteral("0"));
    }

    // A writer that knows of the column sends each vector itself (in the batch's binary arrays, and in
    // an update): with the server's conversion switched off, the column is still filled, and right.
    void awareWritersSendTheVector()
    {
        QTemporaryDir dir;
        const QString dsn = freshDsn();
        PostgresStorage store(options(dsn, VectorSearch::Pgvector, dir.path()));
        store.save(manyRecords(1, 8)); // the first embedding makes the column
        QCOMPARE(vectorColumn(dsn), kDimension);
        test::PgCluster::run(QStringLiteral("ALTER TABLE mneme_records DISABLE TRIGGER mneme_records_vector_insert; "
                                            "ALTER TABLE mneme_records DISABLE TRIGGER mneme_records_vector_update"),
                             dsn);
        std::vector<MemoryRecord> records = manyRecords(20, 9);
        records.push_back(MemoryRecord());
        records.back().id = QStringLiteral("no-vector");
        records.back().content = QStringLiteral("a record without an embedding");
        records.back().scope = QStringLiteral("/");
        store.save(records);
        QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT count(*) FROM mneme_records WHERE embedding_v IS NOT NULL"), dsn),
                 QStringLiteral("21"));
        QCOMPARE(test::PgCluster::scalar(QStringLiteral("SELECT count(*) FROM mneme_records WHERE embedding_v IS NULL"), dsn),
                 QStringLiteral("1"));
        const MemoryRecord &r = records[7];
        QVERIFY(columnAgainstClient(dsn, r.id, r.embedding) < -0.999999);
        MemoryRecord changed = r;
        changed.embedding = randomVector(4242);
        static_cast<StorageBackend &>(store).update(changed);
        QCOMPARE(store.search(changed.embedding, RecordFilter(), 1).front().record.id, r.id);
    }

    // A writer that does not write the column (opened before it was made) is covered by the triggers,
    // which convert its embeddings on the server exactly as a writer would.
    void writersUnawareOfTheColumnAreConverted()
    {
        QTemporaryDir dir;
        const QString dsn = freshDsn();
        PostgresStorage unaware(options(dsn, VectorSearch::Local, dir.path()));
        unaware.save(manyRecords(10, 6));
        PostgresStorage server(options(dsn, VectorSearch::Pgvector, dir.path())); // makes the column now
        QCOMPARE(vectorColumn(dsn), kDimension);
        std::vector<float> odd = randomVector(31337);
        odd[0] = 1e-30f; // a tiny value, and an exact zero
        odd[1] = 0;
        MemoryRecord r = vectorRecord(QStringLiteral("written without the column"), odd);
        unaware.save({r});
        const auto found = server.search(r.embedding, RecordFilter(), 1);
        QCOMPARE(found.size(), std::size_t(1));
        QCOMPARE(found.front().record.id, r.id);
        QVERIFY(std::abs(found.front().score - 1.0) < 1e-6);
        // The server's conversion gives the client's vector.
        QVERIFY(columnAgainstClient(dsn, r.id, odd) < -0.999999);
        MemoryRecord changed = r;
        changed.embedding = randomVector(555);
        static_cast<StorageBackend &>(unaware).update(changed);
        QCOMPARE(server.search(changed.embedding, RecordFilter(), 1).front().record.id, r.id);
    }

    // Several writers at once (stores of their own: connection pools of their own), each write visible
    // to the others' next search, with nothing lost or twice.
    void severalWritersVisibleAtOnce()
    {
        QTemporaryDir dir;
        const QString dsn = freshDsn();
        constexpr int kWriters = 3, kEach = 40;
        std::vector<std::unique_ptr<PostgresStorage>> stores;
        for (int w = 0; w < kWriters; ++w)
            stores.push_back(std::make_unique<PostgresStorage>(options(dsn, VectorSearch::Pgvector, dir.path())));
        std::vector<std::vector<MemoryRecord>> written(kWriters);
        std::atomic<int> misses{0};
        std::vector<std::thread> threads;
        for (int w = 0; w < kWriters; ++w)
            threads.emplace_back([&, w] {
                for (int i = 0; i < kEach; ++i) {
                    MemoryRecord r = vectorRecord(QStringLiteral("writer %1 record %2").arg(w).arg(i), randomVector(quint32(10000 * (w + 1) + i)));
                    stores[std::size_t(w)]->save({r});
                    // Visible at once to another store's search.
                    const auto found = stores[std::size_t((w + 1) % kWriters)]->search(r.embedding, RecordFilter(), 1);
                    if (found.empty() || found.front().record.id != r.id)
                        ++misses;
                    written[std::size_t(w)].push_back(std::move(r));
                }
            });
        for (std::thread &t : threads)
            t.join();
        QCOMPARE(misses.load(), 0);
        QCOMPARE(stores[0]->count(RecordFilter()), kWriters * kEach);
        std::set<QString> seen;
        for (const auto &batch : written)
            for (const MemoryRecord &r : batch) {
                const auto found = stores[2]->search(r.embedding, RecordFilter(), 1);
                QCOMPARE(found.front().record.id, r.id);
                seen.insert(r.id);
            }
        QCOMPARE(int(seen.size()), kWriters * kEach);
    }

    // Embeddings of more dimensions than pgvector indexes (2,000): "auto" searches with the process's
    // own index, without a column; "pgvector" refuses them.
    void widerThanPgvectorIndexes()
    {
        QTemporaryDir dir;
        const QString dsn = freshDsn();
        const MemoryRecord wide = vectorRecord(QStringLiteral("very wide"), randomVector(3, 2048));
        {
            PostgresStorage forced(options(dsn, VectorSearch::Pgvector, dir.path()));
            ErrorKind kind = ErrorKind::Internal;
            const QString message = errorOf([&] { forced.save({wide}); }, &kind);
            QCOMPARE(kind, ErrorKind::InvalidArgument);
            QVERIFY2(message.contains(QLatin1String("2000 dimensions at most")), qPrintable(message));
            QCOMPARE(forced.count(RecordFilter()), 0);
        }
        PostgresStorage automatic(options(dsn, VectorSearch::Auto, dir.path()));
        QVERIFY(automatic.searchesWithPgvector());
        automatic.save({wide});
        QVERIFY(!automatic.searchesWithPgvector());
        QCOMPARE(vectorColumn(dsn), 0);
        QCOMPARE(automatic.search(wide.embedding, RecordFilter(), 1).front().record.id, wide.id);
        PostgresStorage again(options(dsn, VectorSearch::Auto, dir.path()));
        QVERIFY(!again.searchesWithPgvector());
    }

    // A reset lets the store take an embedder of another dimension: the column follows.
    void resetToAnotherDimension()
    {
        QTemporaryDir dir;
        const QString dsn = freshDsn();
        PostgresStorage s(options(dsn, VectorSearch::Pgvector, dir.path()));
        s.save(manyRecords(20));
        QCOMPARE(vectorColumn(dsn), kDimension);
        static_cast<StorageBackend &>(s).reset(QStringLiteral("/"));
        const MemoryRecord wide = vectorRecord(QStringLiteral("wider"), randomVector(8, 48));
        s.save({wide});
        QCOMPARE(vectorColumn(dsn), 48);
        QCOMPARE(s.search(wide.embedding, RecordFilter(), 5).front().record.id, wide.id);
        ErrorKind kind = ErrorKind::Internal;
        errorOf([&] { s.search(randomVector(9), RecordFilter(), 5); }, &kind);
        QCOMPARE(kind, ErrorKind::EmbedderMismatch);
    }
};

QTEST_GUILESS_MAIN(TestPgvector)
#include "test_pgvector.moc"
