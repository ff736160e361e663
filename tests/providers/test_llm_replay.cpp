// The replay LLM plugin: recording through another provider, replaying by request, and its errors.

#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>

#include <QFile>
#include <QPromise>
#include <QSignalSpy>
#include <QtTest>

using namespace mneme;

namespace {

// A provider of the test's own: answers "echo: <last user message>", counts its calls, streams
// its answer in two deltas, and keeps the API key it was given (which must never reach a cassette).
class EchoProvider : public LlmProvider
{
public:
    explicit EchoProvider(QString key)
        : m_key(std::move(key))
    {
    }
    QString id() const override { return QStringLiteral("echo/v1"); }
    Capabilities capabilities() const override { return Capability::Tools | Capability::Streaming; }
    QFuture<ChatResponse> chat(const ChatRequest &request) override
    {
        ++calls;
        ChatResponse r;
        r.text = QStringLiteral("echo: ") + request.messages.back().content + QStringLiteral(" #%1").arg(calls);
        r.model = QStringLiteral("echo-v1");
        r.finishReason = QStringLiteral("stop");
        r.usage = {7, 3};
        if (!request.tools.empty())
            r.toolCalls.push_back(ToolCall{QStringLiteral("call_1"), request.tools.front().name, Json{{"q", "x"}}});
        if (request.stream) {
            Q_EMIT textDelta(r.text.left(4));
            Q_EMIT textDelta(r.text.mid(4));
        }
        QPromise<ChatResponse> p;
        p.start();
        p.addResult(r);
        p.finish();
        return p.future();
    }
    int calls = 0;
    QString m_key;
};

class EchoFactory : public LlmProviderFactory
{
public:
    std::unique_ptr<LlmProvider> createLlm(const QString &, const Json &config) override
    {
        return std::make_unique<EchoProvider>(QString::fromStdString(config.value("api_key", std::string())));
    }
};

ChatRequest ask(const QString &text)
{
    ChatRequest r;
    r.messages = {ChatMessage::system(QStringLiteral("Be brief.")), ChatMessage::user(text)};
    return r;
}

Json recordConfig(const QString &cassette)
{
    return Json{{"mode", "record"},
                {"cassette", cassette},
                {"llm", {{"provider", "echo"}, {"config", {{"api_key", "sk-echo-SECRET-42"}}}}}};
}

ErrorKind kindOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.kind();
    }
    return ErrorKind::Internal;
}

} // namespace

class TestLlmReplay : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        PluginRegistry::instance().registerLlmFactory(QStringLiteral("echo"), std::make_shared<EchoFactory>());
        QVERIFY(PluginRegistry::instance().hasKey(PluginRegistry::Kind::Llm, QStringLiteral("replay")));
    }

    void recordsThenReplaysWithoutTheProvider()
    {
        test::TempStore dir;
        const QString cassette = dir.path(QStringLiteral("c.jsonl"));
        {
            auto rec = PluginRegistry::instance().createLlm(QStringLiteral("replay"), recordConfig(cassette));
            QCOMPARE(rec->id(), QStringLiteral("replay/echo/v1"));
            QVERIFY(rec->supportsFunctionCalling());
            ChatRequest withTool = ask(QStringLiteral("look it up"));
            withTool.tools.push_back(ToolSpec{QStringLiteral("search"), QStringLiteral("Search."), Json::object()});
            QCOMPARE(rec->chat(ask(QStringLiteral("hello"))).result().text, QStringLiteral("echo: hello #1"));
            QCOMPARE(rec->chat(withTool).result().toolCalls.size(), size_t(1));
            QCOMPARE(rec->chat(ask(QStringLiteral("hello"))).result().text, QStringLiteral("echo: hello #3"));
        }
        QFile f(cassette);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        QCOMPARE(bytes.count('\n'), 3);
        QVERIFY2(!bytes.contains("sk-echo-SECRET-42"), "the API key reached the cassette");

        // Unregister the recorded provider: replay must not need it.
        PluginRegistry::instance().unregister(PluginRegistry::Kind::Llm, QStringLiteral("echo"));
        auto rep = PluginRegistry::instance().createLlm(QStringLiteral("replay"), Json{{"cassette", cassette.toStdString()}});
        QCOMPARE(rep->id(), QStringLiteral("replay/echo-v1"));
        // Identical requests: in recorded order, then the last again.
        QCOMPARE(rep->chat(ask(QStringLiteral("hello"))).result().text, QStringLiteral("echo: hello #1"));
        QCOMPARE(rep->chat(ask(QStringLiteral("hello"))).result().text, QStringLiteral("echo: hello #3"));
        QCOMPARE(rep->chat(ask(QStringLiteral("hello"))).result().text, QStringLiteral("echo: hello #3"));
        ChatRequest withTool = ask(QStringLiteral("look it up"));
        withTool.tools.push_back(ToolSpec{QStringLiteral("search"), QStringLiteral("Search."), Json::object()});
        const ChatResponse tool = rep->chat(withTool).result();
        QCOMPARE(tool.toolCalls.size(), size_t(1));
        QCOMPARE(tool.toolCalls[0].name, QStringLiteral("search"));
        QCOMPARE(tool.toolCalls[0].arguments, (Json{{"q", "x"}}));
        QCOMPARE(tool.usage.promptTokens, 7);

        // The same prompt without the tool is another request.
        ChatRequest other = ask(QStringLiteral("look it up"));
        try {
            rep->chat(other).result();
            QFAIL("an unmatched request was answered");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::NotFound);
            QVERIFY(e.message().contains(QStringLiteral("look it up")));
            QVERIFY(e.message().contains(cassette));
        }
        PluginRegistry::instance().registerLlmFactory(QStringLiteral("echo"), std::make_shared<EchoFactory>());
    }

    void streamingDeltas()
    {
        test::TempStore dir;
        const QString cassette = dir.path(QStringLiteral("s.jsonl"));
        ChatRequest req = ask(QStringLiteral("stream me"));
        req.stream = true;
        {
            auto rec = PluginRegistry::instance().createLlm(QStringLiteral("replay"), recordConfig(cassette));
            QSignalSpy deltas(rec.get(), &LlmProvider::textDelta);
            QCOMPARE(rec->chat(req).result().text, QStringLiteral("echo: stream me #1"));
            QCOMPARE(deltas.count(), 2); // forwarded from the recorded provider
            QCOMPARE(deltas[0][0].toString() + deltas[1][0].toString(), QStringLiteral("echo: stream me #1"));
        }
        auto rep = PluginRegistry::instance().createLlm(QStringLiteral("replay"), Json{{"cassette", cassette.toStdString()}});
        QSignalSpy deltas(rep.get(), &LlmProvider::textDelta);
        QCOMPARE(rep->chat(req).result().text, QStringLiteral("echo: stream me #1"));
        QCOMPARE(deltas.count(), 1);
        // The stream flag is not part of the match.
        req.stream = false;
        QCOMPARE(rep->chat(req).result().text, QStringLiteral("echo: stream me #1"));
        QCOMPARE(deltas.count(), 1);
    }

    void badConfiguration_data()
    {
        QTest::addColumn<QByteArray>("config");
        QTest::addColumn<int>("kind");
        QTest::newRow("no cassette") << QByteArray(R"({"mode": "replay"})") << int(ErrorKind::InvalidArgument);
        QTest::newRow("bad mode") << QByteArray(R"({"cassette": "x.jsonl", "mode": "rewind"})") << int(ErrorKind::InvalidArgument);
        QTest::newRow("record without llm") << QByteArray(R"({"cassette": "x.jsonl", "mode": "record"})") << int(ErrorKind::InvalidArgument);
        QTest::newRow("unknown key") << QByteArray(R"({"cassette": "x.jsonl", "speed": 2})") << int(ErrorKind::InvalidArgument);
        QTest::newRow("missing cassette file") << QByteArray(R"({"cassette": "/nonexistent/none.jsonl"})") << int(ErrorKind::NotFound);
        QTest::newRow("record itself") << QByteArray(R"({"cassette": "x.jsonl", "mode": "record", "llm": "replay/x"})") << int(ErrorKind::InvalidArgument);
    }

    void badConfiguration()
    {
        QFETCH(QByteArray, config);
        QFETCH(int, kind);
        const Json j = Json::parse(config.toStdString());
        QCOMPARE(int(kindOf([&] { PluginRegistry::instance().createLlm(QStringLiteral("replay"), j); })), kind);
    }

    void malformedCassette()
    {
        test::TempStore dir;
        const QString cassette = dir.path(QStringLiteral("bad.jsonl"));
        QFile f(cassette);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"request\": {}, \"response\": {}}\n\nnot json\n");
        f.close();
        try {
            PluginRegistry::instance().createLlm(QStringLiteral("replay"), Json{{"cassette", cassette.toStdString()}});
            QFAIL("a malformed cassette was accepted");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
            QVERIFY2(e.message().contains(QStringLiteral("Line 3")), qPrintable(e.message()));
        }
    }
};

QTEST_GUILESS_MAIN(TestLlmReplay)
#include "test_llm_replay.moc"
