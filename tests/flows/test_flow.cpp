// Flow execution: the acceptance cases of CrewAI's flows (and_, or_ once with
// parallel starts, or_ re-arming in router loops, no double fire across chained routers, router
// paths, label 0, nested conditions returning the last output) and the rest of section 11.2
// (cycles through a conditional start, multiple routers, races, the call limit, failures), plus
// what a C++ author needs: steps awaiting QFutures while the event loop keeps running (timers, an
// AgentExecutor against a scripted LLM), typed step parameters, cancellation, reuse.

#include "flow_test_util.h"
#include "memory_test_util.h"
#include "scripted_llm.h"
#include <mneme/flows/flow.h>
#include <mneme/runtime/agent_executor.h>

#include <QElapsedTimer>
#include <QSemaphore>
#include <QSignalSpy>
#include <QThreadPool>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>
#include <QtTest>
#include <atomic>
#include <stdexcept>
#include <thread>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::offline;
using mneme::test::later;
using mneme::test::ScriptedLlm;
using mneme::test::Trace;

namespace {

// A step that logs its name and returns it.
auto logs(Trace &trace, const QString &name)
{
    return [&trace, name]() {
        trace.add(name);
        return name;
    };
}

QStringList stepNames(const QList<FlowStepOutput> &outputs)
{
    QStringList out;
    for (const FlowStepOutput &o : outputs)
        out << o.step;
    return out;
}

} // namespace

class TestFlow : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sequentialSteps();
    void andWaitsForEveryTrigger();
    void orFiresOnceWithParallelStarts();
    void orRearmsInRouterLoops();
    void noDoubleFireAcrossChainedRouters();
    void routerRunsOnlyItsLabelPath();
    void routerLabels_data();
    void routerLabels();
    void undeclaredLabelFailsTheRun();
    void nestedConditionsReturnTheLastOutput();
    void nestedAndOrWaitsForTheRightBranch();
    void cycleThroughAConditionalStart();
    void multipleRoutersFromOneTrigger();
    void routerTriggeredByALabelGetsTheLabelsPayload();
    void raceCancelsTheSlowerAlternative();
    void stepThatFeedsARouterDoesNotRace();
    void queuedSynchronousRaceLoserNeverStarts();
    void asyncStepsKeepTheEventLoopRunning();
    void agentExecutorStep();
    void startsGetTheInputsAndListenersTypedOutputs();
    void inputThatDoesNotFitTheParameterFailsTheStep();
    void callLimitStopsEndlessLoops();
    void callLimitNamesTheCallInEnglish_data();
    void callLimitNamesTheCallInEnglish();
    void failingStepFailsTheFlow();
    void failingAsyncStepFailsTheFlow();
    void asyncStepFailingOnAnotherThreadKeepsItsError();
    void cancelStopsTheRun();
    void cancellingTheFutureStopsTheRun();
    void flowIsReusable();
    void destroyingARunningFlowEndsItsRun();
    void destroyingAFlowWhoseStepThenThrows();
    void subclassRunsOnlyAsFlowInstance();
    void flowInstanceStopsItsRunBeforeItsMembersGo();
    void waitingForTheFutureOnTheFlowsThreadFails_data();
    void waitingForTheFutureOnTheFlowsThreadFails();
    void stopAndWaitEndsTheRunAtOnce();
    void destroyingAFlowSkipsItsQueuedSteps();
    void queuedStepsDoNotStartAfterAFailure();
    void outputArrivingAfterTheStopIsDropped();
    void misuseIsRefused();
};

void TestFlow::sequentialSteps()
{
    Trace trace;
    Flow flow(QStringLiteral("Simple"), offline());
    flow.start("step_1", logs(trace, "step_1"));
    flow.listen("step_2", "step_1", logs(trace, "step_2"));
    QCOMPARE(flow.kickoffAndWait(), Json("step_2"));
    QCOMPARE(trace.list(), (QStringList{"step_1", "step_2"}));
}

void TestFlow::andWaitsForEveryTrigger()
{
    Trace trace;
    Flow flow(QStringLiteral("And"), offline());
    flow.start("step_1", logs(trace, "step_1"));
    flow.start("step_2", [&trace]() {
        QThread::msleep(50); // finishes well after step_1
        trace.add("step_2");
        return QStringLiteral("step_2");
    });
    flow.listen("step_3", and_("step_1", "step_2"), logs(trace, "step_3"));
    QCOMPARE(flow.kickoffAndWait(), Json("step_3"));
    QCOMPARE(trace.count("step_3"), 1);
    QCOMPARE(trace.list().last(), QStringLiteral("step_3"));
    QVERIFY(trace.indexOf("step_3") > trace.indexOf("step_1"));
    QVERIFY(trace.indexOf("step_3") > trace.indexOf("step_2"));
}

void TestFlow::orFiresOnceWithParallelStarts()
{
    Trace trace;
    Flow flow(QStringLiteral("Or"), offline());
    // Both starts complete: asynchronous ones at different times, so both report on the flow's thread.
    flow.start("step_a", [&trace]() {
        trace.add("step_a");
        return later(10, QStringLiteral("a"));
    });
    flow.start("step_b", [&trace]() {
        trace.add("step_b");
        return later(500, QStringLiteral("b"));
    });
    flow.listen("step_c", or_("step_a", "step_b"), [&trace](const QString &from) {
        trace.add("step_c:" + from);
        return from;
    });
    flow.kickoffAndWait();
    QCOMPARE(trace.count("step_c:a") + trace.count("step_c:b"), 1);
    QCOMPARE(trace.count("step_c:a"), 1); // fired by the first to complete
    QCOMPARE(stepNames(flow.stepOutputs()), (QStringList{"step_a", "step_c", "step_b"}));
}

void TestFlow::orRearmsInRouterLoops()
{
    std::atomic_int fires = 0;
    Flow flow(QStringLiteral("Loop"), offline());
    flow.start("begin", []() { return QStringLiteral("go"); });
    flow.listen("handler", or_("begin", "loop"), [&fires]() { return ++fires; });
    flow.router("check", "handler", {"loop", "done"}, [&fires]() { return fires < 3 ? QStringLiteral("loop") : QStringLiteral("done"); });
    QCOMPARE(flow.kickoffAndWait(), Json("done"));
    QCOMPARE(fires.load(), 3);
    QCOMPARE(stepNames(flow.stepOutputs()),
             (QStringList{"begin", "handler", "check", "handler", "check", "handler", "check"}));
}

void TestFlow::noDoubleFireAcrossChainedRouters()
{
    Trace trace;
    Flow flow(QStringLiteral("Chained"), offline());
    flow.start("begin", logs(trace, "begin"));
    flow.router("first", "begin", {"x"}, []() { return QStringLiteral("x"); });
    flow.router("second", "x", {"y"}, []() { return QStringLiteral("y"); });
    flow.listen("handler", or_("x", "y"), logs(trace, "handler"));
    flow.kickoffAndWait();
    QCOMPARE(trace.count("handler"), 1);
    QCOMPARE(stepNames(flow.stepOutputs()), (QStringList{"begin", "first", "second", "handler"}));
}

void TestFlow::routerRunsOnlyItsLabelPath()
{
    Trace trace;
    Flow flow(QStringLiteral("RouterFlow"), offline());
    flow.start("start_method", [&trace]() { trace.add("start_method"); });
    flow.router("router", "start_method", {"step_if_true", "step_if_false"}, [&trace]() {
        trace.add("router");
        return QStringLiteral("step_if_true");
    });
    flow.listen("truthy", "step_if_true", [&trace]() { trace.add("step_if_true"); });
    flow.listen("falsy", "step_if_false", [&trace]() { trace.add("step_if_false"); });
    QSignalSpy labels(&flow, &Flow::routerLabelEmitted);
    flow.kickoffAndWait();
    QCOMPARE(trace.list(), (QStringList{"start_method", "router", "step_if_true"}));
    QCOMPARE(labels.size(), 1);
    QCOMPARE(labels.at(0).at(0).toString(), QStringLiteral("router"));
    QCOMPARE(labels.at(0).at(1).toString(), QStringLiteral("step_if_true"));
}

void TestFlow::routerLabels_data()
{
    QTest::addColumn<QString>("returned"); // JSON of the router's output
    QTest::addColumn<QString>("fired");    // the label listener that ran, or empty

    QTest::newRow("zero") << "0"
                          << "0";
    QTest::newRow("empty string") << "\"\""
                                  << "";
    QTest::newRow("false") << "false"
                           << "false";
    QTest::newRow("string") << "\"yes\""
                            << "yes";
    QTest::newRow("null emits nothing") << "null"
                                        << "none";
}

void TestFlow::routerLabels()
{
    QFETCH(QString, returned);
    QFETCH(QString, fired);
    const Json output = Json::parse(returned.toStdString());
    Trace trace;
    Flow flow(QStringLiteral("Labels"), offline());
    flow.start("begin", []() { return 1; });
    flow.router("route", "begin", {"0", "", "false", "yes"}, [output]() { return output; });
    for (const QString label : {"0", "", "false", "yes"})
        flow.listen(QStringLiteral("on[%1]").arg(label), label, [&trace, label]() { trace.add(label); });
    QSignalSpy labels(&flow, &Flow::routerLabelEmitted);
    flow.kickoffAndWait();
    if (fired == QLatin1String("none")) {
        QCOMPARE(trace.list(), QStringList());
        QCOMPARE(labels.size(), 0);
    } else {
        QCOMPARE(trace.list(), QStringList{fired});
        QCOMPARE(labels.size(), 1);
        QCOMPARE(labels.at(0).at(1).toString(), fired);
    }
}

void TestFlow::undeclaredLabelFailsTheRun()
{
    Flow flow(QStringLiteral("Typo"), offline());
    flow.start("begin", []() { return 1; });
    flow.router("route", "begin", {"approved", "rejected"}, []() { return QStringLiteral("aproved"); });
    flow.listen("publish", "approved", []() {});
    const Error e = errorOf([&] { flow.kickoffAndWait(); });
    QVERIFY2(e.message().contains(QLatin1String("\"route\"")) && e.message().contains(QLatin1String("\"aproved\""))
                 && e.message().contains(QLatin1String("approved, rejected")),
             qPrintable(e.message()));
    // A router returning an object is a mistake too.
    Flow objects(QStringLiteral("Objects"), offline());
    objects.start("begin", []() { return 1; });
    objects.router("route", "begin", {"a"}, []() { return Json{{"label", "a"}}; });
    QVERIFY(errorOf([&] { objects.kickoffAndWait(); }).message().contains(QLatin1String("returns one of its labels")));
}

void TestFlow::nestedConditionsReturnTheLastOutput()
{
    Flow flow(QStringLiteral("Nested"), offline());
    flow.start("event_a", []() { return QStringLiteral("a"); });
    flow.start("event_b", []() { return QStringLiteral("b"); });
    flow.start("event_c", []() { return QStringLiteral("c"); });
    flow.listen("finish", and_("event_a", "event_b", or_("event_c")), []() { return QStringLiteral("done"); });
    QCOMPARE(flow.kickoffAndWait(), Json("done"));
    QCOMPARE(flow.stepOutputs().last().step, QStringLiteral("finish"));
}

void TestFlow::nestedAndOrWaitsForTheRightBranch()
{
    // crewAI test_nested_and_or_conditions: or_(and_("a_condition", m6), and_(m6, m4)) fires only
    // after both m6 and m4, the a_condition label never being emitted.
    Trace trace;
    Flow flow(QStringLiteral("NestedCondition"), offline());
    flow.start("method_1", logs(trace, "method_1"));
    flow.listen("method_2", "method_1", logs(trace, "method_2"));
    flow.router("method_3", "method_2", {"a_condition", "b_condition"}, [&trace]() {
        trace.add("method_3");
        return QStringLiteral("b_condition");
    });
    flow.listen("method_5", "b_condition", logs(trace, "method_5"));
    flow.listen("method_4", "method_5", [&trace]() {
        trace.add("method_4");
        return later(20, QStringLiteral("method_4"));
    });
    flow.listen("method_6", or_("a_condition", "b_condition"), [&trace]() {
        trace.add("method_6");
        return later(1, QStringLiteral("method_6"));
    });
    flow.listen("method_7", or_(and_("a_condition", "method_6"), and_("method_6", "method_4")), logs(trace, "method_7"));
    flow.listen("method_8", "method_7", logs(trace, "method_8"));
    QCOMPARE(flow.kickoffAndWait(), Json("method_8"));
    QCOMPARE(trace.count("method_7"), 1);
    QVERIFY(trace.indexOf("method_7") > trace.indexOf("method_6"));
    QVERIFY(trace.indexOf("method_7") > trace.indexOf("method_4"));
    QVERIFY(trace.indexOf("method_8") > trace.indexOf("method_7"));
}

void TestFlow::cycleThroughAConditionalStart()
{
    // crewAI test_cyclic_flow: the only start is conditional, so it runs at kickoff, and again
    // whenever the router emits "loop".
    Trace trace;
    std::atomic_int iteration = 0;
    Flow flow(QStringLiteral("Cyclic"), offline());
    flow.start("step_1", "loop", [&]() { trace.add(QStringLiteral("step_1_%1").arg(iteration.load())); });
    flow.listen("step_2", "step_1", [&]() { trace.add(QStringLiteral("step_2_%1").arg(iteration.load())); });
    flow.router("step_3", "step_2", {"loop", "exit"}, [&]() {
        trace.add(QStringLiteral("step_3_%1").arg(iteration.load()));
        return ++iteration < 3 ? QStringLiteral("loop") : QStringLiteral("exit");
    });
    QCOMPARE(flow.kickoffAndWait(), Json("exit"));
    QStringList expected;
    for (int i = 0; i < 3; ++i)
        expected << QStringLiteral("step_1_%1").arg(i) << QStringLiteral("step_2_%1").arg(i) << QStringLiteral("step_3_%1").arg(i);
    QCOMPARE(trace.list(), expected);
}

void TestFlow::multipleRoutersFromOneTrigger()
{
    // crewAI test_multiple_routers_from_same_trigger: every router of one trigger runs and each of
    // their labels reaches its listener; a router returning null emits nothing.
    Trace trace;
    Flow flow(QStringLiteral("MultiRouter"), offline());
    flow.start("scan", logs(trace, "scan"));
    flow.router("diagnose", "scan", {"diagnosed"}, []() { return QStringLiteral("diagnosed"); });
    const QStringList conditions{"diabetes", "hypertension", "anemia", "flu"};
    for (const QString &c : conditions) {
        flow.router(c + "_router", "diagnose", {c}, [&trace, c]() -> std::optional<QString> {
            trace.add(c + "_router");
            if (c == QLatin1String("flu"))
                return std::nullopt;
            return c;
        });
        flow.listen(c + "_analysis", c, logs(trace, c + "_analysis"));
    }
    flow.kickoffAndWait();
    for (const QString &c : conditions.mid(0, 3)) {
        QCOMPARE(trace.count(c + "_analysis"), 1);
        QVERIFY(trace.indexOf(c + "_analysis") > trace.indexOf(c + "_router"));
    }
    QCOMPARE(trace.count("flu_router"), 1);
    QCOMPARE(trace.count("flu_analysis"), 0);
}

void TestFlow::routerTriggeredByALabelGetsTheLabelsPayload()
{
    Flow flow(QStringLiteral("Payloads"), offline());
    flow.start("begin", []() { return QStringLiteral("begin-output"); });
    flow.router("first", "begin", {"1"}, [](const Json &in) {
        if (in != Json("begin-output"))
            throw std::runtime_error("first got " + in.dump());
        return 1;
    });
    flow.router("second", "1", {"done"}, [](const Json &in) {
        if (in != Json(1))
            throw std::runtime_error("second got " + in.dump());
        return QStringLiteral("done");
    });
    std::atomic_bool ran = false;
    flow.listen("end", "done", [&ran](const QString &in) { ran = in == QLatin1String("done"); });
    flow.kickoffAndWait();
    QVERIFY(ran);
}

void TestFlow::raceCancelsTheSlowerAlternative()
{
    // "fast" and "slow" are exclusive alternatives of one or_ listener and are triggered together:
    // the first to finish wins, the other is cancelled (its future too) and its output dropped.
    Flow flow(QStringLiteral("Race"), offline());
    QFuture<QString> slowFuture;
    flow.start("begin", []() { return 0; });
    flow.listen("fast", "begin", []() { return later(10, QStringLiteral("fast")); });
    flow.listen("slow", "begin", [&slowFuture]() { return slowFuture = later(2000, QStringLiteral("slow")); });
    Trace trace;
    flow.listen("handler", or_("fast", "slow"), [&trace](const QString &winner) { trace.add(winner); });
    QSignalSpy cancelled(&flow, &Flow::stepCancelled);
    QElapsedTimer timer;
    timer.start();
    flow.kickoffAndWait();
    QVERIFY2(timer.elapsed() < 1500, "the run waited for the loser");
    QCOMPARE(trace.list(), QStringList{"fast"});
    QVERIFY(slowFuture.isCanceled());
    QCOMPARE(cancelled.size(), 1);
    QCOMPARE(cancelled.at(0).at(0).toString(), QStringLiteral("slow"));
    QCOMPARE(stepNames(flow.stepOutputs()), (QStringList{"begin", "fast", "handler"}));
}

void TestFlow::stepThatFeedsARouterDoesNotRace()
{
    // "slow" feeds the or_ listener and a router too: it is no exclusive alternative of the or_, so it
    // is not cancelled when "fast" finishes first, and its router and the router's listener run.
    Flow flow(QStringLiteral("RaceAndRoute"), offline());
    Trace trace;
    flow.start("begin", []() { return 0; });
    flow.listen("fast", "begin", []() { return later(10, QStringLiteral("fast")); });
    flow.listen("slow", "begin", []() { return later(300, QStringLiteral("slow")); });
    flow.listen("handler", or_("fast", "slow"), [&trace](const QString &first) { trace.add(QStringLiteral("handler ") + first); });
    flow.router("check", "slow", {"checked"}, []() { return QStringLiteral("checked"); });
    flow.listen("after_check", "checked", logs(trace, "after_check"));
    QSignalSpy cancelled(&flow, &Flow::stepCancelled);
    QCOMPARE(flow.kickoffAndWait(), Json("after_check"));
    QCOMPARE(cancelled.size(), 0);
    QCOMPARE(trace.list(), (QStringList{"handler fast", "after_check"}));
    QCOMPARE(stepNames(flow.stepOutputs()), (QStringList{"begin", "fast", "handler", "slow", "check", "after_check"}));
}

void TestFlow::queuedSynchronousRaceLoserNeverStarts()
{
    // One pool thread; "fast", "blocker" and "slow" queue in that order. "fast" wins the race, and
    // "blocker" holds the thread until the race is decided, so "slow" is still queued when it loses:
    // it never starts.
    QThreadPool pool;
    pool.setMaxThreadCount(1);
    FlowOptions options = offline();
    options.threadPool = &pool;
    Flow flow(QStringLiteral("QueuedLoser"), options);
    Trace trace;
    QSemaphore decided;
    flow.start("begin", []() { return 0; });
    flow.listen("fast", "begin", logs(trace, "fast"));
    flow.listen("blocker", "begin", [&decided, &trace]() {
        decided.tryAcquire(1, 10000);
        trace.add("blocker");
    });
    flow.listen("slow", "begin", logs(trace, "slow"));
    flow.listen("handler", or_("fast", "slow"), [&trace](const QString &winner) { trace.add("handler " + winner); });
    QObject::connect(&flow, &Flow::stepFinished, &flow, [&decided](const QString &step) {
        if (step == QLatin1String("fast"))
            decided.release();
    });
    QSignalSpy cancelled(&flow, &Flow::stepCancelled);
    flow.kickoffAndWait();
    pool.waitForDone();
    QVERIFY2(!trace.list().contains("slow"), qPrintable(trace.list().join(QLatin1String(", "))));
    QCOMPARE(trace.count("handler fast"), 1);
    QCOMPARE(cancelled.size(), 1);
    QCOMPARE(cancelled.at(0).at(0).toString(), QStringLiteral("slow"));
}

void TestFlow::asyncStepsKeepTheEventLoopRunning()
{
    Flow flow(QStringLiteral("Async"), offline());
    flow.start("fetch", []() { return later(150, QStringLiteral("page")); });
    flow.listen("summarise", "fetch", [](const QString &page) { return later(150, page + " summary"); });
    int ticks = 0;
    QTimer ticker;
    QObject::connect(&ticker, &QTimer::timeout, [&ticks]() { ++ticks; });
    ticker.start(10);
    QElapsedTimer timer;
    timer.start();
    QFuture<Json> future = flow.kickoff();
    QVERIFY2(timer.elapsed() < 100, "kickoff() blocked");
    QVERIFY(!future.isFinished());
    QVERIFY(QTest::qWaitFor([&] { return future.isFinished(); }, 10000));
    QCOMPARE(future.result(), Json("page summary"));
    QVERIFY2(ticks >= 15, qPrintable(QStringLiteral("the timer fired only %1 times").arg(ticks)));
}

void TestFlow::agentExecutorStep()
{
    // Any QFuture can be awaited: here an agent turn through the real `openai` plugin against the
    // scripted server, finishing on the network thread while the flow's thread stays free.
    ScriptedLlm llm;
    llm.on(QStringLiteral("(none)"), [](const Json &) { return ScriptedLlm::completion(QStringLiteral("Paris is the capital.")); });
    AgentExecutor executor(llm.provider());
    Flow flow(QStringLiteral("Agent"), offline());
    flow.start("ask", [&executor](const Json &inputs) {
        const QString question = QString::fromStdString(inputs.at("question").get<std::string>());
        return executor.run({ChatMessage::user(question)}, {}).then([](const AgentResult &r) { return r.finalAnswer; });
    });
    flow.listen("shout", "ask", [](const QString &answer) { return answer.toUpper(); });
    QCOMPARE(flow.kickoffAndWait({{"question", "What is the capital of France?"}}), Json("PARIS IS THE CAPITAL."));
    QCOMPARE(llm.totalCalls(), 1);
    QVERIFY(llm.lastPrompt(QStringLiteral("(none)")).contains(QLatin1String("capital of France")));
}

struct Point
{
    int x = 0;
    int y = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Point, x, y)

void TestFlow::startsGetTheInputsAndListenersTypedOutputs()
{
    Flow flow(QStringLiteral("Typed"), offline());
    flow.start("make", [](const Json &inputs) { return Point{inputs.at("x").get<int>(), 2}; });
    flow.listen("sum", "make", [](const Point &p) { return p.x + p.y; });
    flow.listen("maybe", "sum", [](std::optional<int> n) { return n ? *n * 10 : -1; });
    QCOMPARE(flow.kickoffAndWait({{"x", 5}}), Json(70));
}

void TestFlow::inputThatDoesNotFitTheParameterFailsTheStep()
{
    Flow flow(QStringLiteral("Mismatch"), offline());
    flow.start("make", []() { return QStringLiteral("not a point"); });
    flow.listen("use", "make", [](const Point &p) { return p.x; });
    const Error e = errorOf([&] { flow.kickoffAndWait(); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QVERIFY2(e.message().startsWith(QLatin1String("Flow \"Mismatch\" failed in step \"use\": its input \"not a point\"")),
             qPrintable(e.message()));
}

void TestFlow::callLimitStopsEndlessLoops()
{
    FlowOptions options = offline();
    options.maxStepCalls = 5;
    std::atomic_int runs = 0;
    Flow flow(QStringLiteral("Endless"), options);
    flow.start("begin", []() { return 0; });
    flow.listen("work", or_("begin", "again"), [&runs]() { return ++runs; });
    flow.router("check", "work", {"again"}, []() { return QStringLiteral("again"); });
    const Error e = errorOf([&] { flow.kickoffAndWait(); });
    QCOMPARE(runs.load(), 5);
    QVERIFY2(e.message().contains(QLatin1String("step \"work\"")) && e.message().contains(QLatin1String("maxStepCalls is 5"))
                 && e.message().contains(QLatin1String("endless loop")),
             qPrintable(e.message()));
    QVERIFY(!flow.isRunning());
}

void TestFlow::callLimitNamesTheCallInEnglish_data()
{
    QTest::addColumn<int>("limit");
    QTest::addColumn<QString>("ordinal");
    QTest::newRow("1") << 1 << "2nd";
    QTest::newRow("2") << 2 << "3rd";
    QTest::newRow("3") << 3 << "4th";
    QTest::newRow("10") << 10 << "11th";
    QTest::newRow("11") << 11 << "12th";
    QTest::newRow("12") << 12 << "13th";
    QTest::newRow("20") << 20 << "21st";
    QTest::newRow("100") << 100 << "101st";
    QTest::newRow("110") << 110 << "111th";
    QTest::newRow("121") << 121 << "122nd";
}

void TestFlow::callLimitNamesTheCallInEnglish()
{
    QFETCH(int, limit);
    QFETCH(QString, ordinal);
    FlowOptions options = offline();
    options.maxStepCalls = limit;
    Flow flow(QStringLiteral("Loop"), options);
    flow.start("begin", []() { return 0; });
    flow.listen("work", or_("begin", "again"), []() { return 1; });
    flow.router("check", "work", {"again"}, []() { return QStringLiteral("again"); });
    const Error e = errorOf([&] { flow.kickoffAndWait(); });
    QVERIFY2(e.message().contains(QStringLiteral("step \"work\" was about to run for the %1 time in this run").arg(ordinal)),
             qPrintable(e.message()));
}

void TestFlow::failingStepFailsTheFlow()
{
    Trace trace;
    Flow flow(QStringLiteral("Exception"), offline());
    flow.start("step_1", [&trace]() -> QString {
        trace.add("step_1");
        throw std::runtime_error("An error occurred in step_1");
    });
    flow.listen("step_2", "step_1", logs(trace, "step_2"));
    QSignalSpy failed(&flow, &Flow::flowFailed);
    QSignalSpy finished(&flow, &Flow::flowFinished);
    QSignalSpy stepFailed(&flow, &Flow::stepFailed);
    const Error e = errorOf([&] { flow.kickoffAndWait(); });
    QCOMPARE(e.message(), QStringLiteral("Flow \"Exception\" failed in step \"step_1\": An error occurred in step_1"));
    QCOMPARE(trace.list(), QStringList{"step_1"});
    QCOMPARE(failed.size(), 1);
    QCOMPARE(failed.at(0).at(1).toString(), e.message());
    QCOMPARE(finished.size(), 0);
    QCOMPARE(stepFailed.size(), 1);
    QCOMPARE(stepFailed.at(0).at(0).toString(), QStringLiteral("step_1"));
    QCOMPARE(stepFailed.at(0).at(2).toString(), QStringLiteral("An error occurred in step_1"));
}

void TestFlow::failingAsyncStepFailsTheFlow()
{
    // The future's own error, with its kind, and the sibling still running is waited for (it fails
    // the future itself, so it is running when the flow hears of the failure).
    Flow flow(QStringLiteral("AsyncFailure"), offline());
    std::atomic_bool siblingDone = false;
    auto promise = std::make_shared<QPromise<QString>>();
    promise->start();
    flow.start("remote", [promise]() { return promise->future(); });
    flow.start("local", [&siblingDone, promise]() {
        promise->setException(Error(ErrorKind::ServerError, QStringLiteral("the server answered 503")));
        promise->finish();
        QThread::msleep(100);
        siblingDone = true;
    });
    QSignalSpy cancelled(&flow, &Flow::stepCancelled);
    const Error e = errorOf([&] { flow.kickoffAndWait(); });
    QCOMPARE(e.kind(), ErrorKind::ServerError);
    QCOMPARE(e.message(), QStringLiteral("Flow \"AsyncFailure\" failed in step \"remote\": the server answered 503"));
    QVERIFY2(siblingDone, "the run ended while a step was still running");
    QCOMPARE(cancelled.size(), 1);
    QCOMPARE(cancelled.at(0).at(0).toString(), QStringLiteral("local"));
}

void TestFlow::asyncStepFailingOnAnotherThreadKeepsItsError()
{
    // A future's exception is signalled as "canceled" first and "finished" second. Its producer here
    // is another thread that lets the flow's thread see the first before it finishes the future: the
    // step still fails with the producer's error, not as cancelled.
    Flow flow(QStringLiteral("RemoteFailure"), offline());
    std::thread producer;
    flow.start("remote", [&producer]() -> QFuture<QString> {
        auto promise = std::make_shared<QPromise<QString>>();
        promise->start();
        producer = std::thread([promise]() {
            promise->setException(Error(ErrorKind::ServerError, QStringLiteral("the server answered 503")));
            QThread::msleep(300);
            promise->finish();
        });
        return promise->future();
    });
    QSignalSpy stepFailed(&flow, &Flow::stepFailed);
    QSignalSpy stepCancelled(&flow, &Flow::stepCancelled);
    const Error e = errorOf([&] { flow.kickoffAndWait(); });
    producer.join();
    QCOMPARE(e.kind(), ErrorKind::ServerError);
    QCOMPARE(e.message(), QStringLiteral("Flow \"RemoteFailure\" failed in step \"remote\": the server answered 503"));
    QCOMPARE(stepFailed.size(), 1);
    QCOMPARE(stepFailed.at(0).at(2).toString(), QStringLiteral("the server answered 503"));
    QCOMPARE(stepCancelled.size(), 0);
}

void TestFlow::cancelStopsTheRun()
{
    Flow flow(QStringLiteral("Cancel"), offline());
    QFuture<QString> pending;
    Trace trace;
    flow.start("wait", [&pending]() { return pending = later(5000, QStringLiteral("late")); });
    flow.listen("after", "wait", logs(trace, "after"));
    QSignalSpy cancelled(&flow, &Flow::stepCancelled);
    QSignalSpy failed(&flow, &Flow::flowFailed);
    QFuture<Json> future = flow.kickoff();
    QTimer::singleShot(50, &flow, &Flow::cancel);
    QVERIFY(QTest::qWaitFor([&] { return future.isFinished(); }, 3000));
    const Error e = errorOf([&] { future.waitForFinished(); });
    QCOMPARE(e.kind(), ErrorKind::Cancelled);
    QVERIFY(pending.isCanceled());
    QCOMPARE(cancelled.size(), 1);
    QCOMPARE(failed.size(), 1);
    QCOMPARE(trace.list(), QStringList());
    QVERIFY(!flow.isRunning());
}

void TestFlow::cancellingTheFutureStopsTheRun()
{
    Flow flow(QStringLiteral("CancelFuture"), offline());
    QFuture<QString> pending;
    flow.start("wait", [&pending]() { return pending = later(5000, QStringLiteral("late")); });
    QSignalSpy failed(&flow, &Flow::flowFailed);
    QFuture<Json> future = flow.kickoff();
    QTest::qWait(30);
    future.cancel();
    QVERIFY(QTest::qWaitFor([&] { return !flow.isRunning(); }, 3000));
    QVERIFY(pending.isCanceled());
    QCOMPARE(failed.size(), 1);
    QVERIFY(failed.at(0).at(1).toString().contains(QLatin1String("cancelled")));
}

void TestFlow::flowIsReusable()
{
    Trace trace;
    Flow flow(QStringLiteral("Restartable"), offline());
    flow.start("step_1", logs(trace, "step_1"));
    flow.listen("step_2", "step_1", [&trace]() {
        trace.add("step_2");
        return later(20, QStringLiteral("step_2"));
    });
    const QString id = flow.stateId();
    QFuture<Json> first = flow.kickoff();
    const Error busy = errorOf([&] { flow.kickoff(); });
    QVERIFY2(busy.message().contains(QLatin1String("is running")), qPrintable(busy.message()));
    QVERIFY(QTest::qWaitFor([&] { return first.isFinished(); }, 5000));
    QCOMPARE(flow.kickoffAndWait(), Json("step_2"));
    QCOMPARE(trace.list(), (QStringList{"step_1", "step_2", "step_1", "step_2"}));
    QCOMPARE(flow.stateId(), id);
}

void TestFlow::destroyingARunningFlowEndsItsRun()
{
    auto flow = std::make_unique<Flow>(QStringLiteral("Doomed"), offline());
    std::atomic_bool slowDone = false;
    QSemaphore started;
    QFuture<int> pending;
    flow->start("slow", [&slowDone, &started]() {
        started.release();
        QThread::msleep(200);
        slowDone = true;
    });
    flow->start("pending", [&pending]() { return pending = later(5000, 1); });
    QFuture<Json> future = flow->kickoff();
    QVERIFY(started.tryAcquire(1, 10000));
    flow.reset(); // waits for the step running on the pool, which may use the flow
    QVERIFY(slowDone);
    QVERIFY(future.isFinished());
    QVERIFY(pending.isCanceled());
    const Error e = errorOf([&] { future.waitForFinished(); });
    QCOMPARE(e.kind(), ErrorKind::Cancelled);
    QVERIFY2(e.message().contains(QLatin1String("destroyed while it ran")), qPrintable(e.message()));
}

void TestFlow::destroyingAFlowWhoseStepThenThrows()
{
    // The flow waits for its running step, which then throws: the destructor must not rethrow it
    // (it would terminate the process).
    auto flow = std::make_unique<Flow>(QStringLiteral("Thrower"), offline());
    QSemaphore started;
    QSemaphore go;
    flow->start("throws", [&started, &go]() -> int {
        started.release();
        go.acquire();
        throw std::runtime_error("the step failed while the flow was being destroyed");
    });
    QFuture<Json> future = flow->kickoff();
    QVERIFY(started.tryAcquire(1, 10000));
    go.release();
    flow.reset();
    QVERIFY(future.isFinished());
    QCOMPARE(errorOf([&] { future.waitForFinished(); }).kind(), ErrorKind::Cancelled);
}

namespace {

// Sets a flag when it is destroyed: a member of a subclass declared last goes first, right after the
// subclass's destructor.
struct Witness
{
    std::atomic_bool &gone;
    ~Witness() { gone = true; }
};

// A flow whose step uses the members of its subclass.
class Sampler : public Flow
{
public:
    Sampler(QSemaphore &started, QSemaphore &go, std::atomic_bool &destroyed, std::atomic_bool &usedAfterDestruction)
        : Flow(QStringLiteral("Sampler"), offline()), m_started(started), m_go(go), m_destroyed(destroyed),
          m_usedAfterDestruction(usedAfterDestruction)
    {
        start("sample", &Sampler::sample);
    }

private:
    QString sample()
    {
        m_started.release();
        m_go.acquire();
        QThread::msleep(100);
        if (m_destroyed)
            m_usedAfterDestruction = true;
        return m_text;
    }

    QSemaphore &m_started;
    QSemaphore &m_go;
    std::atomic_bool &m_destroyed;
    std::atomic_bool &m_usedAfterDestruction;
    QString m_text = QStringLiteral("a member of the subclass");
    Witness m_witness{m_destroyed};
};

} // namespace

// A subclass object kicked off on its own could be destroyed while its steps still use its members:
// it is refused, by a message that names the way to run it.
void TestFlow::subclassRunsOnlyAsFlowInstance()
{
    QSemaphore started;
    QSemaphore go;
    std::atomic_bool destroyed = false;
    std::atomic_bool usedAfterDestruction = false;
    Sampler bare(started, go, destroyed, usedAfterDestruction);
    const Error e = errorOf([&] { bare.kickoff(); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QVERIFY2(e.message().contains(QLatin1String("mneme::FlowInstance<(anonymous namespace)::Sampler>")), qPrintable(e.message()));
    QVERIFY(!bare.isRunning());
    QCOMPARE(started.available(), 0);
}

// Destroyed mid-run, a FlowInstance stops the run before the subclass's members go: the step never
// sees them destroyed (under AddressSanitizer, no use after free).
void TestFlow::flowInstanceStopsItsRunBeforeItsMembersGo()
{
    QSemaphore started;
    QSemaphore go;
    std::atomic_bool destroyed = false;
    std::atomic_bool usedAfterDestruction = false;
    auto flow = makeFlow<Sampler>(started, go, destroyed, usedAfterDestruction);
    QSignalSpy failed(flow.get(), &Flow::flowFailed);
    QSignalSpy cancelled(flow.get(), &Flow::stepCancelled);
    QFuture<Json> future = flow->kickoff();
    QVERIFY(started.tryAcquire(1, 10000));
    go.release();
    flow.reset();
    QVERIFY(destroyed);
    QVERIFY2(!usedAfterDestruction, "the step ran on after the subclass's members were destroyed");
    QVERIFY(future.isFinished());
    const Error e = errorOf([&] { future.waitForFinished(); });
    QCOMPARE(e.kind(), ErrorKind::Cancelled);
    QCOMPARE(e.message(), QStringLiteral("the run of flow \"Sampler\" was stopped by stopAndWait() while it ran"));
    QCOMPARE(failed.size(), 1);
    QCOMPARE(cancelled.size(), 1);
    QCOMPARE(cancelled.at(0).at(0).toString(), QStringLiteral("sample"));
}

// Blocking on the future of kickoff() on the flow's own thread stops the loop the run needs: the
// wait fails at once, naming kickoffAndWait(), and the flow can run again.
void TestFlow::waitingForTheFutureOnTheFlowsThreadFails_data()
{
    QTest::addColumn<bool>("result"); // result(), else waitForFinished()
    QTest::newRow("result()") << true;
    QTest::newRow("waitForFinished()") << false;
}

void TestFlow::waitingForTheFutureOnTheFlowsThreadFails()
{
    QFETCH(bool, result);
    Flow flow(QStringLiteral("Waited"), offline());
    flow.start("one", [] { return 1; });
    flow.listen("two", "one", [](int x) { return x + 1; });
    QFuture<Json> future = flow.kickoff();
    // Without the guard this wait never returns (the test then fails by its timeout).
    const Error e = errorOf([&] {
        if (result)
            (void)future.result();
        else
            future.waitForFinished();
    });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QVERIFY2(e.message().contains(QLatin1String("kickoffAndWait()")), qPrintable(e.message()));
    QVERIFY(!flow.isRunning());
    QCOMPARE(flow.kickoffAndWait(), Json(2));
    // A wait on another thread is a wait like any other: the flow's loop advances the run meanwhile.
    QFuture<Json> again = flow.kickoff();
    QFuture<Json> waited = QtConcurrent::run([again]() mutable { return again.result(); });
    QTRY_VERIFY_WITH_TIMEOUT(waited.isFinished(), 10000);
    QCOMPARE(waited.result(), Json(2));
}

void TestFlow::stopAndWaitEndsTheRunAtOnce()
{
    // Called on a running flow (not from a destructor): when it returns the run is over, reported
    // once; what its cancelled steps do later does not reach the flow, which runs again at once.
    Flow flow(QStringLiteral("Stopped"), offline());
    flow.stopAndWait(); // no run: nothing to do
    QSemaphore started;
    std::atomic_bool busyDone = false;
    QFuture<int> pending;
    flow.start("pending", [&pending]() { return pending = later(200, 1); });
    flow.start("busy", [&started, &busyDone]() {
        started.release();
        QThread::msleep(100);
        busyDone = true;
        return 2;
    });
    QSignalSpy failed(&flow, &Flow::flowFailed);
    QSignalSpy finished(&flow, &Flow::flowFinished);
    QSignalSpy stepFinished(&flow, &Flow::stepFinished);
    QSignalSpy cancelled(&flow, &Flow::stepCancelled);
    QFuture<Json> future = flow.kickoff();
    QVERIFY(started.tryAcquire(1, 10000));
    flow.stopAndWait();
    QVERIFY(busyDone);
    QVERIFY(!flow.isRunning());
    QVERIFY(future.isFinished());
    QVERIFY(pending.isCanceled());
    QCOMPARE(errorOf([&] { future.waitForFinished(); }).kind(), ErrorKind::Cancelled);
    QCOMPARE(failed.size(), 1);
    QCOMPARE(cancelled.size(), 2);
    QCOMPARE(flow.stepOutputs().size(), 0);

    // The next run is not disturbed by what is left of the stopped one (its timer fires meanwhile).
    flow.kickoff();
    QVERIFY(QTest::qWaitFor([&] { return !flow.isRunning(); }, 10000));
    QTest::qWait(300);
    QCOMPARE(failed.size(), 1);
    QCOMPARE(finished.size(), 1);
    QCOMPARE(cancelled.size(), 2);
    QCOMPARE(stepFinished.size(), 2);
}

void TestFlow::destroyingAFlowSkipsItsQueuedSteps()
{
    // One pool thread: "first" runs, "second" waits in the pool's queue. Destroying the flow does not
    // run "second" (on the destroying thread or anywhere): it never started, so it never will.
    QThreadPool pool;
    pool.setMaxThreadCount(1);
    FlowOptions options = offline();
    options.threadPool = &pool;
    auto flow = std::make_unique<Flow>(QStringLiteral("Queued"), options);
    Trace trace;
    QSemaphore started;
    std::atomic_bool destroying = false;
    flow->start("first", [&]() {
        trace.add("first");
        started.release();
        // Ends once the destructor has had (ample) time to cancel "second".
        while (!destroying)
            QThread::msleep(5);
        QThread::msleep(1000);
    });
    flow->start("second", logs(trace, "second"));
    QFuture<Json> future = flow->kickoff();
    QVERIFY(started.tryAcquire(1, 10000));
    destroying = true;
    flow.reset(); // waits for "first"
    pool.waitForDone();
    QCOMPARE(trace.list(), QStringList{"first"});
    QCOMPARE(errorOf([&] { future.waitForFinished(); }).kind(), ErrorKind::Cancelled);
}

void TestFlow::queuedStepsDoNotStartAfterAFailure()
{
    // One pool thread runs one of the two synchronous starts while the other waits in the queue; then
    // the asynchronous start fails. The queued one never starts, the running one is waited for and
    // its output dropped: nothing of them is recorded, saved or reported finished.
    QThreadPool pool;
    pool.setMaxThreadCount(1);
    auto persistence = std::make_shared<test::RecordingPersistence>();
    FlowOptions options = offline();
    options.threadPool = &pool;
    options.persistence = persistence;
    Flow flow(QStringLiteral("StopQueued"), options);
    Trace trace;
    QSemaphore release;
    const auto blocking = [&](const QString &name) {
        return [&trace, &release, name]() {
            trace.add(name);
            release.acquire();
            return name;
        };
    };
    auto failing = std::make_shared<QPromise<int>>();
    failing->start();
    flow.start("fail", [failing]() { return failing->future(); });
    flow.start("one", blocking(QStringLiteral("one")));
    flow.start("two", blocking(QStringLiteral("two")));
    // Once the run has stopped, both may go (two permits, so that a step that should not have
    // started cannot hang the test).
    QObject::connect(&flow, &Flow::stepFailed, &flow, [&release]() { QTimer::singleShot(0, [&release]() { release.release(2); }); });
    QSignalSpy finished(&flow, &Flow::stepFinished);
    QSignalSpy cancelled(&flow, &Flow::stepCancelled);
    QFuture<Json> future = flow.kickoff();
    QVERIFY(QTest::qWaitFor([&] { return trace.list().size() == 1; }, 10000));
    failing->setException(Error(ErrorKind::ServerError, QStringLiteral("the server answered 503")));
    failing->finish();
    QVERIFY(QTest::qWaitFor([&] { return future.isFinished(); }, 10000));
    pool.waitForDone();
    QCOMPARE(errorOf([&] { future.waitForFinished(); }).kind(), ErrorKind::ServerError);
    QCOMPARE(trace.list().size(), 1);
    QCOMPARE(finished.size(), 0);
    QCOMPARE(cancelled.size(), 2);
    QCOMPARE(flow.stepOutputs().size(), 0);
    QCOMPARE(persistence->savedSteps(), QStringList());
}

void TestFlow::outputArrivingAfterTheStopIsDropped()
{
    // "fail" and "ok" settle in one go, "fail" first: "ok"'s output reaches the flow after the run
    // stopped. It is dropped as cancelled, not recorded, saved or reported finished.
    auto persistence = std::make_shared<test::RecordingPersistence>();
    FlowOptions options = offline();
    options.persistence = persistence;
    Flow flow(QStringLiteral("LateOutput"), options);
    auto failing = std::make_shared<QPromise<int>>();
    auto ok = std::make_shared<QPromise<int>>();
    failing->start();
    ok->start();
    flow.start("fail", [failing]() { return failing->future(); });
    flow.start("ok", [ok]() { return ok->future(); });
    QSignalSpy finished(&flow, &Flow::stepFinished);
    QSignalSpy cancelled(&flow, &Flow::stepCancelled);
    QTimer::singleShot(20, [failing, ok]() {
        failing->setException(Error(ErrorKind::ServerError, QStringLiteral("the server answered 503")));
        failing->finish();
        ok->addResult(1);
        ok->finish();
    });
    QCOMPARE(errorOf([&] { flow.kickoffAndWait(); }).kind(), ErrorKind::ServerError);
    QCOMPARE(finished.size(), 0);
    QCOMPARE(cancelled.size(), 1);
    QCOMPARE(cancelled.at(0).at(0).toString(), QStringLiteral("ok"));
    QCOMPARE(flow.stepOutputs().size(), 0);
    QCOMPARE(persistence->savedSteps(), QStringList());
}

void TestFlow::misuseIsRefused()
{
    Flow flow(QStringLiteral("Misuse"), offline());
    QCOMPARE(errorOf([&] { flow.kickoff(); }).message(),
             QStringLiteral("Invalid flow definition (flow \"Misuse\"): it has no start step; add one with start(\"name\", ...)"));
    flow.start("begin", []() { return 1; });
    QVERIFY(errorOf([&] { flow.kickoff(Json::array({1})); }).message().contains(QLatin1String("must be a JSON object")));
    QVERIFY(errorOf([&] { Flow unnamed{QString()}; }).message().contains(QLatin1String("needs a name")));
    FlowOptions zero = offline();
    zero.maxStepCalls = 0;
    QVERIFY(errorOf([&] { Flow limited{QStringLiteral("x"), zero}; }).message().contains(QLatin1String("maxStepCalls")));
    // From another thread.
    QString fromThread;
    std::thread other([&] { fromThread = errorOf([&] { flow.kickoff(); }).message(); });
    other.join();
    QVERIFY2(fromThread.contains(QLatin1String("another thread")), qPrintable(fromThread));
}

QTEST_MAIN(TestFlow)
#include "test_flow.moc"
