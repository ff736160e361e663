// The lock-order checker of Memory's locks (memory/memory_locks_p.h). This test compiles
// memory_locks.cpp with the checks on, whatever the build type, so it checks them in every build.
// A broken order ends the process, so each case that must fail runs in a child process: this same
// executable, started with MNEME_LOCKS_CASE naming the case.

#include "memory/memory_locks_p.h"

#include <QCoreApplication>
#include <QProcess>
#include <QTest>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>

using mneme::MemoryLocks;

namespace {

// The cases run in a child process; each either returns (exit 0) or is stopped by the checker.
const std::map<std::string, std::function<void()>> &childCases()
{
    static const std::map<std::string, std::function<void()>> cases = {
        {"whole-order", [] {
             MemoryLocks locks;
             auto s = locks.submit();
             auto a = locks.ahead();
             auto p = locks.pending();
             auto t = locks.touches();
             auto l = locks.llm();
             locks.assertHeld(MemoryLocks::Rank::Pending);
         }},
        {"submit-again", [] {
             MemoryLocks locks;
             auto outer = locks.submit();
             auto inner = locks.submit();
             auto p = locks.pending();
         }},
        {"backwards", [] {
             MemoryLocks locks;
             auto p = locks.pending();
             auto a = locks.ahead();
         }},
        {"submit-under-llm", [] {
             MemoryLocks locks;
             auto l = locks.llm();
             auto s = locks.submit();
         }},
        {"pending-twice", [] {
             MemoryLocks locks;
             auto p = locks.pending();
             auto again = locks.pending();
         }},
        {"released-then-earlier", [] {
             MemoryLocks locks;
             {
                 auto t = locks.touches();
             }
             auto a = locks.ahead();
             auto t = locks.touches();
         }},
        {"two-memories", [] {
             // The order binds the locks of one Memory; another Memory's locks are apart.
             MemoryLocks first;
             MemoryLocks second;
             auto p = first.pending();
             auto a = second.ahead();
         }},
        {"not-held", [] {
             MemoryLocks locks;
             auto p = locks.pending();
             locks.assertHeld(MemoryLocks::Rank::Submit);
         }},
        {"held-by-another-thread", [] {
             // Holding is per thread: a lock held on one thread does not count on another.
             MemoryLocks locks;
             auto p = locks.pending();
             std::thread other([&] { locks.assertHeld(MemoryLocks::Rank::Pending); });
             other.join();
         }},
        {"order-per-thread", [] {
             // Another thread's held lock does not constrain this thread's order.
             MemoryLocks locks;
             auto l = locks.llm();
             std::thread other([&] { auto s = locks.submit(); auto a = locks.ahead(); });
             other.join();
         }},
    };
    return cases;
}

struct ChildResult
{
    bool crashed = false;
    QString stderrText;
};

ChildResult runChild(const QString &name)
{
    QProcess child;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("MNEME_LOCKS_CASE"), name);
    // A deliberate abort must not print an AddressSanitizer or core-dump report.
    env.insert(QStringLiteral("ASAN_OPTIONS"), QStringLiteral("handle_abort=0"));
    child.setProcessEnvironment(env);
    child.start(QCoreApplication::applicationFilePath(), {});
    if (!child.waitForFinished(60000)) {
        child.kill();
        child.waitForFinished();
    }
    ChildResult r;
    r.crashed = child.exitStatus() == QProcess::CrashExit || child.exitCode() != 0;
    r.stderrText = QString::fromUtf8(child.readAllStandardError());
    return r;
}

} // namespace

class TestMemoryLocks : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void caseRuns_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("fails");
        QTest::addColumn<QString>("message");
        QTest::newRow("the whole order") << "whole-order" << false << QString();
        QTest::newRow("submit again under itself") << "submit-again" << false << QString();
        QTest::newRow("a lock released, then an earlier one") << "released-then-earlier" << false << QString();
        QTest::newRow("two Memory objects") << "two-memories" << false << QString();
        QTest::newRow("order is per thread") << "order-per-thread" << false << QString();
        QTest::newRow("ahead under pending")
            << "backwards" << true << "the lock order of Memory is broken: \"ahead\" taken while \"pending\" is held";
        QTest::newRow("submit under llm")
            << "submit-under-llm" << true << "the lock order of Memory is broken: \"submit\" taken while \"llm\" is held";
        QTest::newRow("pending twice")
            << "pending-twice" << true << "the lock order of Memory is broken: \"pending\" taken while \"pending\" is held";
        QTest::newRow("assertHeld of a lock not held")
            << "not-held" << true << "the Memory lock \"submit\" must be held here";
        QTest::newRow("assertHeld on another thread")
            << "held-by-another-thread" << true << "the Memory lock \"pending\" must be held here";
    }

    void caseRuns()
    {
        QFETCH(QString, name);
        QFETCH(bool, fails);
        QFETCH(QString, message);
        const ChildResult r = runChild(name);
        QVERIFY2(r.crashed == fails, qPrintable(QStringLiteral("exit as expected; stderr: ") + r.stderrText));
        if (fails)
            QVERIFY2(r.stderrText.contains(message), qPrintable(r.stderrText));
        else
            QVERIFY2(r.stderrText.isEmpty(), qPrintable(r.stderrText));
    }

    void everyChildCaseIsChecked()
    {
        // A case added to childCases() but not to the table above would never run.
        QCOMPARE(childCases().size(), std::size_t(10));
    }
};

int main(int argc, char **argv)
{
    const QByteArray name = qgetenv("MNEME_LOCKS_CASE");
    if (!name.isEmpty()) {
        const auto &cases = childCases();
        const auto it = cases.find(name.toStdString());
        if (it == cases.end()) {
            std::fprintf(stderr, "no such case: %s\n", name.constData());
            return 2;
        }
        it->second();
        return 0;
    }
    QCoreApplication app(argc, argv);
    TestMemoryLocks test;
    return QTest::qExec(&test, argc, argv);
}

#include "test_memory_locks.moc"
