// How a configuration names a provider (model strings, {"provider", "config"}), the settings every
// provider shares (aliases, environment variables, refusals), and Memory's lazily built LLM.

#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/provider_settings.h>
#include <mneme/memory/memory.h>

#include <QtTest>

using namespace mneme;

namespace {

const QStringList kLlmKeys = {QStringLiteral("openai"), QStringLiteral("azure"), QStringLiteral("anthropic"),
                              QStringLiteral("ollama"), QStringLiteral("gemini"), QStringLiteral("replay")};

ProviderDefaults defaults()
{
    ProviderDefaults d;
    d.provider = QStringLiteral("acme");
    d.defaultModel = QStringLiteral("acme-1");
    d.defaultBaseUrl = QStringLiteral("https://api.acme.example/v1");
    d.apiKeyEnv = {QStringLiteral("MNEME_TEST_ACME_KEY"), QStringLiteral("MNEME_TEST_ACME_KEY2")};
    d.baseUrlEnv = {QStringLiteral("MNEME_TEST_ACME_BASE")};
    d.extraKeys = {QStringLiteral("organization")};
    return d;
}

ErrorKind kindOf(const std::function<void()> &f, QString *message = nullptr)
{
    try {
        f();
    } catch (const Error &e) {
        if (message)
            *message = e.message();
        return e.kind();
    }
    return ErrorKind::Internal;
}

} // namespace

class TestProviderConfig : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init()
    {
        for (const char *v : {"MNEME_TEST_ACME_KEY", "MNEME_TEST_ACME_KEY2", "MNEME_TEST_ACME_BASE", "OPENAI_API_KEY",
                              "OPENAI_BASE_URL", "OPENAI_API_BASE", "HTTPS_PROXY", "https_proxy"})
            qunsetenv(v);
    }

    void llmModelStrings_data()
    {
        QTest::addColumn<QByteArray>("spec");
        QTest::addColumn<QString>("key");
        QTest::addColumn<QByteArray>("config");
        QTest::newRow("bare openai model") << QByteArray(R"("gpt-4o-mini")") << "openai" << QByteArray(R"({"model":"gpt-4o-mini"})");
        QTest::newRow("openai prefix") << QByteArray(R"("openai/gpt-4o")") << "openai" << QByteArray(R"({"model":"gpt-4o"})");
        QTest::newRow("ollama") << QByteArray(R"("ollama/llama3.2")") << "ollama" << QByteArray(R"({"model":"llama3.2"})");
        QTest::newRow("anthropic") << QByteArray(R"("anthropic/claude-3-haiku-20240307")") << "anthropic"
                                   << QByteArray(R"({"model":"claude-3-haiku-20240307"})");
        QTest::newRow("bare claude") << QByteArray(R"("claude-3-5-haiku-latest")") << "anthropic"
                                     << QByteArray(R"({"model":"claude-3-5-haiku-latest"})");
        QTest::newRow("gemini") << QByteArray(R"("gemini/gemini-2.0-flash")") << "gemini" << QByteArray(R"({"model":"gemini-2.0-flash"})");
        QTest::newRow("bare gemini") << QByteArray(R"("gemini-2.0-flash")") << "gemini" << QByteArray(R"({"model":"gemini-2.0-flash"})");
        QTest::newRow("azure deployment") << QByteArray(R"("azure/my-gpt4o")") << "azure" << QByteArray(R"({"deployment_id":"my-gpt4o"})");
        QTest::newRow("unknown prefix is a model name") << QByteArray(R"("meta-llama/Llama-3-8B")") << "openai"
                                                        << QByteArray(R"({"model":"meta-llama/Llama-3-8B"})");
        QTest::newRow("upper-case prefix") << QByteArray(R"("Ollama/llama3.2")") << "ollama" << QByteArray(R"({"model":"llama3.2"})");
        QTest::newRow("bare key") << QByteArray(R"("ollama")") << "ollama" << QByteArray(R"({})");
        QTest::newRow("bare openai: its default model") << QByteArray(R"("openai")") << "openai" << QByteArray(R"({})");
        QTest::newRow("object") << QByteArray(R"({"provider":"Anthropic","config":{"model":"x","timeout":5}})") << "anthropic"
                                << QByteArray(R"({"model":"x","timeout":5})");
    }

    void llmModelStrings()
    {
        QFETCH(QByteArray, spec);
        QFETCH(QString, key);
        QFETCH(QByteArray, config);
        const ProviderSpec s = ProviderSpec::llm(Json::parse(spec.toStdString()), kLlmKeys);
        QCOMPARE(s.key, key);
        QCOMPARE(s.config, Json::parse(config.toStdString()));
    }

    void embedderSpecs_data()
    {
        QTest::addColumn<QByteArray>("spec");
        QTest::addColumn<QString>("key");
        QTest::addColumn<QByteArray>("config");
        QTest::newRow("null is builtin") << QByteArray("null") << "builtin" << QByteArray("{}");
        QTest::newRow("key") << QByteArray(R"("ollama")") << "ollama" << QByteArray("{}");
        QTest::newRow("provider/model") << QByteArray(R"("openai/text-embedding-3-small")") << "openai"
                                        << QByteArray(R"({"model":"text-embedding-3-small"})");
        QTest::newRow("builtin model") << QByteArray(R"("builtin/hash-v1")") << "builtin" << QByteArray(R"({"model":"hash-v1"})");
        QTest::newRow("seed object") << QByteArray(R"({"provider":"voyageai","config":{"model":"voyage-3"}})") << "voyageai"
                                     << QByteArray(R"({"model":"voyage-3"})");
    }

    void embedderSpecs()
    {
        QFETCH(QByteArray, spec);
        QFETCH(QString, key);
        QFETCH(QByteArray, config);
        const ProviderSpec s = ProviderSpec::embedder(Json::parse(spec.toStdString()));
        QCOMPARE(s.key, key);
        QCOMPARE(s.config, Json::parse(config.toStdString()));
    }

    void badSpecs_data()
    {
        QTest::addColumn<QByteArray>("spec");
        QTest::newRow("number") << QByteArray("42");
        QTest::newRow("empty string") << QByteArray(R"("")");
        QTest::newRow("object without provider") << QByteArray(R"({"config":{}})");
        QTest::newRow("config not an object") << QByteArray(R"({"provider":"openai","config":"x"})");
    }

    void badSpecs()
    {
        QFETCH(QByteArray, spec);
        QCOMPARE(kindOf([&] { ProviderSpec::llm(Json::parse(spec.toStdString()), kLlmKeys); }), ErrorKind::InvalidArgument);
    }

    void settingsAliasesAndDefaults_data()
    {
        QTest::addColumn<QByteArray>("config");
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("baseUrl");
        QTest::addColumn<bool>("isDefault");
        QTest::newRow("defaults") << QByteArray("{}") << "acme-1"
                                  << "https:/"
                                     "/api.acme.example/v1"
                                  << true;
        QTest::newRow("model_name, url") << QByteArray("{\"model_name\":\"m2\",\"url\":\"http:/"
                                                       "/localhost:9/x/\"}")
                                         << "m2"
                                         << "http:/"
                                            "/localhost:9/x"
                                         << false;
        QTest::newRow("model_id, api_base") << QByteArray("{\"model_id\":\"m3\",\"api_base\":\"https:/"
                                                          "/h.example\"}")
                                            << "m3"
                                            << "https:/"
                                               "/h.example"
                                            << false;
        QTest::newRow("host without scheme") << QByteArray(R"({"host":"box:11434"})") << "acme-1"
                                             << "http:/"
                                                "/box:11434"
                                             << false;
    }

    void settingsAliasesAndDefaults()
    {
        QFETCH(QByteArray, config);
        QFETCH(QString, model);
        QFETCH(QString, baseUrl);
        QFETCH(bool, isDefault);
        const ProviderSettings s = ProviderSettings::read(Json::parse(config.toStdString()), defaults());
        QCOMPARE(s.model, model);
        QCOMPARE(s.baseUrl.toString(), baseUrl);
        QCOMPARE(s.baseUrlIsDefault, isDefault);
        QCOMPARE(s.http.timeoutMs, 120000);
        QCOMPARE(s.http.maxRetries, 3);
    }

    void settingsCommonKeys()
    {
        const ProviderSettings s = ProviderSettings::read(
            Json{{"timeout", 2.5}, {"max_retries", 0}, {"max_rpm", 30}, {"temperature", 0.2}, {"max_tokens", 100}, {"api_key", "sk-config"}, {"organization", "org-1"}, {"proxy", "http://proxy.example:3128"}},
            defaults());
        QCOMPARE(s.http.timeoutMs, 2500);
        QCOMPARE(s.http.maxRetries, 0);
        QCOMPARE(s.http.maxRpm, 30);
        QCOMPARE(*s.temperature, 0.2);
        QCOMPARE(*s.maxTokens, 100);
        QCOMPARE(s.apiKey, QStringLiteral("sk-config"));
        QCOMPARE(s.apiKeySource, QStringLiteral("config"));
        QVERIFY(s.http.secrets.contains(QStringLiteral("sk-config")));
        QCOMPARE(s.string("organization"), QStringLiteral("org-1"));
        QCOMPARE(s.http.proxy, QStringLiteral("http://proxy.example:3128"));
        QCOMPARE(s.endpoint(QStringLiteral("/chat/completions")).toString(), QStringLiteral("https://api.acme.example/v1/chat/completions"));
    }

    void settingsFromEnvironment()
    {
        qputenv("MNEME_TEST_ACME_KEY2", "sk-env-two");
        qputenv("MNEME_TEST_ACME_BASE", "http://127.0.0.1:7777/v9");
        const ProviderSettings s = ProviderSettings::read(Json::object(), defaults());
        QCOMPARE(s.apiKey, QStringLiteral("sk-env-two"));
        QCOMPARE(s.apiKeySource, QStringLiteral("MNEME_TEST_ACME_KEY2"));
        QCOMPARE(s.baseUrl.toString(), QStringLiteral("http://127.0.0.1:7777/v9"));
        QVERIFY(!s.baseUrlIsDefault);
        // The config wins over the environment.
        const ProviderSettings c = ProviderSettings::read(Json{{"api_key", "sk-cfg"}, {"base_url", "http://h:1"}}, defaults());
        QCOMPARE(c.apiKey, QStringLiteral("sk-cfg"));
        QCOMPARE(c.baseUrl.toString(), QStringLiteral("http://h:1"));
    }

    void missingKeyOnlyMattersOnTheDefaultEndpoint()
    {
        const ProviderDefaults d = defaults();
        QString message;
        QCOMPARE(kindOf([&] { ProviderSettings::read(Json::object(), d).requireApiKey(d); }, &message), ErrorKind::Authentication);
        QVERIFY2(message.contains(QStringLiteral("MNEME_TEST_ACME_KEY")) && message.contains(QStringLiteral("api_key")), qPrintable(message));
        // A local compatible server needs none...
        ProviderSettings::read(Json{{"base_url", "http://localhost:8000/v1"}}, d).requireApiKey(d);
        // ...unless the provider always needs one.
        ProviderDefaults always = d;
        always.apiKeyAlwaysRequired = true;
        QCOMPARE(kindOf([&] { ProviderSettings::read(Json{{"base_url", "http://localhost:8000/v1"}}, always).requireApiKey(always); }),
                 ErrorKind::Authentication);
    }

    void badSettings_data()
    {
        QTest::addColumn<QByteArray>("config");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("unknown key") << QByteArray(R"({"modle":"x"})") << "modle";
        QTest::newRow("not an object") << QByteArray(R"("x")") << "object";
        QTest::newRow("model not a string") << QByteArray(R"({"model":3})") << "model";
        QTest::newRow("timeout not a number") << QByteArray(R"({"timeout":"10"})") << "timeout";
        QTest::newRow("negative retries") << QByteArray(R"({"max_retries":-1})") << "max_retries";
        QTest::newRow("fractional max_rpm") << QByteArray(R"({"max_rpm":0.5})") << "max_rpm";
        QTest::newRow("temperature too high") << QByteArray(R"({"temperature":3})") << "temperature";
        QTest::newRow("base url not http") << QByteArray("{\"base_url\":\"ftp:/"
                                                         "/x\"}")
                                           << "base_url";
    }

    void badSettings()
    {
        QFETCH(QByteArray, config);
        QFETCH(QString, mentions);
        QString message;
        QCOMPARE(kindOf([&] { ProviderSettings::read(Json::parse(config.toStdString()), defaults()); }, &message),
                 ErrorKind::InvalidArgument);
        QVERIFY2(message.contains(mentions), qPrintable(message));
    }

    void proxyCredentialsAreSecrets()
    {
        const ProviderSettings s = ProviderSettings::read(Json{{"proxy", "http:/"
                                                                         "/bob:hunter2-proxy@proxy.example:3128"}},
                                                          defaults());
        QVERIFY(s.http.secrets.contains(QStringLiteral("hunter2-proxy")));
        // Memory's configuration output hides keys, auth headers and proxy passwords.
        const Json config = {{"llm", {{"provider", "openai"}, {"config", {{"api_key", "sk-hidden-1"}, {"headers", {{"Authorization", "Bearer sk-hidden-2"}}}, {"proxy", "http:/"
                                                                                                                                                                        "/bob:hunter2-proxy@proxy.example:3128"}}}}}};
        const std::string shown = MemoryConfig::fromJson(config).toJson().dump();
        for (const char *secret : {"sk-hidden-1", "sk-hidden-2", "hunter2-proxy"})
            QVERIFY2(shown.find(secret) == std::string::npos, shown.c_str());
        QVERIFY2(shown.find("proxy.example") != std::string::npos, shown.c_str());
    }

    void memoryBuildsItsLlmOnFirstUse()
    {
        test::TempStore dir;
        MemoryConfig c;
        c.storage = dir.path().toStdString();
        {
            Memory none(c);
            QVERIFY(!none.llm());
        }
        // No API key anywhere: the Memory still opens, and the provider is created without a request.
        c.llm = "gpt-4o-mini";
        Memory m(c);
        const std::shared_ptr<LlmProvider> llm = m.llm();
        QVERIFY(llm);
        QCOMPARE(llm->id(), QStringLiteral("openai/gpt-4o-mini"));
        QCOMPARE(m.llm().get(), llm.get()); // built once
        ChatRequest request;
        request.messages = {ChatMessage::user(QStringLiteral("hi"))};
        QCOMPARE(kindOf([&] { llm->chat(request).result(); }), ErrorKind::Authentication);

        c.llm = Json{{"provider", "no-such-provider"}};
        Memory unknown(c);
        QString message;
        QCOMPARE(kindOf([&] { unknown.llm(); }, &message), ErrorKind::Plugin);
        QVERIFY2(message.contains(QStringLiteral("anthropic")), qPrintable(message)); // lists the known keys
    }
};

QTEST_GUILESS_MAIN(TestProviderConfig)
#include "test_provider_config.moc"
