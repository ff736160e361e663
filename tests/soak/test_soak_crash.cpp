// Soak: a writer killed (SIGKILL) at random moments while it saves thousands of records in batches,
// twelve times over one store. After every kill the store opens, passes its check, holds every record
// the writer was told is stored, and no batch in part.

#include "plugins/storage/sqlite/sqlite_storage.h"
#include "temp_store.h"

#include <QProcess>
#include <QRandomGenerator>
#include <QTest>
#include <QThread>
#include <csignal>

using namespace mneme;

class TestSoakCrash : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void killedWriterLosesNothingAcknowledged()
    {
        test::TempStore tmp;
        QRandomGenerator rng(20261126);
        constexpr int kBatch = 500;
        constexpr int kRecords = 50000;
        for (int trial = 0; trial < 12; ++trial) {
            // A store of its own each trial (the writer's record ids are the same every time).
            const QString store = tmp.path(QStringLiteral("soak-%1.db").arg(trial));
            QProcess writer;
            writer.start(QStringLiteral(FAULT_WRITER_PATH), {store, QString::number(kRecords), QString::number(kBatch), QStringLiteral("0"),
                                                             QStringLiteral("2000")});
            QVERIFY(writer.waitForStarted());
            QThread::msleep(300 + rng.bounded(6000));
            ::kill(pid_t(writer.processId()), SIGKILL);
            QVERIFY(writer.waitForFinished(60000));
            int acked = 0;
            for (const QByteArray &line : writer.readAllStandardOutput().split('\n')) {
                const QList<QByteArray> parts = line.split(' ');
                if (parts.size() == 3 && parts[0] == "acked")
                    acked = parts[2].toInt() + 1;
            }
            SqliteStorage s(SqliteStorage::Options::fromJson(Json{{"path", store.toStdString()}, {"ann_threshold", 2000}}));
            const int stored = s.count({});
            QVERIFY2(stored == acked || stored == acked + kBatch || stored == kRecords,
                     qPrintable(QStringLiteral("trial %1: %2 stored, %3 acknowledged").arg(trial).arg(stored).arg(acked)));
            for (int i = 0; i < acked; i += 97)
                QVERIFY(s.get(QStringLiteral("00000000-0000-7000-8000-%1").arg(i, 12, 10, QLatin1Char('0'))).has_value());
            const StoreCheck check = s.check(false);
            QVERIFY2(check.ok(), qPrintable(check.problems.join(QStringLiteral("; "))));
            qInfo("trial %d: killed after %d acknowledged records, %d stored", trial, acked, stored);
        }
    }
};

QTEST_GUILESS_MAIN(TestSoakCrash)
#include "test_soak_crash.moc"
