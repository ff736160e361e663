#pragma once

// What the MCP tests share: where Node.js and the npm packages are (installed by
// scripts/install-node-deps.sh from tests/mcp/package-lock.json), the fixture server, waiting on a
// future while the event loop runs, and whether a process still exists.

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QFuture>
#include <QStandardPaths>
#include <QString>
#include <QTcpServer>
#include <QThread>
#include <csignal>
#include <sys/types.h>

namespace mneme::test {

// The build tree's node_modules (MNEME_TEST_NODE_MODULES) and the source tree's tests/mcp folder
// (MNEME_TEST_MCP_DIR) come from the test's CMake definitions.
inline QString nodeModules()
{
    return QStringLiteral(MNEME_TEST_NODE_MODULES);
}

inline QString nodeProgram()
{
    return QStandardPaths::findExecutable(QStringLiteral("node"));
}

// Empty when everything is in place, else what to run to fix it.
inline QString nodeSetupProblem()
{
    if (nodeProgram().isEmpty())
        return QStringLiteral("Node.js is not on PATH; the MCP tests need Node.js 20 or later");
    if (!QFileInfo::exists(nodeModules() + QStringLiteral("/@modelcontextprotocol/sdk/package.json")))
        return QStringLiteral("the npm packages of the MCP tests are missing in %1; run \"scripts/install-node-deps.sh "
                              "BUILD_DIR\" (make test runs it)")
            .arg(nodeModules());
    return {};
}

inline QString packageScript(const QString &package)
{
    return nodeModules() + QStringLiteral("/@modelcontextprotocol/") + package + QStringLiteral("/dist/index.js");
}

inline QString fixtureServer()
{
    return QStringLiteral(MNEME_TEST_MCP_DIR) + QStringLiteral("/fixture_server.mjs");
}

// Runs the event loop until the future ends (or the time is up); true when it ended.
template<typename T>
bool waitFor(const QFuture<T> &future, int timeoutMs = 30000)
{
    QElapsedTimer clock;
    clock.start();
    while (!future.isFinished() && clock.elapsed() < timeoutMs) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QThread::msleep(2);
    }
    QCoreApplication::processEvents();
    return future.isFinished();
}

// Whether a process with this id exists (a zombie counts as gone: it has exited).
inline bool processExists(qint64 pid)
{
    if (pid <= 0 || ::kill(pid_t(pid), 0) != 0)
        return false;
    QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!stat.open(QIODevice::ReadOnly))
        return false;
    const QByteArray line = stat.readAll();
    const qsizetype close = line.lastIndexOf(')');
    return close < 0 || line.mid(close + 2, 1) != "Z";
}

// The pid a fixture server wrote into its --pid-file, once it exists (0 after the time is up).
inline qint64 readPid(const QString &file, int timeoutMs = 20000)
{
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < timeoutMs) {
        QFile f(file);
        if (f.open(QIODevice::ReadOnly)) {
            const qint64 pid = f.readAll().trimmed().toLongLong();
            if (pid > 0)
                return pid;
        }
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QThread::msleep(5);
    }
    return 0;
}

// A TCP port that was free a moment ago on 127.0.0.1.
inline quint16 freePort()
{
    QTcpServer probe;
    probe.listen(QHostAddress::LocalHost, 0);
    return probe.serverPort();
}

} // namespace mneme::test
