// Soak: storage faults swept over every point of a sequence of saves. For each n, the n-th write (or
// fsync, or the write that fills the disk) from the start fails; the saves around it go on, and after
// a reopen every acknowledged record is there, no batch in part, and the store passes its check.

#include "fault_vfs.h"
#include "plugins/storage/sqlite/sqlite_storage.h"
#include "temp_store.h"
#include <mneme/core/error.h>

#include <QTest>

using namespace mneme;
using mneme::test::FaultVfs;

namespace {

std::vector<MemoryRecord> batch(int b, int size)
{
    std::vector<MemoryRecord> out;
    for (int i = 0; i < size; ++i) {
        MemoryRecord r = MemoryRecord::create(QStringLiteral("batch %1 record %2, swept by faults").arg(b).arg(i));
        r.scope = QStringLiteral("/sweep/%1").arg(b % 4);
        r.embedding = Embedding{float(b), float(i), 1.0f, 0.5f};
        out.push_back(std::move(r));
    }
    return out;
}

} // namespace

class TestSoakFaults : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sweep_data()
    {
        QTest::addColumn<int>("op"); // FaultVfs::Op, or -1 for a full disk
        QTest::newRow("writes") << int(FaultVfs::Op::Write);
        QTest::newRow("syncs") << int(FaultVfs::Op::Sync);
        QTest::newRow("truncates") << int(FaultVfs::Op::Truncate);
        QTest::newRow("full disk") << -1;
    }
    void sweep()
    {
        QFETCH(int, op);
        for (int n = 1; n <= 240; n += (n < 40 ? 1 : 7)) {
            test::TempStore tmp;
            const QString db = tmp.path(QStringLiteral("sweep.db"));
            std::vector<std::vector<MemoryRecord>> acked;
            std::vector<std::vector<MemoryRecord>> failed;
            {
                FaultVfs vfs;
                SqliteStorage s(SqliteStorage::Options::fromJson(Json{{"path", db.toStdString()}, {"wal_checkpoint_pages", 20}}));
                if (op < 0)
                    vfs.diskFullAfter(qint64(n) * 2048);
                else
                    vfs.failNth(FaultVfs::Op(op), n);
                for (int b = 0; b < 12; ++b) {
                    std::vector<MemoryRecord> records = batch(b, 25);
                    try {
                        s.save(records);
                        acked.push_back(std::move(records));
                    } catch (const Error &) {
                        failed.push_back(std::move(records));
                        if (op < 0)
                            vfs.clear(); // space freed
                    }
                }
                vfs.clear();
                try {
                    s.close();
                } catch (const Error &) {
                    // closing may meet the fault too; what was acknowledged is on disk already
                }
            }
            SqliteStorage reopened(SqliteStorage::Options::fromJson(Json{{"path", db.toStdString()}}));
            for (const auto &records : acked)
                for (const MemoryRecord &r : records)
                    QVERIFY2(reopened.get(r.id).has_value(), qPrintable(QStringLiteral("n = %1: an acknowledged record is lost").arg(n)));
            for (const auto &records : failed) {
                int present = 0;
                for (const MemoryRecord &r : records)
                    present += reopened.get(r.id).has_value() ? 1 : 0;
                QVERIFY2(present == 0 || present == int(records.size()), qPrintable(QStringLiteral("n = %1: a batch in part").arg(n)));
            }
            const StoreCheck check = reopened.check(false);
            QVERIFY2(check.ok(), qPrintable(QStringLiteral("n = %1: %2").arg(n).arg(check.problems.join(QStringLiteral("; ")))));
        }
    }
};

QTEST_GUILESS_MAIN(TestSoakFaults)
#include "test_soak_faults.moc"
