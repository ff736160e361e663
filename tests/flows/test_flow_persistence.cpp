// Flow persistence: the SQLite flow-state store (saves, history, the schema and the files it refuses
// untouched), the state saved after every step or after chosen steps, a failing backend failing
// its step, resume and fork in one process, and across a real process restart: flow_runner is
// killed in the middle of a flow and a new process resumes (and forks) its saved state; two
// processes save into one file at once.

#include "memory_test_util.h"
#include "temp_store.h"
#include <mneme/flows/flow.h>
#include <mneme/flows/sqlite_flow_persistence.h>

#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QtTest>
#include <sqlite3.h>
#include <unistd.h>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::TempStore;

namespace {

// The result of one flow_runner process: its exit code and the JSON lines it printed.
struct Runner
{
    int exitCode = -1;
    QList<Json> lines;
    QByteArray err;
};

QProcess *startRunner(const QStringList &args)
{
    auto *p = new QProcess;
    p->start(QStringLiteral(FLOW_RUNNER_PATH), args);
    return p;
}

Runner finishRunner(QProcess *p)
{
    Runner r;
    if (!p->waitForFinished(60000))
        p->kill();
    r.exitCode = p->exitStatus() == QProcess::NormalExit ? p->exitCode() : -2;
    for (const QByteArray &line : p->readAllStandardOutput().split('\n')) {
        if (!line.trimmed().isEmpty())
            r.lines << Json::parse(line.toStdString(), nullptr, false);
    }
    r.err = p->readAllStandardError();
    delete p;
    return r;
}

Runner runner(const QStringList &args)
{
    return finishRunner(startRunner(args));
}

QByteArray bytesOf(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void sql(const QString &path, const char *statements)
{
    sqlite3 *db = nullptr;
    QCOMPARE(sqlite3_open(path.toUtf8().constData(), &db), SQLITE_OK);
    QCOMPARE(sqlite3_exec(db, statements, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
}

QString sqlText(const QString &path, const char *query)
{
    sqlite3 *db = nullptr;
    sqlite3_open(path.toUtf8().constData(), &db);
    sqlite3_stmt *st = nullptr;
    sqlite3_prepare_v2(db, query, -1, &st, nullptr);
    QString out;
    if (sqlite3_step(st) == SQLITE_ROW)
        out = QString::fromUtf8(reinterpret_cast<const char *>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

QStringList steps(const QList<SqliteFlowPersistence::SavedState> &history)
{
    QStringList out;
    for (const auto &s : history)
        out << s.step;
    return out;
}

FlowOptions persisted(const std::shared_ptr<FlowPersistence> &persistence, bool everyStep = true)
{
    FlowOptions o;
    o.memory = false;
    o.persistence = persistence;
    o.persistEveryStep = everyStep;
    return o;
}

// begin (counter = 1) -> middle (counter = 2) -> end (counter = 3).
void defineCounter(Flow &flow, const StepOptions &middle = {})
{
    const auto bump = [&flow]() {
        flow.updateState([](Json &s) { s["counter"] = s.value("counter", 0) + 1; });
        return flow.stateValue("counter");
    };
    flow.start("begin", bump);
    flow.listen("middle", "begin", bump, middle);
    flow.listen("end", "middle", bump);
}

// Fails every save.
class BrokenPersistence : public FlowPersistence
{
public:
    void saveState(const QString &, const QString &, const Json &) override
    {
        throw Error(ErrorKind::Storage, QStringLiteral("the disk is full"));
    }
    std::optional<Json> loadState(const QString &) override { return std::nullopt; }
    QString location() const override { return QStringLiteral("nowhere"); }
};

} // namespace

class TestFlowPersistence : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void savesLoadsAndLists();
    void refusesBadSaves();
    void fileConventions();
    void refusedFilesStayUntouched_data();
    void refusedFilesStayUntouched();
    void damagedRowIsReported();
    void everyStepIsSavedBeforeItIsReported();
    void chosenStepsOnly();
    void failingBackendFailsTheStep();
    void resumeAndForkInOneProcess();
    void forkErrors();
    void resumeAndForkAcrossAProcessRestart();
    void twoProcessesShareOneFile();
};

void TestFlowPersistence::savesLoadsAndLists()
{
    TempStore dir;
    SqliteFlowPersistence store(dir.path(QStringLiteral("flows.db")));
    QCOMPARE(store.location(), QFileInfo(dir.path(QStringLiteral("flows.db"))).absoluteFilePath());
    QCOMPARE(store.loadState(QStringLiteral("a")), std::nullopt);
    store.saveState("a", "one", {{"id", "a"}, {"n", 1}});
    store.saveState("b", "one", {{"id", "b"}, {"n", 10}});
    store.saveState("a", "two", {{"id", "a"}, {"n", 2}, {"text", "héllo \"quoted\""}});
    QCOMPARE(*store.loadState("a"), (Json{{"id", "a"}, {"n", 2}, {"text", "héllo \"quoted\""}}));
    QCOMPARE(*store.loadState("b"), (Json{{"id", "b"}, {"n", 10}}));
    const auto history = store.history("a");
    QCOMPARE(steps(history), (QStringList{"one", "two"}));
    QCOMPARE(history.at(0).state["n"], Json(1));
    QVERIFY(history.at(0).savedAt.isValid() && history.at(0).savedAt <= history.at(1).savedAt);
    QCOMPARE(store.flowIds(), (QStringList{"a", "b"}));
    // A second connection sees it all.
    SqliteFlowPersistence again(dir.path(QStringLiteral("flows.db")));
    QCOMPARE(again.loadState("a")->at("n"), Json(2));
}

void TestFlowPersistence::refusesBadSaves()
{
    TempStore dir;
    SqliteFlowPersistence store(dir.path(QStringLiteral("flows.db")));
    QCOMPARE(errorOf([&] { store.saveState("", "s", {{"id", ""}}); }).kind(), ErrorKind::InvalidArgument);
    QVERIFY(errorOf([&] { store.saveState("a", "s", {{"id", "b"}}); }).message().contains(QLatin1String("whose \"id\" is that id")));
    QVERIFY(errorOf([&] { store.saveState("a", "s", Json::array()); }).message().contains(QLatin1String("JSON object")));
    QCOMPARE(store.flowIds(), QStringList());
}

void TestFlowPersistence::fileConventions()
{
    TempStore dir;
    const QString path = dir.path(QStringLiteral("sub/dir/flows.db"));
    {
        SqliteFlowPersistence store(path); // the folders are created
        store.saveState("a", "s", {{"id", "a"}});
    }
    QCOMPARE(sqlText(path, "PRAGMA journal_mode"), QStringLiteral("wal"));
    QCOMPARE(sqlText(path, "SELECT value FROM meta WHERE key = 'schema_version'"), QStringLiteral("1"));
    QCOMPARE(sqlText(path, "SELECT value FROM meta WHERE key = 'store_kind'"), QStringLiteral("flow_states"));
    QVERIFY(sqlText(path, "SELECT value FROM meta WHERE key = 'created_by'").startsWith(QLatin1String("mneme ")));
    QCOMPARE(SqliteFlowPersistence::latestSchemaVersion(), 1);
    QVERIFY(SqliteFlowPersistence::defaultPath().endsWith(QLatin1String("/flows.db")));
    QCOMPARE(errorOf([&] { SqliteFlowPersistence folder(dir.dir()); }).kind(), ErrorKind::InvalidArgument);
    QCOMPARE(errorOf([&] { SqliteFlowPersistence empty(QStringLiteral(" ")); }).kind(), ErrorKind::InvalidArgument);
}

void TestFlowPersistence::refusedFilesStayUntouched_data()
{
    QTest::addColumn<QString>("setup"); // SQL to create the file with, or "garbage"
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("message"); // a part of the message
    QTest::newRow("not sqlite") << "garbage" << int(ErrorKind::Corrupt) << "is not a flow-state store or is damaged";
    QTest::newRow("other database") << "CREATE TABLE people(name TEXT);" << int(ErrorKind::Corrupt)
                                    << "is a SQLite database but not a flow-state store (it has no meta table)";
    QTest::newRow("memory store") << "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT); CREATE TABLE records(id TEXT);"
                                     "INSERT INTO meta VALUES ('schema_version', '2');"
                                  << int(ErrorKind::Corrupt) << "is a Mneme memory store, not a flow-state store";
    QTest::newRow("newer schema") << "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT); CREATE TABLE flow_states(id INTEGER);"
                                     "INSERT INTO meta VALUES ('schema_version', '7'), ('store_kind', 'flow_states');"
                                  << int(ErrorKind::SchemaTooNew) << "was written by a newer Mneme (flow-state schema 7; this build reads up to 1)";
    QTest::newRow("table missing") << "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                                      "INSERT INTO meta VALUES ('schema_version', '1'), ('store_kind', 'flow_states');"
                                   << int(ErrorKind::Corrupt) << "is damaged: its table \"flow_states\" is missing";
}

void TestFlowPersistence::refusedFilesStayUntouched()
{
    QFETCH(QString, setup);
    QFETCH(int, kind);
    QFETCH(QString, message);
    TempStore dir;
    const QString path = dir.path(QStringLiteral("flows.db"));
    if (setup == QLatin1String("garbage")) {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(8192, 'x'));
    } else {
        sql(path, setup.toUtf8().constData());
    }
    const QByteArray before = bytesOf(path);
    const Error e = errorOf([&] { SqliteFlowPersistence store(path); });
    QCOMPARE(int(e.kind()), kind);
    QVERIFY2(e.message().contains(message), qPrintable(e.message()));
    QCOMPARE(bytesOf(path), before);
    QVERIFY(!QFile::exists(path + QStringLiteral("-wal")) || bytesOf(path + QStringLiteral("-wal")).isEmpty());
}

void TestFlowPersistence::damagedRowIsReported()
{
    TempStore dir;
    const QString path = dir.path(QStringLiteral("flows.db"));
    SqliteFlowPersistence store(path);
    store.saveState("a", "s", {{"id", "a"}});
    sql(path, "UPDATE flow_states SET state_json = '{broken'");
    const Error e = errorOf([&] { store.loadState("a"); });
    QCOMPARE(e.kind(), ErrorKind::Corrupt);
    QVERIFY2(e.message().contains(QLatin1String("the state saved in row 1 (flow id a) is not a JSON object")), qPrintable(e.message()));
}

void TestFlowPersistence::everyStepIsSavedBeforeItIsReported()
{
    TempStore dir;
    auto store = std::make_shared<SqliteFlowPersistence>(dir.path(QStringLiteral("flows.db")));
    Flow flow(QStringLiteral("Saved"), persisted(store));
    defineCounter(flow);
    // When a step is reported finished, its state is already in the file.
    QStringList seen;
    QObject::connect(&flow, &Flow::stepFinished, [&](const QString &step) {
        seen << step + QLatin1Char('=') + QString::number(store->loadState(flow.stateId())->value("counter", 0));
    });
    QCOMPARE(flow.kickoffAndWait(), Json(3));
    QCOMPARE(seen, (QStringList{"begin=1", "middle=2", "end=3"}));
    const auto history = store->history(flow.stateId());
    QCOMPARE(steps(history), (QStringList{"begin", "middle", "end"}));
    QCOMPARE(history.last().state, flow.stateJson());
}

void TestFlowPersistence::chosenStepsOnly()
{
    TempStore dir;
    auto store = std::make_shared<SqliteFlowPersistence>(dir.path(QStringLiteral("flows.db")));
    Flow flow(QStringLiteral("Chosen"), persisted(store, false));
    defineCounter(flow, StepOptions{true});
    flow.kickoffAndWait();
    const auto history = store->history(flow.stateId());
    QCOMPARE(steps(history), QStringList{"middle"});
    QCOMPARE(history.at(0).state["counter"], Json(2));
}

void TestFlowPersistence::failingBackendFailsTheStep()
{
    Flow flow(QStringLiteral("Broken"), persisted(std::make_shared<BrokenPersistence>()));
    defineCounter(flow);
    QSignalSpy stepFailed(&flow, &Flow::stepFailed);
    QSignalSpy stepFinished(&flow, &Flow::stepFinished);
    const Error e = errorOf([&] { flow.kickoffAndWait(); });
    QCOMPARE(e.kind(), ErrorKind::Storage);
    QCOMPARE(e.message(), QStringLiteral("Flow \"Broken\" failed in step \"begin\": State persistence failed: the disk is full"));
    QCOMPARE(stepFailed.size(), 1);
    QCOMPARE(stepFinished.size(), 0);
    QCOMPARE(flow.stateValue("counter"), Json(1)); // "middle" never ran
    QCOMPARE(flow.stepOutputs().size(), 0);        // a step whose save failed did not complete
}

void TestFlowPersistence::resumeAndForkInOneProcess()
{
    TempStore dir;
    auto store = std::make_shared<SqliteFlowPersistence>(dir.path(QStringLiteral("flows.db")));
    QString id;
    {
        Flow first(QStringLiteral("Counter"), persisted(store));
        defineCounter(first);
        first.kickoffAndWait({{"topic", "x"}});
        id = first.stateId();
    }
    // A new flow object resumes the saved state (and takes the other inputs).
    Flow second(QStringLiteral("Counter"), persisted(store));
    defineCounter(second);
    QCOMPARE(second.kickoffAndWait({{"id", id.toStdString()}, {"extra", 1}}), Json(6));
    QCOMPARE(second.stateId(), id);
    QCOMPARE(second.stateValue("topic"), Json("x"));
    QCOMPARE(second.stateValue("extra"), Json(1));

    // A fork starts from the latest saved state under a new id; the original is not touched.
    Flow third(QStringLiteral("Counter"), persisted(store));
    defineCounter(third);
    const int before = int(store->history(id).size());
    KickoffOptions fork;
    fork.restoreFrom = id;
    QCOMPARE(third.kickoffAndWait(Json::object(), fork), Json(9));
    QVERIFY(third.stateId() != id);
    QCOMPARE(store->history(id).size(), before);
    QCOMPARE(store->loadState(id)->at("counter"), Json(6));
    QCOMPARE(store->loadState(third.stateId())->at("counter"), Json(9));

    // An id nothing is saved under starts afresh under that id.
    Flow fourth(QStringLiteral("Counter"), persisted(store));
    defineCounter(fourth);
    QCOMPARE(fourth.kickoffAndWait({{"id", "brand-new"}}), Json(3));
    QCOMPARE(fourth.stateId(), QStringLiteral("brand-new"));
}

void TestFlowPersistence::forkErrors()
{
    TempStore dir;
    auto store = std::make_shared<SqliteFlowPersistence>(dir.path(QStringLiteral("flows.db")));
    Flow flow(QStringLiteral("Forks"), persisted(store));
    defineCounter(flow);
    KickoffOptions fork;
    fork.restoreFrom = QStringLiteral("nobody");
    const Error unknown = errorOf([&] { flow.kickoff(Json::object(), fork); });
    QCOMPARE(unknown.kind(), ErrorKind::NotFound);
    QVERIFY2(unknown.message().contains(QLatin1String("nothing is saved under that id")), qPrintable(unknown.message()));
    QVERIFY(errorOf([&] { flow.kickoff({{"id", "x"}}, fork); }).message().contains(QLatin1String("not both")));
    FlowOptions none;
    none.memory = false;
    Flow bare(QStringLiteral("Bare"), none);
    defineCounter(bare);
    QVERIFY(errorOf([&] { bare.kickoff(Json::object(), fork); }).message().contains(QLatin1String("it has no persistence")));
    QVERIFY(!flow.isRunning() && !bare.isRunning());
}

void TestFlowPersistence::resumeAndForkAcrossAProcessRestart()
{
    TempStore dir;
    const QString db = dir.path(QStringLiteral("flows.db"));

    // The first process dies inside the router, after "count" was saved.
    const Runner crashed = runner({db, QStringLiteral("crash")});
    QCOMPARE(crashed.exitCode, 3);
    QCOMPARE(crashed.lines.size(), 1);
    const QString id = QString::fromStdString(crashed.lines.at(0).at("id").get<std::string>());
    {
        SqliteFlowPersistence store(db);
        const auto history = store.history(id);
        QCOMPARE(steps(history), QStringList{"count"});
        QCOMPARE(history.at(0).state, (Json{{"id", id.toStdString()}, {"counter", 1}, {"log", {"count"}}}));
    }

    // A new process resumes from it.
    const Runner resumed = runner({db, QStringLiteral("resume"), id});
    QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
    const Json state = resumed.lines.at(0).at("state");
    QCOMPARE(resumed.lines.at(0).at("id"), Json(id.toStdString()));
    QCOMPARE(state, (Json{{"id", id.toStdString()}, {"counter", 2}, {"log", {"count", "count", "check"}}}));
    QCOMPARE(resumed.lines.at(0).at("result"), Json("done"));

    // Another forks it: a new id, starting from the latest saved state; the original stays.
    const Runner forked = runner({db, QStringLiteral("fork"), id});
    QVERIFY2(forked.exitCode == 0, forked.err.constData());
    const QString forkId = QString::fromStdString(forked.lines.at(0).at("id").get<std::string>());
    QVERIFY(forkId != id);
    QCOMPARE(forked.lines.at(0).at("state").at("counter"), Json(3));
    SqliteFlowPersistence store(db);
    QCOMPARE(steps(store.history(id)), (QStringList{"count", "count", "check"}));
    QCOMPARE(steps(store.history(forkId)), (QStringList{"count", "check"}));
    QCOMPARE(store.loadState(id)->at("counter"), Json(2));
}

void TestFlowPersistence::twoProcessesShareOneFile()
{
    TempStore dir;
    const QString db = dir.path(QStringLiteral("flows.db"));
    QProcess *a = startRunner({db, QStringLiteral("loop"), QStringLiteral("40")});
    QProcess *b = startRunner({db, QStringLiteral("loop"), QStringLiteral("40")});
    const Runner ra = finishRunner(a);
    const Runner rb = finishRunner(b);
    QVERIFY2(ra.exitCode == 0, ra.err.constData());
    QVERIFY2(rb.exitCode == 0, rb.err.constData());
    SqliteFlowPersistence store(db);
    for (const Runner &r : {ra, rb}) {
        const QString id = QString::fromStdString(r.lines.at(0).at("id").get<std::string>());
        QCOMPARE(store.history(id).size(), 80); // 40 counts and 40 checks, each saved
        QCOMPARE(store.loadState(id)->at("counter"), Json(40));
    }
}

QTEST_MAIN(TestFlowPersistence)
#include "test_flow_persistence.moc"
