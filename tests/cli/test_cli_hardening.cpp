// The `mneme` command line against hostile input and damaged stores: every failure an outside
// attack found, each pinned by a case that failed before its fix. The real binary runs against
// temporary SQLite stores, as in test_cli.

#include "cli_runner.h"
#include "cli_test_macros.h"
#include "temp_store.h"

#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTest>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <memory>

using Json = nlohmann::json;
using Run = mneme::test::CliRun;

namespace {

QByteArray nested(char open, char close, int depth, const QByteArray &inner = {})
{
    return QByteArray(depth, open) + inner + QByteArray(depth, close);
}

bool writeFile(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

} // namespace

class TestCliHardening : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();

    // 1. JSON nested tens of thousands of levels deep is refused with exit 2 (and a line number).
    void deepJsonRefused_data();
    void deepJsonRefused();
    // 1, 4. The values of --where and --metadata filters follow the same limits.
    void whereValuesAreStrict_data();
    void whereValuesAreStrict();
    // 2. A time outside the years 1 to 9999 in UTC is refused, and cannot break an export.
    void timesOutsideFourDigitYears_data();
    void timesOutsideFourDigitYears();
    // 3. Invalid date-times are refused by every option that takes one, never read as midnight.
    void invalidTimesRefused_data();
    void invalidTimesRefused();
    // 4. A number too large for a double is an input error with its line number.
    void hugeNumberRefused_data();
    void hugeNumberRefused();
    // 5. Invalid UTF-8 on the command line is refused, as it is in files and on standard input.
    void invalidUtf8ArgumentRefused_data();
    void invalidUtf8ArgumentRefused();
    // 6. Errors quote a bounded prefix of what they were given.
    void longInputQuotedShortly_data();
    void longInputQuotedShortly();
    // 7. import normalises what it stores as remember does, and refuses what it cannot store.
    void importNormalises();
    void importRefusesBadCounts_data();
    void importRefusesBadCounts();
    // 8. A damaged record is reported, left out of reads, exported as it is, deletable, and blocks
    //    nothing; `mneme check` finds damage and `--repair` rebuilds the derived data.
    void damagedRecordBlocksNothing();
    void checkAndRepair();
    // 9. Warnings (fallbacks, damaged records) follow --quiet and never stand beside an error line.
    void warningsFollowQuietAndErrors();
    // 14. Scopes have a bounded depth and length, wherever they come from.
    void deepScopesRefused_data();
    void deepScopesRefused();
    // 20. A store path that cannot be is an input error that says why; a range given later period
    //     first is the range between the two.
    void storePathProblems_data();
    void storePathProblems();
    // 18. Processes saving the same lines at once store each line once.
    void concurrentWritersStoreContentOnce();
    // 19. Every read honours the caller's source: --source S sees S's private records, --curator
    //     every record, and nothing else shows another source's private content, names or counts.
    void readsHonourTheSource_data();
    void readsHonourTheSource();

private:
    Run run(const QStringList &args, const QByteArray &input = {});
    // Runs against this test's store with --json.
    Run cli(QStringList args, const QByteArray &input = {});
    QString file(const QString &name, const QByteArray &bytes);

    std::unique_ptr<mneme::test::TempStore> m_store;
    QString m_db;
};

void TestCliHardening::initTestCase()
{
    QVERIFY2(QFileInfo::exists(QStringLiteral(MNEME_CLI)), MNEME_CLI);
}

void TestCliHardening::init()
{
    m_store = std::make_unique<mneme::test::TempStore>();
    m_db = m_store->path();
}

void TestCliHardening::cleanup()
{
    m_store.reset();
}

Run TestCliHardening::run(const QStringList &args, const QByteArray &input)
{
    return mneme::test::runCli(QStringLiteral(MNEME_CLI), args, m_store->dir(), input);
}

Run TestCliHardening::cli(QStringList args, const QByteArray &input)
{
    args << QStringLiteral("--db") << m_db << QStringLiteral("--json");
    return run(args, input);
}

QString TestCliHardening::file(const QString &name, const QByteArray &bytes)
{
    const QString path = m_store->dir() + QLatin1Char('/') + name;
    if (!writeFile(path, bytes))
        qFatal("cannot write %s", qPrintable(path));
    return path;
}

void TestCliHardening::deepJsonRefused_data()
{
    QTest::addColumn<QString>("command");
    QTest::addColumn<QByteArray>("line"); // a JSON line for remember-many / import, or an option's value
    QTest::addColumn<QString>("expected");
    const QByteArray deepArray = nested('[', ']', 55000);
    const QByteArray deepObject = QByteArray("{\"a\":").repeated(55000) + "1" + QByteArray(55000, '}');
    QTest::newRow("remember-many metadata, arrays") << "remember-many"
                                                    << "{\"content\": \"x\", \"metadata\": {\"a\": " + deepArray + "}}"
                                                    << "line 1: not valid JSON (it nests deeper than 64 levels";
    QTest::newRow("remember-many metadata, objects") << "remember-many"
                                                     << "{\"content\": \"x\", \"metadata\": " + deepObject + "}"
                                                     << "line 1: not valid JSON (it nests deeper than 64 levels";
    QTest::newRow("remember-many, the whole line") << "remember-many" << nested('{', '}', 100)
                                                   << "line 1: not valid JSON (it nests deeper than 64 levels";
    QTest::newRow("import metadata") << "import"
                                     << "{\"content\": \"x\", \"metadata\": {\"a\": " + deepArray + "}}"
                                     << "line 1: not valid JSON (it nests deeper than 64 levels";
    QTest::newRow("--metadata") << "--metadata"
                                << "{\"a\": " + deepArray + "}"
                                << "--metadata is not valid JSON (it nests deeper";
    QTest::newRow("--config") << "--config"
                              << "{\"a\": " + deepArray + "}"
                              << "is not valid JSON (it nests deeper";
    // Within the parser's limit, but deeper than a record's metadata may be.
    QTest::newRow("metadata 40 levels") << "remember-many"
                                        << "{\"content\": \"x\", \"metadata\": " + QByteArray("{\"a\":").repeated(40) + "1" + QByteArray(41, '}')
                                        << "line 1: metadata nests";
}

void TestCliHardening::deepJsonRefused()
{
    QFETCH(QString, command);
    QFETCH(QByteArray, line);
    QFETCH(QString, expected);
    // The store exists (only saving commands create one): what the refused input left in it is read below.
    EXPECT_JSON_OK(cli({QStringLiteral("remember"), QStringLiteral("before")}));
    Run r;
    if (command == QLatin1String("--metadata"))
        r = cli({QStringLiteral("remember"), QStringLiteral("x"), QStringLiteral("--metadata"), QString::fromUtf8(line)});
    else if (command == QLatin1String("--config"))
        r = cli({QStringLiteral("list"), QStringLiteral("--config"), file(QStringLiteral("deep.json"), line)});
    else
        r = cli({command, file(QStringLiteral("deep.jsonl"), line + '\n')});
    EXPECT_FAILURE(r, 2);
    QVERIFY2(r.err.contains(expected.toUtf8()), r.describe().constData());
    QVERIFY2(r.err.size() < 1000, r.describe().constData());
    // Nothing was stored, and the store still works.
    const Run list = cli({QStringLiteral("list")});
    if (command != QLatin1String("--config")) {
        EXPECT_JSON_OK(list);
        QCOMPARE(list.json().size(), std::size_t(1));
    }
}

// The values of --where follow the limits of JSON from outside: a number a double cannot hold, or a
// list nested past 64 levels, is refused (exit 2), never compared as text; nothing is deleted.
void TestCliHardening::whereValuesAreStrict_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("expected");
    const QString deep = QString(55000, QLatin1Char('[')) + QString(55000, QLatin1Char(']'));
    QTest::newRow("recall KEY>1e309") << QStringList{"recall", "x", "--where", "n>1e309"} << QByteArray("1e309");
    QTest::newRow("forget KEY=-1e400") << QStringList{"forget", "--where", "n=-1e400"} << QByteArray("-1e400");
    QTest::newRow("recall KEY in [deep]") << QStringList{"recall", "x", "--where", "n in " + deep} << QByteArray("nests deeper than 64");
    QTest::newRow("forget KEY=[deep]") << QStringList{"forget", "--where", "n=" + deep} << QByteArray("nests deeper than 64");
    QTest::newRow("forget --metadata deep") << QStringList{"forget", "--metadata", "{\"n\": " + deep + "}"} << QByteArray("nests deeper");
    QTest::newRow("recall --user empty after trimming, with a control character") << QStringList{"recall", "x", "--user", "\x02"}
                                                                                  << QByteArray("control character");
}

void TestCliHardening::whereValuesAreStrict()
{
    QFETCH(QStringList, args);
    QFETCH(QByteArray, expected);
    EXPECT_JSON_OK(cli({QStringLiteral("remember"), QStringLiteral("kept"), QStringLiteral("--metadata"), QStringLiteral("{\"n\": 1}")}));
    const Run r = cli(args);
    EXPECT_FAILURE(r, 2);
    QVERIFY2(r.err.contains(expected) && r.err.size() < 1000, r.describe().left(2000).constData());
    const Run list = cli({QStringLiteral("list")});
    EXPECT_JSON_OK(list);
    QCOMPARE(list.json().size(), std::size_t(1));
}

void TestCliHardening::timesOutsideFourDigitYears_data()
{
    QTest::addColumn<QString>("at");
    QTest::newRow("year 0 in UTC") << "0001-01-01T00:30:00+01:00";
    QTest::newRow("year 10000 in UTC") << "9999-12-31T23:30:00-01:00";
    QTest::newRow("five digits") << "10000-01-01";
}

void TestCliHardening::timesOutsideFourDigitYears()
{
    QFETCH(QString, at);
    const Run remember = cli({QStringLiteral("remember"), QStringLiteral("x"), QStringLiteral("--at"), at});
    EXPECT_FAILURE(remember, 2);
    QVERIFY2(remember.err.contains("--at must be an ISO 8601"), remember.describe().constData());

    const QByteArray line = "{\"content\": \"x\", \"created_at\": \"" + at.toUtf8() + "\"}\n";
    const Run many = cli({QStringLiteral("remember-many"), file(QStringLiteral("times.jsonl"), line)});
    EXPECT_FAILURE(many, 2);
    QVERIFY2(many.err.contains("line 1: \"created_at\""), many.describe().constData());
    const Run import = cli({QStringLiteral("import"), file(QStringLiteral("times.jsonl"), line)});
    EXPECT_FAILURE(import, 2);
    QVERIFY2(import.err.contains("line 1:") && import.err.contains("created_at"), import.describe().constData());

    // The edges themselves are kept, and the export of the store imports again.
    EXPECT_JSON_OK(cli({QStringLiteral("remember"), QStringLiteral("first"), QStringLiteral("--at"), QStringLiteral("0001-01-01T00:00:00Z")}));
    EXPECT_JSON_OK(cli({QStringLiteral("remember"), QStringLiteral("last"), QStringLiteral("--at"), QStringLiteral("9999-12-31T23:59:59.999Z")}));
    const QString exported = m_store->dir() + QStringLiteral("/all.jsonl");
    EXPECT_JSON_OK(cli({QStringLiteral("export"), exported}));
    const Run again = run({QStringLiteral("import"), exported, QStringLiteral("--db"), m_store->path(QStringLiteral("copy.db")), QStringLiteral("--json")});
    EXPECT_JSON_OK(again);
    COMPARE_JSON(again.json()["imported"], Json(2));
}

void TestCliHardening::invalidTimesRefused_data()
{
    QTest::addColumn<QString>("option");
    QTest::addColumn<QString>("value");
    const char *const values[] = {"2024-05-01T10:00:00+25:00", "2024-05-01T25:00:00", "2024-05-01T10:00:00Z junk",
                                  "2024-05-01junk", "2024/05/01", "2024-5-1"};
    for (const char *option : {"--at", "--now", "--older-than"})
        for (const char *value : values)
            QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(QLatin1String(option), QLatin1String(value)))) << option << value;
}

void TestCliHardening::invalidTimesRefused()
{
    QFETCH(QString, option);
    QFETCH(QString, value);
    const QString command = option == QLatin1String("--at")  ? QStringLiteral("remember")
                          : option == QLatin1String("--now") ? QStringLiteral("recall")
                                                             : QStringLiteral("forget");
    QStringList args{command};
    if (command != QLatin1String("forget"))
        args << QStringLiteral("anything");
    args << option << value;
    const Run r = cli(args);
    EXPECT_FAILURE(r, 2);
    QVERIFY2(r.err.contains(QStringLiteral("%1 must be an ISO 8601").arg(option).toUtf8()), r.describe().constData());
}

void TestCliHardening::hugeNumberRefused_data()
{
    QTest::addColumn<QString>("command");
    QTest::addColumn<QByteArray>("line");
    QTest::newRow("remember-many importance") << "remember-many" << QByteArray(R"({"content": "x", "importance": 1e309})");
    QTest::newRow("remember-many metadata") << "remember-many" << QByteArray(R"({"content": "x", "metadata": {"n": -1e400}})");
    QTest::newRow("import importance") << "import" << QByteArray(R"({"content": "x", "importance": 1e309})");
}

void TestCliHardening::hugeNumberRefused()
{
    QFETCH(QString, command);
    QFETCH(QByteArray, line);
    const QByteArray input = "{\"content\": \"fine\"}\n" + line + '\n';
    const Run r = cli({command, file(QStringLiteral("numbers.jsonl"), input)});
    EXPECT_FAILURE(r, 2);
    QVERIFY2(r.err.contains("line 2: not valid JSON (number overflow"), r.describe().constData());
    QVERIFY2(!r.err.contains("json.exception"), r.describe().constData());
}

void TestCliHardening::concurrentWritersStoreContentOnce()
{
    QByteArray lines;
    for (int i = 0; i < 500; ++i) // lines unlike each other (near-duplicates within a batch are dropped)
        lines += "Shared note " + QCryptographicHash::hash(QByteArray::number(i), QCryptographicHash::Sha1).toHex(' ') + "\n";
    const QString input = file(QStringLiteral("lines.txt"), lines);
    EXPECT_JSON_OK(cli({QStringLiteral("remember"), QStringLiteral("the store exists before the writers start")}));
    std::vector<std::unique_ptr<QProcess>> writers;
    for (int w = 0; w < 3; ++w) {
        auto p = std::make_unique<QProcess>();
        p->setWorkingDirectory(m_store->dir());
        p->start(QStringLiteral(MNEME_CLI), {QStringLiteral("remember-many"), input, QStringLiteral("--scope"), QStringLiteral("/notes"),
                                             QStringLiteral("--db"), m_db, QStringLiteral("--json")});
        writers.push_back(std::move(p));
    }
    for (auto &p : writers) {
        QVERIFY(p->waitForFinished(120000));
        QVERIFY2(p->exitCode() == 0, p->readAllStandardError().constData());
    }
    const Run list = cli({QStringLiteral("list"), QStringLiteral("--scope"), QStringLiteral("/notes"), QStringLiteral("--limit"), QStringLiteral("5000")});
    EXPECT_JSON_OK(list);
    QCOMPARE(list.json().size(), std::size_t(500));
}

void TestCliHardening::readsHonourTheSource_data()
{
    QTest::addColumn<QStringList>("args");   // {alice} and {bob} stand for the ids of their private records
    QTest::addColumn<QStringList>("reader"); // nothing, --source S or --curator
    QTest::addColumn<QByteArray>("alice");   // what shows Alice's private record in the output
    QTest::addColumn<QByteArray>("bob");
    QTest::addColumn<bool>("aliceSeen");
    QTest::addColumn<bool>("bobSeen");
    struct Command
    {
        const char *name;
        QStringList args;
        QByteArray alice, bob;
    };
    const QList<Command> commands = {
        {"list", {"list"}, "Alice's door code", "Bob's salary"},
        {"export", {"export"}, "Alice's door code", "Bob's salary"},
        {"tree", {"tree"}, "/secret/alice", "/secret/bob"},
        {"tree counts", {"tree", "/secret"}, "\"record_count\": 1", "\"record_count\": 2"},
        {"info", {"info", "/"}, "alice-only", "bob-only"},
        {"info children", {"info", "/secret"}, "/secret/alice", "/secret/bob"},
        {"scopes", {"scopes", "/secret"}, "/secret/alice", "/secret/bob"},
        {"categories", {"categories"}, "alice-only", "bob-only"},
        {"get", {"get", "{alice}"}, "Alice's door code", "Bob's salary"},
        {"get bob", {"get", "{bob}"}, "Alice's door code", "Bob's salary"},
        {"history", {"history", "{alice}"}, "Alice's door code", "Bob's salary"},
        {"recall", {"recall", "door code salary", "--depth", "shallow"}, "Alice's door code", "Bob's salary"},
    };
    struct Reader
    {
        const char *name;
        QStringList args;
        bool alice, bob;
    };
    const QList<Reader> readers = {
        {"anonymous", {}, false, false},
        {"as alice", {"--source", "user:alice"}, true, false},
        {"as carol", {"--source", "user:carol"}, false, false},
        {"curator", {"--curator"}, true, true},
    };
    for (const Command &c : commands) {
        for (const Reader &r : readers) {
            // get / history of one record: only that record can show.
            const bool onlyAlice = c.args.contains(QStringLiteral("{alice}"));
            const bool onlyBob = c.args.contains(QStringLiteral("{bob}"));
            QTest::newRow(qPrintable(QStringLiteral("%1, %2").arg(QLatin1String(c.name), QLatin1String(r.name))))
                << c.args << r.args << c.alice << c.bob << (r.alice && !onlyBob) << (r.bob && !onlyAlice);
        }
    }
}

void TestCliHardening::readsHonourTheSource()
{
    QFETCH(QStringList, args);
    QFETCH(QStringList, reader);
    QFETCH(QByteArray, alice);
    QFETCH(QByteArray, bob);
    QFETCH(bool, aliceSeen);
    QFETCH(bool, bobSeen);
    const auto remember = [&](const QString &content, const QStringList &options) {
        const Run r = cli(QStringList{QStringLiteral("remember"), content} + options);
        return QString::fromStdString(r.json().value("id", std::string()));
    };
    QVERIFY(!remember(QStringLiteral("The team meets on Mondays."), {QStringLiteral("--scope"), QStringLiteral("/team"), QStringLiteral("--category"), QStringLiteral("meeting")}).isEmpty());
    const QString aliceId = remember(QStringLiteral("Alice's door code is 4411."),
                                     {QStringLiteral("--scope"), QStringLiteral("/secret/alice"), QStringLiteral("--category"), QStringLiteral("alice-only"),
                                      QStringLiteral("--source"), QStringLiteral("user:alice"), QStringLiteral("--private")});
    const QString bobId = remember(QStringLiteral("Bob's salary is 5000."),
                                   {QStringLiteral("--scope"), QStringLiteral("/secret/bob"), QStringLiteral("--category"), QStringLiteral("bob-only"),
                                    QStringLiteral("--source"), QStringLiteral("user:bob"), QStringLiteral("--private")});
    remember(QStringLiteral("Bob's salary review is in May."),
             {QStringLiteral("--scope"), QStringLiteral("/secret/bob"), QStringLiteral("--source"), QStringLiteral("user:bob"), QStringLiteral("--private")});
    QVERIFY(!aliceId.isEmpty() && !bobId.isEmpty());
    QStringList command;
    for (const QString &a : args)
        command << QString(a).replace(QLatin1String("{alice}"), aliceId).replace(QLatin1String("{bob}"), bobId);
    QStringList full = command + reader + QStringList{QStringLiteral("--db"), m_db};
    if (command.first() != QLatin1String("export"))
        full << QStringLiteral("--json");
    const Run r = run(full);
    const bool single = command.first() == QLatin1String("get") || command.first() == QLatin1String("history");
    if (single && !aliceSeen && !bobSeen) {
        EXPECT_FAILURE(r, 2); // a record the reader may not see is not found
        QVERIFY2(r.err.contains("no ") && r.err.contains("has the id"), r.describe().constData());
        return;
    }
    EXPECT_EXIT(r, 0);
    QVERIFY2(r.out.contains(alice) == aliceSeen, r.describe().constData());
    QVERIFY2(r.out.contains(bob) == bobSeen, r.describe().constData());
    QVERIFY2(!r.err.contains("Alice's door") && !r.err.contains("Bob's salary"), r.describe().constData());
}

void TestCliHardening::invalidUtf8ArgumentRefused_data()
{
    QTest::addColumn<QString>("command"); // a shell command line; $B is the invalid text, $0 the CLI, $1 the store
    QTest::newRow("text") << R"(exec "$0" remember "$B" --db "$1" --json)";
    QTest::newRow("option value") << R"(exec "$0" remember fine --scope "/a$B" --db "$1" --json)";
    QTest::newRow("option name") << R"(exec "$0" remember fine "--sc$B" --db "$1" --json)";
    QTest::newRow("query") << R"(exec "$0" recall "$B" --db "$1" --json)";
}

void TestCliHardening::invalidUtf8ArgumentRefused()
{
    QFETCH(QString, command);
    // QProcess passes arguments as text: a shell puts the raw bytes (Latin-1 "café") on the command line.
    QProcess p;
    p.setWorkingDirectory(m_store->dir());
    p.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), QStringLiteral("B=$(printf 'caf\\351'); ") + command, QStringLiteral(MNEME_CLI), m_db});
    QVERIFY(p.waitForFinished(60000));
    const QByteArray err = p.readAllStandardError();
    QCOMPARE(p.exitCode(), 2);
    QVERIFY2(err.startsWith("mneme: argument ") && err.contains("is not valid UTF-8") && err.count('\n') == 1, err.constData());
    QVERIFY(p.readAllStandardOutput().isEmpty());
    QVERIFY(!QFileInfo::exists(m_db)); // nothing was opened, nothing stored
}

void TestCliHardening::longInputQuotedShortly_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("exitCode");
    const QString scope = QStringLiteral("/") + QString(120000, QLatin1Char('x')) + QStringLiteral("/..");
    const QString huge = QString(120000, QLatin1Char('y'));
    QTest::newRow("remember --scope") << QStringList{"remember", "x", "--scope", scope} << 2;
    QTest::newRow("recall --scope") << QStringList{"recall", "x", "--scope", scope} << 2;
    QTest::newRow("tree SCOPE") << QStringList{"tree", scope} << 2;
    QTest::newRow("unknown option") << QStringList{"list", "--" + huge} << 2;
    QTest::newRow("unknown command") << QStringList{huge} << 2;
    QTest::newRow("--limit") << QStringList{"list", "--limit", huge} << 2;
    QTest::newRow("--importance") << QStringList{"remember", "x", "--importance", huge} << 2;
    QTest::newRow("--at") << QStringList{"remember", "x", "--at", huge} << 2;
    QTest::newRow("get ID") << QStringList{"get", huge} << 2;
    QTest::newRow("category with a control character") << QStringList{"remember", "x", "--category", huge + "\x01"} << 2;
    // The filters and thresholds of recall and forget.
    QTest::newRow("recall --where, no operator") << QStringList{"recall", "x", "--where", huge} << 2;
    QTest::newRow("recall --where, a long key") << QStringList{"recall", "x", "--where", huge + "!={"} << 2;
    QTest::newRow("forget --where, a long list") << QStringList{"forget", "--where", "k in [" + huge} << 2;
    QTest::newRow("recall --metadata, a long operator") << QStringList{"recall", "x", "--metadata", "{\"k\": {\"$" + huge + "\": 1}}"} << 2;
    QTest::newRow("recall --metadata, a long value") << QStringList{"recall", "x", "--metadata", "{\"k\": {\"$gt\": [\"" + huge + "\"]}}"} << 2;
    QTest::newRow("recall --min-score") << QStringList{"recall", "x", "--min-score", huge} << 2;
    QTest::newRow("recall --min-relevance") << QStringList{"recall", "x", "--min-relevance", huge} << 2;
    QTest::newRow("remember --user with a control character") << QStringList{"remember", "x", "--user", huge + "\x01"} << 2;
    QTest::newRow("remember --user and --metadata disagree") << QStringList{"remember", "x", "--user", huge, "--metadata", "{\"user_id\": \"" + huge + "z\"}"} << 2;
}

void TestCliHardening::longInputQuotedShortly()
{
    QFETCH(QStringList, args);
    QFETCH(int, exitCode);
    // A store to read (a read of a missing store stops before the argument is looked at).
    EXPECT_JSON_OK(cli({QStringLiteral("remember"), QStringLiteral("a record")}));
    const Run r = cli(args);
    EXPECT_FAILURE(r, exitCode);
    QVERIFY2(r.err.size() < 1000, r.err.left(2000).constData());
}

void TestCliHardening::deepScopesRefused_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QByteArray>("expected");
    const QString deep = QStringLiteral("/a").repeated(10000);
    const QString deep33 = QStringLiteral("/a").repeated(33);
    QTest::newRow("remember") << QStringList{"remember", "x", "--scope", deep33} << QByteArray() << QByteArray("at most 32 levels");
    QTest::newRow("remember, 10,000 segments") << QStringList{"remember", "x", "--scope", deep} << QByteArray() << QByteArray("at most 1000");
    QTest::newRow("remember-many line") << QStringList{"remember-many", "-"} << "{\"content\": \"x\", \"scope\": \"" + deep.toUtf8() + "\"}\n"
                                        << QByteArray("line 1:");
    QTest::newRow("import line") << QStringList{"import", "-"} << "{\"content\": \"x\", \"scope\": \"" + deep33.toUtf8() + "\"}\n"
                                 << QByteArray("at most 32 levels");
    QTest::newRow("tree") << QStringList{"tree", deep} << QByteArray() << QByteArray("at most 1000");
}

void TestCliHardening::deepScopesRefused()
{
    QFETCH(QStringList, args);
    QFETCH(QByteArray, input);
    QFETCH(QByteArray, expected);
    const Run r = cli(args, input);
    EXPECT_FAILURE(r, 2);
    QVERIFY2(r.err.contains(expected) && r.err.size() < 1000, r.describe().left(2000).constData());
}

void TestCliHardening::storePathProblems_data()
{
    QTest::addColumn<QString>("relative"); // the --db path under the test's folder
    QTest::addColumn<QByteArray>("expected");
    QTest::newRow("5,000-character folder") << QString(5000, QLatin1Char('f')) + QStringLiteral("/memory.db") << QByteArray("over the limit of 4095");
    QTest::newRow("300-character folder") << QString(300, QLatin1Char('f')) + QStringLiteral("/memory.db") << QByteArray("over the limit of 255 a name");
    QTest::newRow("300-character file name") << QString(300, QLatin1Char('m')) + QStringLiteral(".db") << QByteArray("over the limit of 255 a name");
    QTest::newRow("a file as the folder") << QStringLiteral("plain.txt/memory.db") << QByteArray("is a file, not a folder");
}

void TestCliHardening::storePathProblems()
{
    QFETCH(QString, relative);
    QFETCH(QByteArray, expected);
    file(QStringLiteral("plain.txt"), "not a folder");
    const Run r = run({QStringLiteral("list"), QStringLiteral("--db"), m_store->dir() + QLatin1Char('/') + relative, QStringLiteral("--json")});
    EXPECT_FAILURE(r, 2);
    QVERIFY2(r.err.contains(expected) && !r.err.contains("permission"), r.describe().left(3000).constData());
}

void TestCliHardening::importNormalises()
{
    const QByteArray lines = R"({"id": "  padded-id  ", "content": "An id with spaces around it.", "scope": "/i"}
{"id": "owned", "content": "Alice's private note.", "scope": "/i", "source": "  user:alice  ", "private": true}
{"id": "counted", "content": "Recalled many times.", "scope": "/i", "access_count": 2147483647}
)";
    const Run imported = cli({QStringLiteral("import"), file(QStringLiteral("import.jsonl"), lines)});
    EXPECT_JSON_OK(imported);
    COMPARE_JSON(imported.json()["imported"], Json(3));
    const Run padded = cli({QStringLiteral("get"), QStringLiteral("padded-id")});
    EXPECT_JSON_OK(padded);
    const Run owned = cli({QStringLiteral("get"), QStringLiteral("owned"), QStringLiteral("--source"), QStringLiteral("user:alice")});
    EXPECT_JSON_OK(owned);
    COMPARE_JSON(owned.json()["source"], Json("user:alice"));
    const Run counted = cli({QStringLiteral("get"), QStringLiteral("counted")});
    EXPECT_JSON_OK(counted);
    COMPARE_JSON(counted.json()["access_count"], Json(2147483647));
    // The same id, spelled with spaces, is the same record: skipped.
    const Run again = cli({QStringLiteral("import"), file(QStringLiteral("again.jsonl"), R"({"id": "padded-id ", "content": "Other.", "scope": "/i"})")});
    EXPECT_JSON_OK(again);
    COMPARE_JSON(again.json()["skipped"], Json(1));
}

void TestCliHardening::importRefusesBadCounts_data()
{
    QTest::addColumn<QByteArray>("line");
    QTest::addColumn<QString>("expected");
    QTest::newRow("2^40") << QByteArray(R"({"content": "x", "access_count": 1099511627776})") << "access_count";
    QTest::newRow("negative") << QByteArray(R"({"content": "x", "access_count": -5})") << "access_count";
    QTest::newRow("fraction") << QByteArray(R"({"content": "x", "access_count": 1.5})") << "access_count";
    QTest::newRow("text") << QByteArray(R"({"content": "x", "access_count": "7"})") << "access_count";
    QTest::newRow("id with a line break") << QByteArray(R"({"id": "a\nb", "content": "x"})") << "white space or a control character";
}

void TestCliHardening::importRefusesBadCounts()
{
    QFETCH(QByteArray, line);
    QFETCH(QString, expected);
    const Run r = cli({QStringLiteral("import"), file(QStringLiteral("bad.jsonl"), line + '\n')});
    EXPECT_FAILURE(r, 2);
    QVERIFY2(r.err.contains("line 1:") && r.err.contains(expected.toUtf8()), r.describe().constData());
}

namespace {

// Runs one SQL statement on a store file, as another tool (or a disk) could change it.
bool damage(const QString &db, const QByteArray &sql)
{
    sqlite3 *handle = nullptr;
    if (sqlite3_open(db.toUtf8().constData(), &handle) != SQLITE_OK)
        return false;
    const bool ok = sqlite3_exec(handle, sql.constData(), nullptr, nullptr, nullptr) == SQLITE_OK;
    sqlite3_close(handle);
    return ok;
}

} // namespace

void TestCliHardening::damagedRecordBlocksNothing()
{
    const auto id = [](const Run &r) { return QString::fromStdString(r.json().value("id", std::string())); };
    const Run healthy = cli({QStringLiteral("remember"), QStringLiteral("A healthy record."), QStringLiteral("--scope"), QStringLiteral("/d")});
    const Run broken = cli({QStringLiteral("remember"), QStringLiteral("A record to be damaged."), QStringLiteral("--scope"), QStringLiteral("/d"),
                            QStringLiteral("--category"), QStringLiteral("fine")});
    EXPECT_JSON_OK(broken);
    const QString brokenId = id(broken);
    QVERIFY(damage(m_db, "UPDATE records SET categories = '[\"unterminated' WHERE id = '" + brokenId.toUtf8() + "'"));

    const Run list = cli({QStringLiteral("list"), QStringLiteral("--curator")});
    EXPECT_EXIT(list, 0);
    QCOMPARE(list.json().size(), std::size_t(1));
    QVERIFY2(list.err.contains("warning: record " + brokenId.toUtf8()) && list.err.contains("is damaged"), list.describe().constData());
    EXPECT_JSON_OK(cli({QStringLiteral("remember"), QStringLiteral("Saved after the damage."), QStringLiteral("--category"), QStringLiteral("fine")}));
    EXPECT_JSON_OK(cli({QStringLiteral("remember"), QStringLiteral("Saved by the offline analyzer.")}));
    EXPECT_EXIT(cli({QStringLiteral("categories"), QStringLiteral("--curator")}), 0);
    EXPECT_EXIT(cli({QStringLiteral("recall"), QStringLiteral("record"), QStringLiteral("--curator")}), 0);
    EXPECT_FAILURE(cli({QStringLiteral("get"), brokenId, QStringLiteral("--curator")}), 2);

    const QString exported = m_store->dir() + QStringLiteral("/salvage.jsonl");
    const Run exportRun = cli({QStringLiteral("export"), exported, QStringLiteral("--curator")});
    EXPECT_EXIT(exportRun, 0);
    COMPARE_JSON(exportRun.json()["exported"], Json(4));
    QFile f(exported);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray all = f.readAll();
    QVERIFY(all.contains(brokenId.toUtf8()) && all.contains("\"damaged\"") && all.contains("[\\\"unterminated"));

    const Run check = cli({QStringLiteral("check")});
    EXPECT_EXIT(check, 1);
    COMPARE_JSON(check.json()["ok"], Json(false));
    COMPARE_JSON(check.json()["damaged_records"][0]["id"], Json(brokenId.toStdString()));

    const Run forget = cli({QStringLiteral("forget"), QStringLiteral("--id"), brokenId, QStringLiteral("--curator")});
    EXPECT_EXIT(forget, 0);
    COMPARE_JSON(forget.json()["deleted"], Json(1));
    const Run clean = cli({QStringLiteral("check")});
    EXPECT_JSON_OK(clean);
    COMPARE_JSON(clean.json()["ok"], Json(true));

    // The salvage imports: the damaged record comes back with what could be read of it.
    const Run salvage = run({QStringLiteral("import"), exported, QStringLiteral("--db"), m_store->path(QStringLiteral("new.db")), QStringLiteral("--json")});
    EXPECT_JSON_OK(salvage);
    COMPARE_JSON(salvage.json()["imported"], Json(4));
    QVERIFY(!id(healthy).isEmpty());
}

void TestCliHardening::checkAndRepair()
{
    // A vector index file from 30 records on.
    const QString config = file(QStringLiteral("ann.json"), "{\"storage\": {\"provider\": \"sqlite\", \"config\": {\"path\": \"" + m_db.toUtf8()
                                                                + "\", \"ann_threshold\": 30}}}");
    QByteArray lines;
    for (int i = 0; i < 40; ++i)
        lines += "Checked note " + QCryptographicHash::hash(QByteArray::number(i), QCryptographicHash::Md5).toHex(' ') + "\n";
    EXPECT_JSON_OK(run({QStringLiteral("remember-many"), file(QStringLiteral("notes.txt"), lines), QStringLiteral("--config"), config, QStringLiteral("--json")}));
    EXPECT_JSON_OK(run({QStringLiteral("recall"), QStringLiteral("checked note"), QStringLiteral("--config"), config, QStringLiteral("--json")}));
    const Run fine = run({QStringLiteral("check"), QStringLiteral("--config"), config, QStringLiteral("--json")});
    EXPECT_JSON_OK(fine);
    QVERIFY(QFileInfo::exists(m_db + QStringLiteral(".hnsw")));

    // Damage the derived data: keyword index rows, lookup entries, the index file.
    QVERIFY(damage(m_db, "DELETE FROM records_fts WHERE rowid IN (SELECT rid FROM records LIMIT 3)"));
    QVERIFY(damage(m_db, "DELETE FROM content_hashes_recent WHERE rid IN (SELECT rid FROM records LIMIT 2)"));
    {
        QFile index(m_db + QStringLiteral(".hnsw"));
        QVERIFY(index.open(QIODevice::ReadWrite));
        index.seek(index.size() / 2);
        index.write("garbage");
    }
    const Run found = run({QStringLiteral("check"), QStringLiteral("--config"), config, QStringLiteral("--json")});
    EXPECT_EXIT(found, 1);
    QCOMPARE(found.json()["problems"].size(), std::size_t(3));
    const Run repaired = run({QStringLiteral("check"), QStringLiteral("--repair"), QStringLiteral("--config"), config, QStringLiteral("--json")});
    EXPECT_JSON_OK(repaired);
    QCOMPARE(repaired.json()["repaired"].size(), std::size_t(3));
    const Run after = run({QStringLiteral("check"), QStringLiteral("--config"), config, QStringLiteral("--json")});
    EXPECT_JSON_OK(after);
    COMPARE_JSON(after.json()["ok"], Json(true));
    // Every record is found by its words again, and none is stored twice.
    const Run words = run({QStringLiteral("recall"), QStringLiteral("checked note"), QStringLiteral("--limit"), QStringLiteral("100"),
                           QStringLiteral("--depth"), QStringLiteral("shallow"), QStringLiteral("--config"), config, QStringLiteral("--json")});
    QCOMPARE(words.json().size(), std::size_t(40));
    const Run many = run({QStringLiteral("remember-many"), file(QStringLiteral("notes.txt"), lines), QStringLiteral("--config"), config, QStringLiteral("--json")});
    COMPARE_JSON(many.json()["stored"], Json(0));
}

void TestCliHardening::warningsFollowQuietAndErrors()
{
    const Run broken = cli({QStringLiteral("remember"), QStringLiteral("A record to be damaged.")});
    const QString brokenId = QString::fromStdString(broken.json().value("id", std::string()));
    EXPECT_JSON_OK(cli({QStringLiteral("remember"), QStringLiteral("A healthy record.")}));
    QVERIFY(damage(m_db, "UPDATE records SET metadata = 'not json' WHERE id = '" + brokenId.toUtf8() + "'"));
    const Run loud = cli({QStringLiteral("list")});
    EXPECT_EXIT(loud, 0);
    QVERIFY2(loud.err.startsWith("mneme: warning: "), loud.describe().constData());
    const Run quiet = cli({QStringLiteral("list"), QStringLiteral("--quiet")});
    EXPECT_JSON_OK(quiet); // nothing on standard error
    // A command that warns and then fails prints its one error line only.
    const Run failed = cli({QStringLiteral("get"), brokenId});
    EXPECT_FAILURE(failed, 2);
    QVERIFY2(!failed.err.contains("warning"), failed.describe().constData());
}

QTEST_GUILESS_MAIN(TestCliHardening)
#include "test_cli_hardening.moc"
