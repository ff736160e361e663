// The gemini LLM plugin against a scripted server speaking the Gemini API
// (POST /v1beta/models/{model}:generateContent, :streamGenerateContent?alt=sse): the request as sent
// field by field, every reply shape, streaming deltas in order, function calling (parallel calls,
// Gemini's call ids and thought signatures), structured output through responseSchema with the
// JSON-schema conversion and its fallback, Gemini's own error replies, blocked prompts, dropped
// streams, malformed replies, and an API key that stays in its header: never in a URL, an error text
// or a log line.

#include "chat_outcome.h"
#include "log_capture.h"
#include "scripted_http_server.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>

#include <QLoggingCategory>
#include <QMutex>
#include <QSignalSpy>
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

const std::string Secret = "AIzaSyTEST-gemini-SECRET-0042";

Json parsed(const char *text)
{
    return Json::parse(text);
}

Json parsed(const QByteArray &text)
{
    return Json::parse(text.toStdString());
}

std::unique_ptr<LlmProvider> geminiAt(const ScriptedHttpServer &server, Json config = Json::object(),
                                      const QString &key = QStringLiteral("gemini"))
{
    if (!config.contains("base_url"))
        config["base_url"] = server.baseUrl().toString().toStdString();
    if (!config.contains("api_key"))
        config["api_key"] = Secret;
    if (!config.contains("max_retries"))
        config["max_retries"] = 0;
    if (!config.contains("timeout"))
        config["timeout"] = 10;
    return PluginRegistry::instance().createLlm(key, config);
}

QByteArray dumped(const Json &j)
{
    return QByteArray::fromStdString(j.dump());
}

// A GenerateContentResponse with one candidate.
Json candidateReply(const Json &parts, const char *finish = "STOP", int prompt = 12, int candidates = 7)
{
    Json candidate = Json::object();
    candidate["content"] = {{"role", "model"}, {"parts", parts}};
    if (finish)
        candidate["finishReason"] = finish;
    candidate["index"] = 0;
    Json body = Json::object();
    body["candidates"] = Json::array({candidate});
    body["usageMetadata"] = {{"promptTokenCount", prompt}, {"candidatesTokenCount", candidates}, {"totalTokenCount", prompt + candidates}};
    body["modelVersion"] = "gemini-2.0-flash-001";
    body["responseId"] = "mXlBabCdEfGh";
    return body;
}

QByteArray okReply(const QString &text = QStringLiteral("ok"))
{
    return dumped(candidateReply(Json::array({{{"text", text}}})));
}

// One server-sent event carrying a JSON chunk, framed as Gemini frames them.
QByteArray sseEvent(const Json &chunk)
{
    return "data: " + dumped(chunk) + "\r\n\r\n";
}

QStringList deltasOf(const QSignalSpy &spy)
{
    QStringList out;
    for (const QList<QVariant> &args : spy)
        out << args.at(0).toString();
    return out;
}

} // namespace

class TestLlmGemini : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        qunsetenv("GEMINI_API_KEY");
        qunsetenv("GOOGLE_API_KEY");
        QVERIFY(PluginRegistry::instance().hasKey(PluginRegistry::Kind::Llm, QStringLiteral("gemini")));
        QVERIFY(PluginRegistry::instance().hasKey(PluginRegistry::Kind::Llm, QStringLiteral("google")));
    }

    void identityAndCapabilities()
    {
        ScriptedHttpServer server;
        auto gemini = geminiAt(server, {{"model", "gemini-2.5-flash"}});
        QCOMPARE(gemini->id(), QStringLiteral("gemini/gemini-2.5-flash"));
        QCOMPARE(gemini->capabilities(), LlmProvider::Capability::Tools | LlmProvider::Capability::JsonSchema
                                             | LlmProvider::Capability::Streaming | LlmProvider::Capability::ParallelTools);
        auto google = PluginRegistry::instance().createLlm(QStringLiteral("google"), Json::object());
        QCOMPARE(google->id(), QStringLiteral("google/gemini-2.0-flash"));
    }

    void requestCarriesEveryField()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(okReply(QStringLiteral("Sunny in Paris, 12 degrees in Oslo."))));
        auto llm = geminiAt(server);

        ChatRequest r;
        r.messages = {
            ChatMessage::system(QStringLiteral("You are terse.")),
            ChatMessage::system(QStringLiteral("Use metric units.")),
            ChatMessage::user(QStringLiteral("Weather in Paris and Oslo?")),
            ChatMessage::assistant(QStringLiteral("Checking."),
                                   {ToolCall{QStringLiteral("call_a"), QStringLiteral("get_weather"), Json{{"city", "Paris"}}},
                                    ToolCall{QStringLiteral("call_b"), QStringLiteral("get_weather"), Json{{"city", "Oslo"}}}}),
            ChatMessage::toolResult(QStringLiteral("call_a"), QStringLiteral("get_weather"), QStringLiteral("{\"temp\": 21, \"sky\": \"clear\"}")),
            ChatMessage::toolResult(QStringLiteral("call_b"), QString(), QStringLiteral("12 degrees")),
        };
        r.tools = {ToolSpec{QStringLiteral("get_weather"), QStringLiteral("Current weather of a city."),
                            parsed(R"({"$schema":)"
                                   "\"http://json-schema.org/draft-07/schema#\""
                                   R"(,"type":"object",
                                "properties":{"city":{"type":"string","description":"City name"}},"required":["city"],
                                "additionalProperties":false})")},
                   ToolSpec{QStringLiteral("now"), QStringLiteral("Current time."), Json{{"type", "object"}, {"properties", Json::object()}}}};
        r.toolChoice = QStringLiteral("auto");
        r.temperature = 0.25;
        r.maxTokens = 200;
        r.stop = {QStringLiteral("END")};

        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));

        const QList<RecordedRequest> requests = server.requests();
        QCOMPARE(requests.size(), 1);
        const RecordedRequest &sent = requests.front();
        QCOMPARE(sent.method, QByteArray("POST"));
        QCOMPARE(sent.path, QByteArray("/v1beta/models/gemini-2.0-flash:generateContent"));
        QCOMPARE(sent.header("x-goog-api-key"), QByteArray::fromStdString(Secret));
        QVERIFY(sent.header("authorization").isEmpty());
        QVERIFY(sent.header("content-type").startsWith("application/json"));
        QCOMPARE(sent.header("accept"), QByteArray("application/json"));

        QCOMPARE_JSON(sent.json(), parsed(R"({
            "contents":[
              {"role":"user","parts":[{"text":"Weather in Paris and Oslo?"}]},
              {"role":"model","parts":[{"text":"Checking."},
                 {"functionCall":{"name":"get_weather","args":{"city":"Paris"}}},
                 {"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]},
              {"role":"user","parts":[
                 {"functionResponse":{"name":"get_weather","response":{"temp":21,"sky":"clear"}}},
                 {"functionResponse":{"name":"get_weather","response":{"result":"12 degrees"}}}]}],
            "systemInstruction":{"parts":[{"text":"You are terse."},{"text":"Use metric units."}]},
            "tools":[{"functionDeclarations":[
              {"name":"get_weather","description":"Current weather of a city.",
               "parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING","description":"City name"}},"required":["city"]}},
              {"name":"now","description":"Current time."}]}],
            "toolConfig":{"functionCallingConfig":{"mode":"AUTO"}},
            "generationConfig":{"temperature":0.25,"maxOutputTokens":200,"stopSequences":["END"]}})"));
    }

    // The smallest request, and the config's sampling settings.
    void minimalRequestAndConfigDefaults()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(okReply()));
        server.enqueue(ScriptedReply::json(okReply()));
        auto plain = geminiAt(server);
        QVERIFY(outcomeOf(plain->chat(ask(QStringLiteral("hello")))).response);
        auto tuned = geminiAt(server, {{"temperature", 0.5},
                                       {"max_tokens", 64},
                                       {"safety_settings", parsed(R"([{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_ONLY_HIGH"}])")}});
        QVERIFY(outcomeOf(tuned->chat(ask(QStringLiteral("hello")))).response);
        const QList<RecordedRequest> requests = server.requests();
        QCOMPARE_JSON(requests[0].json(), parsed(R"({"contents":[{"role":"user","parts":[{"text":"hello"}]}]})"));
        QCOMPARE_JSON(requests[1].json(), parsed(R"({"contents":[{"role":"user","parts":[{"text":"hello"}]}],
            "generationConfig":{"temperature":0.5,"maxOutputTokens":64},
            "safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_ONLY_HIGH"}]})"));
    }

    void toolChoice_data()
    {
        QTest::addColumn<QString>("choice");
        QTest::addColumn<QByteArray>("toolConfig"); // empty: no toolConfig
        QTest::newRow("unset") << QString() << QByteArray();
        QTest::newRow("auto") << "auto" << QByteArray(R"({"functionCallingConfig":{"mode":"AUTO"}})");
        QTest::newRow("none") << "none" << QByteArray(R"({"functionCallingConfig":{"mode":"NONE"}})");
        QTest::newRow("required") << "required" << QByteArray(R"({"functionCallingConfig":{"mode":"ANY"}})");
        QTest::newRow("one tool") << "lookup"
                                  << QByteArray(R"({"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["lookup"]}})");
    }
    void toolChoice()
    {
        QFETCH(QString, choice);
        QFETCH(QByteArray, toolConfig);
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(okReply()));
        auto llm = geminiAt(server);
        ChatRequest r = ask(QStringLiteral("find it"));
        r.tools = {ToolSpec{QStringLiteral("lookup"), QStringLiteral("Look up."), parsed(R"({"type":"object","properties":{"q":{"type":"string"}}})")},
                   ToolSpec{QStringLiteral("other"), QStringLiteral("Other."), Json::object()}};
        r.toolChoice = choice;
        QVERIFY(outcomeOf(llm->chat(r)).response);
        const Json body = server.requests().front().json();
        QCOMPARE(body["tools"][0]["functionDeclarations"].size(), size_t(2));
        if (toolConfig.isEmpty())
            QVERIFY(!body.contains("toolConfig"));
        else
            QCOMPARE_JSON(body["toolConfig"], parsed(toolConfig));
    }

    // Model names, both keys, base URLs with and without a version, and the streaming method.
    void endpoints_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("baseSuffix");
        QTest::addColumn<bool>("stream");
        QTest::addColumn<QByteArray>("path");
        QTest::newRow("plain") << "gemini"
                               << "gemini-2.0-flash"
                               << "" << false
                               << QByteArray("/v1beta/models/gemini-2.0-flash:generateContent");
        QTest::newRow("google key, streaming") << "google"
                                               << "gemini-2.5-pro"
                                               << "/" << true
                                               << QByteArray("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse");
        QTest::newRow("models/ prefix, base with version") << "gemini"
                                                           << "models/gemini-1.5-pro"
                                                           << "/v1beta/" << false
                                                           << QByteArray("/v1beta/models/gemini-1.5-pro:generateContent");
        QTest::newRow("tuned model on v1") << "gemini"
                                           << "tunedModels/my-tune-42"
                                           << "/v1" << false
                                           << QByteArray("/v1/tunedModels/my-tune-42:generateContent");
        QTest::newRow("gateway prefix") << "gemini"
                                        << "gemini-2.0-flash-lite"
                                        << "/gateway/google" << true
                                        << QByteArray("/gateway/google/v1beta/models/gemini-2.0-flash-lite:streamGenerateContent?alt=sse");
    }
    void endpoints()
    {
        QFETCH(QString, key);
        QFETCH(QString, model);
        QFETCH(QString, baseSuffix);
        QFETCH(bool, stream);
        QFETCH(QByteArray, path);
        ScriptedHttpServer server;
        if (stream)
            server.enqueue(ScriptedReply::sse({sseEvent(candidateReply(Json::array({{{"text", "ok"}}})))}));
        else
            server.enqueue(ScriptedReply::json(okReply()));
        auto llm = geminiAt(server, {{"model", model.toStdString()}, {"base_url", (server.baseUrl().toString() + baseSuffix).toStdString()}}, key);
        QCOMPARE(llm->id(), key + QLatin1Char('/') + model);
        ChatRequest r = ask(QStringLiteral("hi"));
        r.stream = stream;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->text, QStringLiteral("ok"));
        const RecordedRequest sent = server.requests().front();
        QCOMPARE(sent.path, path);
        QCOMPARE(sent.header("accept"), stream ? QByteArray("text/event-stream") : QByteArray("application/json"));
    }

    // api_key, then GEMINI_API_KEY, then GOOGLE_API_KEY; always in x-goog-api-key.
    void apiKeySources_data()
    {
        QTest::addColumn<QString>("configKey");
        QTest::addColumn<QString>("geminiEnv");
        QTest::addColumn<QString>("googleEnv");
        QTest::addColumn<QString>("sent");
        QTest::newRow("config wins") << "AIza-config-1111"
                                     << "AIza-gemini-2222"
                                     << "AIza-google-3333"
                                     << "AIza-config-1111";
        QTest::newRow("GEMINI_API_KEY") << ""
                                        << "AIza-gemini-2222"
                                        << "AIza-google-3333"
                                        << "AIza-gemini-2222";
        QTest::newRow("GOOGLE_API_KEY") << ""
                                        << ""
                                        << "AIza-google-3333"
                                        << "AIza-google-3333";
    }
    void apiKeySources()
    {
        QFETCH(QString, configKey);
        QFETCH(QString, geminiEnv);
        QFETCH(QString, googleEnv);
        QFETCH(QString, sent);
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(okReply()));
        if (!geminiEnv.isEmpty())
            qputenv("GEMINI_API_KEY", geminiEnv.toUtf8());
        if (!googleEnv.isEmpty())
            qputenv("GOOGLE_API_KEY", googleEnv.toUtf8());
        Json config = {{"base_url", server.baseUrl().toString().toStdString()}, {"max_retries", 0}};
        if (!configKey.isEmpty())
            config["api_key"] = configKey.toStdString();
        auto llm = PluginRegistry::instance().createLlm(QStringLiteral("gemini"), config);
        qunsetenv("GEMINI_API_KEY");
        qunsetenv("GOOGLE_API_KEY");
        QVERIFY(outcomeOf(llm->chat(ask(QStringLiteral("hi")))).response);
        const RecordedRequest request = server.requests().front();
        QCOMPARE(request.header("x-goog-api-key"), sent.toUtf8());
        QVERIFY(!request.path.contains(sent.toUtf8()));
        QVERIFY(!request.path.contains("key="));
    }

    // Google's endpoint without a key: refused before anything is sent, saying where a key goes.
    void missingKeyIsAnAuthenticationError()
    {
        auto llm = PluginRegistry::instance().createLlm(QStringLiteral("gemini"), Json::object());
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::Authentication);
        QVERIFY2(o.error->message().contains(QLatin1String("GEMINI_API_KEY")) && o.error->message().contains(QLatin1String("api_key")),
                 qPrintable(o.error->message()));
    }

    void replyShapes_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("finish");
        QTest::addColumn<QByteArray>("calls"); // [[name, args], ...]
        QTest::addColumn<int>("promptTokens");
        QTest::addColumn<int>("completionTokens");
        QTest::addColumn<QString>("model");

        QTest::newRow("text in two parts")
            << dumped(candidateReply(parsed(R"([{"text":"The sky "},{"text":"is blue."}])")))
            << "The sky is blue."
            << "stop" << QByteArray("[]") << 12 << 7 << "gemini-2.0-flash-001";
        QTest::newRow("MAX_TOKENS")
            << dumped(candidateReply(parsed(R"([{"text":"The sky"}])"), "MAX_TOKENS", 12, 2))
            << "The sky"
            << "length" << QByteArray("[]") << 12 << 2 << "gemini-2.0-flash-001";
        QTest::newRow("SAFETY without content")
            << QByteArray(R"({"candidates":[{"finishReason":"SAFETY","index":0,"safetyRatings":[
                  {"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH","blocked":true}]}],
                  "usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"gemini-2.0-flash-001"})")
            << ""
            << "content_filter" << QByteArray("[]") << 9 << 0 << "gemini-2.0-flash-001";
        QTest::newRow("RECITATION")
            << dumped(candidateReply(parsed(R"([{"text":"It was the best of"}])"), "RECITATION"))
            << "It was the best of"
            << "content_filter" << QByteArray("[]") << 12 << 7 << "gemini-2.0-flash-001";
        QTest::newRow("MALFORMED_FUNCTION_CALL")
            << dumped(candidateReply(Json::array(), "MALFORMED_FUNCTION_CALL"))
            << ""
            << "malformed_function_call" << QByteArray("[]") << 12 << 7 << "gemini-2.0-flash-001";
        QTest::newRow("one function call")
            << dumped(candidateReply(parsed(R"([{"functionCall":{"name":"get_weather","args":{"city":"Tokyo"}}}])")))
            << ""
            << "tool_calls" << QByteArray(R"([["get_weather",{"city":"Tokyo"}]])") << 12 << 7 << "gemini-2.0-flash-001";
        QTest::newRow("parallel function calls with text")
            << dumped(candidateReply(parsed(R"([{"text":"Checking both."},
                   {"functionCall":{"name":"get_weather","args":{"city":"Paris","unit":"celsius"}}},
                   {"functionCall":{"name":"get_time","args":{"zone":"Europe/Oslo"}}}])")))
            << "Checking both."
            << "tool_calls"
            << QByteArray(R"([["get_weather",{"city":"Paris","unit":"celsius"}],["get_time",{"zone":"Europe/Oslo"}]])") << 12 << 7
            << "gemini-2.0-flash-001";
        QTest::newRow("function call without args")
            << dumped(candidateReply(parsed(R"([{"functionCall":{"name":"now"}}])")))
            << ""
            << "tool_calls" << QByteArray(R"([["now",{}]])") << 12 << 7 << "gemini-2.0-flash-001";
        QTest::newRow("thinking model: thought skipped, thoughts counted")
            << QByteArray(R"({"candidates":[{"content":{"role":"model","parts":[
                  {"text":"Let me think about the sky...","thought":true},{"text":"Rayleigh scattering."}]},
                  "finishReason":"STOP","index":0}],
                  "usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":3,"thoughtsTokenCount":40,"totalTokenCount":51},
                  "modelVersion":"gemini-2.5-flash"})")
            << "Rayleigh scattering."
            << "stop" << QByteArray("[]") << 8 << 43 << "gemini-2.5-flash";
        QTest::newRow("no usage, no model version")
            << QByteArray(R"({"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]})")
            << "ok"
            << "stop" << QByteArray("[]") << 0 << 0 << "gemini-2.0-flash";
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
        auto llm = geminiAt(server);
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("go"))));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->text, text);
        QCOMPARE(o.response->finishReason, finish);
        QCOMPARE(o.response->usage.promptTokens, promptTokens);
        QCOMPARE(o.response->usage.completionTokens, completionTokens);
        QCOMPARE(o.response->model, model);
        const Json expected = parsed(calls);
        QCOMPARE(o.response->toolCalls.size(), expected.size());
        QSet<QString> ids;
        for (size_t i = 0; i < expected.size(); ++i) {
            const ToolCall &c = o.response->toolCalls[i];
            QCOMPARE(c.name, QString::fromStdString(expected[i][0].get<std::string>()));
            QCOMPARE_JSON(c.arguments, expected[i][1]);
            QVERIFY(!c.id.isEmpty());
            ids.insert(c.id);
        }
        QCOMPARE(ids.size(), qsizetype(expected.size()));
    }

    // Gemini's own call id and a thinking model's thought signature come back with the call on the
    // next turn; a made-up id is not sent as Gemini's.
    void callIdsAndThoughtSignaturesGoBack()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(dumped(candidateReply(parsed(R"([
            {"functionCall":{"id":"fc-7","name":"lookup","args":{"q":"tides"}},"thoughtSignature":"c2lnbmF0dXJlLW9uZQ=="},
            {"functionCall":{"name":"now","args":{}},"thoughtSignature":"c2lnbmF0dXJlLXR3bw=="}])")))));
        server.enqueue(ScriptedReply::json(okReply(QStringLiteral("High tide at 6."))));
        auto llm = geminiAt(server, {{"model", "gemini-2.5-flash"}});
        ChatRequest first = ask(QStringLiteral("When is high tide?"));
        first.tools = {ToolSpec{QStringLiteral("lookup"), QStringLiteral("Search."), parsed(R"({"type":"object","properties":{"q":{"type":"string"}}})")},
                       ToolSpec{QStringLiteral("now"), QStringLiteral("Time."), Json::object()}};
        const Outcome o1 = outcomeOf(llm->chat(first));
        QVERIFY2(o1.response, qPrintable(o1.describe()));
        QCOMPARE(o1.response->toolCalls.size(), size_t(2));
        QCOMPARE(o1.response->toolCalls[0].id, QStringLiteral("fc-7"));
        const QString madeUp = o1.response->toolCalls[1].id;
        QVERIFY(!madeUp.isEmpty() && madeUp != QLatin1String("fc-7"));

        ChatRequest second = first;
        second.messages.push_back(ChatMessage::assistant(QString(), o1.response->toolCalls));
        second.messages.push_back(ChatMessage::toolResult(QStringLiteral("fc-7"), QStringLiteral("lookup"), QStringLiteral("06:12")));
        second.messages.push_back(ChatMessage::toolResult(madeUp, QStringLiteral("now"), QStringLiteral("{\"time\":\"05:00\"}")));
        const Outcome o2 = outcomeOf(llm->chat(second));
        QVERIFY2(o2.response, qPrintable(o2.describe()));
        const Json contents = server.requests().at(1).json()["contents"];
        QCOMPARE_JSON(contents, parsed(R"([
            {"role":"user","parts":[{"text":"When is high tide?"}]},
            {"role":"model","parts":[
              {"functionCall":{"id":"fc-7","name":"lookup","args":{"q":"tides"}},"thoughtSignature":"c2lnbmF0dXJlLW9uZQ=="},
              {"functionCall":{"name":"now","args":{}},"thoughtSignature":"c2lnbmF0dXJlLXR3bw=="}]},
            {"role":"user","parts":[
              {"functionResponse":{"id":"fc-7","name":"lookup","response":{"result":"06:12"}}},
              {"functionResponse":{"name":"now","response":{"time":"05:00"}}}]}])"));
    }

    void blockedPrompt_data()
    {
        QTest::addColumn<bool>("stream");
        QTest::addColumn<QString>("reason");
        QTest::newRow("SAFETY") << false << "SAFETY";
        QTest::newRow("PROHIBITED_CONTENT") << false << "PROHIBITED_CONTENT";
        QTest::newRow("SAFETY, streamed") << true << "SAFETY";
    }
    void blockedPrompt()
    {
        QFETCH(bool, stream);
        QFETCH(QString, reason);
        const Json body = {{"promptFeedback", {{"blockReason", reason.toStdString()}, {"safetyRatings", parsed(R"([{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH"}])")}}},
                           {"usageMetadata", {{"promptTokenCount", 11}, {"totalTokenCount", 11}}},
                           {"modelVersion", "gemini-2.0-flash-001"}};
        ScriptedHttpServer server;
        server.enqueue(stream ? ScriptedReply::sse({sseEvent(body)}) : ScriptedReply::json(dumped(body)));
        auto llm = geminiAt(server);
        ChatRequest r = ask(QStringLiteral("something dangerous"));
        r.stream = stream;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::BadRequest);
        QVERIFY2(o.error->message().contains(QStringLiteral("blocked: ") + reason), qPrintable(o.error->message()));
        QVERIFY2(o.error->message().contains(QLatin1String("safety_settings")), qPrintable(o.error->message()));
    }

    // JSON schema in, Gemini's schema dialect out (or, when it cannot be said, the instruction path
    // with JSON mode). Either way the reply is checked against the original schema.
    void schemaConversion_data()
    {
        QTest::addColumn<QByteArray>("schema");
        QTest::addColumn<QByteArray>("converted"); // empty: falls back to the instruction
        QTest::addColumn<QByteArray>("answer");

        QTest::newRow("object, dropped keywords")
            << QByteArray(R"({"$schema":)"
                          "\"http://json-schema.org/draft-07/schema#\""
                          R"(,"title":"Person","type":"object",
                 "properties":{"name":{"type":"string","minLength":1,"pattern":"^[A-Z]"},"age":{"type":"integer","minimum":0,"default":1}},
                 "required":["name"],"additionalProperties":false})")
            << QByteArray(R"({"type":"OBJECT","properties":{"age":{"type":"INTEGER","minimum":0},
                 "name":{"type":"STRING","minLength":1}},"required":["name"]})")
            << QByteArray(R"({"name":"Ada","age":36})");
        QTest::newRow("type list with null")
            << QByteArray(R"({"type":"object","properties":{"nick":{"type":["string","null"],"description":"Nickname"}},"required":["nick"]})")
            << QByteArray(R"({"type":"OBJECT","properties":{"nick":{"type":"STRING","description":"Nickname","nullable":true}},"required":["nick"]})")
            << QByteArray(R"({"nick":null})");
        QTest::newRow("anyOf with null")
            << QByteArray(R"({"type":"object","properties":{"score":{"description":"0..1","anyOf":[{"type":"number"},{"type":"null"}]}}})")
            << QByteArray(R"({"type":"OBJECT","properties":{"score":{"type":"NUMBER","description":"0..1","nullable":true}}})")
            << QByteArray(R"({"score":0.5})");
        QTest::newRow("$defs and $ref inlined")
            << QByteArray(R"({"$defs":{"Tag":{"type":"object","properties":{"label":{"type":"string"}},"required":["label"]}},
                 "type":"object","properties":{"tags":{"type":"array","items":{"$ref":)"
                          "\"#/$defs/Tag\""
                          R"(},"maxItems":5,"uniqueItems":true}},
                 "required":["tags"]})")
            << QByteArray(R"({"type":"OBJECT","properties":{"tags":{"type":"ARRAY","items":{"type":"OBJECT",
                 "properties":{"label":{"type":"STRING"}},"required":["label"]},"maxItems":5}},"required":["tags"]})")
            << QByteArray(R"({"tags":[{"label":"sea"},{"label":"moon"}]})");
        QTest::newRow("definitions through a one-element allOf")
            << QByteArray(R"({"definitions":{"P":{"type":"object","properties":{"ok":{"type":"boolean"}}}},
                 "allOf":[{"$ref":)"
                          "\"#/definitions/P\""
                          R"(}],"description":"A flag"})")
            << QByteArray(R"({"type":"OBJECT","description":"A flag","properties":{"ok":{"type":"BOOLEAN"}}})")
            << QByteArray(R"({"ok":true})");
        QTest::newRow("enum and const")
            << QByteArray(R"({"type":"object","properties":{"mood":{"type":"string","enum":["happy","sad"]},"kind":{"const":"note"}},
                 "required":["mood","kind"]})")
            << QByteArray(R"({"type":"OBJECT","properties":{"kind":{"type":"STRING","enum":["note"]},
                 "mood":{"type":"STRING","enum":["happy","sad"]}},"required":["mood","kind"]})")
            << QByteArray(R"({"mood":"happy","kind":"note"})");
        QTest::newRow("formats Gemini knows are kept")
            << QByteArray(R"({"type":"object","properties":{"when":{"type":"string","format":"date-time"},
                 "mail":{"type":"string","format":"email"},"ratio":{"type":"number","format":"float","exclusiveMinimum":0}}})")
            << QByteArray(R"({"type":"OBJECT","properties":{"mail":{"type":"STRING"},"ratio":{"type":"NUMBER","format":"float"},
                 "when":{"type":"STRING","format":"date-time"}}})")
            << QByteArray(R"({"when":"2026-11-22T03:00:00Z","ratio":0.5})");
        QTest::newRow("oneOf becomes anyOf")
            << QByteArray(R"({"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}}})")
            << QByteArray(R"({"type":"OBJECT","properties":{"v":{"anyOf":[{"type":"STRING"},{"type":"INTEGER"}]}}})")
            << QByteArray(R"({"v":3})");
        QTest::newRow("array at the root")
            << QByteArray(R"({"type":"array","items":{"type":"string"},"minItems":1})")
            << QByteArray(R"({"type":"ARRAY","items":{"type":"STRING"},"minItems":1})")
            << QByteArray(R"(["a","b"])");

        QTest::newRow("fallback: recursive reference")
            << QByteArray(R"({"$defs":{"Node":{"type":"object","properties":{"name":{"type":"string"},
                 "children":{"type":"array","items":{"$ref":)"
                          "\"#/$defs/Node\""
                          R"(}}}}},"$ref":)"
                          "\"#/$defs/Node\""
                          R"(})")
            << QByteArray() << QByteArray(R"({"name":"root","children":[]})");
        QTest::newRow("fallback: free-form map")
            << QByteArray(R"({"type":"object","additionalProperties":{"type":"integer"}})")
            << QByteArray() << QByteArray(R"({"a":1,"b":2})");
        QTest::newRow("fallback: tuple")
            << QByteArray(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]})")
            << QByteArray() << QByteArray(R"(["a",1])");
        QTest::newRow("fallback: several types")
            << QByteArray(R"({"type":"object","properties":{"v":{"type":["string","integer"]}}})")
            << QByteArray() << QByteArray(R"({"v":1})");
        QTest::newRow("fallback: not")
            << QByteArray(R"({"type":"object","properties":{"v":{"not":{"type":"string"}}}})")
            << QByteArray() << QByteArray(R"({"v":1})");
        QTest::newRow("fallback: integer enum")
            << QByteArray(R"({"type":"object","properties":{"level":{"type":"integer","enum":[1,2,3]}}})")
            << QByteArray() << QByteArray(R"({"level":2})");
        QTest::newRow("fallback: array without items")
            << QByteArray(R"({"type":"object","properties":{"xs":{"type":"array"}}})")
            << QByteArray() << QByteArray(R"({"xs":[1,"a"]})");
        QTest::newRow("fallback: if / then")
            << QByteArray(R"({"type":"object","properties":{"v":{"type":"integer"}},"if":{"required":["v"]},
                 "then":{"properties":{"v":{"minimum":0}}}})")
            << QByteArray() << QByteArray(R"({"v":1})");
        QTest::newRow("fallback: untyped value")
            << QByteArray(R"({"type":"object","properties":{"anything":{}}})")
            << QByteArray() << QByteArray(R"({"anything":[1]})");
    }
    void schemaConversion()
    {
        QFETCH(QByteArray, schema);
        QFETCH(QByteArray, converted);
        QFETCH(QByteArray, answer);
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(okReply(QString::fromUtf8(answer))));
        auto llm = geminiAt(server);
        ChatRequest r = ask(QStringLiteral("Answer in JSON."));
        r.responseSchema = parsed(schema);
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE_JSON(o.response->structured, parsed(answer));
        QCOMPARE(server.requestCount(), 1);

        const Json body = server.requests().front().json();
        if (!converted.isEmpty()) {
            QCOMPARE_JSON(body["generationConfig"], Json({{"responseMimeType", "application/json"}, {"responseSchema", parsed(converted)}}));
            QVERIFY2(!body.contains("systemInstruction"), "a native schema needs no instruction");
        } else {
            QCOMPARE_JSON(body["generationConfig"], Json({{"responseMimeType", "application/json"}}));
            const QString instruction = QString::fromStdString(body["systemInstruction"]["parts"][0]["text"].get<std::string>());
            QVERIFY2(instruction.contains(QLatin1String("JSON schema")), qPrintable(instruction));
        }
    }

    // With tools on offer the schema travels in the instruction, without JSON mode (older models
    // refuse function calling together with a JSON response type).
    void schemaWithToolsUsesTheInstruction()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(okReply(QStringLiteral("```json\n{\"n\": 2}\n```"))));
        auto llm = geminiAt(server);
        ChatRequest r = ask(QStringLiteral("Count."));
        r.responseSchema = parsed(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})");
        r.tools = {ToolSpec{QStringLiteral("count"), QStringLiteral("Count."), parsed(R"({"type":"object","properties":{"of":{"type":"string"}}})")}};
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE_JSON(o.response->structured, parsed(R"({"n":2})"));
        const Json body = server.requests().front().json();
        QVERIFY(!body.contains("generationConfig"));
        QVERIFY(body.contains("systemInstruction"));
    }

    // A reply outside the schema gets one correction round (the native schema is sent both times).
    void structuredOutputIsRepairedOnce()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(okReply(QStringLiteral("{\"n\": \"two\"}"))));
        server.enqueue(ScriptedReply::json(okReply(QStringLiteral("{\"n\": 2}"))));
        auto llm = geminiAt(server);
        ChatRequest r = ask(QStringLiteral("Count."));
        r.responseSchema = parsed(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})");
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE_JSON(o.response->structured, parsed(R"({"n":2})"));
        QCOMPARE(o.response->usage.promptTokens, 24);
        const Json second = server.requests().at(1).json();
        QCOMPARE_JSON(second["generationConfig"]["responseSchema"], parsed(R"({"type":"OBJECT","properties":{"n":{"type":"INTEGER"}},"required":["n"]})"));
        QCOMPARE(second["contents"].size(), size_t(3));
        QCOMPARE_JSON(second["contents"][1], Json({{"role", "model"}, {"parts", Json::array({{{"text", "{\"n\": \"two\"}"}}})}}));
    }

    // Function parameters beyond the dialect go as plain JSON schema in parametersJsonSchema.
    void toolParametersBeyondTheDialect()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(okReply()));
        auto llm = geminiAt(server);
        const Json tree = parsed(R"({"$schema":)"
                                 "\"https://json-schema.org/draft/2020-12/schema\""
                                 R"(,"type":"object",
            "$defs":{"Node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":)"
                                 "\"#/$defs/Node\""
                                 R"(}}}}},
            "properties":{"root":{"$ref":)"
                                 "\"#/$defs/Node\""
                                 R"(}}})");
        ChatRequest r = ask(QStringLiteral("Draw a tree."));
        r.tools = {ToolSpec{QStringLiteral("draw"), QStringLiteral("Draws a tree."), tree}};
        QVERIFY(outcomeOf(llm->chat(r)).response);
        Json expected = tree;
        expected.erase("$schema");
        const Json declaration = server.requests().front().json()["tools"][0]["functionDeclarations"][0];
        QVERIFY(!declaration.contains("parameters"));
        QCOMPARE_JSON(declaration["parametersJsonSchema"], expected);
    }

    void streamsTextInOrder()
    {
        ScriptedHttpServer server;
        const QByteArray second = sseEvent(candidateReply(parsed(R"([{"text":" sky"}])"), nullptr));
        server.enqueue(ScriptedReply::sse({
            sseEvent(candidateReply(parsed(R"([{"text":"The"}])"), nullptr)),
            second.left(20),
            second.mid(20), // one event split across two chunks
            sseEvent(candidateReply(parsed(R"([{"text":" is blue."}])"), "STOP", 8, 5)),
        }));
        auto llm = geminiAt(server);
        QSignalSpy text(llm.get(), &LlmProvider::textDelta);
        QSignalSpy calls(llm.get(), &LlmProvider::toolCallDelta);
        ChatRequest r = ask(QStringLiteral("Why is the sky blue?"));
        r.stream = true;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(deltasOf(text), (QStringList{QStringLiteral("The"), QStringLiteral(" sky"), QStringLiteral(" is blue.")}));
        QCOMPARE(calls.count(), 0);
        QCOMPARE(o.response->text, QStringLiteral("The sky is blue."));
        QCOMPARE(o.response->finishReason, QStringLiteral("stop"));
        QCOMPARE(o.response->usage.promptTokens, 8);
        QCOMPARE(o.response->usage.completionTokens, 5);
        QCOMPARE(o.response->model, QStringLiteral("gemini-2.0-flash-001"));

        const RecordedRequest sent = server.requests().front();
        QCOMPARE(sent.path, QByteArray("/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"));
        QCOMPARE(sent.header("x-goog-api-key"), QByteArray::fromStdString(Secret));
        QCOMPARE_JSON(sent.json(), parsed(R"({"contents":[{"role":"user","parts":[{"text":"Why is the sky blue?"}]}]})"));
    }

    // Function calls arrive whole: one delta per call with all of its arguments.
    void streamsParallelFunctionCalls()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::sse({
            sseEvent(candidateReply(parsed(R"([{"text":"Let me check."}])"), nullptr)),
            sseEvent(candidateReply(parsed(R"([{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}},
                                            {"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}])"),
                                    "STOP", 30, 12)),
        }));
        auto llm = geminiAt(server);
        QSignalSpy text(llm.get(), &LlmProvider::textDelta);
        QSignalSpy calls(llm.get(), &LlmProvider::toolCallDelta);
        ChatRequest r = ask(QStringLiteral("Weather in Paris and Oslo?"));
        r.tools = {ToolSpec{QStringLiteral("get_weather"), QStringLiteral("Weather."), parsed(R"({"type":"object","properties":{"city":{"type":"string"}}})")}};
        r.stream = true;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));

        QCOMPARE(deltasOf(text), QStringList{QStringLiteral("Let me check.")});
        QCOMPARE(calls.count(), 2);
        for (int i = 0; i < 2; ++i) {
            QCOMPARE(calls.at(i).at(0).toInt(), i);
            QCOMPARE(calls.at(i).at(2).toString(), QStringLiteral("get_weather"));
            QCOMPARE(o.response->toolCalls.at(size_t(i)).id, calls.at(i).at(1).toString());
        }
        QCOMPARE_JSON(Json::parse(calls.at(0).at(3).toString().toStdString()), parsed(R"({"city":"Paris"})"));
        QCOMPARE_JSON(Json::parse(calls.at(1).at(3).toString().toStdString()), parsed(R"({"city":"Oslo"})"));
        QCOMPARE(o.response->finishReason, QStringLiteral("tool_calls"));
        QCOMPARE_JSON(o.response->toolCalls.at(1).arguments, parsed(R"({"city":"Oslo"})"));
        QCOMPARE(o.response->usage.completionTokens, 12);
    }

    void streamStoppedAtMaxTokens()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::sse({sseEvent(candidateReply(parsed(R"([{"text":"Once upon"}])"), "MAX_TOKENS", 4, 2))}));
        auto llm = geminiAt(server);
        ChatRequest r = ask(QStringLiteral("A story"));
        r.stream = true;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->finishReason, QStringLiteral("length"));
    }

    // An error object in the middle of a stream fails the chat with Gemini's message and status.
    void errorEventMidStream()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::sse({
            sseEvent(candidateReply(parsed(R"([{"text":"Partial"}])"), nullptr)),
            sseEvent(parsed(R"({"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}})")),
        }));
        auto llm = geminiAt(server);
        QSignalSpy text(llm.get(), &LlmProvider::textDelta);
        ChatRequest r = ask(QStringLiteral("go"));
        r.stream = true;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::ServerError);
        QVERIFY2(o.error->message().contains(QLatin1String("The model is overloaded")), qPrintable(o.error->message()));
        QVERIFY2(o.error->message().contains(QLatin1String("UNAVAILABLE")), qPrintable(o.error->message()));
        QCOMPARE(deltasOf(text), QStringList{QStringLiteral("Partial")});
    }

    void droppedStreamIsANetworkError()
    {
        ScriptedHttpServer server;
        ScriptedReply cut = ScriptedReply::sse({sseEvent(candidateReply(parsed(R"([{"text":"Half"}])"), nullptr)),
                                                QByteArray("data: {\"candidates\":[{\"content\":{\"parts\":[{\"te")},
                                               20);
        // Paced like a real stream: closed in the same packet as the last chunk, the cut is sometimes
        // taken by Qt for the end of the body.
        cut.dropAfterChunks = true;
        server.enqueue(cut);
        auto llm = geminiAt(server, {{"max_retries", 2}});
        QSignalSpy text(llm.get(), &LlmProvider::textDelta);
        ChatRequest r = ask(QStringLiteral("go"));
        r.stream = true;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QVERIFY2(o.error->kind() == ErrorKind::Network, qPrintable(o.describe()));
        QCOMPARE(deltasOf(text), QStringList{QStringLiteral("Half")});
        QCOMPARE(server.requestCount(), 1);
    }

    // Gemini's error replies, streamed or not, by HTTP status, with Gemini's message in the text.
    void errorReplies_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("quoted");
        QTest::newRow("400 INVALID_ARGUMENT")
            << 400 << QByteArray("{\"error\":{\"code\":400,\"message\":\"Invalid JSON payload received. Unknown name \\\"foo\\\": Cannot find field.\","
                                 "\"status\":\"INVALID_ARGUMENT\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.BadRequest\","
                                 "\"fieldViolations\":[{\"description\":\"Invalid JSON payload received. Unknown name \\\"foo\\\": Cannot find field.\"}]}]}}")
            << int(ErrorKind::BadRequest) << "Unknown name \"foo\"";
        QTest::newRow("400 input too long")
            << 400 << QByteArray(R"({"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}})")
            << int(ErrorKind::ContextLength) << "exceeds the maximum number of tokens";
        QTest::newRow("401 UNAUTHENTICATED")
            << 401 << QByteArray(R"({"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}})")
            << int(ErrorKind::Authentication) << "invalid authentication credentials";
        QTest::newRow("403 PERMISSION_DENIED")
            << 403 << QByteArray("{\"error\":{\"code\":403,\"message\":\"Method doesn't allow unregistered callers (callers without established identity). "
                                 "Please use API Key or other form of API consumer identity to call this API.\",\"status\":\"PERMISSION_DENIED\"}}")
            << int(ErrorKind::Authentication) << "unregistered callers";
        QTest::newRow("404 NOT_FOUND")
            << 404 << QByteArray(R"({"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta, or is not supported for generateContent.","status":"NOT_FOUND"}})")
            << int(ErrorKind::BadRequest) << "models/gemini-9 is not found";
        QTest::newRow("429 RESOURCE_EXHAUSTED")
            << 429 << QByteArray(R"({"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED"}})")
            << int(ErrorKind::RateLimited) << "exceeded your current quota";
        QTest::newRow("500 INTERNAL")
            << 500 << QByteArray("{\"error\":{\"code\":500,\"message\":\"An internal error has occurred. Please retry or report in "
                                 "https://developers.generativeai.google/guide/troubleshooting\",\"status\":\"INTERNAL\"}}")
            << int(ErrorKind::ServerError) << "An internal error has occurred";
        QTest::newRow("503 UNAVAILABLE")
            << 503 << QByteArray(R"({"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}})")
            << int(ErrorKind::ServerError) << "The model is overloaded";
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
            auto llm = geminiAt(server);
            ChatRequest r = ask(QStringLiteral("hi"));
            r.stream = stream;
            const Outcome o = outcomeOf(llm->chat(r));
            QVERIFY2(o.error, qPrintable(o.describe()));
            QCOMPARE(int(o.error->kind()), kind);
            QCOMPARE(o.error->httpStatus(), status);
            QVERIFY2(o.error->message().contains(quoted), qPrintable(o.error->message()));
            QVERIFY2(o.error->message().contains(QLatin1String("gemini chat (gemini-2.0-flash)")), qPrintable(o.error->message()));
        }
    }

    // Gemini answers a wrong key with HTTP 400, status INVALID_ARGUMENT, reason API_KEY_INVALID.
    void invalidApiKeyIsAnAuthenticationError()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(R"({"error":{"code":400,"message":"API key not valid. Please pass a valid API key.",
            "status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID",
            "domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}})",
                                           400));
        auto llm = geminiAt(server);
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QVERIFY2(o.error->message().contains(QLatin1String("API key not valid")), qPrintable(o.error->message()));
        QCOMPARE(o.error->httpStatus(), 400);
        QCOMPARE(o.error->kind(), ErrorKind::Authentication);
    }

    // The same error inside a stream is read by the plugin itself, reason included.
    void invalidApiKeyInAStreamIsAnAuthenticationError()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::sse({sseEvent(parsed(R"({"error":{"code":400,"message":"API key not valid. Please pass a valid API key.",
            "status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}})"))}));
        auto llm = geminiAt(server);
        ChatRequest r = ask(QStringLiteral("hi"));
        r.stream = true;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::Authentication);
        QVERIFY2(o.error->message().contains(QLatin1String("GEMINI_API_KEY")), qPrintable(o.error->message()));
    }

    void malformedReplies_data()
    {
        QTest::addColumn<bool>("stream");
        QTest::addColumn<QByteArray>("body");
        QTest::newRow("not JSON") << false << QByteArray("<<not json>>");
        QTest::newRow("truncated JSON") << false << QByteArray(R"({"candidates":[{"content":{"parts":[{"text":"hi")");
        QTest::newRow("no candidates, no block reason") << false << QByteArray(R"({"usageMetadata":{"promptTokenCount":3},"modelVersion":"gemini-2.0-flash"})");
        QTest::newRow("candidates not a list") << false << QByteArray(R"({"candidates":{"content":{}}})");
        QTest::newRow("event not JSON") << true << QByteArray("data: {\"candidates\": oops}\r\n\r\n");
        QTest::newRow("event not an object") << true << QByteArray("data: [1,2,3]\r\n\r\n");
    }
    void malformedReplies()
    {
        QFETCH(bool, stream);
        QFETCH(QByteArray, body);
        ScriptedHttpServer server;
        server.enqueue(stream ? ScriptedReply::sse({body}) : ScriptedReply::json(body));
        auto llm = geminiAt(server);
        ChatRequest r = ask(QStringLiteral("hi"));
        r.stream = stream;
        const Outcome o = outcomeOf(llm->chat(r));
        QVERIFY2(o.error, qPrintable(o.describe()));
        QCOMPARE(o.error->kind(), ErrorKind::MalformedReply);
        QVERIFY2(o.error->message().contains(QLatin1String("gemini chat (gemini-2.0-flash)")), qPrintable(o.error->message()));
    }

    // The key travels in x-goog-api-key only: never in a URL, an error text (even when Gemini quotes
    // it back) or a log line.
    void apiKeyStaysInItsHeader()
    {
        LogCapture logs;
        ScriptedHttpServer server;
        const QByteArray quoted = QByteArray::fromStdString(Secret);
        server.enqueue(ScriptedReply::json(dumped(Json{{"error", {{"code", 400}, {"message", "API key " + Secret + " not valid."}, {"status", "INVALID_ARGUMENT"}}}}), 400));
        server.enqueue(ScriptedReply::json(okReply()));
        server.enqueue(ScriptedReply::sse({sseEvent(candidateReply(parsed(R"([{"text":"streamed"}])")))}));
        server.enqueue(ScriptedReply::sse({"data: {\"error\":{\"code\":403,\"message\":\"key " + quoted + " revoked\",\"status\":\"PERMISSION_DENIED\"}}\r\n\r\n"}));
        auto llm = geminiAt(server);

        QStringList texts;
        const Outcome refused = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(refused.error, qPrintable(refused.describe()));
        QVERIFY2(refused.error->message().contains(QLatin1String("[redacted]")), qPrintable(refused.error->message()));
        texts << refused.error->message();
        QVERIFY(outcomeOf(llm->chat(ask(QStringLiteral("hi")))).response);
        ChatRequest r = ask(QStringLiteral("hi"));
        r.stream = true;
        QVERIFY(outcomeOf(llm->chat(r)).response);
        const Outcome revoked = outcomeOf(llm->chat(r));
        QVERIFY2(revoked.error, qPrintable(revoked.describe()));
        QCOMPARE(revoked.error->kind(), ErrorKind::Authentication);
        texts << revoked.error->message();

        QCOMPARE(server.requestCount(), 4);
        for (const RecordedRequest &sent : server.requests()) {
            QCOMPARE(sent.header("x-goog-api-key"), quoted);
            QVERIFY2(!sent.path.contains(quoted) && !sent.path.contains("key="), sent.path.constData());
        }
        QVERIFY2(!logs.messages().isEmpty(), "mneme.* debug logging produced nothing to check");
        texts << logs.messages();
        for (const QString &t : texts)
            QVERIFY2(!t.contains(QString::fromStdString(Secret)), qPrintable(t));
    }
};

QTEST_GUILESS_MAIN(TestLlmGemini)
#include "test_llm_gemini.moc"
