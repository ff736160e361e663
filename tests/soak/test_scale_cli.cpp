// Scale: the command line over a store of 50,000 records written by one remember-many (the size the
// outside attack on the command line wrote): every record stored once, and once only
// when the same file is given again; the check passes, with the vector index file built; the tree
// of scopes as deep and as long as the limits allow stays small; an export of the whole store
// imports into a new store that passes its check too; and recalls and lists by one source never
// show another source's private record.

#include "cli_runner.h"
#include "cli_test_macros.h"
#include "temp_store.h"

#include <QFile>
#include <QProcess>
#include <QRandomGenerator>
#include <QTest>

using namespace mneme;
using Json = nlohmann::json;

namespace {

constexpr int kRecords = 50000;
const QStringList kSources = {QString(), QStringLiteral("user:ann"), QStringLiteral("user:bob"), QStringLiteral("team:ops"),
                              QStringLiteral("bot:x")};

// A scope as deep (32 levels) and nearly as long (1,000 characters) as a scope may be.
QString deepestScope(int leaf)
{
    QString path;
    for (int level = 0; level < 31; ++level)
        path += QStringLiteral("/level-%1-%2").arg(level, 2, 10, QLatin1Char('0')).arg(QString(20, QLatin1Char('x')));
    return path + QStringLiteral("/leaf-%1").arg(leaf);
}

} // namespace

class TestScaleCli : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void largeStoreThroughTheCommandLine()
    {
        test::TempStore tmp;
        const QString store = tmp.path(QStringLiteral("scale.db"));
        const QString lines = tmp.path(QStringLiteral("scale.jsonl"));
        writeInput(lines);
        const auto mneme = [&](const QString &db, QStringList args) {
            args << QStringLiteral("--db") << db << QStringLiteral("--json");
            return run(args, tmp.dir());
        };

        const test::CliRun stored = mneme(store, {QStringLiteral("remember-many"), lines});
        EXPECT_JSON_OK(stored);
        QCOMPARE(stored.json()["stored"].get<int>(), kRecords);
        // The same lines again: every one is identical to a stored record.
        const test::CliRun again = mneme(store, {QStringLiteral("remember-many"), lines});
        EXPECT_JSON_OK(again);
        QCOMPARE(again.json()["stored"].get<int>(), 0);
        QCOMPARE(recordCount(mneme(store, {QStringLiteral("info"), QStringLiteral("/"), QStringLiteral("--curator")})), kRecords);

        const test::CliRun checked = mneme(store, {QStringLiteral("check")});
        EXPECT_JSON_OK(checked);
        QVERIFY2(checked.json()["ok"].get<bool>(), checked.describe().constData());

        const test::CliRun tree = mneme(store, {QStringLiteral("tree"), QStringLiteral("--curator")});
        EXPECT_JSON_OK(tree);
        QCOMPARE(tree.json()["record_count"].get<int>(), kRecords);
        QVERIFY2(tree.out.size() < 4 * 1024 * 1024, qPrintable(QStringLiteral("the tree is %1 bytes").arg(tree.out.size())));

        const QString exported = tmp.path(QStringLiteral("scale-export.jsonl"));
        EXPECT_JSON_OK(mneme(store, {QStringLiteral("export"), exported, QStringLiteral("--curator")}));
        const QString copy = tmp.path(QStringLiteral("scale-copy.db"));
        EXPECT_JSON_OK(mneme(copy, {QStringLiteral("import"), exported}));
        QCOMPARE(recordCount(mneme(copy, {QStringLiteral("info"), QStringLiteral("/"), QStringLiteral("--curator")})), kRecords);
        const test::CliRun copyChecked = mneme(copy, {QStringLiteral("check")});
        EXPECT_JSON_OK(copyChecked);
        QVERIFY2(copyChecked.json()["ok"].get<bool>(), copyChecked.describe().constData());

        // Readers see their own private records and everyone's shared ones, nothing else.
        const QStringList queries = {QStringLiteral("budget review"), QStringLiteral("deploy incident"), QStringLiteral("salary note"),
                                     QStringLiteral("holiday roadmap")};
        for (const QString &source : kSources) {
            QStringList reader;
            if (!source.isEmpty())
                reader << QStringLiteral("--source") << source;
            for (const QString &query : queries) {
                const test::CliRun recalled = mneme(store, QStringList{QStringLiteral("recall"), query, QStringLiteral("--limit"), QStringLiteral("50")} + reader);
                EXPECT_JSON_OK(recalled);
                QVERIFY(!recalled.json().empty());
                for (const Json &m : recalled.json())
                    QVERIFY2(visibleTo(m, source), m.dump().c_str());
            }
            const test::CliRun listed = mneme(store, QStringList{QStringLiteral("list"), QStringLiteral("--limit"), QStringLiteral("2000")} + reader);
            EXPECT_JSON_OK(listed);
            for (const Json &r : listed.json())
                QVERIFY2(visibleTo(r, source), r.dump().c_str());
        }
    }

private:
    // test::runCli() with minutes, not one, for the largest steps on a busy machine.
    static test::CliRun run(const QStringList &args, const QString &workDir)
    {
        test::CliRun r;
        r.args = args;
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("MNEME_STORAGE_DIR"), workDir + QStringLiteral("/default"));
        p.setProcessEnvironment(env);
        p.setWorkingDirectory(workDir);
        p.start(QStringLiteral(MNEME_CLI), args);
        p.closeWriteChannel();
        if (!p.waitForFinished(20 * 60 * 1000)) {
            p.kill();
            p.waitForFinished();
            return r;
        }
        r.out = p.readAllStandardOutput();
        r.err = p.readAllStandardError();
        r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
        return r;
    }
    // One line per record: shared and private records of several sources, most under short scopes,
    // one in a hundred under the deepest scopes a record may have.
    static void writeInput(const QString &path)
    {
        const QStringList words = {"budget", "deploy", "salary", "holiday", "invoice", "roadmap", "incident", "meeting",
                                   "launch", "review", "contract", "server", "customer", "office", "release", "note"};
        QRandomGenerator rng(23);
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        for (int i = 0; i < kRecords; ++i) {
            QStringList text;
            for (int w = 0; w < 6; ++w)
                text << words.at(int(rng.bounded(words.size())));
            const QString source = kSources.at(i % kSources.size());
            Json line{{"content", QStringLiteral("%1 %2").arg(text.join(QLatin1Char(' '))).arg(i).toStdString()},
                      {"scope", (i % 100 == 0 ? deepestScope(i % 1000) : QStringLiteral("/p%1/t%2").arg(i % 50).arg(i % 17)).toStdString()}};
            if (!source.isEmpty()) {
                line["source"] = source.toStdString();
                line["private"] = i % 3 == 0;
            }
            f.write(QByteArray::fromStdString(line.dump()) + '\n');
        }
    }
    static int recordCount(const test::CliRun &info)
    {
        if (info.exitCode != 0 || !info.isJson())
            return -1;
        return info.json()["record_count"].get<int>();
    }
    static bool visibleTo(const Json &record, const QString &source)
    {
        const Json &r = record.contains("record") ? record["record"] : record;
        return !r.value("private", false) || QString::fromStdString(r.value("source", std::string())) == source;
    }
};

QTEST_GUILESS_MAIN(TestScaleCli)
#include "test_scale_cli.moc"
