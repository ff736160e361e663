// Crews inside flows (issue 7, item 6): a step kicks off a real Crew and returns its
// QFuture<CrewOutput>; the flow waits for it on its own thread while a timer keeps firing, and the next
// step continues with the CrewOutput. The crew's events nest under the step's, a failing crew fails the
// step with the crew's typed error, and cancelling the flow cancels the crew. The LLM is the real
// `openai` plugin against a scripted server.

#include "crew_test_util.h"
#include "scripted_llm.h"
#include <mneme/core/error.h>
#include <mneme/flows/flow.h>
#include <mneme/runtime/crew.h>
#include <mneme/runtime/event_bus.h>

#include <QTimer>
#include <QtTest>

using namespace mneme;
using namespace mneme::test;

namespace {

ScriptedReply answer(const QString &text, int delayMs = 0)
{
    ScriptedReply r = ScriptedLlm::completion(text);
    r.delayMs = delayMs;
    return r;
}

} // namespace

class TestFlowCrew : public QObject
{
    Q_OBJECT

private:
    ScriptedLlm *m_llm = nullptr;
    EventBus *m_bus = nullptr;

    std::unique_ptr<Crew> crew()
    {
        AgentConfig a;
        a.role = QStringLiteral("Analyst");
        a.goal = QStringLiteral("Answer about {topic}.");
        a.backstory = QStringLiteral("Careful.");
        a.llm = m_llm->provider();
        auto analyst = std::make_shared<Agent>(a);
        TaskConfig t;
        t.description = QStringLiteral("Summarise {topic}.");
        t.expectedOutput = QStringLiteral("One sentence.");
        t.agent = analyst;
        CrewConfig c;
        c.name = QStringLiteral("Inner");
        c.agents = {analyst};
        c.tasks = {std::make_shared<Task>(t)};
        c.eventBus = m_bus;
        return std::make_unique<Crew>(c);
    }
    FlowOptions options() const
    {
        FlowOptions o;
        o.memory = false;
        o.eventBus = m_bus;
        return o;
    }

private Q_SLOTS:
    void init()
    {
        m_llm = new ScriptedLlm;
        m_bus = new EventBus;
    }
    void cleanup()
    {
        delete m_llm;
        delete m_bus;
    }

    void stepKicksOffACrewAndTheNextStepReadsItsOutput()
    {
        m_llm->setFallback([](const Json &body) {
            return answer(QStringLiteral("Summary of ") + ScriptedLlm::messageOf(body, "user").section(QLatin1Char('.'), 0, 0).mid(10),
                          300);
        });
        auto inner = crew();
        Flow flow(QStringLiteral("Outer"), options());
        flow.start("plan", [](const Json &inputs) { return Json{{"topic", inputs.value("subject", std::string("nothing"))}}; });
        flow.listen("research", "plan", [&inner](const Json &plan) { return inner->kickoff(plan); });
        flow.listen("publish", "research", [](const CrewOutput &out) {
            return QStringLiteral("%1 (%2 tokens)").arg(out.raw).arg(out.tokenUsage.totalTokens());
        });
        EventRecorder rec(m_bus);
        int ticks = 0;
        QTimer timer;
        connect(&timer, &QTimer::timeout, this, [&ticks] { ++ticks; });
        timer.start(10);
        QFuture<Json> f = flow.kickoff(Json{{"subject", "solar panels"}});
        QVERIFY(finish(f));
        QCOMPARE(f.result(), Json("Summary of solar panels (18 tokens)"));
        QVERIFY2(ticks >= 15, qPrintable(QStringLiteral("the timer fired only %1 times").arg(ticks)));

        // The crew's kickoff is a child of the step that started it, and everything pairs.
        const Event step = [&] {
            for (const Event &e : rec.ofType(events::kMethodExecutionStarted))
                if (e.properties["method_name"] == "research")
                    return e;
            return Event();
        }();
        QVERIFY(!step.id.isEmpty());
        QCOMPARE(rec.ofType(events::kCrewKickoffStarted).first().parentId, step.id);
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
        QCOMPARE(rec.types().last(), QLatin1String(events::kFlowFinished));
    }

    void failingCrewFailsTheStep()
    {
        m_llm->setFallback([](const Json &) { return ScriptedReply::json(R"({"error":{"message":"nope"}})", 401); });
        auto inner = crew();
        Flow flow(QStringLiteral("Outer"), options());
        flow.start("research", [&inner]() { return inner->kickoff(Json{{"topic", "x"}}); });
        flow.listen("publish", "research", [](const CrewOutput &out) { return out.raw; });
        QFuture<Json> f = flow.kickoff();
        QVERIFY(finish(f));
        const Error e = failureOf(f);
        QCOMPARE(e.kind(), ErrorKind::Authentication);
        QVERIFY2(e.message().contains(QLatin1String("step \"research\"")), qPrintable(e.message()));
    }

    void cancellingTheFlowCancelsTheCrew()
    {
        m_llm->setFallback([](const Json &) { return answer(QStringLiteral("late"), 3000); });
        auto inner = crew();
        Flow flow(QStringLiteral("Outer"), options());
        QFuture<CrewOutput> crewRun;
        flow.start("research", [&]() {
            crewRun = inner->kickoff(Json{{"topic", "x"}});
            return crewRun;
        });
        EventRecorder rec(m_bus);
        QFuture<Json> f = flow.kickoff();
        QTRY_COMPARE(m_llm->totalCalls(), 1);
        flow.cancel();
        QVERIFY(finish(f));
        QCOMPARE(failureOf(f).kind(), ErrorKind::Cancelled);
        QVERIFY(finish(crewRun));
        QVERIFY(crewRun.isCanceled());
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
    }
};

QTEST_GUILESS_MAIN(TestFlowCrew)
#include "test_flow_crew.moc"
