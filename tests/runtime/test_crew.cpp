// Crew, Task and Agent on the event loop: sequential context passing, placeholders, tool loops with
// parallel calls, max_iter, guardrails (callable and LLM), structured output and its retry,
// hierarchical delegation, asynchronous tasks, output files, callbacks, retries of transient
// failures, timeouts, streaming, a provider failing mid-crew, events in order and paired,
// cancellation, a timer that keeps firing during a kickoff, and the construction checks. The LLM is
// the real `openai` plugin talking to a scripted server on loopback.

#include "crew_test_util.h"
#include "scripted_llm.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/runtime/crew.h>
#include <mneme/runtime/function_tool.h>

#include <QFile>
#include <QSignalSpy>
#include <QThread>
#include <QTimer>
#include <QtTest>
#include <optional>

using namespace mneme;
using namespace mneme::test;

namespace {

ScriptedReply text(const QString &content, int prompt = 11, int completion = 7)
{
    return ScriptedLlm::completion(content, prompt, completion);
}

QString systemOf(const Json &body) { return ScriptedLlm::messageOf(body, "system"); }
QString userOf(const Json &body) { return ScriptedLlm::messageOf(body, "user"); }

// The tool results of a request, in order.
QStringList toolResultsOf(const Json &body)
{
    QStringList out;
    for (const Json &m : body["messages"])
        if (m.value("role", std::string()) == "tool")
            out << QString::fromStdString(m["content"].get<std::string>());
    return out;
}

const Json kKeySchema = {{"type", "object"}, {"properties", {{"key", {{"type", "string"}}}}}, {"required", {"key"}}};

std::shared_ptr<Tool> lookupTool()
{
    return std::make_shared<FunctionTool>(QStringLiteral("lookup"), QStringLiteral("Looks a key up."), kKeySchema,
                                          FunctionTool::SyncFunction([](const Json &args) {
                                              return QStringLiteral("value-of-") + QString::fromStdString(args["key"].get<std::string>());
                                          }));
}

} // namespace

class TestCrew : public QObject
{
    Q_OBJECT

private:
    ScriptedLlm *m_llm = nullptr;
    std::shared_ptr<LlmProvider> m_provider;
    EventBus *m_bus = nullptr;

    std::shared_ptr<Agent> agent(const QString &role, AgentConfig extra = {})
    {
        extra.role = role;
        if (extra.goal.isEmpty())
            extra.goal = QStringLiteral("Do %1 work well.").arg(role);
        if (extra.backstory.isEmpty())
            extra.backstory = QStringLiteral("An experienced %1.").arg(role);
        if (!extra.llm.isSet())
            extra.llm = m_provider;
        return std::make_shared<Agent>(std::move(extra));
    }
    std::shared_ptr<Task> task(const QString &name, const std::shared_ptr<Agent> &by, TaskConfig extra = {})
    {
        extra.name = name;
        if (extra.description.isEmpty())
            extra.description = QStringLiteral("Do the %1 task.").arg(name);
        if (extra.expectedOutput.isEmpty())
            extra.expectedOutput = QStringLiteral("The %1 result.").arg(name);
        extra.agent = by;
        return std::make_shared<Task>(std::move(extra));
    }
    CrewConfig crewOf(std::vector<std::shared_ptr<Agent>> agents, std::vector<std::shared_ptr<Task>> tasks)
    {
        CrewConfig c;
        c.name = QStringLiteral("Test Crew");
        c.agents = std::move(agents);
        c.tasks = std::move(tasks);
        c.eventBus = m_bus;
        return c;
    }

private Q_SLOTS:
    void init()
    {
        m_llm = new ScriptedLlm;
        m_provider = m_llm->provider();
        m_bus = new EventBus;
    }
    void cleanup()
    {
        m_provider.reset();
        delete m_llm;
        delete m_bus;
    }

    void sequentialContextPassing()
    {
        m_llm->setFallback([](const Json &body) {
            const QString system = systemOf(body);
            if (system.contains(QLatin1String("You are Researcher")))
                return text(QStringLiteral("Findings: alpha and beta."));
            return text(QStringLiteral("Report: ") + userOf(body).section(QStringLiteral("Context from earlier tasks:\n"), 1));
        });
        auto researcher = agent(QStringLiteral("Researcher"));
        auto writer = agent(QStringLiteral("Writer"));
        auto research = task(QStringLiteral("research"), researcher);
        auto write = task(QStringLiteral("write"), writer);
        Crew crew(crewOf({researcher, writer}, {research, write}));
        QSignalSpy completed(&crew, &Crew::taskCompleted);

        const CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(out.tasksOutput.size(), size_t(2));
        QCOMPARE(out.tasksOutput[0].raw, QStringLiteral("Findings: alpha and beta."));
        QCOMPARE(out.tasksOutput[0].agent, QStringLiteral("Researcher"));
        QCOMPARE(out.raw, QStringLiteral("Report: Findings: alpha and beta."));
        QCOMPARE(out.tokenUsage.promptTokens, 22);
        QCOMPARE(out.tokenUsage.completionTokens, 14);
        QCOMPARE(out.llmRequests, 2);
        QCOMPARE(completed.count(), 2);
        QCOMPARE(write->output()->raw, out.raw);
        // The first task's prompt has no context section; the expected output is part of every prompt.
        const QList<Json> requests = m_llm->requests(QStringLiteral("(none)"));
        QVERIFY(!userOf(requests[0]).contains(QLatin1String("Context from earlier tasks")));
        QVERIFY(userOf(requests[0]).contains(QLatin1String("The research result.")));
        QVERIFY(systemOf(requests[1]).contains(QLatin1String("Do Writer work well.")));
    }

    void explicitAndEmptyContext()
    {
        m_llm->setFallback([](const Json &body) {
            const QString user = userOf(body);
            if (user.startsWith(QLatin1String("Do the one task")))
                return text(QStringLiteral("ONE"));
            if (user.startsWith(QLatin1String("Do the two task")))
                return text(QStringLiteral("TWO"));
            return text(QStringLiteral("done"));
        });
        auto a = agent(QStringLiteral("Analyst"));
        auto one = task(QStringLiteral("one"), a);
        auto two = task(QStringLiteral("two"), a);
        TaskConfig onlyOne;
        onlyOne.context = std::vector<std::shared_ptr<Task>>{one};
        auto three = task(QStringLiteral("three"), a, onlyOne);
        TaskConfig none;
        none.context = std::vector<std::shared_ptr<Task>>{};
        auto four = task(QStringLiteral("four"), a, none);
        auto five = task(QStringLiteral("five"), a);
        Crew crew(crewOf({a}, {one, two, three, four, five}));
        crew.kickoffAndWait();
        const QList<Json> r = m_llm->requests(QStringLiteral("(none)"));
        QCOMPARE(r.size(), 5);
        QVERIFY(userOf(r[2]).endsWith(QLatin1String("Context from earlier tasks:\nONE")));
        QVERIFY(!userOf(r[3]).contains(QLatin1String("Context from earlier tasks")));
        // Unset: every earlier output, in task order, separated.
        QVERIFY(userOf(r[4]).endsWith(QLatin1String("Context from earlier tasks:\nONE\n\n----------\n\nTWO\n\n----------\n\ndone\n\n----------\n\ndone")));
    }

    void placeholders()
    {
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("ok")); });
        AgentConfig cfg;
        cfg.goal = QStringLiteral("Cover {topic} for {audience}.");
        auto a = agent(QStringLiteral("{topic} Researcher"), cfg);
        TaskConfig t;
        t.description = QStringLiteral("Research {topic} in {year}. Keep JSON like {\"a\": 1} and { spaced } as is.");
        t.expectedOutput = QStringLiteral("A list about {topic}.");
        auto research = task(QStringLiteral("research"), a, t);
        Crew crew(crewOf({a}, {research}));

        const CrewOutput out = crew.kickoffAndWait(Json{{"topic", "AI agents"}, {"year", 2025}, {"audience", "engineers"}});
        const Json body = m_llm->requests(QStringLiteral("(none)")).last();
        QVERIFY(userOf(body).startsWith(QLatin1String("Research AI agents in 2025. Keep JSON like {\"a\": 1} and { spaced } as is.")));
        QVERIFY(userOf(body).contains(QLatin1String("A list about AI agents.")));
        QVERIFY(systemOf(body).contains(QLatin1String("You are AI agents Researcher.")));
        QVERIFY(systemOf(body).contains(QLatin1String("Cover AI agents for engineers.")));
        QCOMPARE(out.tasksOutput[0].description, QStringLiteral("Research AI agents in 2025. Keep JSON like {\"a\": 1} and { spaced } as is."));
        QCOMPARE(research->config().description, t.description); // the template is kept for the next kickoff

        // A missing input fails the kickoff before any request, naming the placeholder.
        const int before = m_llm->totalCalls();
        QFuture<CrewOutput> f = crew.kickoff(Json{{"topic", "x"}});
        QVERIFY(finish(f));
        const Error e = failureOf(f);
        QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        QVERIFY2(e.message().contains(QLatin1String("{audience}")) || e.message().contains(QLatin1String("{year}")), qPrintable(e.message()));
        QCOMPARE(m_llm->totalCalls(), before);

        // Without inputs nothing is filled in.
        crew.kickoffAndWait();
        QVERIFY(userOf(m_llm->requests(QStringLiteral("(none)")).last()).startsWith(QLatin1String("Research {topic} in {year}.")));
    }

    void toolLoopWithParallelCalls()
    {
        m_llm->on(QStringLiteral("lookup"), [](const Json &body) {
            if (!ScriptedLlm::hasToolResults(body))
                return ScriptedLlm::toolCallsReply({{QStringLiteral("lookup"), QStringLiteral(R"({"key":"a"})")},
                                                    {QStringLiteral("lookup"), QStringLiteral(R"({"key":"b"})")}});
            return text(QStringLiteral("Done: ") + toolResultsOf(body).join(QLatin1Char('|')));
        });
        AgentConfig cfg;
        cfg.tools = {lookupTool()};
        auto a = agent(QStringLiteral("Clerk"), cfg);
        auto t = task(QStringLiteral("look"), a);
        EventRecorder rec(m_bus);
        Crew crew(crewOf({a}, {t}));
        const CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(out.raw, QStringLiteral("Done: value-of-a|value-of-b"));
        QCOMPARE(out.tasksOutput[0].toolCalls.size(), size_t(2));
        QCOMPARE(out.tasksOutput[0].toolCalls[1].output, QStringLiteral("value-of-b"));
        QCOMPARE(out.llmRequests, 2);
        QCOMPARE(rec.ofType(events::kToolUsageStarted).size(), 2);
        QCOMPARE(rec.ofType(events::kToolUsageFinished).size(), 2);
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
    }

    // Two calls of one tool in one reply, the first slower: each finish closes its own start.
    void concurrentCallsOfOneToolPairByCallId()
    {
        m_llm->on(QStringLiteral("lookup"), [](const Json &body) {
            if (!ScriptedLlm::hasToolResults(body))
                return ScriptedLlm::toolCallsReply({{QStringLiteral("lookup"), QStringLiteral(R"({"key":"slow"})")},
                                                    {QStringLiteral("lookup"), QStringLiteral(R"({"key":"fast"})")}});
            return text(toolResultsOf(body).join(QLatin1Char('|')));
        });
        AgentConfig cfg;
        cfg.tools = {std::make_shared<FunctionTool>(QStringLiteral("lookup"), QStringLiteral("Looks a key up."), kKeySchema,
                                                    FunctionTool::SyncFunction([](const Json &args) {
                                                        const QString key = QString::fromStdString(args["key"].get<std::string>());
                                                        if (key == QLatin1String("slow"))
                                                            QThread::msleep(400);
                                                        return QStringLiteral("v-") + key;
                                                    }))};
        auto a = agent(QStringLiteral("Clerk"), cfg);
        Crew crew(crewOf({a}, {task(QStringLiteral("look"), a)}));
        EventRecorder rec(m_bus);
        QCOMPARE(crew.kickoffAndWait().raw, QStringLiteral("v-slow|v-fast"));
        QHash<QString, Event> starts;
        for (const Event &e : rec.ofType(events::kToolUsageStarted))
            starts.insert(e.id, e);
        const QList<Event> finished = rec.ofType(events::kToolUsageFinished);
        QCOMPARE(finished.size(), 2);
        QCOMPARE(finished[0].properties["output"], "v-fast"); // the fast one ends first
        for (const Event &f : finished) {
            const QString key = QString::fromStdString(f.properties["output"].get<std::string>()).mid(2);
            QVERIFY2(starts.value(f.parentId).properties["tool_args"].get<std::string>().find(key.toStdString()) != std::string::npos,
                     qPrintable(key));
        }
    }

    void taskToolsReplaceAgentTools()
    {
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("ok")); });
        m_llm->on(QStringLiteral("special"), [](const Json &) { return text(QStringLiteral("ok")); });
        AgentConfig cfg;
        cfg.tools = {lookupTool()};
        auto a = agent(QStringLiteral("Clerk"), cfg);
        TaskConfig t;
        t.tools = {std::make_shared<FunctionTool>(QStringLiteral("special"), QStringLiteral("Special."), kKeySchema,
                                                  FunctionTool::SyncFunction([](const Json &) { return QStringLiteral("x"); }))};
        Crew crew(crewOf({a}, {task(QStringLiteral("t"), a, t)}));
        crew.kickoffAndWait();
        QCOMPARE(ScriptedLlm::toolNamesOf(m_llm->requests(QStringLiteral("special")).last()), QStringList{QStringLiteral("special")});
    }

    void maxIterForcesFinalAnswer()
    {
        m_llm->on(QStringLiteral("lookup"), [](const Json &) {
            static std::atomic_int n{0};
            return ScriptedLlm::toolCallReply(QStringLiteral("lookup"), QStringLiteral(R"({"key":"k%1"})").arg(++n));
        });
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("forced answer")); });
        AgentConfig cfg;
        cfg.tools = {lookupTool()};
        cfg.maxIter = 2;
        auto a = agent(QStringLiteral("Looper"), cfg);
        Crew crew(crewOf({a}, {task(QStringLiteral("loop"), a)}));
        const CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(out.raw, QStringLiteral("forced answer"));
        QCOMPARE(m_llm->calls(QStringLiteral("lookup")), 2);
        QCOMPARE(m_llm->calls(QStringLiteral("(none)")), 1);
        QCOMPARE(out.llmRequests, 3);
    }

    void guardrailRetryThenPass()
    {
        m_llm->setFallback([](const Json &body) {
            return text(userOf(body).contains(QLatin1String("Cite a source.")) ? QStringLiteral("Answer, see [1].")
                                                                               : QStringLiteral("Plain answer."));
        });
        auto a = agent(QStringLiteral("Writer"));
        TaskConfig t;
        t.guardrails = {[](const TaskOutput &o) {
                            return o.raw.contains(QLatin1String("[1]")) ? GuardrailResult::pass()
                                                                        : GuardrailResult::fail(QStringLiteral("Cite a source."));
                        },
                        [](const TaskOutput &o) { return GuardrailResult::pass(o.raw.toUpper()); }};
        auto write = task(QStringLiteral("write"), a, t);
        Crew crew(crewOf({a}, {write}));
        const CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(out.raw, QStringLiteral("ANSWER, SEE [1]."));
        QCOMPARE(out.tasksOutput[0].attempts, 2);
        const QString retryPrompt = userOf(m_llm->requests(QStringLiteral("(none)")).last());
        QVERIFY(retryPrompt.contains(QLatin1String("Your previous attempt was not accepted")));
        QVERIFY(retryPrompt.contains(QLatin1String("Plain answer.")));
        QCOMPARE(out.llmRequests, 2);
    }

    void guardrailFinalFailure()
    {
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("never good")); });
        auto a = agent(QStringLiteral("Writer"));
        TaskConfig t;
        t.guardrailMaxRetries = 2;
        t.guardrails = {[](const TaskOutput &) -> GuardrailResult { throw std::runtime_error("too vague"); }};
        Crew crew(crewOf({a}, {task(QStringLiteral("write"), a, t)}));
        EventRecorder rec(m_bus);
        QFuture<CrewOutput> f = crew.kickoff();
        QVERIFY(finish(f));
        const Error e = failureOf(f);
        QCOMPARE(e.kind(), ErrorKind::GuardrailFailed);
        QVERIFY2(e.message().contains(QLatin1String("after 2 retries")) && e.message().contains(QLatin1String("too vague")),
                 qPrintable(e.message()));
        QCOMPARE(m_llm->calls(QStringLiteral("(none)")), 3);
        QCOMPARE(rec.ofType(events::kTaskFailed).size(), 1);
        QCOMPARE(rec.types().last(), QLatin1String(events::kCrewKickoffFailed));
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
    }

    void llmGuardrail()
    {
        m_llm->setFallback([](const Json &body) {
            return text(userOf(body).contains(QLatin1String("Add the numbers.")) ? QStringLiteral("Sales rose 12% to 4.1M.")
                                                                                 : QStringLiteral("Sales rose."));
        });
        m_llm->on(QStringLiteral("guardrail_verdict"), [](const Json &body) {
            const bool hasNumbers = userOf(body).contains(QLatin1String("12%"));
            return text(QString::fromStdString(
                Json{{"valid", hasNumbers}, {"feedback", hasNumbers ? "" : "Add the numbers."}}.dump()));
        });
        auto a = agent(QStringLiteral("Analyst"));
        TaskConfig t;
        t.guardrails = {Guardrail(QStringLiteral("The result gives figures."))};
        Crew crew(crewOf({a}, {task(QStringLiteral("report"), a, t)}));
        EventRecorder rec(m_bus);
        const CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(out.raw, QStringLiteral("Sales rose 12% to 4.1M."));
        QCOMPARE(m_llm->calls(QStringLiteral("guardrail_verdict")), 2);
        QVERIFY(m_llm->lastPrompt(QStringLiteral("guardrail_verdict")).contains(QLatin1String("The result gives figures.")));
        const QList<Event> verdicts = rec.ofType(events::kLlmGuardrailCompleted);
        QCOMPARE(verdicts.size(), 2);
        QCOMPARE(verdicts[0].properties["success"], false);
        QCOMPARE(verdicts[1].properties["success"], true);
        QCOMPARE(verdicts[1].properties["retry_count"], 1);
        QCOMPARE(out.llmRequests, 4);
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
    }

    void structuredOutput()
    {
        const Json schema = {{"type", "object"},
                             {"properties", {{"title", {{"type", "string"}}}, {"score", {{"type", "number"}}}}},
                             {"required", {"title", "score"}}};
        // An answer in a fence parses without any conversion call.
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("Here:\n```json\n{\"title\": \"A\", \"score\": 0.9}\n```")); });
        auto a = agent(QStringLiteral("Rater"));
        TaskConfig t;
        t.outputJson = schema;
        auto rate = task(QStringLiteral("rate"), a, t);
        Crew crew(crewOf({a}, {rate}));
        CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(out.tasksOutput[0].outputFormat, TaskOutput::Format::Json);
        QCOMPARE(out.json["score"], 0.9);
        QCOMPARE(m_llm->calls(QStringLiteral("task_output")), 0);
        QVERIFY(userOf(m_llm->requests(QStringLiteral("(none)")).last()).contains(QLatin1String("\"score\"")));

        // Prose the converter cannot turn into the schema: the agent is asked again, told why.
        m_llm->setFallback([](const Json &body) {
            return text(userOf(body).contains(QLatin1String("not JSON that follows the required schema"))
                            ? QStringLiteral("{\"title\": \"B\", \"score\": 2}")
                            : QStringLiteral("I would rate it highly."));
        });
        m_llm->onText(QStringLiteral("task_output"), QStringLiteral("Sorry, I cannot."));
        out = crew.kickoffAndWait();
        QCOMPARE(out.tasksOutput[0].attempts, 2);
        QCOMPARE(out.json, (Json{{"title", "B"}, {"score", 2}}));
        QVERIFY(m_llm->calls(QStringLiteral("task_output")) >= 1);

        // The converter fixes a near miss.
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("Title C, score 3")); });
        m_llm->onJson(QStringLiteral("task_output"), Json{{"title", "C"}, {"score", 3}});
        out = crew.kickoffAndWait();
        QCOMPARE(out.tasksOutput[0].attempts, 1);
        QCOMPARE(out.json["title"], "C");

        // Never valid: fails after the retries, naming the schema problem.
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("{\"title\": 5}")); });
        m_llm->onText(QStringLiteral("task_output"), QStringLiteral("no"));
        QFuture<CrewOutput> f = crew.kickoff();
        QVERIFY(finish(f));
        const Error e = failureOf(f);
        QCOMPARE(e.kind(), ErrorKind::GuardrailFailed);
        QVERIFY2(e.message().contains(QLatin1String("JSON schema")), qPrintable(e.message()));
    }

    void hierarchicalDelegation()
    {
        m_llm->on(QStringLiteral("delegate_work_to_coworker"), [](const Json &body) {
            if (!ScriptedLlm::hasToolResults(body))
                return ScriptedLlm::toolCallsReply(
                    {{QStringLiteral("delegate_work_to_coworker"),
                      QString::fromStdString(Json{{"task", "Find the facts"}, {"context", "about the launch"}, {"coworker", "\"researcher\""}}.dump())},
                     {QStringLiteral("ask_question_to_coworker"),
                      QStringLiteral(R"({"question":"Anything?","context":"","coworker":"Nobody"})")}});
            return text(QStringLiteral("Summary of ") + toolResultsOf(body).join(QStringLiteral(" / ")));
        });
        m_llm->setFallback([](const Json &body) {
            if (systemOf(body).contains(QLatin1String("You are Researcher")))
                return text(QStringLiteral("Facts: 1, 2."));
            return text(QStringLiteral("unexpected"));
        });
        auto researcher = agent(QStringLiteral("Researcher"));
        auto writer = agent(QStringLiteral("Writer"));
        TaskConfig t;
        t.description = QStringLiteral("Write about the launch.");
        t.expectedOutput = QStringLiteral("A summary.");
        auto job = std::make_shared<Task>(t);
        CrewConfig c = crewOf({researcher, writer}, {job});
        c.process = Process::Hierarchical;
        c.managerLlm = m_provider;
        Crew crew(c);
        QCOMPARE(crew.manager()->role(), QStringLiteral("Crew Manager"));
        EventRecorder rec(m_bus);
        const CrewOutput out = crew.kickoffAndWait();

        QVERIFY2(out.raw.startsWith(QLatin1String("Summary of Facts: 1, 2. / Error: there is no coworker \"Nobody\"")),
                 qPrintable(out.raw));
        QCOMPARE(out.tasksOutput[0].agent, QStringLiteral("Crew Manager"));
        QCOMPARE(out.llmRequests, 3); // manager twice, researcher once
        const Json coworkerRequest = m_llm->requests(QStringLiteral("(none)")).first();
        QVERIFY(userOf(coworkerRequest).startsWith(QLatin1String("Find the facts")));
        QVERIFY(userOf(coworkerRequest).contains(QLatin1String("about the launch")));
        const Json managerRequest = m_llm->requests(QStringLiteral("delegate_work_to_coworker")).first();
        QCOMPARE(ScriptedLlm::toolNamesOf(managerRequest),
                 (QStringList{QStringLiteral("delegate_work_to_coworker"), QStringLiteral("ask_question_to_coworker")}));
        QVERIFY(managerRequest.dump().find("Researcher, Writer") != std::string::npos);

        // The coworker's execution nests under the manager's.
        const QList<Event> runs = rec.ofType(events::kAgentExecutionStarted);
        QCOMPARE(runs.size(), 2);
        QCOMPARE(runs[0].properties["agent_role"], "Crew Manager");
        QCOMPARE(runs[1].properties["agent_role"], "Researcher");
        QCOMPARE(runs[1].parentId, runs[0].id);
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
    }

    void hierarchicalTaskAgentLimitsDelegation()
    {
        m_llm->on(QStringLiteral("delegate_work_to_coworker"), [](const Json &body) {
            if (!ScriptedLlm::hasToolResults(body))
                return ScriptedLlm::toolCallReply(QStringLiteral("delegate_work_to_coworker"),
                                                  QStringLiteral(R"({"task":"x","coworker":"Researcher"})"));
            return text(toolResultsOf(body).join(QString()));
        });
        auto researcher = agent(QStringLiteral("Researcher"));
        auto writer = agent(QStringLiteral("Writer"));
        CrewConfig c = crewOf({researcher, writer}, {task(QStringLiteral("write"), writer)});
        c.process = Process::Hierarchical;
        c.managerLlm = m_provider;
        Crew crew(c);
        const CrewOutput out = crew.kickoffAndWait();
        QVERIFY2(out.raw.contains(QLatin1String("no coworker \"Researcher\". Choose one of: Writer.")), qPrintable(out.raw));
    }

    void delegationInSequentialCrew()
    {
        m_llm->on(QStringLiteral("delegate_work_to_coworker"), [](const Json &body) {
            if (!ScriptedLlm::hasToolResults(body))
                return ScriptedLlm::toolCallReply(QStringLiteral("ask_question_to_coworker"),
                                                  QStringLiteral(R"({"question":"What year?","coworker":"Historian"})"));
            return text(QStringLiteral("It was ") + toolResultsOf(body).join(QString()));
        });
        m_llm->setFallback([](const Json &body) {
            return text(userOf(body).startsWith(QLatin1String("A coworker asks you: What year?")) ? QStringLiteral("1969")
                                                                                                  : QStringLiteral("?"));
        });
        AgentConfig cfg;
        cfg.allowDelegation = true;
        auto lead = agent(QStringLiteral("Lead"), cfg);
        auto historian = agent(QStringLiteral("Historian"));
        Crew crew(crewOf({lead, historian}, {task(QStringLiteral("ask"), lead)}));
        QCOMPARE(crew.kickoffAndWait().raw, QStringLiteral("It was 1969"));
    }

    void asyncTasksRunTogether()
    {
        QMutex mutex;
        QList<qint64> arrivals;
        QElapsedTimer clock;
        clock.start();
        m_llm->setFallback([&](const Json &body) {
            const QString user = userOf(body);
            ScriptedReply r;
            if (user.startsWith(QLatin1String("Do the a task"))) {
                r = text(QStringLiteral("A-out"));
                r.delayMs = 1500;
            } else if (user.startsWith(QLatin1String("Do the b task"))) {
                r = text(QStringLiteral("B-out"));
                r.delayMs = 1500;
            } else {
                r = text(user.section(QStringLiteral("Context from earlier tasks:\n"), 1));
            }
            QMutexLocker lock(&mutex);
            arrivals << clock.elapsed();
            return r;
        });
        auto x = agent(QStringLiteral("Worker"));
        TaskConfig async;
        async.asyncExecution = true;
        auto a = task(QStringLiteral("a"), x, async);
        auto b = task(QStringLiteral("b"), x, async);
        auto c = task(QStringLiteral("c"), x);
        Crew crew(crewOf({x}, {a, b, c}));
        const CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(out.raw, QStringLiteral("A-out\n\n----------\n\nB-out"));
        QCOMPARE(arrivals.size(), 3);
        // Each asynchronous reply takes 1.5 s: the second request comes long before the first reply, the
        // synchronous task's only after both replies.
        QVERIFY2(arrivals[1] - arrivals[0] < 1000, "the second asynchronous task did not start while the first ran");
        QVERIFY2(arrivals[2] - arrivals[1] >= 1000, "the synchronous task did not wait for the asynchronous ones");
    }

    void outputFiles()
    {
        TempStore tmp;
        m_llm->setFallback([](const Json &body) {
            return text(userOf(body).contains(QLatin1String("JSON schema")) ? QStringLiteral("{\"n\": 1}")
                                                                            : QStringLiteral("# Report\nBody."));
        });
        auto a = agent(QStringLiteral("Writer"));
        TaskConfig plain;
        plain.outputFile = tmp.dir() + QStringLiteral("/out/{name}/report.md");
        TaskConfig structured;
        structured.outputFile = tmp.dir() + QStringLiteral("/data.json");
        structured.outputJson = Json{{"type", "object"}, {"properties", {{"n", {{"type", "integer"}}}}}};
        Crew crew(crewOf({a}, {task(QStringLiteral("md"), a, plain), task(QStringLiteral("js"), a, structured)}));
        crew.kickoffAndWait(Json{{"name", "q3"}});
        QFile md(tmp.dir() + QStringLiteral("/out/q3/report.md"));
        QVERIFY(md.open(QIODevice::ReadOnly));
        QCOMPARE(md.readAll(), QByteArray("# Report\nBody."));
        QFile js(tmp.dir() + QStringLiteral("/data.json"));
        QVERIFY(js.open(QIODevice::ReadOnly));
        QCOMPARE(Json::parse(js.readAll().toStdString()), (Json{{"n", 1}}));

        // A file that cannot be written fails the task with a message naming it.
        TaskConfig bad;
        bad.outputFile = tmp.dir() + QStringLiteral("/data.json/inside.txt");
        Crew broken(crewOf({a}, {task(QStringLiteral("bad"), a, bad)}));
        QFuture<CrewOutput> f = broken.kickoff();
        QVERIFY(finish(f));
        const Error e = failureOf(f);
        QCOMPARE(e.kind(), ErrorKind::Storage);
        QVERIFY2(e.message().contains(QLatin1String("inside.txt")), qPrintable(e.message()));
    }

    void callbacks()
    {
        m_llm->on(QStringLiteral("lookup"), [](const Json &body) {
            if (!ScriptedLlm::hasToolResults(body))
                return ScriptedLlm::toolCallReply(QStringLiteral("lookup"), QStringLiteral(R"({"key":"z"})"));
            return text(QStringLiteral("final ") + userOf(body).section(QLatin1Char('\n'), 0, 0));
        });
        QStringList log;
        AgentConfig cfg;
        cfg.tools = {lookupTool()};
        cfg.stepCallback = [&log](const AgentStep &s) { log << (s.isFinal ? QStringLiteral("agent-step final") : QStringLiteral("agent-step tool")); };
        auto a = agent(QStringLiteral("Clerk"), cfg);
        TaskConfig t;
        t.description = QStringLiteral("Look {what} up.");
        t.callback = [&log](const TaskOutput &o) { log << QStringLiteral("task ") + o.raw; };
        CrewConfig c = crewOf({a}, {task(QStringLiteral("look"), a, t)});
        c.beforeKickoff = {[&log](const Json &in) {
            log << QStringLiteral("before");
            Json out = in;
            out["what"] = "everything";
            return out;
        }};
        c.afterKickoff = {[&log](const CrewOutput &o) {
            log << QStringLiteral("after");
            CrewOutput changed = o;
            changed.raw += QStringLiteral("!");
            return changed;
        }};
        c.taskCallback = [&log](const TaskOutput &) { log << QStringLiteral("crew task"); };
        c.stepCallback = [&log](const AgentStep &s) { log << (s.isFinal ? QStringLiteral("crew-step final") : QStringLiteral("crew-step tool")); };
        Crew crew(c);
        const CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(out.raw, QStringLiteral("final Look everything up.!"));
        QCOMPARE(log, (QStringList{QStringLiteral("before"), QStringLiteral("agent-step tool"), QStringLiteral("crew-step tool"),
                                   QStringLiteral("agent-step final"), QStringLiteral("crew-step final"),
                                   QStringLiteral("task final Look everything up."), QStringLiteral("crew task"),
                                   QStringLiteral("after")}));

        // A callback that throws fails the kickoff with its text.
        CrewConfig throwing = crewOf({a}, {task(QStringLiteral("t2"), a)});
        throwing.beforeKickoff = {[](const Json &) -> Json { throw Error(ErrorKind::InvalidArgument, QStringLiteral("no inputs today")); }};
        Crew refusing(throwing);
        QFuture<CrewOutput> f = refusing.kickoff();
        QVERIFY(finish(f));
        QCOMPARE(failureOf(f).message(), QStringLiteral("no inputs today"));
    }

    void transientFailureIsRetried()
    {
        m_llm->setFallback(sequence({ScriptedReply::json(R"({"error":{"message":"overloaded"}})", 503), text(QStringLiteral("fine"))}));
        auto a = agent(QStringLiteral("Worker"));
        Crew crew(crewOf({a}, {task(QStringLiteral("t"), a)}));
        EventRecorder rec(m_bus);
        QCOMPARE(crew.kickoffAndWait().raw, QStringLiteral("fine"));
        QCOMPARE(rec.ofType(events::kAgentExecutionCompleted).first().properties["attempts"], 2);
        QCOMPARE(rec.ofType(events::kLlmCallFailed).size(), 1);

        // Without retries the typed error fails the crew.
        m_llm->setFallback([](const Json &) { return ScriptedReply::json(R"({"error":{"message":"overloaded"}})", 503); });
        AgentConfig once;
        once.maxRetryLimit = 0;
        auto b = agent(QStringLiteral("Fragile"), once);
        Crew fragile(crewOf({b}, {task(QStringLiteral("t"), b)}));
        QFuture<CrewOutput> f = fragile.kickoff();
        QVERIFY(finish(f));
        QCOMPARE(failureOf(f).kind(), ErrorKind::ServerError);
    }

    // Blocking on the future of kickoff() on the crew's own thread stops the loop the kickoff needs:
    // the wait fails at once with an error naming kickoffAndWait(), and the crew can run again.
    void waitingForTheKickoffOnTheCrewsThreadFails_data()
    {
        QTest::addColumn<bool>("result"); // result(), else waitForFinished()
        QTest::newRow("result()") << true;
        QTest::newRow("waitForFinished()") << false;
    }
    void waitingForTheKickoffOnTheCrewsThreadFails()
    {
        QFETCH(bool, result);
        // The reply comes after the stopped kickoff has wound up, as in kickoffCancelled.
        m_llm->setFallback([](const Json &) {
            QThread::msleep(300);
            return text(QStringLiteral("done"));
        });
        auto a = agent(QStringLiteral("Worker"));
        Crew crew(crewOf({a}, {task(QStringLiteral("t"), a)}));
        QSignalSpy failed(&crew, &Crew::kickoffFailed);
        QFuture<CrewOutput> future = crew.kickoff();
        QTest::qWait(100); // the kickoff is under way, its request sent
        // Without the guard this wait never returns (the test then fails by its timeout).
        std::optional<Error> e;
        try {
            if (result)
                (void)future.result();
            else
                future.waitForFinished();
        } catch (const Error &error) {
            e = error;
        }
        QVERIFY2(e, "the wait did not fail");
        QCOMPARE(e->kind(), ErrorKind::InvalidArgument);
        QVERIFY2(e->message().contains(QLatin1String("kickoffAndWait()")), qPrintable(e->message()));
        QTRY_COMPARE(failed.size(), 1); // the stopped kickoff winds up on the crew's loop
        QTest::qWait(600);              // and its request's late reply is dropped
        QCOMPARE(crew.kickoffAndWait().raw, QStringLiteral("done"));
    }

    // Tokens of every LLM call count, those of an attempt that failed later included.
    void usageCountsEveryAttempt()
    {
        m_llm->on(QStringLiteral("lookup"), sequence({ScriptedLlm::toolCallReply(QStringLiteral("lookup"), QStringLiteral(R"({"key":"a"})")),
                                                      ScriptedReply::json(R"({"error":{"message":"overloaded"}})", 503),
                                                      text(QStringLiteral("done"))}));
        AgentConfig cfg;
        cfg.tools = {lookupTool()};
        auto a = agent(QStringLiteral("Clerk"), cfg);
        Crew crew(crewOf({a}, {task(QStringLiteral("t"), a)}));
        const CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(out.raw, QStringLiteral("done"));
        QCOMPARE(out.llmRequests, 2); // the first attempt's tool call and the answer
        QCOMPARE(out.tokenUsage.totalTokens(), 36);
    }

    void maxExecutionTime()
    {
        m_llm->setFallback([](const Json &) {
            ScriptedReply r = text(QStringLiteral("late"));
            r.delayMs = 4000;
            return r;
        });
        AgentConfig cfg;
        cfg.maxExecutionTime = 1;
        cfg.maxRetryLimit = 0;
        auto a = agent(QStringLiteral("Slow"), cfg);
        Crew crew(crewOf({a}, {task(QStringLiteral("slow"), a)}));
        QElapsedTimer clock;
        clock.start();
        QFuture<CrewOutput> f = crew.kickoff();
        QVERIFY(finish(f));
        QVERIFY(clock.elapsed() < 3500);
        const Error e = failureOf(f);
        QCOMPARE(e.kind(), ErrorKind::Timeout);
        QVERIFY2(e.message().contains(QLatin1String("maxExecutionTime of 1 s")), qPrintable(e.message()));
    }

    void streamingChunks()
    {
        m_llm->setFallback([](const Json &body) {
            if (!body.value("stream", false))
                return text(QStringLiteral("not streamed"));
            QList<QByteArray> events;
            for (const char *piece : {"Hel", "lo ", "world"})
                events << QByteArray("data: ") + QByteArray::fromStdString(Json{{"choices", {{{"index", 0}, {"delta", {{"content", piece}}}}}}}.dump()) + "\n\n";
            events << QByteArray("data: ") + QByteArray::fromStdString(Json{{"choices", {{{"index", 0}, {"delta", Json::object()}, {"finish_reason", "stop"}}}}, {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 3}}}}.dump()) + "\n\n";
            events << QByteArray("data: [DONE]\n\n");
            return ScriptedReply::sse(events, 20);
        });
        AgentConfig cfg;
        cfg.stream = true;
        auto a = agent(QStringLiteral("Speaker"), cfg);
        Crew crew(crewOf({a}, {task(QStringLiteral("say"), a)}));
        EventRecorder rec(m_bus);
        QCOMPARE(crew.kickoffAndWait().raw, QStringLiteral("Hello world"));
        const QList<Event> chunks = rec.ofType(events::kLlmStreamChunk);
        QCOMPARE(chunks.size(), 3);
        QCOMPARE(chunks[0].properties["chunk"], "Hel");
        QCOMPARE(chunks[2].properties["chunk"], "world");
        const Event call = rec.ofType(events::kLlmCallStarted).first();
        for (const Event &c : chunks)
            QCOMPARE(c.parentId, call.id);
        const QStringList types = rec.types();
        QVERIFY(types.lastIndexOf(QLatin1String(events::kLlmStreamChunk)) < types.indexOf(QLatin1String(events::kLlmCallCompleted)));
    }

    void providerFailureMidCrew()
    {
        m_llm->setFallback([](const Json &body) {
            if (systemOf(body).contains(QLatin1String("You are Second")))
                return ScriptedReply::json(R"({"error":{"message":"Incorrect API key provided: sk-test-secret-key"}})", 401);
            return text(QStringLiteral("first done"));
        });
        auto first = agent(QStringLiteral("First"));
        auto second = agent(QStringLiteral("Second"));
        auto third = agent(QStringLiteral("Third"));
        Crew crew(crewOf({first, second, third},
                         {task(QStringLiteral("one"), first), task(QStringLiteral("two"), second), task(QStringLiteral("three"), third)}));
        EventRecorder rec(m_bus);
        QSignalSpy failed(&crew, &Crew::kickoffFailed);
        QFuture<CrewOutput> f = crew.kickoff();
        QVERIFY(finish(f));
        const Error e = failureOf(f);
        QCOMPARE(e.kind(), ErrorKind::Authentication);
        QVERIFY(!e.message().contains(QLatin1String("sk-test-secret-key")));
        QCOMPARE(failed.count(), 1);
        QCOMPARE(m_llm->totalCalls(), 2); // the third task never started
        QCOMPARE(rec.types().last(), QLatin1String(events::kCrewKickoffFailed));
        QCOMPARE(rec.ofType(events::kTaskCompleted).size(), 1);
        QCOMPARE(rec.ofType(events::kTaskFailed).size(), 1);
        for (const Event &ev : rec.events())
            QVERIFY(!QString::fromStdString(ev.toJson().dump()).contains(QLatin1String("sk-test-secret-key")));
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
    }

    void eventsInOrderAndPaired()
    {
        m_llm->on(QStringLiteral("lookup"), [](const Json &body) {
            if (!ScriptedLlm::hasToolResults(body))
                return ScriptedLlm::toolCallReply(QStringLiteral("lookup"), QStringLiteral(R"({"key":"q"})"));
            return text(QStringLiteral("first"));
        });
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("second")); });
        AgentConfig cfg;
        cfg.tools = {lookupTool()};
        auto a = agent(QStringLiteral("Clerk"), cfg);
        auto b = agent(QStringLiteral("Writer"));
        auto one = task(QStringLiteral("one"), a);
        auto two = task(QStringLiteral("two"), b);
        Crew crew(crewOf({a, b}, {one, two}));
        EventRecorder rec(m_bus);
        crew.kickoffAndWait(Json{{"secret_input", "hunter2"}});

        QCOMPARE(rec.types(), (QStringList{
                                  "crew_kickoff_started",
                                  "task_started", "agent_execution_started",
                                  "llm_call_started", "llm_call_completed",
                                  "tool_usage_started", "tool_usage_finished",
                                  "llm_call_started", "llm_call_completed",
                                  "agent_execution_completed", "task_completed",
                                  "task_started", "agent_execution_started",
                                  "llm_call_started", "llm_call_completed",
                                  "agent_execution_completed", "task_completed",
                                  "crew_kickoff_completed"}));
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
        const QList<Event> ev = rec.events();
        QVERIFY(ev[0].parentId.isEmpty());
        QCOMPARE(ev[1].parentId, ev[0].id); // task under the kickoff
        QCOMPARE(ev[2].parentId, ev[1].id); // agent execution under the task
        QCOMPARE(ev[3].parentId, ev[2].id); // its LLM calls and tools under it
        QCOMPARE(ev[5].parentId, ev[2].id);
        QCOMPARE(ev[1].taskId, one->id());
        QCOMPARE(ev[2].agentId, a->id());
        QCOMPARE(ev[3].taskId, one->id());
        QCOMPARE(ev[11].taskId, two->id());
        QCOMPARE(ev[0].properties["input_keys"], Json::array({"secret_input"}));
        QVERIFY(ev[0].toJson().dump().find("hunter2") == std::string::npos);
        QCOMPARE(ev.last().properties["total_tokens"], 54);
    }

    void cancellation()
    {
        m_llm->setFallback([](const Json &) {
            ScriptedReply r = text(QStringLiteral("slow"));
            r.delayMs = 3000;
            return r;
        });
        auto a = agent(QStringLiteral("Worker"));
        Crew crew(crewOf({a}, {task(QStringLiteral("one"), a), task(QStringLiteral("two"), a)}));
        EventRecorder rec(m_bus);
        QFuture<CrewOutput> f = crew.kickoff();
        QTRY_COMPARE(m_llm->totalCalls(), 1);
        QElapsedTimer clock;
        clock.start();
        f.cancel();
        QVERIFY(finish(f));
        QVERIFY(f.isCanceled());
        QVERIFY(clock.elapsed() < 1500);
        QTest::qWait(300);
        QCOMPARE(m_llm->totalCalls(), 1);
        QVERIFY(rec.types().contains(QLatin1String(events::kCrewKickoffFailed)));
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));

        // Crew::cancel() stops every running kickoff.
        QFuture<CrewOutput> g = crew.kickoff();
        QTRY_COMPARE(m_llm->totalCalls(), 2);
        crew.cancel();
        QVERIFY(finish(g));
        QVERIFY(g.isCanceled());
    }

    // A slot may delete the crew, or cancel it, when it hears the kickoff ended: the outcome stands.
    void signalsComeAfterTheOutcome()
    {
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("ok")); });
        auto a = agent(QStringLiteral("Worker"));
        {
            auto crew = std::make_unique<Crew>(crewOf({a}, {task(QStringLiteral("t"), a)}));
            EventRecorder rec(m_bus);
            Crew *raw = crew.get();
            connect(raw, &Crew::kickoffCompleted, this, [&crew] { crew.reset(); });
            QFuture<CrewOutput> f = raw->kickoff();
            QVERIFY(finish(f));
            QVERIFY(!crew);
            QCOMPARE(f.result().raw, QStringLiteral("ok"));
            QCOMPARE(rec.ofType(events::kCrewKickoffFailed).size(), 0);
        }
        {
            Crew crew(crewOf({a}, {task(QStringLiteral("t"), a)}));
            EventRecorder rec(m_bus);
            connect(&crew, &Crew::kickoffCompleted, this, [&crew] { crew.cancel(); });
            QFuture<CrewOutput> f = crew.kickoff();
            QVERIFY(finish(f));
            QVERIFY(!f.isCanceled());
            QCOMPARE(rec.ofType(events::kCrewKickoffFailed).size(), 0);
        }
        {
            // A task callback that cancels the kickoff: the task ends once, cancelled.
            CrewConfig c = crewOf({a}, {task(QStringLiteral("t"), a)});
            Crew *self = nullptr;
            c.taskCallback = [&self](const TaskOutput &) { self->cancel(); };
            Crew crew(c);
            self = &crew;
            EventRecorder rec(m_bus);
            QFuture<CrewOutput> f = crew.kickoff();
            QVERIFY(finish(f));
            QVERIFY(f.isCanceled());
            QCOMPARE(rec.ofType(events::kTaskCompleted).size(), 0);
            QCOMPARE(rec.ofType(events::kTaskFailed).size(), 1);
            QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
        }
    }

    // Kicked off from another thread, the crew runs on its own thread's loop; the caller just waits.
    void kickoffFromAnotherThread()
    {
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("from afar")); });
        auto a = agent(QStringLiteral("Worker"));
        Crew crew(crewOf({a}, {task(QStringLiteral("t"), a)}));
        QString got;
        QThread *worker = QThread::create([&] { got = crew.kickoffAndWait().raw; });
        worker->start();
        QTRY_VERIFY_WITH_TIMEOUT(worker->isFinished(), 20000);
        delete worker;
        QCOMPARE(got, QStringLiteral("from afar"));
    }

    // An input must not lead a task's output file out of its folder.
    void outputFilePlaceholderCannotClimbOut()
    {
        TempStore tmp;
        auto a = agent(QStringLiteral("Writer"));
        TaskConfig t;
        t.outputFile = tmp.dir() + QStringLiteral("/reports/{name}.md");
        Crew crew(crewOf({a}, {task(QStringLiteral("t"), a, t)}));
        QFuture<CrewOutput> f = crew.kickoff(Json{{"name", "../../escaped"}});
        QVERIFY(finish(f));
        const Error e = failureOf(f);
        QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        QVERIFY2(e.message().contains(QLatin1String("\"..\"")), qPrintable(e.message()));
        QCOMPARE(m_llm->totalCalls(), 0);
    }

    // A coworker stops when the agent that delegated to it stops waiting (its maxExecutionTime).
    void coworkerStopsWithItsDelegator()
    {
        m_llm->on(QStringLiteral("delegate_work_to_coworker"), [](const Json &) {
            return ScriptedLlm::toolCallReply(QStringLiteral("delegate_work_to_coworker"),
                                              QStringLiteral(R"({"task":"Dig deep","coworker":"Digger"})"));
        });
        m_llm->setFallback([](const Json &) {
            ScriptedReply r = text(QStringLiteral("too late"));
            r.delayMs = 4000;
            return r;
        });
        AgentConfig boss;
        boss.maxExecutionTime = 1;
        boss.maxRetryLimit = 0;
        auto manager = agent(QStringLiteral("Boss"), boss);
        auto digger = agent(QStringLiteral("Digger"));
        TaskConfig find;
        find.description = QStringLiteral("Find it.");
        find.expectedOutput = QStringLiteral("It.");
        CrewConfig c = crewOf({digger}, {std::make_shared<Task>(find)});
        c.process = Process::Hierarchical;
        c.managerAgent = manager;
        Crew crew(c);
        EventRecorder rec(m_bus);
        QFuture<CrewOutput> f = crew.kickoff();
        QVERIFY(finish(f));
        QCOMPARE(failureOf(f).kind(), ErrorKind::Timeout);
        QTest::qWait(300);
        QCOMPARE(rec.types().last(), QLatin1String(events::kCrewKickoffFailed));
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
        const QList<Event> errors = rec.ofType(events::kAgentExecutionError);
        QCOMPARE(errors.size(), 2);
        QCOMPARE(errors[0].properties["agent_role"], "Digger"); // the coworker ends before its delegator
        QCOMPARE(m_llm->totalCalls(), 2);
    }

    void eventLoopStaysResponsive()
    {
        m_llm->setFallback([](const Json &) {
            ScriptedReply r = text(QStringLiteral("ok"));
            r.delayMs = 400;
            return r;
        });
        auto a = agent(QStringLiteral("Worker"));
        Crew crew(crewOf({a}, {task(QStringLiteral("one"), a), task(QStringLiteral("two"), a)}));
        int ticks = 0;
        QTimer timer;
        connect(&timer, &QTimer::timeout, this, [&ticks] { ++ticks; });
        timer.start(10);
        QFuture<CrewOutput> f = crew.kickoff();
        QVERIFY(!f.isFinished()); // kickoff returned at once
        QVERIFY(finish(f));
        QVERIFY2(ticks >= 20, qPrintable(QStringLiteral("the timer fired only %1 times").arg(ticks)));

        // The blocking variant runs the loop too.
        ticks = 0;
        crew.kickoffAndWait();
        QVERIFY2(ticks >= 20, qPrintable(QStringLiteral("the timer fired only %1 times").arg(ticks)));
    }

    void toolPluginThroughRegistry()
    {
        std::shared_ptr<Tool> calculator = PluginRegistry::instance().createTool(QStringLiteral("calculator"));
        m_llm->on(QStringLiteral("calculator"), [](const Json &body) {
            if (!ScriptedLlm::hasToolResults(body))
                return ScriptedLlm::toolCallReply(QStringLiteral("calculator"), QStringLiteral(R"({"expression":"2 * (3 + 4) ^ 2"})"));
            return text(QStringLiteral("The answer is ") + toolResultsOf(body).join(QString()));
        });
        AgentConfig cfg;
        cfg.tools = {calculator};
        auto a = agent(QStringLiteral("Accountant"), cfg);
        Crew crew(crewOf({a}, {task(QStringLiteral("sum"), a)}));
        QCOMPARE(crew.kickoffAndWait().raw, QStringLiteral("The answer is 98"));
    }

    void validation_data()
    {
        QTest::addColumn<int>("which");
        QTest::addColumn<QString>("expected");
        QTest::newRow("agent without role") << 0 << "needs a role";
        QTest::newRow("agent without goal") << 1 << "needs a goal";
        QTest::newRow("agent without backstory") << 2 << "needs a backstory";
        QTest::newRow("agent without llm") << 3 << "needs an LLM";
        QTest::newRow("agent maxIter 0") << 4 << "maxIter must be at least 1";
        QTest::newRow("agent duplicate tools") << 5 << "two tools named \"lookup\"";
        QTest::newRow("agent unknown provider") << 6 << "nosuchprovider";
        QTest::newRow("task without description") << 10 << "needs a description";
        QTest::newRow("task without expected output") << 11 << "needs an expected output";
        QTest::newRow("task output file with ..") << 12 << "\"..\"";
        QTest::newRow("task schema not an object") << 13 << "outputJson must be a JSON schema object";
        QTest::newRow("task duplicate tools") << 14 << "two tools named \"lookup\"";
        QTest::newRow("crew without tasks") << 20 << "has no tasks";
        QTest::newRow("sequential task without agent") << 21 << "has none: set TaskConfig::agent";
        QTest::newRow("hierarchical without manager") << 22 << "needs a manager";
        QTest::newRow("manager among agents") << 23 << "must not also be one of CrewConfig::agents";
        QTest::newRow("manager with tools") << 24 << "must have no tools";
        QTest::newRow("two async tasks at the end") << 25 << "ends with 2 asynchronous tasks";
        QTest::newRow("async context on concurrent async") << 26 << "runs at the same time";
        QTest::newRow("context on a later task") << 27 << "comes later";
        QTest::newRow("task listed twice") << 29 << "is listed twice";
        QTest::newRow("context outside the crew") << 30 << "not one of this crew's tasks";
        QTest::newRow("hierarchical without agents") << 31 << "no agents for its manager";
        QTest::newRow("task names the manager") << 32 << "names the manager as its agent";
    }

    void validation()
    {
        QFETCH(int, which);
        QFETCH(QString, expected);
        const Error e = errorOf([&] {
            AgentConfig ac;
            ac.role = QStringLiteral("R");
            ac.goal = QStringLiteral("G");
            ac.backstory = QStringLiteral("B");
            ac.llm = m_provider;
            switch (which) {
            case 0: ac.role.clear(); break;
            case 1: ac.goal.clear(); break;
            case 2: ac.backstory.clear(); break;
            case 3: ac.llm = LlmRef(); break;
            case 4: ac.maxIter = 0; break;
            case 5: ac.tools = {lookupTool(), lookupTool()}; break;
            case 6: ac.llm = LlmRef(Json{{"provider", "nosuchprovider"}, {"config", {{"model", "m"}}}}); break;
            default: break;
            }
            auto a = std::make_shared<Agent>(ac);
            TaskConfig tc;
            tc.description = QStringLiteral("D");
            tc.expectedOutput = QStringLiteral("E");
            tc.agent = a;
            switch (which) {
            case 10: tc.description.clear(); break;
            case 11: tc.expectedOutput = QStringLiteral("  "); break;
            case 12: tc.outputFile = QStringLiteral("reports/../../etc/x"); break;
            case 13: tc.outputJson = Json::array(); break;
            case 14: tc.tools = {lookupTool(), lookupTool()}; break;
            default: break;
            }
            auto t1 = std::make_shared<Task>(tc);
            auto t2 = std::make_shared<Task>(tc);
            CrewConfig cc = crewOf({a}, {t1, t2});
            TaskConfig async = tc;
            async.asyncExecution = true;
            AgentConfig mc = ac;
            mc.role = QStringLiteral("Boss");
            switch (which) {
            case 20: cc.tasks.clear(); break;
            case 21:
                tc.agent.reset();
                cc.tasks = {std::make_shared<Task>(tc)};
                break;
            case 22: cc.process = Process::Hierarchical; break;
            case 23:
                cc.process = Process::Hierarchical;
                cc.managerAgent = a;
                break;
            case 24:
                mc.tools = {lookupTool()};
                cc.process = Process::Hierarchical;
                cc.managerAgent = std::make_shared<Agent>(mc);
                break;
            case 25: cc.tasks = {t1, std::make_shared<Task>(async), std::make_shared<Task>(async)}; break;
            case 26: {
                auto first = std::make_shared<Task>(async);
                TaskConfig dependent = async;
                dependent.context = std::vector<std::shared_ptr<Task>>{first};
                cc.tasks = {first, std::make_shared<Task>(dependent), t1};
                break;
            }
            case 27: {
                TaskConfig early = tc;
                early.context = std::vector<std::shared_ptr<Task>>{t2};
                cc.tasks = {std::make_shared<Task>(early), t2};
                break;
            }
            case 29: cc.tasks = {t1, t1}; break;
            case 30: {
                TaskConfig outside = tc;
                outside.context = std::vector<std::shared_ptr<Task>>{std::make_shared<Task>(tc)};
                cc.tasks = {std::make_shared<Task>(outside)};
                break;
            }
            case 31:
                cc.process = Process::Hierarchical;
                cc.managerLlm = m_provider;
                cc.agents.clear();
                break;
            case 32: {
                auto boss = std::make_shared<Agent>(mc);
                TaskConfig bossTask = tc;
                bossTask.agent = boss;
                cc.process = Process::Hierarchical;
                cc.managerAgent = boss;
                cc.tasks = {std::make_shared<Task>(bossTask)};
                break;
            }
            default: break;
            }
            Crew crew(cc);
        });
        QVERIFY2(e.message().contains(expected), qPrintable(e.message()));
        QVERIFY(e.kind() == ErrorKind::InvalidArgument || e.kind() == ErrorKind::Plugin);
    }

    void kickoffInputsMustBeAnObject()
    {
        auto a = agent(QStringLiteral("Worker"));
        Crew crew(crewOf({a}, {task(QStringLiteral("t"), a)}));
        QFuture<CrewOutput> f = crew.kickoff(Json::array({1, 2}));
        QVERIFY(f.isFinished());
        QCOMPARE(failureOf(f).kind(), ErrorKind::InvalidArgument);
        QCOMPARE(m_llm->totalCalls(), 0);
    }

private:
    template<typename F>
    static Error errorOf(F &&f)
    {
        try {
            f();
        } catch (const Error &e) {
            return e;
        }
        return Error(ErrorKind::Internal, QStringLiteral("no error was raised"));
    }
};

QTEST_GUILESS_MAIN(TestCrew)
#include "test_crew.moc"
