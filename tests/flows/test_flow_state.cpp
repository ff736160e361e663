// Flow state: the unstructured JSON state (an id of its own, inputs merged, the id kept, changes
// all or nothing) and the typed state of TypedFlow (defaults, inputs checked field by field, the
// reference's "Invalid inputs for structured state" and "must have an 'id' field" errors).

#include "flow_test_util.h"
#include "memory_test_util.h"
#include <mneme/flows/typed_flow.h>

#include <QtTest>
#include <atomic>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::offline;

namespace {

bool isUuid(const QString &id)
{
    return id.size() == 36 && !QUuid::fromString(id).isNull();
}

} // namespace

struct Onboarding
{
    QString id;
    QString name;
    int attempts = 0;
    bool sent = false;
    QStringList tags;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Onboarding, id, name, attempts, sent, tags)

struct NoId
{
    QString name;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NoId, name)

class OnboardingFlow : public TypedFlow<Onboarding>
{
public:
    OnboardingFlow() : TypedFlow(QStringLiteral("OnboardingFlow"), offline())
    {
        start("user_signs_up", &OnboardingFlow::signUp);
        listen("send_welcome_message", "user_signs_up", &OnboardingFlow::welcome);
    }

    void signUp()
    {
        updateState([](Onboarding &s) {
            ++s.attempts;
            s.sent = false;
        });
    }
    QString welcome()
    {
        updateState([](Onboarding &s) { s.sent = true; });
        return QStringLiteral("Welcome, %1!").arg(state().name);
    }
};

class TestFlowState : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void unstructuredStateHasAnId();
    void inputsAreMerged();
    void idInputSetsTheIdWithoutPersistence();
    void updatesAreAllOrNothing();
    void parallelStepsUpdateWithoutLosingChanges();
    void typedStateRuns();
    void typedInputErrors_data();
    void typedInputErrors();
    void typedStateWithoutId();
    void typedUpdateChecks();
    void resetStateGivesANewId();
    void stateCallsInsideAChangeAreRefused_data();
    void stateCallsInsideAChangeAreRefused();
};

void TestFlowState::unstructuredStateHasAnId()
{
    Flow flow(QStringLiteral("UUIDUnstructured"), offline());
    QString seen;
    flow.start("first", [&]() {
        seen = flow.stateId();
        flow.setStateValue("data", "example");
    });
    flow.listen("second", "first", [&]() {
        if (flow.stateId() != seen)
            throw std::runtime_error("the id changed");
        flow.setStateValue("more_data", "test");
    });
    const QString id = flow.stateId();
    QVERIFY(isUuid(id));
    flow.kickoffAndWait();
    QCOMPARE(seen, id);
    QCOMPARE(flow.state(), (Json{{"id", id.toStdString()}, {"data", "example"}, {"more_data", "test"}}));
}

void TestFlowState::inputsAreMerged()
{
    Flow flow(QStringLiteral("Merge"), offline());
    flow.start("read", [&]() { return flow.stateValue("separator"); });
    flow.setStateValue("kept", 1);
    QCOMPARE(flow.kickoffAndWait({{"separator", ", "}}), Json(", "));
    QCOMPARE(flow.stateValue("kept"), Json(1));
    QCOMPARE(flow.stateValue("separator"), Json(", "));
    // A later kickoff merges again over what is there.
    flow.kickoffAndWait({{"separator", ";"}, {"extra", true}});
    QCOMPARE(flow.stateValue("separator"), Json(";"));
    QCOMPARE(flow.stateValue("kept"), Json(1));
    QCOMPARE(flow.stateValue("missing"), Json());
}

void TestFlowState::idInputSetsTheIdWithoutPersistence()
{
    Flow flow(QStringLiteral("Ids"), offline());
    flow.start("s", []() {});
    flow.kickoffAndWait({{"id", "my-own-id"}});
    QCOMPARE(flow.stateId(), QStringLiteral("my-own-id"));
    QVERIFY(errorOf([&] { flow.kickoff({{"id", 5}}); }).message().contains(QLatin1String("must be a non-empty string")));
    QVERIFY(errorOf([&] { flow.kickoff({{"id", ""}}); }).message().contains(QLatin1String("must be a non-empty string")));
    QCOMPARE(flow.stateId(), QStringLiteral("my-own-id"));
}

void TestFlowState::updatesAreAllOrNothing()
{
    Flow flow(QStringLiteral("Updates"), offline());
    const QString id = flow.stateId();
    flow.updateState([](Json &s) { s["a"] = 1; });
    const Error e = errorOf([&] {
        flow.updateState([](Json &s) {
            s["b"] = 2;
            s["id"] = "another";
        });
    });
    QVERIFY2(e.message().contains(QLatin1String("may not remove or change the state's id")), qPrintable(e.message()));
    QVERIFY(errorOf([&] { flow.updateState([](Json &s) { s.erase("id"); }); }).kind() == ErrorKind::InvalidArgument);
    QVERIFY(errorOf([&] { flow.updateState([](Json &s) { s = Json::array(); }); }).kind() == ErrorKind::InvalidArgument);
    QCOMPARE(flow.stateJson(), (Json{{"id", id.toStdString()}, {"a", 1}}));
}

void TestFlowState::parallelStepsUpdateWithoutLosingChanges()
{
    // Synchronous steps run on the pool at the same time; updateState serialises their changes.
    Flow flow(QStringLiteral("Parallel"), offline());
    flow.start("init", [&]() { flow.setStateValue("counter", 0); });
    for (int i = 0; i < 8; ++i) {
        flow.listen(QStringLiteral("add_%1").arg(i), "init", [&]() {
            for (int n = 0; n < 200; ++n)
                flow.updateState([](Json &s) { s["counter"] = s["counter"].get<int>() + 1; });
        });
    }
    flow.kickoffAndWait();
    QCOMPARE(flow.stateValue("counter"), Json(1600));
}

void TestFlowState::typedStateRuns()
{
    FlowInstance<OnboardingFlow> flow;
    QVERIFY(isUuid(flow.state().id));
    QCOMPARE(flow.kickoffAndWait({{"name", "Anakin"}}), Json("Welcome, Anakin!"));
    QCOMPARE(flow.state().attempts, 1);
    QVERIFY(flow.state().sent);
    QCOMPARE(flow.state().name, QStringLiteral("Anakin"));
    QCOMPARE(flow.stateJson()["name"], Json("Anakin"));
    // The JSON view works on a typed state, checked against the struct.
    flow.setStateValue("attempts", 5);
    QCOMPARE(flow.state().attempts, 5);
    QVERIFY(errorOf([&] { flow.setStateValue("attempts", "five"); }).message().contains(QLatin1String("\"attempts\" must be an integer")));
}

void TestFlowState::typedInputErrors_data()
{
    QTest::addColumn<QString>("inputs");
    QTest::addColumn<QString>("message");
    const QString prefix = QStringLiteral("Invalid inputs for structured state: ");
    QTest::newRow("unknown field") << R"({"nmae": "x"})"
                                   << prefix + "\"nmae\" is not a field of the state (its fields: attempts, id, name, sent, tags)";
    QTest::newRow("string for int") << R"({"attempts": "3"})" << prefix + "\"attempts\" must be an integer, not \"3\"";
    QTest::newRow("float for int") << R"({"attempts": 2.5})" << prefix + "\"attempts\" must be an integer, not 2.5";
    QTest::newRow("number for bool") << R"({"sent": 1})" << prefix + "\"sent\" must be true or false, not 1";
    QTest::newRow("string for list") << R"({"tags": "a"})" << prefix + "\"tags\" must be an array, not \"a\"";
    QTest::newRow("wrong element") << R"({"tags": [1]})" << prefix + "[json.exception.type_error.302] type must be string, but is number";
    QTest::newRow("empty id") << R"({"id": ""})"
                              << "the \"id\" input of flow \"OnboardingFlow\" must be a non-empty string (the id of the state to resume)";
}

void TestFlowState::typedInputErrors()
{
    QFETCH(QString, inputs);
    QFETCH(QString, message);
    FlowInstance<OnboardingFlow> flow;
    flow.updateState([](Onboarding &s) { s.name = QStringLiteral("kept"); });
    const Onboarding before = flow.state();
    std::atomic_bool ran = false;
    QObject::connect(&flow, &Flow::flowStarted, [&ran]() { ran = true; });
    const Error e = errorOf([&] { flow.kickoff(Json::parse(inputs.toStdString())); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QCOMPARE(e.message(), message);
    QVERIFY(!ran);
    QVERIFY(!flow.isRunning());
    QCOMPARE(flow.state().name, before.name);
    QCOMPARE(flow.state().id, before.id);
}

void TestFlowState::typedStateWithoutId()
{
    const Error e = errorOf([] { TypedFlow<NoId> flow(QStringLiteral("NoId")); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QVERIFY2(e.message().startsWith(QLatin1String("Flow state model must have an 'id' field: ")), qPrintable(e.message()));
}

void TestFlowState::typedUpdateChecks()
{
    FlowInstance<OnboardingFlow> flow;
    const QString id = flow.state().id;
    QVERIFY(errorOf([&] { flow.updateState([](Onboarding &s) { s.id = QStringLiteral("x"); }); })
                .message()
                .contains(QLatin1String("may not change the state's id")));
    QCOMPARE(flow.state().id, id);
    flow.updateState([](Onboarding &s) { s.tags << QStringLiteral("vip"); });
    QCOMPARE(flow.stateJson()["tags"], Json::array({"vip"}));
}

void TestFlowState::resetStateGivesANewId()
{
    FlowInstance<OnboardingFlow> flow;
    const QString id = flow.state().id;
    flow.updateState([](Onboarding &s) { s.attempts = 4; });
    flow.resetState();
    QVERIFY(flow.state().id != id);
    QVERIFY(isUuid(flow.state().id));
    QCOMPARE(flow.state().attempts, 0);
}

void TestFlowState::stateCallsInsideAChangeAreRefused_data()
{
    QTest::addColumn<QString>("call");
    for (const char *call : {"stateValue()", "stateJson()", "state()", "stateId()", "updateState()", "setStateValue()", "resetState()"})
        QTest::newRow(call) << QString::fromLatin1(call);
}

void TestFlowState::stateCallsInsideAChangeAreRefused()
{
    // A change runs under the state's lock: a state call inside it would wait for that lock for
    // ever. It is refused with a clear error instead, and the change does not happen.
    QFETCH(QString, call);
    FlowInstance<OnboardingFlow> flow;
    const auto inner = [&]() {
        if (call == QLatin1String("stateValue()"))
            flow.stateValue("name");
        else if (call == QLatin1String("stateJson()"))
            flow.stateJson();
        else if (call == QLatin1String("state()"))
            flow.state();
        else if (call == QLatin1String("stateId()"))
            flow.stateId();
        else if (call == QLatin1String("updateState()"))
            flow.updateState([](Onboarding &s) { s.attempts = 9; });
        else if (call == QLatin1String("setStateValue()"))
            flow.setStateValue("attempts", 9);
        else
            flow.resetState();
    };
    const Onboarding before = flow.state();
    const QString expected = QStringLiteral("the change given to updateState() of flow \"OnboardingFlow\" called %1, which waits "
                                            "for the state's lock that the change holds; read and change the state the change "
                                            "is given instead")
                                 .arg(call);
    const Error fromJson = errorOf([&] {
        flow.updateState([&](Json &s) {
            s["attempts"] = 1;
            inner();
        });
    });
    QCOMPARE(fromJson.kind(), ErrorKind::InvalidArgument);
    QCOMPARE(fromJson.message(), expected);
    const Error fromTyped = errorOf([&] {
        flow.updateState([&](Onboarding &s) {
            s.attempts = 1;
            inner();
        });
    });
    QCOMPARE(fromTyped.message(), expected);
    QCOMPARE(flow.stateJson(), Json(before));
    // Outside a change, the same call works.
    inner();
}

QTEST_MAIN(TestFlowState)
#include "test_flow_state.moc"
