// What a flow reports: its Qt signals in order with their arguments, and the same run on the
// runtime's EventBus: flow_* and method_execution_* events, each end paired with its start through
// its parent id, steps parented to the run, overlapping steps paired correctly, failures and
// cancellations closing their scopes, and the console trace reading them.

#include "flow_test_util.h"
#include "memory_test_util.h"
#include "temp_store.h"
#include <mneme/flows/flow.h>
#include <mneme/runtime/console_listener.h>
#include <mneme/runtime/event_bus.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QSemaphore>
#include <QSignalSpy>
#include <QtTest>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::later;
using mneme::test::TempStore;

namespace {

FlowOptions withBus(EventBus *bus)
{
    FlowOptions o = mneme::test::offline();
    o.eventBus = bus;
    return o;
}

QString text(const QJsonValue &v)
{
    const QString array = QString::fromUtf8(QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact));
    return array.mid(1).chopped(1);
}

// Every signal of a flow as one line, in emission order.
class SignalLog
{
public:
    explicit SignalLog(Flow &flow)
    {
        QObject::connect(&flow, &Flow::flowStarted, &m_context, [this](const QString &, const QJsonObject &inputs) {
            m_lines << QStringLiteral("flowStarted ") + text(inputs);
        });
        QObject::connect(&flow, &Flow::stepStarted, &m_context, [this](const QString &step, const QJsonValue &input) {
            m_lines << QStringLiteral("stepStarted %1 %2").arg(step, text(input));
        });
        QObject::connect(&flow, &Flow::stepFinished, &m_context,
                         [this](const QString &step, const QJsonValue &input, const QJsonValue &output, double ms) {
                             m_lines << QStringLiteral("stepFinished %1 %2 -> %3%4")
                                            .arg(step, text(input), text(output), ms >= 0 ? QString() : QStringLiteral(" (negative time)"));
                         });
        QObject::connect(&flow, &Flow::stepFailed, &m_context, [this](const QString &step, const QJsonValue &, const QString &error) {
            m_lines << QStringLiteral("stepFailed %1: %2").arg(step, error);
        });
        QObject::connect(&flow, &Flow::stepCancelled, &m_context,
                         [this](const QString &step) { m_lines << QStringLiteral("stepCancelled %1").arg(step); });
        QObject::connect(&flow, &Flow::routerLabelEmitted, &m_context, [this](const QString &router, const QString &label) {
            m_lines << QStringLiteral("routerLabelEmitted %1 %2").arg(router, label);
        });
        QObject::connect(&flow, &Flow::flowFinished, &m_context, [this](const QString &, const QJsonValue &result) {
            m_lines << QStringLiteral("flowFinished ") + text(result);
        });
        QObject::connect(&flow, &Flow::flowFailed, &m_context,
                         [this](const QString &, const QString &error) { m_lines << QStringLiteral("flowFailed ") + error; });
    }
    const QStringList &lines() const { return m_lines; }

private:
    QObject m_context;
    QStringList m_lines;
};

// The events of a bus, in publishing order.
class Events
{
public:
    explicit Events(EventBus &bus)
    {
        QObject::connect(&bus, &EventBus::eventPublished, &m_context, [this](const Event &e) { m_events << e; });
    }
    const QList<Event> &all() const { return m_events; }
    QStringList lines() const
    {
        QStringList out;
        for (const Event &e : m_events)
            out << (e.type + QLatin1Char(' ') + QString::fromStdString(e.properties.value("method_name", std::string()))).trimmed();
        return out;
    }
    const Event &byId(const QString &id) const
    {
        for (const Event &e : m_events) {
            if (e.id == id)
                return e;
        }
        static const Event none;
        return none;
    }
    const Event &find(const QString &type, const QString &method = {}) const
    {
        for (const Event &e : m_events) {
            if (e.type == type && (method.isEmpty() || e.properties.value("method_name", std::string()) == method.toStdString()))
                return e;
        }
        static const Event none;
        return none;
    }

private:
    QObject m_context;
    QList<Event> m_events;
};

// begin -> route (router: "ok") -> end.
void defineRouted(Flow &flow)
{
    flow.start("begin", [](const Json &inputs) { return inputs.value("n", 0) + 1; });
    flow.router("route", "begin", {"ok", "retry"}, []() { return QStringLiteral("ok"); });
    flow.listen("end", "ok", [](const QString &label) { return label + QStringLiteral("!"); });
}

} // namespace

class TestFlowEvents : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void signalsInOrder();
    void failureSignals();
    void busEventsPairUp();
    void overlappingStepsPairWithTheirOwnStarts();
    void failuresAndCancellationsCloseTheirScopes();
    void stoppingAndDestroyingCloseTheirScopes_data();
    void stoppingAndDestroyingCloseTheirScopes();
    void consoleTraceReadsFlowEvents();
    void builtInMemoryReportsToTheBus();
};

void TestFlowEvents::signalsInOrder()
{
    Flow flow(QStringLiteral("Signals"), mneme::test::offline());
    defineRouted(flow);
    SignalLog log(flow);
    flow.kickoffAndWait({{"n", 1}});
    QCOMPARE(log.lines(), (QStringList{
                              "flowStarted {\"n\":1}",
                              "stepStarted begin {\"n\":1}",
                              "stepFinished begin {\"n\":1} -> 2",
                              "stepStarted route 2",
                              "stepFinished route 2 -> \"ok\"",
                              "routerLabelEmitted route ok",
                              "stepStarted end \"ok\"",
                              "stepFinished end \"ok\" -> \"ok!\"",
                              "flowFinished \"ok!\"",
                          }));
}

void TestFlowEvents::failureSignals()
{
    Flow flow(QStringLiteral("Failing"), mneme::test::offline());
    flow.start("begin", []() { return 1; });
    flow.listen("boom", "begin", []() -> int { throw Error(ErrorKind::Timeout, QStringLiteral("no answer in 30 s")); });
    SignalLog log(flow);
    errorOf([&] { flow.kickoffAndWait(); });
    QCOMPARE(log.lines(), (QStringList{
                              "flowStarted {}",
                              "stepStarted begin {}",
                              "stepFinished begin {} -> 1",
                              "stepStarted boom 1",
                              "stepFailed boom: no answer in 30 s",
                              "flowFailed Flow \"Failing\" failed in step \"boom\": no answer in 30 s",
                          }));
}

void TestFlowEvents::busEventsPairUp()
{
    EventBus bus;
    Events events(bus);
    QSignalSpy family(&bus, &EventBus::flowEvent);
    Flow flow(QStringLiteral("Bus"), withBus(&bus));
    defineRouted(flow);
    flow.kickoffAndWait({{"n", 1}});

    QCOMPARE(events.lines(), (QStringList{
                                 "flow_started",
                                 "method_execution_started begin",
                                 "method_execution_finished begin",
                                 "method_execution_started route",
                                 "method_execution_finished route",
                                 "flow_router_label_emitted",
                                 "method_execution_started end",
                                 "method_execution_finished end",
                                 "flow_finished",
                             }));
    QCOMPARE(family.size(), events.all().size());
    QCOMPARE(bus.openScopes(), 0);

    const Event &started = events.find("flow_started");
    QCOMPARE(started.sourceType, QStringLiteral("flow"));
    QCOMPARE(started.properties["flow_name"], Json("Bus"));
    QCOMPARE(started.properties["flow_id"], Json(flow.stateId().toStdString()));
    QCOMPARE(started.properties["inputs"], (Json{{"n", 1}}));
    for (const Event &e : events.all()) {
        QCOMPARE(e.properties["flow_id"], Json(flow.stateId().toStdString()));
        if (e.type == QLatin1String("method_execution_started"))
            QCOMPARE(e.parentId, started.id);
        if (e.type == QLatin1String("method_execution_finished")) {
            const Event &start = events.byId(e.parentId);
            QCOMPARE(start.type, QStringLiteral("method_execution_started"));
            QCOMPARE(start.properties["method_name"], e.properties["method_name"]);
            QVERIFY(e.properties["duration_ms"].get<double>() >= 0);
            QVERIFY(e.properties["state"].contains("id"));
        }
    }
    const Event &routeStart = events.find("method_execution_started", "route");
    QCOMPARE(routeStart.properties["params"], Json(2));
    QCOMPARE(events.find("method_execution_finished", "route").properties["result"], Json("ok"));
    const Event &label = events.find("flow_router_label_emitted");
    QCOMPARE(label.parentId, routeStart.id);
    QCOMPARE(label.properties["router"], Json("route"));
    QCOMPARE(label.properties["label"], Json("ok"));
    const Event &finished = events.find("flow_finished");
    QCOMPARE(finished.parentId, started.id);
    QCOMPARE(finished.properties["result"], Json("ok!"));
}

void TestFlowEvents::overlappingStepsPairWithTheirOwnStarts()
{
    // Two asynchronous starts overlap and finish in the opposite order.
    EventBus bus;
    Events events(bus);
    Flow flow(QStringLiteral("Overlap"), withBus(&bus));
    flow.start("slow", []() { return later(80, QStringLiteral("slow")); });
    flow.start("fast", []() { return later(5, QStringLiteral("fast")); });
    flow.kickoffAndWait();
    QCOMPARE(events.lines(), (QStringList{"flow_started", "method_execution_started slow", "method_execution_started fast",
                                          "method_execution_finished fast", "method_execution_finished slow", "flow_finished"}));
    for (const QString step : {"slow", "fast"})
        QCOMPARE(events.find("method_execution_finished", step).parentId, events.find("method_execution_started", step).id);
    QCOMPARE(events.find("flow_finished").properties["result"], Json("slow"));
    QCOMPARE(bus.openScopes(), 0);
}

void TestFlowEvents::failuresAndCancellationsCloseTheirScopes()
{
    EventBus bus;
    Events events(bus);
    Flow flow(QStringLiteral("Closing"), withBus(&bus));
    flow.start("pending", []() { return later(5000, 1); });
    flow.start("broken", []() -> QFuture<int> {
        return later(10, 0).then([](int) -> int { throw Error(ErrorKind::ServerError, QStringLiteral("HTTP 500")); });
    });
    errorOf([&] { flow.kickoffAndWait(); });
    const Event &failed = events.find("method_execution_failed", "broken");
    QCOMPARE(failed.parentId, events.find("method_execution_started", "broken").id);
    QCOMPARE(failed.properties["error"], Json("HTTP 500"));
    const Event &cancelled = events.find("method_execution_failed", "pending");
    QCOMPARE(cancelled.parentId, events.find("method_execution_started", "pending").id);
    QCOMPARE(cancelled.properties["cancelled"], Json(true));
    const Event &flowFailed = events.find("flow_failed");
    QCOMPARE(flowFailed.parentId, events.find("flow_started").id);
    QCOMPARE(flowFailed.properties["error"], Json("Flow \"Closing\" failed in step \"broken\": HTTP 500"));
    QCOMPARE(events.lines().last(), QStringLiteral("flow_failed"));
    QCOMPARE(bus.openScopes(), 0);
}

void TestFlowEvents::stoppingAndDestroyingCloseTheirScopes_data()
{
    QTest::addColumn<bool>("destroy");
    QTest::addColumn<QString>("error");
    QTest::newRow("stopAndWait()") << false << "the run of flow \"Halted\" was stopped by stopAndWait() while it ran";
    QTest::newRow("destroyed") << true << "the flow \"Halted\" was destroyed while it ran";
}

void TestFlowEvents::stoppingAndDestroyingCloseTheirScopes()
{
    // A run ended by stopAndWait() or by destroying the flow reports like any stopped run: each step
    // in flight (one awaiting a future, one running on the pool) cancelled, then the run failed.
    QFETCH(bool, destroy);
    QFETCH(QString, error);
    EventBus bus;
    Events events(bus);
    auto flow = std::make_unique<Flow>(QStringLiteral("Halted"), withBus(&bus));
    QSemaphore started;
    flow->start("pending", []() { return later(5000, 1); });
    flow->start("busy", [&started]() {
        started.release();
        QThread::msleep(50);
        return 2;
    });
    SignalLog log(*flow);
    flow->kickoff();
    QVERIFY(started.tryAcquire(1, 10000));
    if (destroy) {
        flow.reset();
    } else {
        flow->stopAndWait();
    }
    QCOMPARE(events.lines(), (QStringList{"flow_started", "method_execution_started pending", "method_execution_started busy",
                                          "method_execution_failed pending", "method_execution_failed busy", "flow_failed"}));
    for (const QString step : {"pending", "busy"}) {
        const Event &cancelled = events.find("method_execution_failed", step);
        QCOMPARE(cancelled.parentId, events.find("method_execution_started", step).id);
        QCOMPARE(cancelled.properties["cancelled"], Json(true));
        QCOMPARE(cancelled.properties["error"], Json(QStringLiteral("the run stopped: %1").arg(error).toStdString()));
    }
    const Event &failed = events.find("flow_failed");
    QCOMPARE(failed.parentId, events.find("flow_started").id);
    QCOMPARE(failed.properties["error"], Json(error.toStdString()));
    QCOMPARE(log.lines(), (QStringList{"flowStarted {}", "stepStarted pending {}", "stepStarted busy {}", "stepCancelled pending",
                                       "stepCancelled busy", "flowFailed " + error}));
}

void TestFlowEvents::consoleTraceReadsFlowEvents()
{
    EventBus bus;
    QString trace;
    ConsoleListener console(&bus, &trace);
    Flow flow(QStringLiteral("Console"), withBus(&bus));
    defineRouted(flow);
    flow.kickoffAndWait();
    const QStringList lines = trace.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 9);
    QVERIFY2(lines.at(1).contains(QLatin1String("  method_execution_started")), qPrintable(trace)); // nested under the run
    QVERIFY2(lines.at(2).contains(QLatin1String("method_execution_finished")) && lines.at(2).contains(QLatin1String(" ms)")),
             qPrintable(trace));
    QVERIFY2(lines.last().contains(QLatin1String("flow_finished")) && lines.last().contains(QLatin1String(" ms)")), qPrintable(trace));
}

void TestFlowEvents::builtInMemoryReportsToTheBus()
{
    TempStore dir;
    EventBus bus;
    Events events(bus);
    FlowOptions options;
    options.eventBus = &bus;
    options.memoryConfig.storage = Json{{"provider", "sqlite"}, {"config", {{"path", dir.path().toStdString()}}}};
    Flow flow(QStringLiteral("Remembering"), options);
    flow.start("note", [&flow]() { flow.remember(QStringLiteral("The build takes six minutes."), test::fields(QStringLiteral("/ci"))); });
    flow.kickoffAndWait();
    const Event &saved = events.find("memory_save_completed");
    QCOMPARE(saved.sourceType, QStringLiteral("unified_memory"));
    QCOMPARE(saved.parentId, events.find("memory_save_started").id);
    QCOMPARE(saved.properties["value"], Json("The build takes six minutes."));
}

QTEST_MAIN(TestFlowEvents)
#include "test_flow_events.moc"
