// The protocol edges of `mneme mcp` (stdio and streamable HTTP) and of `mneme serve`, as raw bytes:
// version negotiation, every kind of malformed message and request, batches, messages too long,
// requests before initialize, cancellation, the end of the input, the session and version headers,
// and fuzzing of both parsers (JSON-RPC lines, HTTP requests). The servers must answer each with the
// right error and go on serving; their standard output carries nothing but protocol messages.
// (The official MCP SDK and Node.js's fetch drive the same servers in tests/mcp.)

#include "cli_runner.h"
#include "scripted_http_server.h"
#include "temp_store.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QRandomGenerator>
#include <QTcpSocket>
#include <QTest>
#include <nlohmann/json.hpp>

#include <csignal>
#include <memory>

using Json = nlohmann::json;
using mneme::test::ScriptedHttpServer;
using mneme::test::ScriptedReply;
using mneme::test::TempStore;

// QCOMPARE for a JSON value against anything JSON is made from.
#define JCOMPARE(actual, expected) \
    QVERIFY2(Json(actual) == Json(expected), (Json(actual).dump() + " != " + Json(expected).dump()).c_str())

namespace {

QProcessEnvironment cliEnvironment(const TempStore &store)
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("MNEME_STORAGE_DIR"), store.dir());
    env.remove(QStringLiteral("MNEME_HTTP_TOKEN"));
    return env;
}

// `mneme mcp` over stdio, one message a line.
class StdioServer
{
public:
    StdioServer(const TempStore &store, const QStringList &extra = {})
    {
        m_process.setProcessEnvironment(cliEnvironment(store));
        m_process.start(QStringLiteral(MNEME_CLI), QStringList{QStringLiteral("--db"), store.path(), QStringLiteral("mcp")} + extra);
    }
    ~StdioServer()
    {
        if (m_process.state() != QProcess::NotRunning) {
            m_process.kill();
            m_process.waitForFinished();
        }
    }

    QProcess &process() { return m_process; }
    void sendLine(const QByteArray &line) { m_process.write(line + '\n'); }
    void send(const Json &message) { sendLine(QByteArray::fromStdString(message.dump())); }

    // The next line on standard output, parsed; null after the time is up. Every line must be JSON-RPC.
    Json next(int timeoutMs = 20000)
    {
        QElapsedTimer clock;
        clock.start();
        while (!m_out.contains('\n') && clock.elapsed() < timeoutMs) {
            m_process.waitForReadyRead(50);
            m_out += m_process.readAllStandardOutput();
        }
        const qsizetype nl = m_out.indexOf('\n');
        if (nl < 0)
            return Json();
        const QByteArray line = m_out.left(nl);
        m_out.remove(0, nl + 1);
        const Json parsed = Json::parse(line.toStdString(), nullptr, false);
        const auto isMessage = [](const Json &m) { return m.is_object() && m.value("jsonrpc", "") == "2.0"; };
        const bool batch = parsed.is_array() && !parsed.empty() && std::all_of(parsed.begin(), parsed.end(), isMessage);
        if (!batch && !isMessage(parsed))
            return Json{{"not_json_rpc", line.toStdString()}};
        return parsed;
    }

    Json request(int id, const char *method, const Json &params = Json::object())
    {
        send(Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
        return next();
    }

    Json initialize(const char *version = "2025-11-25")
    {
        const Json answer = request(0, "initialize", {{"protocolVersion", version}, {"capabilities", Json::object()}, {"clientInfo", {{"name", "raw"}, {"version", "1"}}}});
        send(Json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
        return answer;
    }

    bool alive() { return request(4242, "ping") == Json{{"jsonrpc", "2.0"}, {"id", 4242}, {"result", Json::object()}}; }

private:
    QProcess m_process;
    QByteArray m_out;
};

// One HTTP exchange on a fresh connection, bytes as given; the response's status, headers and body.
struct Reply
{
    int status = 0;
    QByteArray head;
    QByteArray body;
    QByteArray header(const QByteArray &name) const
    {
        for (const QByteArray &line : head.split('\n'))
            if (line.toLower().startsWith(name.toLower() + ':'))
                return line.mid(name.size() + 1).trimmed();
        return {};
    }
    Json json() const { return Json::parse(body.toStdString(), nullptr, false); }
};

Reply exchange(quint16 port, const QByteArray &bytes, int timeoutMs = 15000)
{
    QTcpSocket socket;
    socket.connectToHost(QHostAddress::LocalHost, port);
    if (!socket.waitForConnected(5000))
        return {};
    socket.write(bytes);
    QByteArray in;
    QElapsedTimer clock;
    clock.start();
    while (socket.state() == QAbstractSocket::ConnectedState && clock.elapsed() < timeoutMs) {
        socket.waitForReadyRead(50);
        in += socket.readAll();
        const qsizetype end = in.indexOf("\r\n\r\n");
        if (end >= 0) {
            const qsizetype length = [&] {
                for (const QByteArray &line : in.left(end).split('\n'))
                    if (line.toLower().startsWith("content-length:"))
                        return line.mid(15).trimmed().toLongLong();
                return qint64(0);
            }();
            if (in.size() >= end + 4 + length)
                break;
        }
    }
    in += socket.readAll();
    Reply r;
    const qsizetype end = in.indexOf("\r\n\r\n");
    r.head = end < 0 ? in : in.left(end);
    r.body = end < 0 ? QByteArray() : in.mid(end + 4);
    r.status = in.mid(9, 3).toInt();
    return r;
}

QByteArray post(const QByteArray &path, const QByteArray &body, const QList<QByteArray> &headers = {})
{
    QByteArray out = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n";
    for (const QByteArray &h : headers)
        out += h + "\r\n";
    return out + "\r\n" + body;
}

// A server started with --listen 127.0.0.1:0 --json: its process and port.
class HttpServer
{
public:
    HttpServer(const TempStore &store, const QStringList &args)
    {
        m_process.setProcessEnvironment(cliEnvironment(store));
        m_process.start(QStringLiteral(MNEME_CLI), QStringList{QStringLiteral("--db"), store.path()} + args
                                                       + QStringList{QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--json")});
        QByteArray out;
        QElapsedTimer clock;
        clock.start();
        while (clock.elapsed() < 20000 && m_process.state() != QProcess::NotRunning) {
            m_process.waitForReadyRead(50);
            out += m_process.readAllStandardOutput();
            const Json doc = Json::parse(out.toStdString(), nullptr, false);
            if (!doc.is_discarded()) {
                m_url = QUrl(QString::fromStdString(doc["url"].get<std::string>()));
                return;
            }
        }
    }
    ~HttpServer()
    {
        if (m_process.state() != QProcess::NotRunning) {
            m_process.kill();
            m_process.waitForFinished();
        }
    }
    quint16 port() const { return quint16(m_url.port()); }
    QProcess &process() { return m_process; }

private:
    QProcess m_process;
    QUrl m_url;
};

const QByteArray kJson = "Content-Type: application/json";
const QByteArray kAccept = "Accept: application/json, text/event-stream";

} // namespace

class TestCliServers : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void stdioVersionNegotiation_data();
    void stdioVersionNegotiation();
    void stdioMalformedMessages_data();
    void stdioMalformedMessages();
    void stdioBeforeInitialize();
    void stdioBatches();
    void stdioMessageTooLong();
    void stdioFuzz();
    void stdioEndOfInputAnswersFirst();
    void stdioCancelledRequestGetsNoAnswer();
    void stdioRefusesHttpOptions();

    void httpTransport();
    void httpFuzzAndLimits();
    void httpSlowClientsAndConnectionLimit();
    void serveStopsCleanlyOnSignals_data();
    void serveStopsCleanlyOnSignals();
};

void TestCliServers::stdioVersionNegotiation_data()
{
    QTest::addColumn<QString>("asked");
    QTest::addColumn<QString>("answered");
    QTest::addColumn<bool>("structured");
    QTest::newRow("2025-11-25") << QStringLiteral("2025-11-25") << QStringLiteral("2025-11-25") << true;
    QTest::newRow("2025-06-18") << QStringLiteral("2025-06-18") << QStringLiteral("2025-06-18") << true;
    QTest::newRow("2025-03-26") << QStringLiteral("2025-03-26") << QStringLiteral("2025-03-26") << false;
    QTest::newRow("2024-11-05") << QStringLiteral("2024-11-05") << QStringLiteral("2024-11-05") << false;
    QTest::newRow("unknown: the newest") << QStringLiteral("1999-01-01") << QStringLiteral("2025-11-25") << true;
}

void TestCliServers::stdioVersionNegotiation()
{
    QFETCH(QString, asked);
    QFETCH(QString, answered);
    QFETCH(bool, structured);
    TempStore store;
    StdioServer server(store);
    const Json init = server.initialize(asked.toUtf8().constData());
    QCOMPARE(QString::fromStdString(init["result"]["protocolVersion"].get<std::string>()), answered);
    JCOMPARE(init["result"]["serverInfo"]["name"], "mneme");
    const Json tools = server.request(1, "tools/list");
    QCOMPARE(tools["result"]["tools"].size(), size_t(8));
    JCOMPARE(tools["result"]["tools"][0].contains("outputSchema"), structured);
    const Json call = server.request(2, "tools/call", {{"name", "remember"}, {"arguments", {{"content", "Negotiated facts stay facts"}}}});
    JCOMPARE(call["result"]["isError"], false);
    JCOMPARE(call["result"].contains("structuredContent"), structured);
    JCOMPARE(Json::parse(call["result"]["content"][0]["text"].get<std::string>())["content"], "Negotiated facts stay facts");
}

void TestCliServers::stdioMalformedMessages_data()
{
    QTest::addColumn<QByteArray>("line");
    QTest::addColumn<int>("code");
    QTest::addColumn<QByteArray>("id"); // as JSON
    QTest::addColumn<QString>("says");

    QTest::newRow("not JSON") << QByteArray("hello there") << -32700 << QByteArray("null") << QStringLiteral("not JSON");
    QTest::newRow("truncated") << QByteArray(R"({"jsonrpc":"2.0","id":1,"method":"pi)") << -32700 << QByteArray("null") << QString();
    QTest::newRow("invalid UTF-8") << QByteArray("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}") << -32700 << QByteArray("null") << QString();
    // Nested deeper than any JSON Mneme reads (kJsonMaxDepth): refused before it is parsed.
    QTest::newRow("nested 20,000 levels deep") << QByteArray(R"({"jsonrpc":"2.0","id":13,"method":"ping","params":{"a":)") + QByteArray(20000, '[') + QByteArray(20000, ']') + QByteArray("}}")
                                               << -32700 << QByteArray("null") << QStringLiteral("deeper than 64 levels");
    QTest::newRow("a number") << QByteArray("42") << -32600 << QByteArray("null") << QStringLiteral("JSON object");
    QTest::newRow("a batch after 2025-03-26") << QByteArray(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])") << -32600 << QByteArray("null")
                                              << QStringLiteral("batches");
    QTest::newRow("JSON-RPC 1.0") << QByteArray(R"({"jsonrpc":"1.0","id":2,"method":"ping"})") << -32600 << QByteArray("2") << QStringLiteral("2.0");
    QTest::newRow("null id") << QByteArray(R"({"jsonrpc":"2.0","id":null,"method":"ping"})") << -32600 << QByteArray("null") << QString();
    QTest::newRow("object id") << QByteArray(R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})") << -32600 << QByteArray("null") << QString();
    QTest::newRow("method not a string") << QByteArray(R"({"jsonrpc":"2.0","id":3,"method":5})") << -32600 << QByteArray("3") << QString();
    QTest::newRow("params not an object") << QByteArray(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":"x"})") << -32600
                                          << QByteArray("4") << QString();
    QTest::newRow("tools/call without name") << QByteArray(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}})") << -32602
                                             << QByteArray("5") << QString();
    QTest::newRow("arguments not an object") << QByteArray(R"({"jsonrpc":"2.0","id":"six","method":"tools/call","params":{"name":"recall","arguments":[1]}})")
                                             << -32602 << QByteArray("\"six\"") << QString();
    QTest::newRow("unknown tool") << QByteArray(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rm"}})") << -32602
                                  << QByteArray("7") << QStringLiteral("Unknown tool: rm");
    QTest::newRow("resource uri not a string") << QByteArray(R"({"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":5}})")
                                               << -32602 << QByteArray("8") << QString();
    QTest::newRow("resource of another scheme") << QByteArray(R"({"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"file:///etc/passwd"}})")
                                                << -32002 << QByteArray("9") << QStringLiteral("Resource not found");
    QTest::newRow("bad cursor") << QByteArray(R"({"jsonrpc":"2.0","id":10,"method":"resources/list","params":{"cursor":"bogus"}})")
                                << -32602 << QByteArray("10") << QStringLiteral("cursor");
    QTest::newRow("second initialize") << QByteArray(R"({"jsonrpc":"2.0","id":11,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})")
                                       << -32600 << QByteArray("11") << QStringLiteral("initialized already");
    QTest::newRow("unknown method") << QByteArray(R"({"jsonrpc":"2.0","id":12,"method":"sampling/createMessage"})") << -32601
                                    << QByteArray("12") << QStringLiteral("Method not found");
}

void TestCliServers::stdioMalformedMessages()
{
    QFETCH(QByteArray, line);
    QFETCH(int, code);
    QFETCH(QByteArray, id);
    QFETCH(QString, says);
    TempStore store;
    StdioServer server(store);
    server.initialize();
    server.sendLine(line);
    const Json answer = server.next();
    QVERIFY2(answer.contains("error"), answer.dump().c_str());
    QCOMPARE(answer["error"]["code"].get<int>(), code);
    JCOMPARE(answer["id"], Json::parse(id.toStdString()));
    QVERIFY2(QString::fromStdString(answer["error"]["message"].get<std::string>()).contains(says), answer.dump().c_str());
    QVERIFY(server.alive());
}

void TestCliServers::stdioBeforeInitialize()
{
    TempStore store;
    StdioServer server(store);
    QVERIFY(server.alive()); // ping is allowed before initialize
    const Json early = server.request(1, "tools/list");
    JCOMPARE(early["error"]["code"], -32600);
    QVERIFY(QString::fromStdString(early["error"]["message"].get<std::string>()).contains(QLatin1String("before initialize")));
    const Json bad = server.request(2, "initialize", {{"capabilities", Json::object()}});
    JCOMPARE(bad["error"]["code"], -32602);
    JCOMPARE(server.initialize()["result"]["protocolVersion"], "2025-11-25");
    // Responses and unknown notifications from a client are taken without an answer.
    server.send(Json{{"jsonrpc", "2.0"}, {"id", 99}, {"result", Json::object()}});
    server.send(Json{{"jsonrpc", "2.0"}, {"method", "notifications/roots/list_changed"}});
    server.send(Json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 12345}}}});
    QVERIFY(server.alive());
}

void TestCliServers::stdioBatches()
{
    TempStore store;
    StdioServer server(store);
    JCOMPARE(server.initialize("2025-03-26")["result"]["protocolVersion"], "2025-03-26");
    server.sendLine(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},)"
                    R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"info","arguments":{}}},"junk"])");
    const Json batch = server.next();
    QVERIFY2(batch.is_array(), batch.dump().c_str());
    QCOMPARE(batch.size(), size_t(3)); // ping, tools/call, and the error for "junk"; nothing for the notification
    QSet<QString> kinds;
    for (const Json &a : batch)
        kinds.insert(a.contains("error") ? QStringLiteral("error %1").arg(a["error"]["code"].get<int>()) : QString::fromStdString(a["id"].dump()));
    QCOMPARE(kinds, (QSet<QString>{QStringLiteral("1"), QStringLiteral("2"), QStringLiteral("error -32600")}));
    server.sendLine("[]");
    JCOMPARE(server.next()["error"]["code"], -32600);
}

void TestCliServers::stdioMessageTooLong()
{
    TempStore store;
    StdioServer server(store, {QStringLiteral("--max-body"), QStringLiteral("2048")});
    server.initialize();
    server.sendLine(QByteArray(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":{"content":")")
                    + QByteArray(10000, 'a') + "\"}}}");
    const Json answer = server.next();
    QVERIFY2(answer.contains("error"), answer.dump().c_str());
    JCOMPARE(answer["error"]["code"], -32600);
    QVERIFY2(QString::fromStdString(answer["error"]["message"].get<std::string>()).contains(QLatin1String("longer than 2048 bytes")),
             answer.dump().c_str());
    QVERIFY(server.alive());
}

void TestCliServers::stdioFuzz()
{
    TempStore store;
    StdioServer server(store);
    server.initialize();
    QRandomGenerator rng(20240521);
    const QList<QByteArray> pieces = {"{", "}", "[", "]", "\"jsonrpc\"", ":", "\"2.0\"", ",", "\"id\"", "1", "null", "\"method\"",
                                      "\"tools/call\"", "\"params\"", "\"name\"", "\"recall\"", "\"arguments\"", "\"query\"", "\\u0000",
                                      "\xc3", "true", "-1e999", "\"", " "};
    int sent = 0;
    for (int i = 0; i < 400; ++i) {
        QByteArray line;
        if (i % 3 == 0) { // random bytes, no line break
            line.resize(rng.bounded(1, 200));
            for (char &c : line)
                c = char(rng.bounded(1, 256));
            line.replace('\n', ' ');
        } else { // plausible pieces of JSON-RPC in a random order
            const int n = rng.bounded(1, 30);
            for (int k = 0; k < n; ++k)
                line += pieces[rng.bounded(pieces.size())];
        }
        server.sendLine(line);
        ++sent;
    }
    // Every line on standard output is a JSON-RPC message, and the server still answers.
    server.send(Json{{"jsonrpc", "2.0"}, {"id", "last"}, {"method", "ping"}});
    for (int i = 0; i <= sent; ++i) {
        const Json m = server.next();
        QVERIFY2(!m.is_null(), "the server stopped answering");
        QVERIFY2(m.is_array() || !m.contains("not_json_rpc"), m.dump().c_str());
        if (m.is_object() && m.value("id", Json()) == "last")
            break;
    }
    QVERIFY(server.alive());
    QCOMPARE(server.process().state(), QProcess::Running);
}

void TestCliServers::stdioEndOfInputAnswersFirst()
{
    TempStore store;
    StdioServer server(store);
    server.initialize();
    for (int i = 0; i < 5; ++i)
        server.send(Json{{"jsonrpc", "2.0"}, {"id", 100 + i}, {"method", "tools/call"}, {"params", {{"name", "remember"}, {"arguments", {{"content", "Fact number " + std::to_string(i) + " before the end"}}}}}});
    server.process().closeWriteChannel();
    QSet<int> answered;
    for (int i = 0; i < 5; ++i) {
        const Json m = server.next();
        JCOMPARE(m["result"]["isError"], false);
        answered.insert(m["id"].get<int>());
    }
    QCOMPARE(answered.size(), 5);
    QVERIFY(server.process().waitForFinished(20000));
    QCOMPARE(server.process().exitCode(), 0);
    QCOMPARE(server.process().readAllStandardOutput(), QByteArray());
}

void TestCliServers::stdioCancelledRequestGetsNoAnswer()
{
    // An LLM that takes 1.5 s makes remember slow enough to be cancelled while it runs.
    ScriptedHttpServer llm;
    llm.setHandler([](const mneme::test::RecordedRequest &) {
        ScriptedReply r = ScriptedReply::json(R"({"error":{"message":"busy"}})", 400);
        r.delayMs = 1500;
        return r;
    });
    TempStore store;
    QFile config(store.path(QStringLiteral("config.json")));
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write(QByteArray::fromStdString(Json{{"llm", {{"provider", "openai"}, {"config", {{"model", "m"}, {"base_url", llm.baseUrl().toString().toStdString() + "/v1"}, {"api_key", "k"}, {"max_retries", 0}}}}}}.dump()));
    config.close();
    StdioServer server(store, {QStringLiteral("--config"), config.fileName()});
    server.initialize();
    server.send(Json{{"jsonrpc", "2.0"}, {"id", "slow"}, {"method", "tools/call"}, {"params", {{"name", "remember"}, {"arguments", {{"content", "Cancelled but kept"}}}}}});
    QTRY_VERIFY_WITH_TIMEOUT(llm.requestCount() > 0, 10000);
    server.send(Json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", "slow"}, {"reason", "user pressed stop"}}}});
    // The next answer is the ping's: the cancelled request gets none.
    const Json next = server.request(7, "ping");
    JCOMPARE(next["id"], 7);
    server.process().closeWriteChannel();
    QVERIFY(server.process().waitForFinished(20000));
    QVERIFY2(!server.process().readAllStandardOutput().contains("slow"), "the cancelled request was answered");
    // A save cannot be stopped halfway: it completed.
    const auto list = mneme::test::runCli(QStringLiteral(MNEME_CLI), {QStringLiteral("--db"), store.path(), QStringLiteral("list"), QStringLiteral("--json")}, store.dir());
    QVERIFY2(list.out.contains("Cancelled but kept"), list.describe().constData());
}

void TestCliServers::stdioRefusesHttpOptions()
{
    TempStore store;
    for (const QStringList &args : {QStringList{QStringLiteral("--json")}, QStringList{QStringLiteral("--token-file"), QStringLiteral("x")},
                                    QStringList{QStringLiteral("--listen"), QStringLiteral("nowhere")}, QStringList{QStringLiteral("--source"), QStringLiteral(" ")}}) {
        const auto run = mneme::test::runCli(QStringLiteral(MNEME_CLI), QStringList{QStringLiteral("--db"), store.path(), QStringLiteral("mcp")} + args, store.dir());
        QCOMPARE(run.exitCode, 2);
        QVERIFY2(run.err.startsWith("mneme: "), run.describe().constData());
        QCOMPARE(run.out, QByteArray());
    }
}

void TestCliServers::httpTransport()
{
    TempStore store;
    HttpServer server(store, {QStringLiteral("mcp"), QStringLiteral("--source"), QStringLiteral("alice")});
    const quint16 port = server.port();
    QVERIFY(port > 0);
    const QByteArray init = R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}})";

    QCOMPARE(exchange(port, post("/mcp", init, {"Content-Type: text/plain", kAccept})).status, 415);
    QCOMPARE(exchange(port, post("/mcp", init, {kJson, "Accept: text/html"})).status, 406);
    QCOMPARE(exchange(port, post("/mcp", init, {kJson, kAccept, "MCP-Protocol-Version: 1999-01-01"})).status, 400);
    JCOMPARE(exchange(port, post("/mcp", "{nope", {kJson, kAccept})).json()["error"]["code"], -32700);
    QCOMPARE(exchange(port, post("/elsewhere", init, {kJson, kAccept})).status, 404);
    QCOMPARE(exchange(port, post("/mcp", init, {kJson, kAccept, "Origin: http://attacker.example"})).status, 403);
    const Reply get = exchange(port, "GET /mcp HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n");
    QCOMPARE(get.status, 405);
    QCOMPARE(get.header("Allow"), QByteArray("POST, DELETE"));

    const QByteArray ping = R"({"jsonrpc":"2.0","id":2,"method":"ping"})";
    QCOMPARE(exchange(port, post("/mcp", ping, {kJson, kAccept})).status, 400); // no session
    QCOMPARE(exchange(port, post("/mcp", ping, {kJson, kAccept, "Mcp-Session-Id: not-a-session"})).status, 404);

    const Reply opened = exchange(port, post("/mcp", init, {kJson, kAccept}));
    QCOMPARE(opened.status, 200);
    JCOMPARE(opened.json()["result"]["protocolVersion"], "2025-06-18");
    const QByteArray session = "Mcp-Session-Id: " + opened.header("Mcp-Session-Id");
    QVERIFY(opened.header("Mcp-Session-Id").size() >= 32);
    const QByteArray version = "MCP-Protocol-Version: 2025-06-18";

    QCOMPARE(exchange(port, post("/mcp", R"({"jsonrpc":"2.0","method":"notifications/initialized"})", {kJson, kAccept, session, version})).status, 202);
    const Reply pong = exchange(port, post("/mcp", ping, {kJson, kAccept, session, version}));
    QCOMPARE(pong.status, 200);
    QCOMPARE(pong.header("Content-Type"), QByteArray("application/json"));
    JCOMPARE(pong.json(), (Json{{"jsonrpc", "2.0"}, {"id", 2}, {"result", Json::object()}}));
    // Without the version header the server assumes 2025-03-26 and answers all the same.
    QCOMPARE(exchange(port, post("/mcp", ping, {kJson, kAccept, session})).status, 200);
    const Reply batch = exchange(port, post("/mcp", "[" + ping + "]", {kJson, kAccept, session, version}));
    JCOMPARE(batch.json()["error"]["code"], -32600);
    const Reply remembered = exchange(port, post("/mcp", R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"remember","arguments":{"content":"Over raw HTTP","private":true}}})",
                                                 {kJson, kAccept, session, version}));
    JCOMPARE(remembered.json()["result"]["structuredContent"]["source"], "alice");

    const QByteArray del = "DELETE /mcp HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + session + "\r\n\r\n";
    QCOMPARE(exchange(port, del).status, 204);
    QCOMPARE(exchange(port, del).status, 404);
    QCOMPARE(exchange(port, post("/mcp", ping, {kJson, kAccept, session, version})).status, 404);
}

void TestCliServers::httpFuzzAndLimits()
{
    TempStore store;
    HttpServer server(store, {QStringLiteral("serve"), QStringLiteral("--max-body"), QStringLiteral("4096")});
    const quint16 port = server.port();
    const QByteArray health = "GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    QCOMPARE(exchange(port, health).status, 200);

    struct Case
    {
        QByteArray bytes;
        int status;
    };
    const QList<Case> cases = {
        {"GET /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        {"GET /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400},
        {"GET /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", 400},
        {"GET /v1/health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
        {"GET /v1/health HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n", 417},
        {"GET /v1/health HTTP/1.1\r\nHost: x\r\n folded: line\r\n\r\n", 400},
        {"GET /v1/health HTTP/1.1\r\nHost x\r\n\r\n", 400},
        {"GET v1/health HTTP/1.1\r\nHost: x\r\n\r\n", 400},
        {"GET /v1/health\r\nHost: x\r\n\r\n", 400},
        {"POST /v1/recall HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
        {"POST /v1/recall HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2000\r\n", 413},
        {"POST /v1/recall HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", 413},
        {"GET /v1/health HTTP/1.1\r\n" + QByteArray(20000, 'a') + "\r\n\r\n", 431},
        {"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + QByteArray("X-A: b\r\n").repeated(200) + "\r\n", 431},
        {"\r\n\r\nGET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 200},
        {"HEAD /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 200},
        {"GET /v1/health HTTP/1.0\r\n\r\n", 200},
    };
    for (const Case &c : cases) {
        const Reply r = exchange(port, c.bytes);
        QVERIFY2(r.status == c.status, (QByteArray::number(r.status) + " for " + c.bytes.left(120)).constData());
        if (c.status >= 400)
            QVERIFY2(r.json()["error"].contains("message"), r.body.constData());
    }
    // HEAD answers without the body but with its length.
    const Reply head = exchange(port, "HEAD /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    QVERIFY(head.body.isEmpty() && head.header("Content-Length").toInt() > 0);
    // Expect: 100-continue gets the interim answer before the body is sent.
    {
        QTcpSocket socket;
        socket.connectToHost(QHostAddress::LocalHost, port);
        QVERIFY(socket.waitForConnected());
        const QByteArray body = R"({"text":"One. Two."})";
        socket.write("POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nConnection: close\r\nContent-Length: "
                     + QByteArray::number(body.size()) + "\r\n\r\n");
        QTRY_VERIFY(socket.bytesAvailable() > 0 || socket.waitForReadyRead(50));
        QVERIFY(socket.readAll().startsWith("HTTP/1.1 100 Continue"));
        socket.write(body);
        QByteArray in;
        QTRY_VERIFY((in += socket.readAll()).contains("\"Two.\""));
        QVERIFY(in.startsWith("HTTP/1.1 200 OK"));
    }

    // Random bytes on many connections, then a real request.
    QRandomGenerator rng(7);
    for (int i = 0; i < 120; ++i) {
        QByteArray junk(rng.bounded(1, 3000), Qt::Uninitialized);
        for (char &c : junk)
            c = char(rng.bounded(256));
        if (i % 2)
            junk.prepend("POST /v1/recall HTTP/1.1\r\nHost: x\r\n");
        exchange(port, junk + "\r\n\r\n", 2000);
    }
    QCOMPARE(exchange(port, health).status, 200);
    QCOMPARE(server.process().state(), QProcess::Running);
}

void TestCliServers::httpSlowClientsAndConnectionLimit()
{
    TempStore store;
    HttpServer server(store, {QStringLiteral("serve"), QStringLiteral("--request-timeout"), QStringLiteral("1"), QStringLiteral("--max-connections"),
                              QStringLiteral("3")});
    const quint16 port = server.port();
    // A request that never completes is answered 408 after the timeout and the connection closed.
    QElapsedTimer clock;
    clock.start();
    const Reply slow = exchange(port, "POST /v1/recall HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"query\"", 10000);
    QCOMPARE(slow.status, 408);
    QVERIFY(clock.elapsed() >= 900);

    // Connections beyond the limit are refused with 503 while the others stay open.
    std::vector<std::unique_ptr<QTcpSocket>> held;
    for (int i = 0; i < 3; ++i) {
        held.push_back(std::make_unique<QTcpSocket>());
        held.back()->connectToHost(QHostAddress::LocalHost, port);
        QVERIFY(held.back()->waitForConnected());
        held.back()->write("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"); // keep-alive
        QVERIFY(held.back()->waitForReadyRead(5000));
        held.back()->readAll();
    }
    QCOMPARE(exchange(port, "GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status, 503);
    held.clear();
    QTRY_COMPARE_WITH_TIMEOUT(exchange(port, "GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status, 200, 5000);
}

void TestCliServers::serveStopsCleanlyOnSignals_data()
{
    QTest::addColumn<int>("signal");
    QTest::newRow("SIGTERM") << int(SIGTERM);
    QTest::newRow("SIGINT") << int(SIGINT);
}

void TestCliServers::serveStopsCleanlyOnSignals()
{
    QFETCH(int, signal);
    TempStore store;
    HttpServer server(store, {QStringLiteral("serve")});
    const Reply made = exchange(server.port(), post("/v1/memories", R"({"content":"Kept across the stop"})", {kJson}));
    QCOMPARE(made.status, 201);
    ::kill(pid_t(server.process().processId()), signal);
    QVERIFY(server.process().waitForFinished(20000));
    QCOMPARE(server.process().exitStatus(), QProcess::NormalExit);
    QCOMPARE(server.process().exitCode(), 0);
    const auto get = mneme::test::runCli(QStringLiteral(MNEME_CLI), {QStringLiteral("--db"), store.path(), QStringLiteral("get"), QString::fromStdString(made.json()["id"].get<std::string>()), QStringLiteral("--json")},
                                         store.dir());
    QCOMPARE(get.exitCode, 0);
}

QTEST_GUILESS_MAIN(TestCliServers)
#include "test_cli_servers.moc"
