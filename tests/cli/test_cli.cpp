// End-to-end tests of the `mneme` command line: every command runs the real binary (MNEME_CLI) with
// --json against a temporary SQLite store, and the tests check standard output, standard error and
// the exit status that docs/cli.md defines.

#include "cli_runner.h"
#include "cli_test_macros.h"
#include "temp_store.h"

#include <mneme/core/version.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QProcessEnvironment>
#include <QSet>
#include <QTest>
#include <nlohmann/json.hpp>

#include <memory>

using Json = nlohmann::json;

namespace {

using Run = mneme::test::CliRun;

QString str(const Json &j)
{
    return j.is_string() ? QString::fromStdString(j.get<std::string>()) : QString();
}

QSet<QString> keysOf(const Json &object)
{
    QSet<QString> keys;
    for (auto it = object.begin(); it != object.end(); ++it)
        keys.insert(QString::fromStdString(it.key()));
    return keys;
}

QSet<QString> set(const QStringList &list)
{
    return QSet<QString>(list.begin(), list.end());
}

const QStringList kRecordKeys = {
    QStringLiteral("id"),
    QStringLiteral("content"),
    QStringLiteral("scope"),
    QStringLiteral("categories"),
    QStringLiteral("importance"),
    QStringLiteral("source"),
    QStringLiteral("private"),
    QStringLiteral("metadata"),
    QStringLiteral("created_at"),
    QStringLiteral("updated_at"),
    QStringLiteral("last_accessed"),
    QStringLiteral("access_count"),
};

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

// Finds the node of `path` in a tree printed by `tree --json`.
const Json *findNode(const Json &node, const std::string &path)
{
    if (node.value("path", std::string()) == path)
        return &node;
    if (!node.contains("children"))
        return nullptr;
    for (const Json &child : node["children"]) {
        if (const Json *hit = findNode(child, path))
            return hit;
    }
    return nullptr;
}

QStringList idsOf(const Json &array)
{
    QStringList ids;
    for (const Json &r : array)
        ids << str(r["id"]);
    return ids;
}

} // namespace

class TestCli : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();

    void help();
    void version_data();
    void version();
    void rememberAndGet();
    void globalOptionsBeforeAndAfterCommand();
    void defaultStorageLocation();
    void storeIsCreatedOnlyByWrites();
    void recallSliceAndOptions();
    void recallFiltersAndThresholds();
    void recallRefusesBadFilters_data();
    void recallRefusesBadFilters();
    void updateCategoriesAndMetadata();
    void identitiesAcrossCommands();
    void privateRecords();
    void rememberManyJsonLines();
    void rememberManyPlainTextAndStdin();
    void rememberManyDuplicates();
    void rememberManyRejectsBadInput_data();
    void rememberManyRejectsBadInput();
    void updateAndHistory();
    void undoUpdate();
    void undoForget();
    void undoNothingToUndo();
    void extract();
    void extractFromStdin();
    void extractEmpty_data();
    void extractEmpty();
    void extractCreatesNoStore();
    void treeInfoScopesCategories();
    void listOrderAndPaging();
    void forgetFilters();
    void resetNeedsYes();
    void exportImportRoundTrip();
    void importRejectsBadInput_data();
    void importRejectsBadInput();
    void badInputs_data();
    void badInputs();
    void readOnlyConfig();
    void invalidConfig_data();
    void invalidConfig();
    void corruptDatabase();
    void humanOutputAndVerbosity();

private:
    Run run(const QStringList &args, const QByteArray &input = {}, const QProcessEnvironment &env = {});
    // Runs against this test's store with --json.
    Run cli(QStringList args, const QByteArray &input = {});
    // The number of records in this test's store (-1 when list fails).
    int count();
    // Remembers and returns the record's JSON (null after a failure, which is also reported).
    Json remember(const QString &content, const QStringList &options = {});

    std::unique_ptr<mneme::test::TempStore> m_store;
    QString m_db;
};

void TestCli::initTestCase()
{
    QVERIFY2(QFileInfo::exists(QStringLiteral(MNEME_CLI)), MNEME_CLI);
}

void TestCli::init()
{
    m_store = std::make_unique<mneme::test::TempStore>();
    m_db = m_store->path();
}

void TestCli::cleanup()
{
    m_store.reset();
}

Run TestCli::run(const QStringList &args, const QByteArray &input, const QProcessEnvironment &env)
{
    return mneme::test::runCli(QStringLiteral(MNEME_CLI), args, m_store->dir(), input, env);
}

Run TestCli::cli(QStringList args, const QByteArray &input)
{
    args << QStringLiteral("--db") << m_db << QStringLiteral("--json");
    return run(args, input);
}

int TestCli::count()
{
    const Run r = cli({QStringLiteral("list"), QStringLiteral("--limit"), QStringLiteral("100000")});
    if (r.exitCode != 0 || !r.json().is_array())
        return -1;
    return int(r.json().size());
}

Json TestCli::remember(const QString &content, const QStringList &options)
{
    const Run r = cli(QStringList{QStringLiteral("remember"), content} + options);
    if (r.exitCode != 0 || !r.json().is_object()) {
        qWarning("%s", r.describe().constData());
        return Json();
    }
    return r.json();
}

void TestCli::help()
{
    const Run general = run({QStringLiteral("--help")});
    EXPECT_EXIT(general, 0);
    QVERIFY(general.out.contains("Usage"));
    for (const char *command : {"remember", "remember-many", "recall", "forget", "update", "get", "history", "tree",
                                "info", "scopes", "categories", "list", "reset", "export", "import"})
        QVERIFY2(general.out.contains(command), command);
    QVERIFY(general.err.isEmpty());

    const Run helpCommand = run({QStringLiteral("help"), QStringLiteral("recall")});
    EXPECT_EXIT(helpCommand, 0);
    QVERIFY(helpCommand.out.contains("--include-private"));
    QVERIFY(helpCommand.out.contains("--depth"));

    const Run commandHelp = run({QStringLiteral("remember-many"), QStringLiteral("--help")});
    EXPECT_EXIT(commandHelp, 0);
    QVERIFY(commandHelp.out.contains("mneme remember-many"));
    QVERIFY(commandHelp.out.contains("--db"));

    // In --json mode even the usage is one JSON document.
    const Run jsonHelp = run({QStringLiteral("--json"), QStringLiteral("list"), QStringLiteral("--help")});
    EXPECT_JSON_OK(jsonHelp);
    QVERIFY(QString::fromStdString(jsonHelp.json().value("usage", std::string())).contains(QLatin1String("mneme list")));

    const Run nothing = run({});
    EXPECT_EXIT(nothing, 2);
    QVERIFY(nothing.out.isEmpty());
    QVERIFY(nothing.err.contains("Usage"));

    const Run unknownTopic = run({QStringLiteral("help"), QStringLiteral("frobnicate")});
    EXPECT_FAILURE(unknownTopic, 2);
}

void TestCli::version_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<bool>("json");
    QTest::newRow("alone") << QStringList{QStringLiteral("--version")} << false;
    QTest::newRow("json") << QStringList{QStringLiteral("--json"), QStringLiteral("--version")} << true;
    QTest::newRow("after a command") << QStringList{QStringLiteral("recall"), QStringLiteral("--version")} << false;
    QTest::newRow("with a bad option") << QStringList{QStringLiteral("--version"), QStringLiteral("--frobnicate")} << false;
}

void TestCli::version()
{
    QFETCH(QStringList, args);
    QFETCH(bool, json);
    const Run r = run(args);
    EXPECT_EXIT(r, 0);
    QVERIFY(r.err.isEmpty());
    if (json)
        QVERIFY2(r.json() == Json({{"version", MNEME_VERSION_STR}}), r.out.constData());
    else
        QCOMPARE(r.out, QByteArray("mneme " MNEME_VERSION_STR "\n"));
    // Nothing else is done: no store is created.
    QVERIFY(!QFileInfo::exists(m_store->dir() + QStringLiteral("/.mneme")));
}

void TestCli::rememberAndGet()
{
    const Run r = cli({QStringLiteral("remember"), QStringLiteral("The deploy key rotates every Monday"),
                       QStringLiteral("--scope"), QStringLiteral("ops/keys/"), QStringLiteral("--category"),
                       QStringLiteral("security"), QStringLiteral("--category"), QStringLiteral("schedule"),
                       QStringLiteral("--importance"), QStringLiteral("0.8"), QStringLiteral("--source"),
                       QStringLiteral("user:alice"), QStringLiteral("--at"), QStringLiteral("2024-05-01T12:00:00Z"),
                       QStringLiteral("--metadata"), QStringLiteral(R"({"ticket": "OPS-7", "n": 3})")});
    EXPECT_JSON_OK(r);
    const Json record = r.json();
    QCOMPARE(keysOf(record), set(kRecordKeys));
    QCOMPARE(str(record["content"]), QStringLiteral("The deploy key rotates every Monday"));
    QCOMPARE(str(record["scope"]), QStringLiteral("/ops/keys"));
    COMPARE_JSON(record["categories"], Json::array({"security", "schedule"}));
    QCOMPARE(record["importance"].get<double>(), 0.8);
    QCOMPARE(str(record["source"]), QStringLiteral("user:alice"));
    COMPARE_JSON(record["private"], Json(false));
    COMPARE_JSON(record["metadata"], Json::object({{"ticket", "OPS-7"}, {"n", 3}}));
    QCOMPARE(str(record["created_at"]), QStringLiteral("2024-05-01T12:00:00.000Z"));
    QVERIFY(record["access_count"].is_number_integer());
    const QString id = str(record["id"]);
    QCOMPARE(id.size(), 36);

    const Run got = cli({QStringLiteral("get"), id});
    EXPECT_JSON_OK(got);
    QCOMPARE(keysOf(got.json()), set(kRecordKeys));
    QCOMPARE(str(got.json()["id"]), id);
    COMPARE_JSON(got.json()["content"], record["content"]);
    COMPARE_JSON(got.json()["metadata"], record["metadata"]);
    COMPARE_JSON(got.json()["created_at"], record["created_at"]);

    // Remembering identical content again gives the stored record back, not a second one.
    const Run again = cli({QStringLiteral("remember"), QStringLiteral("The deploy key rotates every Monday"),
                           QStringLiteral("--scope"), QStringLiteral("/ops/keys"), QStringLiteral("--source"),
                           QStringLiteral("user:alice")});
    EXPECT_JSON_OK(again);
    QCOMPARE(str(again.json()["id"]), id);
    QCOMPARE(count(), 1);

    // A text too long for a command line comes from standard input with "-".
    const QByteArray longText = QByteArray("Notes from the planning meeting. ").repeated(1000);
    const Run fromStdin = cli({QStringLiteral("remember"), QStringLiteral("-")}, longText);
    EXPECT_JSON_OK(fromStdin);
    QCOMPARE(str(fromStdin.json()["content"]), QString::fromUtf8(longText).trimmed());
    QCOMPARE(count(), 2);
    // 1 MB is over the content limit (and over what a command line can carry).
    const Run tooLong = cli({QStringLiteral("remember"), QStringLiteral("-")}, QByteArray(1 << 20, 'm'));
    EXPECT_FAILURE(tooLong, 2);
    QCOMPARE(count(), 2);
}

void TestCli::globalOptionsBeforeAndAfterCommand()
{
    const Run before = run({QStringLiteral("--db"), m_db, QStringLiteral("--json"), QStringLiteral("remember"),
                            QStringLiteral("alpha fact about gardens")});
    EXPECT_JSON_OK(before);
    const Run after = run({QStringLiteral("remember"), QStringLiteral("beta fact about rivers"), QStringLiteral("--db"),
                           m_db, QStringLiteral("--json")});
    EXPECT_JSON_OK(after);
    const Run mixed = run({QStringLiteral("--json"), QStringLiteral("list"), QStringLiteral("--db=") + m_db,
                           QStringLiteral("--limit"), QStringLiteral("10")});
    EXPECT_JSON_OK(mixed);
    QCOMPARE(int(mixed.json().size()), 2);
    const QSet<QString> contents = {str(mixed.json()[0]["content"]), str(mixed.json()[1]["content"])};
    QCOMPARE(contents, set({QStringLiteral("alpha fact about gardens"), QStringLiteral("beta fact about rivers")}));

    // A command's own option before the command name is a usage error that says where it belongs.
    const Run misplaced = run({QStringLiteral("--limit"), QStringLiteral("3"), QStringLiteral("list"),
                               QStringLiteral("--db"), m_db, QStringLiteral("--json")});
    EXPECT_FAILURE(misplaced, 2);
    QVERIFY(misplaced.err.contains("after the command") || misplaced.err.contains("follow the command"));

    // "--" ends the options: a text that starts with "-" is content.
    const Run dashed = run({QStringLiteral("--db"), m_db, QStringLiteral("--json"), QStringLiteral("remember"),
                            QStringLiteral("--"), QStringLiteral("-5 degrees at night")});
    EXPECT_JSON_OK(dashed);
    QCOMPARE(str(dashed.json()["content"]), QStringLiteral("-5 degrees at night"));
}

void TestCli::defaultStorageLocation()
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    const QString dir = m_store->dir() + QStringLiteral("/custom-store");
    env.insert(QStringLiteral("MNEME_STORAGE_DIR"), dir);
    const Run r = run({QStringLiteral("remember"), QStringLiteral("stored in the default place"),
                       QStringLiteral("--json")},
                      {}, env);
    EXPECT_JSON_OK(r);
    QVERIFY2(QFileInfo::exists(dir + QStringLiteral("/memory.db")), qPrintable(dir));
    QVERIFY(!QFileInfo::exists(m_db));
    const Run listed = run({QStringLiteral("list"), QStringLiteral("--json")}, {}, env);
    EXPECT_JSON_OK(listed);
    QCOMPARE(int(listed.json().size()), 1);
}

// The default store is in the XDG data folder; commands that only read never create it (nor its
// folder) and name the path they looked at; a store of earlier versions in ./.mneme gets a one-line note.
void TestCli::storeIsCreatedOnlyByWrites()
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    const QString xdg = m_store->dir() + QStringLiteral("/xdg");
    env.insert(QStringLiteral("XDG_DATA_HOME"), xdg);
    env.insert(QStringLiteral("MNEME_STORAGE_DIR"), QString()); // empty: not set
    const QString store = xdg + QStringLiteral("/mneme/memory.db");
    const QList<QStringList> reads = {
        {QStringLiteral("recall"), QStringLiteral("anything")},
        {QStringLiteral("list")},
        {QStringLiteral("tree")},
        {QStringLiteral("info"), QStringLiteral("/")},
        {QStringLiteral("categories")},
        {QStringLiteral("get"), QStringLiteral("01a219c4-3e10-7b00-85ce-c7a53c418413")},
        {QStringLiteral("export"), m_store->dir() + QStringLiteral("/out.jsonl")},
        {QStringLiteral("forget"), QStringLiteral("--scope"), QStringLiteral("/x")},
    };
    for (const QStringList &args : reads) {
        const Run r = run(args + QStringList{QStringLiteral("--json")}, {}, env);
        EXPECT_FAILURE(r, 2);
        QVERIFY2(r.err.contains(store.toUtf8()), r.describe().constData());
        QVERIFY2(!QFileInfo::exists(xdg), qPrintable(args.join(' ')));
    }
    // --db to a missing folder: the same, nothing created.
    const QString nested = m_store->dir() + QStringLiteral("/not/there/x.db");
    const Run missing = run({QStringLiteral("recall"), QStringLiteral("x"), QStringLiteral("--db"), nested}, {}, env);
    EXPECT_FAILURE(missing, 2);
    QVERIFY(missing.err.contains(nested.toUtf8()));
    QVERIFY(!QFileInfo::exists(m_store->dir() + QStringLiteral("/not")));

    const Run written = run({QStringLiteral("remember"), QStringLiteral("the first memory"), QStringLiteral("--json")}, {}, env);
    EXPECT_JSON_OK(written);
    QVERIFY(QFileInfo::exists(store));
    const Run listed = run({QStringLiteral("list"), QStringLiteral("--json")}, {}, env);
    EXPECT_JSON_OK(listed);
    QCOMPARE(int(listed.json().size()), 1);

    // A store of earlier versions in the working folder: one note on standard error, the output intact.
    QVERIFY(QDir(m_store->dir()).mkpath(QStringLiteral(".mneme")));
    QVERIFY(writeFile(m_store->dir() + QStringLiteral("/.mneme/memory.db"), QByteArray()));
    const Run noted = run({QStringLiteral("list"), QStringLiteral("--json")}, {}, env);
    EXPECT_EXIT(noted, 0);
    QVERIFY(noted.isJson());
    QCOMPARE(noted.err.count('\n'), 1);
    QVERIFY2(noted.err.contains("note:") && noted.err.contains(".mneme/memory.db") && noted.err.contains(store.toUtf8()),
             noted.describe().constData());
}

void TestCli::recallSliceAndOptions()
{
    QVERIFY(!remember(QStringLiteral("Alice drinks green tea every morning"),
                      {QStringLiteral("--scope"), QStringLiteral("/team/a"), QStringLiteral("--category"),
                       QStringLiteral("drinks")})
                 .is_null());
    // Explicit categories: without them the offline analyzer would reuse "drinks", which they name.
    QVERIFY(!remember(QStringLiteral("Bob drinks black coffee every morning"),
                      {QStringLiteral("--scope"), QStringLiteral("/team/b"), QStringLiteral("--category"),
                       QStringLiteral("coffee")})
                 .is_null());
    QVERIFY(!remember(QStringLiteral("Carol drinks orange juice every morning"),
                      {QStringLiteral("--scope"), QStringLiteral("/team/c"), QStringLiteral("--category"),
                       QStringLiteral("juice")})
                 .is_null());
    QVERIFY(!remember(QStringLiteral("The morning standup starts at nine"), {}).is_null());

    const QString query = QStringLiteral("who drinks what every morning");
    const Run slice = cli({QStringLiteral("recall"), query, QStringLiteral("--scope"), QStringLiteral("/team/a"),
                           QStringLiteral("--scope"), QStringLiteral("/team/b")});
    EXPECT_JSON_OK(slice);
    const Json matches = slice.json();
    QVERIFY(matches.is_array());
    QCOMPARE(int(matches.size()), 2);
    double previous = 2.0;
    for (const Json &m : matches) {
        const QString scope = str(m["scope"]);
        QVERIFY2(scope == QLatin1String("/team/a") || scope == QLatin1String("/team/b"), qPrintable(scope));
        QVERIFY(keysOf(m).contains(set(kRecordKeys)));
        QVERIFY(m["score"].is_number());
        QVERIFY(m["score"].get<double>() <= previous);
        previous = m["score"].get<double>();
        QCOMPARE(keysOf(m["signals"]), set({QStringLiteral("semantic"), QStringLiteral("recency"),
                                            QStringLiteral("importance"), QStringLiteral("keyword"),
                                            QStringLiteral("keyword_evidence"), QStringLiteral("relevance")}));
        QVERIFY(m["score"].get<double>() >= 0.0 && m["score"].get<double>() <= 1.0);
        for (const char *signal : {"semantic", "recency", "importance", "keyword", "relevance"}) {
            const double v = m["signals"][signal].get<double>();
            QVERIFY2(v >= 0.0 && v <= 1.0, signal);
        }
        QVERIFY(m["match_reasons"].is_array());
    }

    // The whole store, a limit, a shallow recall, a category filter, a fixed "now".
    const Run all = cli({QStringLiteral("recall"), QStringLiteral("Alice green tea")});
    EXPECT_JSON_OK(all);
    QVERIFY(all.json().size() >= 1);
    QCOMPARE(str(all.json()[0]["content"]), QStringLiteral("Alice drinks green tea every morning"));

    const Run limited = cli({QStringLiteral("recall"), query, QStringLiteral("--limit"), QStringLiteral("1"),
                             QStringLiteral("--depth"), QStringLiteral("shallow")});
    EXPECT_JSON_OK(limited);
    QCOMPARE(int(limited.json().size()), 1);

    const Run category = cli({QStringLiteral("recall"), query, QStringLiteral("--category"), QStringLiteral("drinks")});
    EXPECT_JSON_OK(category);
    QCOMPARE(int(category.json().size()), 1);
    QCOMPARE(str(category.json()[0]["scope"]), QStringLiteral("/team/a"));

    const Run now = cli({QStringLiteral("recall"), query, QStringLiteral("--now"), QStringLiteral("2031-01-01"),
                         QStringLiteral("--depth"), QStringLiteral("deep")});
    EXPECT_JSON_OK(now);
    QVERIFY(!now.json().empty());
    for (const Json &m : now.json())
        QVERIFY(m["signals"]["recency"].get<double>() < 0.5);

    // --stats: how the recall was answered (four records: an exact scan).
    const Run stats = cli({QStringLiteral("recall"), query, QStringLiteral("--stats"), QStringLiteral("--depth"),
                           QStringLiteral("shallow")});
    EXPECT_JSON_OK(stats);
    QCOMPARE(keysOf(stats.json()), set({QStringLiteral("matches"), QStringLiteral("stats")}));
    QVERIFY(!stats.json()["matches"].empty());
    const Json how = stats.json()["stats"];
    QCOMPARE(how["exact"].get<bool>(), true);
    QCOMPARE(how["index_building"].get<bool>(), false);
    QCOMPARE(how["vector_searches"].get<int>(), 1);
    QCOMPARE(str(how["answers"][0]), QStringLiteral("exact scan of 4 records"));
    QVERIFY(how["elapsed_ms"].get<double>() > 0);
    const Run table = run({QStringLiteral("recall"), query, QStringLiteral("--stats"), QStringLiteral("--depth"),
                           QStringLiteral("shallow"), QStringLiteral("--db"), m_db});
    QCOMPARE(table.exitCode, 0);
    const QString lastLine = QString::fromUtf8(table.out).trimmed().section(QLatin1Char('\n'), -1);
    QVERIFY2(lastLine.startsWith(QStringLiteral("stats: exact (exact scan of 4 records); 1 vector search; ")), qPrintable(lastLine));
}

void TestCli::recallFiltersAndThresholds()
{
    const auto add = [&](const QString &content, const QString &metadata, const QStringList &more = {}) {
        return str(remember(content, QStringList{QStringLiteral("--metadata"), metadata, QStringLiteral("--scope"),
                                                 QStringLiteral("/")}
                                         + more)["id"]);
    };
    add(QStringLiteral("Ticket about the login page"), QStringLiteral(R"({"team": "web", "priority": 1})"),
        {QStringLiteral("--source"), QStringLiteral("jira")});
    add(QStringLiteral("Ticket about the payment page"), QStringLiteral(R"({"team": "web", "priority": 3})"));
    add(QStringLiteral("Ticket about the database page"), QStringLiteral(R"({"team": "db", "priority": 2})"));
    const auto found = [&](const QStringList &options) {
        const Run r = cli(QStringList{QStringLiteral("recall"), QStringLiteral("ticket page"), QStringLiteral("--depth"),
                                      QStringLiteral("shallow")}
                          + options);
        QStringList out;
        if (r.exitCode != 0 || !r.json().is_array()) {
            qWarning("%s", r.describe().constData());
            return QStringList{QStringLiteral("(failed)")};
        }
        for (const Json &m : r.json())
            out << str(m["content"]).section(QLatin1Char(' '), 3, 3);
        out.sort();
        return out;
    };
    QCOMPARE(found({}), (QStringList{"database", "login", "payment"}));
    QCOMPARE(found({QStringLiteral("--where"), QStringLiteral("team=web")}), (QStringList{"login", "payment"}));
    QCOMPARE(found({QStringLiteral("--where"), QStringLiteral("priority>=2")}), (QStringList{"database", "payment"}));
    QCOMPARE(found({QStringLiteral("--where"), QStringLiteral("team=web"), QStringLiteral("--where"), QStringLiteral("priority<2")}),
             QStringList{"login"});
    QCOMPARE(found({QStringLiteral("--where"), QStringLiteral("team in db,ops")}), QStringList{"database"});
    QCOMPARE(found({QStringLiteral("--where"), QStringLiteral("team not in db")}), (QStringList{"login", "payment"}));
    QCOMPARE(found({QStringLiteral("--where"), QStringLiteral("team!=web")}), QStringList{"database"});
    QCOMPARE(found({QStringLiteral("--metadata"), QStringLiteral(R"({"priority": {"$gt": 1, "$lt": 3}})")}),
             QStringList{"database"});
    QCOMPARE(found({QStringLiteral("--only-source"), QStringLiteral("jira")}), QStringList{"login"});
    QCOMPARE(found({QStringLiteral("--min-score"), QStringLiteral("1")}), QStringList());
    QCOMPARE(found({QStringLiteral("--min-relevance"), QStringLiteral("0.99")}), QStringList());
    // Nothing about these tickets: nothing comes back.
    const Run nonsense = cli({QStringLiteral("recall"), QStringLiteral("quantum banana helicopter")});
    EXPECT_JSON_OK(nonsense);
    COMPARE_JSON(nonsense.json(), Json::array());
    const Run human = run({QStringLiteral("recall"), QStringLiteral("quantum banana helicopter"), QStringLiteral("--db"), m_db});
    EXPECT_EXIT(human, 0);
    QVERIFY(human.out.contains("No memories match."));
}

void TestCli::recallRefusesBadFilters_data()
{
    QTest::addColumn<QStringList>("options");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("not a condition") << QStringList{"--where", "priority"} << "--where \"priority\" is not a condition";
    QTest::newRow("no key") << QStringList{"--where", "=3"} << "is not a condition";
    QTest::newRow("unknown operator") << QStringList{"--metadata", R"({"a": {"$like": 1}})"} << "\"$like\" under \"a\"";
    QTest::newRow("metadata not an object") << QStringList{"--metadata", "[1]"} << "--metadata";
    QTest::newRow("score out of range") << QStringList{"--min-score", "2"} << "--min-score";
    QTest::newRow("relevance not a number") << QStringList{"--min-relevance", "high"} << "--min-relevance";
}

void TestCli::recallRefusesBadFilters()
{
    QFETCH(QStringList, options);
    QFETCH(QString, mentions);
    QVERIFY(!remember(QStringLiteral("a note"), {}).is_null());
    const Run r = cli(QStringList{QStringLiteral("recall"), QStringLiteral("note")} + options);
    EXPECT_FAILURE(r, 2);
    QVERIFY2(r.err.contains(mentions.toUtf8()), r.describe().constData());
}

void TestCli::updateCategoriesAndMetadata()
{
    const QString id = str(remember(QStringLiteral("a categorised note"),
                                    {QStringLiteral("--category"), QStringLiteral("a"), QStringLiteral("--category"),
                                     QStringLiteral("b"), QStringLiteral("--metadata"), QStringLiteral(R"({"keep": 1, "drop": 2})")})["id"]);
    QVERIFY(!id.isEmpty());
    const Run cleared = cli({QStringLiteral("update"), id, QStringLiteral("--no-categories"), QStringLiteral("--metadata"),
                             QStringLiteral(R"({"drop": null, "added": "x"})")});
    EXPECT_JSON_OK(cleared);
    COMPARE_JSON(cleared.json()["categories"], Json::array());
    QVERIFY(cleared.json()["metadata"]["keep"] == 1);
    QVERIFY(cleared.json()["metadata"]["added"] == "x");
    QVERIFY(!cleared.json()["metadata"].contains("drop"));
    const Run replaced = cli({QStringLiteral("update"), id, QStringLiteral("--metadata"), QStringLiteral(R"({"only": true})"),
                              QStringLiteral("--replace-metadata")});
    EXPECT_JSON_OK(replaced);
    COMPARE_JSON(replaced.json()["metadata"], Json::object({{"only", true}}));
    for (const QStringList &bad : {QStringList{"--category", ""}, QStringList{"--category", "x", "--no-categories"},
                                   QStringList{"--replace-metadata"}, QStringList{"--metadata", "[]"}}) {
        const Run r = cli(QStringList{QStringLiteral("update"), id} + bad);
        EXPECT_FAILURE(r, 2);
    }
    COMPARE_JSON(cli({QStringLiteral("get"), id}).json()["metadata"], Json::object({{"only", true}}));
}

void TestCli::identitiesAcrossCommands()
{
    QVERIFY(!remember(QStringLiteral("alice likes green tea"), {QStringLiteral("--user"), QStringLiteral("alice")}).is_null());
    QVERIFY(!remember(QStringLiteral("bob likes green tea"), {QStringLiteral("--user"), QStringLiteral("bob"),
                                                              QStringLiteral("--agent"), QStringLiteral("barista")})
                 .is_null());
    const QByteArray lines = R"({"content": "carol likes green tea", "user_id": "carol", "run_id": "r7"})"
                             "\n"
                             R"({"content": "dave likes green tea"})"
                             "\n";
    const Run many = cli({QStringLiteral("remember-many"), QStringLiteral("-"), QStringLiteral("--user"), QStringLiteral("dave")},
                         lines);
    EXPECT_JSON_OK(many);
    QCOMPARE(many.json()["stored"].get<int>(), 2);
    const auto who = [&](const QStringList &options) {
        const Run r = cli(QStringList{QStringLiteral("recall"), QStringLiteral("green tea")} + options);
        QStringList out;
        for (const Json &m : r.json())
            out << str(m["metadata"]["user_id"]);
        out.sort();
        return out;
    };
    QCOMPARE(who({}), (QStringList{"alice", "bob", "carol", "dave"}));
    QCOMPARE(who({QStringLiteral("--user"), QStringLiteral("bob")}), QStringList{"bob"});
    QCOMPARE(who({QStringLiteral("--agent"), QStringLiteral("barista")}), QStringList{"bob"});
    QCOMPARE(who({QStringLiteral("--run"), QStringLiteral("r7")}), QStringList{"carol"});
    QCOMPARE(who({QStringLiteral("--user"), QStringLiteral("alice"), QStringLiteral("--agent"), QStringLiteral("barista")}),
             QStringList());
    const Run conflict = cli({QStringLiteral("remember"), QStringLiteral("x"), QStringLiteral("--user"), QStringLiteral("erin"),
                              QStringLiteral("--metadata"), QStringLiteral(R"({"user_id": "frank"})")});
    EXPECT_FAILURE(conflict, 2);
    const Run forgotten = cli({QStringLiteral("forget"), QStringLiteral("--user"), QStringLiteral("dave")});
    EXPECT_JSON_OK(forgotten);
    COMPARE_JSON(forgotten.json(), Json::object({{"deleted", 1}}));
    const Run byWhere = cli({QStringLiteral("forget"), QStringLiteral("--where"), QStringLiteral("run_id=r7")});
    EXPECT_JSON_OK(byWhere);
    COMPARE_JSON(byWhere.json(), Json::object({{"deleted", 1}}));
    QCOMPARE(count(), 2);
}

void TestCli::privateRecords()
{
    const Run refused = cli({QStringLiteral("remember"), QStringLiteral("my secret diary entry"),
                             QStringLiteral("--private")});
    EXPECT_FAILURE(refused, 3);
    QCOMPARE(count(), 0);

    const Json secret = remember(QStringLiteral("The vault code is 4411"),
                                 {QStringLiteral("--private"), QStringLiteral("--source"), QStringLiteral("user:alice")});
    QVERIFY(!secret.is_null());
    COMPARE_JSON(secret["private"], Json(true));
    const QString secretId = str(secret["id"]);
    QVERIFY(!remember(QStringLiteral("The vault is in the basement"), {}).is_null());

    auto recallIds = [&](const QStringList &options) {
        const Run r = cli(QStringList{QStringLiteral("recall"), QStringLiteral("vault code")} + options);
        if (r.exitCode != 0 || !r.json().is_array()) {
            qWarning("%s", r.describe().constData());
            return QStringList{QStringLiteral("<failed>")};
        }
        return idsOf(r.json());
    };
    const QStringList anonymous = recallIds({});
    QCOMPARE(anonymous.size(), 1);
    QVERIFY(!anonymous.contains(secretId));
    QVERIFY(recallIds({QStringLiteral("--source"), QStringLiteral("user:alice")}).contains(secretId));
    QVERIFY(!recallIds({QStringLiteral("--source"), QStringLiteral("user:bob")}).contains(secretId));
    QVERIFY(recallIds({QStringLiteral("--include-private")}).contains(secretId));
}

void TestCli::rememberManyJsonLines()
{
    const QString file = m_store->path(QStringLiteral("items.jsonl"));
    QVERIFY(writeFile(file, R"({"content": "Postgres listens on port 5432", "scope": "/infra/db", "categories": ["database"], "importance": 0.9}

{"content": "Redis caches the login sessions", "metadata": {"owner": "ops"}}
   {"content": "The CI pipeline takes 12 minutes", "created_at": "2024-01-02T03:04:05Z", "source": "ci-bot"}
)"));
    const Run r = cli({QStringLiteral("remember-many"), file, QStringLiteral("--scope"), QStringLiteral("/infra"),
                       QStringLiteral("--category"), QStringLiteral("imported"), QStringLiteral("--metadata"),
                       QStringLiteral(R"({"batch": "b1"})")});
    EXPECT_JSON_OK(r);
    const Json out = r.json();
    QCOMPARE(keysOf(out), set({QStringLiteral("stored"), QStringLiteral("dropped"), QStringLiteral("ids")}));
    COMPARE_JSON(out["stored"], Json(3));
    COMPARE_JSON(out["dropped"], Json(0));
    const QStringList ids = [&] {
        QStringList list;
        for (const Json &id : out["ids"])
            list << str(id);
        return list;
    }();
    QCOMPARE(ids.size(), 3);
    QCOMPARE(set(ids).size(), 3);

    const Run first = cli({QStringLiteral("get"), ids[0]});
    EXPECT_JSON_OK(first);
    QCOMPARE(str(first.json()["content"]), QStringLiteral("Postgres listens on port 5432"));
    QCOMPARE(str(first.json()["scope"]), QStringLiteral("/infra/db"));
    COMPARE_JSON(first.json()["categories"], Json::array({"database"}));
    QCOMPARE(first.json()["importance"].get<double>(), 0.9);
    COMPARE_JSON(first.json()["metadata"], Json::object({{"batch", "b1"}}));

    const Run second = cli({QStringLiteral("get"), ids[1]});
    EXPECT_JSON_OK(second);
    QCOMPARE(str(second.json()["scope"]), QStringLiteral("/infra"));
    COMPARE_JSON(second.json()["categories"], Json::array({"imported"}));
    // Its importance was missing: the offline analyzer filled it and added what it extracted.
    const Json meta = second.json()["metadata"];
    COMPARE_JSON(meta["batch"], Json("b1"));
    COMPARE_JSON(meta["owner"], Json("ops"));
    COMPARE_JSON(meta["analysis"], Json("offline"));

    const Run third = cli({QStringLiteral("get"), ids[2]});
    EXPECT_JSON_OK(third);
    QCOMPARE(str(third.json()["created_at"]), QStringLiteral("2024-01-02T03:04:05.000Z"));
    QCOMPARE(str(third.json()["source"]), QStringLiteral("ci-bot"));
}

void TestCli::rememberManyPlainTextAndStdin()
{
    const Run dash = cli({QStringLiteral("remember-many"), QStringLiteral("-"), QStringLiteral("--scope"),
                          QStringLiteral("/notes"), QStringLiteral("--importance"), QStringLiteral("0.3")},
                         "The printer on floor two jams often\n\n   \n  Lunch is served at noon  \r\nParking is free on Fridays");
    EXPECT_JSON_OK(dash);
    COMPARE_JSON(dash.json()["stored"], Json(3));
    const Run notes = cli({QStringLiteral("list"), QStringLiteral("--scope"), QStringLiteral("/notes")});
    EXPECT_JSON_OK(notes);
    QCOMPARE(int(notes.json().size()), 3);
    QSet<QString> contents;
    for (const Json &rec : notes.json()) {
        contents << str(rec["content"]);
        QCOMPARE(rec["importance"].get<double>(), 0.3);
    }
    QVERIFY(contents.contains(QStringLiteral("Lunch is served at noon")));

    // Without a FILE the input is standard input as well.
    const Run implicit = cli({QStringLiteral("remember-many")}, "Standard input line one\nStandard input line two\n");
    EXPECT_JSON_OK(implicit);
    COMPARE_JSON(implicit.json()["stored"], Json(2));

    const QString file = m_store->path(QStringLiteral("plain.txt"));
    QVERIFY(writeFile(file, "A plain text file line\nAnother plain text file line, different words\n"));
    const Run fromFile = cli({QStringLiteral("remember-many"), file});
    EXPECT_JSON_OK(fromFile);
    COMPARE_JSON(fromFile.json()["stored"], Json(2));
    QCOMPARE(count(), 7);
}

void TestCli::rememberManyDuplicates()
{
    const Run first = cli({QStringLiteral("remember-many"), QStringLiteral("-")},
                          "The same fact twice\nThe same fact twice\nA different fact entirely\n");
    EXPECT_JSON_OK(first);
    COMPARE_JSON(first.json()["stored"], Json(2));
    COMPARE_JSON(first.json()["dropped"], Json(1));
    QCOMPARE(count(), 2);

    const Run again = cli({QStringLiteral("remember-many"), QStringLiteral("-")},
                          "The same fact twice\nA different fact entirely\n");
    EXPECT_JSON_OK(again);
    COMPARE_JSON(again.json()["stored"], Json(0));
    COMPARE_JSON(again.json()["dropped"], Json(2));
    QCOMPARE(count(), 2);

    // More than one batch (1,000 items) in one run.
    QByteArray many;
    for (int i = 0; i < 2100; ++i)
        many += "Inventory item number " + QByteArray::number(i) + " is stored in bin " + QByteArray::number(i * 7919 % 1000)
              + "\n";
    const Run big = cli({QStringLiteral("remember-many"), QStringLiteral("-"), QStringLiteral("--scope"),
                         QStringLiteral("/inventory")},
                        many);
    EXPECT_JSON_OK(big);
    const int stored = big.json()["stored"].get<int>();
    const int dropped = big.json()["dropped"].get<int>();
    QCOMPARE(stored + dropped, 2100);
    QVERIFY(stored > 1000);
    QCOMPARE(count(), 2 + stored);
}

void TestCli::rememberManyRejectsBadInput_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QByteArray>("message");

    QTest::newRow("invalid UTF-8") << QByteArray("A fine first line\nbad \xff\xfe bytes\n") << 2 << QByteArray("line 2");
    QTest::newRow("invalid UTF-8 in JSON")
        << QByteArray("{\"content\": \"ok\"}\n{\"content\": \"bad \xc3\x28\"}\n") << 2 << QByteArray("line 2");
    QTest::newRow("malformed JSON line")
        << QByteArray("{\"content\": \"ok\"}\n{\"content\": \"broken\"\n") << 2 << QByteArray("line 2");
    QTest::newRow("line without content")
        << QByteArray("{\"content\": \"ok\"}\n\n{\"scope\": \"/a\"}\n") << 2 << QByteArray("line 3");
    QTest::newRow("blank content") << QByteArray("{\"content\": \"   \"}\n") << 2 << QByteArray("line 1");
    QTest::newRow("not an object") << QByteArray("{\"content\": \"ok\"}\n[1, 2]\n") << 2 << QByteArray("line 2");
    QTest::newRow("importance out of range")
        << QByteArray("{\"content\": \"x\", \"importance\": 1.5}\n") << 2 << QByteArray("importance");
    QTest::newRow("bad scope") << QByteArray("{\"content\": \"x\", \"scope\": \"/a/../b\"}\n") << 2 << QByteArray("line 1");
    QTest::newRow("categories not strings")
        << QByteArray("{\"content\": \"x\", \"categories\": [1]}\n") << 2 << QByteArray("categories");
    QTest::newRow("bad created_at")
        << QByteArray("{\"content\": \"x\", \"created_at\": \"last tuesday\"}\n") << 2 << QByteArray("created_at");
    QTest::newRow("unknown field") << QByteArray("{\"content\": \"x\", \"catgories\": [\"a\"]}\n") << 2
                                   << QByteArray("catgories");
    QTest::newRow("private without source")
        << QByteArray("{\"content\": \"x\", \"private\": true}\n") << 3 << QByteArray("line 1");
    QTest::newRow("1 MB line") << (QByteArray("{\"content\": \"") + QByteArray(1 << 20, 'a') + "\"}\n") << 2
                               << QByteArray("line 1");
    QByteArray late;
    for (int i = 0; i < 1500; ++i)
        late += "Valid line number " + QByteArray::number(i) + "\n";
    late += "invalid \xc0\xaf here\n";
    QTest::newRow("invalid UTF-8 after the first batch") << late << 2 << QByteArray("line 1501");
}

void TestCli::rememberManyRejectsBadInput()
{
    QFETCH(QByteArray, input);
    QFETCH(int, exitCode);
    QFETCH(QByteArray, message);

    QVERIFY(!remember(QStringLiteral("baseline record"), {}).is_null());
    const QString file = m_store->path(QStringLiteral("bad.jsonl"));
    QVERIFY(writeFile(file, input));
    const Run fromFile = cli({QStringLiteral("remember-many"), file});
    EXPECT_FAILURE(fromFile, exitCode);
    QVERIFY2(fromFile.err.contains(message), fromFile.describe().constData());
    QCOMPARE(count(), 1);

    const Run fromStdin = cli({QStringLiteral("remember-many"), QStringLiteral("-")}, input);
    EXPECT_FAILURE(fromStdin, exitCode);
    QCOMPARE(count(), 1);
}

void TestCli::updateAndHistory()
{
    const Json added = remember(QStringLiteral("The office opens at 8"), {QStringLiteral("--scope"), QStringLiteral("/office")});
    QVERIFY(!added.is_null());
    const QString id = str(added["id"]);

    const Run updated = cli({QStringLiteral("update"), id, QStringLiteral("--content"), QStringLiteral("The office opens at 9"),
                             QStringLiteral("--scope"), QStringLiteral("/office/hours"), QStringLiteral("--category"),
                             QStringLiteral("schedule"), QStringLiteral("--importance"), QStringLiteral("0.7")});
    EXPECT_JSON_OK(updated);
    QCOMPARE(keysOf(updated.json()), set(kRecordKeys));
    QCOMPARE(str(updated.json()["id"]), id);
    QCOMPARE(str(updated.json()["content"]), QStringLiteral("The office opens at 9"));
    QCOMPARE(str(updated.json()["scope"]), QStringLiteral("/office/hours"));
    COMPARE_JSON(updated.json()["categories"], Json::array({"schedule"}));
    QCOMPARE(updated.json()["importance"].get<double>(), 0.7);

    const Run history = cli({QStringLiteral("history"), id});
    EXPECT_JSON_OK(history);
    const Json h = history.json();
    QVERIFY(h.is_array());
    QCOMPARE(int(h.size()), 2);
    for (const Json &e : h)
        QCOMPARE(keysOf(e), set({QStringLiteral("event"), QStringLiteral("old_content"), QStringLiteral("new_content"),
                                 QStringLiteral("at")}));
    QCOMPARE(str(h[0]["event"]), QStringLiteral("ADD"));
    QVERIFY(h[0]["old_content"].is_null());
    QCOMPARE(str(h[0]["new_content"]), QStringLiteral("The office opens at 8"));
    QCOMPARE(str(h[1]["event"]), QStringLiteral("UPDATE"));
    QCOMPARE(str(h[1]["old_content"]), QStringLiteral("The office opens at 8"));
    QCOMPARE(str(h[1]["new_content"]), QStringLiteral("The office opens at 9"));

    const Run nothingToChange = cli({QStringLiteral("update"), id});
    EXPECT_FAILURE(nothingToChange, 2);

    const Run forgotten = cli({QStringLiteral("forget"), QStringLiteral("--id"), id});
    EXPECT_JSON_OK(forgotten);
    COMPARE_JSON(forgotten.json(), Json::object({{"deleted", 1}}));
    const Run afterDelete = cli({QStringLiteral("history"), id});
    EXPECT_JSON_OK(afterDelete);
    QCOMPARE(int(afterDelete.json().size()), 3);
    QCOMPARE(str(afterDelete.json()[2]["event"]), QStringLiteral("DELETE"));
    const Run gone = cli({QStringLiteral("get"), id});
    EXPECT_FAILURE(gone, 2);
}

void TestCli::undoUpdate()
{
    const Json added = remember(QStringLiteral("The office opens at 8"),
                                {QStringLiteral("--scope"), QStringLiteral("/office"), QStringLiteral("--category"),
                                 QStringLiteral("hours"), QStringLiteral("--importance"), QStringLiteral("0.6")});
    QVERIFY(!added.is_null());
    const QString id = str(added["id"]);
    const Run updated = cli({QStringLiteral("update"), id, QStringLiteral("--content"), QStringLiteral("The office opens at 9"),
                             QStringLiteral("--scope"), QStringLiteral("/office/hours"), QStringLiteral("--category"),
                             QStringLiteral("schedule"), QStringLiteral("--importance"), QStringLiteral("0.9")});
    EXPECT_JSON_OK(updated);

    const Run undone = cli({QStringLiteral("undo"), id});
    EXPECT_JSON_OK(undone);
    const Json r = undone.json();
    QCOMPARE(keysOf(r), set(kRecordKeys));
    QCOMPARE(str(r["id"]), id);
    QCOMPARE(str(r["content"]), QStringLiteral("The office opens at 8"));
    QCOMPARE(str(r["scope"]), QStringLiteral("/office"));
    COMPARE_JSON(r["categories"], Json::array({"hours"}));
    QCOMPARE(r["importance"].get<double>(), 0.6);
    COMPARE_JSON(r["created_at"], added["created_at"]);

    const Run got = cli({QStringLiteral("get"), id});
    EXPECT_JSON_OK(got);
    QCOMPARE(str(got.json()["content"]), QStringLiteral("The office opens at 8"));
    QCOMPARE(str(got.json()["scope"]), QStringLiteral("/office"));
    // The undo is a change of its own in the history.
    const Run history = cli({QStringLiteral("history"), id});
    EXPECT_JSON_OK(history);
    const Json h = history.json();
    QCOMPARE(int(h.size()), 3);
    QCOMPARE(str(h[2]["event"]), QStringLiteral("UPDATE"));
    QCOMPARE(str(h[2]["old_content"]), QStringLiteral("The office opens at 9"));
    QCOMPARE(str(h[2]["new_content"]), QStringLiteral("The office opens at 8"));
    // The restored content is what recall finds (its vector and keyword index followed).
    const Run recalled = cli({QStringLiteral("recall"), QStringLiteral("when does the office open"), QStringLiteral("--limit"),
                              QStringLiteral("1")});
    EXPECT_JSON_OK(recalled);
    QCOMPARE(int(recalled.json().size()), 1);
    QCOMPARE(str(recalled.json()[0]["content"]), QStringLiteral("The office opens at 8"));
    QCOMPARE(count(), 1);

    // For people: the restored record, field by field.
    const Run human = run({QStringLiteral("undo"), id, QStringLiteral("--db"), m_db});
    EXPECT_EXIT(human, 0);
    QVERIFY2(human.out.startsWith("Restored:\n"), human.describe().constData());
    QVERIFY(human.out.contains("The office opens at 9")); // undoing the undo re-applies the update
    QVERIFY(human.out.contains(id.toUtf8()));
    QVERIFY(!human.isJson());
}

void TestCli::undoForget()
{
    const Json added = remember(QStringLiteral("Parking is behind building C"),
                                {QStringLiteral("--scope"), QStringLiteral("/office"), QStringLiteral("--metadata"),
                                 QStringLiteral(R"({"floor": 0})")});
    QVERIFY(!added.is_null());
    const QString id = str(added["id"]);
    const Run forgotten = cli({QStringLiteral("forget"), QStringLiteral("--id"), id});
    EXPECT_JSON_OK(forgotten);
    COMPARE_JSON(forgotten.json(), Json::object({{"deleted", 1}}));
    QCOMPARE(count(), 0);

    const Run undone = cli({QStringLiteral("undo"), id});
    EXPECT_JSON_OK(undone);
    QCOMPARE(keysOf(undone.json()), set(kRecordKeys));
    for (const char *field : {"id", "content", "scope", "categories", "metadata", "created_at", "importance", "private"})
        QVERIFY2(undone.json()[field] == added[field], field);
    QCOMPARE(count(), 1);
    const Run got = cli({QStringLiteral("get"), id});
    EXPECT_JSON_OK(got);
    QCOMPARE(str(got.json()["content"]), QStringLiteral("Parking is behind building C"));
    const Run history = cli({QStringLiteral("history"), id});
    EXPECT_JSON_OK(history);
    QCOMPARE(int(history.json().size()), 3);
    QCOMPARE(str(history.json()[1]["event"]), QStringLiteral("DELETE"));
    const Run found = cli({QStringLiteral("recall"), QStringLiteral("where is the parking")});
    EXPECT_JSON_OK(found);
    QVERIFY(!found.json().empty());
    QCOMPARE(str(found.json()[0]["id"]), id);
}

void TestCli::undoNothingToUndo()
{
    const Json added = remember(QStringLiteral("The wifi password is on the fridge"));
    QVERIFY(!added.is_null());
    const QString id = str(added["id"]);
    const Run never = cli({QStringLiteral("undo"), id});
    EXPECT_FAILURE(never, 2);
    QVERIFY2(never.err.contains("nothing to undo") && never.err.contains(id.toUtf8()), never.describe().constData());
    const Run got = cli({QStringLiteral("get"), id});
    EXPECT_JSON_OK(got);
    COMPARE_JSON(got.json()["content"], added["content"]);
    const Run history = cli({QStringLiteral("history"), id});
    QCOMPARE(int(history.json().size()), 1);

    // An unknown id is NotFound, with the CLI's exit status for it.
    const Run unknown = cli({QStringLiteral("undo"), QStringLiteral("00000000-0000-0000-0000-000000000000")});
    EXPECT_FAILURE(unknown, 2);
    QVERIFY2(unknown.err.contains("00000000-0000-0000-0000-000000000000"), unknown.describe().constData());
    QCOMPARE(count(), 1);
}

void TestCli::extract()
{
    const QString text = QStringLiteral("Alice moved to Berlin in 2021. She works at Acme as a data engineer; her manager is Bob.\n\n"
                                        "Action items:\n- Book the venue\n- Send the invitations");
    const QStringList expected = {QStringLiteral("Alice moved to Berlin in 2021."),
                                  QStringLiteral("She works at Acme as a data engineer"), QStringLiteral("her manager is Bob."),
                                  QStringLiteral("Book the venue"), QStringLiteral("Send the invitations")};
    const Run json = cli({QStringLiteral("extract"), text});
    EXPECT_JSON_OK(json);
    Json expectedJson = Json::array();
    for (const QString &s : expected)
        expectedJson.push_back(s.toStdString());
    COMPARE_JSON(json.json(), expectedJson);

    // For people: one statement a line, nothing else on either stream.
    const Run human = run({QStringLiteral("extract"), text, QStringLiteral("--db"), m_db});
    EXPECT_EXIT(human, 0);
    QCOMPARE(QString::fromUtf8(human.out), expected.join(QLatin1Char('\n')) + QLatin1Char('\n'));
    QVERIFY(human.err.isEmpty());

    // Non-ASCII text comes through as it is.
    const Run unicode = cli({QStringLiteral("extract"), QStringLiteral("Zoë lives in Zürich. Émile visits her from 東京!")});
    EXPECT_JSON_OK(unicode);
    COMPARE_JSON(unicode.json(), Json::array({"Zoë lives in Zürich.", "Émile visits her from 東京!"}));
}

void TestCli::extractFromStdin()
{
    const QByteArray text = "Zoë prefers tea over coffee. The team meets on Tuesdays!\n"
                            "1. Renew the domain\n2. Update the DNS records\n";
    const Run fromStdin = cli({QStringLiteral("extract"), QStringLiteral("-")}, text);
    EXPECT_JSON_OK(fromStdin);
    COMPARE_JSON(fromStdin.json(), Json::array({"Zoë prefers tea over coffee.", "The team meets on Tuesdays!",
                                                "Renew the domain", "Update the DNS records"}));
    // The same text as an argument gives the same statements.
    const Run fromArgument = cli({QStringLiteral("extract"), QString::fromUtf8(text)});
    EXPECT_JSON_OK(fromArgument);
    COMPARE_JSON(fromArgument.json(), fromStdin.json());
    // A byte-order mark is not part of the text.
    const Run withBom = cli({QStringLiteral("extract"), QStringLiteral("-")}, "\xEF\xBB\xBF" + text);
    EXPECT_JSON_OK(withBom);
    COMPARE_JSON(withBom.json(), fromStdin.json());

    // Invalid UTF-8 is refused as bad input, and nothing is printed.
    const Run invalid = cli({QStringLiteral("extract"), QStringLiteral("-")}, QByteArray("Caf\xE9 au lait. Fine text.\n"));
    EXPECT_FAILURE(invalid, 2);
    QVERIFY2(invalid.err.contains("UTF-8"), invalid.describe().constData());
    const Run truncated = cli({QStringLiteral("extract"), QStringLiteral("-")}, QByteArray("Ends inside a character \xE6\x9D"));
    EXPECT_FAILURE(truncated, 2);
}

void TestCli::extractEmpty_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("input");
    QTest::newRow("empty argument") << QStringList{QStringLiteral("extract"), QString()} << QByteArray();
    QTest::newRow("blank argument") << QStringList{QStringLiteral("extract"), QStringLiteral(" \t\n ")} << QByteArray();
    QTest::newRow("empty stdin") << QStringList{QStringLiteral("extract"), QStringLiteral("-")} << QByteArray();
    QTest::newRow("blank stdin") << QStringList{QStringLiteral("extract"), QStringLiteral("-")} << QByteArray("\n\n   \n");
    QTest::newRow("no letters") << QStringList{QStringLiteral("extract"), QStringLiteral("... --- !!!")} << QByteArray();
}

void TestCli::extractEmpty()
{
    QFETCH(QStringList, args);
    QFETCH(QByteArray, input);
    const Run json = cli(args, input);
    EXPECT_JSON_OK(json);
    COMPARE_JSON(json.json(), Json::array());
    const Run human = run(args + QStringList{QStringLiteral("--db"), m_db}, input);
    EXPECT_EXIT(human, 0);
    QVERIFY2(human.out.isEmpty() && human.err.isEmpty(), human.describe().constData());
    QVERIFY(!QFileInfo::exists(m_db));
}

void TestCli::extractCreatesNoStore()
{
    const QString text = QStringLiteral("The build takes ten minutes. Tests run nightly.");
    // Neither the --db file, nor the default store ($MNEME_STORAGE_DIR, set by the runner), nor ./.mneme.
    const Run withDb = cli({QStringLiteral("extract"), text});
    EXPECT_JSON_OK(withDb);
    QCOMPARE(int(withDb.json().size()), 2);
    const QString nested = m_store->path(QStringLiteral("not/yet/there.db"));
    const Run nestedDb = run({QStringLiteral("extract"), text, QStringLiteral("--db"), nested, QStringLiteral("--json")});
    EXPECT_JSON_OK(nestedDb);
    const Run noDb = run({QStringLiteral("--json"), QStringLiteral("extract"), text});
    EXPECT_JSON_OK(noDb);
    const Run verbose = run({QStringLiteral("extract"), text, QStringLiteral("--verbose")});
    EXPECT_EXIT(verbose, 0);
    QVERIFY2(!verbose.err.contains(m_store->dir().toUtf8()), verbose.describe().constData()); // names no store file
    QVERIFY(!QFileInfo::exists(m_db));
    QVERIFY(!QFileInfo::exists(m_store->path(QStringLiteral("not"))));
    QVERIFY(!QFileInfo::exists(m_store->path(QStringLiteral("default"))));
    QVERIFY(!QFileInfo::exists(m_store->path(QStringLiteral(".mneme"))));

    // An existing store is left as it was.
    QVERIFY(!remember(QStringLiteral("A record that extract must not touch")).is_null());
    const QByteArray before = readFile(m_db);
    QVERIFY(!before.isEmpty());
    const Run again = cli({QStringLiteral("extract"), text});
    EXPECT_JSON_OK(again);
    QCOMPARE(readFile(m_db), before);
    QVERIFY(!QFileInfo::exists(m_db + QStringLiteral("-wal")));
    QCOMPARE(count(), 1);
}

void TestCli::treeInfoScopesCategories()
{
    auto add = [&](const char *content, const char *scope, const char *category, const char *at) {
        return !remember(QString::fromUtf8(content), {QStringLiteral("--scope"), QString::fromUtf8(scope),
                                                      QStringLiteral("--category"), QString::fromUtf8(category),
                                                      QStringLiteral("--at"), QString::fromUtf8(at)})
                    .is_null();
    };
    QVERIFY(add("Alpha uses Qt 6", "/proj/alpha", "a", "2024-03-01"));
    QVERIFY(add("Alpha's API is REST", "/proj/alpha/api", "b", "2024-03-05"));
    QVERIFY(add("Beta ships in June", "/proj/beta", "a", "2024-02-10"));
    QVERIFY(add("I like hiking", "/personal", "c", "2024-01-01"));

    const Run tree = cli({QStringLiteral("tree")});
    EXPECT_JSON_OK(tree);
    const Json root = tree.json();
    QCOMPARE(keysOf(root), set({QStringLiteral("path"), QStringLiteral("record_count"), QStringLiteral("children")}));
    QCOMPARE(str(root["path"]), QStringLiteral("/"));
    COMPARE_JSON(root["record_count"], Json(4));
    const Json *proj = findNode(root, "/proj");
    QVERIFY(proj);
    COMPARE_JSON((*proj)["record_count"], Json(3));
    const Json *alpha = findNode(root, "/proj/alpha");
    QVERIFY(alpha);
    COMPARE_JSON((*alpha)["record_count"], Json(2));
    QVERIFY(findNode(root, "/proj/alpha/api"));
    QVERIFY(findNode(root, "/personal"));

    const Run shallow = cli({QStringLiteral("tree"), QStringLiteral("/proj"), QStringLiteral("--max-depth"), QStringLiteral("1")});
    EXPECT_JSON_OK(shallow);
    QCOMPARE(str(shallow.json()["path"]), QStringLiteral("/proj"));
    QCOMPARE(int(shallow.json()["children"].size()), 2);
    QVERIFY(findNode(shallow.json(), "/proj/beta"));
    QVERIFY(!findNode(shallow.json(), "/proj/alpha/api"));

    const Run info = cli({QStringLiteral("info"), QStringLiteral("/proj")});
    EXPECT_JSON_OK(info);
    const Json i = info.json();
    QCOMPARE(keysOf(i), set({QStringLiteral("path"), QStringLiteral("record_count"), QStringLiteral("categories"),
                             QStringLiteral("oldest_record"), QStringLiteral("newest_record"),
                             QStringLiteral("child_scopes")}));
    QCOMPARE(str(i["path"]), QStringLiteral("/proj"));
    COMPARE_JSON(i["record_count"], Json(3));
    COMPARE_JSON(i["categories"], Json::array({"a", "b"}));
    COMPARE_JSON(i["child_scopes"], Json::array({"/proj/alpha", "/proj/beta"}));
    QCOMPARE(str(i["oldest_record"]), QStringLiteral("2024-02-10T00:00:00.000Z"));
    QCOMPARE(str(i["newest_record"]), QStringLiteral("2024-03-05T00:00:00.000Z"));

    const Run scopes = cli({QStringLiteral("scopes")});
    EXPECT_JSON_OK(scopes);
    COMPARE_JSON(scopes.json(), Json::array({"/personal", "/proj"}));
    const Run subScopes = cli({QStringLiteral("scopes"), QStringLiteral("/proj")});
    EXPECT_JSON_OK(subScopes);
    COMPARE_JSON(subScopes.json(), Json::array({"/proj/alpha", "/proj/beta"}));

    const Run categories = cli({QStringLiteral("categories")});
    EXPECT_JSON_OK(categories);
    COMPARE_JSON(categories.json(), Json::object({{"a", 2}, {"b", 1}, {"c", 1}}));
    const Run projCategories = cli({QStringLiteral("categories"), QStringLiteral("--scope"), QStringLiteral("/proj")});
    EXPECT_JSON_OK(projCategories);
    COMPARE_JSON(projCategories.json(), Json::object({{"a", 2}, {"b", 1}}));

    const Run list = cli({QStringLiteral("list"), QStringLiteral("--scope"), QStringLiteral("/proj/alpha")});
    EXPECT_JSON_OK(list);
    QCOMPARE(int(list.json().size()), 2);
}

void TestCli::listOrderAndPaging()
{
    QVERIFY(!remember(QStringLiteral("January note on budgets"), {QStringLiteral("--at"), QStringLiteral("2024-01-01")}).is_null());
    QVERIFY(!remember(QStringLiteral("March note on hiring"), {QStringLiteral("--at"), QStringLiteral("2024-03-01")}).is_null());
    QVERIFY(!remember(QStringLiteral("February note on travel"), {QStringLiteral("--at"), QStringLiteral("2024-02-01")}).is_null());

    const Run all = cli({QStringLiteral("list")});
    EXPECT_JSON_OK(all);
    QCOMPARE(int(all.json().size()), 3);
    QCOMPARE(str(all.json()[0]["content"]), QStringLiteral("March note on hiring"));
    QCOMPARE(str(all.json()[1]["content"]), QStringLiteral("February note on travel"));
    QCOMPARE(str(all.json()[2]["content"]), QStringLiteral("January note on budgets"));
    for (const Json &r : all.json())
        QCOMPARE(keysOf(r), set(kRecordKeys));

    const Run page = cli({QStringLiteral("list"), QStringLiteral("--limit"), QStringLiteral("1"), QStringLiteral("--offset"),
                          QStringLiteral("1")});
    EXPECT_JSON_OK(page);
    QCOMPARE(int(page.json().size()), 1);
    QCOMPARE(str(page.json()[0]["content"]), QStringLiteral("February note on travel"));
}

void TestCli::forgetFilters()
{
    auto add = [&](const QString &content, const QStringList &options) {
        const Json r = remember(content, options);
        return str(r["id"]);
    };
    add(QStringLiteral("Old fact in x"), {QStringLiteral("--scope"), QStringLiteral("/x"), QStringLiteral("--category"),
                                          QStringLiteral("stale"), QStringLiteral("--at"), QStringLiteral("2020-01-01")});
    add(QStringLiteral("Recent fact in x"), {QStringLiteral("--scope"), QStringLiteral("/x"), QStringLiteral("--at"),
                                             QStringLiteral("2024-06-01")});
    add(QStringLiteral("Stale fact in y"), {QStringLiteral("--scope"), QStringLiteral("/y"), QStringLiteral("--category"),
                                            QStringLiteral("stale"), QStringLiteral("--at"), QStringLiteral("2024-06-01")});
    const QString keep = add(QStringLiteral("Fresh fact in y"), {QStringLiteral("--scope"), QStringLiteral("/y"),
                                                                 QStringLiteral("--at"), QStringLiteral("2024-06-01")});
    QVERIFY(!keep.isEmpty());
    QCOMPARE(count(), 4);

    const Run unfiltered = cli({QStringLiteral("forget")});
    EXPECT_FAILURE(unfiltered, 2);
    QVERIFY(unfiltered.err.contains("reset --yes"));
    QVERIFY(unfiltered.err.contains("--scope"));
    QCOMPARE(count(), 4);

    const Run older = cli({QStringLiteral("forget"), QStringLiteral("--older-than"), QStringLiteral("2021-01-01")});
    EXPECT_JSON_OK(older);
    COMPARE_JSON(older.json(), Json::object({{"deleted", 1}}));
    const Run byCategory = cli({QStringLiteral("forget"), QStringLiteral("--category"), QStringLiteral("stale")});
    EXPECT_JSON_OK(byCategory);
    COMPARE_JSON(byCategory.json(), Json::object({{"deleted", 1}}));
    const Run byScope = cli({QStringLiteral("forget"), QStringLiteral("--scope"), QStringLiteral("/x")});
    EXPECT_JSON_OK(byScope);
    COMPARE_JSON(byScope.json(), Json::object({{"deleted", 1}}));
    QCOMPARE(count(), 1);

    const Run byIds = cli({QStringLiteral("forget"), QStringLiteral("--id"), keep, QStringLiteral("--id"),
                           QStringLiteral("00000000-0000-0000-0000-000000000000")});
    EXPECT_JSON_OK(byIds);
    COMPARE_JSON(byIds.json(), Json::object({{"deleted", 1}}));
    QCOMPARE(count(), 0);
}

void TestCli::resetNeedsYes()
{
    QVERIFY(!remember(QStringLiteral("fact one"), {QStringLiteral("--scope"), QStringLiteral("/a")}).is_null());
    QVERIFY(!remember(QStringLiteral("fact two"), {QStringLiteral("--scope"), QStringLiteral("/a/b")}).is_null());
    QVERIFY(!remember(QStringLiteral("fact three"), {QStringLiteral("--scope"), QStringLiteral("/c")}).is_null());

    const Run refused = cli({QStringLiteral("reset")});
    EXPECT_FAILURE(refused, 2);
    QVERIFY(refused.err.contains("refusing to delete without --yes"));
    QCOMPARE(count(), 3);

    const Run subtree = cli({QStringLiteral("reset"), QStringLiteral("--scope"), QStringLiteral("/a"), QStringLiteral("--yes")});
    EXPECT_JSON_OK(subtree);
    COMPARE_JSON(subtree.json(), Json::object({{"deleted", 2}}));
    QCOMPARE(count(), 1);

    const Run everything = cli({QStringLiteral("reset"), QStringLiteral("--yes")});
    EXPECT_JSON_OK(everything);
    COMPARE_JSON(everything.json(), Json::object({{"deleted", 1}}));
    QCOMPARE(count(), 0);
}

void TestCli::exportImportRoundTrip()
{
    QVERIFY(!remember(QStringLiteral("Export me: the backup runs at 2am"),
                      {QStringLiteral("--scope"), QStringLiteral("/ops"), QStringLiteral("--category"), QStringLiteral("backup"),
                       QStringLiteral("--importance"), QStringLiteral("0.9"), QStringLiteral("--at"),
                       QStringLiteral("2023-07-08T09:10:11Z"), QStringLiteral("--metadata"), QStringLiteral(R"({"k": [1, 2]})")})
                 .is_null());
    QVERIFY(!remember(QStringLiteral("Alice's private reminder about the dentist"),
                      {QStringLiteral("--private"), QStringLiteral("--source"), QStringLiteral("user:alice")})
                 .is_null());
    QVERIFY(!remember(QStringLiteral("Unicode survives: café, naïve, 東京"), {}).is_null());
    const Run original = cli({QStringLiteral("list"), QStringLiteral("--curator")});
    EXPECT_JSON_OK(original);

    // A backup is the curator's: every record. Another reader's export leaves the private ones out,
    // and says so.
    const QString partial = m_store->path(QStringLiteral("partial.jsonl"));
    const Run shared = cli({QStringLiteral("export"), partial});
    EXPECT_EXIT(shared, 0);
    COMPARE_JSON(shared.json()["exported"], Json(2));
    QVERIFY2(shared.err.contains("1 private record left out"), shared.describe().constData());

    const QString file = m_store->path(QStringLiteral("export.jsonl"));
    const Run exported = cli({QStringLiteral("export"), file, QStringLiteral("--curator")});
    EXPECT_JSON_OK(exported);
    COMPARE_JSON(exported.json(), Json::object({{"exported", 3}, {"file", file.toStdString()}}));
    const QList<QByteArray> lines = readFile(file).trimmed().split('\n');
    QCOMPARE(lines.size(), 3);
    std::string embedderId;
    for (const QByteArray &line : lines) {
        const Json j = Json::parse(line.toStdString());
        QVERIFY(keysOf(j).contains(set(kRecordKeys)));
        QVERIFY(j["embedding"].is_array() && !j["embedding"].empty());
        QVERIFY(j["embedding"][0].is_number());
        QVERIFY(j["embedder"].is_string());
        embedderId = j["embedder"].get<std::string>();
    }

    // Without FILE the JSON Lines go to standard output, which then cannot also carry --json.
    const Run toStdout = run({QStringLiteral("export"), QStringLiteral("--db"), m_db, QStringLiteral("--curator")});
    EXPECT_EXIT(toStdout, 0);
    QCOMPARE(toStdout.out.trimmed().split('\n').size(), 3);
    COMPARE_JSON(Json::parse(toStdout.out.trimmed().split('\n').first().toStdString())["embedder"], Json(embedderId));
    const Run dashToStdout = run({QStringLiteral("export"), QStringLiteral("-"), QStringLiteral("--db"), m_db, QStringLiteral("--curator")});
    EXPECT_EXIT(dashToStdout, 0);
    QCOMPARE(dashToStdout.out.trimmed().split('\n').size(), 3);
    const Run jsonToStdout = cli({QStringLiteral("export")});
    EXPECT_FAILURE(jsonToStdout, 2);
    // Import reads standard input with "-".
    const Run fromStdin = run({QStringLiteral("import"), QStringLiteral("-"), QStringLiteral("--db"),
                               m_store->path(QStringLiteral("from-stdin.db")), QStringLiteral("--json")},
                              toStdout.out);
    EXPECT_JSON_OK(fromStdin);
    COMPARE_JSON(fromStdin.json(), Json::object({{"imported", 3}, {"skipped", 0}}));

    // Into a new store: contents embedded again.
    const QString db2 = m_store->path(QStringLiteral("second.db"));
    const Run imported = run({QStringLiteral("import"), file, QStringLiteral("--db"), db2, QStringLiteral("--json")});
    EXPECT_JSON_OK(imported);
    COMPARE_JSON(imported.json(), Json::object({{"imported", 3}, {"skipped", 0}}));
    const Run copy = run({QStringLiteral("list"), QStringLiteral("--db"), db2, QStringLiteral("--json"), QStringLiteral("--curator")});
    EXPECT_JSON_OK(copy);
    QCOMPARE(int(copy.json().size()), 3);
    for (const Json &a : original.json()) {
        bool found = false;
        for (const Json &b : copy.json()) {
            if (b["id"] != a["id"])
                continue;
            found = true;
            for (const char *field : {"content", "scope", "categories", "importance", "source", "private", "metadata",
                                      "created_at"})
                QVERIFY2(a[field] == b[field], field);
        }
        QVERIFY2(found, a["id"].dump().c_str());
    }
    const Run recalled = run({QStringLiteral("recall"), QStringLiteral("backup at 2am"), QStringLiteral("--db"), db2,
                              QStringLiteral("--json")});
    EXPECT_JSON_OK(recalled);
    QVERIFY(!recalled.json().empty());
    QCOMPARE(str(recalled.json()[0]["content"]), QStringLiteral("Export me: the backup runs at 2am"));

    const Run again = run({QStringLiteral("import"), file, QStringLiteral("--reembed"), QStringLiteral("--db"), db2,
                           QStringLiteral("--json")});
    EXPECT_JSON_OK(again);
    COMPARE_JSON(again.json(), Json::object({{"imported", 0}, {"skipped", 3}}));

    // Keeping the embeddings reproduces them exactly.
    const QString db3 = m_store->path(QStringLiteral("third.db"));
    const Run kept = run({QStringLiteral("import"), file, QStringLiteral("--keep-embeddings"), QStringLiteral("--db"), db3,
                          QStringLiteral("--json")});
    EXPECT_JSON_OK(kept);
    COMPARE_JSON(kept.json(), Json::object({{"imported", 3}, {"skipped", 0}}));
    const QString file3 = m_store->path(QStringLiteral("export3.jsonl"));
    const Run exported3 = run({QStringLiteral("export"), file3, QStringLiteral("--db"), db3, QStringLiteral("--json"), QStringLiteral("--curator")});
    EXPECT_JSON_OK(exported3);
    auto embeddings = [](const QByteArray &text) {
        std::map<std::string, Json> byId;
        for (const QByteArray &line : text.trimmed().split('\n')) {
            const Json j = Json::parse(line.toStdString());
            byId[j["id"].get<std::string>()] = j["embedding"];
        }
        return byId;
    };
    QVERIFY(embeddings(readFile(file)) == embeddings(readFile(file3)));

    // Another embedder's vectors are refused with --keep-embeddings, and nothing is imported.
    QByteArray foreign = readFile(file);
    foreign.replace(QByteArray("\"embedder\":\"") + QByteArray::fromStdString(embedderId) + "\"",
                    QByteArray("\"embedder\":\"other/model-x\""));
    QVERIFY(foreign.contains("other/model-x"));
    const QString foreignFile = m_store->path(QStringLiteral("foreign.jsonl"));
    QVERIFY(writeFile(foreignFile, foreign));
    const QString db4 = m_store->path(QStringLiteral("fourth.db"));
    const Run mismatch = run({QStringLiteral("import"), foreignFile, QStringLiteral("--keep-embeddings"),
                              QStringLiteral("--db"), db4, QStringLiteral("--json")});
    EXPECT_FAILURE(mismatch, 2);
    QVERIFY(mismatch.err.contains("--keep-embeddings"));
    const Run empty4 = run({QStringLiteral("list"), QStringLiteral("--db"), db4, QStringLiteral("--json")});
    EXPECT_JSON_OK(empty4);
    QCOMPARE(int(empty4.json().size()), 0);
    const Run reembedded = run({QStringLiteral("import"), foreignFile, QStringLiteral("--db"), db4, QStringLiteral("--json")});
    EXPECT_JSON_OK(reembedded);
    COMPARE_JSON(reembedded.json(), Json::object({{"imported", 3}, {"skipped", 0}}));

    const Run both = run({QStringLiteral("import"), file, QStringLiteral("--keep-embeddings"), QStringLiteral("--reembed"),
                          QStringLiteral("--db"), db4, QStringLiteral("--json")});
    EXPECT_FAILURE(both, 2);
}

void TestCli::importRejectsBadInput_data()
{
    QTest::addColumn<QByteArray>("line");
    QTest::addColumn<QByteArray>("message");

    QTest::newRow("invalid UTF-8") << QByteArray("{\"id\": \"x-1\", \"content\": \"bad \xff byte\"}") << QByteArray("line 2");
    QTest::newRow("malformed JSON") << QByteArray("{\"id\": \"x-1\", \"content\": ") << QByteArray("line 2");
    QTest::newRow("not an object") << QByteArray("\"just a string\"") << QByteArray("line 2");
    QTest::newRow("no content") << QByteArray("{\"id\": \"x-1\"}") << QByteArray("line 2");
    QTest::newRow("bad importance") << QByteArray("{\"id\": \"x-1\", \"content\": \"c\", \"importance\": 7}")
                                    << QByteArray("importance");
    QTest::newRow("bad scope") << QByteArray("{\"id\": \"x-1\", \"content\": \"c\", \"scope\": \"/a//b\"}")
                               << QByteArray("line 2");
    QTest::newRow("bad time") << QByteArray("{\"id\": \"x-1\", \"content\": \"c\", \"created_at\": \"soon\"}")
                              << QByteArray("created_at");
    QTest::newRow("duplicate id") << QByteArray("{\"id\": \"first-id\", \"content\": \"again\"}") << QByteArray("line 2");
}

void TestCli::importRejectsBadInput()
{
    QFETCH(QByteArray, line);
    QFETCH(QByteArray, message);

    QVERIFY(!remember(QStringLiteral("baseline record"), {}).is_null());
    const QString file = m_store->path(QStringLiteral("bad-import.jsonl"));
    QVERIFY(writeFile(file, "{\"id\": \"first-id\", \"content\": \"a valid first line\", \"scope\": \"/imported\"}\n" + line
                                + "\n{\"id\": \"third-id\", \"content\": \"a valid last line\"}\n"));
    const Run r = cli({QStringLiteral("import"), file});
    EXPECT_FAILURE(r, 2);
    QVERIFY2(r.err.contains(message), r.describe().constData());
    QCOMPARE(count(), 1);
}

void TestCli::badInputs_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("exitCode");

    auto row = [](const char *name, const QStringList &args, int code) { QTest::newRow(name) << args << code; };
    const QString rememberCmd = QStringLiteral("remember");
    const QString unknownId = QStringLiteral("11111111-2222-3333-4444-555555555555");

    row("empty content", {rememberCmd, QString()}, 2);
    row("whitespace content", {rememberCmd, QStringLiteral("  \t  ")}, 2);
    row("100 kB content", {rememberCmd, QString(100 * 1024, QLatin1Char('x'))}, 2);
    row("scope with ..", {rememberCmd, QStringLiteral("text"), QStringLiteral("--scope"), QStringLiteral("/a/../b")}, 2);
    row("scope with empty segment", {rememberCmd, QStringLiteral("text"), QStringLiteral("--scope"), QStringLiteral("/a//b")}, 2);
    row("scope with control character",
        {rememberCmd, QStringLiteral("text"), QStringLiteral("--scope"), QStringLiteral("/a/b\x01")}, 2);
    row("importance 1.5", {rememberCmd, QStringLiteral("text"), QStringLiteral("--importance"), QStringLiteral("1.5")}, 2);
    row("importance -0.1", {rememberCmd, QStringLiteral("text"), QStringLiteral("--importance"), QStringLiteral("-0.1")}, 2);
    row("importance nan", {rememberCmd, QStringLiteral("text"), QStringLiteral("--importance"), QStringLiteral("nan")}, 2);
    row("importance inf", {rememberCmd, QStringLiteral("text"), QStringLiteral("--importance"), QStringLiteral("inf")}, 2);
    row("importance not a number", {rememberCmd, QStringLiteral("text"), QStringLiteral("--importance"), QStringLiteral("high")}, 2);
    row("bad --at", {rememberCmd, QStringLiteral("text"), QStringLiteral("--at"), QStringLiteral("yesterday")}, 2);
    row("metadata not an object", {rememberCmd, QStringLiteral("text"), QStringLiteral("--metadata"), QStringLiteral("[1, 2]")}, 2);
    row("metadata not JSON", {rememberCmd, QStringLiteral("text"), QStringLiteral("--metadata"), QStringLiteral("{oops")}, 2);
    row("private without source", {rememberCmd, QStringLiteral("text"), QStringLiteral("--private")}, 3);
    row("two texts", {rememberCmd, QStringLiteral("one"), QStringLiteral("two")}, 2);
    row("remember without text", {rememberCmd}, 2);
    row("get unknown id", {QStringLiteral("get"), unknownId}, 2);
    row("update unknown id", {QStringLiteral("update"), unknownId, QStringLiteral("--content"), QStringLiteral("new")}, 2);
    row("history unknown id", {QStringLiteral("history"), unknownId}, 2);
    row("unknown flag", {QStringLiteral("list"), QStringLiteral("--bogus")}, 2);
    row("unknown short flag", {QStringLiteral("list"), QStringLiteral("-x")}, 2);
    row("unknown command", {QStringLiteral("frobnicate")}, 2);
    row("extract without text", {QStringLiteral("extract")}, 2);
    row("extract two texts", {QStringLiteral("extract"), QStringLiteral("one"), QStringLiteral("two")}, 2);
    row("extract with a record option", {QStringLiteral("extract"), QStringLiteral("text"), QStringLiteral("--scope"), QStringLiteral("/a")}, 2);
    row("extract with a bad config", {QStringLiteral("extract"), QStringLiteral("text"), QStringLiteral("--config"), QStringLiteral("/nonexistent/config.json")}, 2);
    row("undo unknown id", {QStringLiteral("undo"), unknownId}, 2);
    row("undo without id", {QStringLiteral("undo")}, 2);
    row("undo blank id", {QStringLiteral("undo"), QStringLiteral("  ")}, 2);
    row("undo two ids", {QStringLiteral("undo"), unknownId, unknownId}, 2);
    row("missing value", {QStringLiteral("recall"), QStringLiteral("query"), QStringLiteral("--limit")}, 2);
    row("option as value", {QStringLiteral("recall"), QStringLiteral("query"), QStringLiteral("--scope"), QStringLiteral("--limit"), QStringLiteral("3")}, 2);
    row("limit not a number", {QStringLiteral("recall"), QStringLiteral("query"), QStringLiteral("--limit"), QStringLiteral("ten")}, 2);
    row("limit zero", {QStringLiteral("recall"), QStringLiteral("query"), QStringLiteral("--limit"), QStringLiteral("0")}, 2);
    row("limit twice", {QStringLiteral("recall"), QStringLiteral("query"), QStringLiteral("--limit"), QStringLiteral("1"), QStringLiteral("--limit"), QStringLiteral("2")}, 2);
    row("bad depth", {QStringLiteral("recall"), QStringLiteral("query"), QStringLiteral("--depth"), QStringLiteral("medium")}, 2);
    row("bad --now", {QStringLiteral("recall"), QStringLiteral("query"), QStringLiteral("--now"), QStringLiteral("2024-13-45")}, 2);
    row("recall without query", {QStringLiteral("recall")}, 2);
    row("recall slice with a bad scope", {QStringLiteral("recall"), QStringLiteral("q"), QStringLiteral("--scope"), QStringLiteral("/ok"), QStringLiteral("--scope"), QStringLiteral("/a/./b")}, 2);
    row("list offset negative", {QStringLiteral("list"), QStringLiteral("--offset"), QStringLiteral("-1")}, 2);
    row("tree depth negative", {QStringLiteral("tree"), QStringLiteral("--max-depth"), QStringLiteral("-1")}, 2);
    row("info without scope", {QStringLiteral("info")}, 2);
    row("info bad scope", {QStringLiteral("info"), QStringLiteral("/a//b")}, 2);
    row("flag with a value", {QStringLiteral("list"), QStringLiteral("--quiet=yes")}, 2);
    row("quiet and verbose", {QStringLiteral("list"), QStringLiteral("--quiet"), QStringLiteral("--verbose")}, 2);
    row("reset without --yes", {QStringLiteral("reset")}, 2);
    row("forget without a filter", {QStringLiteral("forget")}, 2);
    row("forget bad --older-than", {QStringLiteral("forget"), QStringLiteral("--older-than"), QStringLiteral("old")}, 2);
    row("import missing file", {QStringLiteral("import"), QStringLiteral("/nonexistent/file.jsonl")}, 2);
    row("import without file", {QStringLiteral("import")}, 2);
    row("remember-many missing file", {QStringLiteral("remember-many"), QStringLiteral("/nonexistent/file.txt")}, 2);
    row("missing config file", {QStringLiteral("list"), QStringLiteral("--config"), QStringLiteral("/nonexistent/config.json")}, 2);
}

void TestCli::badInputs()
{
    QFETCH(QStringList, args);
    QFETCH(int, exitCode);

    QVERIFY(!remember(QStringLiteral("a record that must survive every bad call"), {}).is_null());
    const Run r = cli(args);
    EXPECT_FAILURE(r, exitCode);
    QCOMPARE(count(), 1);
}

void TestCli::readOnlyConfig()
{
    QVERIFY(!remember(QStringLiteral("Written before the store became read-only"), {}).is_null());
    const QString config = m_store->path(QStringLiteral("read-only.json"));
    QVERIFY(writeFile(config, R"({"read_only": true})"));
    const QStringList ro = {QStringLiteral("--config"), config};

    const Run refused = cli(QStringList{QStringLiteral("remember"), QStringLiteral("not allowed")} + ro);
    EXPECT_FAILURE(refused, 3);
    const Run forget = cli(QStringList{QStringLiteral("forget"), QStringLiteral("--scope"), QStringLiteral("/")} + ro);
    EXPECT_FAILURE(forget, 3);
    const Run reset = cli(QStringList{QStringLiteral("reset"), QStringLiteral("--yes")} + ro);
    EXPECT_FAILURE(reset, 3);
    const Run many = cli(QStringList{QStringLiteral("remember-many"), QStringLiteral("-")} + ro, "one line\n");
    EXPECT_FAILURE(many, 3);
    const QString id = str(cli({QStringLiteral("list")}).json()[0]["id"]);
    QVERIFY(!id.isEmpty());
    const Run undo = cli(QStringList{QStringLiteral("undo"), id} + ro);
    EXPECT_FAILURE(undo, 3);
    QVERIFY2(undo.err.contains("read-only"), undo.describe().constData());
    // Extracting stores nothing, so a read-only configuration does not stop it.
    const Run extracted = cli(QStringList{QStringLiteral("extract"), QStringLiteral("One fact. Another fact.")} + ro);
    EXPECT_JSON_OK(extracted);
    QCOMPARE(int(extracted.json().size()), 2);

    const Run read = cli(QStringList{QStringLiteral("recall"), QStringLiteral("read-only store")} + ro);
    EXPECT_JSON_OK(read);
    QCOMPARE(int(read.json().size()), 1);
    QCOMPARE(count(), 1);
}

void TestCli::invalidConfig_data()
{
    QTest::addColumn<QByteArray>("config");
    QTest::newRow("not JSON") << QByteArray("{\"read_only\": tru");
    QTest::newRow("not an object") << QByteArray("[1, 2, 3]");
    QTest::newRow("unknown key") << QByteArray("{\"no_such_key\": 1}");
    QTest::newRow("wrong type") << QByteArray("{\"semantic_weight\": \"high\"}");
}

void TestCli::invalidConfig()
{
    QFETCH(QByteArray, config);
    const QString file = m_store->path(QStringLiteral("config.json"));
    QVERIFY(writeFile(file, config));
    const Run r = cli({QStringLiteral("remember"), QStringLiteral("text"), QStringLiteral("--config"), file});
    EXPECT_FAILURE(r, 2);
    QVERIFY(!QFileInfo::exists(m_db));
}

void TestCli::corruptDatabase()
{
    QByteArray garbage;
    quint32 state = 12345;
    for (int i = 0; i < 8192; ++i) {
        state = state * 1103515245u + 12345u;
        garbage.append(char(state >> 24));
    }
    QVERIFY(writeFile(m_db, garbage));

    const Run list = cli({QStringLiteral("list")});
    EXPECT_FAILURE(list, 1);
    const Run rememberRun = cli({QStringLiteral("remember"), QStringLiteral("into a broken file")});
    EXPECT_FAILURE(rememberRun, 1);
    QCOMPARE(readFile(m_db), garbage);
}

void TestCli::humanOutputAndVerbosity()
{
    const QStringList db = {QStringLiteral("--db"), m_db};
    const Run remembered = run(QStringList{QStringLiteral("remember"), QStringLiteral("The espresso machine is on floor three"),
                                           QStringLiteral("--scope"), QStringLiteral("/office"), QStringLiteral("--verbose")}
                               + db);
    EXPECT_EXIT(remembered, 0);
    QVERIFY(remembered.out.contains("The espresso machine is on floor three"));
    QVERIFY2(remembered.err.contains("save completed"), remembered.describe().constData());
    QVERIFY(!remembered.isJson());

    const Run recalled = run(QStringList{QStringLiteral("recall"), QStringLiteral("espresso machine"), QStringLiteral("--verbose")} + db);
    EXPECT_EXIT(recalled, 0);
    QVERIFY(recalled.out.contains("SCORE"));
    QVERIFY(recalled.out.contains("/office"));
    QVERIFY2(recalled.err.contains("query completed"), recalled.describe().constData());
    QVERIFY(recalled.err.contains(" ms"));

    const Run listed = run(QStringList{QStringLiteral("list")} + db);
    EXPECT_EXIT(listed, 0);
    QVERIFY(listed.out.contains("CONTENT"));
    QVERIFY(listed.out.contains("espresso"));
    QVERIFY(listed.err.isEmpty());

    for (const QString &command : {QStringLiteral("tree"), QStringLiteral("scopes"), QStringLiteral("categories")}) {
        const Run r = run(QStringList{command} + db);
        EXPECT_EXIT(r, 0);
        QVERIFY2(!r.out.isEmpty(), r.describe().constData());
    }
    const Run info = run(QStringList{QStringLiteral("info"), QStringLiteral("/office")} + db);
    EXPECT_EXIT(info, 0);
    QVERIFY(info.out.contains("records:"));

    const Run quiet = run(QStringList{QStringLiteral("remember-many"), QStringLiteral("-"), QStringLiteral("--quiet")} + db,
                          "Quiet line one\nQuiet line two about something else\n");
    EXPECT_EXIT(quiet, 0);
    QVERIFY(quiet.err.isEmpty());
    QVERIFY(quiet.out.contains("Stored 2"));
}

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
