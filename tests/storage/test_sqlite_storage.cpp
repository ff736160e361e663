// Tests of the SQLite storage plugin, loaded through PluginRegistry, on real files.

#include "plugins/storage/common/float_array.h"
#include "plugins/storage/sqlite/sqlite_storage.h"
#include "tests/support/temp_store.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/scope_path.h>
#include <mneme/core/vector_math.h>

#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QSet>
#include <QTest>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <sqlite3.h>
#include <sys/mman.h>
#include <thread>
#include <time.h>
#include <unistd.h>

using namespace mneme;

namespace {

PluginRegistry &registry()
{
    static PluginRegistry r(QStringList{QStringLiteral(MNEME_PLUGIN_BUILD_DIR)});
    return r;
}

std::unique_ptr<StorageBackend> openStore(const QString &path, Json extra = Json::object())
{
    Json config = extra;
    config["path"] = path.toStdString();
    return registry().createStorage(QStringLiteral("sqlite"), config);
}

struct Caught
{
    bool thrown = false;
    ErrorKind kind = ErrorKind::Internal;
    QString message;
};

template<typename F>
Caught catchError(F &&f)
{
    Caught c;
    try {
        f();
    } catch (const Error &e) {
        c.thrown = true;
        c.kind = e.kind();
        c.message = e.message();
    }
    return c;
}

#define VERIFY_ERROR(caught, expectedKind)                                                                               \
    do {                                                                                                                 \
        QVERIFY2((caught).thrown, "no mneme::Error was thrown");                                                         \
        QVERIFY2((caught).kind == (expectedKind),                                                                        \
                 qPrintable(QStringLiteral("expected %1, got %2: %3")                                                    \
                                .arg(Error::kindName(expectedKind), Error::kindName((caught).kind), (caught).message))); \
    } while (0)

#define COMPARE_JSON(actual, expected) \
    QVERIFY2((actual) == (expected), qPrintable(QString::fromStdString((actual).dump() + " != " + (expected).dump())))

const QDateTime kBase = QDateTime(QDate(2024, 5, 1), QTime(12, 0, 0, 123), Qt::UTC);

MemoryRecord makeRecord(const QString &content, const QString &scope = QStringLiteral("/"), Embedding embedding = {},
                        int hoursAfterBase = 0)
{
    MemoryRecord r = MemoryRecord::create(content);
    r.scope = scope;
    r.embedding = std::move(embedding);
    r.createdAt = kBase.addSecs(3600LL * hoursAfterBase);
    r.updatedAt = r.createdAt;
    r.lastAccessed = r.createdAt;
    return r;
}

QByteArray fileBytes(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return QByteArray("<cannot read>");
    return f.readAll();
}

// Runs SQL on a file with a plain SQLite connection; returns the first column of every row.
QStringList rawQuery(const QString &path, const QString &sql, bool *ok = nullptr)
{
    QStringList out;
    sqlite3 *db = nullptr;
    bool good = sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK;
    sqlite3_stmt *st = nullptr;
    if (good)
        good = sqlite3_prepare_v2(db, sql.toUtf8().constData(), -1, &st, nullptr) == SQLITE_OK;
    int rc = SQLITE_DONE;
    while (good && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const auto *t = reinterpret_cast<const char *>(sqlite3_column_text(st, 0));
        out << (t ? QString::fromUtf8(t) : QString());
    }
    if (good && rc != SQLITE_DONE)
        good = false;
    if (!good)
        out << QString::fromUtf8(sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (ok)
        *ok = good;
    return out;
}

QString rawScalar(const QString &path, const QString &sql)
{
    bool ok = false;
    const QStringList rows = rawQuery(path, sql, &ok);
    return ok && !rows.isEmpty() ? rows.first() : QStringLiteral("<error: %1>").arg(rows.join(QLatin1Char(' ')));
}

QSet<QString> contentsOf(const std::vector<ScoredRecord> &hits)
{
    QSet<QString> out;
    for (const auto &h : hits)
        out.insert(h.record.content);
    return out;
}

QSet<QString> contentsOf(const std::vector<MemoryRecord> &records)
{
    QSet<QString> out;
    for (const auto &r : records)
        out.insert(r.content);
    return out;
}

QString describe(QSet<QString> s)
{
    QStringList l(s.begin(), s.end());
    l.sort();
    return QLatin1Char('[') + l.join(QStringLiteral(", ")) + QLatin1Char(']');
}

Embedding randomUnitish(QRandomGenerator &rng, int dim)
{
    Embedding e(static_cast<std::size_t>(dim));
    for (float &x : e)
        x = float(rng.generateDouble() * 2.0 - 1.0);
    return e;
}

// Also in sqlite_writer.cpp: the helper's "ann" vectors for the same arguments.
Embedding annVector(const QString &tag, int i, int salt)
{
    quint32 h = 2166136261u; // FNV-1a: qHash is seeded per process
    for (char c : tag.toUtf8())
        h = (h ^ quint8(c)) * 16777619u;
    const quint32 seeds[] = {h, quint32(i), quint32(salt)};
    QRandomGenerator rng(seeds, 3);
    Embedding e(16);
    for (float &x : e)
        x = float(rng.generateDouble() * 2.0 - 1.0);
    return e;
}

// The storage class itself (not through the plugin), for its index statistics and bare searches.
std::unique_ptr<SqliteStorage> openDirect(const QString &path, Json extra = Json::object())
{
    Json config = extra;
    config["path"] = path.toStdString();
    return std::make_unique<SqliteStorage>(SqliteStorage::Options::fromJson(config));
}

QSet<qint64> rowidSet(const std::vector<VectorIndex::Hit> &hits)
{
    QSet<qint64> out;
    for (const auto &h : hits)
        out.insert(h.rowid);
    return out;
}

// Fraction of the exact top-k the approximate top-k found; a tie at the k-th score counts as found.
double recallAgainst(const std::vector<VectorIndex::Hit> &approx, const std::vector<VectorIndex::Hit> &exact)
{
    if (exact.empty())
        return approx.empty() ? 1.0 : 0.0;
    const double last = exact.back().score;
    int found = 0;
    for (const auto &h : approx)
        if (h.score >= last - 1e-6)
            ++found;
    return double(std::min<std::size_t>(std::size_t(found), exact.size())) / double(exact.size());
}

QHash<QString, qint64> rowidsById(const QString &path)
{
    QHash<QString, qint64> out;
    for (const QString &line : rawQuery(path, QStringLiteral("SELECT id || ' ' || rid FROM records"))) {
        const QStringList parts = line.split(QLatin1Char(' '));
        if (parts.size() == 2)
            out.insert(parts[0], parts[1].toLongLong());
    }
    return out;
}

// A store of schema 1 as released, written by plain SQLite (not by the code under test): two
// records, one with a 2-dimensional vector, their keyword index rows, history and embedder binding.
const char *const kSchemaV1Store =
    "CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE records(rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, content TEXT NOT NULL, scope TEXT NOT NULL,"
    " categories TEXT NOT NULL DEFAULT '[]', importance REAL NOT NULL DEFAULT 0.5, source TEXT NOT NULL DEFAULT '',"
    " private INTEGER NOT NULL DEFAULT 0, metadata TEXT NOT NULL DEFAULT '{}', created_at INTEGER, updated_at INTEGER,"
    " last_accessed INTEGER, access_count INTEGER NOT NULL DEFAULT 0, content_hash INTEGER NOT NULL, embedding BLOB);"
    "CREATE INDEX records_scope ON records(scope);"
    "CREATE INDEX records_created ON records(created_at);"
    "CREATE INDEX records_content_hash ON records(content_hash);"
    "CREATE VIRTUAL TABLE records_fts USING fts5(content, tokenize = 'porter unicode61 remove_diacritics 2');"
    "CREATE TABLE history(seq INTEGER PRIMARY KEY AUTOINCREMENT, record_id TEXT NOT NULL,"
    " event TEXT NOT NULL CHECK (event IN ('ADD', 'UPDATE', 'DELETE')), old_content TEXT, new_content TEXT,"
    " old_record TEXT, new_record TEXT, at INTEGER NOT NULL);"
    "CREATE INDEX history_record ON history(record_id, seq);"
    "INSERT INTO meta VALUES ('schema_version', '1'), ('created_by', 'mneme 0.1.0'), ('store_id', 'v1-store'),"
    " ('embedder_id', 'test/v1'), ('dimension', '2');"
    // 1.0f and 0.0f as little-endian float32.
    "INSERT INTO records(rid, id, content, scope, categories, importance, source, private, metadata, created_at,"
    " updated_at, last_accessed, access_count, content_hash, embedding) VALUES"
    " (1, 'v1-first', 'the lighthouse keeper likes tea', '/crew/a', '[\"habits\"]', 0.8, 'agent-a', 0,"
    " '{\"k\":\"v\"}', 1714564800123, 1714564800123, 1714564800123, 3, 11, X'0000803F00000000'),"
    " (2, 'v1-second', 'a second memory without vector', '/', '[]', 0.5, '', 1, '{}', 1714568400123,"
    " 1714568400123, NULL, 0, 12, NULL);"
    "INSERT INTO records_fts(rowid, content) VALUES (1, 'the lighthouse keeper likes tea'),"
    " (2, 'a second memory without vector');"
    "INSERT INTO history(record_id, event, old_content, new_content, old_record, new_record, at) VALUES"
    " ('v1-first', 'ADD', NULL, 'the lighthouse keeper likes tea', NULL, '{}', 1714564800123),"
    " ('v1-second', 'ADD', NULL, 'a second memory without vector', NULL, '{}', 1714568400123);"
    "PRAGMA user_version = 1;";

// Writes the schema 1 store to `path` (in rollback-journal mode, as a never-opened file would be);
// `dropTable` leaves one of its tables out, to make a damaged v1 store.
bool writeSchemaV1Store(const QString &path, const char *dropTable = nullptr)
{
    sqlite3 *db = nullptr;
    bool ok = sqlite3_open(path.toUtf8().constData(), &db) == SQLITE_OK
           && sqlite3_exec(db, kSchemaV1Store, nullptr, nullptr, nullptr) == SQLITE_OK;
    if (ok && dropTable)
        ok = sqlite3_exec(db, (QByteArray("DROP TABLE ") + dropTable).constData(), nullptr, nullptr, nullptr) == SQLITE_OK;
    if (!ok)
        qWarning("writing the schema 1 store failed: %s", sqlite3_errmsg(db));
    sqlite3_close(db);
    return ok;
}

} // namespace

class TestSqliteStorage : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void pluginIsRegistered();
    void configErrors_data();
    void configErrors();
    void roundTrip_data();
    void roundTrip();
    void categoriesAndMetadataColumns_data();
    void categoriesAndMetadataColumns();
    void historyHoldsTheRecordAsJson_data();
    void historyHoldsTheRecordAsJson();
    void batchHistoryInOrder();
    void failedSaveChangesNothing();
    void searchRanksByCosine();
    void filtersNeverLeak_data();
    void filtersNeverLeak();
    void keywordSearch_data();
    void keywordSearch();
    void keywordIndexFollowsWrites();
    void keywordScoresStayExactAcrossWrites();
    void keywordContextCountsAtItsWeight();
    void updateRemoveRestoreAndHistory();
    void resetSubtreeAndEverything();
    void findExact();
    void findExactFollowsWrites();
    void scopeTreeStatistics();
    void touchCountsAccess();
    void embedderBinding();
    void mixedBatchRefusedOnFreshStore();
    void otherConnectionsAreSeen();
    void schemaTooNewLeavesFileUntouched();
    void notSqliteIsCorrupt_data();
    void notSqliteIsCorrupt();
    void damagedStoreIsReported();
    void foreignSqliteIsCorrupt();
    void readOnly_data();
    void readOnly();
    void readOnlyMissingFile();
    void closedStoreThrows();
    void stateRoundTrip_data();
    void stateRoundTrip();
    void stateOverwriteAndDelete();
    void stateKeysByPrefix();
    void stateUnicodeAndLargeValues();
    void stateInvalidKeys_data();
    void stateInvalidKeys();
    void statePersistsAndIsShared();
    void stateAndReset();
    void schemaV1IsMigrated();
    void schemaV1ReadOnly();
    void schemaV1MissingTableIsDamaged();
    void oddTextNeverCrashes();
    void threadsShareOneStore();
    void concurrentProcessesLoseNothing();
    void keywordSearchLeavesOutCommonTerms()
    {
        // A term found in more than a tenth of the store (and in over 50 records) is left out of the
        // query: it would cost a scan of much of the store and carries little BM25 weight.
        test::TempStore tmp;
        auto store = openStore(tmp.path());
        std::vector<MemoryRecord> records;
        for (int i = 0; i < 200; ++i)
            records.push_back(makeRecord(QStringLiteral("common filler %1%2").arg(i).arg(i % 7 == 0 ? QStringLiteral(" zebra") : QString()),
                                         QStringLiteral("/"), Embedding(8, 0.5f)));
        store->save(records);
        QVERIFY(store->keywordSearch(QStringLiteral("common filler"), {}, 1000).empty());
        const auto zebras = store->keywordSearch(QStringLiteral("common zebra"), {}, 1000);
        QCOMPARE(zebras.size(), std::size_t(29)); // i % 7 == 0 for i in 0..199
        for (const auto &hit : zebras)
            QVERIFY(hit.record.content.contains(QStringLiteral("zebra")));

        // Counts are remembered while the store keeps about its size, and taken again once it grew:
        // zebras everywhere make the word common.
        records.clear();
        for (int i = 0; i < 300; ++i)
            records.push_back(makeRecord(QStringLiteral("zebra crossing %1").arg(i), QStringLiteral("/"), Embedding(8, 0.5f)));
        store->save(records);
        QVERIFY(store->keywordSearch(QStringLiteral("zebra"), {}, 1000).empty());
        QCOMPARE(store->keywordSearch(QStringLiteral("zebra crossing 250"), {}, 1000).size(), std::size_t(1));
    }

    void keywordSearchKeepsTermsNearTheCap()
    {
        // 200 records: the cap is 50 records. "alpha" is in 45, "beta" in 60 (over the cap, but not
        // twice as common as alpha), "zebra" in 29 (beta is over twice as common as that).
        test::TempStore tmp;
        auto store = openStore(tmp.path());
        std::vector<MemoryRecord> records;
        for (int i = 0; i < 200; ++i) {
            QStringList words{QStringLiteral("note%1").arg(i)};
            if (i < 45)
                words << QStringLiteral("alpha");
            if (i >= 100 && i < 160)
                words << QStringLiteral("beta");
            if (i >= 160 && i < 189)
                words << QStringLiteral("zebra");
            records.push_back(makeRecord(words.join(QLatin1Char(' ')), QStringLiteral("/"), Embedding(8, 0.5f)));
        }
        store->save(records);
        const auto holding = [](const std::vector<ScoredRecord> &hits, const QString &word) {
            return std::count_if(hits.begin(), hits.end(), [&](const ScoredRecord &h) { return h.record.content.contains(word); });
        };
        const auto near = store->keywordSearch(QStringLiteral("alpha beta"), {}, 1000);
        QCOMPARE(holding(near, QStringLiteral("alpha")), 45);
        QCOMPARE(holding(near, QStringLiteral("beta")), 60); // a line between them is no reason to drop beta
        const auto far = store->keywordSearch(QStringLiteral("zebra beta"), {}, 1000);
        QCOMPARE(holding(far, QStringLiteral("zebra")), 29);
        QCOMPARE(holding(far, QStringLiteral("beta")), 0); // common, and over twice as common as zebra
    }

    void boundedKeywordSearchKeepsTheBest_data();
    void boundedKeywordSearchKeepsTheBest();
    void keywordRowBudgetKey();
    void keywordHitsJudgeEveryRecord();
    void killedWriterLeavesIntactStore();
    void exactScanOfTenThousand();
    void annConfigKeys();
    void annMatchesExactScan();
    void annFiltersNeverLeak_data();
    void annFiltersNeverLeak();
    void annRandomFiltersNeverLeak();
    void annFollowsWritesAndSurvivesReopen();
    void annSeesOtherProcesses();
    void annKilledWriterNeverGivesWrongResults();
    void annDamagedOrForeignFileIsRebuilt();
    void searchHitsCarryRankFields_data();
    void searchHitsCarryRankFields();
    void damagedIndexFileIsRebuilt_data();
    void damagedIndexFileIsRebuilt();
    void indexValuesAreValidatedOnLoad();
    void formatThreeFileIsRead();
    void indexFileOfManyPiecesIsReadWhole();
    void floatArrayActsAsAVector_data();
    void floatArrayActsAsAVector();
    void hugePageAdviceKeepsAnUnalignedMappingWhole();
    void hugePageAdviceKeepsAMallocBlockWhole();
    void screenedScanIsExact_data();
    void screenedScanIsExact();
    void scopedScanFollowsEveryWrite();
    void metadataConditionsEverywhere_data();
    void metadataConditionsEverywhere();
    void cachedAnswersStayExact();
    void categoryCountsFollowEveryWrite();
    void scopeSamplesAndSameContent();
    void backgroundBuildAnswersExactly();
    void backgroundBuildEqualsOneBuiltAfterwards();
    void closeDuringBackgroundBuild();
    void bulkLoadBuildsTheGraph();
    void aFileFarBehindIsReadAgain();
    void walIsCheckpointedInTheBackground();
    void backgroundCheckpointsCopyTheLog();
};

void TestSqliteStorage::pluginIsRegistered()
{
    QVERIFY2(registry().hasKey(PluginRegistry::Kind::Storage, QStringLiteral("sqlite")),
             qPrintable(registry().keys(PluginRegistry::Kind::Storage).join(QLatin1Char(','))));
    test::TempStore tmp;
    auto store = openStore(tmp.path(QStringLiteral("nested/folder/memory.db")));
    QVERIFY(QFile::exists(tmp.path(QStringLiteral("nested/folder/memory.db"))));
    QCOMPARE(SqliteStorage::latestSchemaVersion(), 6);
    QCOMPARE(store->schemaVersion(), 6);
    QCOMPARE(store->location(), tmp.path(QStringLiteral("nested/folder/memory.db")));
    QCOMPARE(rawScalar(store->location(), QStringLiteral("PRAGMA journal_mode")), QStringLiteral("wal"));
    QCOMPARE(rawScalar(store->location(), QStringLiteral("PRAGMA user_version")), QStringLiteral("6"));
    QCOMPARE(rawScalar(store->location(), QStringLiteral("SELECT value FROM meta WHERE key = 'schema_version'")), QStringLiteral("6"));
    QCOMPARE(rawScalar(store->location(), QStringLiteral("SELECT count(*) FROM sqlite_master WHERE name = 'state'")), QStringLiteral("1"));
    QVERIFY(rawScalar(store->location(), QStringLiteral("SELECT value FROM meta WHERE key = 'created_by'")).startsWith(QLatin1String("mneme ")));
}

void TestSqliteStorage::configErrors_data()
{
    QTest::addColumn<QString>("config");
    QTest::addColumn<QString>("key");
    QTest::newRow("no path") << QStringLiteral("{}") << QStringLiteral("path");
    QTest::newRow("path not a string") << QStringLiteral(R"({"path": 3})") << QStringLiteral("path");
    QTest::newRow("unknown key") << QStringLiteral(R"({"path": ":memory:", "journal": "wal"})") << QStringLiteral("journal");
    QTest::newRow("read_only not a bool") << QStringLiteral(R"({"path": ":memory:", "read_only": "yes"})") << QStringLiteral("read_only");
    QTest::newRow("busy timeout not a number") << QStringLiteral(R"({"path": ":memory:", "busy_timeout_ms": "1s"})") << QStringLiteral("busy_timeout_ms");
    QTest::newRow("busy timeout negative") << QStringLiteral(R"({"path": ":memory:", "busy_timeout_ms": -5})") << QStringLiteral("busy_timeout_ms");
    QTest::newRow("config not an object") << QStringLiteral(R"(["memory.db"])") << QStringLiteral("JSON object");
}

void TestSqliteStorage::configErrors()
{
    QFETCH(QString, config);
    QFETCH(QString, key);
    const Caught c = catchError([&] { registry().createStorage(QStringLiteral("sqlite"), Json::parse(config.toStdString())); });
    VERIFY_ERROR(c, ErrorKind::InvalidArgument);
    QVERIFY2(c.message.contains(key), qPrintable(c.message));
}

void TestSqliteStorage::roundTrip_data()
{
    QTest::addColumn<bool>("onDisk");
    QTest::newRow("file") << true;
    QTest::newRow(":memory:") << false;
}

void TestSqliteStorage::roundTrip()
{
    QFETCH(bool, onDisk);
    test::TempStore tmp;
    const QString path = onDisk ? tmp.path() : QStringLiteral(":memory:");
    auto store = openStore(path);

    MemoryRecord r = MemoryRecord::create(QStringLiteral("Ana prefers tea, not coffee"));
    r.scope = QStringLiteral("/crew/research");
    r.categories = QStringList{QStringLiteral("preference"), QStringLiteral("people")};
    r.importance = 0.8125;
    r.source = QStringLiteral("agent:ana");
    r.isPrivate = true;
    r.metadata = Json{{"entities", {"Ana"}}, {"nested", {{"n", 1.5}, {"ok", true}}}, {"date", "2024-05-08"}};
    r.createdAt = QDateTime(QDate(2023, 1, 2), QTime(3, 4, 5, 678), Qt::UTC);
    r.updatedAt = QDateTime(QDate(2023, 2, 3), QTime(4, 5, 6, 789), Qt::UTC);
    r.lastAccessed = QDateTime(QDate(2023, 3, 4), QTime(5, 6, 7, 1), Qt::UTC);
    r.accessCount = 7;
    r.embedding = {0.25f, -1.5f, 3.0f, 1e-7f};
    MemoryRecord plain = makeRecord(QStringLiteral("no embedding, no source"));
    store->save({r, plain});

    auto check = [&](StorageBackend &s) {
        const auto got = s.get(r.id, true);
        QVERIFY(got.has_value());
        QVERIFY(*got == r);
        QCOMPARE(got->embedding, r.embedding);
        QCOMPARE(got->createdAt.toMSecsSinceEpoch(), r.createdAt.toMSecsSinceEpoch());
        QCOMPARE(got->lastAccessed.toMSecsSinceEpoch(), r.lastAccessed.toMSecsSinceEpoch());
        COMPARE_JSON(got->metadata, r.metadata);
        QVERIFY(s.get(r.id, false)->embedding.empty());
        const auto other = s.get(plain.id, true);
        QVERIFY(other.has_value());
        QVERIFY(*other == plain);
        QVERIFY(other->embedding.empty());
        QVERIFY(other->source.isEmpty());
        QVERIFY(!s.get(QStringLiteral("no-such-id")).has_value());
    };
    check(*store);
    if (onDisk) {
        store->close();
        auto reopened = openStore(path);
        check(*reopened);
        QCOMPARE(reopened->embedderBinding()->dimension, 4);
    }
}

// The categories and metadata columns are read without a JSON parser in their common forms ("[]",
// a compact array of plain strings, "{}"); every other form, as written by hand or another tool, reads
// the same through the parser, and a damaged one is reported.
void TestSqliteStorage::categoriesAndMetadataColumns_data()
{
    QTest::addColumn<QByteArray>("categories");
    QTest::addColumn<QByteArray>("metadata");
    QTest::addColumn<QStringList>("expectedCategories");
    QTest::addColumn<QByteArray>("expectedMetadata"); // empty: the store is reported damaged

    const QStringList none;
    QTest::newRow("empty") << QByteArray("[]") << QByteArray("{}") << none << QByteArray("{}");
    QTest::newRow("one") << QByteArray(R"(["a"])") << QByteArray("{}") << QStringList{"a"} << QByteArray("{}");
    QTest::newRow("several, empty name")
        << QByteArray(R"(["a","","c d"])") << QByteArray(R"({"k":1})") << QStringList{"a", "", "c d"} << QByteArray(R"({"k":1})");
    QTest::newRow("comma and bracket inside")
        << QByteArray(R"(["a,b","[x]"])") << QByteArray("{}") << QStringList{"a,b", "[x]"} << QByteArray("{}");
    QTest::newRow("escaped quote") << QByteArray(R"(["say \"hi\"","b"])") << QByteArray("{}")
                                   << QStringList{"say \"hi\"", "b"} << QByteArray("{}");
    QTest::newRow("escaped backslash and unicode")
        << QByteArray(R"(["a\\b","\u00e9t\u00e9"])") << QByteArray("{}") << QStringList{"a\\b", QString::fromUtf8("été")}
        << QByteArray("{}");
    QTest::newRow("raw utf-8") << QByteArray("[\"caf\xc3\xa9\"]") << QByteArray("{}") << QStringList{QString::fromUtf8("café")}
                               << QByteArray("{}");
    QTest::newRow("spaces") << QByteArray(R"([ "a" , "b" ])") << QByteArray(" { } ") << QStringList{"a", "b"} << QByteArray("{}");
    QTest::newRow("non-string entries skipped") << QByteArray(R"(["a",1,null])") << QByteArray("{}") << QStringList{"a"}
                                                << QByteArray("{}");
    QTest::newRow("trailing comma") << QByteArray(R"(["a",])") << QByteArray("{}") << none << QByteArray();
    QTest::newRow("missing comma") << QByteArray(R"(["a""b"])") << QByteArray("{}") << none << QByteArray();
    QTest::newRow("unterminated") << QByteArray(R"(["a)") << QByteArray("{}") << none << QByteArray();
    QTest::newRow("not an array") << QByteArray(R"("a")") << QByteArray("{}") << none << QByteArray();
    QTest::newRow("metadata not an object") << QByteArray("[]") << QByteArray("[]") << none << QByteArray();
}

void TestSqliteStorage::categoriesAndMetadataColumns()
{
    QFETCH(QByteArray, categories);
    QFETCH(QByteArray, metadata);
    QFETCH(QStringList, expectedCategories);
    QFETCH(QByteArray, expectedMetadata);
    test::TempStore tmp;
    const MemoryRecord r = makeRecord(QStringLiteral("written by another tool"), QStringLiteral("/t"), {1, 0});
    {
        auto store = openStore(tmp.path());
        store->save({r});
    }
    {
        sqlite3 *db = nullptr;
        QCOMPARE(sqlite3_open(tmp.path().toUtf8().constData(), &db), SQLITE_OK);
        sqlite3_stmt *st = nullptr;
        QCOMPARE(sqlite3_prepare_v2(db, "UPDATE records SET categories = ?, metadata = ?", -1, &st, nullptr), SQLITE_OK);
        sqlite3_bind_text(st, 1, categories.constData(), int(categories.size()), SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, metadata.constData(), int(metadata.size()), SQLITE_TRANSIENT);
        QCOMPARE(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
    auto store = openStore(tmp.path());
    if (expectedMetadata.isEmpty()) {
        // A damaged record is left out of reads (with a warning), listed by damagedRecords() with its
        // damaged columns as stored, reported by check(), deletable, and in nobody's way.
        QTest::ignoreMessage(QtWarningMsg, QRegularExpression(QStringLiteral("record %1 of .* is damaged").arg(r.id)));
        QVERIFY(!store->get(r.id).has_value());
        QVERIFY(store->search({1, 0}, {}, 5).empty());
        QVERIFY(store->list({}, 10, 0).empty());
        QVERIFY(store->keywordSearch(QStringLiteral("another tool"), {}, 5).empty());
        const std::vector<DamagedRecord> damaged = store->damagedRecords();
        QCOMPARE(damaged.size(), std::size_t(1));
        QCOMPARE(damaged.front().record.id, r.id);
        QCOMPARE(damaged.front().record.content, r.content);
        QCOMPARE(damaged.front().record.embedding, r.embedding);
        const bool badCategories = !categories.isEmpty() && categories != QByteArray("[]") && expectedCategories.isEmpty();
        if (badCategories)
            QCOMPARE(QString::fromStdString(damaged.front().raw.value("categories", std::string())), QString::fromUtf8(categories));
        QVERIFY(!store->check(false).ok());
        const MemoryRecord other = makeRecord(QStringLiteral("saved after the damage"), QStringLiteral("/t"), {0, 1});
        store->save({other});
        QVERIFY(store->get(other.id).has_value());
        QCOMPARE(store->categories({}).size(), 0);
        RecordFilter byId;
        byId.ids = {r.id};
        QCOMPARE(store->remove(byId), 1);
        QVERIFY(store->damagedRecords().empty());
        QVERIFY(store->check(false).ok());
        return;
    }
    const auto got = store->get(r.id);
    QVERIFY(got.has_value());
    QCOMPARE(got->categories, expectedCategories);
    COMPARE_JSON(got->metadata, Json::parse(expectedMetadata.toStdString()));
    const auto found = store->search({1, 0}, {}, 5);
    QCOMPARE(found.size(), std::size_t(1));
    QCOMPARE(found.front().record.categories, expectedCategories);
    if (!expectedCategories.isEmpty()) {
        RecordFilter byCategory;
        byCategory.categories = QStringList{expectedCategories.first()};
        QCOMPARE(store->search({1, 0}, byCategory, 5).size(), std::size_t(1));
    }
}

// The history's record JSON is written by hand (it is on every save's path): it must be what
// to_json makes of the record, for any text.
void TestSqliteStorage::historyHoldsTheRecordAsJson_data()
{
    QTest::addColumn<QString>("content");
    QTest::addColumn<QStringList>("categories");
    QTest::addColumn<QString>("source");
    QTest::addColumn<double>("importance");
    QTest::addColumn<QByteArray>("metadata");

    QTest::newRow("plain") << QStringLiteral("Ana prefers tea") << QStringList{} << QString() << 0.5 << QByteArray("{}");
    QTest::newRow("quotes and backslashes")
        << QStringLiteral("say \"hi\" C:\\dir\\") << QStringList{QStringLiteral("a\"b"), QStringLiteral("c\\")}
        << QStringLiteral("user:\"x\"") << 0.1 << QByteArray(R"({"k":"v\"w"})");
    QTest::newRow("control characters")
        << QString::fromUtf8("line\nbreak\ttab\rcr\bbs\fff\x01\x1f end") << QStringList{QStringLiteral("x\ny")}
        << QString() << 1.0 / 3.0 << QByteArray("{}");
    QTest::newRow("unicode") << QString::fromUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe6\x97\xa5\xe6\x9c\xac")
                             << QStringList{QString::fromUtf8("\xc3\xa9t\xc3\xa9")} << QString::fromUtf8("agent:\xc3\xa9")
                             << 0.0 << QByteArray(R"({"entities":["Zo\u00eb"],"n":{"x":1.5,"ok":true,"none":null}})");
    QTest::newRow("empty content, extreme importance") << QString() << QStringList{QString()} << QString() << 1.0
                                                       << QByteArray("{}");
}

void TestSqliteStorage::historyHoldsTheRecordAsJson()
{
    QFETCH(QString, content);
    QFETCH(QStringList, categories);
    QFETCH(QString, source);
    QFETCH(double, importance);
    QFETCH(QByteArray, metadata);
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    MemoryRecord r = makeRecord(content, QStringLiteral("/h"), {1, 0});
    r.categories = categories;
    r.source = source;
    r.importance = importance;
    r.isPrivate = !source.isEmpty();
    r.metadata = Json::parse(metadata.toStdString());
    r.accessCount = 3;
    store->save({r});
    MemoryRecord changed = r;
    changed.content += QStringLiteral(" (changed)");
    changed.embedding.clear();
    store->update(changed);
    RecordFilter one;
    one.ids = QStringList{r.id};
    QCOMPARE(store->remove(one), 1);

    Json expected, expectedChanged;
    to_json(expected, r);
    to_json(expectedChanged, changed);
    const std::vector<HistoryEntry> h = store->history(r.id);
    QCOMPARE(h.size(), std::size_t(3));
    COMPARE_JSON(h[0].newRecord, expected);
    QCOMPARE(h[0].newContent, content);
    COMPARE_JSON(h[1].oldRecord, expected);
    // The update's new record is the stored one (its update time may be the storage's).
    QCOMPARE(QString::fromStdString(h[1].newRecord["content"].get<std::string>()), changed.content);
    COMPARE_JSON(h[2].oldRecord["content"], expectedChanged["content"]);
    COMPARE_JSON(h[2].oldRecord["metadata"], expected["metadata"]);
    COMPARE_JSON(h[2].oldRecord["categories"], expected["categories"]);
    MemoryRecord back;
    from_json(h[0].newRecord, back);
    QCOMPARE(back.content, r.content);
    QCOMPARE(back.categories, r.categories);
    QCOMPARE(back.source, r.source);
    QCOMPARE(back.importance, r.importance);
    COMPARE_JSON(back.metadata, r.metadata);
}

// A batch's ADD entries are written several rows a statement (32, 16, ... 1): one entry per record,
// in the batch's order, for every batch size.
void TestSqliteStorage::batchHistoryInOrder()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    qint64 lastSeq = 0;
    for (int size : {1, 31, 32, 33, 77}) {
        std::vector<MemoryRecord> batch;
        for (int i = 0; i < size; ++i)
            batch.push_back(makeRecord(QStringLiteral("batch %1 record %2").arg(size).arg(i), QStringLiteral("/b"), {1, float(i)}));
        store->save(batch);
        for (const MemoryRecord &r : batch) {
            const std::vector<HistoryEntry> h = store->history(r.id);
            QCOMPARE(h.size(), std::size_t(1));
            QCOMPARE(h[0].event, HistoryEntry::Event::Add);
            QCOMPARE(h[0].newContent, r.content);
            QCOMPARE(QString::fromStdString(h[0].newRecord["id"].get<std::string>()), r.id);
            QVERIFY(h[0].seq > lastSeq);
            lastSeq = h[0].seq;
        }
    }
}

void TestSqliteStorage::failedSaveChangesNothing()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    MemoryRecord first = makeRecord(QStringLiteral("first"), QStringLiteral("/"), {1, 0});
    store->save({first});
    MemoryRecord a = makeRecord(QStringLiteral("new a"), QStringLiteral("/"), {0, 1});
    MemoryRecord dup = first;
    dup.content = QStringLiteral("duplicate id");
    const Caught c = catchError([&] { store->save({a, dup}); });
    VERIFY_ERROR(c, ErrorKind::InvalidArgument);
    QVERIFY2(c.message.contains(first.id), qPrintable(c.message));
    QCOMPARE(store->count({}), 1);
    QVERIFY(!store->get(a.id).has_value());
    QVERIFY(store->history(a.id).empty());
    QVERIFY(store->keywordSearch(QStringLiteral("new"), {}, 10).empty());
    QCOMPARE(store->search({0, 1}, {}, 10).size(), std::size_t(1));

    RecordFilter badFilter;
    badFilter.scopes = {QStringLiteral("/a//b")};
    VERIFY_ERROR(catchError([&] { store->search({0, 1}, badFilter, 10); }), ErrorKind::InvalidArgument);
    VERIFY_ERROR(catchError([&] { store->remove(badFilter); }), ErrorKind::InvalidArgument);
    QCOMPARE(store->count({}), 1);

    MemoryRecord badScope = makeRecord(QStringLiteral("bad scope"), QStringLiteral("/a//b"));
    VERIFY_ERROR(catchError([&] { store->save({badScope}); }), ErrorKind::InvalidArgument);
    QCOMPARE(store->count({}), 1);
}

void TestSqliteStorage::searchRanksByCosine()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    // Not unit vectors: the magnitudes differ, only the directions may count.
    const std::vector<std::pair<QString, Embedding>> items = {
        {QStringLiteral("opposite"), {-2, 0, 0}},
        {QStringLiteral("orthogonal"), {0, 5, 0}},
        {QStringLiteral("diagonal"), {0.1f, 0.1f, 0}},
        {QStringLiteral("same"), {10, 0, 0}},
        {QStringLiteral("close"), {100, 20, 0}},
    };
    std::vector<MemoryRecord> records;
    for (const auto &[name, e] : items)
        records.push_back(makeRecord(name, QStringLiteral("/"), e));
    store->save(records);

    const auto hits = store->search({1, 0, 0}, {}, 10);
    QStringList order;
    for (const auto &h : hits)
        order << h.record.content;
    QCOMPARE(order, (QStringList{QStringLiteral("same"), QStringLiteral("close"), QStringLiteral("diagonal"),
                                 QStringLiteral("orthogonal"), QStringLiteral("opposite")}));
    QVERIFY(std::abs(hits[0].score - 1.0) < 1e-6);
    QVERIFY(std::abs(hits[1].score - 100.0 / std::sqrt(100.0 * 100 + 400)) < 1e-5);
    QVERIFY(std::abs(hits[2].score - std::sqrt(0.5)) < 1e-5);
    QVERIFY(std::abs(hits[3].score) < 1e-6);
    QVERIFY(std::abs(hits[4].score + 1.0) < 1e-6);
    QVERIFY(hits[0].record.embedding.empty()); // not read for a search
    QCOMPARE(store->get(hits[0].record.id, true)->embedding, (Embedding{10, 0, 0}));

    const auto top2 = store->search({1, 0, 0}, {}, 2);
    QCOMPARE(top2.size(), std::size_t(2));
    QCOMPARE(top2[0].record.content, QStringLiteral("same"));
    QCOMPARE(top2[1].record.content, QStringLiteral("close"));
    QVERIFY(store->search({1, 0, 0}, {}, 0).empty());
}

// The filter fixture: name, scope, categories, source, private, hours after kBase, metadata.
struct FixtureRecord
{
    const char *name;
    const char *scope;
    QStringList categories;
    const char *source;
    bool isPrivate;
    int hours;
    Json metadata;
};

static std::vector<FixtureRecord> filterFixture()
{
    const QString fact = QStringLiteral("fact"), decision = QStringLiteral("decision"), pref = QStringLiteral("preference");
    return {
        {"n1", "/crew/a", {fact}, "", false, 0, Json{{"topic", "x"}}},
        {"n2", "/crew/a/x", {decision}, "", false, 1, Json{{"topic", "y"}}},
        {"n3", "/crew/ab", {fact}, "", false, 2, Json::object()},
        {"n4", "/crew", {pref}, "alice", true, 3, Json::object()},
        {"n5", "/crew/a", {pref, fact}, "bob", true, 4, Json{{"topic", "x"}}},
        {"n6", "/other", {}, "alice", false, 5, Json{{"topic", "x"}, {"n", 1}}},
        {"n7", "/w%", {}, "", false, 6, Json::object()},
        {"n8", "/wz", {}, "", false, 7, Json::object()},
        {"n9", "/crew/aXb", {}, "", false, 8, Json::object()},
        {"n10", "/Crew/a", {}, "", false, 9, Json{{"topic", 1}}},
    };
}

// Saves the filter fixture ("shared token <name>" records) and returns each name's record id.
static QHash<QString, QString> saveFilterFixture(StorageBackend &store)
{
    std::vector<MemoryRecord> records;
    QHash<QString, QString> idOf;
    int i = 0;
    for (const FixtureRecord &f : filterFixture()) {
        MemoryRecord r = makeRecord(QStringLiteral("shared token %1").arg(QLatin1String(f.name)), QLatin1String(f.scope),
                                    {1.0f, float(i) * 0.1f, 0.5f, 0}, f.hours);
        r.categories = f.categories;
        r.source = QLatin1String(f.source);
        r.isPrivate = f.isPrivate;
        r.metadata = f.metadata;
        idOf.insert(QLatin1String(f.name), r.id);
        records.push_back(r);
        ++i;
    }
    store.save(records);
    return idOf;
}

void TestSqliteStorage::filtersNeverLeak_data()
{
    QTest::addColumn<QStringList>("scopes");
    QTest::addColumn<QStringList>("categories");
    QTest::addColumn<QStringList>("ids"); // fixture names
    QTest::addColumn<int>("beforeHours"); // -1: none
    QTest::addColumn<int>("afterHours");  // -1: none
    QTest::addColumn<int>("privacy");     // 0 none, 1 apply, 2 apply + include private
    QTest::addColumn<QString>("viewer");
    QTest::addColumn<QString>("onlySource");
    QTest::addColumn<QString>("metadata");
    QTest::addColumn<QStringList>("expected");

    const QStringList all = {"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10"};
    const QStringList none;
    auto row = [&](const char *name, QStringList scopes, QStringList cats, QStringList ids, int before, int after, int privacy,
                   QString viewer, QString only, QString meta, QStringList expected) {
        QTest::newRow(name) << scopes << cats << ids << before << after << privacy << viewer << only << meta << expected;
    };
    row("no filter", none, none, none, -1, -1, 0, "", "", "", all);
    row("scope /crew/a, not /crew/ab", {"/crew/a"}, none, none, -1, -1, 0, "", "", "", {"n1", "n2", "n5"});
    row("trailing slash is normalised", {"/crew/a/"}, none, none, -1, -1, 0, "", "", "", {"n1", "n2", "n5"});
    row("scope /crew", {"/crew"}, none, none, -1, -1, 0, "", "", "", {"n1", "n2", "n3", "n4", "n5", "n9"});
    row("scope is case-sensitive", {"/Crew"}, none, none, -1, -1, 0, "", "", "", {"n10"});
    row("underscore is literal", {"/crew/a_b"}, none, none, -1, -1, 0, "", "", "", none);
    row("percent is literal", {"/w%"}, none, none, -1, -1, 0, "", "", "", {"n7"});
    row("two scopes", {"/crew/ab", "/other"}, none, none, -1, -1, 0, "", "", "", {"n3", "n6"});
    row("root scope", {"/"}, none, none, -1, -1, 0, "", "", "", all);
    row("leaf scope", {"/crew/a/x"}, none, none, -1, -1, 0, "", "", "", {"n2"});
    row("categories any-of", none, {"fact", "decision"}, none, -1, -1, 0, "", "", "", {"n1", "n2", "n3", "n5"});
    row("unknown category", none, {"nothing"}, none, -1, -1, 0, "", "", "", none);
    row("ids", none, none, {"n2", "n6"}, -1, -1, 0, "", "", "", {"n2", "n6"});
    row("created before", none, none, none, 2, -1, 0, "", "", "", {"n1", "n2"});
    row("created at or after", none, none, none, -1, 8, 0, "", "", "", {"n9", "n10"});
    row("created range", none, none, none, 5, 3, 0, "", "", "", {"n4", "n5"});
    row("privacy without viewer", none, none, none, -1, -1, 1, "", "", "", {"n1", "n2", "n3", "n6", "n7", "n8", "n9", "n10"});
    row("privacy, viewer alice", none, none, none, -1, -1, 1, "alice", "", "", {"n1", "n2", "n3", "n4", "n6", "n7", "n8", "n9", "n10"});
    row("privacy, include private", none, none, none, -1, -1, 2, "", "", "", all);
    row("only source alice", none, none, none, -1, -1, 0, "", "alice", "", {"n4", "n6"});
    row("metadata topic x", none, none, none, -1, -1, 0, "", "", R"({"topic": "x"})", {"n1", "n5", "n6"});
    row("metadata is typed", none, none, none, -1, -1, 0, "", "", R"({"topic": 1})", {"n10"});
    row("metadata and privacy", none, none, none, -1, -1, 1, "alice", "", R"({"topic": "x"})", {"n1", "n6"});
    row("scope, category and privacy", {"/crew"}, {"fact"}, none, -1, -1, 1, "", "", "", {"n1", "n3"});
}

void TestSqliteStorage::filtersNeverLeak()
{
    QFETCH(QStringList, scopes);
    QFETCH(QStringList, categories);
    QFETCH(QStringList, ids);
    QFETCH(int, beforeHours);
    QFETCH(int, afterHours);
    QFETCH(int, privacy);
    QFETCH(QString, viewer);
    QFETCH(QString, onlySource);
    QFETCH(QString, metadata);
    QFETCH(QStringList, expected);

    test::TempStore tmp;
    auto store = openStore(tmp.path());
    const QHash<QString, QString> idOf = saveFilterFixture(*store);

    RecordFilter filter;
    filter.scopes = scopes;
    filter.categories = categories;
    for (const QString &n : ids)
        filter.ids << idOf.value(n);
    if (beforeHours >= 0)
        filter.createdBefore = kBase.addSecs(3600LL * beforeHours);
    if (afterHours >= 0)
        filter.createdAfter = kBase.addSecs(3600LL * afterHours);
    filter.applyPrivacy = privacy > 0;
    filter.includePrivate = privacy > 1;
    filter.source = viewer;
    filter.onlySource = onlySource;
    if (!metadata.isEmpty())
        filter.metadata = Json::parse(metadata.toStdString());

    QSet<QString> want;
    for (const QString &n : expected)
        want.insert(QStringLiteral("shared token ") + n);

    // Every read applies the filter alike, privacy included (count() too).
    auto verify = [&](const QSet<QString> &wanted) {
        const QSet<QString> bySearch = contentsOf(store->search({1, 0, 0, 0}, filter, 100));
        QVERIFY2(bySearch == wanted, qPrintable(QStringLiteral("search: ") + describe(bySearch) + QStringLiteral(" != ") + describe(wanted)));
        const QSet<QString> byKeyword = contentsOf(store->keywordSearch(QStringLiteral("shared"), filter, 100));
        QVERIFY2(byKeyword == wanted, qPrintable(QStringLiteral("keyword: ") + describe(byKeyword) + QStringLiteral(" != ") + describe(wanted)));
        const std::vector<MemoryRecord> listed = store->list(filter, -1, 0);
        QVERIFY2(contentsOf(listed) == wanted, qPrintable(QStringLiteral("list: ") + describe(contentsOf(listed))));
        for (std::size_t k = 1; k < listed.size(); ++k)
            QVERIFY(listed[k - 1].createdAt >= listed[k].createdAt);
        QCOMPARE(store->count(filter), int(wanted.size()));
        // A limit of 1 returns one of the selected records.
        const auto one = store->search({1, 0, 0, 0}, filter, 1);
        QCOMPARE(one.size(), std::size_t(wanted.isEmpty() ? 0 : 1));
        if (!one.empty())
            QVERIFY(wanted.contains(one[0].record.content));
    };
    verify(want); // a freshly loaded vector index
    if (QTest::currentTestFailed())
        return;

    // A write updates the loaded index in place; the core's RecordFilter::matches is the oracle.
    MemoryRecord outsider = makeRecord(QStringLiteral("shared token outsider"), QStringLiteral("/zzz"), {1, 0, 0, 0}, 100);
    outsider.isPrivate = true;
    outsider.source = QStringLiteral("carol");
    outsider.categories = {QStringLiteral("fact")};
    outsider.metadata = Json{{"topic", "z"}};
    store->save({outsider});
    if (filter.matches(outsider))
        want.insert(outsider.content);
    verify(want);
}

void TestSqliteStorage::keywordSearch_data()
{
    QTest::addColumn<QString>("query");
    QTest::addColumn<QStringList>("expected"); // contents expected among the hits (exactly these)

    const QString invoice = QStringLiteral("Invoice 48213 was paid by Zyrtec Corp");
    const QString meeting = QStringLiteral("Meeting with Ana Müller about the roadmap");
    const QString cpp = QStringLiteral("The build uses C++20 and Qt 6.4");
    QTest::newRow("number") << QStringLiteral("48213") << QStringList{invoice};
    QTest::newRow("rare name, any case") << QStringLiteral("zyrtec") << QStringList{invoice};
    QTest::newRow("diacritics removed") << QStringLiteral("Muller") << QStringList{meeting};
    QTest::newRow("stemmed") << QStringLiteral("meetings") << QStringList{meeting};
    QTest::newRow("two words, either") << QStringLiteral("roadmap invoice") << QStringList{invoice, meeting};
    QTest::newRow("unbalanced quote") << QStringLiteral("\"zyrtec") << QStringList{invoice};
    // Operators are plain words: "AND" finds the "and" of the third record. Beside other words it is
    // a stop word, left out like "the" and "what".
    QTest::newRow("AND alone") << QStringLiteral("AND") << QStringList{cpp};
    QTest::newRow("AND between words") << QStringLiteral("roadmap AND invoice") << QStringList{invoice, meeting};
    QTest::newRow("stop words left out") << QStringLiteral("What is the roadmap?") << QStringList{meeting};
    QTest::newRow("only stop words") << QStringLiteral("the") << QStringList{meeting, cpp};
    QTest::newRow("OR NOT NEAR") << QStringLiteral("OR NOT NEAR(") << QStringList{};
    QTest::newRow("star") << QStringLiteral("Zyr*") << QStringList{};
    QTest::newRow("lone star") << QStringLiteral("*") << QStringList{};
    QTest::newRow("minus") << QStringLiteral("-invoice") << QStringList{invoice};
    QTest::newRow("parentheses") << QStringLiteral("(roadmap") << QStringList{meeting};
    QTest::newRow("column syntax") << QStringLiteral("content:48213") << QStringList{invoice};
    QTest::newRow("caret and plus") << QStringLiteral("^C++20 +Qt") << QStringList{cpp};
    QTest::newRow("sql injection") << QStringLiteral("'; DROP TABLE records; --") << QStringList{};
    QTest::newRow("emoji only") << QStringLiteral("🚀🎉") << QStringList{};
    QTest::newRow("emoji and word") << QStringLiteral("🚀roadmap🎉") << QStringList{meeting};
    QTest::newRow("empty") << QString() << QStringList{};
    QTest::newRow("punctuation only") << QStringLiteral("?!.,;:\"'`") << QStringList{};
}

void TestSqliteStorage::keywordSearch()
{
    QFETCH(QString, query);
    QFETCH(QStringList, expected);
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    store->save({makeRecord(QStringLiteral("Invoice 48213 was paid by Zyrtec Corp")),
                 makeRecord(QStringLiteral("Meeting with Ana Müller about the roadmap")),
                 makeRecord(QStringLiteral("The build uses C++20 and Qt 6.4")),
                 makeRecord(QStringLiteral("Nothing to see here"))});
    std::vector<ScoredRecord> hits;
    const Caught c = catchError([&] { hits = store->keywordSearch(query, {}, 10); });
    QVERIFY2(!c.thrown, qPrintable(c.message));
    QSet<QString> want(expected.begin(), expected.end());
    QVERIFY2(contentsOf(hits) == want, qPrintable(describe(contentsOf(hits))));
    for (std::size_t i = 0; i < hits.size(); ++i) {
        QVERIFY(hits[i].score > 0);
        if (i > 0)
            QVERIFY(hits[i - 1].score >= hits[i].score);
    }
}

void TestSqliteStorage::keywordIndexFollowsWrites()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    MemoryRecord once = makeRecord(QStringLiteral("the falcon flew"));
    MemoryRecord thrice = makeRecord(QStringLiteral("falcon falcon falcon, the falcon nests"));
    store->save({once, thrice});
    auto hits = store->keywordSearch(QStringLiteral("falcon"), {}, 10);
    QCOMPARE(hits.size(), std::size_t(2));
    QCOMPARE(hits[0].record.id, thrice.id); // more occurrences rank higher
    QVERIFY(hits[0].score >= hits[1].score);
    QCOMPARE(store->keywordSearch(QStringLiteral("falcon"), {}, 1).size(), std::size_t(1));

    once.content = QStringLiteral("the heron waded");
    store->update(once);
    QCOMPARE(store->keywordSearch(QStringLiteral("falcon"), {}, 10).size(), std::size_t(1));
    QCOMPARE(store->keywordSearch(QStringLiteral("heron"), {}, 10).size(), std::size_t(1));
    RecordFilter byId;
    byId.ids = {thrice.id};
    QCOMPARE(store->remove(byId), 1);
    QVERIFY(store->keywordSearch(QStringLiteral("falcon"), {}, 10).empty());
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM records_fts")), QStringLiteral("1"));
}

// The keyword search keeps each term's record count and each record's length between queries: after
// every kind of write, by this connection or another, its scores are those of a connection that has
// kept nothing.
void TestSqliteStorage::keywordScoresStayExactAcrossWrites()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    std::vector<MemoryRecord> records;
    for (int i = 0; i < 40; ++i)
        records.push_back(makeRecord(QStringLiteral("harbour note %1 %2").arg(i).arg(i % 3 ? QStringLiteral("tide") : QStringLiteral("tide tide gull"))));
    records[5].context = QStringLiteral("the gull asked about the harbour");
    store->save(records);
    const auto scores = [](StorageBackend &s, double contextWeight) {
        QList<QPair<QString, double>> out;
        for (const QString &q : {QStringLiteral("tide gull"), QStringLiteral("harbour tide"), QStringLiteral("gull")})
            for (const ScoredRecord &h : s.keywordSearch(q, {}, 50, contextWeight))
                out.append({h.record.id, h.score});
        return out;
    };
    const auto sameAsFresh = [&] {
        auto fresh = openStore(tmp.path());
        for (const double weight : {0.0, 0.3})
            QCOMPARE(scores(*store, weight), scores(*fresh, weight));
    };
    sameAsFresh(); // and now both have counted and measured

    records[1].content = QStringLiteral("gull gull gull and a much longer note about the harbour than before, tide");
    store->update(records[1]);
    sameAsFresh();
    store->save({makeRecord(QStringLiteral("a new gull")), makeRecord(QStringLiteral("another tide"))});
    sameAsFresh();
    RecordFilter byId;
    byId.ids = {records[2].id, records[3].id};
    QCOMPARE(store->remove(byId), 2);
    sameAsFresh();
    {
        auto other = openStore(tmp.path()); // another connection writes
        records[4].content = QStringLiteral("tide");
        other->update(records[4]);
        other->save({makeRecord(QStringLiteral("gull on the harbour wall"))});
    }
    sameAsFresh();
    store->remove(RecordFilter{});
    store->save({makeRecord(QStringLiteral("tide gull"))});
    sameAsFresh();
}

void TestSqliteStorage::keywordContextCountsAtItsWeight()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    MemoryRecord said = makeRecord(QStringLiteral("I saw the lighthouse"));
    MemoryRecord reply = makeRecord(QStringLiteral("Me too, twice"));
    reply.context = QStringLiteral("I saw the lighthouse\nLunch later?");
    MemoryRecord far = makeRecord(QStringLiteral("Lunch later?"));
    store->save({said, reply, far});

    // Weight 0: the content alone.
    auto hits = store->keywordSearch(QStringLiteral("lighthouse"), {}, 10);
    QCOMPARE(hits.size(), std::size_t(1));
    QCOMPARE(hits[0].record.id, said.id);
    QVERIFY(store->keywordSearch(QStringLiteral("twice lighthouse"), {}, 10, 0).size() == 2);

    // A word in the context counts at its weight: below the same word in the content.
    hits = store->keywordSearch(QStringLiteral("lighthouse"), {}, 10, 0.3);
    QCOMPARE(hits.size(), std::size_t(2));
    QCOMPARE(hits[0].record.id, said.id);
    QCOMPARE(hits[1].record.id, reply.id);
    QVERIFY(hits[1].score < hits[0].score);
    const double weak = hits[1].score;
    hits = store->keywordSearch(QStringLiteral("lighthouse"), {}, 10, 0.9);
    QCOMPARE(hits[1].record.id, reply.id);
    QVERIFY(hits[1].score > weak);
    QVERIFY(hits[1].record.context.isEmpty()); // the context is indexed, not returned

    // An update of the content keeps the context.
    reply.content = QStringLiteral("Me too, on Monday");
    store->update(reply);
    QCOMPARE(store->keywordSearch(QStringLiteral("lighthouse"), {}, 10, 0.3).size(), std::size_t(2));
    QCOMPARE(store->keywordSearch(QStringLiteral("twice"), {}, 10, 0.3).size(), std::size_t(0));

    VERIFY_ERROR(catchError([&] { store->keywordSearch(QStringLiteral("lighthouse"), {}, 10, -1); }), ErrorKind::InvalidArgument);
    VERIFY_ERROR(catchError([&] { store->keywordSearch(QStringLiteral("lighthouse"), {}, 10, std::nan("")); }),
                 ErrorKind::InvalidArgument);
}

void TestSqliteStorage::updateRemoveRestoreAndHistory()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    MemoryRecord r = makeRecord(QStringLiteral("the meeting is on Monday"), QStringLiteral("/team"), {1, 0, 0});
    r.categories = {QStringLiteral("schedule")};
    store->save({r});

    MemoryRecord changed = r;
    changed.content = QStringLiteral("the meeting moved to Tuesday");
    changed.updatedAt = kBase.addDays(1);
    changed.embedding.clear(); // keeps the stored one
    store->update(changed);
    auto got = store->get(r.id, true);
    QVERIFY(got.has_value());
    QCOMPARE(got->content, changed.content);
    QCOMPARE(got->updatedAt, changed.updatedAt);
    QCOMPARE(got->embedding, r.embedding);
    QCOMPARE(store->search({1, 0, 0}, {}, 1).at(0).record.content, changed.content);

    MemoryRecord moved = changed;
    moved.scope = QStringLiteral("/team/b");
    moved.embedding = {0, 1, 0};
    store->update(moved);
    QCOMPARE(store->get(r.id, true)->embedding, moved.embedding);
    QCOMPARE(store->search({0, 1, 0}, {}, 1).at(0).record.scope, QStringLiteral("/team/b"));
    RecordFilter inB;
    inB.scopes = {QStringLiteral("/team/b")};
    QCOMPARE(store->search({0, 1, 0}, inB, 5).size(), std::size_t(1));

    MemoryRecord unknown = makeRecord(QStringLiteral("ghost"));
    VERIFY_ERROR(catchError([&] { store->update(unknown); }), ErrorKind::NotFound);

    RecordFilter byId;
    byId.ids = {r.id};
    QCOMPARE(store->remove(byId), 1);
    QVERIFY(!store->get(r.id).has_value());
    QVERIFY(store->search({0, 1, 0}, {}, 5).empty());

    const std::vector<HistoryEntry> h = store->history(r.id);
    QCOMPARE(h.size(), std::size_t(4));
    QCOMPARE(h[0].event, HistoryEntry::Event::Add);
    QCOMPARE(h[1].event, HistoryEntry::Event::Update);
    QCOMPARE(h[2].event, HistoryEntry::Event::Update);
    QCOMPARE(h[3].event, HistoryEntry::Event::Delete);
    for (std::size_t i = 1; i < h.size(); ++i)
        QVERIFY(h[i].seq > h[i - 1].seq);
    Json expect;
    to_json(expect, r);
    QVERIFY(h[0].oldRecord.is_null());
    QVERIFY(h[0].oldContent.isNull());
    COMPARE_JSON(h[0].newRecord, expect);
    QCOMPARE(h[1].oldContent, r.content);
    QCOMPARE(h[1].newContent, changed.content);
    COMPARE_JSON(h[1].oldRecord, expect);
    to_json(expect, changed);
    COMPARE_JSON(h[1].newRecord, expect);
    to_json(expect, moved);
    COMPARE_JSON(h[3].oldRecord, expect);
    QVERIFY(h[3].newRecord.is_null());
    QVERIFY(h[3].newContent.isNull());
    QVERIFY(h[3].at.isValid());

    // Undo the delete from the history alone (plus the embedding, which history does not keep).
    MemoryRecord back;
    from_json(h[3].oldRecord, back);
    back.embedding = moved.embedding;
    store->restore(back);
    got = store->get(r.id, true);
    QVERIFY(got.has_value());
    QVERIFY(*got == moved);
    QCOMPARE(got->embedding, moved.embedding);
    QCOMPARE(store->history(r.id).back().event, HistoryEntry::Event::Add);
    QCOMPARE(store->search({0, 1, 0}, {}, 1).size(), std::size_t(1));
    VERIFY_ERROR(catchError([&] { store->restore(back); }), ErrorKind::InvalidArgument);
}

void TestSqliteStorage::resetSubtreeAndEverything()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    store->bindEmbedder({QStringLiteral("test/a"), 2});
    MemoryRecord top = makeRecord(QStringLiteral("top"), QStringLiteral("/"), {1, 0});
    MemoryRecord a = makeRecord(QStringLiteral("a"), QStringLiteral("/crew/a"), {1, 0});
    MemoryRecord ax = makeRecord(QStringLiteral("a x"), QStringLiteral("/crew/a/x"), {1, 0});
    MemoryRecord ab = makeRecord(QStringLiteral("ab"), QStringLiteral("/crew/ab"), {1, 0});
    store->save({top, a, ax, ab});
    QCOMPARE(store->search({1, 0}, {}, 10).size(), std::size_t(4)); // index loaded

    QCOMPARE(store->reset(QStringLiteral("/crew/a")), 2);
    QVERIFY(!store->get(a.id).has_value());
    QVERIFY(!store->get(ax.id).has_value());
    QVERIFY(store->get(ab.id).has_value());
    QVERIFY(store->get(top.id).has_value());
    QCOMPARE(store->history(a.id).back().event, HistoryEntry::Event::Delete);
    Json expect;
    to_json(expect, ax);
    COMPARE_JSON(store->history(ax.id).back().oldRecord, expect);
    QCOMPARE(contentsOf(store->search({1, 0}, {}, 10)), (QSet<QString>{QStringLiteral("top"), QStringLiteral("ab")}));
    QVERIFY(store->embedderBinding().has_value());

    QCOMPARE(store->reset(QStringLiteral("/")), 2);
    QCOMPARE(store->count({}), 0);
    QVERIFY(store->history(top.id).empty());
    QVERIFY(store->history(a.id).empty());
    QVERIFY(!store->embedderBinding().has_value());
    QVERIFY(store->search({1, 0}, {}, 10).empty());
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM records_fts")), QStringLiteral("0"));
    // The store can be rebuilt with another embedder.
    store->bindEmbedder({QStringLiteral("test/b"), 3});
    store->save({makeRecord(QStringLiteral("again"), QStringLiteral("/"), {0, 0, 1})});
    QCOMPARE(store->search({0, 0, 1}, {}, 10).size(), std::size_t(1));
    VERIFY_ERROR(catchError([&] { store->reset(QStringLiteral("/a/../b")); }), ErrorKind::InvalidArgument);
}

void TestSqliteStorage::findExact()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    MemoryRecord r = makeRecord(QStringLiteral("Ana likes tea"), QStringLiteral("/people"));
    r.source = QStringLiteral("ana");
    r.isPrivate = true;
    MemoryRecord shared = makeRecord(QStringLiteral("Ana likes tea"), QStringLiteral("/people"));
    store->save({r, shared});
    const auto hit = store->findExact(r.content, r.scope, r.source, true);
    QVERIFY(hit.has_value());
    QCOMPARE(hit->id, r.id);
    QCOMPARE(store->findExact(r.content, r.scope, QString(), false)->id, shared.id);
    QVERIFY(!store->findExact(r.content, QStringLiteral("/people/x"), r.source, true).has_value());
    QVERIFY(!store->findExact(r.content, r.scope, QStringLiteral("bob"), true).has_value());
    QVERIFY(!store->findExact(r.content, r.scope, r.source, false).has_value());
    QVERIFY(!store->findExact(QStringLiteral("ana likes tea"), r.scope, r.source, true).has_value());
    QVERIFY(!store->findExact(r.content + QLatin1Char(' '), r.scope, r.source, true).has_value());

    // The batch form answers each record as the single one does, in order.
    MemoryRecord elsewhere = shared;
    elsewhere.scope = QStringLiteral("/people/x");
    MemoryRecord otherSource = r;
    otherSource.source = QStringLiteral("bob");
    const auto found = store->findExact(std::vector<MemoryRecord>{shared, elsewhere, r, otherSource});
    QCOMPARE(found.size(), std::size_t(4));
    QCOMPARE(found[0]->id, shared.id);
    QVERIFY(!found[1].has_value());
    QCOMPARE(found[2]->id, r.id);
    QVERIFY(!found[3].has_value());
    QVERIFY(store->findExact(std::vector<MemoryRecord>{}).empty());
}

// The lookup behind findExact follows every write: a content change moves the record to its new
// text, a delete and a reset remove it, and a record is found before and after the recent entries
// are merged into the main table.
void TestSqliteStorage::findExactFollowsWrites()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    const auto found = [&](const QString &content) -> QString {
        const auto hit = store->findExact(content, QStringLiteral("/"), QString(), false);
        return hit ? hit->id : QString();
    };
    MemoryRecord a = makeRecord(QStringLiteral("the kettle is blue"));
    MemoryRecord b = makeRecord(QStringLiteral("the kettle is red"));
    store->save({a, b});
    QCOMPARE(found(a.content), a.id);

    a.content = QStringLiteral("the kettle is green");
    store->update(a);
    QCOMPARE(found(QStringLiteral("the kettle is blue")), QString());
    QCOMPARE(found(QStringLiteral("the kettle is green")), a.id);
    a.importance = 0.9; // not a content change: still found once
    store->update(a);
    QCOMPARE(found(a.content), a.id);
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM content_hashes_recent")), QStringLiteral("2"));

    RecordFilter byId;
    byId.ids = {b.id};
    QCOMPARE(store->remove(byId), 1);
    QCOMPARE(found(b.content), QString());
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM content_hashes_recent")), QStringLiteral("1"));

    // Enough records to move the recent entries into the main table, in batches as Memory writes them.
    std::vector<MemoryRecord> batch;
    const int total = 16384 + 600;
    for (int i = 0; i < total; ++i) {
        batch.push_back(makeRecord(QStringLiteral("filler %1").arg(i)));
        if (batch.size() == 500 || i == total - 1) {
            store->save(batch);
            batch.clear();
        }
    }
    const int recent = rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM content_hashes_recent")).toInt();
    const int merged = rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM content_hashes")).toInt();
    QVERIFY2(merged >= 16384 && recent < 16384 && merged + recent == total + 1, qPrintable(QStringLiteral("%1 + %2").arg(merged).arg(recent)));
    QCOMPARE(found(a.content), a.id); // merged
    QVERIFY(!found(QStringLiteral("filler 0")).isEmpty());
    QVERIFY(!found(QStringLiteral("filler %1").arg(total - 1)).isEmpty()); // recent
    QCOMPARE(found(QStringLiteral("filler %1").arg(total)), QString());

    // A content change and a delete of a merged record leave no stale entry behind.
    a.content = QStringLiteral("the kettle is black");
    store->update(a);
    QCOMPARE(found(QStringLiteral("the kettle is green")), QString());
    QCOMPARE(found(a.content), a.id);
    const QString first = found(QStringLiteral("filler 0"));
    byId.ids = {first};
    QCOMPARE(store->remove(byId), 1);
    QCOMPARE(found(QStringLiteral("filler 0")), QString());
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT (SELECT count(*) FROM content_hashes) + (SELECT count(*) FROM content_hashes_recent) "
                                                  "- (SELECT count(*) FROM records)")),
             QStringLiteral("0"));
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM records r WHERE NOT EXISTS (SELECT 1 FROM content_hashes h "
                                                  "WHERE h.hash = r.content_hash AND h.rid = r.rid) AND NOT EXISTS (SELECT 1 FROM "
                                                  "content_hashes_recent h WHERE h.hash = r.content_hash AND h.rid = r.rid)")),
             QStringLiteral("0"));

    store->reset(QStringLiteral("/"));
    QCOMPARE(found(a.content), QString());
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT (SELECT count(*) FROM content_hashes) + (SELECT count(*) FROM content_hashes_recent)")),
             QStringLiteral("0"));
}

void TestSqliteStorage::scopeTreeStatistics()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    auto rec = [](const char *content, const char *scope, QStringList cats, int hours, bool priv = false) {
        MemoryRecord r = makeRecord(QLatin1String(content), QLatin1String(scope), {}, hours);
        r.categories = cats;
        r.isPrivate = priv;
        if (priv)
            r.source = QStringLiteral("someone");
        return r;
    };
    store->save({rec("root", "/", {"misc"}, 0), rec("a", "/a", {"zeta", "alpha"}, 1), rec("ab deep", "/a/b/c", {"beta"}, 2),
                 rec("a x", "/a/x", {"alpha"}, 3, true), rec("ab sibling", "/ab", {"other"}, 4), rec("deep only", "/d/e/f", {}, 5)});

    const ScopeInfo a = store->scopeInfo(QStringLiteral("/a"), {});
    QCOMPARE(a.path, QStringLiteral("/a"));
    QCOMPARE(a.recordCount, 3);
    QCOMPARE(a.categories, (QStringList{"alpha", "beta", "zeta"}));
    QCOMPARE(a.oldestRecord, kBase.addSecs(3600));
    QCOMPARE(a.newestRecord, kBase.addSecs(3 * 3600));
    QCOMPARE(a.childScopes, (QStringList{"/a/b", "/a/x"}));

    const ScopeInfo root = store->scopeInfo(QStringLiteral("/"), {});
    QCOMPARE(root.recordCount, 6);
    QCOMPARE(root.childScopes, (QStringList{"/a", "/ab", "/d"}));
    QCOMPARE(root.categories, (QStringList{"alpha", "beta", "misc", "other", "zeta"}));

    const ScopeInfo empty = store->scopeInfo(QStringLiteral("/nothing/here"), {});
    QCOMPARE(empty.path, QStringLiteral("/nothing/here"));
    QCOMPARE(empty.recordCount, 0);
    QVERIFY(!empty.oldestRecord.isValid());
    QVERIFY(empty.childScopes.isEmpty());

    QCOMPARE(store->childScopes(QStringLiteral("/"), {}), (QStringList{"/a", "/ab", "/d"}));
    QCOMPARE(store->childScopes(QStringLiteral("/a"), {}), (QStringList{"/a/b", "/a/x"}));
    QCOMPARE(store->childScopes(QStringLiteral("/a/b"), {}), (QStringList{"/a/b/c"}));
    QCOMPARE(store->childScopes(QStringLiteral("/d"), {}), (QStringList{"/d/e"}));
    QCOMPARE(store->childScopes(QStringLiteral("/a/b/c"), {}), QStringList{});
    QCOMPARE(store->childScopes(QStringLiteral("/zz"), {}), QStringList{});

    RecordFilter inA;
    inA.scopes = {QStringLiteral("/a")};
    QCOMPARE(store->count(inA), 3);
    QMap<QString, int> cats = store->categories(inA);
    QCOMPARE(cats, (QMap<QString, int>{{"alpha", 2}, {"beta", 1}, {"zeta", 1}}));
    // Privacy applies to every read: the private record in /a/x is not counted, nor its scope named.
    inA.applyPrivacy = true;
    QCOMPARE(store->count(inA), 2);
    QCOMPARE(store->categories(inA), (QMap<QString, int>{{"alpha", 1}, {"beta", 1}, {"zeta", 1}}));
    RecordFilter shared;
    shared.applyPrivacy = true;
    QCOMPARE(store->scopeInfo(QStringLiteral("/a"), shared).recordCount, 2);
    QCOMPARE(store->scopeInfo(QStringLiteral("/a"), shared).childScopes, QStringList{"/a/b"});
    QCOMPARE(store->childScopes(QStringLiteral("/a"), shared), QStringList{"/a/b"});
    RecordFilter owner = shared;
    owner.source = QStringLiteral("someone");
    QCOMPARE(store->childScopes(QStringLiteral("/a"), owner), (QStringList{"/a/b", "/a/x"}));
    QCOMPARE(store->categories({}).value(QStringLiteral("alpha")), 2);
    RecordFilter alphaX;
    alphaX.metadata = Json::object();
    alphaX.categories = {QStringLiteral("alpha"), QStringLiteral("misc")};
    QCOMPARE(store->count(alphaX), 3);

    // list: newest first, limit and offset
    const auto page = store->list({}, 2, 1);
    QCOMPARE(page.size(), std::size_t(2));
    QCOMPARE(page[0].content, QStringLiteral("ab sibling"));
    QCOMPARE(page[1].content, QStringLiteral("a x"));
    QVERIFY(store->list({}, 0, 0).empty());
    QCOMPARE(store->list({}, 100, 5).size(), std::size_t(1));
}

void TestSqliteStorage::touchCountsAccess()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    MemoryRecord r = makeRecord(QStringLiteral("touched"));
    MemoryRecord other = makeRecord(QStringLiteral("untouched"));
    store->save({r, other});
    const QDateTime at = QDateTime(QDate(2025, 1, 1), QTime(8, 30, 0, 250), Qt::UTC);
    store->touch({r.id, QStringLiteral("missing-id")}, at);
    store->touch({r.id}, at.addSecs(60));
    const auto got = store->get(r.id);
    QCOMPARE(got->accessCount, 2);
    QCOMPARE(got->lastAccessed, at.addSecs(60));
    QCOMPARE(got->updatedAt, r.updatedAt);
    QCOMPARE(store->get(other.id)->accessCount, 0);
    QCOMPARE(store->history(r.id).size(), std::size_t(1));
}

void TestSqliteStorage::embedderBinding()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    QVERIFY(!store->embedderBinding().has_value());
    store->bindEmbedder({QStringLiteral("builtin/hash-v1"), 4});
    QCOMPARE(store->embedderBinding()->embedderId, QStringLiteral("builtin/hash-v1"));
    QCOMPARE(store->embedderBinding()->dimension, 4);
    store->bindEmbedder({QStringLiteral("builtin/hash-v1"), 4}); // the same again is fine
    store->save({makeRecord(QStringLiteral("four"), QStringLiteral("/"), {1, 2, 3, 4})});

    auto checkMismatch = [](const Caught &c) {
        VERIFY_ERROR(c, ErrorKind::EmbedderMismatch);
        QVERIFY2(c.message.contains(QLatin1String("4-dimensional")), qPrintable(c.message));
        QVERIFY2(c.message.contains(QLatin1String("8-dimensional")), qPrintable(c.message));
        QVERIFY2(c.message.contains(QLatin1String("mneme reset --yes")), qPrintable(c.message));
        QVERIFY2(c.message.contains(QLatin1String("mneme export")), qPrintable(c.message));
        QVERIFY2(c.message.contains(QLatin1String("mneme import --reembed")), qPrintable(c.message));
    };
    Caught c = catchError([&] { store->bindEmbedder({QStringLiteral("openai/text-embedding-3-small"), 8}); });
    checkMismatch(c);
    if (QTest::currentTestFailed())
        return;
    QVERIFY(c.message.contains(QLatin1String("builtin/hash-v1")));
    QVERIFY(c.message.contains(QLatin1String("openai/text-embedding-3-small")));
    c = catchError([&] { store->bindEmbedder({QStringLiteral("other/model"), 4}); });
    VERIFY_ERROR(c, ErrorKind::EmbedderMismatch);
    QVERIFY(c.message.contains(QLatin1String("other/model")));

    checkMismatch(catchError([&] { store->save({makeRecord(QStringLiteral("eight"), QStringLiteral("/"), Embedding(8, 1.0f))}); }));
    checkMismatch(catchError([&] { store->search(Embedding(8, 1.0f), {}, 5); }));
    MemoryRecord existing = store->list({}, 1, 0).at(0);
    existing.embedding = Embedding(8, 1.0f);
    checkMismatch(catchError([&] { store->update(existing); }));
    QCOMPARE(store->count({}), 1);

    // The binding survives reopening, and a different embedder is detected at once.
    store->close();
    store = openStore(tmp.path());
    QCOMPARE(store->embedderBinding()->embedderId, QStringLiteral("builtin/hash-v1"));
    checkMismatch(catchError([&] { store->bindEmbedder({QStringLiteral("openai/text-embedding-3-small"), 8}); }));

    store->reset(QStringLiteral("/"));
    QVERIFY(!store->embedderBinding().has_value());
    store->bindEmbedder({QStringLiteral("openai/text-embedding-3-small"), 8});
    store->save({makeRecord(QStringLiteral("eight"), QStringLiteral("/"), Embedding(8, 1.0f))});
    QCOMPARE(store->search(Embedding(8, 1.0f), {}, 5).size(), std::size_t(1));
    QCOMPARE(store->embedderBinding()->dimension, 8);
}

void TestSqliteStorage::mixedBatchRefusedOnFreshStore()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    const Caught c = catchError([&] {
        store->save({makeRecord(QStringLiteral("a"), QStringLiteral("/"), {1, 2, 3}),
                     makeRecord(QStringLiteral("no vector")),
                     makeRecord(QStringLiteral("b"), QStringLiteral("/"), {1, 2, 3, 4})});
    });
    VERIFY_ERROR(c, ErrorKind::EmbedderMismatch);
    QVERIFY2(c.message.contains(QLatin1String("3-dimensional")) && c.message.contains(QLatin1String("4-dimensional")), qPrintable(c.message));
    QCOMPARE(store->count({}), 0);
    QVERIFY(!store->embedderBinding().has_value());
    // A first embedded save fixes the dimension even before an embedder is bound.
    store->save({makeRecord(QStringLiteral("a"), QStringLiteral("/"), {1, 2, 3})});
    QCOMPARE(store->embedderBinding()->dimension, 3);
    VERIFY_ERROR(catchError([&] { store->save({makeRecord(QStringLiteral("b"), QStringLiteral("/"), {1, 2, 3, 4})}); }),
                 ErrorKind::EmbedderMismatch);
    store->bindEmbedder({QStringLiteral("test/three"), 3});
    QCOMPARE(store->embedderBinding()->embedderId, QStringLiteral("test/three"));
}

void TestSqliteStorage::otherConnectionsAreSeen()
{
    test::TempStore tmp;
    auto a = openStore(tmp.path());
    auto b = openStore(tmp.path());
    a->save({makeRecord(QStringLiteral("from a"), QStringLiteral("/"), {1, 0})});
    QCOMPARE(b->search({1, 0}, {}, 10).size(), std::size_t(1)); // b loads its index
    QCOMPARE(a->search({1, 0}, {}, 10).size(), std::size_t(1)); // a loads its index
    MemoryRecord fromB = makeRecord(QStringLiteral("from b"), QStringLiteral("/"), {0, 1});
    b->save({fromB});
    QCOMPARE(a->search({0, 1}, {}, 1).at(0).record.content, QStringLiteral("from b"));
    RecordFilter byId;
    byId.ids = {fromB.id};
    b->remove(byId);
    QCOMPARE(a->search({0, 1}, {}, 10).size(), std::size_t(1));
    QCOMPARE(a->embedderBinding()->dimension, 2);
    b->reset(QStringLiteral("/"));
    QVERIFY(a->search({0, 1}, {}, 10).empty());
    QVERIFY(!a->embedderBinding().has_value());
    a->save({makeRecord(QStringLiteral("three"), QStringLiteral("/"), {0, 1, 0})});
    VERIFY_ERROR(catchError([&] { b->save({makeRecord(QStringLiteral("two"), QStringLiteral("/"), {0, 1})}); }),
                 ErrorKind::EmbedderMismatch);
}

void TestSqliteStorage::schemaTooNewLeavesFileUntouched()
{
    test::TempStore tmp;
    {
        auto store = openStore(tmp.path());
        store->save({makeRecord(QStringLiteral("kept"))});
    }
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("UPDATE meta SET value = '99' WHERE key = 'schema_version' RETURNING value")),
             QStringLiteral("99"));
    QVERIFY(!QFile::exists(tmp.path() + QStringLiteral("-wal")));
    const QByteArray before = fileBytes(tmp.path());
    const Caught c = catchError([&] { openStore(tmp.path()); });
    VERIFY_ERROR(c, ErrorKind::SchemaTooNew);
    QVERIFY2(c.message.contains(QLatin1String("newer Mneme")) && c.message.contains(QLatin1String("schema 99"))
                 && c.message.contains(QLatin1String("up to 6")) && c.message.contains(QLatin1String("upgrade Mneme")),
             qPrintable(c.message));
    QVERIFY(c.message.contains(tmp.path()));
    VERIFY_ERROR(catchError([&] { openStore(tmp.path(), Json{{"read_only", true}}); }), ErrorKind::SchemaTooNew);
    QVERIFY(fileBytes(tmp.path()) == before);
}

void TestSqliteStorage::notSqliteIsCorrupt_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::newRow("text") << QByteArray("these are my notes, not a database\n").repeated(200);
    QTest::newRow("zeros") << QByteArray(8192, '\0');
    QByteArray header("SQLite format 3");
    header.append('\0');
    header.append(QByteArray(4080, '\xab'));
    QTest::newRow("sqlite header, garbage after") << header;
}

void TestSqliteStorage::notSqliteIsCorrupt()
{
    QFETCH(QByteArray, content);
    test::TempStore tmp;
    {
        QFile f(tmp.path());
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(content);
    }
    const Caught c = catchError([&] { openStore(tmp.path()); });
    VERIFY_ERROR(c, ErrorKind::Corrupt);
    QVERIFY2(c.message.contains(tmp.path()), qPrintable(c.message));
    QVERIFY(fileBytes(tmp.path()) == content);
}

void TestSqliteStorage::damagedStoreIsReported()
{
    test::TempStore tmp;
    {
        auto store = openStore(tmp.path());
        std::vector<MemoryRecord> records;
        for (int i = 0; i < 400; ++i)
            records.push_back(makeRecord(QStringLiteral("record %1 %2").arg(i).arg(QString(600, QLatin1Char('x'))),
                                         QStringLiteral("/d"), {float(i), 1}));
        store->save(records);
    }
    QFile f(tmp.path());
    QVERIFY(f.open(QIODevice::ReadWrite));
    const qint64 size = f.size();
    QVERIFY(size > 200000);
    f.seek(4096);
    f.write(QByteArray(int(size - 8192), '\x5a')); // everything but the first and last page
    f.close();
    const QByteArray before = fileBytes(tmp.path());
    const Caught c = catchError([&] {
        auto store = openStore(tmp.path());
        store->list({}, -1, 0);
        store->search({1, 1}, {}, 5);
        store->keywordSearch(QStringLiteral("record"), {}, 5);
    });
    VERIFY_ERROR(c, ErrorKind::Corrupt);
    QVERIFY2(c.message.contains(tmp.path()), qPrintable(c.message));
    QVERIFY(fileBytes(tmp.path()) == before);
}

void TestSqliteStorage::foreignSqliteIsCorrupt()
{
    test::TempStore tmp;
    {
        sqlite3 *db = nullptr;
        QCOMPARE(sqlite3_open(tmp.path().toUtf8().constData(), &db), SQLITE_OK);
        QCOMPARE(sqlite3_exec(db, "CREATE TABLE people(name TEXT); INSERT INTO people VALUES ('ana');", nullptr, nullptr, nullptr),
                 SQLITE_OK);
        sqlite3_close(db);
    }
    const QByteArray before = fileBytes(tmp.path());
    const Caught c = catchError([&] { openStore(tmp.path()); });
    VERIFY_ERROR(c, ErrorKind::Corrupt);
    QVERIFY2(c.message.contains(QLatin1String("is not a Mneme store")) && c.message.contains(tmp.path()), qPrintable(c.message));
    QVERIFY(fileBytes(tmp.path()) == before);
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("PRAGMA journal_mode")), QStringLiteral("delete"));
}

void TestSqliteStorage::readOnly_data()
{
    QTest::addColumn<int>("how"); // 0: read_only option, 1: file mode 0444, 2: file and folder mode 0444 / 0555
    QTest::newRow("read_only option") << 0;
    QTest::newRow("file mode 0444") << 1;
    QTest::newRow("folder mode 0555") << 2;
}

void TestSqliteStorage::readOnly()
{
    QFETCH(int, how);
    const bool byPermissions = how > 0;
    if (byPermissions && ::geteuid() == 0)
        QSKIP("running as root: file permissions do not stop root from writing (the read_only row covers the refusals)");
    test::TempStore tmp;
    MemoryRecord r = makeRecord(QStringLiteral("readable memory"), QStringLiteral("/ro"), {1, 0});
    {
        auto store = openStore(tmp.path());
        store->bindEmbedder({QStringLiteral("test/ro"), 2});
        store->save({r});
        store->writeState(QStringLiteral("kept"), Json({1, 2}));
    }
    QVERIFY(!QFile::exists(tmp.path() + QStringLiteral("-wal")));
    const auto readOnlyMode = QFileDevice::ReadOwner | QFileDevice::ReadGroup | QFileDevice::ReadOther;
    if (byPermissions)
        QVERIFY(QFile::setPermissions(tmp.path(), readOnlyMode));
    if (how == 2)
        QVERIFY(QFile::setPermissions(tmp.dir(), readOnlyMode | QFileDevice::ExeOwner | QFileDevice::ExeGroup | QFileDevice::ExeOther));
    const QByteArray before = fileBytes(tmp.path());
    {
        auto store = byPermissions ? openStore(tmp.path()) : openStore(tmp.path(), Json{{"read_only", true}});
        QVERIFY(store->get(r.id).has_value());
        QCOMPARE(store->list({}, 10, 0).size(), std::size_t(1));
        QCOMPARE(store->search({1, 0}, {}, 5).size(), std::size_t(1));
        QCOMPARE(store->keywordSearch(QStringLiteral("readable"), {}, 5).size(), std::size_t(1));
        QCOMPARE(store->count({}), 1);
        QCOMPARE(store->scopeInfo(QStringLiteral("/"), {}).recordCount, 1);
        QCOMPARE(store->history(r.id).size(), std::size_t(1));
        QCOMPARE(store->embedderBinding()->embedderId, QStringLiteral("test/ro"));
        COMPARE_JSON(store->readState(QStringLiteral("kept")).value_or(Json()), Json({1, 2}));
        store->bindEmbedder({QStringLiteral("test/ro"), 2}); // agrees with the store: nothing to write

        MemoryRecord changed = r;
        changed.content = QStringLiteral("changed");
        RecordFilter all;
        const std::vector<std::pair<const char *, std::function<void()>>> writes = {
            {"save", [&] { store->save({makeRecord(QStringLiteral("new"))}); }},
            {"update", [&] { store->update(changed); }},
            {"remove", [&] { store->remove(all); }},
            {"reset", [&] { store->reset(QStringLiteral("/")); }},
            {"restore", [&] { store->restore(makeRecord(QStringLiteral("restored"))); }},
            {"touch", [&] { store->touch({r.id}, nowUtc()); }},
            {"writeState", [&] { store->writeState(QStringLiteral("conversation/1"), Json{{"summary", "x"}}); }},
            {"writeState null", [&] { store->writeState(QStringLiteral("kept"), Json()); }},
        };
        for (const auto &[name, write] : writes) {
            const Caught c = catchError(write);
            QVERIFY2(c.thrown && c.kind == ErrorKind::ReadOnlyStore, name);
            QVERIFY2(c.message.contains(tmp.path()), qPrintable(c.message));
        }
        VERIFY_ERROR(catchError([&] { store->bindEmbedder({QStringLiteral("test/other"), 3}); }), ErrorKind::EmbedderMismatch);
        QCOMPARE(store->get(r.id)->content, r.content);
        QVERIFY(store->readState(QStringLiteral("kept")).has_value());
    }
    QVERIFY(fileBytes(tmp.path()) == before);
    if (how == 2) {
        QVERIFY(QFile::setPermissions(tmp.dir(), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner));
        QVERIFY(!QFile::exists(tmp.path() + QStringLiteral("-wal")));
    }
    if (byPermissions)
        QFile::setPermissions(tmp.path(), QFileDevice::ReadOwner | QFileDevice::WriteOwner);
}

void TestSqliteStorage::readOnlyMissingFile()
{
    test::TempStore tmp;
    const Caught c = catchError([&] { openStore(tmp.path(QStringLiteral("absent.db")), Json{{"read_only", true}}); });
    VERIFY_ERROR(c, ErrorKind::NotFound);
    QVERIFY(!QFile::exists(tmp.path(QStringLiteral("absent.db"))));
}

void TestSqliteStorage::closedStoreThrows()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    MemoryRecord r = makeRecord(QStringLiteral("x"), QStringLiteral("/"), {1});
    store->save({r});
    store->close();
    store->close(); // closing twice is harmless
    VERIFY_ERROR(catchError([&] { store->get(r.id); }), ErrorKind::Storage);
    VERIFY_ERROR(catchError([&] { store->search({1}, {}, 3); }), ErrorKind::Storage);
    VERIFY_ERROR(catchError([&] { store->save({makeRecord(QStringLiteral("y"))}); }), ErrorKind::Storage);
    VERIFY_ERROR(catchError([&] { store->count({}); }), ErrorKind::Storage);
    VERIFY_ERROR(catchError([&] { store->embedderBinding(); }), ErrorKind::Storage);
    VERIFY_ERROR(catchError([&] { store->readState(QStringLiteral("k")); }), ErrorKind::Storage);
    VERIFY_ERROR(catchError([&] { store->writeState(QStringLiteral("k"), Json(1)); }), ErrorKind::Storage);
    QVERIFY(!QFile::exists(tmp.path() + QStringLiteral("-wal"))); // closed cleanly: checkpointed
}

void TestSqliteStorage::stateRoundTrip_data()
{
    QTest::addColumn<QString>("value");
    QTest::newRow("object") << QStringLiteral(R"({"summary": "talked about tea", "turns": 4, "last": [{"role": "user", "content": "hi"}]})");
    QTest::newRow("array") << QStringLiteral(R"([1, "two", null, {"three": 3.5}])");
    QTest::newRow("string") << QStringLiteral(R"("plain text")");
    QTest::newRow("empty string") << QStringLiteral(R"("")");
    QTest::newRow("integer") << QStringLiteral("-9007199254740993");
    QTest::newRow("double") << QStringLiteral("0.1");
    QTest::newRow("false") << QStringLiteral("false");
    QTest::newRow("zero") << QStringLiteral("0");
    QTest::newRow("empty object") << QStringLiteral("{}");
    QTest::newRow("empty array") << QStringLiteral("[]");
    QTest::newRow("nested nulls") << QStringLiteral(R"({"a": null, "b": [null]})");
}

void TestSqliteStorage::stateRoundTrip()
{
    QFETCH(QString, value);
    const Json expected = Json::parse(value.toStdString());
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    QVERIFY(!store->readState(QStringLiteral("conversation/1")).has_value());
    store->writeState(QStringLiteral("conversation/1"), expected);
    const std::optional<Json> got = store->readState(QStringLiteral("conversation/1"));
    QVERIFY(got.has_value()); // false, 0, "" and {} are values, not deletions
    COMPARE_JSON(*got, expected);
    QVERIFY(!store->readState(QStringLiteral("conversation/2")).has_value());
    QVERIFY(!store->readState(QStringLiteral("Conversation/1")).has_value()); // keys are case-sensitive
    // Stored as JSON text, with its time.
    COMPARE_JSON(Json::parse(rawScalar(tmp.path(), QStringLiteral("SELECT value FROM state WHERE key = 'conversation/1'")).toStdString()),
                 expected);
    const qint64 updated = rawScalar(tmp.path(), QStringLiteral("SELECT updated_at FROM state")).toLongLong();
    QVERIFY2(qAbs(updated - nowUtc().toMSecsSinceEpoch()) < 24LL * 3600 * 1000, qPrintable(QString::number(updated)));
    // State is no record: it leaves the records, their history and their count alone.
    QCOMPARE(store->count({}), 0);
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM history")), QStringLiteral("0"));
}

void TestSqliteStorage::stateOverwriteAndDelete()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    const QString key = QStringLiteral("conversation/abc");
    store->writeState(key, Json{{"summary", "first"}});
    store->writeState(QStringLiteral("other"), Json("stays"));
    store->writeState(key, Json::array({"second"}));
    COMPARE_JSON(store->readState(key).value_or(Json()), Json::array({"second"}));
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM state")), QStringLiteral("2"));

    store->writeState(key, Json()); // null deletes
    QVERIFY(!store->readState(key).has_value());
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM state")), QStringLiteral("1"));
    store->writeState(key, Json()); // deleting a missing key is no error
    store->writeState(QStringLiteral("never written"), nullptr);
    COMPARE_JSON(store->readState(QStringLiteral("other")).value_or(Json()), Json("stays"));
    store->writeState(key, Json(3)); // and the key can be written again
    COMPARE_JSON(store->readState(key).value_or(Json()), Json(3));
}

void TestSqliteStorage::stateKeysByPrefix()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    QVERIFY(store->stateKeys(QString()).isEmpty());
    const QString smile = QString::fromUtf8("\xF0\x9F\x99\x82");
    for (const QString &k : {QStringLiteral("conversation:b"), QStringLiteral("conversation:a"), QStringLiteral("conversationX"),
                             QStringLiteral("c%_1"), QStringLiteral("cx_1"), smile + QStringLiteral("/one"), QStringLiteral("other")})
        store->writeState(k, Json(1));
    QCOMPARE(store->stateKeys(QStringLiteral("conversation:")),
             (QStringList{QStringLiteral("conversation:a"), QStringLiteral("conversation:b")}));
    QCOMPARE(store->stateKeys(QStringLiteral("c%_")), QStringList{QStringLiteral("c%_1")}); // no wildcards
    QCOMPARE(store->stateKeys(smile), QStringList{smile + QStringLiteral("/one")});         // code points, not UTF-16 units
    QCOMPARE(store->stateKeys(QString()).size(), 7);
    store->writeState(QStringLiteral("conversation:a"), Json());
    QCOMPARE(store->stateKeys(QStringLiteral("conversation:")), QStringList{QStringLiteral("conversation:b")});
}

void TestSqliteStorage::stateUnicodeAndLargeValues()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    const QString key = QStringLiteral("gespräch/日本語/") + QString::fromUtf8("\xF0\x9F\x99\x82") + QStringLiteral(" 'quoted' \"key\" % _");
    const Json unicode = {{"text", "Zoë's café, 東京, \xF0\x9F\x8C\x8A, e\xCC\x81, \xE2\x80\x8F rtl"},
                          {"escapes", std::string("tab\tnewline\nnul") + std::string(1, '\0') + "end"}};
    store->writeState(key, unicode);
    COMPARE_JSON(store->readState(key).value_or(Json()), unicode);
    QVERIFY(!store->readState(QStringLiteral("gespräch/日本語/")).has_value());
    // The exact-200-character key of 200 non-BMP characters (400 UTF-16 units) is allowed.
    QString emojiKey;
    for (int i = 0; i < 200; ++i)
        emojiKey += QString::fromUtf8("\xF0\x9F\x99\x82");
    store->writeState(emojiKey, Json(true));
    COMPARE_JSON(store->readState(emojiKey).value_or(Json()), Json(true));

    // A large document: the last messages of a long conversation (about 4 MB of JSON).
    Json messages = Json::array();
    for (int i = 0; i < 2000; ++i)
        messages.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", std::string(2000, char('a' + i % 26))}, {"i", i}});
    const Json big = {{"summary", "long"}, {"messages", messages}};
    store->writeState(QStringLiteral("conversation/long"), big);
    store.reset();
    auto reopened = openStore(tmp.path());
    const auto got = reopened->readState(QStringLiteral("conversation/long"));
    QVERIFY(got.has_value());
    QCOMPARE((*got)["messages"].size(), std::size_t(2000));
    QVERIFY(*got == big);
    COMPARE_JSON(reopened->readState(key).value_or(Json()), unicode);
}

void TestSqliteStorage::stateInvalidKeys_data()
{
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("empty") << QString() << QStringLiteral("empty");
    QTest::newRow("201 characters") << QString(201, QLatin1Char('k')) << QStringLiteral("201 characters");
    QTest::newRow("newline") << QStringLiteral("conversation\n1") << QStringLiteral("U+000A");
    QTest::newRow("tab") << QStringLiteral("\tconversation") << QStringLiteral("U+0009");
    QTest::newRow("nul") << (QStringLiteral("a") + QChar(0) + QStringLiteral("b")) << QStringLiteral("U+0000");
    QTest::newRow("delete") << (QStringLiteral("a") + QChar(0x7f)) << QStringLiteral("U+007F");
    QTest::newRow("C1 control") << (QStringLiteral("a") + QChar(0x85)) << QStringLiteral("U+0085");
    QTest::newRow("lone high surrogate") << (QStringLiteral("a") + QChar(0xD83D)) << QStringLiteral("surrogate");
    QTest::newRow("lone low surrogate") << (QChar(0xDE42) + QStringLiteral("a")) << QStringLiteral("surrogate");
}

void TestSqliteStorage::stateInvalidKeys()
{
    QFETCH(QString, key);
    QFETCH(QString, mentions);
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    const Caught write = catchError([&] { store->writeState(key, Json{{"x", 1}}); });
    VERIFY_ERROR(write, ErrorKind::InvalidArgument);
    QVERIFY2(write.message.contains(mentions), qPrintable(write.message));
    VERIFY_ERROR(catchError([&] { store->writeState(key, Json()); }), ErrorKind::InvalidArgument);
    VERIFY_ERROR(catchError([&] { store->readState(key); }), ErrorKind::InvalidArgument);
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM state")), QStringLiteral("0"));
    // The longest valid key.
    store->writeState(QString(200, QLatin1Char('k')), Json(1));
    QVERIFY(store->readState(QString(200, QLatin1Char('k'))).has_value());
}

void TestSqliteStorage::statePersistsAndIsShared()
{
    test::TempStore tmp;
    {
        auto store = openStore(tmp.path());
        store->writeState(QStringLiteral("conversation/1"), Json{{"summary", "before the reopen"}});
    }
    auto a = openStore(tmp.path());
    COMPARE_JSON(a->readState(QStringLiteral("conversation/1")).value_or(Json()), (Json{{"summary", "before the reopen"}}));

    // A second connection to the same file sees each commit of the first, both ways.
    auto b = openStore(tmp.path());
    COMPARE_JSON(b->readState(QStringLiteral("conversation/1")).value_or(Json()), (Json{{"summary", "before the reopen"}}));
    a->writeState(QStringLiteral("conversation/1"), Json{{"summary", "from a"}});
    COMPARE_JSON(b->readState(QStringLiteral("conversation/1")).value_or(Json()), (Json{{"summary", "from a"}}));
    b->writeState(QStringLiteral("conversation/2"), Json("from b"));
    b->writeState(QStringLiteral("conversation/1"), nullptr);
    QVERIFY(!a->readState(QStringLiteral("conversation/1")).has_value());
    COMPARE_JSON(a->readState(QStringLiteral("conversation/2")).value_or(Json()), Json("from b"));
    // And a read-only connection.
    auto ro = openStore(tmp.path(), Json{{"read_only", true}});
    COMPARE_JSON(ro->readState(QStringLiteral("conversation/2")).value_or(Json()), Json("from b"));
    // State writes leave a loaded vector index of the other connection in step.
    a->save({makeRecord(QStringLiteral("vector"), QStringLiteral("/"), {1, 0})});
    QCOMPARE(b->search({1, 0}, {}, 5).size(), std::size_t(1));
    a->writeState(QStringLiteral("conversation/3"), Json(3));
    QCOMPARE(b->search({1, 0}, {}, 5).size(), std::size_t(1));
}

void TestSqliteStorage::stateAndReset()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    store->save({makeRecord(QStringLiteral("a"), QStringLiteral("/crew/a")), makeRecord(QStringLiteral("b"), QStringLiteral("/crew/b"))});
    store->writeState(QStringLiteral("conversation/1"), Json{{"summary", "kept by a subtree reset"}});
    store->writeState(QStringLiteral("/crew/a"), Json("a key that looks like a scope"));

    QCOMPARE(store->reset(QStringLiteral("/crew/a")), 1);
    QVERIFY(store->readState(QStringLiteral("conversation/1")).has_value());
    QVERIFY(store->readState(QStringLiteral("/crew/a")).has_value());

    QCOMPARE(store->reset(QStringLiteral("/")), 1);
    QVERIFY(!store->readState(QStringLiteral("conversation/1")).has_value());
    QVERIFY(!store->readState(QStringLiteral("/crew/a")).has_value());
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM state")), QStringLiteral("0"));
    store->writeState(QStringLiteral("conversation/1"), Json("after the reset"));
    COMPARE_JSON(store->readState(QStringLiteral("conversation/1")).value_or(Json()), Json("after the reset"));
}

void TestSqliteStorage::schemaV1IsMigrated()
{
    test::TempStore tmp;
    QVERIFY(writeSchemaV1Store(tmp.path()));
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM sqlite_master WHERE name = 'state'")), QStringLiteral("0"));
    {
        auto store = openStore(tmp.path());
        QCOMPARE(store->schemaVersion(), 6);
        // The records, their index, history and binding came through.
        QCOMPARE(store->count({}), 2);
        const auto first = store->get(QStringLiteral("v1-first"), true);
        QVERIFY(first.has_value());
        QCOMPARE(first->content, QStringLiteral("the lighthouse keeper likes tea"));
        QCOMPARE(first->scope, QStringLiteral("/crew/a"));
        QCOMPARE(first->categories, QStringList{QStringLiteral("habits")});
        QCOMPARE(first->importance, 0.8);
        QCOMPARE(first->source, QStringLiteral("agent-a"));
        QCOMPARE(first->accessCount, 3);
        QCOMPARE(first->createdAt, kBase);
        COMPARE_JSON(first->metadata, (Json{{"k", "v"}}));
        QVERIFY(first->embedding == (Embedding{1, 0}));
        QVERIFY(store->get(QStringLiteral("v1-second")).has_value());
        QVERIFY(store->get(QStringLiteral("v1-second"))->isPrivate);
        QCOMPARE(store->keywordSearch(QStringLiteral("lighthouse"), {}, 5).size(), std::size_t(1));
        QCOMPARE(store->keywordSearch(QStringLiteral("lighthouse"), {}, 5, 0.3).size(), std::size_t(1));
        QCOMPARE(store->search({1, 0}, {}, 5).size(), std::size_t(1));
        QCOMPARE(store->history(QStringLiteral("v1-first")).size(), std::size_t(1));
        QCOMPARE(store->embedderBinding()->embedderId, QStringLiteral("test/v1"));
        // And the new table works.
        QVERIFY(!store->readState(QStringLiteral("conversation/1")).has_value());
        store->writeState(QStringLiteral("conversation/1"), Json{{"summary", "after the upgrade"}});
        // And the keyword context column (v3).
        MemoryRecord added = makeRecord(QStringLiteral("a new record"), QStringLiteral("/"), {0, 1});
        added.context = QStringLiteral("an albatross nearby");
        store->save({added});
        QCOMPARE(store->keywordSearch(QStringLiteral("albatross"), {}, 5, 0.3).size(), std::size_t(1));
    }
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("PRAGMA user_version")), QStringLiteral("6"));
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT value FROM meta WHERE key = 'schema_version'")), QStringLiteral("6"));
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM records_fts WHERE context = ''")), QStringLiteral("2"));
    // v4: the stored hashes moved to the lookup table (the v1 rows' hashes as they were written), the
    // record added after the upgrade went to the recent table, and the index on the column is gone.
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT group_concat(hash || ':' || rid, ' ') FROM content_hashes")),
             QStringLiteral("11:1 12:2"));
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT group_concat(rid) FROM content_hashes_recent")), QStringLiteral("3"));
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM sqlite_master WHERE name = 'records_content_hash'")),
             QStringLiteral("0"));
    // v6: the category counts of the records as they were, and of the one added since.
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT group_concat(scope || '|' || source || '|' || private || '|' || category || '|' || n) "
                                                  "FROM category_counts")),
             QStringLiteral("/crew/a|agent-a|0|habits|1"));
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT value FROM meta WHERE key = 'created_by'")), QStringLiteral("mneme 0.1.0"));
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT value FROM meta WHERE key = 'store_id'")), QStringLiteral("v1-store"));
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("PRAGMA integrity_check")), QStringLiteral("ok"));
    auto reopened = openStore(tmp.path());
    QCOMPARE(reopened->schemaVersion(), 6);
    QCOMPARE(reopened->findExact(QStringLiteral("a new record"), QStringLiteral("/"), QString(), false)->content,
             QStringLiteral("a new record"));
    QCOMPARE(reopened->count({}), 3);
    COMPARE_JSON(reopened->readState(QStringLiteral("conversation/1")).value_or(Json()), (Json{{"summary", "after the upgrade"}}));
}

void TestSqliteStorage::schemaV1ReadOnly()
{
    test::TempStore tmp;
    QVERIFY(writeSchemaV1Store(tmp.path()));
    const QByteArray before = fileBytes(tmp.path());
    {
        auto store = openStore(tmp.path(), Json{{"read_only", true}});
        QCOMPARE(store->schemaVersion(), 1); // read as it is: upgrading needs write access
        QCOMPARE(store->count({}), 2);
        QCOMPARE(store->get(QStringLiteral("v1-first"))->content, QStringLiteral("the lighthouse keeper likes tea"));
        QCOMPARE(store->keywordSearch(QStringLiteral("lighthouse"), {}, 5).size(), std::size_t(1));
        // Its keyword index has no context column yet: the content alone is searched.
        QCOMPARE(store->keywordSearch(QStringLiteral("lighthouse"), {}, 5, 0.3).size(), std::size_t(1));
        QCOMPARE(store->search({1, 0}, {}, 5).size(), std::size_t(1));
        // Identical records are looked up through the v1 index on the column (no content_hashes table
        // yet); the hashes this hand-written file holds are not real ones, so nothing matches.
        QVERIFY(!store->findExact(QStringLiteral("the lighthouse keeper likes tea"), QStringLiteral("/crew/a"),
                                  QStringLiteral("agent-a"), false)
                     .has_value());
        QVERIFY(!store->readState(QStringLiteral("conversation/1")).has_value());
        const Caught c = catchError([&] { store->writeState(QStringLiteral("conversation/1"), Json("x")); });
        VERIFY_ERROR(c, ErrorKind::ReadOnlyStore);
        QVERIFY2(c.message.contains(tmp.path()) && c.message.contains(QLatin1String("read_only")), qPrintable(c.message));
        VERIFY_ERROR(catchError([&] { store->writeState(QStringLiteral("conversation/1"), Json()); }), ErrorKind::ReadOnlyStore);
        VERIFY_ERROR(catchError([&] { store->readState(QString()); }), ErrorKind::InvalidArgument);
    }
    QVERIFY(fileBytes(tmp.path()) == before);
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("PRAGMA user_version")), QStringLiteral("1"));

    // Once another connection has upgraded the file, the read-only one finds the new table.
    auto ro = openStore(tmp.path(), Json{{"read_only", true}});
    QVERIFY(!ro->readState(QStringLiteral("conversation/1")).has_value());
    auto writer = openStore(tmp.path());
    writer->writeState(QStringLiteral("conversation/1"), Json("written after the upgrade"));
    COMPARE_JSON(ro->readState(QStringLiteral("conversation/1")).value_or(Json()), Json("written after the upgrade"));
}

void TestSqliteStorage::schemaV1MissingTableIsDamaged()
{
    // A v1 store without the state table is whole; one without a table of v1 is damaged, and so is a
    // v2 store that lost its state table.
    test::TempStore tmp;
    QVERIFY(writeSchemaV1Store(tmp.path(), "history"));
    const QByteArray before = fileBytes(tmp.path());
    for (bool readOnly : {false, true}) {
        const Caught c = catchError([&] { openStore(tmp.path(), Json{{"read_only", readOnly}}); });
        VERIFY_ERROR(c, ErrorKind::Corrupt);
        QVERIFY2(c.message.contains(QLatin1String("\"history\" is missing")), qPrintable(c.message));
    }
    QVERIFY(fileBytes(tmp.path()) == before);

    const QString v2 = tmp.path(QStringLiteral("v2.db"));
    openStore(v2)->writeState(QStringLiteral("k"), Json(1));
    bool dropped = false;
    rawQuery(v2, QStringLiteral("DROP TABLE state"), &dropped);
    QVERIFY(dropped);
    const Caught c = catchError([&] { openStore(v2); });
    VERIFY_ERROR(c, ErrorKind::Corrupt);
    QVERIFY2(c.message.contains(QLatin1String("\"state\" is missing")), qPrintable(c.message));
}

void TestSqliteStorage::oddTextNeverCrashes()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    MemoryRecord r = makeRecord(QStringLiteral("nul") + QChar(0) + QStringLiteral("inside and a lone ") + QChar(0xD800)
                                + QStringLiteral(" surrogate"));
    r.metadata = Json{{"bad", std::string("\xff\xfe invalid utf-8")}, {"fine", "ok"}};
    r.categories = {QStringLiteral("cat") + QChar(0) + QStringLiteral("egory")};
    const Caught c = catchError([&] { store->save({r}); });
    QVERIFY2(!c.thrown || c.kind == ErrorKind::InvalidArgument, qPrintable(c.message));
    if (!c.thrown) {
        const auto got = store->get(r.id);
        QVERIFY(got.has_value());
        QVERIFY(got->content.startsWith(QLatin1String("nul")));
        QCOMPARE(got->content.size(), r.content.size());
        QVERIFY(got->metadata["fine"] == Json("ok"));
        QVERIFY(!store->keywordSearch(QStringLiteral("surrogate"), {}, 5).empty());
        QVERIFY(store->findExact(r.content, r.scope, QString(), false).has_value());
        QCOMPARE(store->history(r.id).size(), std::size_t(1));
    }
    store->keywordSearch(QString(QChar(0xD800)) + QChar(0), {}, 5);
}

void TestSqliteStorage::threadsShareOneStore()
{
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            try {
                for (int i = 0; i < 25; ++i) {
                    store->save({makeRecord(QStringLiteral("thread %1 item %2").arg(t).arg(i), QStringLiteral("/t/%1").arg(t),
                                            {float(t), float(i), 1})});
                    store->search({1, 1, 1}, {}, 5);
                    store->keywordSearch(QStringLiteral("item"), {}, 5);
                }
            } catch (const Error &) {
                ++failures;
            }
        });
    }
    for (auto &th : threads)
        th.join();
    QCOMPARE(failures.load(), 0);
    QCOMPARE(store->count({}), 100);
    QCOMPARE(store->search({1, 1, 1}, {}, 1000).size(), std::size_t(100));
}

void TestSqliteStorage::concurrentProcessesLoseNothing()
{
    test::TempStore tmp;
    const QString path = tmp.path(QStringLiteral("shared/memory.db"));
    const int perWriter = 150;
    const QStringList tags = {QStringLiteral("w0"), QStringLiteral("w1"), QStringLiteral("w2")};
    std::vector<std::unique_ptr<QProcess>> procs;
    for (const QString &tag : tags) {
        auto p = std::make_unique<QProcess>();
        p->setProcessChannelMode(QProcess::ForwardedErrorChannel);
        p->start(QStringLiteral(SQLITE_WRITER_PATH), {path, tag, QString::number(perWriter), QStringLiteral("5")});
        procs.push_back(std::move(p));
    }
    for (auto &p : procs) {
        QVERIFY(p->waitForFinished(60000));
        QCOMPARE(p->exitStatus(), QProcess::NormalExit);
        QCOMPARE(p->exitCode(), 0);
    }
    auto store = openStore(path);
    QCOMPARE(store->count({}), perWriter * int(tags.size()));
    const QSet<QString> contents = contentsOf(store->list({}, -1, 0));
    for (const QString &tag : tags)
        for (int i = 0; i < perWriter; ++i)
            QVERIFY2(contents.contains(QStringLiteral("writer %1 record %2").arg(tag, QString::number(i))), qPrintable(tag));
    QCOMPARE(store->embedderBinding()->embedderId, QStringLiteral("test/writer"));
    QCOMPARE(store->search(Embedding(8, 1.0f), {}, 10000).size(), std::size_t(perWriter * tags.size()));
    store->close();
    QCOMPARE(rawScalar(path, QStringLiteral("SELECT count(*) FROM records_fts")), QString::number(perWriter * tags.size()));
    QCOMPARE(rawScalar(path, QStringLiteral("SELECT count(*) FROM history WHERE event = 'ADD'")), QString::number(perWriter * tags.size()));
    QCOMPARE(rawScalar(path, QStringLiteral("PRAGMA integrity_check")), QStringLiteral("ok"));
}

void TestSqliteStorage::killedWriterLeavesIntactStore()
{
    test::TempStore tmp;
    const QString path = tmp.path();
    const int batchSize = 10;
    QProcess p;
    p.setProcessChannelMode(QProcess::SeparateChannels);
    p.start(QStringLiteral(SQLITE_WRITER_PATH), {path, QStringLiteral("k"), QStringLiteral("1000000"), QString::number(batchSize)});
    QVERIFY(p.waitForStarted(10000));
    QByteArray out;
    QElapsedTimer timer;
    timer.start();
    while (out.count("committed") < 25 && timer.elapsed() < 30000) {
        p.waitForReadyRead(1000);
        out += p.readAllStandardOutput();
    }
    QVERIFY2(out.count("committed") >= 25, out.constData());
    p.kill(); // SIGKILL, in the middle of a batch or between two
    QVERIFY(p.waitForFinished(10000));
    out += p.readAllStandardOutput();
    QCOMPARE(p.exitStatus(), QProcess::CrashExit);
    int lastReported = -1;
    for (const QByteArray &line : out.split('\n'))
        if (line.startsWith("committed "))
            lastReported = line.mid(10).toInt();

    QCOMPARE(rawScalar(path, QStringLiteral("PRAGMA integrity_check")), QStringLiteral("ok"));
    auto store = openStore(path);
    const std::vector<MemoryRecord> all = store->list({}, -1, 0);
    QMap<int, int> perBatch;
    for (const MemoryRecord &r : all) {
        const int batch = r.metadata["batch"].get<int>();
        const int i = r.metadata["i"].get<int>();
        QCOMPARE(i / batchSize, batch);
        QCOMPARE(r.content, QStringLiteral("writer k record %1").arg(i));
        ++perBatch[batch];
    }
    QVERIFY(!perBatch.isEmpty());
    for (auto it = perBatch.cbegin(); it != perBatch.cend(); ++it)
        QVERIFY2(it.value() == batchSize, qPrintable(QStringLiteral("batch %1 has %2 records").arg(it.key()).arg(it.value())));
    // Batches are committed in order and every reported one survived (synchronous=FULL).
    QCOMPARE(perBatch.firstKey(), 0);
    QCOMPARE(perBatch.lastKey(), int(perBatch.size()) - 1);
    QVERIFY(perBatch.lastKey() >= lastReported);
    const int n = int(all.size());
    QCOMPARE(store->count({}), n);
    QCOMPARE(store->search(Embedding(8, 1.0f), {}, 1000000).size(), std::size_t(n));
    for (int i : {0, n / 2, n - 1}) { // the keyword index holds the committed records (counted in full below)
        const auto hits = store->keywordSearch(QStringLiteral("record %1").arg(i), {}, 10);
        QCOMPARE(hits.size(), std::size_t(1));
        QCOMPARE(hits.front().record.content, QStringLiteral("writer k record %1").arg(i));
    }
    // The store stays writable.
    store->save({makeRecord(QStringLiteral("after the crash"), QStringLiteral("/"), Embedding(8, 0.5f))});
    store->close();
    QCOMPARE(rawScalar(path, QStringLiteral("SELECT count(*) FROM records_fts")), QString::number(n + 1));
    QCOMPARE(rawScalar(path, QStringLiteral("SELECT count(*) FROM history")), QString::number(n + 1));
    QCOMPARE(rawScalar(path, QStringLiteral("PRAGMA integrity_check")), QStringLiteral("ok"));
}

void TestSqliteStorage::exactScanOfTenThousand()
{
    test::TempStore tmp;
    // The exact scan (the approximate index has its own tests, which never time anything).
    auto store = openStore(tmp.path(), Json{{"ann_threshold", 1000000}});
    const int n = 10000, dim = 384;
    QRandomGenerator rng(42);
    std::vector<Embedding> vectors;
    for (int start = 0; start < n; start += 1000) {
        std::vector<MemoryRecord> batch;
        for (int i = start; i < start + 1000; ++i) {
            MemoryRecord r = makeRecord(QStringLiteral("vector %1").arg(i), QStringLiteral("/bench/%1").arg(i % 10),
                                        randomUnitish(rng, dim), i % 1000);
            r.categories = {QStringLiteral("c%1").arg(i % 7)};
            vectors.push_back(r.embedding);
            batch.push_back(std::move(r));
        }
        store->save(batch);
    }
    QElapsedTimer load;
    load.start();
    const auto first = store->search(vectors[1234], {}, 10);
    const qint64 loadMs = load.elapsed();
    QCOMPARE(first.at(0).record.content, QStringLiteral("vector 1234"));
    QVERIFY(std::abs(first.at(0).score - 1.0) < 1e-5);

    RecordFilter scoped;
    scoped.scopes = {QStringLiteral("/bench/3")};
    scoped.categories = {QStringLiteral("c1"), QStringLiteral("c2")};
    // Median wall time and median CPU time of this thread (the machine may be busy with other work).
    auto median = [&](const RecordFilter &filter) -> std::pair<double, double> {
        std::vector<double> wall, cpu;
        for (int q = 0; q < 25; ++q) {
            const Embedding &query = vectors[std::size_t(q * 331 % n)];
            timespec c0{}, c1{};
            QElapsedTimer t;
            t.start();
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
            const auto hits = store->search(query, filter, 10);
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
            wall.push_back(double(t.nsecsElapsed()) / 1e6);
            cpu.push_back(double(c1.tv_sec - c0.tv_sec) * 1e3 + double(c1.tv_nsec - c0.tv_nsec) / 1e6);
            if (hits.size() != 10)
                return {-1, -1};
            for (const ScoredRecord &h : hits)
                if (!filter.matches(h.record))
                    return {-1, -1};
        }
        std::sort(wall.begin(), wall.end());
        std::sort(cpu.begin(), cpu.end());
        return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
    };
    const auto [allWall, allCpu] = median(RecordFilter());
    const auto [filteredWall, filteredCpu] = median(scoped);
    qInfo("search of 10000 x 384 (top 10, records fetched), median: unfiltered %.3f ms (cpu %.3f ms), "
          "scope + categories %.3f ms (cpu %.3f ms); first search incl. loading the index %lld ms",
          allWall, allCpu, filteredWall, filteredCpu, loadMs);
    // Correctness only (every query returned 10 records passing its filter); the times are
    // information, and the speed goals are measured by mneme-bench, never asserted in a test.
    QVERIFY(allCpu >= 0 && filteredCpu >= 0);
}

// ---------------------------------------------------------------------------------------------
// The approximate (HNSW) index: correctness only, never timing.

void TestSqliteStorage::boundedKeywordSearchKeepsTheBest_data()
{
    // 3,000 records (terms in up to 300 of them are searched): "osprey" in 20, "lantern" in 250,
    // "harbor" in 275, both of the last two in 25; a budget of 100 rows.
    QTest::addColumn<QString>("query");
    QTest::addColumn<int>("kept"); // how many best of the unbounded search the bounded one returns, exactly
    QTest::newRow("one term (no bound)") << QStringLiteral("lantern") << 250;
    QTest::newRow("rare terms within the budget") << QStringLiteral("osprey unknownword") << 20;
    QTest::newRow("a rare term and two common ones") << QStringLiteral("osprey lantern harbor") << 45;
    // The rarest term is always searched: its records, those holding both first.
    QTest::newRow("two common terms") << QStringLiteral("lantern harbor?") << 250;
    QTest::newRow("a rare term and one common one") << QStringLiteral("Where is the osprey lantern") << 20;
}

void TestSqliteStorage::boundedKeywordSearchKeepsTheBest()
{
    // The bounded keyword search scores the records holding one of the query's rarest terms or two of
    // the others: its results are the unbounded search's best, with the same scores, in the same
    // order, down to the first record that holds a single common term only (which it leaves out).
    QFETCH(QString, query);
    QFETCH(int, kept);
    test::TempStore tmp;
    auto unbounded = openStore(tmp.path(), Json{{"keyword_row_budget", 0}});
    std::vector<MemoryRecord> records;
    for (int i = 0; i < 3000; ++i) {
        QString content = QStringLiteral("filler%1").arg(i);
        if (i % 150 == 7)
            content += QStringLiteral(" osprey");
        if (i % 12 == 0)
            content += QStringLiteral(" lantern");
        if (i % 12 == 3 || i % 120 == 0)
            content += QStringLiteral(" harbor");
        records.push_back(makeRecord(content, QStringLiteral("/"), Embedding(8, 0.5f)));
    }
    unbounded->save(records);
    auto bounded = openStore(tmp.path(), Json{{"keyword_row_budget", 100}});
    const std::vector<ScoredRecord> all = unbounded->keywordSearch(query, {}, 1000);
    const std::vector<ScoredRecord> best = bounded->keywordSearch(query, {}, 1000);
    QCOMPARE(int(best.size()), kept);
    QVERIFY(int(all.size()) >= kept);
    for (int i = 0; i < kept; ++i) {
        QCOMPARE(best[size_t(i)].record.id, all[size_t(i)].record.id);
        QCOMPARE(best[size_t(i)].score, all[size_t(i)].score);
    }
    // The same through the two-phase search, within a limit, and with the budget in effect.
    const std::optional<std::vector<SearchHit>> hits = bounded->keywordHits(query, Embedding(8, 0.5f), {}, 10);
    QVERIFY(hits.has_value());
    QCOMPARE(hits->size(), std::min<std::size_t>(10, std::size_t(kept)));
    for (std::size_t i = 0; i < hits->size(); ++i) {
        QCOMPARE(bounded->hitRecords({hits->at(i).key}).front()->id, all[i].record.id);
        QCOMPARE(hits->at(i).score, all[i].score);
    }
}

void TestSqliteStorage::keywordHitsJudgeEveryRecord()
{
    // keywordHits judges the filter by the vector index for the records it holds and by the records
    // table for those without a vector: the same records as keywordSearch either way, private ones
    // and other scopes left out. (The index's verdicts also leave the rejected matches out before they
    // are scored, mneme_judged; the records without a vector pass that and are judged on the table.)
    test::TempStore tmp;
    auto store = openStore(tmp.path());
    std::vector<MemoryRecord> records;
    for (int i = 0; i < 40; ++i) { // "heron" in 40 records: under the 50 that make a word too common
        MemoryRecord r = makeRecord(QStringLiteral("heron sighting %1").arg(i), i % 3 ? QStringLiteral("/birds") : QStringLiteral("/other"),
                                    i % 4 ? Embedding(8, 0.25f * float(1 + i % 5)) : Embedding(), i);
        r.importance = (i % 10) / 10.0;
        r.source = i % 5 ? QStringLiteral("ann") : QStringLiteral("ben");
        r.isPrivate = i % 7 == 0;
        records.push_back(r);
    }
    store->save(records);
    RecordFilter filter;
    filter.scopes = {QStringLiteral("/birds")};
    filter.applyPrivacy = true;
    filter.source = QStringLiteral("ann");
    const Embedding query(8, 0.5f);
    for (int limit : {5, 25, 100}) {
        const std::optional<std::vector<SearchHit>> hits = store->keywordHits(QStringLiteral("heron"), query, filter, limit);
        QVERIFY(hits.has_value());
        const std::vector<ScoredRecord> full = store->keywordSearch(QStringLiteral("heron"), filter, limit);
        QCOMPARE(hits->size(), full.size());
        for (std::size_t i = 0; i < full.size(); ++i) {
            const MemoryRecord r = *store->hitRecords({hits->at(i).key}).front();
            QCOMPARE(r.id, full[i].record.id);
            QCOMPARE(hits->at(i).importance, full[i].record.importance);
            QCOMPARE(hits->at(i).createdAt, full[i].record.createdAt);
            QCOMPARE(r.scope, QStringLiteral("/birds"));
            QVERIFY(!r.isPrivate || r.source == QLatin1String("ann"));
        }
    }
    // 26 in /birds, of which 1 private to ben (i = 35).
    QCOMPARE(store->keywordHits(QStringLiteral("heron"), query, filter, 100)->size(), std::size_t(25));
}

void TestSqliteStorage::keywordRowBudgetKey()
{
    for (const char *bad : {R"({"path": ":memory:", "keyword_row_budget": -1})", R"({"path": ":memory:", "keyword_row_budget": "all"})"}) {
        const Caught c = catchError([&] { SqliteStorage::Options::fromJson(Json::parse(bad)); });
        VERIFY_ERROR(c, ErrorKind::InvalidArgument);
        QVERIFY2(c.message.contains(QLatin1String("keyword_row_budget")), qPrintable(c.message));
    }
    QCOMPARE(SqliteStorage::Options::fromJson(Json::parse(R"({"path": "x.db"})")).keywordRowBudget, 1000);
    QCOMPARE(SqliteStorage::Options::fromJson(Json::parse(R"({"path": "x.db", "keyword_row_budget": 0})")).keywordRowBudget, 0);
}

void TestSqliteStorage::annConfigKeys()
{
    for (const char *bad : {R"({"path": ":memory:", "ann_threshold": -1})", R"({"path": ":memory:", "ann_m": 2})",
                            R"({"path": ":memory:", "ann_ef_search": "many"})", R"({"path": ":memory:", "ann_ef_construction": 5})",
                            R"({"path": ":memory:", "ann_background_from": -5})", R"({"path": ":memory:", "ann_background_from": 1.5})"}) {
        const Caught c = catchError([&] { SqliteStorage::Options::fromJson(Json::parse(bad)); });
        VERIFY_ERROR(c, ErrorKind::InvalidArgument);
        QVERIFY2(c.message.contains(QLatin1String("ann_")), qPrintable(c.message));
    }
    const auto o = SqliteStorage::Options::fromJson(
        Json::parse(R"({"path": "x.db", "ann_threshold": 0, "ann_m": 24, "ann_ef_construction": 150, "ann_ef_search": 300, "ann_background_from": 7})"));
    QCOMPARE(o.annBackgroundFrom, 7);
    QCOMPARE(SqliteStorage::Options::fromJson(Json::parse(R"({"path": "x.db"})")).annBackgroundFrom, 50000);
    QCOMPARE(o.annThreshold, 0);
    QCOMPARE(o.annM, 24);
    QCOMPARE(o.annEfConstruction, 150);
    QCOMPARE(o.annEfSearch, 300);
    // The plugin takes the same keys.
    test::TempStore tmp;
    QVERIFY(openStore(tmp.path(), Json{{"ann_threshold", 10}, {"ann_ef_search", 50}}) != nullptr);
}

void TestSqliteStorage::annMatchesExactScan()
{
    test::TempStore tmp;
    auto store = openDirect(tmp.path(), Json{{"ann_threshold", 100}, {"ann_ef_search", 200}});
    const int n = 3000, dim = 32;
    QRandomGenerator rng(1234);
    std::vector<Embedding> vectors;
    for (int start = 0; start < n; start += 500) {
        std::vector<MemoryRecord> batch;
        for (int i = start; i < start + 500; ++i) {
            batch.push_back(makeRecord(QStringLiteral("v%1").arg(i), QStringLiteral("/r/%1").arg(i % 5), randomUnitish(rng, dim)));
            vectors.push_back(batch.back().embedding);
        }
        store->save(batch);
    }
    double recall = 0;
    int identical = 0;
    const int queries = 60;
    for (int q = 0; q < queries; ++q) {
        const Embedding query = randomUnitish(rng, dim);
        const auto exact = store->nearest(query, {}, 10, VectorIndex::Mode::Exact);
        const auto approx = store->nearest(query, {}, 10, VectorIndex::Mode::Auto);
        QCOMPARE(exact.size(), std::size_t(10));
        QCOMPARE(approx.size(), std::size_t(10));
        recall += recallAgainst(approx, exact);
        identical += rowidSet(approx) == rowidSet(exact) ? 1 : 0;
        // The public search returns the records of the approximate hits, best first.
        const auto records = store->search(query, {}, 10);
        QCOMPARE(records.size(), std::size_t(10));
        QVERIFY(std::abs(records.front().score - approx.front().score) < 1e-9);
        for (std::size_t k = 1; k < records.size(); ++k)
            QVERIFY(records[k - 1].score >= records[k].score);
    }
    const auto stats = store->indexStats();
    QVERIFY(stats.approximate);
    QCOMPARE(stats.builds, qint64(1));
    QCOMPARE(stats.vectors, std::size_t(n));
    recall /= queries;
    qInfo("approximate top-10 against exact on %d x %d: recall %.4f, %d of %d identical", n, dim, recall, identical, queries);
    QVERIFY2(recall >= 0.95, qPrintable(QString::number(recall)));
    // A stored vector finds itself first.
    for (int i = 0; i < n; i += 97) {
        const auto hits = store->nearest(vectors[std::size_t(i)], {}, 1);
        QCOMPARE(hits.size(), std::size_t(1));
        QVERIFY(hits[0].score > 0.9999);
    }
}

void TestSqliteStorage::annFiltersNeverLeak_data()
{
    filtersNeverLeak_data();
}

// The filter fixture with the approximate index on from the first record: every filter gives exactly
// what the exact scan gives, through search() and through a forced graph walk.
void TestSqliteStorage::annFiltersNeverLeak()
{
    QFETCH(QStringList, scopes);
    QFETCH(QStringList, categories);
    QFETCH(QStringList, ids);
    QFETCH(int, beforeHours);
    QFETCH(int, afterHours);
    QFETCH(int, privacy);
    QFETCH(QString, viewer);
    QFETCH(QString, onlySource);
    QFETCH(QString, metadata);
    QFETCH(QStringList, expected);

    test::TempStore tmp;
    auto store = openDirect(tmp.path(), Json{{"ann_threshold", 1}});
    QHash<QString, QString> idOf = saveFilterFixture(*store); // name -> id; content is "shared token <name>"

    RecordFilter filter;
    filter.scopes = scopes;
    filter.categories = categories;
    for (const QString &n : ids)
        filter.ids << idOf.value(n);
    if (beforeHours >= 0)
        filter.createdBefore = kBase.addSecs(3600LL * beforeHours);
    if (afterHours >= 0)
        filter.createdAfter = kBase.addSecs(3600LL * afterHours);
    filter.applyPrivacy = privacy > 0;
    filter.includePrivate = privacy > 1;
    filter.source = viewer;
    filter.onlySource = onlySource;
    if (!metadata.isEmpty())
        filter.metadata = Json::parse(metadata.toStdString());

    QSet<QString> want;
    for (const QString &n : expected)
        want.insert(QStringLiteral("shared token ") + n);

    auto verify = [&](const QSet<QString> &wanted) {
        const QSet<QString> bySearch = contentsOf(store->search({1, 0, 0, 0}, filter, 100));
        QVERIFY(store->indexStats().approximate);
        QVERIFY2(bySearch == wanted, qPrintable(QStringLiteral("search: ") + describe(bySearch) + QStringLiteral(" != ") + describe(wanted)));
        if (!filter.metadata.empty())
            return; // the index does not look at metadata; search() above does
        const QHash<QString, qint64> rowid = rowidsById(tmp.path());
        QSet<qint64> wantedRows;
        for (auto it = idOf.cbegin(); it != idOf.cend(); ++it)
            if (wanted.contains(QStringLiteral("shared token ") + it.key()))
                wantedRows.insert(rowid.value(it.value()));
        for (VectorIndex::Mode mode : {VectorIndex::Mode::Graph, VectorIndex::Mode::Auto, VectorIndex::Mode::Exact}) {
            const QSet<qint64> got = rowidSet(store->nearest({1, 0, 0, 0}, filter, 100, mode));
            QVERIFY2(got == wantedRows, qPrintable(QStringLiteral("mode %1: %2 rows, %3 wanted").arg(int(mode)).arg(got.size()).arg(wantedRows.size())));
        }
    };
    verify(want);
    if (QTest::currentTestFailed())
        return;
    // A write updates the loaded graph in place.
    MemoryRecord outsider = makeRecord(QStringLiteral("shared token outsider"), QStringLiteral("/zzz"), {1, 0, 0, 0}, 100);
    outsider.isPrivate = true;
    outsider.source = QStringLiteral("carol");
    outsider.categories = {QStringLiteral("fact")};
    outsider.metadata = Json{{"topic", "z"}};
    store->save({outsider});
    idOf.insert(QStringLiteral("outsider"), outsider.id);
    if (filter.matches(outsider))
        want.insert(outsider.content);
    verify(want);
}

void TestSqliteStorage::annRandomFiltersNeverLeak()
{
    test::TempStore tmp;
    auto store = openDirect(tmp.path(), Json{{"ann_threshold", 100}});
    const QStringList scopes = {"/a", "/a/x", "/ab", "/b", "/b/c/d"};
    const QStringList cats = {"c0", "c1", "c2", "c3"};
    const QStringList sources = {"", "alice", "bob"};
    QRandomGenerator rng(99);
    std::vector<MemoryRecord> records;
    for (int i = 0; i < 3000; ++i) {
        MemoryRecord r = makeRecord(QStringLiteral("r%1").arg(i), scopes[int(rng.bounded(5))], randomUnitish(rng, 16), int(rng.bounded(1000)));
        for (const QString &c : cats)
            if (rng.bounded(3) == 0)
                r.categories << c;
        r.source = sources[int(rng.bounded(3))];
        r.isPrivate = !r.source.isEmpty() && rng.bounded(4) == 0;
        records.push_back(r);
    }
    store->save(records);
    QHash<QString, const MemoryRecord *> byId;
    for (const MemoryRecord &r : records)
        byId.insert(r.id, &r);
    QHash<qint64, const MemoryRecord *> byRow;
    const QHash<QString, qint64> rowid = rowidsById(tmp.path());
    for (auto it = rowid.cbegin(); it != rowid.cend(); ++it)
        byRow.insert(it.value(), byId.value(it.key()));

    double recall = 0;
    int measured = 0;
    for (int t = 0; t < 60; ++t) {
        RecordFilter f;
        if (rng.bounded(2))
            f.scopes = {scopes[int(rng.bounded(5))]};
        if (rng.bounded(2))
            f.categories = {cats[int(rng.bounded(4))]};
        f.applyPrivacy = rng.bounded(3) != 0;
        f.includePrivate = rng.bounded(4) == 0;
        f.source = sources[int(rng.bounded(3))];
        if (rng.bounded(4) == 0)
            f.onlySource = sources[1 + int(rng.bounded(2))];
        if (rng.bounded(3) == 0)
            f.createdAfter = kBase.addSecs(3600LL * rng.bounded(500));
        if (rng.bounded(3) == 0)
            f.createdBefore = kBase.addSecs(3600LL * (500 + rng.bounded(500)));
        const Embedding q = randomUnitish(rng, 16);
        const auto exact = store->nearest(q, f, 20, VectorIndex::Mode::Exact);
        for (VectorIndex::Mode mode : {VectorIndex::Mode::Graph, VectorIndex::Mode::Auto}) {
            const auto hits = store->nearest(q, f, 20, mode);
            for (const auto &h : hits) {
                const MemoryRecord *r = byRow.value(h.rowid);
                QVERIFY(r);
                QVERIFY2(f.matches(*r), qPrintable(QStringLiteral("filter %1 leaked %2 (mode %3)").arg(t).arg(r->content).arg(int(mode))));
            }
            if (mode == VectorIndex::Mode::Auto && !exact.empty()) {
                recall += recallAgainst(hits, exact);
                ++measured;
            }
        }
        for (const ScoredRecord &s : store->search(q, f, 20))
            QVERIFY(f.matches(s.record));
    }
    QVERIFY(store->indexStats().approximate);
    QVERIFY(measured > 0);
    qInfo("filtered approximate top-20 against exact: recall %.4f over %d filters", recall / measured, measured);
    QVERIFY2(recall / measured >= 0.9, qPrintable(QString::number(recall / measured)));
}

void TestSqliteStorage::annFollowsWritesAndSurvivesReopen()
{
    test::TempStore tmp;
    const QString path = tmp.path();
    const Json config{{"ann_threshold", 100}, {"ann_ef_search", 200}};
    std::vector<MemoryRecord> records;
    for (int i = 0; i < 600; ++i)
        records.push_back(makeRecord(QStringLiteral("reopen %1").arg(i), QStringLiteral("/r"), annVector(QStringLiteral("reopen"), i, 0)));
    QString file;
    {
        auto s1 = openDirect(path, config);
        file = s1->indexFilePath();
        QCOMPARE(file, path + QStringLiteral(".hnsw"));
        s1->save(records);
        QCOMPARE(s1->search(records[5].embedding, {}, 1).at(0).record.id, records[5].id);
        QVERIFY(s1->indexStats().approximate);
        QCOMPARE(s1->indexStats().builds, qint64(1));
        QVERIFY(QFile::exists(file)); // written right after the build

        // Updates, deletes and inserts reach the loaded graph.
        MemoryRecord moved = records[0];
        moved.embedding = annVector(QStringLiteral("reopen"), 0, 1);
        moved.scope = QStringLiteral("/moved");
        s1->update(moved);
        RecordFilter gone;
        gone.ids = {records[1].id};
        QCOMPARE(s1->remove(gone), 1);
        std::vector<MemoryRecord> more;
        for (int i = 600; i < 605; ++i)
            more.push_back(makeRecord(QStringLiteral("reopen %1").arg(i), QStringLiteral("/r"), annVector(QStringLiteral("reopen"), i, 0)));
        s1->save(more);
        QCOMPARE(s1->search(moved.embedding, {}, 1).at(0).record.scope, QStringLiteral("/moved"));
        for (const ScoredRecord &h : s1->search(records[1].embedding, {}, 50))
            QVERIFY(h.record.id != records[1].id);
        QCOMPARE(s1->search(more[3].embedding, {}, 1).at(0).record.id, more[3].id);
        QCOMPARE(s1->indexStats().builds, qint64(1));
        s1->close(); // writes the file with the changes
    }
    QVERIFY(QFile::exists(file));
    const QDateTime written = QFileInfo(file).lastModified();
    const qint64 size = QFileInfo(file).size();
    QTest::qWait(20);
    {
        auto s2 = openDirect(path, config);
        QCOMPARE(s2->search(annVector(QStringLiteral("reopen"), 0, 1), {}, 1).at(0).record.id, records[0].id);
        const auto stats = s2->indexStats();
        QVERIFY(stats.approximate);
        QVERIFY(stats.fromFile);
        QCOMPARE(stats.fileLoads, qint64(1));
        QCOMPARE(stats.builds, qint64(0));
        QCOMPARE(stats.replayed, qint64(0));
        QCOMPARE(stats.vectors, std::size_t(604));
        s2->close(); // nothing changed: nothing written
    }
    QCOMPARE(QFileInfo(file).lastModified(), written);
    QCOMPARE(QFileInfo(file).size(), size);

    // Changes by a connection that never loads the index are caught up from the history on open.
    std::vector<MemoryRecord> later;
    {
        auto s3 = openDirect(path, config);
        for (int i = 1000; i < 1050; ++i)
            later.push_back(makeRecord(QStringLiteral("later %1").arg(i), QStringLiteral("/later"), annVector(QStringLiteral("reopen"), i, 0)));
        s3->save(later);
        MemoryRecord changed = records[10];
        changed.embedding = annVector(QStringLiteral("reopen"), 10, 1);
        s3->update(changed);
        RecordFilter gone;
        gone.ids = {records[20].id};
        QCOMPARE(s3->remove(gone), 1);
        QVERIFY(!s3->indexStats().loaded);
        s3->close();
    }
    QCOMPARE(QFileInfo(file).lastModified(), written);
    auto s4 = openDirect(path, config);
    QCOMPARE(s4->search(later[7].embedding, {}, 1).at(0).record.id, later[7].id);
    auto stats = s4->indexStats();
    QVERIFY(stats.fromFile);
    QCOMPARE(stats.builds, qint64(0));
    QCOMPARE(stats.replayed, qint64(52));
    QCOMPARE(stats.vectors, std::size_t(604 + 50 - 1));
    QCOMPARE(s4->search(annVector(QStringLiteral("reopen"), 10, 1), {}, 1).at(0).record.id, records[10].id);
    for (const ScoredRecord &h : s4->search(records[20].embedding, {}, 100))
        QVERIFY(h.record.id != records[20].id);
    QRandomGenerator rng(5);
    double recall = 0;
    for (int q = 0; q < 20; ++q) {
        const Embedding query = randomUnitish(rng, 16);
        recall += recallAgainst(s4->nearest(query, {}, 10), s4->nearest(query, {}, 10, VectorIndex::Mode::Exact));
    }
    QVERIFY2(recall / 20 >= 0.95, qPrintable(QString::number(recall / 20)));
    // A reset of everything drops the file with the records.
    s4->reset(QStringLiteral("/"));
    QVERIFY(!QFile::exists(file));
    QVERIFY(s4->search(later[7].embedding, {}, 10).empty());
}

void TestSqliteStorage::annSeesOtherProcesses()
{
    test::TempStore tmp;
    const QString path = tmp.path();
    auto a = openDirect(path, Json{{"ann_threshold", 50}, {"ann_ef_search", 200}});
    a->bindEmbedder({QStringLiteral("test/ann"), 16});
    std::vector<MemoryRecord> base;
    for (int i = 0; i < 300; ++i) {
        MemoryRecord r = makeRecord(QStringLiteral("base %1").arg(i), QStringLiteral("/writers/base"), annVector(QStringLiteral("base"), i, 0));
        r.metadata = Json{{"tag", "base"}, {"i", i}};
        base.push_back(r);
    }
    a->save(base);
    QCOMPARE(a->search(base[42].embedding, {}, 1).at(0).record.id, base[42].id);
    QVERIFY(a->indexStats().approximate);
    const qint64 builds = a->indexStats().builds;

    QProcess p;
    p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    p.start(QStringLiteral(SQLITE_WRITER_PATH), {path, QStringLiteral("new"), QStringLiteral("100"), QStringLiteral("10"), QStringLiteral("mutate")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(p.readAllStandardOutput().contains("mutated"));

    QCOMPARE(a->count({}), 300);
    for (int i = 0; i < 300; ++i) {
        if (i % 3 == 0) { // updated elsewhere: found by its new vector, in its new scope
            const auto hits = a->search(annVector(QStringLiteral("base"), i, 1), {}, 1);
            QCOMPARE(hits.at(0).record.id, base[std::size_t(i)].id);
            QCOMPARE(hits.at(0).record.scope, QStringLiteral("/moved"));
        } else if (i % 3 == 1) { // deleted elsewhere: never returned
            for (const ScoredRecord &h : a->search(base[std::size_t(i)].embedding, {}, 20))
                QVERIFY(h.record.id != base[std::size_t(i)].id);
        }
    }
    for (int i = 0; i < 100; i += 7)
        QCOMPARE(a->search(annVector(QStringLiteral("new"), i, 0), {}, 1).at(0).record.content, QStringLiteral("writer new record %1").arg(i));
    RecordFilter moved;
    moved.scopes = {QStringLiteral("/moved")};
    QCOMPARE(a->search(annVector(QStringLiteral("base"), 3, 1), moved, 1000).size(), std::size_t(100));
    const auto stats = a->indexStats();
    QCOMPARE(stats.builds, builds); // caught up, not rebuilt
    QVERIFY(stats.replayed >= 300);
    QCOMPARE(stats.vectors, std::size_t(300));
}

void TestSqliteStorage::annKilledWriterNeverGivesWrongResults()
{
    test::TempStore tmp;
    const QString path = tmp.path();
    QProcess p;
    p.setProcessChannelMode(QProcess::SeparateChannels);
    p.start(QStringLiteral(SQLITE_WRITER_PATH), {path, QStringLiteral("k"), QStringLiteral("1000000"), QStringLiteral("20"), QStringLiteral("ann")});
    QVERIFY(p.waitForStarted(10000));
    QByteArray out;
    QElapsedTimer timer;
    timer.start();
    // Past 1000 records the writer has written its index file at least once; keep it going a while.
    while (out.count("committed") < 130 && timer.elapsed() < 40000) {
        p.waitForReadyRead(1000);
        out += p.readAllStandardOutput();
    }
    QVERIFY2(out.count("committed") >= 130, out.right(200).constData());
    p.kill(); // SIGKILL: in a transaction, between two, or while writing the index file
    QVERIFY(p.waitForFinished(10000));
    QCOMPARE(p.exitStatus(), QProcess::CrashExit);
    QVERIFY(QFile::exists(path + QStringLiteral(".hnsw")));

    auto store = openDirect(path, Json{{"ann_threshold", 50}, {"ann_ef_search", 300}});
    const std::vector<MemoryRecord> all = store->list({}, -1, 0);
    const int n = int(all.size());
    QVERIFY(n >= 130 * 20);
    const QHash<QString, qint64> rowid = rowidsById(path);
    int selfFound = 0;
    for (const MemoryRecord &r : all) {
        const Embedding v = annVector(QStringLiteral("k"), r.metadata["i"].get<int>(), 0);
        // The index holds exactly the table's vectors: the exact scan finds every record itself.
        const auto exact = store->nearest(v, {}, 1, VectorIndex::Mode::Exact);
        QCOMPARE(exact.at(0).rowid, rowid.value(r.id));
        QVERIFY(exact.at(0).score > 0.9999);
        const auto approx = store->nearest(v, {}, 1);
        selfFound += approx.at(0).rowid == rowid.value(r.id) ? 1 : 0;
    }
    const auto stats = store->indexStats();
    QVERIFY(stats.approximate);
    QCOMPARE(stats.vectors, std::size_t(n));
    qInfo("after the kill: %d records, index %s (replayed %lld, built %lld), self found %d", n,
          stats.fromFile ? "read from its file" : "rebuilt", static_cast<long long>(stats.replayed),
          static_cast<long long>(stats.builds), selfFound);
    QVERIFY2(selfFound >= n * 99 / 100, qPrintable(QString::number(selfFound)));
    // Nothing returned that is not in the table.
    QRandomGenerator rng(3);
    for (int q = 0; q < 20; ++q)
        for (const auto &h : store->nearest(randomUnitish(rng, 16), {}, 50))
            QVERIFY(std::find(rowid.cbegin(), rowid.cend(), h.rowid) != rowid.cend());
}

void TestSqliteStorage::annDamagedOrForeignFileIsRebuilt()
{
    test::TempStore tmp;
    const Json config{{"ann_threshold", 50}, {"ann_ef_search", 200}};
    auto fill = [&](const QString &path, const QString &tag) {
        auto s = openDirect(path, config);
        std::vector<MemoryRecord> records;
        for (int i = 0; i < 300; ++i)
            records.push_back(makeRecord(QStringLiteral("%1 %2").arg(tag).arg(i), QStringLiteral("/"), annVector(tag, i, 0)));
        s->save(records);
        s->search(records[0].embedding, {}, 1);
        s->close();
    };
    const QString a = tmp.path(QStringLiteral("a.db")), b = tmp.path(QStringLiteral("b.db"));
    fill(a, QStringLiteral("a"));
    fill(b, QStringLiteral("b"));
    int wrong = 0;
    auto check = [&](const QString &path, const QString &tag) -> SqliteStorage::IndexStats {
        auto s = openDirect(path, config);
        for (int i = 0; i < 300; i += 11)
            if (s->search(annVector(tag, i, 0), {}, 1).at(0).record.content != QStringLiteral("%1 %2").arg(tag).arg(i))
                ++wrong;
        return s->indexStats();
    };
    QVERIFY(check(a, QStringLiteral("a")).fromFile);

    // Cut short: refused, rebuilt and written again.
    {
        QFile f(a + QStringLiteral(".hnsw"));
        QVERIFY(f.resize(f.size() / 2));
    }
    auto stats = check(a, QStringLiteral("a"));
    QVERIFY(!stats.fromFile);
    QCOMPARE(stats.builds, qint64(1));
    QVERIFY(check(a, QStringLiteral("a")).fromFile);

    // Another store's file: never applied.
    QVERIFY(QFile::remove(a + QStringLiteral(".hnsw")));
    QVERIFY(QFile::copy(b + QStringLiteral(".hnsw"), a + QStringLiteral(".hnsw")));
    stats = check(a, QStringLiteral("a"));
    QVERIFY(!stats.fromFile);
    QCOMPARE(stats.fileLoads, qint64(0));
    QCOMPARE(stats.builds, qint64(1));
    QCOMPARE(wrong, 0);
}

// The two-phase search gives what search() and keywordSearch() give, with each record's ranking fields
// taken from the index, and follows updates, deletes and other connections.
void TestSqliteStorage::searchHitsCarryRankFields_data()
{
    QTest::addColumn<int>("annThreshold");
    QTest::newRow("exact scan") << 1000000;
    QTest::newRow("graph") << 100;
}

void TestSqliteStorage::searchHitsCarryRankFields()
{
    QFETCH(int, annThreshold);
    test::TempStore tmp;
    const Json config{{"ann_threshold", annThreshold}, {"ann_ef_search", 200}};
    auto s1 = openDirect(tmp.path(), config);
    auto s2 = openDirect(tmp.path(), config);
    const QStringList words{QStringLiteral("alpha"), QStringLiteral("beta"), QStringLiteral("gamma")};
    std::vector<MemoryRecord> records;
    for (int i = 0; i < 300; ++i) {
        // A word in every 15th record: common words are left out of the search.
        MemoryRecord r = makeRecord(QStringLiteral("%1 note %2%3").arg(words[i % 3]).arg(i).arg(i % 15 ? "" : " zephyr"), i % 2 ? QStringLiteral("/a") : QStringLiteral("/b"),
                                    annVector(QStringLiteral("hits"), i, 0), i);
        r.importance = (i % 10) / 10.0;
        records.push_back(r);
    }
    s1->save(records);

    const auto check = [&](SqliteStorage &s, const Embedding &q, const RecordFilter &f) {
        const std::optional<std::vector<SearchHit>> hits = s.searchHits(q, f, 20);
        QVERIFY(hits.has_value());
        const std::vector<ScoredRecord> full = s.search(q, f, 20);
        QCOMPARE(hits->size(), full.size());
        std::vector<qint64> keys;
        for (const SearchHit &h : *hits)
            keys.push_back(h.key);
        const std::vector<std::optional<MemoryRecord>> read = s.hitRecords(keys);
        QCOMPARE(read.size(), keys.size());
        for (std::size_t i = 0; i < full.size(); ++i) {
            const SearchHit &h = hits->at(i);
            QVERIFY(read[i].has_value());
            QCOMPARE(read[i]->id, full[i].record.id);
            QCOMPARE(read[i]->content, full[i].record.content);
            QCOMPARE(h.score, full[i].score);
            QCOMPARE(h.cosine, full[i].score);
            QCOMPARE(h.importance, full[i].record.importance);
            QCOMPARE(h.createdAt, full[i].record.createdAt);
        }
    };
    RecordFilter inA;
    inA.scopes = {QStringLiteral("/a")};
    for (int q = 0; q < 8; ++q) {
        check(*s1, annVector(QStringLiteral("hits"), q * 37, 0), {});
        check(*s1, annVector(QStringLiteral("query"), q, 1), inA);
    }

    // Keyword hits: keywordSearch()'s records in its order, each with its cosine to the query vector.
    const Embedding query = annVector(QStringLiteral("query"), 99, 1);
    const std::optional<std::vector<SearchHit>> kw = s1->keywordHits(QStringLiteral("zephyr notes"), query, inA, 15);
    QVERIFY(kw.has_value());
    const std::vector<ScoredRecord> kwFull = s1->keywordSearch(QStringLiteral("zephyr notes"), inA, 15);
    QCOMPARE(kw->size(), kwFull.size());
    QVERIFY(!kwFull.empty());
    for (std::size_t i = 0; i < kwFull.size(); ++i) {
        const std::optional<MemoryRecord> r = s1->hitRecords({kw->at(i).key}).front();
        QVERIFY(r.has_value());
        QCOMPARE(r->id, kwFull[i].record.id);
        QCOMPARE(kw->at(i).score, kwFull[i].score);
        QCOMPARE(kw->at(i).importance, kwFull[i].record.importance);
        QCOMPARE(kw->at(i).createdAt, kwFull[i].record.createdAt);
        const std::optional<MemoryRecord> withVector = s1->get(r->id, true);
        QVERIFY(std::abs(kw->at(i).cosine - VectorMath::cosine(query, withVector->embedding)) < 1e-5);
    }
    QVERIFY(s1->keywordHits(QStringLiteral("the"), query, {}, 10)->empty()); // no searchable word

    // Metadata is judged on records: the two-phase search declines.
    RecordFilter byMeta;
    byMeta.metadata = Json{{"k", "v"}};
    QVERIFY(!s1->searchHits(query, byMeta, 10).has_value());
    QVERIFY(!s1->keywordHits(QStringLiteral("beta"), query, byMeta, 10).has_value());

    // An update reaches the index of this connection and, through the history, of another one.
    check(*s2, query, {});
    const SearchHit top = s2->searchHits(query, {}, 1)->front();
    MemoryRecord changed = *s2->hitRecords({top.key}).front();
    changed.importance = 0.77;
    changed.createdAt = kBase.addDays(-40);
    s1->update(changed);
    for (SqliteStorage *s : {s1.get(), s2.get()}) {
        const SearchHit h = s->searchHits(query, {}, 1)->front();
        QCOMPARE(h.key, top.key);
        QCOMPARE(h.importance, 0.77);
        QCOMPARE(h.createdAt, kBase.addDays(-40));
        check(*s, query, {});
    }
    // A record deleted after the hits were taken reads as nothing.
    RecordFilter gone;
    gone.ids = {changed.id};
    QCOMPARE(s2->remove(gone), 1);
    const std::vector<std::optional<MemoryRecord>> after = s1->hitRecords({top.key, s1->searchHits(query, {}, 2)->at(1).key});
    QVERIFY(!after[0].has_value());
    QVERIFY(after[1].has_value());
    QVERIFY(s1->hitRecords({}).empty());
}

namespace {

// Where the parts of an index file (formats 3 and 4) begin: the header, the per-node arrays, the graph.
struct IndexLayout
{
    qsizetype importances = 0; // the per-node importance array (doubles)
    qsizetype identities = 0;  // the per-node identity arrays (three of 4-byte indexes into their names)
    quint32 identityNames = 0; // how many identity names the file holds ("" first)
    qsizetype graph = 0;       // the level-0 block of the graph
    quint64 nodes = 0;
};

IndexLayout indexLayout(const QByteArray &b)
{
    IndexLayout l;
    qsizetype at = 8;
    const auto u32 = [&] { quint32 v; std::memcpy(&v, b.constData() + at, 4); at += 4; return v; };
    const auto u64 = [&] { quint64 v; std::memcpy(&v, b.constData() + at, 8); at += 8; return v; };
    u32();       // format
    u32();       // byte order
    u32();       // dimension
    u64();       // generation
    u64();       // seq
    at += u32(); // store id
    for (int list = 0; list < 3; ++list)
        for (quint32 n = u32(), i = 0; i < n; ++i)
            at += u32();
    for (quint32 sets = u32(), i = 0; i < sets; ++i)
        at += qsizetype(4 * u32());
    l.nodes = u64();
    at += qsizetype(l.nodes * (8 + 4 + 4 + 4 + 1 + 8)); // rowids, scope, category set, source, private, created
    l.importances = at;
    at += qsizetype(l.nodes * 8);
    l.identityNames = u32();
    for (quint32 i = 0; i < l.identityNames; ++i)
        at += u32();
    l.identities = at;
    at += qsizetype(3 * 4 * l.nodes);
    at += qsizetype(8 * u64());          // unvectored rowids
    at += 8 * 3 + 4 + 4 + 8 * 3 + 8 + 8; // graph parameters
    l.graph = at;
    return l;
}

void writeBytes(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    QCOMPARE(f.write(bytes), qint64(bytes.size()));
}

} // namespace

// A damaged index file (one bit flipped anywhere, a NaN importance written in) is refused by its
// checksum, rebuilt from the records and written again; no record vanishes from a search, and the
// identities filter on the rebuilt index. An identity index out of range is refused even behind a
// matching checksum (a faulty writer). An index file of an older format (format 2: no checksum, no
// identities) is rebuilt too. So is a code whose scale or error length is no distance's number, or a
// vector that is not finite, behind a matching checksum.
void TestSqliteStorage::damagedIndexFileIsRebuilt_data()
{
    QTest::addColumn<QString>("damage");
    QTest::newRow("header") << "header";
    QTest::newRow("a NaN importance") << "nan importance";
    QTest::newRow("an identity out of range, checksum matching") << "identity";
    QTest::newRow("a NaN code scale, checksum matching") << "nan code";
    QTest::newRow("a negative code error length, checksum matching") << "negative error";
    QTest::newRow("an infinite vector component, checksum matching") << "infinite vector";
    QTest::newRow("the graph") << "graph";
    QTest::newRow("the last byte before the trailer") << "end";
    QTest::newRow("the checksum") << "checksum";
    QTest::newRow("format 2, without a checksum") << "format 2";
}

void TestSqliteStorage::damagedIndexFileIsRebuilt()
{
    QFETCH(QString, damage);
    test::TempStore tmp;
    const Json config{{"ann_threshold", 100}, {"ann_ef_search", 200}};
    std::vector<MemoryRecord> records;
    for (int i = 0; i < 400; ++i) {
        records.push_back(makeRecord(QStringLiteral("indexed %1").arg(i), QStringLiteral("/i"), annVector(QStringLiteral("idx"), i, 0), i));
        records.back().importance = (i % 7) / 7.0;
        if (i % 4 == 0)
            records.back().metadata = Json{{"user_id", i % 8 == 0 ? "alice" : "bob"}};
    }
    QString file;
    {
        auto s = openDirect(tmp.path(), config);
        s->save(records);
        QVERIFY(!s->search(records[0].embedding, {}, 1).empty());
        file = s->indexFilePath();
        s->close();
    }
    QByteArray b = fileBytes(file);
    const IndexLayout layout = indexLayout(b);
    QCOMPARE(layout.nodes, quint64(400));
    QCOMPARE(layout.identityNames, quint32(3)); // "", and alice and bob
    const qsizetype trailer = b.size() - 24;
    if (damage == QLatin1String("header")) {
        b[12] = char(b[12] ^ 0x01); // the byte order's first byte
    } else if (damage == QLatin1String("nan importance")) {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        std::memcpy(b.data() + layout.importances + 8 * 5, &nan, 8);
    } else if (damage == QLatin1String("identity")) {
        const qint32 outOfRange = 7;
        std::memcpy(b.data() + layout.identities + 4 * 3, &outOfRange, 4);
        const quint64 sum = VectorIndex::fileChecksum(b.constData(), trailer);
        std::memcpy(b.data() + trailer + 8, &sum, 8);
    } else if (damage == QLatin1String("nan code") || damage == QLatin1String("negative error")) {
        // Node 3's code: its scale, then its error length, at the data offset of its element.
        const qsizetype params = layout.graph - (8 * 3 + 4 + 4 + 8 * 3 + 8 + 8);
        quint64 element = 0, dataOffset = 0;
        std::memcpy(&element, b.constData() + params, 8);
        std::memcpy(&dataOffset, b.constData() + params + 16, 8);
        const qsizetype code = layout.graph + qsizetype(3 * element + dataOffset);
        const bool scale = damage == QLatin1String("nan code");
        const float value = scale ? std::numeric_limits<float>::quiet_NaN() : -0.25f;
        std::memcpy(b.data() + code + (scale ? 0 : 4), &value, 4);
        const quint64 sum = VectorIndex::fileChecksum(b.constData(), trailer);
        std::memcpy(b.data() + trailer + 8, &sum, 8);
    } else if (damage == QLatin1String("infinite vector")) {
        // The float vectors end the file, before its trailer: node 7's third component.
        quint32 dimension = 0;
        std::memcpy(&dimension, b.constData() + 16, 4);
        const qsizetype vectors = trailer - qsizetype(layout.nodes * dimension * 4);
        const float infinite = std::numeric_limits<float>::infinity();
        std::memcpy(b.data() + vectors + qsizetype(7 * dimension + 2) * 4, &infinite, 4);
        const quint64 sum = VectorIndex::fileChecksum(b.constData(), trailer);
        std::memcpy(b.data() + trailer + 8, &sum, 8);
    } else if (damage == QLatin1String("graph")) {
        b[layout.graph + 100] = char(b[layout.graph + 100] ^ 0x10);
    } else if (damage == QLatin1String("end")) {
        b[trailer - 1] = char(b[trailer - 1] ^ 0x80);
    } else if (damage == QLatin1String("checksum")) {
        b[trailer + 8] = char(b[trailer + 8] ^ 0x01);
    } else { // format 2: no identity tables, no checksum in the trailer
        b.remove(trailer + 8, 8);
        const qsizetype tables = layout.importances + qsizetype(8 * layout.nodes); // the identity names, then arrays
        b.remove(tables, layout.identities + qsizetype(3 * 4 * layout.nodes) - tables);
        const quint32 two = 2;
        std::memcpy(b.data() + 8, &two, 4);
        const quint64 length = quint64(b.size()) - 16;
        std::memcpy(b.data() + b.size() - 8, &length, 8);
    }
    writeBytes(file, b);

    auto s = openDirect(tmp.path(), config);
    for (int i = 0; i < 400; i += 7) {
        const std::vector<ScoredRecord> hit = s->search(records[std::size_t(i)].embedding, {}, 1);
        QCOMPARE(hit.size(), std::size_t(1));
        QCOMPARE(hit.front().record.id, records[std::size_t(i)].id);
    }
    const std::optional<std::vector<SearchHit>> hits = s->searchHits(records[5].embedding, {}, 400);
    QCOMPARE(hits->size(), std::size_t(400)); // none vanished, record 5 among them
    for (const SearchHit &h : *hits)
        QVERIFY(std::isfinite(h.importance));
    // The identities filter on the rebuilt index, without reading records.
    RecordFilter alice;
    alice.metadata = Json{{"user_id", "alice"}};
    const std::optional<std::vector<SearchHit>> hers = s->searchHits(records[5].embedding, alice, 1000);
    QVERIFY(hers.has_value());
    QCOMPARE(hers->size(), std::size_t(50));
    for (const SearchHit &h : *hers)
        QVERIFY(s->hitRecords({h.key}).front()->metadata["user_id"] == "alice");
    QVERIFY(!s->indexStats().fromFile);
    QCOMPARE(s->indexStats().fileLoads, qint64(0));
    QCOMPARE(s->indexStats().builds, qint64(1));
    s->close();
    quint32 format = 0;
    std::memcpy(&format, fileBytes(file).constData() + 8, 4);
    QCOMPARE(format, quint32(4)); // written again, whole
    auto reopened = openDirect(tmp.path(), config);
    QVERIFY(reopened->search(records[0].embedding, {}, 1).size() == 1);
    QCOMPARE(reopened->searchHits(records[5].embedding, alice, 1000)->size(), std::size_t(50));
    QVERIFY(reopened->indexStats().fromFile);
}

// An exact scan of the graph layout reads the 8-bit codes of every selected vector and the float
// vectors of those whose code score is within its error bound of the best: it returns what scoring
// every float vector returns, the same records with the same scores in the same order, on dense and
// sparse vectors, with many ties, with and without a filter.
void TestSqliteStorage::screenedScanIsExact_data()
{
    QTest::addColumn<QString>("kind");
    QTest::newRow("dense") << "dense";
    QTest::newRow("sparse") << "sparse";
    QTest::newRow("ties") << "ties";
}

void TestSqliteStorage::screenedScanIsExact()
{
    QFETCH(QString, kind);
    const int dim = 64;
    QRandomGenerator rng(11);
    auto vector = [&](int i) {
        std::vector<float> v(dim, 0.0f);
        if (kind == QLatin1String("dense")) {
            for (float &x : v)
                x = float(rng.generateDouble() * 2 - 1);
        } else if (kind == QLatin1String("sparse")) {
            for (int k = 0; k < 6; ++k)
                v[std::size_t(rng.bounded(dim))] += rng.bounded(2) ? 1.0f : -1.0f;
            v[std::size_t(i % dim)] += 0.5f;
        } else { // a few distinct vectors, each many times
            QRandomGenerator shared(quint32(i % 7));
            for (float &x : v)
                x = float(shared.generateDouble() * 2 - 1);
        }
        return v;
    };
    VectorIndex index;
    index.reset(dim);
    for (int i = 1; i <= 3000; ++i) {
        VectorIndex::Item item;
        item.rowid = i;
        item.scope = QStringLiteral("/s/%1").arg(i % 3);
        const std::vector<float> v = vector(i);
        index.upsert(item, v.data());
    }
    index.buildAnn(1);
    QVERIFY(index.isAnn());
    RecordFilter scoped;
    scoped.scopes = {QStringLiteral("/s/1")};
    for (int q = 0; q < 40; ++q) {
        const std::vector<float> query = vector(100000 + q);
        for (const RecordFilter &filter : {RecordFilter{}, scoped}) {
            for (int limit : {1, 10, 50}) {
                const auto fast = index.search(query.data(), filter, limit, nullptr, VectorIndex::Mode::Exact);
                auto all = index.search(query.data(), filter, -1, nullptr, VectorIndex::Mode::Exact);
                all.resize(std::size_t(limit));
                QCOMPARE(fast.size(), all.size());
                for (std::size_t k = 0; k < fast.size(); ++k) {
                    QCOMPARE(fast[k].rowid, all[k].rowid);
                    QCOMPARE(fast[k].score, all[k].score);
                }
            }
        }
    }
}

// A scoped exact scan of the graph layout reads only the slots filed under the selected scopes. After
// each kind of write (records added after the lists were filed, moved to another scope by
// updateAttributes() or by an upsert, removed, put back in another scope, a parallel run of inserts
// left in the background, private records) and after a save and load, its hits equal, score for
// score, those of a flat index holding the same records (a scan of every record).
void TestSqliteStorage::scopedScanFollowsEveryWrite()
{
    const int dim = 16;
    QRandomGenerator rng(23);
    struct Entry
    {
        VectorIndex::Item item;
        std::vector<float> vector;
    };
    std::map<qint64, Entry> model;
    auto entry = [&](qint64 rowid, const QString &scope) {
        Entry e;
        e.item.rowid = rowid;
        e.item.scope = scope;
        e.item.source = rowid % 5 == 0 ? QStringLiteral("a") : QStringLiteral("b");
        e.item.isPrivate = rowid % 7 == 0;
        e.vector.resize(dim);
        for (float &x : e.vector)
            x = float(rng.generateDouble() * 2 - 1);
        return e;
    };
    const QStringList scopes{QStringLiteral("/s"), QStringLiteral("/s/1"), QStringLiteral("/s/2"), QStringLiteral("/t")};
    auto someScope = [&] { return scopes.at(qsizetype(rng.bounded(int(scopes.size())))); };
    VectorIndex index;
    index.reset(dim);
    auto put = [&](VectorIndex &ix, const Entry &e) {
        model[e.item.rowid] = e;
        ix.upsert(e.item, e.vector.data());
    };
    std::vector<RecordFilter> filters;
    for (const QStringList &asked : {QStringList{QStringLiteral("/s/1")}, QStringList{QStringLiteral("/s")},
                                     QStringList{QStringLiteral("/s/2"), QStringLiteral("/t")}, QStringList{QStringLiteral("/u")},
                                     QStringList{QStringLiteral("/none")}}) {
        RecordFilter f;
        f.scopes = asked;
        filters.push_back(f);
    }
    RecordFilter privateHidden = filters[1];
    privateHidden.applyPrivacy = true;
    privateHidden.source = QStringLiteral("a");
    filters.push_back(privateHidden);
    RecordFilter ofOneSource = filters[0];
    ofOneSource.onlySource = QStringLiteral("b");
    filters.push_back(ofOneSource);

    auto check = [&](VectorIndex &ix, const char *step) {
        VectorIndex flat;
        flat.reset(dim);
        for (const auto &[rowid, e] : model)
            flat.upsert(e.item, e.vector.data());
        QVERIFY2(ix.isAnn(), step);
        QCOMPARE(ix.size(), flat.size());
        for (int q = 0; q < 8; ++q) {
            std::vector<float> query(dim);
            for (float &x : query)
                x = float(rng.generateDouble() * 2 - 1);
            for (const RecordFilter &filter : filters) {
                for (int limit : {5, 60, -1}) {
                    for (VectorIndex::Mode mode : {VectorIndex::Mode::Exact, VectorIndex::Mode::Auto}) {
                        bool walked = false;
                        const auto got = ix.search(query.data(), filter, limit, nullptr, mode, &walked);
                        if (walked)
                            continue; // Auto found a large selection in the graph: approximate
                        const auto want = flat.search(query.data(), filter, limit, nullptr, VectorIndex::Mode::Exact);
                        QVERIFY2(got.size() == want.size(), qPrintable(QStringLiteral("%1, scopes %2, limit %3: %4 hits, %5 expected")
                                                                           .arg(QLatin1String(step), filter.scopes.join(QLatin1Char(',')))
                                                                           .arg(limit)
                                                                           .arg(got.size())
                                                                           .arg(want.size())));
                        for (std::size_t k = 0; k < got.size(); ++k) {
                            QVERIFY2(got[k].rowid == want[k].rowid && got[k].score == want[k].score,
                                     qPrintable(QStringLiteral("%1, scopes %2, limit %3, mode %4, hit %5")
                                                    .arg(QLatin1String(step), filter.scopes.join(QLatin1Char(',')))
                                                    .arg(limit)
                                                    .arg(int(mode))
                                                    .arg(k)));
                        }
                    }
                }
            }
        }
    };

    // Past VectorIndex::kParallelFrom, so that a run of new records is inserted by several threads.
    const qint64 first = qint64(VectorIndex::kParallelFrom) + 500;
    for (qint64 r = 1; r <= first; ++r)
        put(index, entry(r, someScope()));
    QVERIFY(index.buildAnn(2));
    check(index, "built");
    for (qint64 r = first + 1; r <= first + 300; ++r)
        put(index, entry(r, someScope()));
    check(index, "added after the lists were filed");
    for (qint64 r = 1; r <= 400; r += 2) {
        Entry &e = model[r];
        e.item.scope = r % 3 ? someScope() : QStringLiteral("/u"); // "/u": a scope new to the index
        index.updateAttributes(e.item);
    }
    check(index, "moved by updateAttributes");
    for (qint64 r = 2; r <= 400; r += 2)
        put(index, entry(r, someScope()));
    check(index, "moved by an upsert");
    for (qint64 r = 401; r <= 900; ++r) {
        model.erase(r);
        index.remove(r);
    }
    check(index, "removed");
    for (qint64 r = 401; r <= 600; ++r)
        put(index, entry(r, r % 2 ? QStringLiteral("/u") : someScope()));
    check(index, "put back");
    std::vector<Entry> batch;
    for (qint64 r = first + 301; r <= first + 1300; ++r)
        batch.push_back(entry(r, someScope()));
    std::vector<VectorIndex::Change> changes;
    for (const Entry &e : batch) {
        model[e.item.rowid] = e;
        changes.push_back({VectorIndex::Change::Kind::Put, e.item, e.vector.data()});
    }
    index.apply(changes, 2, true);
    check(index, "a parallel run of inserts");

    test::TempStore tmp;
    const QString path = tmp.path(QStringLiteral("scoped.hnsw"));
    QString error;
    QVERIFY2(index.save(path, VectorIndex::Stamp{QStringLiteral("store"), 0, 1}, &error), qPrintable(error));
    VectorIndex loaded;
    VectorIndex::Stamp stamp;
    QVERIFY2(loaded.load(path, dim, &stamp, &error), qPrintable(error));
    check(loaded, "loaded");
    for (qint64 r = 601; r <= 700; ++r)
        put(loaded, entry(r, someScope()));
    for (qint64 r = 1; r <= 100; ++r) {
        model.erase(r);
        loaded.remove(r);
    }
    check(loaded, "written after the load");
}

// An index file larger than the reader's pieces (8 MB, read ahead by a thread) and large enough to be
// written and read around the page cache (16 MB): read whole and accepted, and a flipped byte in its
// third piece found by the checksum.
void TestSqliteStorage::indexFileOfManyPiecesIsReadWhole()
{
    test::TempStore tmp;
    const Json config{{"ann_threshold", 1000}};
    QRandomGenerator rng(7);
    std::vector<MemoryRecord> records;
    for (int i = 0; i < 14000; ++i)
        records.push_back(makeRecord(QStringLiteral("piece %1").arg(i), QStringLiteral("/p/%1").arg(i % 5), randomUnitish(rng, 256), i));
    QString file;
    {
        auto s = openDirect(tmp.path(), config);
        for (std::size_t at = 0; at < records.size(); at += 2000)
            s->save(std::vector<MemoryRecord>(records.begin() + std::ptrdiff_t(at), records.begin() + std::ptrdiff_t(at + 2000)));
        s->search(records[0].embedding, {}, 1);
        s->waitForIndex();
        file = s->indexFilePath();
        s->close();
    }
    const qint64 piece = qint64(8) << 20;
    QVERIFY2(QFileInfo(file).size() > 2 * piece + 4096, qPrintable(QString::number(QFileInfo(file).size())));
    const auto findsItself = [&](SqliteStorage &s) {
        for (std::size_t i = 0; i < records.size(); i += 997) {
            const std::vector<ScoredRecord> hit = s.search(records[i].embedding, {}, 1);
            if (hit.size() != 1 || hit.front().record.id != records[i].id)
                return false;
        }
        return true;
    };
    {
        auto s = openDirect(tmp.path(), config);
        QVERIFY(findsItself(*s));
        QVERIFY(s->indexStats().fromFile);
        QCOMPARE(s->indexStats().fileLoads, qint64(1));
        s->close();
    }
    QByteArray b = fileBytes(file);
    const qsizetype third = qsizetype(2 * piece + 1000);
    b[third] = char(b[third] ^ 0x04);
    writeBytes(file, b);
    auto s = openDirect(tmp.path(), config);
    QVERIFY(findsItself(*s));
    QVERIFY(!s->indexStats().fromFile); // refused, built again from the records
    QCOMPARE(s->indexStats().fileLoads, qint64(0));
}

void TestSqliteStorage::floatArrayActsAsAVector_data()
{
    QTest::addColumn<int>("seed");
    QTest::addColumn<int>("scale"); // the largest size a step asks for
    QTest::newRow("small steps") << 1 << 5000;
    QTest::newRow("past several 2 MB pages") << 2 << 3000000;
    QTest::newRow("shrinks and grows again") << 3 << 700000;
}

// The vectors' array (FloatArray: a mapping grown in place) against std::vector, step by step:
// resizes up and down (what comes back after a shrink reads as zero, as with std::vector), writes,
// copies and moves.
void TestSqliteStorage::floatArrayActsAsAVector()
{
    QFETCH(int, seed);
    QFETCH(int, scale);
    QRandomGenerator rng{quint32(seed)};
    FloatArray array;
    std::vector<float> model;
    const auto same = [&](const FloatArray &a) {
        return a.size() == model.size() && std::equal(model.begin(), model.end(), a.data());
    };
    for (int step = 0; step < 60; ++step) {
        const std::size_t size = std::size_t(rng.bounded(scale + 1));
        array.resize(size);
        model.resize(size);
        QVERIFY2(same(array), qPrintable(QStringLiteral("step %1: resized to %2").arg(step).arg(size)));
        for (int k = 0; k < 50 && size > 0; ++k) { // scattered writes
            const std::size_t at = std::size_t(rng.bounded(quint32(size)));
            array.data()[at] = model[at] = float(step * 1000 + k);
        }
        // The whole tail written too: a later shrink gives back written elements.
        std::fill(array.data() + size / 2, array.data() + size, float(step));
        std::fill(model.begin() + std::ptrdiff_t(size / 2), model.end(), float(step));
        if (step % 7 == 3) {
            FloatArray copy(array);
            QVERIFY(same(copy));
            copy.resize(copy.size() + 10);
            QCOMPARE(copy.data()[copy.size() - 1], 0.0f);
            array = std::move(copy);
            model.resize(model.size() + 10);
            QVERIFY(same(array));
        }
        if (step % 11 == 5) {
            FloatArray other;
            other.resize(17);
            other = array; // a copy into an array too small for it
            QVERIFY(same(other));
            array = FloatArray(std::move(other));
            QVERIFY(same(array));
        }
    }
    array = FloatArray();
    QCOMPARE(array.size(), std::size_t(0));
    QVERIFY(array.empty());
}

namespace {

// Whether one mapping of this process (a line of /proc/self/maps) holds all of [begin, end).
bool oneMappingHolds(const void *begin, const void *end)
{
    QFile maps(QStringLiteral("/proc/self/maps"));
    if (!maps.open(QIODevice::ReadOnly))
        return false;
    const auto b = quintptr(begin), e = quintptr(end);
    for (const QByteArray &line : maps.readAll().split('\n')) {
        const QList<QByteArray> range = line.left(line.indexOf(' ')).split('-');
        if (range.size() == 2 && range[0].toULongLong(nullptr, 16) <= b && e <= range[1].toULongLong(nullptr, 16))
            return true;
    }
    return false;
}

constexpr std::size_t kMb = std::size_t(1) << 20;

} // namespace

// Advice for 2 MB pages covers a block's whole mapping: advice on the 2 MB pages inside alone split the
// mapping, and a split one cannot grow in place. Here: FloatArray's mremap failed where the kernel
// does not place a mapping on a 2 MB boundary.
void TestSqliteStorage::hugePageAdviceKeepsAnUnalignedMappingWhole()
{
    const std::size_t bytes = 6 * kMb;
    // A mapping placed 4 KB past a 2 MB boundary, in room reserved for it.
    void *room = ::mmap(nullptr, bytes + 4 * kMb, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    QVERIFY(room != MAP_FAILED);
    const quintptr start = ((quintptr(room) + 2 * kMb - 1) & ~quintptr(2 * kMb - 1)) + 4096;
    ::munmap(room, bytes + 4 * kMb);
    char *block = static_cast<char *>(::mmap(reinterpret_cast<void *>(start), bytes, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0));
    if (block == MAP_FAILED)
        QSKIP("the reserved room was taken meanwhile");
    adviseHugePages(block, bytes);
    QVERIFY(oneMappingHolds(block, block + bytes));
    void *grown = ::mremap(block, bytes, 3 * bytes, MREMAP_MAYMOVE);
    QVERIFY2(grown != MAP_FAILED, std::strerror(errno));
    ::munmap(grown, 3 * bytes);
}

// The same for a malloc() block (glibc's realloc of the graph's level-0 block copied it).
void TestSqliteStorage::hugePageAdviceKeepsAMallocBlockWhole()
{
    char *block = static_cast<char *>(std::malloc(64 * kMb)); // above glibc's largest threshold for a mapping of its own
    QVERIFY(block);
    adviseHugePagesOfAllocation(block);
    QVERIFY(oneMappingHolds(block, block + 64 * kMb));
    char *grown = static_cast<char *>(std::realloc(block, 96 * kMb));
    QVERIFY(grown);
    adviseHugePagesOfAllocation(grown);
    QVERIFY(oneMappingHolds(grown, grown + 96 * kMb));
    std::free(grown);
}

// An index file of format 3 (Mneme 0.2 before the 8-bit codes: the float vectors inside the graph's
// level-0 block, no vectors section) is read, not rebuilt: each vector is quantised as it is read, the
// searches find what they found in the file of format 4 it was made from, and the next write of the
// file is of format 4.
void TestSqliteStorage::formatThreeFileIsRead()
{
    test::TempStore tmp;
    const Json config{{"ann_threshold", 100}};
    std::vector<MemoryRecord> records;
    for (int i = 0; i < 400; ++i)
        records.push_back(makeRecord(QStringLiteral("old %1").arg(i), QStringLiteral("/o/%1").arg(i % 3), annVector(QStringLiteral("old"), i, 0), i));
    QString file;
    std::vector<std::vector<VectorIndex::Hit>> before;
    RecordFilter scoped;
    scoped.scopes = {QStringLiteral("/o/1")};
    {
        auto s = openDirect(tmp.path(), config);
        s->save(records);
        s->nearest(records[0].embedding, {}, 1);
        file = s->indexFilePath();
        s->close();
        auto reader = openDirect(tmp.path(), config);
        for (int i = 0; i < 400; i += 37) {
            before.push_back(reader->nearest(annVector(QStringLiteral("old"), i, 5), {}, 10, VectorIndex::Mode::Graph));
            before.push_back(reader->nearest(annVector(QStringLiteral("old"), i, 5), scoped, 10, VectorIndex::Mode::Graph));
        }
        QVERIFY(reader->indexStats().fromFile);
    }
    const QByteArray b = fileBytes(file);
    quint32 format = 0;
    std::memcpy(&format, b.constData() + 8, 4);
    QCOMPARE(format, quint32(4));

    // The same index as format 3: the level-0 elements hold the vectors instead of their codes.
    const IndexLayout layout = indexLayout(b);
    quint32 dimension = 0;
    std::memcpy(&dimension, b.constData() + 16, 4);
    const qsizetype params = layout.graph - (8 * 3 + 4 + 4 + 8 * 3 + 8 + 8);
    quint64 element = 0, labelOffset = 0, dataOffset = 0;
    std::memcpy(&element, b.constData() + params, 8);
    std::memcpy(&labelOffset, b.constData() + params + 8, 8);
    std::memcpy(&dataOffset, b.constData() + params + 16, 8);
    QCOMPARE(labelOffset, dataOffset + 8 + dimension); // a scale, an error length and the codes
    const qsizetype trailer = b.size() - 24;
    const qsizetype vectorBytes = qsizetype(layout.nodes * dimension * 4);
    const qsizetype vectors = trailer - vectorBytes;
    const qsizetype upperLinks = layout.graph + qsizetype(layout.nodes * element);
    QByteArray old = b.left(params);
    const quint32 three = 3;
    std::memcpy(old.data() + 8, &three, 4);
    const quint64 oldLabelOffset = dataOffset + 4 * dimension, oldElement = oldLabelOffset + 8;
    old.append(reinterpret_cast<const char *>(&oldElement), 8);
    old.append(reinterpret_cast<const char *>(&oldLabelOffset), 8);
    old.append(b.mid(params + 16, layout.graph - params - 16));
    for (quint64 n = 0; n < layout.nodes; ++n) {
        const qsizetype at = layout.graph + qsizetype(n * element);
        old.append(b.mid(at, qsizetype(dataOffset)));
        old.append(b.mid(vectors + qsizetype(n * dimension * 4), qsizetype(dimension * 4)));
        old.append(b.mid(at + qsizetype(labelOffset), 8));
    }
    old.append(b.mid(upperLinks, vectors - upperLinks));
    const quint64 sum = VectorIndex::fileChecksum(old.constData(), old.size());
    const quint64 length = quint64(old.size());
    old.append("MNEMEEND", 8);
    old.append(reinterpret_cast<const char *>(&sum), 8);
    old.append(reinterpret_cast<const char *>(&length), 8);
    writeBytes(file, old);

    auto s = openDirect(tmp.path(), config);
    std::size_t k = 0;
    for (int i = 0; i < 400; i += 37) {
        for (const RecordFilter &filter : {RecordFilter{}, scoped}) {
            const auto hits = s->nearest(annVector(QStringLiteral("old"), i, 5), filter, 10, VectorIndex::Mode::Graph);
            QCOMPARE(hits.size(), before[k].size());
            for (std::size_t h = 0; h < hits.size(); ++h) {
                QCOMPARE(hits[h].rowid, before[k][h].rowid);
                QCOMPARE(hits[h].score, before[k][h].score);
            }
            ++k;
        }
    }
    QVERIFY(s->indexStats().fromFile);
    QCOMPARE(s->indexStats().builds, qint64(0));
    s->save({makeRecord(QStringLiteral("new"), QStringLiteral("/o/0"), annVector(QStringLiteral("old"), 400, 0), 400)});
    s->close();
    std::memcpy(&format, fileBytes(file).constData() + 8, 4);
    QCOMPARE(format, quint32(4));
}

// Values the index holds are checked on load even when the checksum matches (a file written by a
// faulty writer): a NaN importance or vector component refuses the file.
void TestSqliteStorage::indexValuesAreValidatedOnLoad()
{
    test::TempStore tmp;
    VectorIndex index;
    index.reset(4);
    for (int i = 1; i <= 50; ++i) {
        VectorIndex::Item item;
        item.rowid = i;
        item.scope = QStringLiteral("/v");
        item.importance = i == 7 ? std::numeric_limits<double>::quiet_NaN() : 0.5;
        const float v[4] = {float(i), 1.0f, float(i % 3), 0.5f};
        index.upsert(item, v);
    }
    index.buildAnn(1);
    const QString path = tmp.path(QStringLiteral("nan.hnsw"));
    QString error;
    QVERIFY2(index.save(path, VectorIndex::Stamp{QStringLiteral("store"), 0, 1}, &error), qPrintable(error));
    VectorIndex loaded;
    VectorIndex::Stamp stamp;
    QVERIFY(!loaded.load(path, 4, &stamp, &error));
    QVERIFY2(error.contains(QLatin1String("values of node")), qPrintable(error));
    QVERIFY(!loaded.isLoaded());
}

// Metadata conditions select exactly what RecordFilter::matches() selects, through every operation
// that takes a filter: the SQL narrows, the records decide, and the vector index judges identities.
void TestSqliteStorage::metadataConditionsEverywhere_data()
{
    QTest::addColumn<QString>("filter");
    QTest::newRow("equal text") << R"({"team": "ops"})";
    QTest::newRow("equal number") << R"({"n": 3})";
    QTest::newRow("equal bool") << R"({"flag": true})";
    QTest::newRow("$ne") << R"({"team": {"$ne": "ops"}})";
    QTest::newRow("range") << R"({"n": {"$gte": 2, "$lt": 7}})";
    QTest::newRow("real bound") << R"({"n": {"$gt": 2.5}})";
    QTest::newRow("text bound") << R"({"team": {"$lt": "p"}})";
    QTest::newRow("$in mixed") << R"({"n": {"$in": [1, "ops", 4]}})";
    QTest::newRow("$nin") << R"({"team": {"$nin": ["ops", "web"]}})";
    QTest::newRow("$exists") << R"({"flag": {"$exists": true}})";
    QTest::newRow("$exists false") << R"({"team": {"$exists": false}})";
    QTest::newRow("identity") << R"({"user_id": "u1"})";
    QTest::newRow("identity missing") << R"({"user_id": {"$exists": false}, "agent_id": {"$exists": true}})";
    QTest::newRow("identity and more") << R"({"user_id": "u2", "n": {"$lte": 5}})";
    QTest::newRow("key with a quote") << R"({"we\"ird": 1})";
    QTest::newRow("nothing matches") << R"({"user_id": "nobody"})";
}

void TestSqliteStorage::metadataConditionsEverywhere()
{
    QFETCH(QString, filter);
    for (int annThreshold : {100000, 0}) {
        test::TempStore tmp;
        auto store = openDirect(tmp.path(), Json{{"ann_threshold", annThreshold}});
        std::vector<MemoryRecord> records;
        const char *teams[] = {"ops", "web", "db", nullptr};
        for (int i = 0; i < 40; ++i) { // under the 50 records a keyword may be in
            MemoryRecord r = makeRecord(QStringLiteral("shared words %1").arg(i), QStringLiteral("/m"),
                                        annVector(QStringLiteral("meta"), i, 0), i);
            Json m = Json::object();
            if (teams[i % 4])
                m["team"] = teams[i % 4];
            m["n"] = i % 3 == 0 ? Json(i % 9) : Json(double(i % 9) + 0.5);
            if (i % 5 == 0)
                m["flag"] = i % 10 == 0;
            if (i % 2 == 0)
                m["user_id"] = QStringLiteral("u%1").arg(i % 3).toStdString();
            if (i % 3 == 1)
                m["agent_id"] = "a";
            if (i == 7)
                m["we\"ird"] = 1;
            r.metadata = m;
            records.push_back(r);
        }
        store->save(records);
        RecordFilter f;
        f.metadata = Json::parse(filter.toStdString());
        QSet<QString> expected;
        for (const MemoryRecord &r : records)
            if (f.matches(r))
                expected.insert(r.id);
        const auto ids = [](const auto &list) {
            QSet<QString> out;
            for (const auto &x : list) {
                if constexpr (std::is_same_v<std::decay_t<decltype(x)>, MemoryRecord>)
                    out.insert(x.id);
                else
                    out.insert(x.record.id);
            }
            return out;
        };
        QCOMPARE(ids(store->list(f, -1, 0)), expected);
        QCOMPARE(store->count(f), int(expected.size()));
        QCOMPARE(ids(store->search(records[0].embedding, f, 1000)), expected);
        QCOMPARE(ids(store->keywordSearch(QStringLiteral("shared words"), f, 1000)), expected);
        if (const auto hits = store->searchHits(records[0].embedding, f, 1000)) {
            QVERIFY(!filter.contains(QLatin1String("team")) && !filter.contains(QLatin1String("\"n\""))); // only identities
            QSet<QString> got;
            for (const SearchHit &h : *hits)
                got.insert(store->hitRecords({h.key}).front()->id);
            QCOMPARE(got, expected);
        }
        QCOMPARE(store->remove(f), int(expected.size()));
        QCOMPARE(store->count({}), 40 - int(expected.size()));
    }
}

// Past wal_checkpoint_pages frames the log is copied into the database by the background thread; the
// log stays small, nothing is lost, and the last connection to close removes it.
// categories(), childScopes() and scopeSamples() keep their answers between calls: after this
// connection's saves, another connection's save, an update and a removal, each answer is the one a
// fresh connection gives.
void TestSqliteStorage::cachedAnswersStayExact()
{
    test::TempStore tmp;
    auto store = openDirect(tmp.path());
    RecordFilter visible;
    visible.applyPrivacy = true;
    visible.source = QStringLiteral("me");
    const auto record = [](const QString &content, const QString &scope, const QStringList &categories, int i) {
        MemoryRecord r = makeRecord(content, scope, annVector(QStringLiteral("cache"), i, 0), i);
        r.categories = categories;
        return r;
    };
    store->save({record(QStringLiteral("one"), QStringLiteral("/a"), {QStringLiteral("x")}, 1),
                 record(QStringLiteral("two"), QStringLiteral("/b/c"), {QStringLiteral("x"), QStringLiteral("y")}, 2)});
    const auto answers = [&](StorageBackend &s) {
        QStringList out;
        const QMap<QString, int> cats = s.categories(visible);
        for (auto it = cats.cbegin(); it != cats.cend(); ++it)
            out << QStringLiteral("%1=%2").arg(it.key()).arg(it.value());
        out << s.childScopes(QStringLiteral("/"), visible).join(QLatin1Char(','));
        for (const MemoryRecord &r : s.scopeSamples(visible, 2))
            out << r.scope + QLatin1Char(':') + r.content;
        return out.join(QLatin1Char(' '));
    };
    const auto fresh = [&] {
        auto other = openDirect(tmp.path());
        return answers(*other);
    };
    QCOMPARE(answers(*store), QStringLiteral("x=2 y=1 /a,/b /a:one /b/c:two"));
    // This connection's saves are added to the answers kept.
    MemoryRecord mine = record(QStringLiteral("three"), QStringLiteral("/a"), {QStringLiteral("z")}, 3);
    MemoryRecord hidden = record(QStringLiteral("secret"), QStringLiteral("/hidden"), {QStringLiteral("s")}, 4);
    hidden.isPrivate = true;
    hidden.source = QStringLiteral("someone else");
    store->save({mine, hidden, record(QStringLiteral("four"), QStringLiteral("/a"), {}, 5)});
    QCOMPARE(answers(*store), QStringLiteral("x=2 y=1 z=1 /a,/b /a:four /a:three /b/c:two"));
    QCOMPARE(answers(*store), fresh());
    // Another connection's save.
    {
        auto other = openDirect(tmp.path());
        other->save({record(QStringLiteral("five"), QStringLiteral("/d"), {QStringLiteral("w")}, 6)});
    }
    QCOMPARE(answers(*store), fresh());
    QVERIFY(answers(*store).contains(QStringLiteral("w=1")));
    // An update and a removal of this connection.
    MemoryRecord changed = mine;
    changed.categories = {QStringLiteral("x")};
    changed.embedding.clear();
    store->update(changed);
    QCOMPARE(answers(*store), fresh());
    RecordFilter gone;
    gone.scopes = {QStringLiteral("/b")};
    store->remove(gone);
    QCOMPARE(answers(*store), fresh());
    QCOMPARE(answers(*store), QStringLiteral("w=1 x=2 /a,/d /a:four /a:three /d:five"));
}

// categories() reads the counts' table (schema 6): after every kind of write it gives what counting
// the records gives, for filters on scope, source and privacy; check() finds a damaged table and
// --repair rebuilds it.
void TestSqliteStorage::categoryCountsFollowEveryWrite()
{
    test::TempStore tmp;
    auto store = openDirect(tmp.path());
    const auto record = [](const QString &content, const QString &scope, const QStringList &categories, const QString &source = QString(),
                           bool isPrivate = false) {
        MemoryRecord r = makeRecord(content, scope, {1, 0});
        r.categories = categories;
        r.source = source;
        r.isPrivate = isPrivate;
        return r;
    };
    std::vector<RecordFilter> filters(5);
    filters[1].scopes = {QStringLiteral("/a")};
    filters[2].applyPrivacy = true; // what source "me" may see
    filters[2].source = QStringLiteral("me");
    filters[3].onlySource = QStringLiteral("me");
    filters[4].applyPrivacy = true; // shared records only, under /a
    filters[4].scopes = {QStringLiteral("/a")};
    // The counts by reading every record the filter selects.
    const auto counted = [&](const RecordFilter &f) {
        QMap<QString, int> out;
        for (const MemoryRecord &r : store->list(f, 1000, 0)) {
            QStringList cats = r.categories;
            cats.removeDuplicates();
            for (const QString &c : std::as_const(cats))
                ++out[c];
        }
        return out;
    };
    const auto same = [&](const char *after) {
        for (std::size_t i = 0; i < filters.size(); ++i) {
            auto fresh = openDirect(tmp.path()); // no cached answer
            if (fresh->categories(filters[i]) != counted(filters[i])) {
                qWarning("after %s, filter %zu: %s", after, i, qPrintable(QStringList(fresh->categories(filters[i]).keys()).join(',')));
                return false;
            }
        }
        return store->check(false).ok();
    };
    MemoryRecord mine = record(QStringLiteral("mine"), QStringLiteral("/a/b"), {QStringLiteral("x"), QStringLiteral("x"), QStringLiteral("y")},
                               QStringLiteral("me"), true);
    store->save({mine, record(QStringLiteral("one"), QStringLiteral("/a"), {QStringLiteral("x")}),
                 record(QStringLiteral("two"), QStringLiteral("/ab"), {QStringLiteral("y")}),
                 record(QStringLiteral("secret"), QStringLiteral("/a"), {QStringLiteral("s")}, QStringLiteral("other"), true),
                 record(QStringLiteral("none"), QStringLiteral("/a"), {})});
    QVERIFY(same("the first save"));
    QCOMPARE(openDirect(tmp.path())->categories(filters[1]), (QMap<QString, int>{{QStringLiteral("s"), 1}, {QStringLiteral("x"), 2}, {QStringLiteral("y"), 1}}));
    // A later batch of the same keys adds to their rows.
    store->save({record(QStringLiteral("three"), QStringLiteral("/a"), {QStringLiteral("x"), QStringLiteral("z")})});
    QVERIFY(same("a second save"));
    // An update that moves the record and changes its categories, its source and its privacy.
    MemoryRecord moved = mine;
    moved.scope = QStringLiteral("/c");
    moved.categories = {QStringLiteral("y"), QStringLiteral("w")};
    moved.isPrivate = false;
    moved.embedding.clear();
    store->update(moved);
    QVERIFY(same("an update"));
    store->touch({moved.id}, kBase); // not a change of the counts
    QVERIFY(same("a touch"));
    RecordFilter gone;
    gone.ids = {moved.id};
    QCOMPARE(store->remove(gone), 1);
    QVERIFY(same("a removal"));
    QVERIFY(!openDirect(tmp.path())->categories({}).contains(QStringLiteral("w"))); // a count of 0 is no category
    store->restore(moved);
    QVERIFY(same("a restore"));
    QCOMPARE(store->reset(QStringLiteral("/a")), 4);
    QVERIFY(same("a reset of /a"));
    // A damaged table is found and rebuilt from the records.
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("UPDATE category_counts SET n = n + 5 WHERE category = 'y' RETURNING n")), QStringLiteral("6"));
    const StoreCheck damaged = store->check(false);
    QVERIFY(!damaged.ok());
    QVERIFY2(damaged.problems.join(QLatin1Char(' ')).contains(QLatin1String("category counts are out of step with the records (2 of them wrong)")),
             qPrintable(damaged.problems.join(' ')));
    QVERIFY(store->check(true).repaired.join(QLatin1Char(' ')).contains(QLatin1String("category counts")));
    QVERIFY(same("the repair"));
    QCOMPARE(store->reset(QStringLiteral("/")), 2);
    QCOMPARE(rawScalar(tmp.path(), QStringLiteral("SELECT count(*) FROM category_counts")), QStringLiteral("0"));
}

// scopeSamples(): the newest records of each scope the filter selects, with their vectors;
// findSameContent(): identical records in any scope under a prefix, of the same source and privacy.
void TestSqliteStorage::scopeSamplesAndSameContent()
{
    test::TempStore tmp;
    auto store = openDirect(tmp.path());
    std::vector<MemoryRecord> batch;
    for (int i = 0; i < 12; ++i)
        batch.push_back(makeRecord(QStringLiteral("record %1").arg(i), i % 3 == 0 ? QStringLiteral("/p/one") : QStringLiteral("/p/two"),
                                   annVector(QStringLiteral("samples"), i, 0), i));
    batch.push_back(makeRecord(QStringLiteral("elsewhere"), QStringLiteral("/q"), annVector(QStringLiteral("samples"), 99, 0)));
    store->save(batch);
    RecordFilter under;
    under.scopes = {QStringLiteral("/p")};
    const std::vector<MemoryRecord> samples = store->scopeSamples(under, 3);
    QStringList got;
    for (const MemoryRecord &r : samples) {
        got << r.content;
        QCOMPARE(r.embedding.size(), std::size_t(16));
    }
    QCOMPARE(got, (QStringList{QStringLiteral("record 9"), QStringLiteral("record 6"), QStringLiteral("record 3"), QStringLiteral("record 11"),
                               QStringLiteral("record 10"), QStringLiteral("record 8")}));
    QVERIFY(store->scopeSamples(under, 0).empty());

    MemoryRecord same = MemoryRecord::create(QStringLiteral("record 4"));
    MemoryRecord otherSource = same;
    otherSource.source = QStringLiteral("agent");
    MemoryRecord missing = MemoryRecord::create(QStringLiteral("record 400"));
    const auto found = store->findSameContent({same, otherSource, missing}, QStringLiteral("/p"));
    QCOMPARE(found.size(), std::size_t(3));
    QVERIFY(found[0].has_value());
    QCOMPARE(found[0]->scope, QStringLiteral("/p/two"));
    QVERIFY(!found[1].has_value());
    QVERIFY(!found[2].has_value());
    QVERIFY(!store->findSameContent({same}, QStringLiteral("/q")).front().has_value());
    QVERIFY(store->findSameContent({same}, QStringLiteral("/")).front().has_value());
}

namespace {

std::vector<MemoryRecord> annBatch(const QString &tag, int first, int count)
{
    std::vector<MemoryRecord> out;
    for (int i = first; i < first + count; ++i)
        out.push_back(makeRecord(QStringLiteral("%1 %2").arg(tag).arg(i), QStringLiteral("/bulk/%1").arg(i % 4),
                                 annVector(tag, i, 0)));
    return out;
}

double annRecall(SqliteStorage &store, const QString &tag, int queries)
{
    double recall = 0;
    for (int q = 0; q < queries; ++q) {
        const Embedding query = annVector(tag, q, 7);
        recall += recallAgainst(store.nearest(query, {}, 10), store.nearest(query, {}, 10, VectorIndex::Mode::Exact));
    }
    return recall / queries;
}

} // namespace

// From ann_background_from on, the search that finds the store past the threshold starts the graph
// on background threads and answers by an exact scan meanwhile, saying so in the statistics; writes
// made during the build are in the graph it becomes.
void TestSqliteStorage::backgroundBuildAnswersExactly()
{
    test::TempStore tmp;
    {
        // A load builds the graph as it writes (bulkLoadBuildsTheGraph()): without its file, the next
        // connection finds 4,000 vectors and no graph. (This loader's index reaches ann_background_from
        // when it is loaded, so its graph is built in the background: written at close when the build
        // was done by then, else stopped. Either way the file goes.)
        auto loader = openDirect(tmp.path(), Json{{"ann_threshold", 500}, {"ann_background_from", 500}});
        for (int first = 0; first < 4000; first += 500)
            loader->save(annBatch(QStringLiteral("bg"), first, 500));
    }
    QFile::remove(tmp.path() + QStringLiteral(".hnsw"));
    QVERIFY(!QFile::exists(tmp.path() + QStringLiteral(".hnsw")));
    auto store = openDirect(tmp.path(), Json{{"ann_threshold", 500}, {"ann_background_from", 500}});
    // The search that starts the build is answered by the exact scan (the graph is taken, once done,
    // by a later search or write).
    const Embedding query = annVector(QStringLiteral("bg"), 0, 7);
    const auto hits = store->nearest(query, {}, 10);
    auto stats = store->indexStats();
    QVERIFY(stats.building);
    QVERIFY(!stats.approximate);
    QCOMPARE(stats.backgroundBuilds, qint64(1));
    QCOMPARE(stats.exactWhileBuilding, qint64(1));
    // ... and says so.
    QCOMPARE(store->indexStats().lastSearch, QStringLiteral("exact scan of 4,000 records: the HNSW graph is being built"));
    QCOMPARE(hits.size(), std::size_t(10));
    const auto exact = store->nearest(query, {}, 10, VectorIndex::Mode::Exact);
    for (std::size_t k = 0; k < hits.size(); ++k) {
        QCOMPARE(hits[k].rowid, exact[k].rowid);
        QCOMPARE(hits[k].score, exact[k].score);
    }
    // What recall asks for (the ranked hits, then the records) is answered as well: by the same scan
    // while the build goes on (a search after it is done takes the graph first).
    VectorSearchAnswer answer;
    const std::optional<std::vector<SearchHit>> ranked = store->searchHits(query, {}, 10, &answer);
    QVERIFY(ranked.has_value());
    // The answer a recall's stats report: an exact scan while the graph is built, else the graph.
    QCOMPARE(answer.method == VectorSearchAnswer::Method::Exact, answer.indexBuilding);
    QCOMPARE(answer.detail, answer.indexBuilding ? QStringLiteral("exact scan of 4,000 records: the HNSW graph is being built")
                                                 : QStringLiteral("HNSW graph of 4,000 records"));
    QCOMPARE(ranked->size(), std::size_t(10));
    if (store->indexStats().building)
        for (std::size_t k = 0; k < ranked->size(); ++k)
            QCOMPARE((*ranked)[k].cosine, exact[k].score);
    const std::vector<ScoredRecord> records = store->search(query, {}, 10);
    QCOMPARE(records.size(), std::size_t(10));
    if (store->indexStats().building)
        QCOMPARE(records.front().score, exact.front().score);
    // Writes while it builds (each may take the finished graph).
    store->save(annBatch(QStringLiteral("bg"), 4000, 300));
    RecordFilter gone;
    gone.scopes = {QStringLiteral("/bulk/3")};
    const int removed = store->remove(gone);
    QCOMPARE(removed, 1075);
    store->waitForIndex();
    stats = store->indexStats();
    QVERIFY(!stats.building);
    QVERIFY(stats.approximate);
    QCOMPARE(stats.vectors, std::size_t(4300 - removed));
    store->search(query, {}, 10, &answer);
    QCOMPARE(store->indexStats().lastSearch, QStringLiteral("HNSW graph of 3,225 records"));
    QCOMPARE(answer.detail, store->indexStats().lastSearch);
    QCOMPARE(answer.method, VectorSearchAnswer::Method::Index);
    QVERIFY(!answer.indexBuilding);
    QCOMPARE(store->count({}), 4300 - removed);
    for (int i = 4000; i < 4300; i += 7) {
        const auto hit = store->nearest(annVector(QStringLiteral("bg"), i, 0), {}, 1);
        QCOMPARE(hit.size(), std::size_t(1));
        QVERIFY(hit.front().score > 0.9999 || i % 4 == 3);
    }
    RecordFilter inRemoved;
    inRemoved.scopes = {QStringLiteral("/bulk/3")};
    QVERIFY(store->nearest(annVector(QStringLiteral("bg"), 3, 0), inRemoved, 10, VectorIndex::Mode::Graph).empty());
    QVERIFY2(annRecall(*store, QStringLiteral("bg"), 50) >= 0.95, "the graph built in the background misses neighbours");
    // The graph was written beside the store: a new connection reads it instead of building.
    store->close();
    auto again = openDirect(tmp.path(), Json{{"ann_threshold", 500}, {"ann_background_from", 500}});
    again->nearest(annVector(QStringLiteral("bg"), 0, 7), {}, 10);
    QVERIFY(again->indexStats().fromFile);
    QVERIFY(!again->indexStats().building);
}

// The graph a load builds in the background finds what one built in one go after the load finds.
void TestSqliteStorage::backgroundBuildEqualsOneBuiltAfterwards()
{
    test::TempStore during, after;
    auto building = openDirect(during.path(), Json{{"ann_threshold", 1000}, {"ann_background_from", 1000}});
    auto later = openDirect(after.path(), Json{{"ann_threshold", 1000}, {"ann_background_from", 1000000}});
    for (int first = 0; first < 6000; first += 400) {
        const std::vector<MemoryRecord> batch = annBatch(QStringLiteral("eq"), first, 400);
        building->save(batch);
        later->save(batch);
        if (first == 1200)
            building->nearest(annVector(QStringLiteral("eq"), 0, 7), {}, 10); // loads the index: the build starts
    }
    building->waitForIndex();
    QVERIFY(building->indexStats().approximate);
    QCOMPARE(building->indexStats().vectors, std::size_t(6000));
    later->nearest(annVector(QStringLiteral("eq"), 0, 7), {}, 10); // built here, in one go
    QVERIFY(later->indexStats().approximate);
    QCOMPARE(later->indexStats().backgroundBuilds, qint64(0));
    const double a = annRecall(*building, QStringLiteral("eq"), 100);
    const double b = annRecall(*later, QStringLiteral("eq"), 100);
    qInfo("recall@10: built during the load %.4f, built afterwards %.4f", a, b);
    QVERIFY2(a >= 0.95 && b >= 0.95 && std::abs(a - b) <= 0.02, qPrintable(QStringLiteral("%1 against %2").arg(a).arg(b)));
}

// Closing (or destroying) a store while its graph is being built stops the build and loses nothing.
void TestSqliteStorage::closeDuringBackgroundBuild()
{
    test::TempStore tmp;
    const Json config{{"ann_threshold", 500}, {"ann_background_from", 500}};
    {
        auto store = openDirect(tmp.path(), config);
        store->save(annBatch(QStringLiteral("close"), 0, 5000));
        store->nearest(annVector(QStringLiteral("close"), 0, 7), {}, 10);
        QVERIFY(store->indexStats().building);
        store->save(annBatch(QStringLiteral("close"), 5000, 10));
        store->close();
    }
    QFile::remove(tmp.path() + QStringLiteral(".hnsw")); // (written if the build was done and taken by the last save)
    {
        auto store = openDirect(tmp.path(), config);
        store->nearest(annVector(QStringLiteral("close"), 0, 7), {}, 10);
        QVERIFY(store->indexStats().building);
    } // destroyed while building
    auto store = openDirect(tmp.path(), config);
    QCOMPARE(store->count({}), 5010);
    const auto hit = store->nearest(annVector(QStringLiteral("close"), 5005, 0), {}, 1);
    QCOMPARE(hit.size(), std::size_t(1));
    QVERIFY(hit.front().score > 0.9999);
    store->waitForIndex();
    QVERIFY(store->indexStats().approximate);
}

// An index file far behind the records (here: another connection, which never loads the index, saved
// 10,500 records after it was written, more than catchUp() replays into 12,000) is not replayed a record
// at a time: the index is read from the records and built again, and finds the later records.
void TestSqliteStorage::aFileFarBehindIsReadAgain()
{
    test::TempStore tmp;
    const Json config{{"ann_threshold", 1000}};
    {
        auto loader = openDirect(tmp.path(), config);
        for (int first = 0; first < 12000; first += 1000)
            loader->save(annBatch(QStringLiteral("first"), first, 1000));
        loader->close(); // writes the file: 12,000 records
    }
    const QDateTime written = QFileInfo(tmp.path() + QStringLiteral(".hnsw")).lastModified();
    {
        auto writer = openDirect(tmp.path(), config);
        for (int first = 0; first < 10500; first += 1500)
            writer->save(annBatch(QStringLiteral("later"), first, 1500));
        QVERIFY(!writer->indexStats().loaded); // fewer than the store held: not a bulk load
        writer->close();
    }
    QCOMPARE(QFileInfo(tmp.path() + QStringLiteral(".hnsw")).lastModified(), written);
    auto reader = openDirect(tmp.path(), config);
    const auto hit = reader->nearest(annVector(QStringLiteral("later"), 7777, 0), {}, 1);
    QVERIFY(hit.size() == 1 && hit.front().score > 0.9999);
    const auto stats = reader->indexStats();
    QCOMPARE(stats.fileLoads, qint64(1));
    QCOMPARE(stats.replayed, qint64(0));
    QCOMPARE(stats.builds, qint64(1));
    QVERIFY(!stats.fromFile);
    QCOMPARE(stats.vectors, std::size_t(22500));
}

// A connection that loads a store in bulk builds the graph as it writes: the index is loaded once it
// has saved 1,000 records (as many as the store held), each later batch enters the graph (past
// 10,000 nodes with every core), deletes and updates made during the load are in it, and closing
// writes it (not before), so that the next connection reads it instead of building. The graph equals
// in quality one built in one go after the load.
void TestSqliteStorage::bulkLoadBuildsTheGraph()
{
    test::TempStore tmp;
    const Json config{{"ann_threshold", 1000}};
    RecordFilter gone;
    gone.scopes = {QStringLiteral("/bulk/3")};
    int removed = 0;
    {
        auto loader = openDirect(tmp.path(), config);
        MemoryRecord changed;
        for (int first = 0; first < 14000; first += 500) {
            const std::vector<MemoryRecord> batch = annBatch(QStringLiteral("load"), first, 500);
            loader->save(batch);
            QCOMPARE(loader->indexStats().loaded, first >= 500);
            if (first == 11000)
                removed = loader->remove(gone); // a delete in the middle of the load
            if (first == 12000)
                changed = batch.front();
        }
        changed.embedding = annVector(QStringLiteral("moved"), 0, 0);
        loader->update(changed);
        const auto stats = loader->indexStats();
        QVERIFY(stats.approximate);
        QCOMPARE(stats.backgroundBuilds, qint64(0));
        QCOMPARE(removed, 11500 / 4);
        QCOMPARE(stats.vectors, std::size_t(14000 - removed));
        QVERIFY(loader->nearest(annVector(QStringLiteral("moved"), 0, 0), {}, 1).front().score > 0.9999);
        for (int i = 11000; i < 14000; i += 97) { // inserted in parallel, past 10,000 nodes
            const auto hit = loader->nearest(annVector(QStringLiteral("load"), i, 0), {}, 1);
            QVERIFY(i % 4 == 3 || i == 12000 || (hit.size() == 1 && hit.front().score > 0.9999));
        }
        // Of the scope deleted, only the records saved after the delete.
        QCOMPARE(loader->nearest(annVector(QStringLiteral("load"), 0, 7), gone, 5000, VectorIndex::Mode::Exact).size(),
                 std::size_t(2500 / 4));
        const double during = annRecall(*loader, QStringLiteral("load"), 100);
        QVERIFY2(!QFile::exists(tmp.path() + QStringLiteral(".hnsw")), "the index file was written during the load");
        loader->close();
        QVERIFY(QFile::exists(tmp.path() + QStringLiteral(".hnsw")));

        auto reader = openDirect(tmp.path(), config);
        const double read = annRecall(*reader, QStringLiteral("load"), 100);
        QVERIFY(reader->indexStats().fromFile);
        QCOMPARE(reader->indexStats().builds, qint64(0));
        QCOMPARE(read, during);
        reader->close();

        QVERIFY(QFile::remove(tmp.path() + QStringLiteral(".hnsw")));
        auto after = openDirect(tmp.path(), config);
        const double afterwards = annRecall(*after, QStringLiteral("load"), 100);
        QCOMPARE(after->indexStats().builds, qint64(1));
        qInfo("recall@10: built during the load %.4f, built afterwards %.4f", during, afterwards);
        QVERIFY2(during >= 0.95 && std::abs(during - afterwards) <= 0.02,
                 qPrintable(QStringLiteral("%1 against %2").arg(during).arg(afterwards)));
    }
}

void TestSqliteStorage::walIsCheckpointedInTheBackground()
{
    test::TempStore tmp;
    const QString path = tmp.path();
    auto store = openDirect(path, Json{{"wal_checkpoint_pages", 40}});
    QRandomGenerator rng(3);
    qint64 largestLog = 0;
    for (int batch = 0; batch < 60; ++batch) {
        std::vector<MemoryRecord> records;
        for (int i = 0; i < 40; ++i)
            records.push_back(makeRecord(QStringLiteral("batch %1 record %2").arg(batch).arg(i), QStringLiteral("/w"),
                                         randomUnitish(rng, 384)));
        store->save(records);
        largestLog = std::max(largestLog, QFileInfo(path + QStringLiteral("-wal")).size());
    }
    // 60 batches of about 20 pages of records each: without checkpoints the log would hold them all
    // (about 1,200 pages). How far it grows between two checkpoints depends on when the background
    // thread runs (on a loaded machine it once reached 490 pages), so the bound is half of that
    // whole, not a figure of a quiet machine.
    const auto stats = store->indexStats();
    QVERIFY2(stats.checkpoints > 0, qPrintable(QString::number(stats.checkpoints)));
    QVERIFY2(largestLog < 600 * 4096, qPrintable(QString::number(largestLog)));
    QCOMPARE(store->count({}), 2400);
    // A second connection reads everything, checkpointed or not.
    auto other = openStore(path);
    QCOMPARE(other->count({}), 2400);
    QCOMPARE(other->keywordSearch(QStringLiteral("batch 59 record 39"), {}, 1).size(), std::size_t(1));
    other->close();
    store->close();
    QVERIFY(!QFile::exists(path + QStringLiteral("-wal")));
    QCOMPARE(rawScalar(path, QStringLiteral("PRAGMA integrity_check")), QStringLiteral("ok"));
    QCOMPARE(rawScalar(path, QStringLiteral("SELECT count(*) FROM records")), QStringLiteral("2400"));
}

void TestSqliteStorage::backgroundCheckpointsCopyTheLog()
{
    // Each batch alone passes the threshold, so each commit asks the thread for a checkpoint; waiting
    // for it before the next batch, the log is copied whole and starts over every time, and the
    // committing connection never has to checkpoint itself (it would at 160 pages, the third batch,
    // were the thread's checkpoints empty).
    test::TempStore tmp;
    const QString path = tmp.path();
    auto store = openDirect(path, Json{{"wal_checkpoint_pages", 40}});
    const qint64 emptyFile = QFileInfo(path).size();
    QRandomGenerator rng(5);
    for (int batch = 0; batch < 10; ++batch) {
        std::vector<MemoryRecord> records;
        for (int i = 0; i < 150; ++i)
            records.push_back(makeRecord(QStringLiteral("paced batch %1 record %2").arg(batch).arg(i), QStringLiteral("/w"),
                                         randomUnitish(rng, 384)));
        const qint64 before = store->indexStats().checkpoints;
        store->save(records);
        QTRY_VERIFY_WITH_TIMEOUT(store->indexStats().checkpoints > before, 10000);
    }
    QCOMPARE(store->indexStats().inlineCheckpoints, qint64(0));
    // The records reached the database file itself: 1,500 vectors of 1.5 KB are more than 2 MB.
    const qint64 copied = QFileInfo(path).size() - emptyFile;
    QVERIFY2(copied > 2 * 1024 * 1024, qPrintable(QString::number(copied)));
    store->close();
    QCOMPARE(rawScalar(path, QStringLiteral("SELECT count(*) FROM records")), QStringLiteral("1500"));
}

QTEST_GUILESS_MAIN(TestSqliteStorage)
#include "test_sqlite_storage.moc"
