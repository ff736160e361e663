// `mneme flow-graph`: the DOT of a flow from the JSON description Flow::toJson() writes (from a file
// or standard input), --json, and the errors for input that is not a valid flow description.

#include "cli_runner.h"
#include "temp_store.h"
#include <mneme/flows/flow.h>

#include <QFile>
#include <QtTest>

using namespace mneme;
using mneme::test::CliRun;
using mneme::test::runCli;
using mneme::test::TempStore;

namespace {

CliRun cli(const QStringList &args, const QString &dir, const QByteArray &input = {})
{
    return runCli(QStringLiteral(MNEME_CLI), args, dir, input);
}

// begin -> review (router: approved / rework); rework -> revise -> review ...; approved -> publish.
std::unique_ptr<Flow> reviewFlow()
{
    FlowOptions o;
    o.memory = false;
    auto flow = std::make_unique<Flow>(QStringLiteral("Review"), o);
    flow->start("draft", []() { return 1; });
    flow->router("review", or_("draft", "revise"), {"approved", "rework"}, []() { return QStringLiteral("approved"); });
    flow->listen("revise", "rework", []() { return 2; });
    flow->listen("publish", "approved", []() { return 3; });
    return flow;
}

void write(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

} // namespace

class TestCliFlowGraph : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void dotFromAFile();
    void dotFromStandardInput();
    void jsonOutput();
    void badInput_data();
    void badInput();
    void deepTriggerWithinTheLimit();
    void usage();
};

void TestCliFlowGraph::dotFromAFile()
{
    TempStore dir;
    const auto flow = reviewFlow();
    write(dir.path(QStringLiteral("review.json")), QByteArray::fromStdString(flow->toJson().dump(2)));
    const CliRun run = cli({QStringLiteral("flow-graph"), dir.path(QStringLiteral("review.json"))}, dir.dir());
    QVERIFY2(run.exitCode == 0, run.describe().constData());
    QCOMPARE(QString::fromUtf8(run.out), flow->toDot());
    QVERIFY(run.out.contains("\"step:review\" -> \"label:rework\" [style=dashed];"));
    QVERIFY(run.err.isEmpty());
}

void TestCliFlowGraph::dotFromStandardInput()
{
    TempStore dir;
    const auto flow = reviewFlow();
    const CliRun run = cli({QStringLiteral("flow-graph"), QStringLiteral("-")}, dir.dir(), QByteArray::fromStdString(flow->toJson().dump()));
    QVERIFY2(run.exitCode == 0, run.describe().constData());
    QCOMPARE(QString::fromUtf8(run.out), flow->toDot());
}

void TestCliFlowGraph::jsonOutput()
{
    TempStore dir;
    const auto flow = reviewFlow();
    const CliRun run = cli({QStringLiteral("--json"), QStringLiteral("flow-graph"), QStringLiteral("-")}, dir.dir(),
                           QByteArray::fromStdString(flow->toJson().dump()));
    QVERIFY2(run.exitCode == 0 && run.isJson(), run.describe().constData());
    const Json j = run.json();
    QCOMPARE(j["name"], Json("Review"));
    QCOMPARE(j["steps"], Json::array({"draft", "review", "revise", "publish"}));
    QCOMPARE(QString::fromStdString(j["dot"].get<std::string>()), flow->toDot());
}

void TestCliFlowGraph::badInput_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QString>("error");
    QTest::newRow("not json") << QByteArray("digraph {}")
                              << "mneme: standard input is not JSON (parse error at line 1, column 1: syntax error while parsing "
                                 "value - invalid literal; last read: 'd'); give the description a flow writes with "
                                 "Flow::toJson(), or pipe its program's --flow-graph=json output (./my_flow --flow-graph=json | "
                                 "mneme flow-graph -)";
    QTest::newRow("not a description") << QByteArray(R"({"steps": []})")
                                       << "mneme: standard input: not a flow description: \"format\" must be \"mneme-flow/1\" (write one "
                                          "with Flow::toJson(), or run the flow's program with --flow-graph=json)";
    QTest::newRow("invalid flow") << QByteArray(R"({"format": "mneme-flow/1", "name": "f", "steps": [
                                        {"name": "a", "kind": "start"}, {"name": "r", "kind": "router", "trigger": "r", "labels": ["x"]}]})")
                                  << "mneme: standard input: Invalid flow definition for step \"r\" (flow \"f\"): the router is triggered "
                                     "by its own name (r); it would run again every time it finishes. Trigger it by the step before it";
    // A trigger nested deeper than anyone writes is refused, not followed until the stack overflows:
    // the description is JSON read from outside, refused past 64 levels of nesting before it is parsed.
    // Built in linear time (wrapping a string 200,000 times copies it as often: minutes under ASan).
    const auto nested = [](int depth) {
        const QByteArray trigger = QByteArray("{\"or\": [").repeated(depth) + "\"a\"" + QByteArray("]}").repeated(depth);
        return R"({"format": "mneme-flow/1", "name": "f", "steps": [{"name": "a", "kind": "start"},
                   {"name": "b", "kind": "listen", "trigger": )"
             + trigger + "}]}";
    };
    const QString tooDeep = "mneme: standard input is not JSON (it nests deeper than 64 levels of arrays and objects); give the "
                            "description a flow writes with Flow::toJson(), or pipe its program's --flow-graph=json output "
                            "(./my_flow --flow-graph=json | mneme flow-graph -)";
    QTest::newRow("trigger 65 deep") << nested(65) << tooDeep;
    QTest::newRow("trigger 200000 deep") << nested(200000) << tooDeep;
    const QByteArray deepValue = QByteArray("[").repeated(200000) + "1" + QByteArray("]").repeated(200000);
    QTest::newRow("deep value that is not a trigger")
        << QByteArray(R"({"format": "mneme-flow/1", "name": "f", "steps": [{"name": "a", "kind": "start"},
                         {"name": "b", "kind": "listen", "trigger": {"x": )"
                      + deepValue + R"(, "y": 1}}]})")
        << tooDeep;
    // A value that is not a trigger is quoted only in part.
    QTest::newRow("not a trigger") << QByteArray(R"({"format": "mneme-flow/1", "name": "f", "steps": [{"name": "a", "kind": "start"},
                         {"name": "b", "kind": "listen", "trigger": {"x": [[[1]]], "y": 1}}]})")
                                   << "mneme: standard input: the trigger of step \"b\": {\"x\":[[[...]]],\"y\":1} is not a trigger; a "
                                      "trigger is a step name or label (a string), {\"and\": [...]} or {\"or\": [...]}";
}

void TestCliFlowGraph::badInput()
{
    QFETCH(QByteArray, input);
    QFETCH(QString, error);
    TempStore dir;
    const CliRun run = cli({QStringLiteral("flow-graph"), QStringLiteral("-")}, dir.dir(), input);
    QCOMPARE(run.exitCode, 2);
    QVERIFY(run.out.isEmpty());
    QCOMPARE(QString::fromUtf8(run.err).trimmed(), error);

    const CliRun missing = cli({QStringLiteral("flow-graph"), dir.path(QStringLiteral("nope.json"))}, dir.dir());
    QCOMPARE(missing.exitCode, 2);
    QVERIFY2(missing.err.contains("nope.json"), missing.describe().constData());
}

void TestCliFlowGraph::deepTriggerWithinTheLimit()
{
    // 30 levels are still a trigger (with the description around it, 63 levels of JSON: within the
    // limit of JSON read from outside).
    QByteArray trigger = "\"a\"";
    for (int i = 0; i < 30; ++i)
        trigger = "{\"and\": [" + trigger + "]}";
    TempStore dir;
    const CliRun run = cli({QStringLiteral("flow-graph"), QStringLiteral("-")}, dir.dir(),
                           R"({"format": "mneme-flow/1", "name": "f", "steps": [{"name": "a", "kind": "start"},
                               {"name": "b", "kind": "listen", "trigger": )"
                               + trigger + "}]}");
    QCOMPARE(run.exitCode, 0);
    QVERIFY2(run.out.startsWith("digraph"), run.describe().constData());
}

void TestCliFlowGraph::usage()
{
    TempStore dir;
    const CliRun run = cli({QStringLiteral("help"), QStringLiteral("flow-graph")}, dir.dir());
    QCOMPARE(run.exitCode, 0);
    QVERIFY2(run.out.contains("mneme flow-graph FILE|-"), run.describe().constData());
    const CliRun all = cli({QStringLiteral("help")}, dir.dir());
    QVERIFY(all.out.contains("flow-graph"));
}

QTEST_MAIN(TestCliFlowGraph)
#include "test_cli_flow_graph.moc"
