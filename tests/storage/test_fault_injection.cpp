// The SQLite store under storage faults, in the manner of LevelDB's fault-injection tests: failed,
// torn and unsynced writes, failed syncs, a full disk (through a VFS that wraps the operating
// system's), and failed writes, syncs and renames of the vector index file (through its file-
// operation seam). Each case checks that nothing acknowledged is lost and that the store reopens.

#include "fake_embedder.h"
#include "fault_vfs.h"
#include "plugins/storage/sqlite/sqlite_storage.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRandomGenerator>
#include <QTest>
#include <sqlite3.h>

using namespace mneme;
using mneme::test::FaultVfs;
using mneme::test::TempStore;

namespace {

// The records fault_writer writes (the same ids, contents and vectors).
QString writerId(int i)
{
    return QStringLiteral("00000000-0000-7000-8000-%1").arg(i, 12, 10, QLatin1Char('0'));
}

Embedding writerVector(int i)
{
    QRandomGenerator rng(quint32(i) * 2654435761u);
    Embedding e(16);
    for (float &x : e)
        x = float(rng.generateDouble() * 2.0 - 1.0);
    return e;
}

std::vector<MemoryRecord> batchOf(const QString &tag, int n)
{
    std::vector<MemoryRecord> out;
    for (int i = 0; i < n; ++i) {
        MemoryRecord r = MemoryRecord::create(QStringLiteral("%1 record %2 about the faults of storage").arg(tag).arg(i));
        r.scope = QStringLiteral("/faults/") + tag;
        r.embedding = writerVector(qHash(tag) % 1000 * 100 + i);
        out.push_back(std::move(r));
    }
    return out;
}

std::unique_ptr<SqliteStorage> openStore(const QString &path, Json extra = Json::object())
{
    extra["path"] = path.toStdString();
    return std::make_unique<SqliteStorage>(SqliteStorage::Options::fromJson(extra));
}

int countIn(SqliteStorage &store, const std::vector<MemoryRecord> &records)
{
    int n = 0;
    for (const MemoryRecord &r : records)
        n += store.get(r.id).has_value() ? 1 : 0;
    return n;
}

// File operations for VectorIndex::save() that fail on request.
class FailingFileOps : public VectorIndex::FileOps
{
public:
    enum class Mode {
        FailWrite,
        TearWrite, // a write stops halfway and fails
        FailSync,
        FailRename
    };
    explicit FailingFileOps(Mode mode) : m_mode(mode) {}
    qint64 write(int fd, const char *data, qint64 size) override
    {
        if (m_mode == Mode::FailWrite)
            return -1;
        if (m_mode == Mode::TearWrite) {
            const qint64 half = size / 2;
            return ::write(fd, data, std::size_t(half)) == half ? half : -1;
        }
        qint64 done = 0;
        while (done < size) {
            const ssize_t n = ::write(fd, data + done, std::size_t(size - done));
            if (n <= 0)
                return -1;
            done += n;
        }
        return done;
    }
    bool sync(int fd) override { return m_mode == Mode::FailSync ? false : ::fsync(fd) == 0; }
    bool rename(const QByteArray &from, const QByteArray &to) override
    {
        return m_mode == Mode::FailRename ? false : ::rename(from.constData(), to.constData()) == 0;
    }

private:
    Mode m_mode;
};

// Uses `ops` for index files while it lives.
struct UseFileOps
{
    explicit UseFileOps(VectorIndex::FileOps *ops) { VectorIndex::setFileOps(ops); }
    ~UseFileOps() { VectorIndex::setFileOps(nullptr); }
};

QStringList temporaryFiles(const QString &dir)
{
    return QDir(dir).entryList({QStringLiteral("*.tmp")}, QDir::Files);
}

} // namespace

class TestFaultInjection : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void powerLossKeepsWhatWasAcknowledged_data();
    void powerLossKeepsWhatWasAcknowledged();
    void failedWritesLoseNothing_data();
    void failedWritesLoseNothing();
    void checkpointFailureLosesNothing();
    void indexFileFaults_data();
    void indexFileFaults();
    void memoryReportsFaultsAndGoesOn();
};

// A writer process loses power at its N-th write: what it was told is stored survives, a batch is all
// there or not at all, and the store opens and passes its check.
void TestFaultInjection::powerLossKeepsWhatWasAcknowledged_data()
{
    QTest::addColumn<int>("lossAt");
    QTest::addColumn<bool>("background"); // the graph built on background threads during the load
    for (int n : {1, 2, 3, 7, 13, 29, 61, 97, 127, 181, 251, 379, 503, 751})
        QTest::newRow(qPrintable(QStringLiteral("write %1").arg(n))) << n << false;
    for (int n : {97, 127, 181, 251, 379, 503})
        QTest::newRow(qPrintable(QStringLiteral("write %1, graph building").arg(n))) << n << true;
}

void TestFaultInjection::powerLossKeepsWhatWasAcknowledged()
{
    QFETCH(int, lossAt);
    QFETCH(bool, background);
    TempStore tmp;
    const QString db = tmp.path(QStringLiteral("store.db"));
    constexpr int kRecords = 240;
    constexpr int kBatch = 20;
    QProcess writer;
    QStringList args{db, QString::number(kRecords), QString::number(kBatch), QString::number(lossAt), QStringLiteral("60")};
    if (background)
        args << QStringLiteral("60");
    writer.start(QStringLiteral(FAULT_WRITER_PATH), args);
    QVERIFY(writer.waitForFinished(120000));
    QVERIFY2(writer.exitCode() == 86 || writer.exitCode() == 0, writer.readAllStandardError().constData());
    int acked = 0;
    for (const QByteArray &line : writer.readAllStandardOutput().split('\n')) {
        const QList<QByteArray> parts = line.split(' ');
        if (parts.size() == 3 && parts[0] == "acked")
            acked = parts[2].toInt() + 1;
    }
    if (!QFileInfo::exists(db)) {
        QCOMPARE(acked, 0); // lost before the store was created
        return;
    }
    auto store = openStore(db, Json{{"ann_threshold", 60}});
    for (int i = 0; i < acked; ++i)
        QVERIFY2(store->get(writerId(i)).has_value(), qPrintable(QStringLiteral("acknowledged record %1 is lost").arg(i)));
    const int stored = store->count({});
    QVERIFY2(stored == acked || stored == acked + kBatch || (writer.exitCode() == 0 && stored == kRecords),
             qPrintable(QStringLiteral("%1 stored, %2 acknowledged").arg(stored).arg(acked)));
    QVERIFY2(stored % kBatch == 0, "a batch was stored in part");
    const StoreCheck check = store->check(false);
    QVERIFY2(check.ok(), qPrintable(check.problems.join(QStringLiteral("; "))));
    for (int i = 0; i < stored; i += 17) {
        const std::vector<ScoredRecord> hit = store->search(writerVector(i), {}, 1);
        QVERIFY(!hit.empty());
        QCOMPARE(hit.front().record.id, writerId(i));
    }
    // The store goes on: a new batch is saved and read.
    std::vector<MemoryRecord> more = batchOf(QStringLiteral("after"), 5);
    store->save(more);
    QCOMPARE(countIn(*store, more), 5);
}

// One save fails in the middle of its I/O; that save alone fails (with a message that says what
// happened), what was saved before and after stays, and the store reopens whole.
void TestFaultInjection::failedWritesLoseNothing_data()
{
    QTest::addColumn<QString>("fault");
    QTest::addColumn<int>("n");
    QTest::addColumn<QString>("message");
    QTest::newRow("first write to the log") << "write -wal" << 1 << "disk I/O error";
    QTest::newRow("fifth write to the log") << "write -wal" << 5 << "disk I/O error";
    QTest::newRow("torn write to the log") << "tear -wal" << 2 << "disk I/O error";
    QTest::newRow("fsync of the log") << "sync -wal" << 1 << "disk I/O error";
    QTest::newRow("full disk") << "full" << 8192 << "is full";
    QTest::newRow("read of the database") << "read store.db" << 1 << "";
}

void TestFaultInjection::failedWritesLoseNothing()
{
    QFETCH(QString, fault);
    QFETCH(int, n);
    QFETCH(QString, message);
    TempStore tmp;
    const QString db = tmp.path(QStringLiteral("store.db"));
    FaultVfs vfs;
    const std::vector<MemoryRecord> before = batchOf(QStringLiteral("before"), 30);
    const std::vector<MemoryRecord> failing = batchOf(QStringLiteral("failing"), 200);
    const std::vector<MemoryRecord> after = batchOf(QStringLiteral("after"), 30);
    {
        auto store = openStore(db);
        store->save(before);
        const QString file = fault.section(QLatin1Char(' '), 1);
        if (fault.startsWith(QLatin1String("write")))
            vfs.failNth(FaultVfs::Op::Write, n, 0, file);
        else if (fault.startsWith(QLatin1String("tear")))
            vfs.tearNth(n, 100, file);
        else if (fault.startsWith(QLatin1String("sync")))
            vfs.failNth(FaultVfs::Op::Sync, n, 0, file);
        else if (fault.startsWith(QLatin1String("read")))
            vfs.failNth(FaultVfs::Op::Read, n, 0, file);
        else
            vfs.diskFullAfter(n);
        bool threw = false;
        try {
            store->save(failing);
        } catch (const Error &e) {
            threw = true;
            QCOMPARE(e.kind(), ErrorKind::Storage);
            QVERIFY2(e.message().contains(message), qPrintable(e.message()));
        }
        vfs.clear();
        QVERIFY(threw || fault.startsWith(QLatin1String("read"))); // a save may need no read of the file
        store->save(after);
        QCOMPARE(countIn(*store, before), 30);
        QCOMPARE(countIn(*store, after), 30);
        const int failed = countIn(*store, failing);
        QVERIFY2(failed == 0 || (!threw && failed == 200), qPrintable(QString::number(failed)));
        store->close();
    }
    auto reopened = openStore(db);
    QCOMPARE(countIn(*reopened, before), 30);
    QCOMPARE(countIn(*reopened, after), 30);
    const StoreCheck check = reopened->check(false);
    QVERIFY2(check.ok(), qPrintable(check.problems.join(QStringLiteral("; "))));
}

// A checkpoint that cannot write the database (the log is copied in the background) loses nothing:
// the log keeps the changes, and the next checkpoint or open copies them.
void TestFaultInjection::checkpointFailureLosesNothing()
{
    TempStore tmp;
    const QString db = tmp.path(QStringLiteral("store.db"));
    std::vector<std::vector<MemoryRecord>> batches;
    {
        FaultVfs vfs;
        auto store = openStore(db, Json{{"wal_checkpoint_pages", 10}});
        vfs.failNth(FaultVfs::Op::Write, 1, 0, QStringLiteral("store.db"));
        for (int b = 0; b < 12; ++b) {
            batches.push_back(batchOf(QStringLiteral("batch%1").arg(b), 40));
            store->save(batches.back());
        }
        store->close();
    }
    auto reopened = openStore(db);
    for (const auto &batch : batches)
        QCOMPARE(countIn(*reopened, batch), 40);
    QVERIFY(reopened->check(false).ok());
}

// The vector index file: a save that fails at any step (a write, a torn write, the sync, the rename)
// leaves the file as it was and no temporary file behind; the store reopens, uses the old file, and
// finds every record, the ones saved since too.
void TestFaultInjection::indexFileFaults_data()
{
    QTest::addColumn<int>("mode");
    QTest::newRow("writes fail") << int(FailingFileOps::Mode::FailWrite);
    QTest::newRow("torn writes") << int(FailingFileOps::Mode::TearWrite);
    QTest::newRow("sync fails") << int(FailingFileOps::Mode::FailSync);
    QTest::newRow("rename fails") << int(FailingFileOps::Mode::FailRename);
}

void TestFaultInjection::indexFileFaults()
{
    QFETCH(int, mode);
    TempStore tmp;
    const QString db = tmp.path(QStringLiteral("store.db"));
    const Json config{{"ann_threshold", 50}, {"ann_ef_search", 200}};
    const std::vector<MemoryRecord> first = batchOf(QStringLiteral("first"), 200);
    const std::vector<MemoryRecord> later = batchOf(QStringLiteral("later"), 40);
    QByteArray original;
    {
        auto store = openStore(db, config);
        store->save(first);
        QVERIFY(!store->search(first.front().embedding, {}, 1).empty());
        store->close();
        QFile f(db + QStringLiteral(".hnsw"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        original = f.readAll();
    }
    {
        FailingFileOps ops{FailingFileOps::Mode(mode)};
        UseFileOps use(&ops);
        auto store = openStore(db, config);
        store->save(later);
        QVERIFY(!store->search(later.front().embedding, {}, 1).empty());
        store->flushIndex(); // fails: the file stays as it was
        store->close();      // tries again, fails again
    }
    QFile f(db + QStringLiteral(".hnsw"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll() == original);
    QVERIFY2(temporaryFiles(tmp.dir()).isEmpty(), qPrintable(temporaryFiles(tmp.dir()).join(QLatin1Char(' '))));

    auto store = openStore(db, config);
    for (const auto *batch : {&first, &later}) {
        for (std::size_t i = 0; i < batch->size(); i += 13) {
            const std::vector<ScoredRecord> hit = store->search((*batch)[i].embedding, {}, 1);
            QVERIFY(!hit.empty());
            QCOMPARE(hit.front().record.id, (*batch)[i].id);
        }
    }
    QVERIFY(store->indexStats().fromFile); // the old file, caught up with what came since
}

// A Memory over the sqlite plugin: a save that fails for a storage fault throws Error(Storage);
// saves before and after are kept, across a reopen.
void TestFaultInjection::memoryReportsFaultsAndGoesOn()
{
    TempStore tmp;
    FaultVfs vfs;
    MemoryConfig config;
    config.storage = Json{{"provider", "sqlite"}, {"config", {{"path", tmp.path(QStringLiteral("store.db")).toStdString()}}}};
    auto embedder = std::make_shared<mneme::test::FakeEmbedder>(16);
    RememberOptions o;
    o.scope = QStringLiteral("/m");
    o.importance = 0.5;
    o.categories = QStringList();
    QString keptBefore, keptAfter;
    {
        Memory memory(config, nullptr, embedder);
        keptBefore = memory.remember(QStringLiteral("Saved before the fault."), o).id;
        vfs.failNth(FaultVfs::Op::Write, 1, 0, QStringLiteral("-wal"));
        try {
            memory.remember(QStringLiteral("Saved while the disk fails."), o);
            QFAIL("the save did not fail");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::Storage);
        }
        vfs.clear();
        keptAfter = memory.remember(QStringLiteral("Saved after the fault."), o).id;
        memory.close();
    }
    Memory memory(config, nullptr, embedder);
    QVERIFY(memory.get(keptBefore).has_value());
    QVERIFY(memory.get(keptAfter).has_value());
    QCOMPARE(memory.listRecords(QStringLiteral("/m")).size(), 2);
    QVERIFY(memory.check().ok());
}

QTEST_GUILESS_MAIN(TestFaultInjection)
#include "test_fault_injection.moc"
