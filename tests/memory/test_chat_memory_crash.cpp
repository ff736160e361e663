// Exactly once across a kill: a helper process (chat_runner) is killed with SIGKILL in the middle of a
// flush, at several points (the flush recorded, a block's effect made but not recorded, a block
// recorded and the next not started), then run again; the session's history, every block's state
// and the records the blocks stored in the Memory must be those of a run that was never killed.

#include "temp_store.h"

#include <QProcess>
#include <QtTest>
#include <mneme/core/json.h>

using mneme::Json;
using mneme::test::TempStore;

namespace {

constexpr int kMessages = 60;

// Runs chat_runner to the end and returns its --dump.
Json runToEnd(const QString &db)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    p.start(QStringLiteral(CHAT_RUNNER_PATH), {db, QString::number(kMessages), QStringLiteral("--dump")});
    if (!p.waitForFinished(120000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
        return Json();
    for (const QByteArray &line : p.readAllStandardOutput().split('\n'))
        if (line.startsWith('{'))
            return Json::parse(line.toStdString(), nullptr, false);
    return Json();
}

} // namespace

class TestChatMemoryCrash : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void killedInTheMiddleOfAFlush_data();
    void killedInTheMiddleOfAFlush();

private:
    Json m_reference;
    TempStore m_referenceDir;
};

void TestChatMemoryCrash::initTestCase()
{
    m_reference = runToEnd(m_referenceDir.path());
    QVERIFY(m_reference.is_object());
    // The reference run flushed several times into every block, and finished every flush.
    QCOMPARE(m_reference["pending_flush"], 0);
    QVERIFY(m_reference["states"]["counter"]["batches"].size() >= 4);
    QVERIFY(m_reference["states"]["facts"]["facts"].size() >= 4);
    int vector = 0, facts = 0;
    for (const Json &r : m_reference["records"]) {
        vector += r["categories"] == Json::array({"chat_history"});
        facts += r["categories"] == Json::array({"chat_fact"});
    }
    QCOMPARE(vector, int(m_reference["states"]["counter"]["batches"].size()));
    QVERIFY(facts >= 4);
}

void TestChatMemoryCrash::killedInTheMiddleOfAFlush_data()
{
    QTest::addColumn<QString>("point");
    QTest::newRow("flush recorded, no block yet") << "started:1";
    QTest::newRow("facts applied, not recorded") << "in:1:facts";
    QTest::newRow("facts recorded, vector not started") << "done:1:facts";
    QTest::newRow("vector batch stored, not recorded") << "in:2:vector";
    QTest::newRow("long-term facts stored, not recorded") << "in:2:long_term";
    QTest::newRow("counter applied, not recorded") << "in:3:counter";
    QTest::newRow("last block recorded") << "done:3:counter";
}

void TestChatMemoryCrash::killedInTheMiddleOfAFlush()
{
    QFETCH(QString, point);
    TempStore dir;
    QProcess p;
    p.setProcessChannelMode(QProcess::SeparateChannels);
    p.start(QStringLiteral(CHAT_RUNNER_PATH), {dir.path(), QString::number(kMessages), QStringLiteral("--pause-at"), point});
    QVERIFY(p.waitForStarted());
    QByteArray out;
    while (!out.contains("paused") && p.state() == QProcess::Running) {
        p.waitForReadyRead(1000);
        out += p.readAllStandardOutput();
    }
    QVERIFY2(out.contains("paused " + point.toUtf8()), out.constData());
    p.kill(); // SIGKILL, between two statements of the flush
    QVERIFY(p.waitForFinished(10000));
    QCOMPARE(p.exitStatus(), QProcess::CrashExit);

    // Run again: the pending flush is finished by the new process, then the conversation goes on.
    const Json after = runToEnd(dir.path());
    QVERIFY(after.is_object());
    QCOMPARE(after["pending_flush"], 0);
    QCOMPARE(after["messages"], m_reference["messages"]);
    QCOMPARE(after["states"], m_reference["states"]);
    QCOMPARE(after["records"], m_reference["records"]);
}

QTEST_GUILESS_MAIN(TestChatMemoryCrash)
#include "test_chat_memory_crash.moc"
