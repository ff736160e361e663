// The openai LLM plugin against the scripted HTTP server: the keys "openai" and "azure" and an
// OpenAI-compatible base URL; requests as sent, replies as parsed, streamed text and parallel tool
// calls, native and fallback structured output, HTTP errors and their kinds, and API keys kept out
// of logs and errors.

#include "chat_outcome.h"
#include "log_capture.h"
#include "scripted_http_server.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/provider_settings.h>

#include <QElapsedTimer>
#include <QLoggingCategory>
#include <QMutex>
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

namespace {

const std::string Secret = "sk-test-SECRET-abcdef123456";
const std::string AzureSecret = "azure-SECRET-0123456789abcdef";

std::unique_ptr<LlmProvider> make(const QString &key, const Json &config)
{
    return PluginRegistry::instance().createLlm(key, config);
}

// "openai" on the scripted server, as OpenAI itself would be used: with a key, schema natively.
Json openaiConfig(const ScriptedHttpServer &server, Json extra = Json::object())
{
    Json config = {{"base_url", server.baseUrl().toString().toStdString() + "/v1"},
                   {"api_key", Secret},
                   {"supports_json_schema", true},
                   {"max_retries", 1},
                   {"timeout", 10}};
    config.update(extra);
    return config;
}

// A local OpenAI-compatible server (vLLM, llama.cpp, LM Studio): base URL only, no key.
Json compatibleConfig(const ScriptedHttpServer &server, Json extra = Json::object())
{
    Json config = {{"base_url", server.baseUrl().toString().toStdString() + "/v1"},
                   {"model", "qwen2.5-7b-instruct"},
                   {"max_retries", 1},
                   {"timeout", 10}};
    config.update(extra);
    return config;
}

Json azureConfig(const ScriptedHttpServer &server, Json extra = Json::object())
{
    Json config = {{"api_base", server.baseUrl().toString().toStdString()},
                   {"deployment_id", "gpt4o-prod"},
                   {"api_key", AzureSecret},
                   {"max_retries", 1},
                   {"timeout", 10}};
    config.update(extra);
    return config;
}

// A Chat Completions reply.
QByteArray completion(const Json &message, const std::string &finish = "stop", int prompt = 11, int completionTokens = 7)
{
    Json m = message;
    m["role"] = "assistant";
    if (!m.contains("content"))
        m["content"] = nullptr;
    return QByteArray::fromStdString(Json{{"id", "chatcmpl-1"},
                                          {"object", "chat.completion"},
                                          {"model", "gpt-4o-mini-2024-07-18"},
                                          {"choices", {{{"index", 0}, {"message", m}, {"finish_reason", finish}}}},
                                          {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completionTokens}, {"total_tokens", prompt + completionTokens}}}}
                                         .dump());
}

QByteArray textReply(const std::string &text, int prompt = 11, int completionTokens = 7)
{
    return completion(Json{{"content", text}}, "stop", prompt, completionTokens);
}

QByteArray errorBody(const std::string &message, const std::string &type, const Json &code)
{
    return QByteArray::fromStdString(Json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}}.dump());
}

// One SSE event carrying a chunk.
QByteArray sseEvent(const Json &chunk)
{
    return "data: " + QByteArray::fromStdString(chunk.dump()) + "\n\n";
}

Json chunkWith(const Json &delta, const Json &finish = nullptr)
{
    return Json{{"id", "chatcmpl-2"},
                {"object", "chat.completion.chunk"},
                {"model", "gpt-4o-mini-2024-07-18"},
                {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
}

Json usageChunk(int prompt, int completionTokens)
{
    return Json{{"id", "chatcmpl-2"},
                {"object", "chat.completion.chunk"},
                {"model", "gpt-4o-mini-2024-07-18"},
                {"choices", Json::array()},
                {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completionTokens}}}};
}

ChatRequest ask(const QString &text)
{
    ChatRequest r;
    r.messages = {ChatMessage::system(QStringLiteral("You are terse.")), ChatMessage::user(text)};
    return r;
}

// A schema OpenAI's strict mode accepts.
Json personSchema()
{
    return Json{{"type", "object"},
                {"properties", {{"name", {{"type", "string"}}}, {"age", {{"type", "integer"}}}}},
                {"required", {"name", "age"}},
                {"additionalProperties", false}};
}

// What a provider streamed, in order; filled on the network thread.
struct Deltas
{
    struct Call
    {
        int index;
        QString id, name, arguments;
    };
    mutable QMutex mutex;
    QStringList text;
    QList<Call> calls;

    explicit Deltas(LlmProvider *provider)
    {
        QObject::connect(
            provider, &LlmProvider::textDelta, provider, [this](const QString &t) {
                QMutexLocker lock(&mutex);
                text << t;
            },
            Qt::DirectConnection);
        QObject::connect(
            provider, &LlmProvider::toolCallDelta, provider,
            [this](int index, const QString &id, const QString &name, const QString &args) {
                QMutexLocker lock(&mutex);
                calls << Call{index, id, name, args};
            },
            Qt::DirectConnection);
    }
};

} // namespace

class TestLlmOpenAi : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        // The machine's own settings must not leak into the tests.
        for (const char *name : {"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "AZURE_API_KEY",
                                 "AZURE_OPENAI_API_KEY", "AZURE_API_BASE", "AZURE_OPENAI_ENDPOINT", "AZURE_API_VERSION"})
            qunsetenv(name);
        QVERIFY(PluginRegistry::instance().hasKey(PluginRegistry::Kind::Llm, QStringLiteral("openai")));
        QVERIFY(PluginRegistry::instance().hasKey(PluginRegistry::Kind::Llm, QStringLiteral("azure")));
    }

    // ---- requests and replies ------------------------------------------------------------------

    // The whole request body of a tool conversation, the Bearer key, and the parsed reply.
    void openaiRequestAndReply()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(completion(
            Json{{"content", nullptr},
                 {"tool_calls", {{{"id", "call_a"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Oslo\"}"}}}}, {{"id", "call_b"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", "not json"}}}}}}},
            "tool_calls", 50, 20)));
        auto llm = make(QStringLiteral("openai"),
                        openaiConfig(server, {{"model", "gpt-4o"}, {"organization", "org-42"}, {"project", "proj_7"}, {"headers", {{"X-Title", "Mneme tests"}}}}));
        QCOMPARE(llm->id(), QStringLiteral("openai/gpt-4o"));
        QVERIFY(llm->supportsFunctionCalling());
        QVERIFY(llm->capabilities().testFlag(LlmProvider::Capability::Streaming));
        QVERIFY(llm->capabilities().testFlag(LlmProvider::Capability::ParallelTools));

        ChatRequest request = ask(QStringLiteral("Weather in Oslo and Bergen?"));
        request.messages.push_back(ChatMessage::assistant(QString(), {ToolCall{QStringLiteral("call_0"), QStringLiteral("get_time"),
                                                                               Json{{"tz", "Europe/Oslo"}}}}));
        request.messages.push_back(ChatMessage::toolResult(QStringLiteral("call_0"), QStringLiteral("get_time"), QStringLiteral("12:00")));
        request.tools.push_back(ToolSpec{QStringLiteral("get_weather"), QStringLiteral("Current weather."),
                                         Json{{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}});
        request.toolChoice = QStringLiteral("get_weather");
        request.parallelToolCalls = false;
        request.temperature = 0.2;
        request.maxTokens = 300;
        request.stop = QStringList{QStringLiteral("END")};

        const Outcome o = outcomeOf(llm->chat(request));
        QVERIFY2(o.response, qPrintable(o.describe()));

        QCOMPARE(server.requestCount(), 1);
        const RecordedRequest sent = server.requests().first();
        QCOMPARE(sent.method, QByteArray("POST"));
        QCOMPARE(sent.path, QByteArray("/v1/chat/completions"));
        QCOMPARE(sent.header("authorization"), QByteArray("Bearer ") + QByteArray::fromStdString(Secret));
        QCOMPARE(sent.header("openai-organization"), QByteArray("org-42"));
        QCOMPARE(sent.header("openai-project"), QByteArray("proj_7"));
        QCOMPARE(sent.header("x-title"), QByteArray("Mneme tests"));
        QVERIFY(sent.header("content-type").startsWith("application/json"));
        const Json body = sent.json();
        QCOMPARE(body["model"], Json("gpt-4o"));
        QCOMPARE(body["messages"].size(), size_t(4));
        QCOMPARE(body["messages"][0], (Json{{"role", "system"}, {"content", "You are terse."}}));
        QCOMPARE(body["messages"][1], (Json{{"role", "user"}, {"content", "Weather in Oslo and Bergen?"}}));
        const Json assistant = body["messages"][2];
        QCOMPARE(assistant["role"], Json("assistant"));
        QVERIFY(assistant["content"].is_null());
        QCOMPARE(assistant["tool_calls"][0]["id"], Json("call_0"));
        QCOMPARE(assistant["tool_calls"][0]["type"], Json("function"));
        QCOMPARE(assistant["tool_calls"][0]["function"]["name"], Json("get_time"));
        QVERIFY(assistant["tool_calls"][0]["function"]["arguments"].is_string());
        QCOMPARE(Json::parse(assistant["tool_calls"][0]["function"]["arguments"].get<std::string>()), (Json{{"tz", "Europe/Oslo"}}));
        QCOMPARE(body["messages"][3], (Json{{"role", "tool"}, {"tool_call_id", "call_0"}, {"content", "12:00"}}));
        QCOMPARE(body["tools"], (Json::array({{{"type", "function"},
                                               {"function", {{"name", "get_weather"}, {"description", "Current weather."}, {"parameters", request.tools[0].parameters}}}}})));
        QCOMPARE(body["tool_choice"], (Json{{"type", "function"}, {"function", {{"name", "get_weather"}}}}));
        QCOMPARE(body["parallel_tool_calls"], Json(false));
        QCOMPARE(body["temperature"], Json(0.2));
        QCOMPARE(body["max_tokens"], Json(300));
        QVERIFY(!body.contains("max_completion_tokens"));
        QCOMPARE(body["stop"], (Json::array({"END"})));
        QVERIFY(!body.contains("stream"));
        QVERIFY(!body.contains("response_format"));

        const ChatResponse &r = *o.response;
        QCOMPARE(r.finishReason, QStringLiteral("tool_calls"));
        QCOMPARE(r.model, QStringLiteral("gpt-4o-mini-2024-07-18"));
        QCOMPARE(r.usage.promptTokens, 50);
        QCOMPARE(r.usage.completionTokens, 20);
        QVERIFY(r.text.isEmpty());
        QCOMPARE(r.toolCalls.size(), size_t(2));
        QCOMPARE(r.toolCalls[0].id, QStringLiteral("call_a"));
        QCOMPARE(r.toolCalls[0].name, QStringLiteral("get_weather"));
        QCOMPARE(r.toolCalls[0].arguments, (Json{{"city", "Oslo"}}));
        QCOMPARE(r.toolCalls[1].arguments, (Json{{"_raw", "not json"}}));
    }

    // tool_choice words are sent as strings; parallel_tool_calls only when false was asked, and
    // neither without tools.
    void toolChoiceForms()
    {
        ScriptedHttpServer server;
        server.setHandler([](const RecordedRequest &) { return ScriptedReply::json(textReply("ok")); });
        auto llm = make(QStringLiteral("openai"), openaiConfig(server));
        for (const char *word : {"auto", "none", "required"}) {
            ChatRequest r = ask(QStringLiteral("hi"));
            r.tools.push_back(ToolSpec{QStringLiteral("t"), QString(), Json{{"type", "object"}}});
            r.toolChoice = QString::fromLatin1(word);
            QVERIFY(outcomeOf(llm->chat(r)).response);
            const Json body = server.requests().last().json();
            QCOMPARE(body["tool_choice"], Json(word));
            QVERIFY(!body.contains("parallel_tool_calls"));
            QVERIFY(!body["tools"][0]["function"].contains("description"));
        }
        ChatRequest plain = ask(QStringLiteral("hi"));
        plain.toolChoice = QStringLiteral("required");
        plain.parallelToolCalls = false;
        QVERIFY(outcomeOf(llm->chat(plain)).response);
        const Json body = server.requests().last().json();
        QVERIFY(!body.contains("tools"));
        QVERIFY(!body.contains("tool_choice"));
        QVERIFY(!body.contains("parallel_tool_calls"));
        QVERIFY(!body.contains("temperature"));
        QVERIFY(!body.contains("max_tokens"));
    }

    // Reasoning families take max_completion_tokens; the config's max_tokens and temperature apply
    // when the request leaves them unset.
    void maxCompletionTokensForReasoningModels_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("completionTokens");
        QTest::newRow("gpt-4o-mini") << QStringLiteral("gpt-4o-mini") << false;
        QTest::newRow("gpt-4.1") << QStringLiteral("gpt-4.1") << false;
        QTest::newRow("o1") << QStringLiteral("o1") << true;
        QTest::newRow("o1-mini") << QStringLiteral("o1-mini") << true;
        QTest::newRow("o3-mini") << QStringLiteral("o3-mini") << true;
        QTest::newRow("o4-mini") << QStringLiteral("o4-mini-2025-04-16") << true;
        QTest::newRow("gpt-5") << QStringLiteral("gpt-5") << true;
        QTest::newRow("openai/gpt-5-mini") << QStringLiteral("openai/gpt-5-mini") << true;
        QTest::newRow("omni-moderation") << QStringLiteral("omni-moderation-latest") << false;
    }

    void maxCompletionTokensForReasoningModels()
    {
        QFETCH(QString, model);
        QFETCH(bool, completionTokens);
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(textReply("ok")));
        auto llm = make(QStringLiteral("openai"),
                        openaiConfig(server, {{"model", model.toStdString()}, {"max_tokens", 64}, {"temperature", 0.5}}));
        QVERIFY(outcomeOf(llm->chat(ask(QStringLiteral("hi")))).response);
        const Json body = server.requests().first().json();
        QCOMPARE(body.contains("max_completion_tokens"), completionTokens);
        QCOMPARE(body.contains("max_tokens"), !completionTokens);
        QCOMPARE(body.value(completionTokens ? "max_completion_tokens" : "max_tokens", 0), 64);
        QCOMPARE(body["temperature"], Json(0.5));
    }

    // A refusal: the refusal text, finish reason content_filter.
    void refusal()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(completion(Json{{"content", nullptr}, {"refusal", "I can't help with that."}})));
        auto llm = make(QStringLiteral("openai"), openaiConfig(server));
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("something bad"))));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->text, QStringLiteral("I can't help with that."));
        QCOMPARE(o.response->finishReason, QStringLiteral("content_filter"));
    }

    // A reply without choices is MalformedReply; an error object in a 200 body is typed.
    void malformedReplies()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(R"({"id":"x","choices":[]})"));
        server.enqueue(ScriptedReply::json(errorBody("This model's maximum context length is 8192 tokens.",
                                                     "invalid_request_error", "context_length_exceeded")));
        auto llm = make(QStringLiteral("openai"), openaiConfig(server));
        Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.error && o.error->kind() == ErrorKind::MalformedReply, qPrintable(o.describe()));
        o = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.error && o.error->kind() == ErrorKind::ContextLength, qPrintable(o.describe()));
    }

    // ---- Azure ----------------------------------------------------------------------------------

    void azureRequest()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(textReply(R"({"name":"Ada","age":36})")));
        auto llm = make(QStringLiteral("azure"), azureConfig(server));
        QCOMPARE(llm->id(), QStringLiteral("azure/gpt4o-prod"));
        QVERIFY(llm->capabilities().testFlag(LlmProvider::Capability::JsonSchema));

        ChatRequest request = ask(QStringLiteral("Who?"));
        request.responseSchema = personSchema();
        request.responseSchemaName = QStringLiteral("person");
        const Outcome o = outcomeOf(llm->chat(request));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->structured, (Json{{"name", "Ada"}, {"age", 36}}));

        const RecordedRequest sent = server.requests().first();
        QCOMPARE(sent.path, QByteArray("/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21"));
        QCOMPARE(sent.header("api-key"), QByteArray::fromStdString(AzureSecret));
        QVERIFY(sent.header("authorization").isEmpty());
        const Json body = sent.json();
        QVERIFY(!body.contains("model"));
        QCOMPARE(body["response_format"]["type"], Json("json_schema"));
        QCOMPARE(body["response_format"]["json_schema"]["name"], Json("person"));
        QCOMPARE(body["response_format"]["json_schema"]["strict"], Json(true));
    }

    // "azure/<deployment>" as a model string; endpoint, key and API version from the environment;
    // a base written with /openai.
    void azureFromModelStringAndEnvironment()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(textReply("hello")));
        const ProviderSpec spec = ProviderSpec::llm(Json("azure/chat-east"), PluginRegistry::instance().keys(PluginRegistry::Kind::Llm));
        QCOMPARE(spec.key, QStringLiteral("azure"));
        qputenv("AZURE_API_BASE", (server.baseUrl().toString() + QStringLiteral("/openai/")).toUtf8());
        qputenv("AZURE_OPENAI_API_KEY", QByteArray::fromStdString(AzureSecret));
        qputenv("AZURE_API_VERSION", "2025-01-01-preview");
        std::unique_ptr<LlmProvider> llm;
        try {
            llm = make(spec.key, spec.config);
        } catch (const Error &e) {
            QFAIL(qPrintable(e.message()));
        }
        qunsetenv("AZURE_API_BASE");
        qunsetenv("AZURE_OPENAI_API_KEY");
        qunsetenv("AZURE_API_VERSION");
        QCOMPARE(llm->id(), QStringLiteral("azure/chat-east"));
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->text, QStringLiteral("hello"));
        const RecordedRequest sent = server.requests().first();
        QCOMPARE(sent.path, QByteArray("/openai/deployments/chat-east/chat/completions?api-version=2025-01-01-preview"));
        QCOMPARE(sent.header("api-key"), QByteArray::fromStdString(AzureSecret));
    }

    void azureNeedsKeyDeploymentAndEndpoint()
    {
        ScriptedHttpServer server;
        auto noKey = make(QStringLiteral("azure"), azureConfig(server, {{"api_key", nullptr}}));
        const Outcome o = outcomeOf(noKey->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.error && o.error->kind() == ErrorKind::Authentication, qPrintable(o.describe()));
        QVERIFY(o.error->message().contains(QStringLiteral("AZURE_API_KEY")));
        QCOMPARE(server.requestCount(), 0);

        for (const Json &config : {azureConfig(server, {{"deployment_id", nullptr}}),
                                   azureConfig(server, {{"deployment_id", "a/b"}}),
                                   Json{{"deployment_id", "d"}, {"api_key", "k"}}}) {
            try {
                make(QStringLiteral("azure"), config);
                QFAIL(qPrintable(QStringLiteral("accepted ") + QString::fromStdString(config.dump())));
            } catch (const Error &e) {
                QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
                QVERIFY2(e.message().contains(QStringLiteral("deployment")) || e.message().contains(QStringLiteral("api_base")),
                         qPrintable(e.message()));
            }
        }
    }

    // ---- configuration -------------------------------------------------------------------------

    void badConfiguration_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QByteArray>("config");
        QTest::newRow("unknown key") << QStringLiteral("openai") << QByteArray(R"({"api_key": "k", "temprature": 1})");
        QTest::newRow("headers not an object") << QStringLiteral("openai") << QByteArray(R"({"headers": ["X-A: b"]})");
        QTest::newRow("header value not a string") << QStringLiteral("openai") << QByteArray(R"({"headers": {"X-A": 1}})");
        QTest::newRow("supports_json_schema not a bool") << QStringLiteral("openai") << QByteArray(R"({"supports_json_schema": "yes"})");
        QTest::newRow("bad base URL") << QStringLiteral("openai") << QByteArray("{\"base_url\": \"ftp://x\"}");
        QTest::newRow("azure organization") << QStringLiteral("azure")
                                            << QByteArray("{\"api_base\": \"https://r.openai.azure.com\", \"deployment_id\": \"d\", \"organization\": \"o\"}");
    }

    void badConfiguration()
    {
        QFETCH(QString, key);
        QFETCH(QByteArray, config);
        try {
            make(key, Json::parse(config.toStdString()));
            QFAIL("the configuration was accepted");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        }
    }

    // No key on OpenAI's own endpoint: Authentication before anything is sent. A proxy pointing at
    // the scripted server would see any attempt (the endpoint is https, so a CONNECT).
    void missingKeyOnDefaultBaseUrl()
    {
        qunsetenv("OPENAI_API_KEY");
        ScriptedHttpServer proxy;
        const std::string proxyUrl = proxy.baseUrl().toString().toStdString();
        for (const Json &config : {Json{{"proxy", proxyUrl}},
                                   Json{{"proxy", proxyUrl}, {"base_url", "https://api.openai.com/v1/"}}}) {
            auto llm = make(QStringLiteral("openai"), config);
            QCOMPARE(llm->id(), QStringLiteral("openai/gpt-4o-mini"));
            QVERIFY(llm->capabilities().testFlag(LlmProvider::Capability::JsonSchema));
            ChatRequest request = ask(QStringLiteral("hi"));
            request.stream = true;
            const Outcome o = outcomeOf(llm->chat(request));
            QVERIFY2(o.error && o.error->kind() == ErrorKind::Authentication, qPrintable(o.describe()));
            QVERIFY(o.error->message().contains(QStringLiteral("OPENAI_API_KEY")));
            QVERIFY(o.error->message().contains(QStringLiteral("api_key")));
        }
        QTest::qWait(200);
        QCOMPARE(proxy.requestCount(), 0);
    }

    // The key and base URL from the environment (OPENAI_API_BASE as the older spelling).
    void environment()
    {
        ScriptedHttpServer server;
        server.setHandler([](const RecordedRequest &) { return ScriptedReply::json(textReply("ok")); });
        qputenv("OPENAI_API_KEY", QByteArray::fromStdString(Secret));
        for (const char *var : {"OPENAI_BASE_URL", "OPENAI_API_BASE"}) {
            qputenv(var, (server.baseUrl().toString() + QStringLiteral("/v1")).toUtf8());
            auto llm = make(QStringLiteral("openai"), Json::object());
            qunsetenv(var);
            QVERIFY2(outcomeOf(llm->chat(ask(QStringLiteral("hi")))).response, var);
            QCOMPARE(server.requests().last().path, QByteArray("/v1/chat/completions"));
            QCOMPARE(server.requests().last().header("authorization"), QByteArray("Bearer ") + QByteArray::fromStdString(Secret));
        }
        qunsetenv("OPENAI_API_KEY");
    }

    // ---- an OpenAI-compatible server -----------------------------------------------------------

    void compatibleServerNeedsNoKey()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(textReply("Hello from vLLM")));
        auto llm = make(QStringLiteral("openai"), compatibleConfig(server, {{"headers", {{"HTTP-Referer", "https://example.com"}}}}));
        QCOMPARE(llm->id(), QStringLiteral("openai/qwen2.5-7b-instruct"));
        QVERIFY(!llm->capabilities().testFlag(LlmProvider::Capability::JsonSchema));
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->text, QStringLiteral("Hello from vLLM"));
        const RecordedRequest sent = server.requests().first();
        QVERIFY(sent.header("authorization").isEmpty());
        QCOMPARE(sent.header("http-referer"), QByteArray("https://example.com"));
        QCOMPARE(sent.json()["model"], Json("qwen2.5-7b-instruct"));
    }

    // ---- structured output ---------------------------------------------------------------------

    void structuredNative()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(textReply(R"({"name":"Grace","age":85})")));
        auto llm = make(QStringLiteral("openai"), openaiConfig(server));
        QVERIFY(llm->capabilities().testFlag(LlmProvider::Capability::JsonSchema));
        ChatRequest request = ask(QStringLiteral("Who wrote COBOL?"));
        request.responseSchema = personSchema();
        request.responseSchemaName = QStringLiteral("a person!");
        const Outcome o = outcomeOf(llm->chat(request));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->structured, (Json{{"name", "Grace"}, {"age", 85}}));
        QCOMPARE(server.requestCount(), 1);
        const Json body = server.requests().first().json();
        QCOMPARE(body["response_format"], (Json{{"type", "json_schema"},
                                                {"json_schema", {{"name", "a_person_"}, {"schema", personSchema()}, {"strict", true}}}}));
        QCOMPARE(body["messages"][0]["content"], Json("You are terse.")); // no instruction added
    }

    // A schema strict mode would refuse goes with strict false; a root that is not an object goes
    // through the instruction even where json_schema is native.
    void structuredNativeEdges()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(textReply(R"({"name":"Grace"})")));
        server.enqueue(ScriptedReply::json(textReply(R"(["a","b"])")));
        auto llm = make(QStringLiteral("openai"), openaiConfig(server));

        ChatRequest loose = ask(QStringLiteral("Who?"));
        loose.responseSchema = Json{{"type", "object"}, {"properties", {{"name", {{"type", "string"}}}, {"age", {{"type", "integer"}}}}}, {"required", {"name"}}};
        Outcome o = outcomeOf(llm->chat(loose));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(server.requests().last().json()["response_format"]["json_schema"]["strict"], Json(false));

        ChatRequest list = ask(QStringLiteral("Letters?"));
        list.responseSchema = Json{{"type", "array"}, {"items", {{"type", "string"}}}};
        o = outcomeOf(llm->chat(list));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->structured, (Json::array({"a", "b"})));
        const Json body = server.requests().last().json();
        QVERIFY(!body.contains("response_format"));
        QVERIFY(body["messages"][0]["content"].get<std::string>().find("JSON schema") != std::string::npos);
    }

    // Compatible server: the schema goes into the system message; a fenced reply with chatter is read.
    void structuredFallbackParsesFencedReply()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(textReply("Sure! Here is the person:\n```json\n{\"name\": \"Linus\", \"age\": 55}\n```\nAnything else?")));
        auto llm = make(QStringLiteral("openai"), compatibleConfig(server));
        ChatRequest request = ask(QStringLiteral("Who wrote Linux?"));
        request.responseSchema = personSchema();
        const Outcome o = outcomeOf(llm->chat(request));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->structured, (Json{{"name", "Linus"}, {"age", 55}}));
        QCOMPARE(server.requestCount(), 1);
        const Json body = server.requests().first().json();
        QVERIFY(!body.contains("response_format"));
        const std::string system = body["messages"][0]["content"].get<std::string>();
        QVERIFY(system.rfind("You are terse.", 0) == 0);
        QVERIFY(system.find("JSON schema") != std::string::npos);
        QVERIFY(system.find("\"additionalProperties\"") != std::string::npos);
    }

    // A reply that violates the schema gets one repair request, which then succeeds.
    void structuredFallbackRepairs()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(textReply(R"({"name": "Linus", "age": "fifty-five"})", 30, 10)));
        server.enqueue(ScriptedReply::json(textReply(R"({"name": "Linus", "age": 55})", 60, 8)));
        auto llm = make(QStringLiteral("openai"), compatibleConfig(server));
        ChatRequest request = ask(QStringLiteral("Who wrote Linux?"));
        request.responseSchema = personSchema();
        const Outcome o = outcomeOf(llm->chat(request));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->structured, (Json{{"name", "Linus"}, {"age", 55}}));
        QCOMPARE(o.response->usage.promptTokens, 90);
        QCOMPARE(o.response->usage.completionTokens, 18);
        QCOMPARE(server.requestCount(), 2);
        const Json repair = server.requests().last().json();
        const Json &messages = repair["messages"];
        QCOMPARE(messages.size(), size_t(4));
        QCOMPARE(messages[2]["role"], Json("assistant"));
        QCOMPARE(messages[2]["content"], Json(R"({"name": "Linus", "age": "fifty-five"})"));
        QCOMPARE(messages[3]["role"], Json("user"));
        QVERIFY(messages[3]["content"].get<std::string>().find("age") != std::string::npos);
    }

    void structuredFallbackGivesUpAfterOneRepair()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(textReply("I think his name is Linus.")));
        server.enqueue(ScriptedReply::json(textReply(R"({"name": "Linus"})")));
        auto llm = make(QStringLiteral("openai"), compatibleConfig(server));
        ChatRequest request = ask(QStringLiteral("Who wrote Linux?"));
        request.responseSchema = personSchema();
        const Outcome o = outcomeOf(llm->chat(request));
        QVERIFY2(o.error && o.error->kind() == ErrorKind::MalformedReply, qPrintable(o.describe()));
        QVERIFY(o.error->message().contains(QStringLiteral("age")));
        QCOMPARE(server.requestCount(), 2);
    }

    // "supports_json_schema": true on a compatible server sends response_format.
    void compatibleServerWithNativeSchema()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(textReply(R"({"name":"Ada","age":36})")));
        auto llm = make(QStringLiteral("openai"), compatibleConfig(server, {{"supports_json_schema", true}}));
        QVERIFY(llm->capabilities().testFlag(LlmProvider::Capability::JsonSchema));
        ChatRequest request = ask(QStringLiteral("Who?"));
        request.responseSchema = personSchema();
        QVERIFY(outcomeOf(llm->chat(request)).response);
        QCOMPARE(server.requests().first().json()["response_format"]["type"], Json("json_schema"));
    }

    // ---- streaming -----------------------------------------------------------------------------

    void streamingText()
    {
        ScriptedHttpServer server;
        QList<QByteArray> events = {
            sseEvent(chunkWith({{"role", "assistant"}, {"content", ""}})),
            sseEvent(chunkWith({{"content", "Hel"}})),
            sseEvent(chunkWith({{"content", "lo, "}})),
            sseEvent(chunkWith({{"content", "world"}})),
            sseEvent(chunkWith(Json::object(), "stop")),
            sseEvent(usageChunk(9, 3)),
            "data: [DONE]\n\n",
        };
        // Split one event across two network chunks.
        const QByteArray third = events[2];
        events[2] = third.left(10);
        events.insert(3, third.mid(10));
        server.enqueue(ScriptedReply::sse(events, 5));
        auto llm = make(QStringLiteral("openai"), openaiConfig(server));
        Deltas deltas(llm.get());
        ChatRequest request = ask(QStringLiteral("Greet"));
        request.stream = true;
        const Outcome o = outcomeOf(llm->chat(request));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->text, QStringLiteral("Hello, world"));
        QCOMPARE(o.response->finishReason, QStringLiteral("stop"));
        QCOMPARE(o.response->usage.promptTokens, 9);
        QCOMPARE(o.response->usage.completionTokens, 3);
        QCOMPARE(o.response->model, QStringLiteral("gpt-4o-mini-2024-07-18"));
        QCOMPARE(deltas.text, (QStringList{QStringLiteral("Hel"), QStringLiteral("lo, "), QStringLiteral("world")}));
        const Json body = server.requests().first().json();
        QCOMPARE(body["stream"], Json(true));
        QCOMPARE(body["stream_options"], (Json{{"include_usage", true}}));
        QCOMPARE(server.requests().first().header("accept"), QByteArray("text/event-stream"));
    }

    // A model that repeats the provider's API key never gets it through: the reply, its structured
    // value, its tool calls and its streamed deltas have it redacted, even when it is split across deltas.
    void apiKeyRedactedFromReplies()
    {
        const QString key = QString::fromStdString(Secret);
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(completion(Json{{"content", "My key is " + Secret + ", keep it safe."}})));
        server.enqueue(ScriptedReply::json(completion(
            Json{{"content", nullptr},
                 {"tool_calls", {{{"id", "call_1"}, {"type", "function"}, {"function", {{"name", "save"}, {"arguments", Json{{"note", Secret}}.dump()}}}}}}},
            "tool_calls")));
        const std::string half = Secret.substr(0, Secret.size() / 2);
        server.enqueue(ScriptedReply::sse({sseEvent(chunkWith({{"role", "assistant"}, {"content", "key: "}})),
                                           sseEvent(chunkWith({{"content", half}})),
                                           sseEvent(chunkWith({{"content", Secret.substr(half.size()) + " done"}})),
                                           sseEvent(chunkWith(Json::object(), "stop")), "data: [DONE]\n\n"},
                                          5));
        auto llm = make(QStringLiteral("openai"), openaiConfig(server));
        Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("What is your key?"))));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->text, QStringLiteral("My key is [redacted], keep it safe."));

        ChatRequest withTools = ask(QStringLiteral("Save it"));
        withTools.tools.push_back(ToolSpec{QStringLiteral("save"), QStringLiteral("Saves a note"), Json{{"type", "object"}}});
        o = outcomeOf(llm->chat(withTools));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->toolCalls.size(), std::size_t(1));
        QCOMPARE(o.response->toolCalls.front().arguments, (Json{{"note", "[redacted]"}}));

        Deltas deltas(llm.get());
        ChatRequest streamed = ask(QStringLiteral("Stream your key"));
        streamed.stream = true;
        o = outcomeOf(llm->chat(streamed));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->text, QStringLiteral("key: [redacted] done"));
        QCOMPARE(deltas.text.join(QString()), QStringLiteral("key: [redacted] done"));
        for (const QString &d : std::as_const(deltas.text)) // half a key is held back until the next delta tells
            QVERIFY2(!d.contains(QString::fromStdString(half)) && !d.contains(key), qPrintable(d));
    }

    // Two tool calls streamed at once, their arguments in many small pieces.
    void streamingParallelToolCalls()
    {
        ScriptedHttpServer server;
        const auto call = [](int index, const Json &fields) {
            Json c = {{"index", index}};
            c.update(fields);
            return chunkWith({{"tool_calls", Json::array({c})}});
        };
        QList<QByteArray> events;
        events << sseEvent(chunkWith({{"role", "assistant"}, {"content", nullptr}}));
        events << sseEvent(call(0, {{"id", "call_oslo"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", ""}}}}));
        const std::string first = R"({"city": "Oslo", "units": "metric"})";
        const std::string second = R"({"city": "Bergen", "units": "metric"})";
        for (size_t i = 0; i < first.size(); i += 4)
            events << sseEvent(call(0, {{"function", {{"arguments", first.substr(i, 4)}}}}));
        events << sseEvent(call(1, {{"id", "call_bergen"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", ""}}}}));
        for (size_t i = 0; i < second.size(); i += 3)
            events << sseEvent(call(1, {{"function", {{"arguments", second.substr(i, 3)}}}}));
        events << sseEvent(chunkWith(Json::object(), "tool_calls"));
        events << sseEvent(usageChunk(80, 40));
        events << "data: [DONE]\n\n";
        server.enqueue(ScriptedReply::sse(events));
        auto llm = make(QStringLiteral("openai"), openaiConfig(server));
        Deltas deltas(llm.get());
        ChatRequest request = ask(QStringLiteral("Weather in Oslo and Bergen?"));
        request.tools.push_back(ToolSpec{QStringLiteral("get_weather"), QStringLiteral("Weather."), Json{{"type", "object"}}});
        request.stream = true;
        const Outcome o = outcomeOf(llm->chat(request));
        QVERIFY2(o.response, qPrintable(o.describe()));
        const ChatResponse &r = *o.response;
        QCOMPARE(r.finishReason, QStringLiteral("tool_calls"));
        QCOMPARE(r.usage.promptTokens, 80);
        QVERIFY(r.text.isEmpty());
        QCOMPARE(r.toolCalls.size(), size_t(2));
        QCOMPARE(r.toolCalls[0].id, QStringLiteral("call_oslo"));
        QCOMPARE(r.toolCalls[0].name, QStringLiteral("get_weather"));
        QCOMPARE(r.toolCalls[0].arguments, (Json{{"city", "Oslo"}, {"units", "metric"}}));
        QCOMPARE(r.toolCalls[1].id, QStringLiteral("call_bergen"));
        QCOMPARE(r.toolCalls[1].arguments, (Json{{"city", "Bergen"}, {"units", "metric"}}));

        QVERIFY(deltas.text.isEmpty());
        QCOMPARE(deltas.calls.size(), qsizetype(2 + (first.size() + 3) / 4 + (second.size() + 2) / 3));
        QCOMPARE(deltas.calls[0].index, 0);
        QCOMPARE(deltas.calls[0].id, QStringLiteral("call_oslo"));
        QCOMPARE(deltas.calls[0].name, QStringLiteral("get_weather"));
        QString args0, args1;
        for (const Deltas::Call &c : deltas.calls)
            (c.index == 0 ? args0 : args1) += c.arguments;
        QCOMPARE(args0, QString::fromStdString(first));
        QCOMPARE(args1, QString::fromStdString(second));
        QVERIFY(deltas.calls[1].id.isEmpty());
    }

    // An error object in the middle of a stream is a typed error.
    void streamingErrorMidStream_data()
    {
        QTest::addColumn<QByteArray>("error");
        QTest::addColumn<int>("kind");
        QTest::newRow("server_error") << errorBody("The server had an error while processing your request.", "server_error", nullptr)
                                      << int(ErrorKind::ServerError);
        QTest::newRow("context length") << errorBody("This model's maximum context length is 128000 tokens.", "invalid_request_error",
                                                     "context_length_exceeded")
                                        << int(ErrorKind::ContextLength);
        QTest::newRow("vLLM numeric code") << QByteArray(R"({"error":{"object":"error","message":"bad input","type":"BadRequestError","code":400}})")
                                           << int(ErrorKind::BadRequest);
    }

    void streamingErrorMidStream()
    {
        QFETCH(QByteArray, error);
        QFETCH(int, kind);
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::sse({sseEvent(chunkWith({{"content", "Par"}})), "data: " + error + "\n\n", "data: [DONE]\n\n"}));
        auto llm = make(QStringLiteral("openai"), openaiConfig(server));
        ChatRequest request = ask(QStringLiteral("hi"));
        request.stream = true;
        const Outcome o = outcomeOf(llm->chat(request));
        QVERIFY2(o.error && int(o.error->kind()) == kind, qPrintable(o.describe()));
        const QString message = QString::fromStdString(Json::parse(error.toStdString())["error"]["message"].get<std::string>());
        QVERIFY2(o.error->message().contains(message), qPrintable(o.error->message()));
    }

    // A compatible server that ignores "stream" and answers with one JSON body.
    void streamIgnoredByServer()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(textReply("whole reply")));
        auto llm = make(QStringLiteral("openai"), compatibleConfig(server));
        ChatRequest request = ask(QStringLiteral("hi"));
        request.stream = true;
        const Outcome o = outcomeOf(llm->chat(request));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->text, QStringLiteral("whole reply"));
    }

    // ---- HTTP errors ---------------------------------------------------------------------------

    void unauthorized()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(errorBody("Incorrect API key provided: " + Secret + ". You can find your API key at "
                                                                                               "https://platform.openai.com/account/api-keys.",
                                                     "invalid_request_error", "invalid_api_key"),
                                           401));
        auto llm = make(QStringLiteral("openai"), openaiConfig(server));
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.error && o.error->kind() == ErrorKind::Authentication, qPrintable(o.describe()));
        QCOMPARE(o.error->httpStatus(), 401);
        QVERIFY(o.error->message().contains(QStringLiteral("Incorrect API key provided")));
        QVERIFY(!o.error->message().contains(QString::fromStdString(Secret)));
        QCOMPARE(server.requestCount(), 1);
    }

    void rateLimitedThenOk()
    {
        ScriptedHttpServer server;
        ScriptedReply limited = ScriptedReply::json(errorBody("Rate limit reached for gpt-4o-mini.", "requests", "rate_limit_exceeded"), 429);
        limited.headers.append(qMakePair(QByteArray("Retry-After"), QByteArray("1")));
        server.enqueue(limited);
        server.enqueue(ScriptedReply::json(textReply("after the wait")));
        auto llm = make(QStringLiteral("openai"), openaiConfig(server));
        QElapsedTimer clock;
        clock.start();
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.response, qPrintable(o.describe()));
        QCOMPARE(o.response->text, QStringLiteral("after the wait"));
        QCOMPARE(server.requestCount(), 2);
        QVERIFY2(clock.elapsed() >= 900, "Retry-After was not honoured");
    }

    void contextLengthExceeded()
    {
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(errorBody("This model's maximum context length is 128000 tokens. However, your messages "
                                                     "resulted in 130000 tokens. Please reduce the length of the messages.",
                                                     "invalid_request_error", "context_length_exceeded"),
                                           400));
        auto llm = make(QStringLiteral("openai"), openaiConfig(server));
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("a very long prompt"))));
        QVERIFY2(o.error && o.error->kind() == ErrorKind::ContextLength, qPrintable(o.describe()));
        QCOMPARE(o.error->httpStatus(), 400);
        QVERIFY(o.error->message().contains(QStringLiteral("maximum context length is 128000 tokens")));
        QCOMPARE(server.requestCount(), 1);
    }

    void serverErrorExhaustsRetries()
    {
        ScriptedHttpServer server;
        server.setHandler([](const RecordedRequest &) {
            return ScriptedReply::json(errorBody("The server had an error while processing your request.", "server_error", nullptr), 500);
        });
        auto llm = make(QStringLiteral("openai"), openaiConfig(server, {{"max_retries", 2}}));
        const Outcome o = outcomeOf(llm->chat(ask(QStringLiteral("hi"))));
        QVERIFY2(o.error && o.error->kind() == ErrorKind::ServerError, qPrintable(o.describe()));
        QCOMPARE(o.error->httpStatus(), 500);
        QVERIFY(o.error->message().contains(QStringLiteral("The server had an error")));
        QCOMPARE(server.requestCount(), 3);
    }

    // ---- secrets -------------------------------------------------------------------------------

    // With the HTTP layer's debug output on, neither key reaches a log line or an error, even when
    // the server echoes it back; nor does a credential given as an extra header.
    void keysStayOutOfLogsAndErrors()
    {
        const std::string headerSecret = "hdr-SECRET-9876543210";
        auto capture = std::make_unique<LogCapture>();

        QStringList errors;
        {
            ScriptedHttpServer server;
            server.setHandler([](const RecordedRequest &r) {
                // Echo every credential the request carried.
                const std::string echoed = "key " + (r.header("authorization") + " / " + r.header("api-key") + " / " + r.header("x-api-key")).toStdString() + " refused";
                const QByteArray body = errorBody(echoed, "invalid_request_error", "invalid_api_key");
                if (r.header("accept") == "text/event-stream")
                    return ScriptedReply::sse({"data: " + body + "\n\n"}); // mid-stream
                if (r.json()["messages"][1]["content"] == "in a 200")
                    return ScriptedReply::json(body); // an error object in a 200 reply
                return ScriptedReply::json(body, 401);
            });
            std::vector<std::unique_ptr<LlmProvider>> providers;
            providers.push_back(make(QStringLiteral("openai"), openaiConfig(server, {{"headers", {{"X-Api-Key", headerSecret}}}})));
            providers.push_back(make(QStringLiteral("azure"), azureConfig(server)));
            for (const auto &llm : providers) {
                for (const QString &how : {QStringLiteral("401"), QStringLiteral("stream"), QStringLiteral("in a 200")}) {
                    ChatRequest request = ask(how);
                    request.stream = how == QLatin1String("stream");
                    const Outcome o = outcomeOf(llm->chat(request));
                    QVERIFY2(o.error && o.error->kind() == ErrorKind::Authentication, qPrintable(o.describe()));
                    errors << o.error->message();
                }
            }
            QCOMPARE(server.requestCount(), 6);
        }

        const QStringList logged = LogCapture::messages();
        capture.reset();
        QVERIFY2(!logged.isEmpty(), "the HTTP layer logged nothing; the check would prove nothing");
        for (const QString &text : logged + errors) {
            for (const std::string &secret : {Secret, AzureSecret, headerSecret})
                QVERIFY2(!text.contains(QString::fromStdString(secret)), qPrintable(QStringLiteral("a key leaked: ") + text));
        }
        for (const QString &e : errors)
            QVERIFY2(e.contains(QStringLiteral("[redacted]")), qPrintable(e));
    }
};

QTEST_GUILESS_MAIN(TestLlmOpenAi)
#include "test_llm_openai.moc"
