// End-to-end tests of `mneme eval locomo`: the real binary (MNEME_CLI) runs on a small LOCOMO-format
// fixture (MNEME_LOCOMO_MINI, tests/cli/data/locomo-mini.json) built so that the expected recalls
// follow from its words:
//
//   mini-1, 10 turns in 3 sessions (D2:3 repeats D1:4 word for word, and is still its own record: a
//   conversation is a log; D3:1 matches its question only through its image caption), 9 questions:
//     q1 cat 4 "D1:2"            greyhound question, evidence ranks first            -> 1, 1, 1
//     q2 cat 1 "D1:2; D2:2"      two evidence turns, one per rank                    -> 0.5, 1, 1
//     q3 cat 2 "D:2:1"           repaired to D2:1, bassoon question                  -> 1, 1, 1
//     q4 cat 3 " D3:1 "          repaired, found by the caption only                 -> 1, 1, 1
//     q5 cat 5 "D2:3"            the repeated turn, found beside its twin D1:4       -> ?, 1, 1
//     q6 cat 4 "D1:3 D2:2"       repaired space-separated list                       -> 0.5, 1, 1
//     q7 cat 1 "D", "D9:99"      unrepairable / no such turn: skipped
//     q8 cat 2 []                no evidence: skipped
//     q9 cat 4 "D1:1"            evidence shares no word with the question           -> 0 at k=1
//   mini-2, 4 turns in 2 sessions on one day ("12:20 am" and "12:15 pm"), 2 questions (cat 4, cat 2);
//   the lantern question has a twin answer in each session, so only recency (the later session, by
//   correct am/pm parsing) puts its evidence first.
//
// Evidence ids: 6 repaired (2 + 1 + 1 + 2), 2 dropped; 2 questions skipped; 14 turns, 14 stored.

#include "cli_runner.h"
#include "cli_test_macros.h"
#include "temp_store.h"

#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QProcessEnvironment>
#include <QSet>
#include <QTest>
#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>

using Json = nlohmann::json;

namespace {

using Run = mneme::test::CliRun;

QSet<QString> keysOf(const Json &object)
{
    QSet<QString> keys;
    if (!object.is_object())
        return keys;
    for (auto it = object.begin(); it != object.end(); ++it)
        keys.insert(QString::fromStdString(it.key()));
    return keys;
}

QSet<QString> set(const QStringList &list)
{
    return QSet<QString>(list.begin(), list.end());
}

bool writeFile(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    return f.write(bytes) == bytes.size();
}

QByteArray readFile(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// A number of the output, or NaN when it is missing or not a number.
double num(const Json &j)
{
    return j.is_number() ? j.get<double>() : std::nan("");
}

bool near(double a, double b)
{
    return std::fabs(a - b) < 1e-9;
}

const QString kFixture = QStringLiteral(MNEME_LOCOMO_MINI);

} // namespace

#define EXPECT_NEAR(actual, expected, run)                                                                  \
    QVERIFY2(near((actual), (expected)),                                                                    \
             (QByteArray::number(actual) + " != " + QByteArray::number(expected) + "\n" + (run).describe()) \
                 .constData())

class TestCliEval : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();

    void help();
    void jsonShapeAndCounts();
    void recallByConstruction();
    void kList();
    void conversationsAndConfig();
    void categoryFilter();
    void humanOutput();
    void usageErrors();
    void badArguments_data();
    void badArguments();

private:
    Run run(const QStringList &args);
    // eval locomo on the fixture with --json and the extra options.
    Run evalJson(const QStringList &options = {});
    QString writeConfig(const QByteArray &json);
    // --config for a run whose expected recalls hold for turns indexed alone: the fixture's sessions
    // are two to four turns long, so with the default context window every turn carries its session.
    QStringList turnsAlone();

    std::unique_ptr<mneme::test::TempStore> m_dir;
};

void TestCliEval::initTestCase()
{
    QVERIFY2(QFileInfo::exists(QStringLiteral(MNEME_CLI)), MNEME_CLI);
    QVERIFY2(QFileInfo::exists(kFixture), qPrintable(kFixture));
}

void TestCliEval::init()
{
    m_dir = std::make_unique<mneme::test::TempStore>();
}

void TestCliEval::cleanup()
{
    m_dir.reset();
}

Run TestCliEval::run(const QStringList &args)
{
    // The eval stores nothing on disk; should it ever, it writes inside the test's folder.
    return mneme::test::runCli(QStringLiteral(MNEME_CLI), args, m_dir->dir());
}

Run TestCliEval::evalJson(const QStringList &options)
{
    return run(QStringList{QStringLiteral("eval"), QStringLiteral("locomo"), kFixture, QStringLiteral("--json")}
               + options);
}

QString TestCliEval::writeConfig(const QByteArray &json)
{
    const QString path = m_dir->path(QStringLiteral("config.json"));
    if (!writeFile(path, json))
        return QString();
    return path;
}

void TestCliEval::help()
{
    const Run usage = run({QStringLiteral("eval"), QStringLiteral("--help")});
    EXPECT_EXIT(usage, 0);
    QVERIFY2(usage.out.contains("mneme eval locomo FILE"), usage.describe().constData());
    for (const char *option : {"--k", "--conversations", "--category"})
        QVERIFY2(usage.out.contains(option), option);

    const Run general = run({QStringLiteral("--help")});
    EXPECT_EXIT(general, 0);
    QVERIFY(general.out.contains("eval locomo FILE"));
}

void TestCliEval::jsonShapeAndCounts()
{
    const Run r = evalJson();
    EXPECT_JSON_OK(r);
    const Json doc = r.json();
    QCOMPARE(keysOf(doc), set({QStringLiteral("recall_at"), QStringLiteral("by_category"), QStringLiteral("questions"),
                               QStringLiteral("ms_per_query"), QStringLiteral("options")}));
    QCOMPARE(keysOf(doc["recall_at"]), set({QStringLiteral("1"), QStringLiteral("5"), QStringLiteral("10")}));
    for (const auto &[k, value] : doc["recall_at"].items()) {
        QVERIFY2(value.is_number() && num(value) >= 0 && num(value) <= 1, k.c_str());
    }
    QVERIFY(doc["questions"].is_number_integer());
    QCOMPARE(doc["questions"].get<int>(), 9);
    QVERIFY(doc["ms_per_query"].is_number());
    QVERIFY(num(doc["ms_per_query"]) > 0);

    const Json &byCategory = doc["by_category"];
    QCOMPARE(keysOf(byCategory), set({QStringLiteral("1"), QStringLiteral("2"), QStringLiteral("3"), QStringLiteral("4"),
                                      QStringLiteral("5")}));
    const std::map<std::string, int> questions = {{"1", 1}, {"2", 2}, {"3", 1}, {"4", 4}, {"5", 1}};
    int total = 0;
    for (const auto &[category, expected] : questions) {
        const Json &c = byCategory[category];
        QCOMPARE(keysOf(c), set({QStringLiteral("recall_at"), QStringLiteral("questions")}));
        QCOMPARE(keysOf(c["recall_at"]), set({QStringLiteral("1"), QStringLiteral("5"), QStringLiteral("10")}));
        QVERIFY2(c["questions"].is_number_integer() && c["questions"].get<int>() == expected, category.c_str());
        total += expected;
    }
    QCOMPARE(total, doc["questions"].get<int>());
    // overall is the mean over every question, so the question-weighted mean of the categories.
    for (const char *k : {"1", "5", "10"}) {
        double sum = 0;
        for (const auto &[category, n] : questions)
            sum += n * num(byCategory[category]["recall_at"][k]);
        EXPECT_NEAR(num(doc["recall_at"][k]), sum / 9.0, r);
    }

    const Json &options = doc["options"];
    QCOMPARE(keysOf(options),
             set({QStringLiteral("k"), QStringLiteral("conversations"), QStringLiteral("categories"),
                  QStringLiteral("depth"), QStringLiteral("limit"), QStringLiteral("now"), QStringLiteral("embedder"),
                  QStringLiteral("memory_config"), QStringLiteral("record"), QStringLiteral("counts")}));
    QVERIFY(options["k"] == Json::array({1, 5, 10}));
    QVERIFY(options["categories"] == Json::array({1, 2, 3, 4, 5}));
    QVERIFY(options["conversations"] == (Json{{"range", "1-2"}, {"ids", {"mini-1", "mini-2"}}}));
    QVERIFY(options["depth"] == "shallow");
    QVERIFY(options["limit"] == 10);
    // The builtin embedder (its model version is the embedder's business).
    QVERIFY2(options["embedder"].is_string()
                 && options["embedder"].get<std::string>().rfind("builtin/", 0) == 0,
             options.dump().c_str());
    // The memory configuration the stores used: the defaults, with an in-memory SQLite store.
    const Json &config = options["memory_config"];
    QVERIFY2(config.is_object(), options.dump().c_str());
    QVERIFY(config["storage"] == (Json{{"provider", "sqlite"}, {"config", {{"path", ":memory:"}}}}));
    QVERIFY(near(num(config["semantic_weight"]), 0.5));
    QVERIFY(near(num(config["batch_dedup_threshold"]), 0.98));
    const std::string content = options["record"].value("content", std::string());
    QVERIFY2(content.find("<speaker>: <text>") != std::string::npos, content.c_str());
    QVERIFY2(content.find("[image: <blip_caption>]") != std::string::npos, content.c_str());
    // The conversation-aware indexing it ran with.
    QVERIFY(options["record"]["neighbour_turns"] == config["conversation_context_window"]);
    QVERIFY(options["record"]["neighbour_weight"] == config["conversation_context_weight"]);
    QVERIFY(options["record"]["keyword_context_weight"] == config["keyword_context_weight"]);
    QVERIFY(near(num(config["keyword_context_weight"]), 0.3));

    QVERIFY(options["counts"] == (Json{{"conversations", 2}, {"turns", 14}, {"turns_stored", 14}, {"turns_not_stored", 0}, {"evidence_ids_repaired", 6}, {"evidence_ids_dropped", 2}, {"questions_skipped", 2}}));
}

void TestCliEval::recallByConstruction()
{
    const Run r = evalJson();
    EXPECT_JSON_OK(r);
    const Json doc = r.json();
    const Json &byCategory = doc["by_category"];
    auto recall = [&](const char *category, const char *k) { return num(byCategory[category]["recall_at"][k]); };
    // Multi-hop: two evidence turns that share rare words with the question, one per rank.
    EXPECT_NEAR(recall("1", "1"), 0.5, r);
    EXPECT_NEAR(recall("1", "5"), 1.0, r);
    EXPECT_NEAR(recall("1", "10"), 1.0, r);
    // Open-domain: the evidence is found through its image caption.
    for (const char *k : {"1", "5", "10"})
        EXPECT_NEAR(recall("3", k), 1.0, r);
    // Adversarial: the evidence repeats an earlier turn word for word; both are stored, so it is in the
    // top 5 (which of the two ranks first is a tie the test does not decide).
    for (const char *k : {"5", "10"})
        EXPECT_NEAR(recall("5", k), 1.0, r);
    // Single-hop at k=1: greyhound 1, "D1:3 D2:2" 0.5, the unfindable D1:1 0, barometers 1.
    EXPECT_NEAR(recall("4", "1"), 2.5 / 4.0, r);
    QVERIFY2(recall("4", "5") >= 3.0 / 4.0, r.describe().constData());

    // Restricted to the questions that are all found by construction.
    const Run temporal = evalJson({QStringLiteral("--conversations"), QStringLiteral("1"), QStringLiteral("--category"),
                                   QStringLiteral("2")});
    EXPECT_JSON_OK(temporal);
    QCOMPARE(temporal.json()["questions"].get<int>(), 1);
    for (const char *k : {"1", "5", "10"})
        EXPECT_NEAR(num(temporal.json()["recall_at"][k]), 1.0, temporal);
    QCOMPARE(temporal.json()["options"]["counts"]["questions_skipped"].get<int>(), 1);
    QCOMPARE(temporal.json()["options"]["counts"]["evidence_ids_repaired"].get<int>(), 1);
    QCOMPARE(temporal.json()["options"]["counts"]["evidence_ids_dropped"].get<int>(), 0);
}

QStringList TestCliEval::turnsAlone()
{
    return {QStringLiteral("--config"), writeConfig(R"({"conversation_context_window": 0})")};
}

void TestCliEval::kList()
{
    const Run r = evalJson(QStringList{QStringLiteral("--k"), QStringLiteral("10, 1,1"), QStringLiteral("--category"),
                                       QStringLiteral("1")}
                           + turnsAlone());
    EXPECT_JSON_OK(r);
    const Json doc = r.json();
    QCOMPARE(keysOf(doc["recall_at"]), set({QStringLiteral("1"), QStringLiteral("10")}));
    QCOMPARE(keysOf(doc["by_category"]["1"]["recall_at"]), set({QStringLiteral("1"), QStringLiteral("10")}));
    QVERIFY(doc["options"]["k"] == Json::array({1, 10}));
    QVERIFY(doc["options"]["limit"] == 10);
    EXPECT_NEAR(num(doc["recall_at"]["1"]), 0.5, r);
    EXPECT_NEAR(num(doc["recall_at"]["10"]), 1.0, r);

    // k = 2 reaches the second evidence turn of the multi-hop question.
    const Run two = evalJson(QStringList{QStringLiteral("--k=2"), QStringLiteral("--category"), QStringLiteral("1")}
                             + turnsAlone());
    EXPECT_JSON_OK(two);
    QCOMPARE(keysOf(two.json()["recall_at"]), set({QStringLiteral("2")}));
    QVERIFY(two.json()["options"]["limit"] == 2);
    EXPECT_NEAR(num(two.json()["recall_at"]["2"]), 1.0, two);
}

void TestCliEval::conversationsAndConfig()
{
    const Run first = evalJson({QStringLiteral("--conversations"), QStringLiteral("1-1")});
    EXPECT_JSON_OK(first);
    QCOMPARE(first.json()["questions"].get<int>(), 7);
    QVERIFY(first.json()["options"]["conversations"] == (Json{{"range", "1-1"}, {"ids", {"mini-1"}}}));
    QCOMPARE(first.json()["options"]["counts"]["turns"].get<int>(), 10);
    QCOMPARE(first.json()["options"]["counts"]["turns_stored"].get<int>(), 10);
    QCOMPARE(first.json()["options"]["counts"]["turns_not_stored"].get<int>(), 0);

    // Recency alone ranks: the lantern question's answer is in both sessions of mini-2; only the later
    // one ("12:15 pm", after "12:20 am") is its evidence. --config is honoured, --db is not used.
    const QString config = writeConfig(R"({"semantic_weight": 0, "recency_weight": 1, "importance_weight": 0})");
    QVERIFY(!config.isEmpty());
    const Run second = evalJson({QStringLiteral("--conversations"), QStringLiteral("2"), QStringLiteral("--config"),
                                 config, QStringLiteral("--db"), m_dir->path(QStringLiteral("unused.db")),
                                 QStringLiteral("--k"), QStringLiteral("1")});
    EXPECT_JSON_OK(second);
    const Json doc = second.json();
    QCOMPARE(doc["questions"].get<int>(), 2);
    QVERIFY(doc["options"]["conversations"] == (Json{{"range", "2-2"}, {"ids", {"mini-2"}}}));
    QVERIFY(near(num(doc["options"]["memory_config"]["recency_weight"]), 1.0));
    QVERIFY(near(num(doc["options"]["memory_config"]["semantic_weight"]), 0.0));
    EXPECT_NEAR(num(doc["recall_at"]["1"]), 1.0, second);
    EXPECT_NEAR(num(doc["by_category"]["2"]["recall_at"]["1"]), 1.0, second);
    QVERIFY(doc["options"]["counts"] == (Json{{"conversations", 1}, {"turns", 4}, {"turns_stored", 4}, {"turns_not_stored", 0}, {"evidence_ids_repaired", 0}, {"evidence_ids_dropped", 0}, {"questions_skipped", 0}}));
    QVERIFY(!QFileInfo::exists(m_dir->path(QStringLiteral("unused.db"))));
    QVERIFY(!QFileInfo::exists(m_dir->dir() + QStringLiteral("/default")));
}

void TestCliEval::categoryFilter()
{
    const Run caption = evalJson({QStringLiteral("--category"), QStringLiteral("3")});
    EXPECT_JSON_OK(caption);
    QCOMPARE(keysOf(caption.json()["by_category"]), set({QStringLiteral("3")}));
    QCOMPARE(caption.json()["questions"].get<int>(), 1);
    QVERIFY(caption.json()["options"]["categories"] == Json::array({3}));
    for (const char *k : {"1", "5", "10"})
        EXPECT_NEAR(num(caption.json()["recall_at"][k]), 1.0, caption);
    QCOMPARE(caption.json()["options"]["counts"]["evidence_ids_repaired"].get<int>(), 1);

    const Run two = evalJson(QStringList{QStringLiteral("--category"), QStringLiteral("5"), QStringLiteral("--category"),
                                         QStringLiteral("1"), QStringLiteral("--category"), QStringLiteral("5")}
                             + turnsAlone());
    EXPECT_JSON_OK(two);
    const Json doc = two.json();
    QCOMPARE(keysOf(doc["by_category"]), set({QStringLiteral("1"), QStringLiteral("5")}));
    QVERIFY(doc["options"]["categories"] == Json::array({1, 5}));
    QCOMPARE(doc["questions"].get<int>(), 2);
    QCOMPARE(doc["by_category"]["1"]["questions"].get<int>(), 1);
    QCOMPARE(doc["by_category"]["5"]["questions"].get<int>(), 1);
    EXPECT_NEAR(num(doc["recall_at"]["1"]), (0.5 + 1.0) / 2.0, two);
    EXPECT_NEAR(num(doc["recall_at"]["5"]), 1.0, two);
    // "D8:6; D9:17"-style list repaired into two ids; "D" and "D9:99" dropped, so that question is skipped.
    QCOMPARE(doc["options"]["counts"]["evidence_ids_repaired"].get<int>(), 2);
    QCOMPARE(doc["options"]["counts"]["evidence_ids_dropped"].get<int>(), 2);
    QCOMPARE(doc["options"]["counts"]["questions_skipped"].get<int>(), 1);

    // A category without questions in the selection: reported, with no recall to average.
    const Run none = evalJson({QStringLiteral("--conversations"), QStringLiteral("2"), QStringLiteral("--category"),
                               QStringLiteral("5")});
    EXPECT_JSON_OK(none);
    QCOMPARE(none.json()["questions"].get<int>(), 0);
    QCOMPARE(none.json()["by_category"]["5"]["questions"].get<int>(), 0);
    QVERIFY(none.json()["recall_at"]["1"].is_null());
    QVERIFY(none.json()["by_category"]["5"]["recall_at"]["10"].is_null());
}

void TestCliEval::humanOutput()
{
    const Run r = run({QStringLiteral("eval"), QStringLiteral("locomo"), kFixture});
    EXPECT_EXIT(r, 0);
    QVERIFY2(r.err.isEmpty(), r.describe().constData()); // no progress: stderr is not a terminal
    QVERIFY2(!r.isJson(), r.describe().constData());
    for (const char *text : {"CATEGORY", "QUESTIONS", "R@1", "R@5", "R@10", "overall", "1 multi-hop", "2 temporal",
                             "3 open-domain", "4 single-hop", "5 adversarial", "ms per query", "14 stored of 14",
                             "6 repaired", "2 questions skipped"})
        QVERIFY2(r.out.contains(text), (QByteArray(text) + "\n" + r.describe()).constData());

    const Run verbose = run({QStringLiteral("eval"), QStringLiteral("locomo"), kFixture, QStringLiteral("--verbose"),
                             QStringLiteral("--json")});
    EXPECT_EXIT(verbose, 0);
    QVERIFY2(verbose.isJson(), verbose.describe().constData());
    QVERIFY2(verbose.err.contains("mini-1: 10 turns, 10 stored"), verbose.describe().constData());
}

void TestCliEval::usageErrors()
{
    const Run unknown = run({QStringLiteral("eval"), QStringLiteral("squad"), kFixture});
    EXPECT_FAILURE(unknown, 2);
    QVERIFY2(unknown.err.contains("locomo"), unknown.describe().constData());

    const Run noFile = run({QStringLiteral("eval"), QStringLiteral("locomo")});
    EXPECT_FAILURE(noFile, 2);

    const Run extra = run({QStringLiteral("eval"), QStringLiteral("locomo"), kFixture, QStringLiteral("more")});
    EXPECT_FAILURE(extra, 2);

    const Run option = run({QStringLiteral("eval"), QStringLiteral("locomo"), kFixture, QStringLiteral("--limit"),
                            QStringLiteral("3")});
    EXPECT_FAILURE(option, 2);

    // An invalid --config is refused before anything runs.
    const QString config = writeConfig(R"({"semantic_weight": 7})");
    const Run badConfig = run({QStringLiteral("eval"), QStringLiteral("locomo"), kFixture, QStringLiteral("--config"),
                               config});
    EXPECT_FAILURE(badConfig, 2);
    QVERIFY2(badConfig.err.contains("semantic_weight"), badConfig.describe().constData());
}

void TestCliEval::badArguments_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("file");    // content of FILE; empty: FILE does not exist
    QTest::addColumn<QByteArray>("message"); // what stderr must mention

    const QByteArray fixture = readFile(kFixture);
    QVERIFY(!fixture.isEmpty());
    QTest::newRow("k zero") << QStringList{QStringLiteral("--k"), QStringLiteral("0")} << fixture << QByteArray("--k");
    QTest::newRow("k word") << QStringList{QStringLiteral("--k"), QStringLiteral("x")} << fixture << QByteArray("--k");
    QTest::newRow("k negative") << QStringList{QStringLiteral("--k"), QStringLiteral("-1")} << fixture << QByteArray("--k");
    QTest::newRow("k empty item") << QStringList{QStringLiteral("--k"), QStringLiteral("1,,5")} << fixture
                                  << QByteArray("--k");
    QTest::newRow("k fraction") << QStringList{QStringLiteral("--k"), QStringLiteral("2.5")} << fixture
                                << QByteArray("--k");
    QTest::newRow("conversations reversed") << QStringList{QStringLiteral("--conversations"), QStringLiteral("3-1")}
                                            << fixture << QByteArray("--conversations");
    QTest::newRow("conversations zero") << QStringList{QStringLiteral("--conversations"), QStringLiteral("0")}
                                        << fixture << QByteArray("--conversations");
    QTest::newRow("conversations word") << QStringList{QStringLiteral("--conversations"), QStringLiteral("a-b")}
                                        << fixture << QByteArray("--conversations");
    QTest::newRow("conversations beyond the file")
        << QStringList{QStringLiteral("--conversations"), QStringLiteral("2-3")} << fixture << QByteArray("holds 2");
    QTest::newRow("category 6") << QStringList{QStringLiteral("--category"), QStringLiteral("6")} << fixture
                                << QByteArray("--category");
    QTest::newRow("category 0") << QStringList{QStringLiteral("--category"), QStringLiteral("0")} << fixture
                                << QByteArray("--category");
    QTest::newRow("category word") << QStringList{QStringLiteral("--category"), QStringLiteral("temporal")} << fixture
                                   << QByteArray("--category");
    QTest::newRow("missing file") << QStringList() << QByteArray() << QByteArray("cannot read");
    QTest::newRow("not JSON") << QStringList() << QByteArray("[{\"qa\": [") << QByteArray("not valid JSON");
    QTest::newRow("not an array") << QStringList() << QByteArray("{\"conversation\": {}}")
                                  << QByteArray("array of conversations");
    QTest::newRow("no qa") << QStringList()
                           << QByteArray(R"([{"sample_id": "x", "conversation": {"session_1_date_time": "1:56 pm on 8 May, 2023",
                                            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}}])")
                           << QByteArray("\"qa\"");
    QTest::newRow("bad session date")
        << QStringList()
        << QByteArray(R"([{"conversation": {"session_1_date_time": "teatime on Tuesday",
                          "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}, "qa": []}])")
        << QByteArray("session_1_date_time");
    QTest::newRow("turn without text")
        << QStringList()
        << QByteArray(R"([{"conversation": {"session_1_date_time": "1:56 pm on 8 May, 2023",
                          "session_1": [{"speaker": "A", "dia_id": "D1:1"}]}, "qa": []}])")
        << QByteArray("\"text\"");
    QTest::newRow("category out of range")
        << QStringList()
        << QByteArray(R"([{"conversation": {"session_1_date_time": "1:56 pm on 8 May, 2023",
                          "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]},
                          "qa": [{"question": "q", "evidence": ["D1:1"], "category": 9}]}])")
        << QByteArray("category");
}

void TestCliEval::badArguments()
{
    QFETCH(QStringList, args);
    QFETCH(QByteArray, file);
    QFETCH(QByteArray, message);
    const QString path = m_dir->path(QStringLiteral("locomo.json"));
    if (!file.isEmpty())
        QVERIFY(writeFile(path, file));
    const Run r = run(QStringList{QStringLiteral("eval"), QStringLiteral("locomo"), path, QStringLiteral("--json")}
                      + args);
    EXPECT_FAILURE(r, 2);
    QVERIFY2(r.err.contains(message), r.describe().constData());
}

QTEST_GUILESS_MAIN(TestCliEval)
#include "test_cli_eval.moc"
