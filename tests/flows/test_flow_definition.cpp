// FlowCondition and FlowDefinition: what and_ / or_ mean, which definitions are refused (and with
// which message), the JSON description `mneme flow-graph` reads, and the DOT drawing.

#include "flow_test_util.h"
#include "memory_test_util.h"
#include <mneme/flows/flow.h>
#include <mneme/flows/flow_definition.h>

#include <QtTest>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::offline;

namespace {

using Kind = FlowDefinition::StepKind;

FlowDefinition::Step step(const QString &name, Kind kind, std::optional<FlowCondition> trigger = std::nullopt,
                          const QStringList &labels = {})
{
    return FlowDefinition::Step{name, kind, trigger, labels, false};
}

// begin -> check (router: ok / retry); retry -> fix; again (conditional start on fix);
// done on and_(ok, or_(begin, fix)).
FlowDefinition sample()
{
    FlowDefinition def(QStringLiteral("Review \"flow\""));
    def.addStep(step("begin", Kind::Start));
    def.addStep(step("check", Kind::Router, FlowCondition("begin"), {"ok", "retry"}));
    def.addStep(step("fix", Kind::Listener, FlowCondition("retry")));
    def.addStep(step("again", Kind::Start, FlowCondition("fix")));
    def.addStep(step("done", Kind::Listener, and_("ok", or_("begin", "fix"))));
    def.validate();
    return def;
}

} // namespace

class TestFlowDefinition : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void conditionNamesAndText();
    void conditionSatisfaction();
    void conditionAlternatives();
    void conditionJson();
    void refusedDefinitions_data();
    void refusedDefinitions();
    void refusedThroughTheFlowApi();
    void persistNeedsPersistence();
    void jsonRoundTrip();
    void badJson_data();
    void badJson();
    void dot();
    void flowDotValidatesFirst();
};

void TestFlowDefinition::conditionNamesAndText()
{
    const FlowCondition c = or_(and_("a", "b"), "c", and_("a", or_("d")));
    QCOMPARE(c.names(), (QStringList{"a", "b", "c", "d"}));
    QCOMPARE(c.toString(), QStringLiteral("or_(and_(a, b), c, and_(a, or_(d)))"));
    QVERIFY(c.mentions("d"));
    QVERIFY(!c.mentions("e"));
    QCOMPARE(FlowCondition("x").kind(), FlowCondition::Kind::Name);
    QCOMPARE(c.kind(), FlowCondition::Kind::Or);
    QCOMPARE(c.children().size(), 3);
    QCOMPARE(errorOf([] { FlowCondition::all({}); }).kind(), ErrorKind::InvalidArgument);
}

void TestFlowDefinition::conditionSatisfaction()
{
    const FlowCondition c = or_(and_("a", "b"), and_("c", "d"));
    QVERIFY(!c.isSatisfiedBy({"a"}));
    QVERIFY(!c.isSatisfiedBy({"a", "c"}));
    QVERIFY(c.isSatisfiedBy({"a", "b"}));
    QVERIFY(c.isSatisfiedBy({"d", "c"}));
    QVERIFY(FlowCondition("a").isSatisfiedBy({"a"}));
    QVERIFY(and_("a", or_("b", "c")).isSatisfiedBy({"a", "c"}));
    QVERIFY(!and_("a", or_("b", "c")).isSatisfiedBy({"b", "c"}));
}

void TestFlowDefinition::conditionAlternatives()
{
    QVERIFY(or_("a", "b").isMultiEventOr());
    QVERIFY(!or_("a").isMultiEventOr());
    QVERIFY(!and_("a", "b").isMultiEventOr());
    QCOMPARE(or_("a", or_("b", "c"), and_("d", "e")).orAlternatives(), (QStringList{"a", "b", "c"}));
    QCOMPARE(and_("a", "b").orAlternatives(), QStringList());
    QCOMPARE(FlowCondition("a").orAlternatives(), QStringList{"a"});
}

void TestFlowDefinition::conditionJson()
{
    const FlowCondition c = or_(and_("a", "b"), "c");
    QCOMPARE(c.toJson(), Json::parse(R"({"or": [{"and": ["a", "b"]}, "c"]})"));
    QVERIFY(FlowCondition::fromJson(c.toJson(), QStringLiteral("here")) == c);
    const Error e = errorOf([] { FlowCondition::fromJson(Json::parse(R"({"xor": ["a"]})"), QStringLiteral("the trigger of step \"s\"")); });
    QCOMPARE(e.message(), QStringLiteral("the trigger of step \"s\": \"xor\" is neither \"and\" nor \"or\"; a trigger is a step "
                                         "name or label (a string), {\"and\": [...]} or {\"or\": [...]}"));
    QVERIFY(errorOf([] { FlowCondition::fromJson(Json::parse(R"({"and": []})"), QStringLiteral("x")); })
                .message()
                .contains(QLatin1String("non-empty array")));
    QVERIFY(errorOf([] { FlowCondition::fromJson(Json(3), QStringLiteral("x")); }).message().contains(QLatin1String("3 is not a trigger")));
}

void TestFlowDefinition::refusedDefinitions_data()
{
    QTest::addColumn<QList<FlowDefinition::Step>>("steps");
    QTest::addColumn<QString>("message");

    const auto prefix = [](const QString &s) { return QStringLiteral("Invalid flow definition for step \"%1\" (flow \"F\"): ").arg(s); };
    const FlowDefinition::Step begin = step("begin", Kind::Start);

    QTest::newRow("self-listen") << QList<FlowDefinition::Step>{begin, step("a", Kind::Listener, FlowCondition("a"))}
                                 << prefix("a") + "it listens to itself (a), so it would trigger itself every time it finishes; "
                                                  "to loop, go back to it through a router label";
    QTest::newRow("self-listen inside or_")
        << QList<FlowDefinition::Step>{begin, step("a", Kind::Listener, or_("begin", "a"))}
        << prefix("a") + "it listens to itself (or_(begin, a)), so it would trigger itself every time it finishes; to loop, go back "
                         "to it through a router label";
    QTest::newRow("self-listen inside and_ of a start")
        << QList<FlowDefinition::Step>{begin, step("s", Kind::Start, and_("begin", or_("x", "s")))}
        << prefix("s") + "it listens to itself (and_(begin, or_(x, s))), so it would trigger itself every time it finishes; to loop, "
                         "go back to it through a router label";
    QTest::newRow("router triggered by its own name")
        << QList<FlowDefinition::Step>{begin, step("r", Kind::Router, or_("begin", "r"), {"x"})}
        << prefix("r") + "the router is triggered by its own name (or_(begin, r)); it would run again every time it finishes. "
                         "Trigger it by the step before it";
    QTest::newRow("unknown trigger")
        << QList<FlowDefinition::Step>{begin, step("r", Kind::Router, FlowCondition("begin"), {"ok"}),
                                       step("a", Kind::Listener, and_("ok", "nope"))}
        << prefix("a") + "its trigger \"nope\" names no step and no router label (steps: begin, r, a; labels: ok); check the "
                         "spelling, or declare the label on the router that returns it";
    QTest::newRow("duplicate step") << QList<FlowDefinition::Step>{begin, step("begin", Kind::Listener, FlowCondition("begin"))}
                                    << prefix("begin") + "a step of that name already exists; give each step its own name";
    QTest::newRow("empty name") << QList<FlowDefinition::Step>{step(" ", Kind::Start)} << prefix(" ") + "a step needs a name";
    QTest::newRow("listener without trigger")
        << QList<FlowDefinition::Step>{begin, step("a", Kind::Listener)}
        << prefix("a") + "a listener needs a trigger: a step name, a router label, and_(...) or or_(...)";
    QTest::newRow("router without labels")
        << QList<FlowDefinition::Step>{begin, step("r", Kind::Router, FlowCondition("begin"))}
        << prefix("r") + "a router declares the labels it may return, such as router(\"check\", \"draft\", {\"approved\", "
                         "\"rejected\"}, ...)";
    QTest::newRow("label twice") << QList<FlowDefinition::Step>{begin, step("r", Kind::Router, FlowCondition("begin"), {"a", "a"})}
                                 << prefix("r") + "the label \"a\" is declared twice";
    QTest::newRow("label named like a step")
        << QList<FlowDefinition::Step>{begin, step("r", Kind::Router, FlowCondition("begin"), {"ok", "begin"})}
        << prefix("r") + "its label \"begin\" is also the name of a step, and labels and step names share one namespace (a "
                         "listener of \"begin\" would fire for both); rename one of them";
    QTest::newRow("label named like its router")
        << QList<FlowDefinition::Step>{begin, step("r", Kind::Router, FlowCondition("begin"), {"r"})}
        << prefix("r") + "its label \"r\" is also the name of a step, and labels and step names share one namespace (a listener "
                         "of \"r\" would fire for both); rename one of them";
    QTest::newRow("step named like a label")
        << QList<FlowDefinition::Step>{begin, step("r", Kind::Router, FlowCondition("begin"), {"ok"}),
                                       step("ok", Kind::Listener, FlowCondition("r"))}
        << prefix("ok") + "a router already declares the label \"ok\", and labels and step names share one namespace (a "
                          "listener of \"ok\" would fire for both); rename the step or the label";
    QTest::newRow("labels on a listener")
        << QList<FlowDefinition::Step>{begin, step("a", Kind::Listener, FlowCondition("begin"), {"x"})}
        << prefix("a") + "only routers declare labels";
    QTest::newRow("no start") << QList<FlowDefinition::Step>{}
                              << QStringLiteral("Invalid flow definition (flow \"F\"): it has no start step; add one with "
                                                "start(\"name\", ...)");
}

void TestFlowDefinition::refusedDefinitions()
{
    QFETCH(QList<FlowDefinition::Step>, steps);
    QFETCH(QString, message);
    const Error e = errorOf([&] {
        FlowDefinition def(QStringLiteral("F"));
        for (const FlowDefinition::Step &s : steps)
            def.addStep(s);
        def.validate();
    });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QCOMPARE(e.message(), message);
}

void TestFlowDefinition::refusedThroughTheFlowApi()
{
    // Refused at registration, before the flow can run; the flow keeps its earlier steps.
    Flow flow(QStringLiteral("Api"), offline());
    flow.start("begin", []() { return 1; });
    QVERIFY(errorOf([&] { flow.listen("again", or_("begin", "again"), []() {}); }).message().contains(QLatin1String("listens to itself")));
    QVERIFY(errorOf([&] { flow.router("route", "route", {"x"}, []() { return 1; }); })
                .message()
                .contains(QLatin1String("triggered by its own name")));
    QVERIFY(errorOf([&] { flow.start("begin", []() {}); }).message().contains(QLatin1String("already exists")));
    QCOMPARE(flow.definition().stepNames(), QStringList{"begin"});
    flow.listen("later", "nothing", []() {});
    const Error e = errorOf([&] { flow.kickoff(); });
    QVERIFY2(e.message().startsWith(QLatin1String("Invalid flow definition for step \"later\" (flow \"Api\"): its trigger \"nothing\"")),
             qPrintable(e.message()));
    QVERIFY(!flow.isRunning());
}

void TestFlowDefinition::persistNeedsPersistence()
{
    Flow flow(QStringLiteral("Persist"), offline());
    flow.start(
        "begin", []() { return 1; }, StepOptions{true});
    QCOMPARE(errorOf([&] { flow.validate(); }).message(),
             QStringLiteral("Invalid flow definition for step \"begin\" (flow \"Persist\"): it asks for its state to be saved "
                            "(StepOptions::persist), but the flow has no persistence; set FlowOptions::persistence"));
}

void TestFlowDefinition::jsonRoundTrip()
{
    const FlowDefinition def = sample();
    const Json j = def.toJson();
    QCOMPARE(j["format"], Json("mneme-flow/1"));
    QCOMPARE(j["steps"][1], Json::parse(R"({"name": "check", "kind": "router", "trigger": "begin", "labels": ["ok", "retry"],
                                             "persist": false})"));
    QCOMPARE(j["steps"][4]["trigger"], Json::parse(R"({"and": ["ok", {"or": ["begin", "fix"]}]})"));
    QCOMPARE(j["steps"][3]["kind"], Json("start"));
    QCOMPARE(FlowDefinition::fromJson(j).toJson(), j);
    QCOMPARE(FlowDefinition::fromJson(j).toDot(), def.toDot());
}

void TestFlowDefinition::badJson_data()
{
    QTest::addColumn<QString>("document");
    QTest::addColumn<QString>("message");
    const QString hint = QStringLiteral(" (write one with Flow::toJson(), or run the flow's program with --flow-graph=json)");
    QTest::newRow("not an object") << "[1]"
                                   << "not a flow description: the document is not a JSON object" + hint;
    QTest::newRow("no format") << R"({"name": "f", "steps": []})"
                               << "not a flow description: \"format\" must be \"mneme-flow/1\"" + hint;
    QTest::newRow("unknown key") << R"({"format": "mneme-flow/1", "name": "f", "steps": [], "x": 1})"
                                 << "not a flow description: unknown key \"x\"" + hint;
    QTest::newRow("bad kind") << R"({"format": "mneme-flow/1", "name": "f", "steps": [{"name": "a", "kind": "begin"}]})"
                              << "not a flow description: step 1 (\"a\"): \"kind\" must be \"start\", \"listen\" or \"router\"" + hint;
    QTest::newRow("bad labels") << R"({"format": "mneme-flow/1", "name": "f", "steps": [{"name": "a", "kind": "start", "labels": [1]}]})"
                                << "not a flow description: step 1 (\"a\"): \"labels\" must be an array of strings" + hint;
    QTest::newRow("self-listen") << R"({"format": "mneme-flow/1", "name": "f", "steps": [{"name": "a", "kind": "start"},
                                        {"name": "b", "kind": "listen", "trigger": {"or": ["a", "b"]}}]})"
                                 << "Invalid flow definition for step \"b\" (flow \"f\"): it listens to itself (or_(a, b)), so it would "
                                    "trigger itself every time it finishes; to loop, go back to it through a router label";
    QTest::newRow("unknown trigger") << R"({"format": "mneme-flow/1", "name": "f", "steps": [{"name": "a", "kind": "start"},
                                            {"name": "b", "kind": "listen", "trigger": "c"}]})"
                                     << "Invalid flow definition for step \"b\" (flow \"f\"): its trigger \"c\" names no step and no "
                                        "router label (steps: a, b; labels: none); check the spelling, or declare the label on the "
                                        "router that returns it";
}

void TestFlowDefinition::badJson()
{
    QFETCH(QString, document);
    QFETCH(QString, message);
    const Error e = errorOf([&] { FlowDefinition::fromJson(Json::parse(document.toStdString())); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QCOMPARE(e.message(), message);
}

void TestFlowDefinition::dot()
{
    const QString expected = QStringLiteral(R"(digraph "Review \"flow\"" {
  label="Review \"flow\"";
  labelloc=t;
  rankdir=TB;
  node [fontname="Helvetica", fontsize=11];
  edge [fontname="Helvetica", fontsize=9];
  "step:begin" [label="begin", shape=box, style="rounded,filled", fillcolor="#d5f5e3"];
  "step:check" [label="check", shape=diamond, style=filled, fillcolor="#fdebd0"];
  "step:fix" [label="fix", shape=box, style=rounded];
  "step:again" [label="again", shape=box, style="rounded,filled,dashed", fillcolor="#d5f5e3"];
  "step:done" [label="done", shape=box, style=rounded];
  "label:ok" [label="ok", shape=ellipse, style=dashed];
  "label:retry" [label="retry", shape=ellipse, style=dashed];
  "step:check" -> "label:ok" [style=dashed];
  "step:check" -> "label:retry" [style=dashed];
  "step:begin" -> "step:check";
  "label:retry" -> "step:fix";
  "step:fix" -> "step:again";
  "cond:done:1" [label="AND", shape=circle, fontsize=9, width=0.3];
  "cond:done:1" -> "step:done";
  "label:ok" -> "cond:done:1";
  "cond:done:2" [label="OR", shape=circle, fontsize=9, width=0.3];
  "cond:done:2" -> "cond:done:1";
  "step:begin" -> "cond:done:2";
  "step:fix" -> "cond:done:2";
}
)");
    QCOMPARE(sample().toDot(), expected);
}

void TestFlowDefinition::flowDotValidatesFirst()
{
    Flow flow(QStringLiteral("Dot"), offline());
    flow.start("begin", []() { return 1; });
    flow.listen("end", "missing", []() {});
    QVERIFY(errorOf([&] { flow.toDot(); }).message().contains(QLatin1String("\"missing\"")));
    QVERIFY(errorOf([&] { flow.toJson(); }).message().contains(QLatin1String("\"missing\"")));
}

QTEST_MAIN(TestFlowDefinition)
#include "test_flow_definition.moc"
