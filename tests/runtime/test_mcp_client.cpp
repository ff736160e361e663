// McpClient against servers nobody on this project wrote (the reference servers "everything" and
// "filesystem" from npm, over stdio and streamable HTTP), and against a fixture server that
// misbehaves on purpose (exits, crashes mid-call, writes garbage, hangs, ignores its input closing).

#include "mcp_test_util.h"
#include "scripted_http_server.h"
#include <mneme/core/error.h>
#include <mneme/runtime/mcp_client.h>
#include <mneme/runtime/mcp_server_config.h>

#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QtConcurrent>

using namespace mneme;
using namespace mneme::test;

namespace {

std::shared_ptr<Tool> toolNamed(const McpClient &client, const QString &name)
{
    for (const auto &t : client.tools())
        if (t->name() == name)
            return t;
    return nullptr;
}

QStringList toolNames(const McpClient &client)
{
    QStringList names;
    for (const auto &t : client.tools())
        names << t->name();
    return names;
}

// The Error a finished future failed with (Internal "no error" when it did not).
template<typename T>
Error errorOf(QFuture<T> future)
{
    try {
        future.waitForFinished();
    } catch (const Error &e) {
        return e;
    }
    return Error(ErrorKind::Internal, future.isCanceled() ? QStringLiteral("cancelled") : QStringLiteral("no error"));
}

McpServerConfig fixture(const QStringList &extra = {})
{
    return McpServerConfig::stdio(QStringLiteral("fixture"), nodeProgram(), QStringList{fixtureServer()} + extra);
}

QString runTool(const std::shared_ptr<Tool> &tool, const Json &args, QString *error = nullptr)
{
    QFuture<QString> f = tool->run(args);
    if (!waitFor(f))
        return QStringLiteral("(timed out)");
    try {
        return f.result();
    } catch (const Error &e) {
        if (error)
            *error = e.message();
        return {};
    }
}

} // namespace

class TestMcpClient : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();

    void configFromJson_data();
    void configFromJson();
    void configRefused_data();
    void configRefused();

    void everythingOverStdio();
    void everythingOverHttp();
    void filesystemServer();
    void environmentOfTheServer();
    void toolsFilterAndPrefix();
    void callFromAnotherThread();

    void commandNotFound();
    void exitsAtStart();
    void garbageAtStart();
    void slowStartTimesOut();
    void unknownProtocolVersion();
    void dieMidCall();
    void garbageMidCall();
    void requestTimeoutCancelsAtTheServer();
    void toolErrorAndUnknownTool();
    void serverPingsTheClient();
    void toolListChanges();
    void hugeLineBreaksTheChannel();
    void stopEscalatesToSignals_data();
    void stopEscalatesToSignals();
    void stopTakesTheProcessGroup();
    void destroyedWhileRunning();

    void httpGarbage();
    void httpErrorStatus();
    void httpSessionReachesTheFirstNotification();
    void httpConnectionRefused();
};

void TestMcpClient::initTestCase()
{
    const QString problem = nodeSetupProblem();
    if (!problem.isEmpty())
        QFAIL(qPrintable(problem));
    qputenv("MNEME_TEST_SECRET", "s3cr3t-value-not-for-servers");
}

void TestMcpClient::configFromJson_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<int>("count");
    QTest::addColumn<QString>("firstDescription");

    QTest::newRow("desktop file") << QByteArray(R"({"mcpServers": {"fs": {"command": "npx", "args": ["-y", "pkg", "/tmp"]}}})") << 1
                                  << QStringLiteral("stdio: npx with 3 arguments");
    QTest::newRow("name map") << QByteArray(R"({"web": {"url": "http://127.0.0.1:3001/mcp?key=x", "type": "http"}})") << 1
                              << QStringLiteral("http: http://127.0.0.1:3001/mcp");
    QTest::newRow("array") << QByteArray(R"([{"name": "a", "command": "a"}, {"name": "b", "url": "https://h/mcp"}])") << 2
                           << QStringLiteral("stdio: a");
}

void TestMcpClient::configFromJson()
{
    QFETCH(QByteArray, json);
    QFETCH(int, count);
    QFETCH(QString, firstDescription);
    const auto servers = McpServerConfig::listFromJson(Json::parse(json.toStdString()));
    QCOMPARE(int(servers.size()), count);
    QCOMPARE(servers.front().describe(), firstDescription);
}

void TestMcpClient::configRefused_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("expected");

    QTest::newRow("neither") << QByteArray(R"({"x": {}})") << QStringLiteral("set a command to start");
    QTest::newRow("both") << QByteArray(R"({"x": {"command": "a", "url": "http://h/mcp"}})") << QStringLiteral("not both");
    QTest::newRow("unknown key") << QByteArray(R"({"x": {"command": "a", "argz": []}})") << QStringLiteral("unknown key \"argz\"");
    QTest::newRow("sse") << QByteArray(R"({"x": {"type": "sse", "url": "http://h/sse"}})") << QStringLiteral("HTTP+SSE transport");
    QTest::newRow("bad url") << QByteArray(R"({"x": {"url": "ftp://h/mcp"}})") << QStringLiteral("http:// or https://");
    QTest::newRow("bad name") << QByteArray(R"({"x y": {"command": "a"}})") << QStringLiteral("the name must be");
    QTest::newRow("args not strings") << QByteArray(R"({"x": {"command": "a", "args": [1]}})") << QStringLiteral("array of strings");
    QTest::newRow("unset variable") << QByteArray(R"({"x": {"command": "a", "env": {"K": "${MNEME_TEST_UNSET_VAR}"}}})")
                                    << QStringLiteral("MNEME_TEST_UNSET_VAR is not set");
    QTest::newRow("timeout") << QByteArray(R"({"x": {"command": "a", "request_timeout_ms": 0}})") << QStringLiteral("milliseconds");
}

void TestMcpClient::configRefused()
{
    QFETCH(QByteArray, json);
    QFETCH(QString, expected);
    try {
        McpServerConfig::listFromJson(Json::parse(json.toStdString()));
        QFAIL("accepted");
    } catch (const Error &e) {
        QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        QVERIFY2(e.message().contains(expected), qPrintable(e.message()));
    }
}

void TestMcpClient::everythingOverStdio()
{
    McpClient client(McpServerConfig::stdio(QStringLiteral("everything"), nodeProgram(),
                                            {packageScript(QStringLiteral("server-everything")), QStringLiteral("stdio")}));
    QSignalSpy states(&client, &McpClient::stateChanged);
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    started.waitForFinished(); // rethrows a failure
    QCOMPARE(client.state(), McpClient::State::Ready);
    QCOMPARE(client.protocolVersion(), QStringLiteral("2025-11-25"));
    QVERIFY2(QString::fromStdString(client.serverInfo().value("name", std::string())).contains(QLatin1String("everything")),
             client.serverInfo().dump().c_str());
    QVERIFY(client.serverCapabilities().contains("tools"));
    QVERIFY(client.processId() > 0);
    QVERIFY(processExists(client.processId()));
    const QStringList names = toolNames(client);
    QVERIFY2(names.contains(QStringLiteral("echo")) && names.contains(QStringLiteral("get-sum")), qPrintable(names.join(',')));

    QCOMPARE(runTool(toolNamed(client, QStringLiteral("echo")), Json{{"message", "hello, MCP"}}), QStringLiteral("Echo: hello, MCP"));
    QCOMPARE(runTool(toolNamed(client, QStringLiteral("get-sum")), Json{{"a", 2}, {"b", 3}}), QStringLiteral("The sum of 2 and 3 is 5."));
    // Structured output and images become text an LLM can read.
    const QString weather = runTool(toolNamed(client, QStringLiteral("get-structured-content")), Json{{"location", "Chicago"}});
    QVERIFY2(weather.contains(QLatin1String("temperature")), qPrintable(weather));
    const QString image = runTool(toolNamed(client, QStringLiteral("get-tiny-image")), Json::object());
    QVERIFY2(image.contains(QLatin1String("[image: image/png")), qPrintable(image));

    // The raw result, and other requests.
    QFuture<Json> raw = client.callTool(QStringLiteral("get-structured-content"), Json{{"location", "New York"}});
    QVERIFY(waitFor(raw));
    QVERIFY(raw.result()["structuredContent"].contains("temperature"));
    QFuture<Json> ping = client.request(QStringLiteral("ping"));
    QVERIFY(waitFor(ping));
    QVERIFY(ping.result().is_object());
    QFuture<Json> resources = client.request(QStringLiteral("resources/list"));
    QVERIFY(waitFor(resources));
    QVERIFY(resources.result()["resources"].is_array());

    const qint64 pid = client.processId();
    QFuture<void> stopped = client.stop();
    QVERIFY(waitFor(stopped, 10000));
    QCOMPARE(client.state(), McpClient::State::Stopped);
    QTRY_VERIFY_WITH_TIMEOUT(!processExists(pid), 10000);
    QVERIFY(states.count() >= 3); // starting, ready, stopping, stopped

    // Its tools now fail cleanly.
    QString error;
    QVERIFY(runTool(toolNamed(client, QStringLiteral("echo")), Json{{"message", "x"}}, &error).isEmpty());
    QVERIFY2(error.contains(QLatin1String("has stopped")), qPrintable(error));
}

void TestMcpClient::everythingOverHttp()
{
    const quint16 port = freePort();
    QProcess server;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("PORT"), QString::number(port));
    server.setProcessEnvironment(env);
    server.setProcessChannelMode(QProcess::MergedChannels);
    server.start(nodeProgram(), {packageScript(QStringLiteral("server-everything")), QStringLiteral("streamableHttp")});
    QVERIFY(server.waitForStarted());
    QByteArray output;
    const auto ready = [&] {
        output += server.readAll();
        return output.contains("listening") || server.state() != QProcess::Running;
    };
    QTRY_VERIFY_WITH_TIMEOUT(ready(), 20000);
    QCOMPARE(server.state(), QProcess::Running);

    McpServerConfig config = McpServerConfig::http(QStringLiteral("everything-http"),
                                                   QUrl(QStringLiteral("http://127.0.0.1:%1/mcp").arg(port)));
    config.headers = {{"X-Test-Header", "present"}};
    McpClient client(config);
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    started.waitForFinished();
    QCOMPARE(client.protocolVersion(), QStringLiteral("2025-11-25"));
    QCOMPARE(client.processId(), qint64(0));
    QCOMPARE(runTool(toolNamed(client, QStringLiteral("echo")), Json{{"message", "over HTTP"}}), QStringLiteral("Echo: over HTTP"));
    QCOMPARE(runTool(toolNamed(client, QStringLiteral("get-sum")), Json{{"a", 20}, {"b", 22}}), QStringLiteral("The sum of 20 and 22 is 42."));
    // The server answers in event streams; several calls at once each get their own answer.
    QList<QFuture<QString>> calls;
    for (int i = 0; i < 5; ++i)
        calls << toolNamed(client, QStringLiteral("echo"))->run(Json{{"message", QString::number(i).toStdString()}});
    for (int i = 0; i < 5; ++i) {
        QVERIFY(waitFor(calls[i]));
        QCOMPARE(calls[i].result(), QStringLiteral("Echo: %1").arg(i));
    }
    QFuture<void> stopped = client.stop(); // DELETE of the session
    QVERIFY(waitFor(stopped, 10000));
    QCOMPARE(client.state(), McpClient::State::Stopped);
    server.kill();
    server.waitForFinished();
}

void TestMcpClient::filesystemServer()
{
    QTemporaryDir root;
    QVERIFY(root.isValid());
    QFile note(root.filePath(QStringLiteral("note.txt")));
    QVERIFY(note.open(QIODevice::WriteOnly));
    note.write("Remember the milk.\n");
    note.close();
    const QString canonical = QFileInfo(root.path()).canonicalFilePath();

    McpServerConfig config = McpServerConfig::stdio(QStringLiteral("fs"), nodeProgram(),
                                                    {packageScript(QStringLiteral("server-filesystem")), canonical});
    config.toolPrefix = QStringLiteral("fs_");
    McpClient client(config);
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    started.waitForFinished();
    const QStringList names = toolNames(client);
    QVERIFY2(names.contains(QStringLiteral("fs_read_text_file")) && names.contains(QStringLiteral("fs_list_directory")),
             qPrintable(names.join(',')));
    const QString listing = runTool(toolNamed(client, QStringLiteral("fs_list_directory")), Json{{"path", canonical.toStdString()}});
    QVERIFY2(listing.contains(QLatin1String("note.txt")), qPrintable(listing));
    const QString content = runTool(toolNamed(client, QStringLiteral("fs_read_text_file")),
                                    Json{{"path", (canonical + QStringLiteral("/note.txt")).toStdString()}});
    QVERIFY2(content.contains(QLatin1String("Remember the milk.")), qPrintable(content));
    // Outside its root the server refuses: a tool error for the model, not a failure of the client.
    QString error;
    runTool(toolNamed(client, QStringLiteral("fs_read_text_file")), Json{{"path", "/etc/hostname"}}, &error);
    QVERIFY2(error.contains(QLatin1String("reported an error")), qPrintable(error));
    QCOMPARE(client.state(), McpClient::State::Ready);
    QVERIFY(waitFor(client.stop(), 10000));
}

void TestMcpClient::environmentOfTheServer()
{
    McpServerConfig config = fixture();
    config.env.insert(QStringLiteral("GIVEN_TO_SERVER"), QStringLiteral("yes"));
    {
        McpClient client(config);
        QVERIFY(waitFor(client.start()));
        QCOMPARE(client.state(), McpClient::State::Ready);
        const auto env = toolNamed(client, QStringLiteral("env"));
        QCOMPARE(runTool(env, Json{{"name", "GIVEN_TO_SERVER"}}), QStringLiteral("yes"));
        QCOMPARE(runTool(env, Json{{"name", "MNEME_TEST_SECRET"}}), QStringLiteral("(unset)"));
        QVERIFY(runTool(env, Json{{"name", "PATH"}}) != QLatin1String("(unset)"));
    }
    config.inheritEnvironment = true;
    McpClient client(config);
    QVERIFY(waitFor(client.start()));
    QCOMPARE(runTool(toolNamed(client, QStringLiteral("env")), Json{{"name", "MNEME_TEST_SECRET"}}),
             QStringLiteral("s3cr3t-value-not-for-servers"));
}

void TestMcpClient::toolsFilterAndPrefix()
{
    McpServerConfig config = fixture();
    config.tools = {QStringLiteral("echo"), QStringLiteral("fail")};
    config.toolPrefix = QStringLiteral("fx-");
    {
        McpClient client(config);
        QVERIFY(waitFor(client.start()));
        QCOMPARE(toolNames(client), (QStringList{QStringLiteral("fx-echo"), QStringLiteral("fx-fail")}));
        QCOMPARE(runTool(toolNamed(client, QStringLiteral("fx-echo")), Json{{"text", "prefixed"}}), QStringLiteral("echo: prefixed"));
        const Json schema = toolNamed(client, QStringLiteral("fx-echo"))->parametersSchema();
        QCOMPARE(schema["required"], Json::array({"text"}));
    }
    config.tools = {QStringLiteral("echo"), QStringLiteral("nonexistent")};
    McpClient client(config);
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    const Error e = errorOf(started);
    QVERIFY2(e.message().contains(QLatin1String("has no tool \"nonexistent\"")) && e.message().contains(QLatin1String("echo")),
             qPrintable(e.message()));
}

void TestMcpClient::callFromAnotherThread()
{
    McpClient client(fixture());
    QVERIFY(waitFor(client.start()));
    const auto echo = toolNamed(client, QStringLiteral("echo"));
    QFuture<QString> outer = QtConcurrent::run([echo] { return echo->run(Json{{"text", "from a pool thread"}}).result(); });
    QVERIFY(waitFor(outer));
    QCOMPARE(outer.result(), QStringLiteral("echo: from a pool thread"));
}

void TestMcpClient::commandNotFound()
{
    McpClient client(McpServerConfig::stdio(QStringLiteral("missing"), QStringLiteral("/nonexistent/mcp-server-xyz")));
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    const Error e = errorOf(started);
    QCOMPARE(e.kind(), ErrorKind::Provider);
    QVERIFY2(e.message().contains(QLatin1String("could not be started")) && e.message().contains(QLatin1String("\"missing\"")),
             qPrintable(e.message()));
    QTRY_COMPARE(client.state(), McpClient::State::Stopped);
}

void TestMcpClient::exitsAtStart()
{
    McpClient client(fixture({QStringLiteral("--mode"), QStringLiteral("exit-at-start")}));
    QSignalSpy failed(&client, &McpClient::failed);
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    const Error e = errorOf(started);
    QVERIFY2(e.message().contains(QLatin1String("exited with status 3")), qPrintable(e.message()));
    QVERIFY2(e.message().contains(QLatin1String("configuration missing, giving up")), qPrintable(e.message()));
    QCOMPARE(failed.count(), 1);
}

void TestMcpClient::garbageAtStart()
{
    McpClient client(fixture({QStringLiteral("--mode"), QStringLiteral("garbage-at-start")}));
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    const Error e = errorOf(started);
    QCOMPARE(e.kind(), ErrorKind::MalformedReply);
    QVERIFY2(e.message().contains(QLatin1String("Welcome to the fixture server!")), qPrintable(e.message()));
    const qint64 pid = client.processId();
    Q_UNUSED(pid)
    QTRY_COMPARE_WITH_TIMEOUT(client.state(), McpClient::State::Stopped, 10000);
}

void TestMcpClient::slowStartTimesOut()
{
    QTemporaryDir dir;
    const QString pidFile = dir.filePath(QStringLiteral("pid"));
    McpServerConfig config = fixture({QStringLiteral("--mode"), QStringLiteral("slow-start"), QStringLiteral("--pid-file"), pidFile});
    config.startupTimeoutMs = 1500;
    McpClient client(config);
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    const Error e = errorOf(started);
    QCOMPARE(e.kind(), ErrorKind::Timeout);
    QVERIFY2(e.message().contains(QLatin1String("startup_timeout_ms")), qPrintable(e.message()));
    QTRY_VERIFY_WITH_TIMEOUT(!processExists(readPid(pidFile)), 10000);
}

void TestMcpClient::unknownProtocolVersion()
{
    McpClient client(fixture({QStringLiteral("--version"), QStringLiteral("1999-01-01")}));
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    const Error e = errorOf(started);
    QVERIFY2(e.message().contains(QLatin1String("1999-01-01")) && e.message().contains(QLatin1String("2025-11-25")),
             qPrintable(e.message()));
    // An older version the client knows is accepted.
    McpClient older(fixture({QStringLiteral("--version"), QStringLiteral("2024-11-05")}));
    QFuture<void> ok = older.start();
    QVERIFY(waitFor(ok));
    ok.waitForFinished();
    QCOMPARE(older.protocolVersion(), QStringLiteral("2024-11-05"));
}

void TestMcpClient::dieMidCall()
{
    McpClient client(fixture());
    QSignalSpy failed(&client, &McpClient::failed);
    QVERIFY(waitFor(client.start()));
    QString error;
    QVERIFY(runTool(toolNamed(client, QStringLiteral("die")), Json::object(), &error).isEmpty());
    QVERIFY2(error.contains(QLatin1String("exited with status 7")) && error.contains(QLatin1String("dying on purpose")),
             qPrintable(error));
    QCOMPARE(client.state(), McpClient::State::Stopped);
    QCOMPARE(failed.count(), 1);
    // Later calls fail at once, saying why.
    runTool(toolNamed(client, QStringLiteral("echo")), Json{{"text", "x"}}, &error);
    QVERIFY2(error.contains(QLatin1String("has stopped")), qPrintable(error));
}

void TestMcpClient::garbageMidCall()
{
    McpClient client(fixture());
    QVERIFY(waitFor(client.start()));
    QString error;
    QVERIFY(runTool(toolNamed(client, QStringLiteral("garbage")), Json::object(), &error).isEmpty());
    QVERIFY2(error.contains(QLatin1String("not a JSON-RPC message")) && error.contains(QLatin1String("this is not JSON at all")),
             qPrintable(error));
    // The server is still there and answers the next call.
    QCOMPARE(client.state(), McpClient::State::Ready);
    QCOMPARE(runTool(toolNamed(client, QStringLiteral("echo")), Json{{"text", "still here"}}), QStringLiteral("echo: still here"));
}

void TestMcpClient::requestTimeoutCancelsAtTheServer()
{
    McpServerConfig config = fixture();
    config.requestTimeoutMs = 700;
    McpClient client(config);
    QStringList log;
    connect(&client, &McpClient::logMessage, this, [&log](const QString &line) { log << line; });
    QVERIFY(waitFor(client.start()));
    QString error;
    runTool(toolNamed(client, QStringLiteral("sleep")), Json{{"ms", 60000}}, &error);
    QVERIFY2(error.contains(QLatin1String("did not answer tools/call of \"sleep\"")), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(log.join('\n').contains(QLatin1String("notification notifications/cancelled")), 5000);

    // A caller that stops waiting cancels the request at the server as well.
    QFuture<QString> call = toolNamed(client, QStringLiteral("sleep"))->run(Json{{"ms", 60000}});
    QTest::qWait(200);
    log.clear();
    call.cancel();
    QTRY_VERIFY_WITH_TIMEOUT(log.join('\n').contains(QLatin1String("notifications/cancelled")), 5000);
    QCOMPARE(client.state(), McpClient::State::Ready);
}

void TestMcpClient::toolErrorAndUnknownTool()
{
    McpClient client(fixture());
    QVERIFY(waitFor(client.start()));
    QString error;
    runTool(toolNamed(client, QStringLiteral("fail")), Json::object(), &error);
    QVERIFY2(error.contains(QLatin1String("reported an error: it failed on purpose")), qPrintable(error));
    QFuture<Json> unknown = client.callTool(QStringLiteral("no_such_tool"), Json::object());
    QVERIFY(waitFor(unknown));
    const Error e = errorOf(unknown);
    QVERIFY2(e.message().contains(QLatin1String("Unknown tool: no_such_tool")) && e.message().contains(QLatin1String("-32602")),
             qPrintable(e.message()));
    QFuture<Json> method = client.request(QStringLiteral("prompts/list"));
    QVERIFY(waitFor(method));
    QVERIFY(errorOf(method).message().contains(QLatin1String("-32601")));
}

void TestMcpClient::serverPingsTheClient()
{
    McpClient client(fixture());
    QVERIFY(waitFor(client.start()));
    QCOMPARE(runTool(toolNamed(client, QStringLiteral("ping_client")), Json::object()), QStringLiteral("pong received"));
}

void TestMcpClient::toolListChanges()
{
    McpClient client(fixture());
    QSignalSpy changed(&client, &McpClient::toolsChanged);
    QVERIFY(waitFor(client.start()));
    QVERIFY(!toolNames(client).contains(QStringLiteral("extra")));
    QCOMPARE(runTool(toolNamed(client, QStringLiteral("grow")), Json::object()), QStringLiteral("grown"));
    QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 1, 5000);
    QVERIFY(toolNames(client).contains(QStringLiteral("extra")));
    QCOMPARE(runTool(toolNamed(client, QStringLiteral("extra")), Json::object()), QStringLiteral("extra called"));
}

void TestMcpClient::hugeLineBreaksTheChannel()
{
    McpClient client(fixture({QStringLiteral("--mode"), QStringLiteral("huge-line")}));
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started, 60000));
    const Error e = errorOf(started);
    QVERIFY2(e.message().contains(QLatin1String("without a line break")), qPrintable(e.message()));
}

void TestMcpClient::stopEscalatesToSignals_data()
{
    QTest::addColumn<QString>("mode");
    QTest::newRow("exits when its input closes") << QStringLiteral("normal");
    QTest::newRow("needs SIGTERM") << QStringLiteral("ignore-eof");
    QTest::newRow("needs SIGKILL") << QStringLiteral("ignore-term");
}

void TestMcpClient::stopEscalatesToSignals()
{
    QFETCH(QString, mode);
    QTemporaryDir dir;
    const QString pidFile = dir.filePath(QStringLiteral("pid"));
    McpClient client(fixture({QStringLiteral("--mode"), mode, QStringLiteral("--pid-file"), pidFile}));
    QVERIFY(waitFor(client.start()));
    const qint64 pid = readPid(pidFile);
    QVERIFY(processExists(pid));
    QFuture<void> stopped = client.stop();
    QVERIFY(waitFor(stopped, 10000));
    QVERIFY(!processExists(pid));
}

void TestMcpClient::stopTakesTheProcessGroup()
{
    QTemporaryDir dir;
    const QString pidFile = dir.filePath(QStringLiteral("pid"));
    McpClient client(fixture({QStringLiteral("--mode"), QStringLiteral("spawn-child"), QStringLiteral("--pid-file"), pidFile}));
    QVERIFY(waitFor(client.start()));
    const qint64 child = readPid(pidFile + QStringLiteral(".child"));
    QVERIFY(processExists(child));
    QVERIFY(waitFor(client.stop(), 10000));
    QTRY_VERIFY_WITH_TIMEOUT(!processExists(child), 5000);
}

void TestMcpClient::destroyedWhileRunning()
{
    QTemporaryDir dir;
    const QString pidFile = dir.filePath(QStringLiteral("pid"));
    QFuture<QString> call;
    {
        McpClient client(fixture({QStringLiteral("--pid-file"), pidFile}));
        QVERIFY(waitFor(client.start()));
        call = toolNamed(client, QStringLiteral("sleep"))->run(Json{{"ms", 60000}});
        QTest::qWait(100);
    }
    QVERIFY(waitFor(call, 5000));
    QVERIFY(errorOf(call).kind() == ErrorKind::Cancelled || call.isCanceled());
    QTRY_VERIFY_WITH_TIMEOUT(!processExists(readPid(pidFile)), 10000);
}

void TestMcpClient::httpGarbage()
{
    ScriptedHttpServer server;
    server.enqueue(ScriptedReply::json("<html>not json</html>"));
    McpClient client(McpServerConfig::http(QStringLiteral("junk"), QUrl(server.baseUrl().toString() + QStringLiteral("/mcp"))));
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    const Error e = errorOf(started);
    QCOMPARE(e.kind(), ErrorKind::MalformedReply);
    QVERIFY2(e.message().contains(QLatin1String("not a JSON-RPC message")), qPrintable(e.message()));
    const RecordedRequest request = server.requests().front();
    QCOMPARE(request.method, QByteArray("POST"));
    QVERIFY(request.header("Accept").contains("text/event-stream"));
    QCOMPARE(request.json()["method"], "initialize");
}

void TestMcpClient::httpErrorStatus()
{
    ScriptedHttpServer server;
    server.setHandler([](const RecordedRequest &) {
        return ScriptedReply::json(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: nope"}})", 400);
    });
    McpServerConfig config = McpServerConfig::http(QStringLiteral("refuser"), QUrl(server.baseUrl().toString() + QStringLiteral("/mcp")));
    config.headers = {{"Authorization", "Bearer very-secret-token-123"}};
    McpClient client(config);
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    const Error e = errorOf(started);
    QVERIFY2(e.message().contains(QLatin1String("Bad Request: nope")), qPrintable(e.message()));
    QVERIFY(!e.message().contains(QLatin1String("very-secret-token-123")));
    QCOMPARE(server.requests().front().header("Authorization"), QByteArray("Bearer very-secret-token-123"));
}

// A server that answers initialize on an event stream it keeps open a while after the answer (as
// servers may, to send more on it), and refuses whatever comes without the session it handed out:
// the client's notifications/initialized, sent at once, must already carry the session.
void TestMcpClient::httpSessionReachesTheFirstNotification()
{
    ScriptedHttpServer server;
    server.setHandler([](const RecordedRequest &request) {
        const Json message = request.json();
        const std::string method = message.value("method", "");
        if (method == "initialize") {
            const Json answer = {{"jsonrpc", "2.0"},
                                 {"id", message["id"]},
                                 {"result",
                                  {{"protocolVersion", "2025-03-26"},
                                   {"capabilities", {{"tools", Json::object()}}},
                                   {"serverInfo", {{"name", "slow-stream"}, {"version", "1"}}}}}};
            ScriptedReply reply = ScriptedReply::sse({"data: " + QByteArray::fromStdString(answer.dump()) + "\n\n", ": still here\n\n"}, 500);
            reply.headers.append(qMakePair(QByteArray("Mcp-Session-Id"), QByteArray("session-1")));
            return reply;
        }
        if (request.header("Mcp-Session-Id") != "session-1")
            return ScriptedReply::json(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}})", 400);
        if (!message.contains("id"))
            return ScriptedReply::json("", 202);
        return ScriptedReply::json(QByteArray::fromStdString(Json({{"jsonrpc", "2.0"}, {"id", message["id"]}, {"result", {{"tools", Json::array()}}}}).dump()));
    });
    McpClient client(McpServerConfig::http(QStringLiteral("slow-stream"), QUrl(server.baseUrl().toString() + QStringLiteral("/mcp"))));
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    const Error e = errorOf(started);
    QVERIFY2(e.message() == QLatin1String("no error"), qPrintable(e.message()));
    const QList<RecordedRequest> requests = server.requests();
    QVERIFY(requests.size() >= 2);
    for (int i = 1; i < requests.size(); ++i)
        QCOMPARE(requests[i].header("Mcp-Session-Id"), QByteArray("session-1"));
}

void TestMcpClient::httpConnectionRefused()
{
    McpServerConfig config = McpServerConfig::http(QStringLiteral("nobody"), QUrl(QStringLiteral("http://127.0.0.1:%1/mcp").arg(freePort())));
    McpClient client(config);
    QFuture<void> started = client.start();
    QVERIFY(waitFor(started));
    const Error e = errorOf(started);
    QCOMPARE(e.kind(), ErrorKind::Network);
}

QTEST_GUILESS_MAIN(TestMcpClient)
#include "test_mcp_client.moc"
