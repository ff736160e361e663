// The `mneme` command line with network providers named in --config: an OpenAI-compatible
// embedder served by the scripted HTTP server, an LLM that remember, extract and deep recall use,
// an LLM that cannot be built (no key) and falls back, and a provider failure, with the API key
// kept out of everything the CLI prints.

#include "cli_runner.h"
#include "scripted_http_server.h"
#include "scripted_llm.h"
#include "temp_store.h"

#include <QCryptographicHash>
#include <QFile>
#include <QTest>

using Json = nlohmann::json;
using mneme::test::CliRun;
using mneme::test::RecordedRequest;
using mneme::test::ScriptedHttpServer;
using mneme::test::ScriptedReply;

namespace {

const char *const kSecret = "sk-cli-SECRET-0042";
constexpr int kDimension = 8;

// A deterministic vector per text: texts sharing the word "deploy" land close together.
Json vectorFor(const std::string &text)
{
    Json v = Json::array();
    const QByteArray hash = QCryptographicHash::hash(QByteArray::fromStdString(text), QCryptographicHash::Sha256);
    const bool deploy = text.find("deploy") != std::string::npos;
    for (int i = 0; i < kDimension; ++i)
        v.push_back(deploy && i == 0 ? 5.0 : double(quint8(hash[i])) / 255.0);
    return v;
}

// Answers OpenAI embeddings requests.
ScriptedReply embeddings(const RecordedRequest &request)
{
    const Json body = request.json();
    Json data = Json::array();
    int index = 0;
    for (const Json &text : body["input"])
        data.push_back({{"object", "embedding"}, {"index", index++}, {"embedding", vectorFor(text.get<std::string>())}});
    return ScriptedReply::json(QByteArray::fromStdString(
        Json{{"object", "list"}, {"data", data}, {"model", "text-embedding-3-small"}, {"usage", {{"prompt_tokens", 4}, {"total_tokens", 4}}}}.dump()));
}

} // namespace

class TestCliProviders : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init()
    {
        m_dir = std::make_unique<mneme::test::TempStore>();
        m_server = std::make_unique<ScriptedHttpServer>();
        QVERIFY(m_server->isListening());
    }

    void cleanup()
    {
        m_server.reset();
        m_dir.reset();
    }

    void networkEmbedderFromConfig()
    {
        m_server->setHandler(embeddings);
        writeConfig(Json{{"embedder", embedder()}});
        const CliRun stored = cli({QStringLiteral("remember"), QStringLiteral("The deploy key rotates on Fridays"),
                                   QStringLiteral("--scope"), QStringLiteral("/ops")});
        QVERIFY2(stored.exitCode == 0, stored.describe());
        cli({QStringLiteral("remember"), QStringLiteral("Lunch is at noon"), QStringLiteral("--scope"), QStringLiteral("/ops")});
        const CliRun found = cli({QStringLiteral("recall"), QStringLiteral("deploy"), QStringLiteral("--verbose")});
        QVERIFY2(found.exitCode == 0 && found.isJson(), found.describe());
        const Json matches = found.json();
        QVERIFY2(matches.is_array() && !matches.empty(), found.describe());
        QCOMPARE(QString::fromStdString(matches[0]["content"].get<std::string>()),
                 QStringLiteral("The deploy key rotates on Fridays"));

        QVERIFY(m_server->requestCount() >= 3);
        for (const RecordedRequest &r : m_server->requests()) {
            QCOMPARE(r.path, QByteArray("/v1/embeddings"));
            QCOMPARE(r.header("authorization"), QByteArray("Bearer ") + kSecret);
            QCOMPARE(r.json()["dimensions"].get<int>(), kDimension);
        }
        for (const CliRun &run : {stored, found}) {
            QVERIFY2(!run.out.contains(kSecret) && !run.err.contains(kSecret), run.describe());
        }
        // `config`-style output of the store names the embedder, never the key.
        const CliRun info = cli({QStringLiteral("info"), QStringLiteral("/ops")});
        QVERIFY2(info.exitCode == 0, info.describe());
        QVERIFY2(!info.out.contains(kSecret) && !info.err.contains(kSecret), info.describe());
    }

    void configuredLlmWithoutKeyFallsBack()
    {
        m_server->setHandler(embeddings);
        // No API key for the LLM anywhere: the save analysis cannot run, and the memory is stored
        // with the fields the offline analyzer gives, as without an LLM.
        writeConfig(Json{{"embedder", embedder()}, {"llm", "gpt-4o-mini"}});
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("OPENAI_API_KEY"));
        const CliRun stored = mneme::test::runCli(QStringLiteral(MNEME_CLI),
                                                  {QStringLiteral("remember"), QStringLiteral("Standup moved to 9:30"),
                                                   QStringLiteral("--scope"), QStringLiteral("/team"),
                                                   QStringLiteral("--db"), m_dir->path(), QStringLiteral("--config"),
                                                   configPath(), QStringLiteral("--json")},
                                                  m_dir->dir(), {}, env);
        QVERIFY2(stored.exitCode == 0, stored.describe());
        const Json record = Json::parse(stored.out.toStdString());
        QCOMPARE(QString::fromStdString(record["scope"].get<std::string>()), QStringLiteral("/team"));
        QVERIFY(record["metadata"]["analysis"] == Json("offline"));
        QVERIFY(record["importance"].get<double>() > 0.5); // a time in the text weighs
    }

    // Issue 3's hand-off: with --config naming an LLM, remember (no scope), extract and deep recall use it.
    void configuredLlmIsUsed()
    {
        m_server->setHandler(embeddings);
        mneme::test::ScriptedLlm llm;
        llm.onJson(QStringLiteral("memory_analysis"),
                   Json{{"scope", "/ops/deploys"}, {"categories", {"process"}}, {"importance", 0.8}});
        llm.onJson(QStringLiteral("extracted_memories"),
                   Json{{"memories", {"Deploys happen on Fridays.", "The deploy key rotates monthly."}}});
        llm.onJson(QStringLiteral("query_analysis"),
                   Json{{"queries", {"deploy schedule"}}, {"scopes", {"/ops"}}, {"complexity", "simple"}});
        writeConfig(Json{{"embedder", embedder()}, {"llm", llm.config(Json{{"api_key", kSecret}})}});

        const CliRun stored = cli({QStringLiteral("remember"), QStringLiteral("We deploy on Fridays after the review"),
                                   QStringLiteral("--verbose")});
        QVERIFY2(stored.exitCode == 0, stored.describe());
        const Json record = Json::parse(stored.out.toStdString());
        QCOMPARE(QString::fromStdString(record["scope"].get<std::string>()), QStringLiteral("/ops/deploys"));
        QCOMPARE(record["importance"].get<double>(), 0.8);
        QVERIFY2(stored.err.contains("llm save_analysis"), stored.describe());

        const CliRun facts = cli({QStringLiteral("extract"), QStringLiteral("Notes: deploys on Fridays; key rotates monthly.")});
        QVERIFY2(facts.exitCode == 0, facts.describe());
        QVERIFY2(Json::parse(facts.out.toStdString()) == Json({"Deploys happen on Fridays.", "The deploy key rotates monthly."}),
                 facts.describe());

        const QString longQuery = QStringLiteral("Before we plan the next release, remind me of everything we agreed about "
                                                 "the deploy schedule, who reviews a deploy, and which day of the week "
                                                 "deploys are allowed to happen, so the release plan can follow it.");
        QVERIFY(longQuery.size() >= 200);
        const CliRun found = cli({QStringLiteral("recall"), longQuery});
        QVERIFY2(found.exitCode == 0, found.describe());
        QCOMPARE(QString::fromStdString(found.json()[0]["content"].get<std::string>()),
                 QStringLiteral("We deploy on Fridays after the review"));
        QCOMPARE(llm.calls(QStringLiteral("memory_analysis")), 1);
        QCOMPARE(llm.calls(QStringLiteral("extracted_memories")), 1);
        QCOMPARE(llm.calls(QStringLiteral("query_analysis")), 1);
        QVERIFY(llm.lastPrompt(QStringLiteral("query_analysis")).contains(QStringLiteral("\"/ops\"")));
        for (const CliRun &run : {stored, facts, found})
            QVERIFY2(!run.out.contains(kSecret) && !run.err.contains(kSecret), run.describe());
    }

    void providerFailureIsAClearError()
    {
        m_server->setHandler([](const RecordedRequest &) {
            return ScriptedReply::json(QByteArray("{\"error\":{\"message\":\"Incorrect API key provided: ") + kSecret
                                           + "\",\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}",
                                       401);
        });
        writeConfig(Json{{"embedder", embedder()}});
        const CliRun run = cli({QStringLiteral("remember"), QStringLiteral("anything"), QStringLiteral("--scope"),
                                QStringLiteral("/x")});
        QVERIFY2(run.exitCode == 1, run.describe());
        QVERIFY2(run.err.startsWith("mneme: "), run.describe());
        QVERIFY2(run.err.contains("API key"), run.describe());
        QVERIFY2(!run.err.contains(kSecret) && !run.out.contains(kSecret), run.describe());
        QCOMPARE(m_server->requestCount(), 1); // 401 is not retried
    }

private:
    Json embedder() const
    {
        return Json{{"provider", "openai"},
                    {"config", {{"base_url", (m_server->baseUrl().toString() + QStringLiteral("/v1")).toStdString()}, {"api_key", kSecret}, {"model_name", "text-embedding-3-small"}, {"dimensions", kDimension}, {"max_retries", 0}}}};
    }

    QString configPath() const { return m_dir->path(QStringLiteral("config.json")); }

    void writeConfig(const Json &config)
    {
        QFile f(configPath());
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QByteArray::fromStdString(config.dump()));
    }

    CliRun cli(QStringList args)
    {
        args << QStringLiteral("--db") << m_dir->path() << QStringLiteral("--config") << configPath() << QStringLiteral("--json");
        return mneme::test::runCli(QStringLiteral(MNEME_CLI), args, m_dir->dir());
    }

    std::unique_ptr<mneme::test::TempStore> m_dir;
    std::unique_ptr<ScriptedHttpServer> m_server;
};

QTEST_GUILESS_MAIN(TestCliProviders)
#include "test_cli_providers.moc"
