// The anthropic LLM plugin, loaded through the plugin registry and pointed at a scripted local
// server that answers like Anthropic's Messages API: the request it sends (path, headers, body field
// by field), every reply shape (text, parallel tool_use, stop reasons, usage), streamed text and
// tool_use deltas, error events in a stream, structured output through the instruction fallback, the
// API's error bodies mapped onto ErrorKind, a missing key, and an API key that never leaks.

#include "chat_outcome.h"
#include "log_capture.h"
#include "scripted_http_server.h"
#include <mneme/core/error.h>
#include <mneme/core/json.h>
#include <mneme/core/json_reply.h>
#include <mneme/core/llm_provider.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/provider_settings.h>

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
using mneme::test::RecordedRequest;
using mneme::test::ScriptedHttpServer;
using mneme::test::ScriptedReply;

Q_DECLARE_METATYPE(mneme::ErrorKind)

namespace {

const QString Key = QStringLiteral("sk-ant-test-KEY-0123456789abcdef");
const QString Model = QStringLiteral("claude-3-haiku-20240307");

// Every log line of the run, to show the key never reaches a log.
std::unique_ptr<LogCapture> logCapture;

QStringList capturedLogs()
{
    return LogCapture::messages();
}

Json configFor(const ScriptedHttpServer &server, const Json &extra = Json::object())
{
    Json config{{"base_url", server.baseUrl().toString().toStdString()},
                {"api_key", Key.toStdString()},
                {"model", Model.toStdString()},
                {"max_retries", 0},
                {"timeout", 10}};
    for (auto it = extra.begin(); it != extra.end(); ++it)
        config[it.key()] = it.value();
    return config;
}

std::unique_ptr<LlmProvider> makeProvider(const Json &config)
{
    return PluginRegistry::instance().createLlm(QStringLiteral("anthropic"), config);
}

QByteArray dump(const Json &j)
{
    return QByteArray::fromStdString(j.dump());
}

// One server-sent event as Anthropic frames it: the event name and the same name as data.type.
QByteArray sse(const char *event, Json data)
{
    data["type"] = event;
    return QByteArray("event: ") + event + "\ndata: " + dump(data) + "\n\n";
}

QByteArray errorBody(const char *type, const QString &message)
{
    return dump(Json{{"type", "error"}, {"error", {{"type", type}, {"message", message.toStdString()}}}});
}

// A complete non-streamed Messages API reply.
Json messageReply(Json content, const char *stopReason = "end_turn", Json usage = Json{{"input_tokens", 12}, {"output_tokens", 5}})
{
    return Json{{"id", "msg_01XFDUDYJgAACzvnptvVoYEL"},
                {"type", "message"},
                {"role", "assistant"},
                {"model", Model.toStdString()},
                {"content", std::move(content)},
                {"stop_reason", stopReason},
                {"stop_sequence", nullptr},
                {"usage", std::move(usage)}};
}

ScriptedReply textReply(const char *text)
{
    return ScriptedReply::json(dump(messageReply(Json::array({Json{{"type", "text"}, {"text", text}}}))));
}

ChatRequest simpleRequest(const QString &text = QStringLiteral("Hello"))
{
    ChatRequest r;
    r.messages.push_back(ChatMessage::user(text));
    return r;
}

ToolSpec weatherTool()
{
    ToolSpec t;
    t.name = QStringLiteral("get_weather");
    t.description = QStringLiteral("Current weather for a city.");
    t.parameters = Json{{"type", "object"},
                        {"properties", {{"city", {{"type", "string"}}}}},
                        {"required", Json::array({"city"})}};
    return t;
}

ToolSpec timeTool()
{
    ToolSpec t;
    t.name = QStringLiteral("get_time");
    t.description = QStringLiteral("The local time in a time zone.");
    t.parameters = Json{{"type", "object"}, {"properties", {{"tz", {{"type", "string"}}}}}};
    return t;
}

// The stream of a reply with a text block: message_start .. message_stop.
QList<QByteArray> textStream(const QStringList &pieces)
{
    QList<QByteArray> events;
    events << sse("message_start",
                  Json{{"message", {{"id", "msg_stream"}, {"type", "message"}, {"role", "assistant"}, {"model", Model.toStdString()}, {"content", Json::array()}, {"stop_reason", nullptr}, {"stop_sequence", nullptr}, {"usage", {{"input_tokens", 15}, {"output_tokens", 1}}}}}});
    events << sse("content_block_start", Json{{"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}});
    events << sse("ping", Json::object());
    for (const QString &p : pieces)
        events << sse("content_block_delta",
                      Json{{"index", 0}, {"delta", {{"type", "text_delta"}, {"text", p.toStdString()}}}});
    events << sse("content_block_stop", Json{{"index", 0}});
    events << sse("message_delta", Json{{"delta", {{"stop_reason", "end_turn"}, {"stop_sequence", nullptr}}},
                                        {"usage", {{"output_tokens", 7}}}});
    events << sse("message_stop", Json::object());
    return events;
}

} // namespace

class TestLlmAnthropic : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();

    void identity();
    void requestShape();
    void defaults_data();
    void defaults();
    void environmentAndHeaders();
    void toolChoice_data();
    void toolChoice();
    void refusedLocally_data();
    void refusedLocally();

    void replyText();
    void replyParallelToolUse();
    void stopReasons_data();
    void stopReasons();
    void malformedReply_data();
    void malformedReply();

    void streamText();
    void streamToolUse();
    void streamErrorEvent_data();
    void streamErrorEvent();
    void overloadedBeforeContentIsRetried();
    void droppedStream();
    void malformedStreamEvent();

    void structuredOutputFallback();
    void structuredOutputRepair();

    void httpErrors_data();
    void httpErrors();
    void rateLimitedThenSuccess();
    void missingKey();
    void keyNeverLeaks();
    void logsWereCaptured();
    void cleanupTestCase();
};

void TestLlmAnthropic::initTestCase()
{
    logCapture = std::make_unique<LogCapture>();
    qunsetenv("ANTHROPIC_API_KEY");
    qunsetenv("ANTHROPIC_BASE_URL");
    QVERIFY2(PluginRegistry::instance().hasKey(PluginRegistry::Kind::Llm, QStringLiteral("anthropic")),
             "the anthropic plugin is not found; is MNEME_PLUGIN_PATH set to the build's plugin folder?");
}

void TestLlmAnthropic::cleanupTestCase()
{
    logCapture.reset(); // before the program's static objects go
}

void TestLlmAnthropic::init()
{
    LogCapture::clear();
}

void TestLlmAnthropic::cleanup()
{
    for (const QString &line : capturedLogs())
        QVERIFY2(!line.contains(Key), qPrintable(QStringLiteral("the API key appears in a log line: ") + line));
}

void TestLlmAnthropic::identity()
{
    ScriptedHttpServer server;
    auto llm = makeProvider(configFor(server));
    QCOMPARE(llm->id(), QStringLiteral("anthropic/") + Model);
    QCOMPARE(llm->capabilities(), LlmProvider::Capability::Tools | LlmProvider::Capability::Streaming
                                      | LlmProvider::Capability::ParallelTools);
    QVERIFY(!llm->capabilities().testFlag(LlmProvider::Capability::JsonSchema));
    QVERIFY(llm->supportsFunctionCalling());

    // A model string "anthropic/<model>" reaches the plugin as config.model.
    const ProviderSpec spec = ProviderSpec::llm(Json("anthropic/claude-3-5-sonnet-20241022"),
                                                PluginRegistry::instance().keys(PluginRegistry::Kind::Llm));
    QCOMPARE(spec.key, QStringLiteral("anthropic"));
    Json config = spec.config;
    config["api_key"] = Key.toStdString();
    QCOMPARE(makeProvider(config)->id(), QStringLiteral("anthropic/claude-3-5-sonnet-20241022"));

    // A key of another provider is refused, naming the accepted ones.
    try {
        makeProvider(configFor(server, Json{{"deployment_id", "x"}}));
        QFAIL("an unknown config key was accepted");
    } catch (const Error &e) {
        QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        QVERIFY2(e.message().contains(QLatin1String("deployment_id")) && e.message().contains(QLatin1String("anthropic_version")),
                 qPrintable(e.message()));
    }
}

void TestLlmAnthropic::requestShape()
{
    ScriptedHttpServer server;
    server.enqueue(textReply("It is sunny in Paris and 14:05 there."));
    auto llm = makeProvider(configFor(server));

    ChatRequest r;
    r.messages.push_back(ChatMessage::system(QStringLiteral("You are a travel assistant.")));
    r.messages.push_back(ChatMessage::system(QStringLiteral("Answer in one sentence.")));
    r.messages.push_back(ChatMessage::user(QStringLiteral("Weather and time in Paris?")));
    r.messages.push_back(ChatMessage::assistant(
        QStringLiteral("Let me check."),
        {ToolCall{QStringLiteral("toolu_01A"), QStringLiteral("get_weather"), Json{{"city", "Paris"}}},
         ToolCall{QStringLiteral("call.b/2"), QStringLiteral("get_time"), Json{{"tz", "Europe/Paris"}}}}));
    r.messages.push_back(ChatMessage::toolResult(QStringLiteral("toolu_01A"), QStringLiteral("get_weather"), QStringLiteral("sunny, 21 C")));
    r.messages.push_back(ChatMessage::toolResult(QStringLiteral("call.b/2"), QStringLiteral("get_time"), QStringLiteral("14:05")));
    r.messages.push_back(ChatMessage::user(QStringLiteral("Thanks, summarise.")));
    r.tools = {weatherTool(), timeTool()};
    r.temperature = 0.25;
    r.maxTokens = 300;
    r.stop = {QStringLiteral("END"), QStringLiteral("\n\nHuman:")};

    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.response, qPrintable(o.describe()));
    QCOMPARE(o.response->text, QStringLiteral("It is sunny in Paris and 14:05 there."));

    QCOMPARE(server.requestCount(), 1);
    const RecordedRequest req = server.requests().front();
    QCOMPARE(req.method, QByteArray("POST"));
    QCOMPARE(req.path, QByteArray("/v1/messages"));
    QCOMPARE(req.header("x-api-key"), Key.toUtf8());
    QCOMPARE(req.header("anthropic-version"), QByteArray("2023-06-01"));
    QVERIFY2(req.header("content-type").startsWith("application/json"), req.header("content-type").constData());
    QVERIFY(req.header("authorization").isEmpty()); // Anthropic's key goes in x-api-key only
    QVERIFY(req.header("anthropic-beta").isEmpty());

    const Json body = req.json();
    QCOMPARE(QString::fromStdString(body["model"].get<std::string>()), Model);
    QCOMPARE(body["max_tokens"].get<int>(), 300);
    QCOMPARE(body["system"], Json("You are a travel assistant.\n\nAnswer in one sentence."));
    QCOMPARE(body["temperature"].get<double>(), 0.25);
    QCOMPARE(body["stop_sequences"], Json::array({"END", "\n\nHuman:"}));
    QVERIFY(!body.contains("stream"));
    QVERIFY(!body.contains("tool_choice")); // "auto" with parallel calls is the API's default

    // No system role among the messages; the tool results share one user turn, and the user's next
    // message joins it, so the roles alternate; the id the API would refuse is mapped the same way in
    // tool_use and tool_result.
    const Json expectedMessages = Json::array({
        Json{{"role", "user"}, {"content", Json::array({Json{{"type", "text"}, {"text", "Weather and time in Paris?"}}})}},
        Json{{"role", "assistant"},
             {"content", Json::array({Json{{"type", "text"}, {"text", "Let me check."}},
                                      Json{{"type", "tool_use"}, {"id", "toolu_01A"}, {"name", "get_weather"}, {"input", {{"city", "Paris"}}}},
                                      Json{{"type", "tool_use"}, {"id", "call_b_2"}, {"name", "get_time"}, {"input", {{"tz", "Europe/Paris"}}}}})}},
        Json{{"role", "user"},
             {"content", Json::array({Json{{"type", "tool_result"}, {"tool_use_id", "toolu_01A"}, {"content", "sunny, 21 C"}},
                                      Json{{"type", "tool_result"}, {"tool_use_id", "call_b_2"}, {"content", "14:05"}},
                                      Json{{"type", "text"}, {"text", "Thanks, summarise."}}})}},
    });
    QVERIFY2(body["messages"] == expectedMessages, body["messages"].dump(2).c_str());

    const Json expectedTools = Json::array({
        Json{{"name", "get_weather"}, {"description", "Current weather for a city."}, {"input_schema", weatherTool().parameters}},
        Json{{"name", "get_time"}, {"description", "The local time in a time zone."}, {"input_schema", timeTool().parameters}},
    });
    QVERIFY2(body["tools"] == expectedTools, body["tools"].dump(2).c_str());

    QStringList fields;
    for (auto it = body.begin(); it != body.end(); ++it)
        fields << QString::fromStdString(it.key());
    fields.sort();
    QCOMPARE(fields, (QStringList{"max_tokens", "messages", "model", "stop_sequences", "system", "temperature", "tools"}));
}

void TestLlmAnthropic::defaults_data()
{
    QTest::addColumn<QByteArray>("extraConfig");
    QTest::addColumn<int>("requestMaxTokens"); // 0: unset
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("maxTokens");
    QTest::addColumn<QByteArray>("path");

    QTest::newRow("nothing set: 4096 and the default model")
        << QByteArray(R"({"model": null})") << 0 << QStringLiteral("claude-3-5-haiku-latest") << 4096 << QByteArray("/v1/messages");
    QTest::newRow("config max_tokens") << QByteArray(R"({"max_tokens": 1000})") << 0 << Model << 1000 << QByteArray("/v1/messages");
    QTest::newRow("request max_tokens wins") << QByteArray(R"({"max_tokens": 1000})") << 64 << Model << 64 << QByteArray("/v1/messages");
    QTest::newRow("model_name alias") << QByteArray(R"({"model": null, "model_name": "claude-3-opus-20240229"})") << 0
                                      << QStringLiteral("claude-3-opus-20240229") << 4096 << QByteArray("/v1/messages");
    QTest::newRow("base URL ending in /v1") << QByteArray(R"({"base_url": "/v1"})") << 0 << Model << 4096 << QByteArray("/v1/messages");
    QTest::newRow("base URL under a proxy path") << QByteArray(R"({"base_url": "/anthropic"})") << 0 << Model << 4096
                                                 << QByteArray("/anthropic/v1/messages");
}

void TestLlmAnthropic::defaults()
{
    QFETCH(QByteArray, extraConfig);
    QFETCH(int, requestMaxTokens);
    QFETCH(QString, model);
    QFETCH(int, maxTokens);
    QFETCH(QByteArray, path);

    ScriptedHttpServer server;
    server.enqueue(textReply("ok"));
    Json extra = Json::parse(extraConfig.toStdString());
    if (extra.contains("base_url")) // a path under the server
        extra["base_url"] = server.baseUrl().toString().toStdString() + extra["base_url"].get<std::string>();
    Json config = configFor(server, extra);
    if (config["model"].is_null())
        config.erase("model");
    auto llm = makeProvider(config);

    ChatRequest r = simpleRequest();
    if (requestMaxTokens > 0)
        r.maxTokens = requestMaxTokens;
    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.response, qPrintable(o.describe()));
    QCOMPARE(server.requestCount(), 1);
    const RecordedRequest req = server.requests().front();
    QCOMPARE(req.path, path);
    const Json body = req.json();
    QCOMPARE(QString::fromStdString(body["model"].get<std::string>()), model);
    QCOMPARE(body["max_tokens"].get<int>(), maxTokens);
    QVERIFY(!body.contains("system"));
    QVERIFY(!body.contains("temperature"));
    QVERIFY(!body.contains("stop_sequences"));
    QVERIFY(!body.contains("tools"));
    QVERIFY(!body.contains("tool_choice"));
    QCOMPARE(body["messages"], Json::parse(R"([{"role":"user","content":[{"type":"text","text":"Hello"}]}])"));
}

void TestLlmAnthropic::environmentAndHeaders()
{
    ScriptedHttpServer server;
    server.enqueue(textReply("ok"));
    qputenv("ANTHROPIC_API_KEY", Key.toUtf8());
    qputenv("ANTHROPIC_BASE_URL", server.baseUrl().toString().toUtf8());
    std::unique_ptr<LlmProvider> llm;
    try {
        llm = makeProvider(Json{{"max_retries", 0},
                                {"temperature", 0.5},
                                {"anthropic_version", "2023-01-01"},
                                {"anthropic_beta", "prompt-caching-2024-07-31"}});
    } catch (...) {
        qunsetenv("ANTHROPIC_API_KEY");
        qunsetenv("ANTHROPIC_BASE_URL");
        throw;
    }
    qunsetenv("ANTHROPIC_API_KEY");
    qunsetenv("ANTHROPIC_BASE_URL");

    const Outcome o = outcomeOf(llm->chat(simpleRequest()));
    QVERIFY2(o.response, qPrintable(o.describe()));
    QCOMPARE(llm->id(), QStringLiteral("anthropic/claude-3-5-haiku-latest"));
    QCOMPARE(server.requestCount(), 1);
    const RecordedRequest req = server.requests().front();
    QCOMPARE(req.path, QByteArray("/v1/messages"));
    QCOMPARE(req.header("x-api-key"), Key.toUtf8());
    QCOMPARE(req.header("anthropic-version"), QByteArray("2023-01-01"));
    QCOMPARE(req.header("anthropic-beta"), QByteArray("prompt-caching-2024-07-31"));
    QCOMPARE(req.json()["temperature"].get<double>(), 0.5); // the config's, as the request set none
}

void TestLlmAnthropic::toolChoice_data()
{
    QTest::addColumn<QString>("choice");
    QTest::addColumn<bool>("parallel");
    QTest::addColumn<QByteArray>("expected"); // the tool_choice field, "null" when absent

    QTest::newRow("default") << QString() << true << QByteArray("null");
    QTest::newRow("default, one call at a time") << QString() << false << QByteArray(R"({"type":"auto","disable_parallel_tool_use":true})");
    QTest::newRow("auto") << QStringLiteral("auto") << true << QByteArray(R"({"type":"auto"})");
    QTest::newRow("required") << QStringLiteral("required") << true << QByteArray(R"({"type":"any"})");
    QTest::newRow("required, one call at a time") << QStringLiteral("required") << false
                                                  << QByteArray(R"({"type":"any","disable_parallel_tool_use":true})");
    QTest::newRow("none") << QStringLiteral("none") << true << QByteArray(R"({"type":"none"})");
    QTest::newRow("none, one call at a time") << QStringLiteral("none") << false << QByteArray(R"({"type":"none"})");
    QTest::newRow("a named tool") << QStringLiteral("get_time") << true << QByteArray(R"({"type":"tool","name":"get_time"})");
    QTest::newRow("a named tool, one call at a time") << QStringLiteral("get_weather") << false
                                                      << QByteArray(R"({"type":"tool","name":"get_weather","disable_parallel_tool_use":true})");
}

void TestLlmAnthropic::toolChoice()
{
    QFETCH(QString, choice);
    QFETCH(bool, parallel);
    QFETCH(QByteArray, expected);

    ScriptedHttpServer server;
    server.enqueue(textReply("ok"));
    auto llm = makeProvider(configFor(server));
    ChatRequest r = simpleRequest(QStringLiteral("What time is it in Tokyo?"));
    r.tools = {weatherTool(), timeTool()};
    r.toolChoice = choice;
    r.parallelToolCalls = parallel;
    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.response, qPrintable(o.describe()));
    const Json body = server.requests().front().json();
    const Json want = Json::parse(expected.toStdString());
    if (want.is_null())
        QVERIFY2(!body.contains("tool_choice"), body.dump().c_str());
    else
        QVERIFY2(body.contains("tool_choice") && body["tool_choice"] == want, body.dump().c_str());
    QCOMPARE(body["tools"].size(), size_t(2));
}

void TestLlmAnthropic::refusedLocally_data()
{
    QTest::addColumn<QString>("choice");
    QTest::addColumn<bool>("withTools");
    QTest::addColumn<double>("temperature"); // < 0: unset
    QTest::addColumn<QString>("mentions");

    QTest::newRow("a tool the request lacks") << QStringLiteral("get_stock") << true << -1.0 << QStringLiteral("get_stock");
    QTest::newRow("required without tools") << QStringLiteral("required") << false << -1.0 << QStringLiteral("offers none");
    QTest::newRow("temperature above 1") << QString() << false << 1.5 << QStringLiteral("from 0 to 1");
}

void TestLlmAnthropic::refusedLocally()
{
    QFETCH(QString, choice);
    QFETCH(bool, withTools);
    QFETCH(double, temperature);
    QFETCH(QString, mentions);

    ScriptedHttpServer server;
    auto llm = makeProvider(configFor(server));
    ChatRequest r = simpleRequest();
    if (withTools)
        r.tools = {weatherTool()};
    r.toolChoice = choice;
    if (temperature >= 0)
        r.temperature = temperature;
    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.error, qPrintable(o.describe()));
    QCOMPARE(o.error->kind(), ErrorKind::InvalidArgument);
    QVERIFY2(o.error->message().contains(mentions), qPrintable(o.error->message()));
    QCOMPARE(server.requestCount(), 0);
}

void TestLlmAnthropic::replyText()
{
    ScriptedHttpServer server;
    server.enqueue(ScriptedReply::json(dump(messageReply(
        Json::array({Json{{"type", "text"}, {"text", "Paris is the capital "}},
                     Json{{"type", "text"}, {"text", "of France."}}}),
        "end_turn",
        Json{{"input_tokens", 20}, {"cache_creation_input_tokens", 3}, {"cache_read_input_tokens", 2}, {"output_tokens", 9}}))));
    auto llm = makeProvider(configFor(server));
    const Outcome o = outcomeOf(llm->chat(simpleRequest(QStringLiteral("Capital of France?"))));
    QVERIFY2(o.response, qPrintable(o.describe()));
    QCOMPARE(o.response->text, QStringLiteral("Paris is the capital of France."));
    QVERIFY(o.response->toolCalls.empty());
    QCOMPARE(o.response->finishReason, QStringLiteral("stop"));
    QCOMPARE(o.response->usage.promptTokens, 25); // input plus cache writes and reads
    QCOMPARE(o.response->usage.completionTokens, 9);
    QCOMPARE(o.response->model, Model);
    QVERIFY(o.response->structured.is_null());
}

void TestLlmAnthropic::replyParallelToolUse()
{
    ScriptedHttpServer server;
    server.enqueue(ScriptedReply::json(dump(messageReply(
        Json::array({Json{{"type", "text"}, {"text", "I'll look up both."}},
                     Json{{"type", "tool_use"}, {"id", "toolu_01T1x1fJ34qAmk2tNTrN7Up6"}, {"name", "get_weather"}, {"input", {{"city", "Paris"}}}},
                     Json{{"type", "tool_use"}, {"id", "toolu_01Bnd5GhvjSbw4YKc3mJFQ2e"}, {"name", "get_time"}, {"input", {{"tz", "Europe/Paris"}}}}}),
        "tool_use", Json{{"input_tokens", 410}, {"output_tokens", 96}}))));
    auto llm = makeProvider(configFor(server));
    ChatRequest r = simpleRequest(QStringLiteral("Weather and time in Paris?"));
    r.tools = {weatherTool(), timeTool()};
    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.response, qPrintable(o.describe()));
    QCOMPARE(o.response->text, QStringLiteral("I'll look up both."));
    QCOMPARE(o.response->finishReason, QStringLiteral("tool_calls"));
    QCOMPARE(o.response->toolCalls.size(), size_t(2));
    QCOMPARE(o.response->toolCalls[0].id, QStringLiteral("toolu_01T1x1fJ34qAmk2tNTrN7Up6"));
    QCOMPARE(o.response->toolCalls[0].name, QStringLiteral("get_weather"));
    QCOMPARE(o.response->toolCalls[0].arguments, Json({{"city", "Paris"}}));
    QCOMPARE(o.response->toolCalls[1].id, QStringLiteral("toolu_01Bnd5GhvjSbw4YKc3mJFQ2e"));
    QCOMPARE(o.response->toolCalls[1].name, QStringLiteral("get_time"));
    QCOMPARE(o.response->toolCalls[1].arguments, Json({{"tz", "Europe/Paris"}}));
    QCOMPARE(o.response->usage.promptTokens, 410);
    QCOMPARE(o.response->usage.completionTokens, 96);
}

void TestLlmAnthropic::stopReasons_data()
{
    QTest::addColumn<QString>("stopReason");
    QTest::addColumn<QString>("finishReason");

    QTest::newRow("end_turn") << QStringLiteral("end_turn") << QStringLiteral("stop");
    QTest::newRow("stop_sequence") << QStringLiteral("stop_sequence") << QStringLiteral("stop");
    QTest::newRow("max_tokens") << QStringLiteral("max_tokens") << QStringLiteral("length");
    QTest::newRow("tool_use") << QStringLiteral("tool_use") << QStringLiteral("tool_calls");
    QTest::newRow("refusal") << QStringLiteral("refusal") << QStringLiteral("content_filter");
    QTest::newRow("pause_turn (passed through)") << QStringLiteral("pause_turn") << QStringLiteral("pause_turn");
}

void TestLlmAnthropic::stopReasons()
{
    QFETCH(QString, stopReason);
    QFETCH(QString, finishReason);

    ScriptedHttpServer server;
    Json reply = messageReply(Json::array({Json{{"type", "text"}, {"text", "Once upon a"}}}));
    reply["stop_reason"] = stopReason.toStdString();
    if (stopReason == QLatin1String("stop_sequence"))
        reply["stop_sequence"] = "END";
    server.enqueue(ScriptedReply::json(dump(reply)));
    auto llm = makeProvider(configFor(server));
    const Outcome o = outcomeOf(llm->chat(simpleRequest()));
    QVERIFY2(o.response, qPrintable(o.describe()));
    QCOMPARE(o.response->finishReason, finishReason);
    QCOMPARE(o.response->text, QStringLiteral("Once upon a"));
}

void TestLlmAnthropic::malformedReply_data()
{
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("mentions");

    QTest::newRow("not JSON") << QByteArray("<html><title>Bad gateway</title></html>") << QStringLiteral("not JSON");
    QTest::newRow("truncated JSON") << QByteArray(R"({"id":"msg_1","type":"message","content":[{"type":"te)") << QStringLiteral("not JSON");
    QTest::newRow("no content array") << QByteArray(R"({"id":"msg_1","type":"message","role":"assistant"})") << QStringLiteral("content");
    QTest::newRow("a JSON array") << QByteArray(R"([1,2,3])") << QStringLiteral("not a JSON object");
}

void TestLlmAnthropic::malformedReply()
{
    QFETCH(QByteArray, body);
    QFETCH(QString, mentions);

    ScriptedHttpServer server;
    server.enqueue(ScriptedReply::json(body));
    auto llm = makeProvider(configFor(server));
    const Outcome o = outcomeOf(llm->chat(simpleRequest()));
    QVERIFY2(o.error, qPrintable(o.describe()));
    QCOMPARE(o.error->kind(), ErrorKind::MalformedReply);
    QVERIFY2(o.error->message().contains(mentions), qPrintable(o.error->message()));
    QVERIFY2(o.error->message().contains(QLatin1String("anthropic")), qPrintable(o.error->message()));
}

void TestLlmAnthropic::streamText()
{
    ScriptedHttpServer server;
    QList<QByteArray> events = textStream({QStringLiteral("Hel"), QStringLiteral("lo, "), QStringLiteral("wörld"), QStringLiteral("!")});
    // One event split across two chunks, and two events in one chunk.
    const QByteArray third = events[4];
    events[4] = third.left(17);
    events.insert(5, third.mid(17));
    events[1] += events[2];
    events.removeAt(2);
    server.enqueue(ScriptedReply::sse(events));
    auto llm = makeProvider(configFor(server));
    QSignalSpy texts(llm.get(), &LlmProvider::textDelta);
    QSignalSpy calls(llm.get(), &LlmProvider::toolCallDelta);

    ChatRequest r = simpleRequest(QStringLiteral("Say hello."));
    r.stream = true;
    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.response, qPrintable(o.describe()));

    QStringList pieces;
    for (const QList<QVariant> &args : texts)
        pieces << args.at(0).toString();
    QCOMPARE(pieces, (QStringList{"Hel", "lo, ", "wörld", "!"}));
    QCOMPARE(calls.count(), 0);
    QCOMPARE(o.response->text, QStringLiteral("Hello, wörld!"));
    QCOMPARE(o.response->finishReason, QStringLiteral("stop"));
    QCOMPARE(o.response->usage.promptTokens, 15);
    QCOMPARE(o.response->usage.completionTokens, 7);
    QCOMPARE(o.response->model, Model);

    const RecordedRequest req = server.requests().front();
    QCOMPARE(req.path, QByteArray("/v1/messages"));
    QCOMPARE(req.json()["stream"], Json(true));
    QVERIFY2(req.header("accept").contains("text/event-stream"), req.header("accept").constData());
    QCOMPARE(req.header("x-api-key"), Key.toUtf8());
}

void TestLlmAnthropic::streamToolUse()
{
    ScriptedHttpServer server;
    QList<QByteArray> events;
    events << sse("message_start", Json{{"message", {{"id", "msg_tools"}, {"type", "message"}, {"role", "assistant"}, {"model", Model.toStdString()}, {"content", Json::array()}, {"stop_reason", nullptr}, {"usage", {{"input_tokens", 472}, {"output_tokens", 2}}}}}});
    events << sse("content_block_start", Json{{"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}});
    events << sse("content_block_delta", Json{{"index", 0}, {"delta", {{"type", "text_delta"}, {"text", "Checking both."}}}});
    events << sse("content_block_stop", Json{{"index", 0}});
    events << sse("content_block_start", Json{{"index", 1}, {"content_block", {{"type", "tool_use"}, {"id", "toolu_A1"}, {"name", "get_weather"}, {"input", Json::object()}}}});
    for (const char *piece : {"", "{\"city\":", " \"Par", "is\"}"})
        events << sse("content_block_delta", Json{{"index", 1}, {"delta", {{"type", "input_json_delta"}, {"partial_json", piece}}}});
    events << sse("content_block_stop", Json{{"index", 1}});
    events << sse("ping", Json::object());
    events << sse("content_block_start", Json{{"index", 2}, {"content_block", {{"type", "tool_use"}, {"id", "toolu_B2"}, {"name", "get_time"}, {"input", Json::object()}}}});
    for (const char *piece : {"{\"tz\"", ": \"UTC\"}"})
        events << sse("content_block_delta", Json{{"index", 2}, {"delta", {{"type", "input_json_delta"}, {"partial_json", piece}}}});
    events << sse("content_block_stop", Json{{"index", 2}});
    events << sse("message_delta", Json{{"delta", {{"stop_reason", "tool_use"}, {"stop_sequence", nullptr}}},
                                        {"usage", {{"output_tokens", 89}}}});
    events << sse("message_stop", Json::object());
    server.enqueue(ScriptedReply::sse(events));

    auto llm = makeProvider(configFor(server));
    QSignalSpy texts(llm.get(), &LlmProvider::textDelta);
    QSignalSpy calls(llm.get(), &LlmProvider::toolCallDelta);
    ChatRequest r = simpleRequest(QStringLiteral("Weather in Paris and the time in UTC?"));
    r.tools = {weatherTool(), timeTool()};
    r.stream = true;
    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.response, qPrintable(o.describe()));

    QCOMPARE(texts.count(), 1);
    QCOMPARE(texts.at(0).at(0).toString(), QStringLiteral("Checking both."));

    // (index, id, name, arguments piece) in arrival order; the index is the content block's.
    QStringList seen;
    for (const QList<QVariant> &a : calls)
        seen << QStringLiteral("%1|%2|%3|%4").arg(a.at(0).toInt()).arg(a.at(1).toString(), a.at(2).toString(), a.at(3).toString());
    const QStringList expected = {
        "1|toolu_A1|get_weather|",
        "1|||",
        "1|||{\"city\":",
        "1||| \"Par",
        "1|||is\"}",
        "2|toolu_B2|get_time|",
        "2|||{\"tz\"",
        "2|||: \"UTC\"}",
    };
    QCOMPARE(seen, expected);

    QCOMPARE(o.response->text, QStringLiteral("Checking both."));
    QCOMPARE(o.response->finishReason, QStringLiteral("tool_calls"));
    QCOMPARE(o.response->toolCalls.size(), size_t(2));
    QCOMPARE(o.response->toolCalls[0].id, QStringLiteral("toolu_A1"));
    QCOMPARE(o.response->toolCalls[0].name, QStringLiteral("get_weather"));
    QCOMPARE(o.response->toolCalls[0].arguments, Json({{"city", "Paris"}}));
    QCOMPARE(o.response->toolCalls[1].id, QStringLiteral("toolu_B2"));
    QCOMPARE(o.response->toolCalls[1].name, QStringLiteral("get_time"));
    QCOMPARE(o.response->toolCalls[1].arguments, Json({{"tz", "UTC"}}));
    QCOMPARE(o.response->usage.promptTokens, 472);
    QCOMPARE(o.response->usage.completionTokens, 89);
}

void TestLlmAnthropic::streamErrorEvent_data()
{
    QTest::addColumn<QByteArray>("type");
    QTest::addColumn<QString>("message");
    QTest::addColumn<ErrorKind>("kind");
    QTest::addColumn<int>("status");

    QTest::newRow("overloaded_error") << QByteArray("overloaded_error") << QStringLiteral("Overloaded") << ErrorKind::ServerError << 529;
    QTest::newRow("api_error") << QByteArray("api_error") << QStringLiteral("Internal server error") << ErrorKind::ServerError << 500;
    QTest::newRow("rate_limit_error") << QByteArray("rate_limit_error")
                                      << QStringLiteral("Number of request tokens has exceeded your per-minute rate limit")
                                      << ErrorKind::RateLimited << 429;
    QTest::newRow("invalid_request_error, too long") << QByteArray("invalid_request_error")
                                                     << QStringLiteral("prompt is too long: 208310 tokens > 200000 maximum")
                                                     << ErrorKind::ContextLength << 400;
    QTest::newRow("authentication_error") << QByteArray("authentication_error") << QStringLiteral("invalid x-api-key")
                                          << ErrorKind::Authentication << 401;
}

void TestLlmAnthropic::streamErrorEvent()
{
    QFETCH(QByteArray, type);
    QFETCH(QString, message);
    QFETCH(ErrorKind, kind);
    QFETCH(int, status);

    ScriptedHttpServer server;
    QList<QByteArray> events = textStream({QStringLiteral("Partial answ")});
    events = events.mid(0, 4); // message_start, block start, ping, one delta
    events << QByteArray("event: error\ndata: ") + errorBody(type.constData(), message) + "\n\n";
    server.enqueue(ScriptedReply::sse(events));
    auto llm = makeProvider(configFor(server, Json{{"max_retries", 2}}));
    QSignalSpy texts(llm.get(), &LlmProvider::textDelta);
    ChatRequest r = simpleRequest();
    r.stream = true;
    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.error, qPrintable(o.describe()));
    QCOMPARE(o.error->kind(), kind);
    QCOMPARE(o.error->httpStatus(), status);
    QVERIFY2(o.error->message().contains(message), qPrintable(o.error->message()));
    QVERIFY2(o.error->message().contains(QString::fromLatin1(type)), qPrintable(o.error->message()));
    QVERIFY2(o.error->message().contains(QStringLiteral("anthropic chat (") + Model + QLatin1Char(')')), qPrintable(o.error->message()));
    QCOMPARE(texts.count(), 1);         // what arrived before the error was still streamed
    QCOMPARE(server.requestCount(), 1); // a stream that has begun is not retried
}

void TestLlmAnthropic::overloadedBeforeContentIsRetried()
{
    // Anthropic reports overload as an error event on HTTP 200, often before any content: nothing
    // has been passed on yet, so the stream is retried like an error status would be.
    ScriptedHttpServer server;
    QList<QByteArray> first = textStream({QStringLiteral("never")}).mid(0, 1); // message_start only
    first << QByteArray("event: error\ndata: ") + errorBody("overloaded_error", QStringLiteral("Overloaded")) + "\n\n";
    server.enqueue(ScriptedReply::sse(first));
    server.enqueue(ScriptedReply::sse(textStream({QStringLiteral("Hello"), QStringLiteral(" there")})));
    auto llm = makeProvider(configFor(server, Json{{"max_retries", 2}}));
    QSignalSpy texts(llm.get(), &LlmProvider::textDelta);
    ChatRequest r = simpleRequest();
    r.stream = true;
    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.response, qPrintable(o.describe()));
    QCOMPARE(o.response->text, QStringLiteral("Hello there"));
    QCOMPARE(texts.count(), 2);
    QCOMPARE(server.requestCount(), 2);

    // With no retries left, the same event fails the chat.
    ScriptedHttpServer once;
    once.enqueue(ScriptedReply::sse(first));
    auto strict = makeProvider(configFor(once, Json{{"max_retries", 0}}));
    const Outcome failed = outcomeOf(strict->chat(r));
    QVERIFY2(failed.error && failed.error->kind() == ErrorKind::ServerError, qPrintable(failed.describe()));
    QCOMPARE(once.requestCount(), 1);
}

void TestLlmAnthropic::droppedStream()
{
    ScriptedHttpServer server;
    ScriptedReply reply = ScriptedReply::sse(textStream({QStringLiteral("Once "), QStringLiteral("upon")}).mid(0, 5), 20);
    reply.dropAfterChunks = true;
    server.enqueue(reply);
    auto llm = makeProvider(configFor(server, Json{{"max_retries", 2}}));
    QSignalSpy texts(llm.get(), &LlmProvider::textDelta);
    ChatRequest r = simpleRequest();
    r.stream = true;
    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.error, qPrintable(o.describe()));
    QCOMPARE(o.error->kind(), ErrorKind::Network);
    QCOMPARE(texts.count(), 2);
    QCOMPARE(server.requestCount(), 1);
}

void TestLlmAnthropic::malformedStreamEvent()
{
    ScriptedHttpServer server;
    QList<QByteArray> events = textStream({QStringLiteral("ok")}).mid(0, 2);
    events << QByteArray("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\n\n");
    server.enqueue(ScriptedReply::sse(events));
    auto llm = makeProvider(configFor(server));
    ChatRequest r = simpleRequest();
    r.stream = true;
    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.error, qPrintable(o.describe()));
    QCOMPARE(o.error->kind(), ErrorKind::MalformedReply);
    QVERIFY2(o.error->message().contains(QLatin1String("not JSON")), qPrintable(o.error->message()));
}

void TestLlmAnthropic::structuredOutputFallback()
{
    const Json schema = Json::parse(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},
                                        "required":["name","age"],"additionalProperties":false})");
    ScriptedHttpServer server;
    server.enqueue(ScriptedReply::json(dump(messageReply(Json::array({Json{
        {"type", "text"}, {"text", "Here is the record:\n```json\n{\"name\": \"Ada Lovelace\", \"age\": 36}\n```"}}})))));
    auto llm = makeProvider(configFor(server));
    ChatRequest r;
    r.messages.push_back(ChatMessage::system(QStringLiteral("You extract people.")));
    r.messages.push_back(ChatMessage::user(QStringLiteral("Ada Lovelace died at 36.")));
    r.responseSchema = schema;
    r.responseSchemaName = QStringLiteral("person");
    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.response, qPrintable(o.describe()));
    QCOMPARE(o.response->structured, Json({{"name", "Ada Lovelace"}, {"age", 36}}));

    QCOMPARE(server.requestCount(), 1);
    const Json body = server.requests().front().json();
    // The instruction joins the system text; Anthropic has no response-format field to carry the schema.
    QCOMPARE(QString::fromStdString(body["system"].get<std::string>()),
             QStringLiteral("You extract people.\n\n") + JsonReply::instructionFor(schema));
    QVERIFY(!body.contains("response_format"));
    QVERIFY(!body.contains("output_format"));
    QCOMPARE(body["messages"].size(), size_t(1));
}

void TestLlmAnthropic::structuredOutputRepair()
{
    const Json schema = Json::parse(R"({"type":"object","properties":{"city":{"type":"string"},"population":{"type":"integer"}},
                                        "required":["city","population"]})");
    ScriptedHttpServer server;
    server.enqueue(ScriptedReply::json(dump(messageReply(
        Json::array({Json{{"type", "text"}, {"text", "{\"city\": \"Lyon\", \"population\": \"about half a million\"}"}}}),
        "end_turn", Json{{"input_tokens", 100}, {"output_tokens", 20}}))));
    server.enqueue(ScriptedReply::json(dump(messageReply(
        Json::array({Json{{"type", "text"}, {"text", "{\"city\": \"Lyon\", \"population\": 522250}"}}}),
        "end_turn", Json{{"input_tokens", 150}, {"output_tokens", 15}}))));
    auto llm = makeProvider(configFor(server));
    ChatRequest r = simpleRequest(QStringLiteral("Lyon's population?"));
    r.responseSchema = schema;
    const Outcome o = outcomeOf(llm->chat(r));
    QVERIFY2(o.response, qPrintable(o.describe()));
    QCOMPARE(o.response->structured, Json({{"city", "Lyon"}, {"population", 522250}}));
    QCOMPARE(o.response->usage.promptTokens, 250);
    QCOMPARE(o.response->usage.completionTokens, 35);

    // The correction round: user, assistant (the bad reply), user (what is wrong), roles alternating.
    QCOMPARE(server.requestCount(), 2);
    const Json second = server.requests().at(1).json();
    QCOMPARE(second["messages"].size(), size_t(3));
    QCOMPARE(second["messages"][0]["role"], Json("user"));
    QCOMPARE(second["messages"][1]["role"], Json("assistant"));
    QCOMPARE(second["messages"][1]["content"][0]["text"], Json("{\"city\": \"Lyon\", \"population\": \"about half a million\"}"));
    QCOMPARE(second["messages"][2]["role"], Json("user"));
    QVERIFY(second.contains("system"));
}

void TestLlmAnthropic::httpErrors_data()
{
    QTest::addColumn<int>("status");
    QTest::addColumn<QByteArray>("type");
    QTest::addColumn<QString>("message");
    QTest::addColumn<int>("maxRetries");
    QTest::addColumn<ErrorKind>("kind");
    QTest::addColumn<int>("requests");

    QTest::newRow("401 authentication_error") << 401 << QByteArray("authentication_error") << QStringLiteral("invalid x-api-key")
                                              << 2 << ErrorKind::Authentication << 1;
    QTest::newRow("403 permission_error") << 403 << QByteArray("permission_error")
                                          << QStringLiteral("Your API key does not have permission to use the specified resource.")
                                          << 2 << ErrorKind::Authentication << 1;
    QTest::newRow("400 prompt too long") << 400 << QByteArray("invalid_request_error")
                                         << QStringLiteral("prompt is too long: 212345 tokens > 200000 maximum") << 2
                                         << ErrorKind::ContextLength << 1;
    QTest::newRow("400 invalid request") << 400 << QByteArray("invalid_request_error")
                                         << QStringLiteral("messages: roles must alternate between \"user\" and \"assistant\"") << 2
                                         << ErrorKind::BadRequest << 1;
    QTest::newRow("404 not_found_error") << 404 << QByteArray("not_found_error") << QStringLiteral("model: claude-9-nonexistent")
                                         << 2 << ErrorKind::BadRequest << 1;
    QTest::newRow("529 overloaded, retries exhausted") << 529 << QByteArray("overloaded_error") << QStringLiteral("Overloaded")
                                                       << 1 << ErrorKind::ServerError << 2;
    QTest::newRow("500 api_error, no retries") << 500 << QByteArray("api_error") << QStringLiteral("Internal server error")
                                               << 0 << ErrorKind::ServerError << 1;
    QTest::newRow("429 rate_limit_error, retries exhausted") << 429 << QByteArray("rate_limit_error")
                                                             << QStringLiteral("Number of request tokens has exceeded your per-minute rate limit")
                                                             << 1 << ErrorKind::RateLimited << 2;
}

void TestLlmAnthropic::httpErrors()
{
    QFETCH(int, status);
    QFETCH(QByteArray, type);
    QFETCH(QString, message);
    QFETCH(int, maxRetries);
    QFETCH(ErrorKind, kind);
    QFETCH(int, requests);

    ScriptedHttpServer server;
    const QByteArray body = errorBody(type.constData(), message);
    server.setHandler([status, body](const RecordedRequest &) {
        ScriptedReply reply = ScriptedReply::json(body, status);
        reply.headers.append(qMakePair(QByteArray("request-id"), QByteArray("req_011CSHoEeqs5C35K2UUqR7Fy")));
        if (status == 429 || status == 529)
            reply.headers.append(qMakePair(QByteArray("retry-after"), QByteArray("0")));
        return reply;
    });
    auto llm = makeProvider(configFor(server, Json{{"max_retries", maxRetries}}));
    const Outcome o = outcomeOf(llm->chat(simpleRequest()));
    QVERIFY2(o.error, qPrintable(o.describe()));
    QCOMPARE(o.error->kind(), kind);
    QCOMPARE(o.error->httpStatus(), status);
    QVERIFY2(o.error->message().contains(message), qPrintable(o.error->message()));
    QVERIFY2(o.error->message().contains(QStringLiteral("anthropic chat")), qPrintable(o.error->message()));
    QVERIFY2(!o.error->message().contains(Key), qPrintable(o.error->message()));
    QCOMPARE(server.requestCount(), requests);
}

void TestLlmAnthropic::rateLimitedThenSuccess()
{
    ScriptedHttpServer server;
    ScriptedReply limited = ScriptedReply::json(
        errorBody("rate_limit_error", QStringLiteral("Number of requests has exceeded your per-minute rate limit")), 429);
    limited.headers.append(qMakePair(QByteArray("retry-after"), QByteArray("1")));
    limited.headers.append(qMakePair(QByteArray("anthropic-ratelimit-requests-remaining"), QByteArray("0")));
    server.enqueue(limited);
    server.enqueue(textReply("Back in business."));
    auto llm = makeProvider(configFor(server, Json{{"max_retries", 2}}));
    const Outcome o = outcomeOf(llm->chat(simpleRequest()));
    QVERIFY2(o.response, qPrintable(o.describe()));
    QCOMPARE(o.response->text, QStringLiteral("Back in business."));
    QCOMPARE(server.requestCount(), 2);
    // The retry is the same request.
    QCOMPARE(server.requests().at(1).body, server.requests().at(0).body);
    QCOMPARE(server.requests().at(1).header("x-api-key"), Key.toUtf8());
}

void TestLlmAnthropic::missingKey()
{
    qunsetenv("ANTHROPIC_API_KEY");
    qunsetenv("ANTHROPIC_BASE_URL");
    // The public endpoint, reached through the scripted server as a proxy: had anything been sent,
    // the server would have seen it.
    ScriptedHttpServer server;
    auto llm = makeProvider(Json{{"proxy", server.baseUrl().toString().toStdString()}, {"max_retries", 0}, {"timeout", 5}});
    const Outcome o = outcomeOf(llm->chat(simpleRequest()));
    QVERIFY2(o.error, qPrintable(o.describe()));
    QCOMPARE(o.error->kind(), ErrorKind::Authentication);
    QVERIFY2(o.error->message().contains(QLatin1String("ANTHROPIC_API_KEY")), qPrintable(o.error->message()));
    QVERIFY2(o.error->message().contains(QLatin1String("api_key")), qPrintable(o.error->message()));
    QCOMPARE(server.requestCount(), 0);
}

void TestLlmAnthropic::keyNeverLeaks()
{
    // A server that echoes the key back in its error message, over HTTP and in a stream's error event.
    ScriptedHttpServer server;
    server.enqueue(ScriptedReply::json(
        errorBody("authentication_error", QStringLiteral("invalid x-api-key: ") + Key), 401));
    server.enqueue(ScriptedReply::sse(
        {sse("message_start", Json{{"message", {{"model", Model.toStdString()}, {"usage", {{"input_tokens", 3}}}}}}),
         QByteArray("event: error\ndata: ") + errorBody("permission_error", QStringLiteral("key ") + Key + QStringLiteral(" is disabled")) + "\n\n"}));
    auto llm = makeProvider(configFor(server));

    const Outcome first = outcomeOf(llm->chat(simpleRequest()));
    QVERIFY2(first.error, qPrintable(first.describe()));
    QCOMPARE(first.error->kind(), ErrorKind::Authentication);
    QVERIFY2(!first.error->message().contains(Key), qPrintable(first.error->message()));
    QVERIFY2(first.error->message().contains(QLatin1String("[redacted]")), qPrintable(first.error->message()));

    ChatRequest r = simpleRequest();
    r.stream = true;
    const Outcome second = outcomeOf(llm->chat(r));
    QVERIFY2(second.error, qPrintable(second.describe()));
    QCOMPARE(second.error->kind(), ErrorKind::Authentication);
    QVERIFY2(!second.error->message().contains(Key), qPrintable(second.error->message()));
    QVERIFY2(second.error->message().contains(QLatin1String("is disabled")), qPrintable(second.error->message()));

    // The key did go out, in its header.
    QCOMPARE(server.requests().at(0).header("x-api-key"), Key.toUtf8());
    // cleanup() checks the log lines.
}

void TestLlmAnthropic::logsWereCaptured()
{
    // The log check of cleanup() is not vacuous: the HTTP layer logs each request at debug level.
    ScriptedHttpServer server;
    server.enqueue(textReply("ok"));
    auto llm = makeProvider(configFor(server));
    const Outcome o = outcomeOf(llm->chat(simpleRequest()));
    QVERIFY2(o.response, qPrintable(o.describe()));
    QVERIFY2(!capturedLogs().isEmpty(), "no log line was captured with mneme.*=true");
}

QTEST_GUILESS_MAIN(TestLlmAnthropic)
#include "test_llm_anthropic.moc"
