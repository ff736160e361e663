// The ollama LLM plugin against a scripted server speaking Ollama's native API (POST /api/chat):
// the request as sent field by field, every reply shape, NDJSON streaming with its deltas in order,
// structured output through "format", Ollama's own error replies, dropped streams, malformed
// replies, and an API key that never reaches error texts or logs.

#include "chat_outcome.h"
#include "log_capture.h"
#include "scripted_http_server.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>

#include <QLoggingCategory>
#include <QMutex>
#include <QSignalSpy>
#include <QTcpSocket>
#include <QtTest>
#include <memory>
#include <optional>

using namespace mneme;
using mneme::test::LogCapture;
using mneme::test::Outcome;
using mneme::test::outcomeOf;
using mneme::test::ask;
using mneme::test::RecordedRequest;
using mneme::test::ScriptedHttpServer;
using mneme::test::ScriptedReply;

// Payloads are raw string literals, except where a JSON string holds ', #, //, /* or a backslash:
// moc (Qt 6.4) misreads such raw strings and then finds no test class, so those are ordinary literals.
#define QCOMPARE_JSON(actual, expected) \
    QCOMPARE(QString::fromStdString((actual).dump()), QString::fromStdString((expected).dump()))

namespace {

const std::string Secret = "sk-ollama-SECRET-7f3a9c21";

Json parsed(const char *text)
{
    return Json::parse(text);
}

std::unique_ptr<LlmProvider> ollamaAt(const ScriptedHttpServer &server, Json config = Json::object())
{
    if (!config.contains("base_url"))
        config["base_url"] = server.baseUrl().toString().toStdString();
    if (!config.contains("max_retries"))
        config["max_retries"] = 0;
    if (!config.contains("timeout"))
        config["timeout"] = 10;
    return PluginRegistry::instance().createLlm(QStringLiteral("ollama"), config);
}

QByteArray line(const Json &j)
{
    return QByteArray::fromStdString(j.dump());
}

QByteArray dumped(const Json &j)
{
    return line(j);
}

// A complete non-streamed Ollama reply.
QByteArray reply(const Json &message, const char *doneReason = "stop", int prompt = 26, int eval = 9)
{
    return line({{"model", "llama3.2"},
                 {"created_at", "2026-11-22T02:50:07.414671Z"},
                 {"message", message},
                 {"done", true},
                 {"done_reason", doneReason},
                 {"total_duration", 174560334},
                 {"load_duration", 101397084},
                 {"prompt_eval_count", prompt},
                 {"prompt_eval_duration", 13074791},
                 {"eval_count", eval},
                 {"eval_duration", 52479709}});
}

} // namespace

class TestLlmOllama : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        // The machine's own Ollama settings must not leak into the tests.
        qunsetenv("OLLAMA_HOST");
        qunsetenv("OLLAMA_API_KEY");
        QVERIFY(PluginRegistry::instance().hasKey(PluginRegistry::Kind::Llm, QStringLiteral("ollama")));
    }

    void identityAndCapabilities()
    {
        ScriptedHttpServer server;
        auto llm = ollamaAt(server, {{"model", "qwen2.5:7b"}});
        QCOMPARE(llm->id(), QStringLiteral("ollama/qwen2.5:7b"));
        QCOMPARE(llm->capabilities(), LlmProvider::Capability::Tools | LlmProvider::Capability::JsonSchema
                                          | LlmProvider::Capability::Streaming | LlmProvider::Capability::ParallelTools);
        QVERIFY(llm->supportsFunctionCalling());

        auto byDefault = PluginRegistry::instance().createLlm(QStringLiteral("ollama"), Json::object());
        QCOMPARE(byDefault->id(), QStringLiteral("ollama/llama3.2"));
    }

    void unknownConfigKeyIsRefused()
    {
        try {
            PluginRegistry::instance().createLlm(QStringLiteral("ollama"), {{"num_gpu_layers", 3}});
            QFAIL("an unknown key was accepted");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
            QVERIFY2(e.message().contains(QLatin1String("num_gpu_layers")) && e.message().contains(QLatin1String("num_ctx")),
                     qPrintable(e.message()));
        }
        try {
            PluginRegistry::instance().createLlm(QStringLiteral("ollama"), {{"options", "fast"}});
            QFAIL("a non-object options was accepted");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
            QVERIFY2(e.message().contains(QLatin1String("options")), qPrintable(e.message()));
        }
    }

    // A whole conversation: system, user, an assistant turn with two parallel tool calls, both
    // results (one naming its tool, one answering by call id only), the tools, sampling options.
    void requestCarriesEveryField()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(reply({{"role", "assistant"}, {"content", "Sunny in both."}})));
        auto llm = ollamaAt(server, {{"model", "qwen2.5:7b"},
                                     {"num_ctx", 8192},
                                     {"keep_alive", "10m"},
                                     {"options", {{"seed", 42}, {"top_p", 0.9}}}});

        ChatRequest r;
        r.messages = {
            ChatMessage::system(QStringLiteral("You are terse.")),
            ChatMessage::user(QStringLiteral("Weather in Paris and Oslo?")),
            ChatMessage::assistant(QString(), {ToolCall{QStringLiteral("call_a"), QStringLiteral("get_weather"), Json{{"city", "Paris"}}},
                                               ToolCall{QStringLiteral("call_b"), QStringLiteral("get_weather"), Json{{"city", "Oslo"}}}}),
            ChatMessage::toolResult(QStringLiteral("call_a"), QStringLiteral("get_weather"), QStringLiteral("{\"temp\":21}")),
            ChatMessage::toolResult(QStringLiteral("call_b"), QString(), QStringLiteral("12 degrees")),
        };
        r.tools = {ToolSpec{QStringLiteral("get_weather"), QStringLiteral("Current weather of a city."),
                            parsed(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})")}};
        r.temperature = 0.25;
        r.maxTokens = 200;
        r.stop = {QStringLiteral("END")};

        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->text, QStringLiteral("Sunny in both."));

        const QList<RecordedRequest> requests = server.requests();
        QCOMPARE(requests.size(), 1);
        const RecordedRequest &sent = requests.front();
        QCOMPARE(sent.method, QByteArray("POST"));
        QCOMPARE(sent.path, QByteArray("/api/chat"));
        QVERIFY(sent.header("content-type").startsWith("application/json"));
        QCOMPARE(sent.header("accept"), QByteArray("application/json"));
        QVERIFY2(sent.header("authorization").isEmpty(), "a local Ollama needs no key, none was configured");

        const Json body = sent.json();
        QCOMPARE_JSON(body["model"], Json("qwen2.5:7b"));
        QCOMPARE_JSON(body["stream"], Json(false));
        Json expectedMessages = parsed(R"([
            {"role":"system","content":"You are terse."},
            {"role":"user","content":"Weather in Paris and Oslo?"},
            {"role":"assistant","content":"","tool_calls":[
                {"function":{"name":"get_weather","arguments":{"city":"Paris"}}},
                {"function":{"name":"get_weather","arguments":{"city":"Oslo"}}}]},
            {"role":"tool","content":"TOOL_RESULT","tool_name":"get_weather"},
            {"role":"tool","content":"12 degrees","tool_name":"get_weather"}])");
        expectedMessages[3]["content"] = "{\"temp\":21}"; // the tool's result, verbatim
        QCOMPARE_JSON(body["messages"], expectedMessages);
        QCOMPARE_JSON(body["tools"], parsed(R"([{"type":"function","function":{"name":"get_weather",
            "description":"Current weather of a city.",
            "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}])"));
        QCOMPARE_JSON(body["options"], parsed(R"({"temperature":0.25,"num_predict":200,"stop":["END"],
            "num_ctx":8192,"seed":42,"top_p":0.9})"));
        QCOMPARE_JSON(body["keep_alive"], Json("10m"));
        QVERIFY(!body.contains("format"));
        QVERIFY(!body.contains("think"));
        QCOMPARE(body.size(), size_t(6)); // model, messages, stream, tools, options, keep_alive
    }

    // The smallest request: no options object at all, stream false, the config's temperature used.
    void minimalRequestAndConfigDefaults()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(reply({{"role", "assistant"}, {"content", "hi"}})));
        server.enqueue(ScriptedReply::json(reply({{"role", "assistant"}, {"content", "hi"}})));
        auto plain = ollamaAt(server);
        QVERIFY(outcomeOf(plain->chat(ask(QStringLiteral("hello")))).response);
        auto tuned = ollamaAt(server, {{"temperature", 0.5}, {"max_tokens", 64}, {"think", false}});
        QVERIFY(outcomeOf(tuned->chat(ask(QStringLiteral("hello")))).response);

        const QList<RecordedRequest> requests = server.requests();
        QCOMPARE_JSON(requests[0].json(), parsed(R"({"model":"llama3.2","stream":false,
            "messages":[{"role":"user","content":"hello"}]})"));
        QCOMPARE_JSON(requests[1].json()["options"], parsed(R"({"temperature":0.5,"num_predict":64})"));
        QCOMPARE_JSON(requests[1].json()["think"], Json(false));
    }

    // Ollama cannot force a tool; "none" withholds the tools, the other choices offer them.
    void toolChoice_data()
    {
        QTest::addColumn<QString>("choice");
        QTest::addColumn<bool>("toolsSent");
        QTest::newRow("unset") << QString() << true;
        QTest::newRow("auto") << QStringLiteral("auto") << true;
        QTest::newRow("required") << QStringLiteral("required") << true;
        QTest::newRow("by name") << QStringLiteral("lookup") << true;
        QTest::newRow("none") << QStringLiteral("none") << false;
    }
    void toolChoice()
    {
        QFETCH(QString, choice);
        QFETCH(bool, toolsSent);
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(reply({{"role", "assistant"}, {"content", "ok"}})));
        auto llm = ollamaAt(server);
        ChatRequest r = ask(QStringLiteral("find it"));
        r.tools = {ToolSpec{QStringLiteral("lookup"), QStringLiteral("Look up."), parsed(R"({"type":"object","properties":{"q":{"type":"string"}}})")}};
        r.toolChoice = choice;
        QVERIFY(outcomeOf(llm->chat(r)).response);
        QCOMPARE(server.requests().front().json().contains("tools"), toolsSent);
    }

    void apiKeyIsSentAsBearerToken()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(reply({{"role", "assistant"}, {"content", "ok"}})));
        auto llm = ollamaAt(server, {{"api_key", Secret}});
        QVERIFY(outcomeOf(llm->chat(ask(QStringLiteral("hi")))).response);
        QCOMPARE(server.requests().front().header("authorization"), QByteArray("Bearer ") + QByteArray::fromStdString(Secret));
        QVERIFY(!server.requests().front().path.contains(QByteArray::fromStdString(Secret)));
    }

    // The ways a server address is written all reach {root}/api/chat.
    void baseUrlForms_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("suffix");
        QTest::addColumn<bool>("withScheme");
        QTest::newRow("root") << "base_url"
                              << "" << true;
        QTest::newRow("trailing slash") << "base_url"
                                        << "/" << true;
        QTest::newRow("ends in /api") << "base_url"
                                      << "/api" << true;
        QTest::newRow("ends in /api/chat") << "url"
                                           << "/api/chat/" << true;
        QTest::newRow("ends in /v1") << "api_base"
                                     << "/v1" << true;
        QTest::newRow("host:port without scheme") << "host"
                                                  << "" << false;
        QTest::newRow("OLLAMA_HOST without scheme") << "OLLAMA_HOST"
                                                    << "" << false;
        QTest::newRow("OLLAMA_HOST with scheme") << "OLLAMA_HOST"
                                                 << "/" << true;
    }
    void baseUrlForms()
    {
        QFETCH(QString, key);
        QFETCH(QString, suffix);
        QFETCH(bool, withScheme);
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(reply({{"role", "assistant"}, {"content", "ok"}})));
        QString base = server.baseUrl().toString() + suffix;
        if (!withScheme)
            base = base.mid(base.indexOf(QLatin1String("://")) + 3);
        Json config = {{"max_retries", 0}, {"timeout", 10}};
        if (key == QLatin1String("OLLAMA_HOST"))
            qputenv("OLLAMA_HOST", base.toUtf8());
        else
            config[key.toStdString()] = base.toStdString();
        auto llm = PluginRegistry::instance().createLlm(QStringLiteral("ollama"), config);
        qunsetenv("OLLAMA_HOST");
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(server.requests().front().path, QByteArray("/api/chat"));
    }

    // OLLAMA_HOST=some-host means some-host:11434, as for the ollama command.
    void bareHostGetsOllamaPort()
    {
        {
            QTcpSocket probe;
            probe.connectToHost(QStringLiteral("127.0.0.1"), 11434);
            if (probe.waitForConnected(300))
                QSKIP("something listens on 127.0.0.1:11434; the refused connection cannot be observed");
        }
        auto llm = PluginRegistry::instance().createLlm(QStringLiteral("ollama"), {{"host", "127.0.0.1"}, {"max_retries", 0}});
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::Network);
        QVERIFY2(o.error->message().contains(QLatin1String("http://127.0.0.1:11434/api/chat")), qPrintable(o.error->message()));
    }

    void replyShapes_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("finish");
        QTest::addColumn<QByteArray>("calls"); // [[name, arguments], ...]
        QTest::addColumn<int>("promptTokens");
        QTest::addColumn<int>("completionTokens");
        QTest::addColumn<QString>("model");

        QTest::newRow("plain text")
            << reply({{"role", "assistant"}, {"content", "The sky scatters blue light."}})
            << "The sky scatters blue light."
            << "stop" << QByteArray("[]") << 26 << 9 << "llama3.2";
        QTest::newRow("cut at num_predict")
            << reply({{"role", "assistant"}, {"content", "The sky sca"}}, "length", 26, 4)
            << "The sky sca"
            << "length" << QByteArray("[]") << 26 << 4 << "llama3.2";
        QTest::newRow("one tool call")
            << reply(parsed(R"({"role":"assistant","content":"","tool_calls":[
                   {"function":{"name":"get_weather","arguments":{"city":"Tokyo"}}}]})"))
            << ""
            << "tool_calls" << QByteArray(R"([["get_weather",{"city":"Tokyo"}]])") << 26 << 9 << "llama3.2";
        QTest::newRow("parallel tool calls with text")
            << reply(parsed(R"({"role":"assistant","content":"Checking both.","tool_calls":[
                   {"function":{"index":0,"name":"get_weather","arguments":{"city":"Paris","unit":"celsius"}}},
                   {"function":{"index":1,"name":"get_time","arguments":{"zone":"Europe/Oslo"}}}]})"))
            << "Checking both."
            << "tool_calls"
            << QByteArray(R"([["get_weather",{"city":"Paris","unit":"celsius"}],["get_time",{"zone":"Europe/Oslo"}]])") << 26 << 9 << "llama3.2";
        QTest::newRow("arguments as a JSON string")
            << reply({{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({{{"function", {{"name", "add"}, {"arguments", "{\"a\":1,\"b\":2}"}}}}})}})
            << ""
            << "tool_calls" << QByteArray(R"([["add",{"a":1,"b":2}]])") << 26 << 9 << "llama3.2";
        QTest::newRow("tool call without arguments")
            << reply(parsed(R"({"role":"assistant","content":"","tool_calls":[{"function":{"name":"now"}}]})"))
            << ""
            << "tool_calls" << QByteArray(R"([["now",{}]])") << 26 << 9 << "llama3.2";
        QTest::newRow("no counts, no done_reason, no model")
            << line(parsed(R"({"message":{"role":"assistant","content":"ok"},"done":true})"))
            << "ok"
            << "stop" << QByteArray("[]") << 0 << 0 << "qwen2.5:7b";
    }
    void replyShapes()
    {
        QFETCH(QByteArray, body);
        QFETCH(QString, text);
        QFETCH(QString, finish);
        QFETCH(QByteArray, calls);
        QFETCH(int, promptTokens);
        QFETCH(int, completionTokens);
        QFETCH(QString, model);
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(body));
        auto llm = ollamaAt(server, {{"model", "qwen2.5:7b"}});
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("go"))));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->text, text);
        QCOMPARE(o.response->finishReason, finish);
        QCOMPARE(o.response->usage.promptTokens, promptTokens);
        QCOMPARE(o.response->usage.completionTokens, completionTokens);
        QCOMPARE(o.response->model, model);
        QVERIFY(o.response->structured.is_null());
        const Json expected = Json::parse(calls.toStdString());
        QCOMPARE(o.response->toolCalls.size(), expected.size());
        QSet<QString> ids;
        for (size_t i = 0; i < expected.size(); ++i) {
            const ToolCall &c = o.response->toolCalls[i];
            QCOMPARE(c.name, QString::fromStdString(expected[i][0].get<std::string>()));
            QCOMPARE_JSON(c.arguments, expected[i][1]);
            QVERIFY2(!c.id.isEmpty(), "Ollama sends no call ids; one must be made up");
            ids.insert(c.id);
        }
        QCOMPARE(ids.size(), qsizetype(expected.size()));
    }

    // A call id from the server (newer Ollama versions send one) is kept.
    void serverCallIdIsKept()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(reply(parsed(R"({"role":"assistant","content":"","tool_calls":[
            {"id":"call_srv_1","function":{"name":"now","arguments":{}}}]})"))));
        auto llm = ollamaAt(server);
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("time?"))));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->toolCalls.at(0).id, QStringLiteral("call_srv_1"));
    }

    // The schema goes natively in "format"; no instruction is added to the messages.
    void structuredOutputUsesFormat()
    {
        const Json schema = parsed(R"({"type":"object","properties":{"name":{"type":"string"},
            "age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false})");
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(reply({{"role", "assistant"}, {"content", "{\"name\": \"Ada\", \"age\": 36}"}})));
        auto llm = ollamaAt(server);
        ChatRequest r = ask(QStringLiteral("Who wrote the first program?"));
        r.responseSchema = schema;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE_JSON(o.response->structured, parsed(R"({"name":"Ada","age":36})"));

        const Json body = server.requests().front().json();
        QCOMPARE_JSON(body["format"], schema);
        QCOMPARE_JSON(body["messages"], parsed(R"([{"role":"user","content":"Who wrote the first program?"}])"));
    }

    // A reply that misses the schema gets one correction round; the usage of both counts.
    void structuredOutputIsRepairedOnce()
    {
        const Json schema = parsed(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})");
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(reply({{"role", "assistant"}, {"content", "{\"n\": \"three\"}"}}, "stop", 10, 5)));
        server.enqueue(ScriptedReply::json(reply({{"role", "assistant"}, {"content", "{\"n\": 3}"}}, "stop", 30, 4)));
        auto llm = ollamaAt(server);
        ChatRequest r = ask(QStringLiteral("How many?"));
        r.responseSchema = schema;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE_JSON(o.response->structured, parsed(R"({"n":3})"));
        QCOMPARE(o.response->usage.promptTokens, 40);
        QCOMPARE(o.response->usage.completionTokens, 9);
        const QList<RecordedRequest> requests = server.requests();
        QCOMPARE(requests.size(), 2);
        const Json second = requests[1].json();
        QCOMPARE_JSON(second["format"], schema);
        QCOMPARE(second["messages"].size(), size_t(3));
        QCOMPARE_JSON(second["messages"][1], Json({{"role", "assistant"}, {"content", "{\"n\": \"three\"}"}}));
    }

    void streamsTextInOrder()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::ndjson({
            line(parsed(R"({"model":"llama3.2","created_at":"2026-11-22T02:50:07Z","message":{"role":"assistant","content":"The"},"done":false})")),
            line(parsed(R"({"model":"llama3.2","created_at":"2026-11-22T02:50:07Z","message":{"role":"assistant","content":" sky"},"done":false})")),
            line(parsed(R"({"model":"llama3.2","created_at":"2026-11-22T02:50:07Z","message":{"role":"assistant","content":" is blue."},"done":false})")),
            line(parsed(R"({"model":"llama3.2","created_at":"2026-11-22T02:50:08Z","message":{"role":"assistant","content":""},
                "done":true,"done_reason":"stop","total_duration":4883583458,"prompt_eval_count":26,"eval_count":290})")),
        }));
        auto llm = ollamaAt(server);
        QSignalSpy text(llm.get(), &LlmProvider::textDelta);
        QSignalSpy calls(llm.get(), &LlmProvider::toolCallDelta);
        ChatRequest r = ask(QStringLiteral("Why is the sky blue?"));
        r.stream = true;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));

        QStringList pieces;
        for (const QList<QVariant> &args : text)
            pieces << args.at(0).toString();
        QCOMPARE(pieces, (QStringList{QStringLiteral("The"), QStringLiteral(" sky"), QStringLiteral(" is blue.")}));
        QCOMPARE(calls.count(), 0);
        QCOMPARE(o.response->text, QStringLiteral("The sky is blue."));
        QCOMPARE(o.response->finishReason, QStringLiteral("stop"));
        QCOMPARE(o.response->usage.promptTokens, 26);
        QCOMPARE(o.response->usage.completionTokens, 290);
        QCOMPARE(o.response->model, QStringLiteral("llama3.2"));

        const RecordedRequest sent = server.requests().front();
        QCOMPARE(sent.path, QByteArray("/api/chat"));
        QCOMPARE(sent.header("accept"), QByteArray("application/x-ndjson"));
        QCOMPARE_JSON(sent.json()["stream"], Json(true));
    }

    // Tool calls arrive whole in one line: one delta per call with all of its arguments.
    void streamsParallelToolCalls()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::ndjson({
            line(parsed(R"({"model":"qwen3","message":{"role":"assistant","content":"Let me check."},"done":false})")),
            line(parsed(R"({"model":"qwen3","message":{"role":"assistant","content":"","tool_calls":[
                {"function":{"index":0,"name":"get_weather","arguments":{"city":"Paris"}}},
                {"function":{"index":1,"name":"get_weather","arguments":{"city":"Oslo"}}}]},"done":false})")),
            line(parsed(R"({"model":"qwen3","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop",
                "prompt_eval_count":120,"eval_count":31})")),
        }));
        auto llm = ollamaAt(server, {{"model", "qwen3"}});
        QSignalSpy text(llm.get(), &LlmProvider::textDelta);
        QSignalSpy calls(llm.get(), &LlmProvider::toolCallDelta);
        ChatRequest r = ask(QStringLiteral("Weather in Paris and Oslo?"));
        r.tools = {ToolSpec{QStringLiteral("get_weather"), QStringLiteral("Weather."), parsed(R"({"type":"object","properties":{"city":{"type":"string"}}})")}};
        r.stream = true;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));

        QCOMPARE(text.count(), 1);
        QCOMPARE(text.at(0).at(0).toString(), QStringLiteral("Let me check."));
        QCOMPARE(calls.count(), 2);
        for (int i = 0; i < 2; ++i) {
            QCOMPARE(calls.at(i).at(0).toInt(), i);
            QVERIFY(!calls.at(i).at(1).toString().isEmpty());
            QCOMPARE(calls.at(i).at(2).toString(), QStringLiteral("get_weather"));
        }
        QCOMPARE_JSON(Json::parse(calls.at(0).at(3).toString().toStdString()), parsed(R"({"city":"Paris"})"));
        QCOMPARE_JSON(Json::parse(calls.at(1).at(3).toString().toStdString()), parsed(R"({"city":"Oslo"})"));

        QCOMPARE(o.response->text, QStringLiteral("Let me check."));
        QCOMPARE(o.response->finishReason, QStringLiteral("tool_calls"));
        QCOMPARE(o.response->toolCalls.size(), size_t(2));
        QCOMPARE(o.response->toolCalls[0].id, calls.at(0).at(1).toString());
        QCOMPARE(o.response->toolCalls[1].id, calls.at(1).at(1).toString());
        QCOMPARE_JSON(o.response->toolCalls[1].arguments, parsed(R"({"city":"Oslo"})"));
        QCOMPARE(o.response->usage.completionTokens, 31);
    }

    // A stream that reaches the length limit reports it.
    void streamCutAtLength()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::ndjson({
            line(parsed(R"({"model":"llama3.2","message":{"role":"assistant","content":"Once upon"},"done":false})")),
            line(parsed(R"({"model":"llama3.2","message":{"role":"assistant","content":""},"done":true,"done_reason":"length","prompt_eval_count":5,"eval_count":2})")),
        }));
        auto llm = ollamaAt(server);
        ChatRequest r = ask(QStringLiteral("A story"));
        r.stream = true;
        r.maxTokens = 2;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->finishReason, QStringLiteral("length"));
        QCOMPARE_JSON(server.requests().front().json()["options"], parsed(R"({"num_predict":2})"));
    }

    // {"error": "..."} in the middle of a stream fails the chat with Ollama's message, after the
    // text that came before it was delivered.
    void errorLineMidStream()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::ndjson({
            line(parsed(R"({"model":"llama3.2","message":{"role":"assistant","content":"Partial"},"done":false})")),
            line(parsed(R"({"error":"an error was encountered while running the model: unexpected EOF"})")),
        }));
        auto llm = ollamaAt(server);
        QSignalSpy text(llm.get(), &LlmProvider::textDelta);
        ChatRequest r = ask(QStringLiteral("go"));
        r.stream = true;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::ServerError);
        QVERIFY2(o.error->message().contains(QLatin1String("an error was encountered while running the model: unexpected EOF")),
                 qPrintable(o.error->message()));
        QVERIFY2(o.error->message().contains(QLatin1String("ollama chat (llama3.2)")), qPrintable(o.error->message()));
        QCOMPARE(text.count(), 1);
    }

    void droppedStreamIsANetworkError()
    {
        ScriptedHttpServer server;
        ScriptedReply cut = ScriptedReply::ndjson({
                                                      line(parsed(R"({"model":"llama3.2","message":{"role":"assistant","content":"Half"},"done":false})")),
                                                      line(parsed(R"({"model":"llama3.2","message":{"role":"assistant","content":" a reply"},"done":false})")),
                                                  },
                                                  20);
        // Paced like a real stream: closed in the same packet as the last chunk, the cut is sometimes
        // taken by Qt for the end of the body.
        cut.dropAfterChunks = true;
        server.enqueue(cut);
        auto llm = ollamaAt(server, {{"max_retries", 2}});
        QSignalSpy text(llm.get(), &LlmProvider::textDelta);
        ChatRequest r = ask(QStringLiteral("go"));
        r.stream = true;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::Network);
        QCOMPARE(text.count(), 2);
        QCOMPARE(server.requestCount(), 1); // a stream that already delivered text is not retried
    }

    // Ollama's error replies ({"error": "..."}) by status, with Ollama's message in the text.
    void errorReplies_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("quoted");
        QTest::newRow("model not found") << 404 << QByteArray("{\"error\":\"model 'mistral-nemo' not found\"}")
                                         << int(ErrorKind::BadRequest) << "model 'mistral-nemo' not found";
        QTest::newRow("bad option") << 400 << QByteArray(R"({"error":"json: cannot unmarshal string into Go struct field Options.num_predict of type int"})")
                                    << int(ErrorKind::BadRequest) << "cannot unmarshal string";
        QTest::newRow("does not support tools") << 400 << QByteArray(R"({"error":"registry.ollama.ai/library/gemma2:latest does not support tools"})")
                                                << int(ErrorKind::BadRequest) << "does not support tools";
        QTest::newRow("context too long") << 400 << QByteArray(R"({"error":"the input length exceeds the maximum context length"})")
                                          << int(ErrorKind::ContextLength) << "exceeds the maximum context length";
        QTest::newRow("hosted: unauthorized") << 401 << QByteArray(R"({"error":"unauthorized"})")
                                              << int(ErrorKind::Authentication) << "unauthorized";
        QTest::newRow("runner crashed") << 500 << QByteArray(R"({"error":"llama runner process has terminated: signal: killed"})")
                                        << int(ErrorKind::ServerError) << "llama runner process has terminated";
        QTest::newRow("busy") << 503 << QByteArray(R"({"error":"server busy, please try again.  maximum pending requests exceeded"})")
                              << int(ErrorKind::ServerError) << "server busy";
        QTest::newRow("rate limited") << 429 << QByteArray(R"({"error":"too many requests"})")
                                      << int(ErrorKind::RateLimited) << "too many requests";
    }
    void errorReplies()
    {
        QFETCH(int, status);
        QFETCH(QByteArray, body);
        QFETCH(int, kind);
        QFETCH(QString, quoted);
        for (const bool stream : {false, true}) {
            ScriptedHttpServer server;
            server.enqueue(ScriptedReply::json(body, status));
            auto llm = ollamaAt(server, {{"model", "mistral-nemo"}});
            ChatRequest r = ask(QStringLiteral("hi"));
            r.stream = stream;
            const Outcome o = outcomeOf(llm->chat(r));
            QVERIFY2(o.error, qPrintable(o.describe()));
            QCOMPARE(int(o.error->kind()), kind);
            QCOMPARE(o.error->httpStatus(), status);
            QVERIFY2(o.error->message().contains(quoted), qPrintable(o.error->message()));
            QVERIFY2(o.error->message().contains(QLatin1String("ollama chat (mistral-nemo)")), qPrintable(o.error->message()));
        }
    }

    // A missing model should say how to get it. The HTTP layer words 404 errors (" Check the model
    // name and the base URL."); a plugin has no hook to add "ollama pull <model>" to them.
    void modelNotFoundSuggestsPull()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json("{\"error\":\"model 'phi4' not found\"}", 404));
        auto llm = ollamaAt(server, {{"model", "phi4"}});
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::BadRequest);
        QVERIFY2(o.error->message().contains(QLatin1String("model 'phi4' not found")), qPrintable(o.error->message()));
        QVERIFY2(o.error->message().contains(QLatin1String("ollama pull phi4")), qPrintable(o.error->message()));
    }

    void malformedReplies_data()
    {
        QTest::addColumn<bool>("stream");
        QTest::addColumn<QByteArray>("body");
        QTest::newRow("not JSON") << false << QByteArray("<<not json>>");
        QTest::newRow("truncated JSON") << false << QByteArray("{\"model\":\"llama3.2\",\"message\":{\"role\":\"assist");
        QTest::newRow("no message") << false << QByteArray(R"({"model":"llama3.2","response":"this is /api/generate","done":true})");
        QTest::newRow("message not an object") << false << QByteArray(R"({"model":"llama3.2","message":"hi","done":true})");
        QTest::newRow("stream line not JSON") << true << QByteArray("{\"message\":{\"content\":\"a\"},\"done\":false}\nthis is not json\n");
    }
    void malformedReplies()
    {
        QFETCH(bool, stream);
        QFETCH(QByteArray, body);
        ScriptedHttpServer server;
        ScriptedReply bad = stream ? ScriptedReply::ndjson({body}) : ScriptedReply::json(body);
        server.enqueue(bad);
        auto llm = ollamaAt(server);
        ChatRequest r = ask(QStringLiteral("hi"));
        r.stream = stream;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::MalformedReply);
        QVERIFY2(o.error->message().contains(QLatin1String("ollama chat (llama3.2)")), qPrintable(o.error->message()));
    }

    // The key is sent to the server and appears nowhere else: not in error texts (even when the
    // server quotes it back), not in any log line.
    void apiKeyNeverLeaks()
    {
        LogCapture logs;
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(dumped(Json{{"error", "invalid token " + Secret}}), 401));
        server.enqueue(ScriptedReply::json(reply({{"role", "assistant"}, {"content", "ok"}})));
        server.enqueue(ScriptedReply::ndjson({line(Json{{"error", "key " + Secret + " revoked"}})}));
        auto llm = ollamaAt(server, {{"api_key", Secret}});

        QStringList texts;
        const Outcome refused = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(refused.error, qPrintable(refused.describe()));
        QCOMPARE(refused.error->kind(), ErrorKind::Authentication);
        QVERIFY2(refused.error->message().contains(QLatin1String("[redacted]")), qPrintable(refused.error->message()));
        texts << refused.error->message();
        QVERIFY(outcomeOf(llm->chat(ask(QStringLiteral("hi")))).response);
        ChatRequest r = ask(QStringLiteral("hi"));
        r.stream = true;
        const Outcome streamed = outcomeOf(llm->chat(r));
        QVERIFY2(streamed.error, qPrintable(streamed.describe()));
        texts << streamed.error->message();

        QCOMPARE(server.requestCount(), 3);
        for (const RecordedRequest &sent : server.requests())
            QCOMPARE(sent.header("authorization"), QByteArray("Bearer ") + QByteArray::fromStdString(Secret));
        texts << logs.messages();
        QVERIFY2(!logs.messages().isEmpty(), "mneme.* debug logging produced nothing to check");
        for (const QString &t : texts)
            QVERIFY2(!t.contains(QString::fromStdString(Secret)), qPrintable(t));
    }
};

QTEST_GUILESS_MAIN(TestLlmOllama)
#include "test_llm_ollama.moc"
