// MCP servers in a crew: their tools in the agents' tool loop, the servers' processes starting with
// a kickoff and stopping with it (on completion, failure and cancellation), and servers that die or
// write garbage mid-call turning into tool errors the agent sees.

#include "crew_test_util.h"
#include "mcp_test_util.h"
#include "scripted_llm.h"
#include <mneme/core/error.h>
#include <mneme/runtime/agent_chat.h>
#include <mneme/runtime/crew.h>
#include <mneme/runtime/function_tool.h>

#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace mneme;
using namespace mneme::test;

namespace {

QStringList toolResultsOf(const Json &body)
{
    QStringList out;
    for (const Json &m : body["messages"])
        if (m.value("role", std::string()) == "tool")
            out << QString::fromStdString(m["content"].get<std::string>());
    return out;
}

// A model that calls `tool` with `arguments` once, then answers "Saw: <the tool results>".
ScriptedLlm::Responder callsOnce(const QString &tool, const QString &arguments)
{
    return [tool, arguments](const Json &body) {
        if (!ScriptedLlm::hasToolResults(body))
            return ScriptedLlm::toolCallsReply({{tool, arguments}});
        return ScriptedLlm::completion(QStringLiteral("Saw: ") + toolResultsOf(body).join(QLatin1Char('|')));
    };
}

McpServerConfig fixture(const QString &name, const QStringList &tools, const QStringList &extra = {})
{
    McpServerConfig c = McpServerConfig::stdio(name, nodeProgram(), QStringList{fixtureServer()} + extra);
    c.tools = tools;
    return c;
}

} // namespace

class TestCrewMcp : public QObject
{
    Q_OBJECT

private:
    ScriptedLlm *m_llm = nullptr;
    std::shared_ptr<LlmProvider> m_provider;
    EventBus *m_bus = nullptr;
    QTemporaryDir *m_dir = nullptr;

    QString pidFile(const QString &name) const { return m_dir->filePath(name + QStringLiteral(".pid")); }

    std::shared_ptr<Agent> agent(const QString &role, std::vector<McpServerConfig> servers = {},
                                 std::vector<std::shared_ptr<Tool>> tools = {})
    {
        AgentConfig c;
        c.role = role;
        c.goal = QStringLiteral("Do %1 work well.").arg(role);
        c.backstory = QStringLiteral("An experienced %1.").arg(role);
        c.llm = m_provider;
        c.mcpServers = std::move(servers);
        c.tools = std::move(tools);
        return std::make_shared<Agent>(std::move(c));
    }
    std::shared_ptr<Task> task(const QString &name, const std::shared_ptr<Agent> &by)
    {
        TaskConfig c;
        c.name = name;
        c.description = QStringLiteral("Do the %1 task.").arg(name);
        c.expectedOutput = QStringLiteral("The %1 result.").arg(name);
        c.agent = by;
        return std::make_shared<Task>(std::move(c));
    }
    CrewConfig crewOf(std::vector<std::shared_ptr<Agent>> agents, std::vector<std::shared_ptr<Task>> tasks)
    {
        CrewConfig c;
        c.name = QStringLiteral("MCP Crew");
        c.agents = std::move(agents);
        c.tasks = std::move(tasks);
        c.eventBus = m_bus;
        return c;
    }

private Q_SLOTS:
    void initTestCase()
    {
        const QString problem = nodeSetupProblem();
        if (!problem.isEmpty())
            QFAIL(qPrintable(problem));
    }
    void init()
    {
        m_llm = new ScriptedLlm;
        m_provider = m_llm->provider();
        m_bus = new EventBus;
        m_dir = new QTemporaryDir;
    }
    void cleanup()
    {
        m_provider.reset();
        delete m_llm;
        delete m_bus;
        delete m_dir;
    }

    void agentUsesServerToolsAndTheServerStopsWithTheKickoff()
    {
        m_llm->setFallback(callsOnce(QStringLiteral("echo"), QStringLiteral(R"({"text":"hi"})")));
        auto a = agent(QStringLiteral("Clerk"), {fixture(QStringLiteral("fx"), {QStringLiteral("echo")},
                                                         {QStringLiteral("--pid-file"), pidFile(QStringLiteral("fx"))})});
        Crew crew(crewOf({a}, {task(QStringLiteral("look"), a)}));
        EventRecorder rec(m_bus);
        const CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(out.raw, QStringLiteral("Saw: echo: hi"));
        QCOMPARE(out.tasksOutput[0].toolCalls.size(), size_t(1));
        QCOMPARE(out.tasksOutput[0].toolCalls[0].name, QStringLiteral("echo"));
        // The model was offered the server's tool with its schema.
        const Json first = m_llm->requests(QStringLiteral("echo")).front();
        QCOMPARE(ScriptedLlm::toolNamesOf(first), QStringList{QStringLiteral("echo")});
        // The server was started for the kickoff and has exited by the time it reports.
        const qint64 pid = readPid(pidFile(QStringLiteral("fx")), 1000);
        QVERIFY(pid > 0);
        QVERIFY(!processExists(pid));
        const QList<Event> started = rec.ofType(events::kMcpConnectionStarted);
        const QList<Event> completed = rec.ofType(events::kMcpConnectionCompleted);
        QCOMPARE(started.size(), 1);
        QCOMPARE(started[0].properties["server_name"], "fx");
        QCOMPARE(started[0].properties["agent_role"], "Clerk");
        QCOMPARE(completed.size(), 1);
        QCOMPARE(completed[0].properties["tools"], Json::array({"echo"}));
        QCOMPARE(completed[0].properties["protocol_version"], "2025-11-25");
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));

        // A second kickoff starts a fresh process.
        QFile::remove(pidFile(QStringLiteral("fx")));
        QCOMPARE(crew.kickoffAndWait().raw, QStringLiteral("Saw: echo: hi"));
        const qint64 second = readPid(pidFile(QStringLiteral("fx")), 1000);
        QVERIFY(second > 0 && second != pid);
        QVERIFY(!processExists(second));
    }

    void crewServerSharedByAgentsWithTheReferenceServer()
    {
        m_llm->setFallback([](const Json &body) {
            const QString role = ScriptedLlm::messageOf(body, "system").section(QLatin1Char('.'), 0, 0);
            if (!ScriptedLlm::hasToolResults(body))
                return ScriptedLlm::toolCallsReply({{QStringLiteral("echo"), QStringLiteral(R"({"message":"%1"})").arg(role)}});
            return ScriptedLlm::completion(toolResultsOf(body).join(QLatin1Char('|')));
        });
        auto researcher = agent(QStringLiteral("Researcher"));
        auto writer = agent(QStringLiteral("Writer"));
        CrewConfig cfg = crewOf({researcher, writer}, {task(QStringLiteral("research"), researcher), task(QStringLiteral("write"), writer)});
        McpServerConfig everything = McpServerConfig::stdio(QStringLiteral("everything"), nodeProgram(),
                                                            {packageScript(QStringLiteral("server-everything")), QStringLiteral("stdio")});
        everything.tools = {QStringLiteral("echo"), QStringLiteral("get-sum")};
        cfg.mcpServers = {everything};
        Crew crew(cfg);
        EventRecorder rec(m_bus);
        const CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(out.tasksOutput[0].raw, QStringLiteral("Echo: You are Researcher"));
        QCOMPARE(out.tasksOutput[1].raw, QStringLiteral("Echo: You are Writer"));
        // One server for the crew, not one per agent.
        QCOMPARE(rec.ofType(events::kMcpConnectionStarted).size(), 1);
        QVERIFY(rec.ofType(events::kMcpConnectionStarted)[0].properties["agent_role"].is_null());
    }

    void cancelStopsTheServer()
    {
        m_llm->setFallback(callsOnce(QStringLiteral("sleep"), QStringLiteral(R"({"ms":60000})")));
        auto a = agent(QStringLiteral("Sleeper"), {fixture(QStringLiteral("fx"), {QStringLiteral("sleep")},
                                                           {QStringLiteral("--pid-file"), pidFile(QStringLiteral("fx"))})});
        Crew crew(crewOf({a}, {task(QStringLiteral("wait"), a)}));
        EventRecorder rec(m_bus);
        QFuture<CrewOutput> kickoff = crew.kickoff();
        QTRY_VERIFY_WITH_TIMEOUT(!rec.ofType(events::kToolUsageStarted).isEmpty(), 20000);
        const qint64 pid = readPid(pidFile(QStringLiteral("fx")));
        QVERIFY(processExists(pid));
        crew.cancel();
        QVERIFY(finish(kickoff, 5000));
        QVERIFY(kickoff.isCanceled());
        QTRY_VERIFY_WITH_TIMEOUT(!processExists(pid), 10000);
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
    }

    void failureStopsTheServer()
    {
        m_llm->failUnscripted(400);
        auto a = agent(QStringLiteral("Clerk"), {fixture(QStringLiteral("fx"), {QStringLiteral("echo")},
                                                         {QStringLiteral("--pid-file"), pidFile(QStringLiteral("fx"))})});
        Crew crew(crewOf({a}, {task(QStringLiteral("look"), a)}));
        try {
            crew.kickoffAndWait();
            QFAIL("the kickoff succeeded");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::BadRequest);
        }
        const qint64 pid = readPid(pidFile(QStringLiteral("fx")), 1000);
        QVERIFY(pid > 0);
        QVERIFY(!processExists(pid));
    }

    void destroyingTheCrewStopsTheServer()
    {
        m_llm->setFallback(callsOnce(QStringLiteral("sleep"), QStringLiteral(R"({"ms":60000})")));
        auto a = agent(QStringLiteral("Sleeper"), {fixture(QStringLiteral("fx"), {QStringLiteral("sleep")},
                                                           {QStringLiteral("--pid-file"), pidFile(QStringLiteral("fx"))})});
        qint64 pid = 0;
        {
            Crew crew(crewOf({a}, {task(QStringLiteral("wait"), a)}));
            EventRecorder rec(m_bus);
            crew.kickoff();
            QTRY_VERIFY_WITH_TIMEOUT(!rec.ofType(events::kToolUsageStarted).isEmpty(), 20000);
            pid = readPid(pidFile(QStringLiteral("fx")));
            QVERIFY(processExists(pid));
        }
        QTRY_VERIFY_WITH_TIMEOUT(!processExists(pid), 10000);
    }

    void serverDyingMidCallIsAToolError()
    {
        m_llm->setFallback(callsOnce(QStringLiteral("die"), QStringLiteral("{}")));
        auto a = agent(QStringLiteral("Clerk"), {fixture(QStringLiteral("fx"), {QStringLiteral("die"), QStringLiteral("echo")})});
        Crew crew(crewOf({a}, {task(QStringLiteral("look"), a)}));
        const CrewOutput out = crew.kickoffAndWait();
        QVERIFY2(out.raw.startsWith(QLatin1String("Saw: Error: ")) && out.raw.contains(QLatin1String("exited with status 7"))
                     && out.raw.contains(QLatin1String("dying on purpose")),
                 qPrintable(out.raw));
        QVERIFY(out.tasksOutput[0].toolCalls[0].isError);
    }

    void garbageMidCallIsAToolError()
    {
        m_llm->setFallback(callsOnce(QStringLiteral("garbage"), QStringLiteral("{}")));
        auto a = agent(QStringLiteral("Clerk"), {fixture(QStringLiteral("fx"), {QStringLiteral("garbage")})});
        Crew crew(crewOf({a}, {task(QStringLiteral("look"), a)}));
        const CrewOutput out = crew.kickoffAndWait();
        QVERIFY2(out.raw.contains(QLatin1String("not a JSON-RPC message")) && out.raw.contains(QLatin1String("this is not JSON at all")),
                 qPrintable(out.raw));
    }

    void serverThatCannotStartFailsTheKickoff()
    {
        auto a = agent(QStringLiteral("Clerk"), {fixture(QStringLiteral("broken"), {}, {QStringLiteral("--mode"), QStringLiteral("exit-at-start")})});
        Crew crew(crewOf({a}, {task(QStringLiteral("look"), a)}));
        EventRecorder rec(m_bus);
        try {
            crew.kickoffAndWait();
            QFAIL("the kickoff succeeded");
        } catch (const Error &e) {
            QVERIFY2(e.message().contains(QLatin1String("MCP server \"broken\" could not start"))
                         && e.message().contains(QLatin1String("configuration missing, giving up")),
                     qPrintable(e.message()));
        }
        QCOMPARE(m_llm->totalCalls(), 0);
        QCOMPARE(rec.ofType(events::kMcpConnectionFailed).size(), 1);
        QVERIFY(rec.ofType(events::kTaskStarted).isEmpty());
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
    }

    void sameToolNameFromTwoServers()
    {
        m_llm->setFallback(callsOnce(QStringLiteral("b_echo"), QStringLiteral(R"({"text":"second"})")));
        auto clash = agent(QStringLiteral("Clerk"), {fixture(QStringLiteral("a"), {QStringLiteral("echo")}),
                                                     fixture(QStringLiteral("b"), {QStringLiteral("echo")})});
        Crew refused(crewOf({clash}, {task(QStringLiteral("look"), clash)}));
        try {
            refused.kickoffAndWait();
            QFAIL("the kickoff succeeded");
        } catch (const Error &e) {
            QVERIFY2(e.message().contains(QLatin1String("two MCP tools named \"echo\"")) && e.message().contains(QLatin1String("tool_prefix")),
                     qPrintable(e.message()));
        }
        McpServerConfig prefixed = fixture(QStringLiteral("b"), {QStringLiteral("echo")});
        prefixed.toolPrefix = QStringLiteral("b_");
        auto a = agent(QStringLiteral("Clerk"), {fixture(QStringLiteral("a"), {QStringLiteral("echo")}), prefixed});
        Crew crew(crewOf({a}, {task(QStringLiteral("look"), a)}));
        QCOMPARE(crew.kickoffAndWait().raw, QStringLiteral("Saw: echo: second"));
    }

    void ownToolWinsOverAnMcpToolOfTheSameName()
    {
        m_llm->setFallback(callsOnce(QStringLiteral("echo"), QStringLiteral(R"({"text":"x"})")));
        auto mine = std::make_shared<FunctionTool>(QStringLiteral("echo"), QStringLiteral("Mine."), Json{{"type", "object"}},
                                                   FunctionTool::SyncFunction([](const Json &) { return QStringLiteral("my echo"); }));
        auto a = agent(QStringLiteral("Clerk"), {fixture(QStringLiteral("fx"), {QStringLiteral("echo")})}, {mine});
        Crew crew(crewOf({a}, {task(QStringLiteral("look"), a)}));
        QCOMPARE(crew.kickoffAndWait().raw, QStringLiteral("Saw: my echo"));
    }

    void hierarchicalManagerDelegatesToAgentsWithTheTools()
    {
        // The manager is offered the delegation tools only; the coworker it delegates to has the MCP tool.
        m_llm->setFallback([](const Json &body) {
            const QStringList tools = ScriptedLlm::toolNamesOf(body);
            const bool manager = ScriptedLlm::messageOf(body, "system").startsWith(QLatin1String("You are Crew Manager"));
            if (manager) {
                if (tools.contains(QStringLiteral("echo")))
                    return ScriptedLlm::completion(QStringLiteral("the manager was given an MCP tool"));
                if (!ScriptedLlm::hasToolResults(body))
                    return ScriptedLlm::toolCallsReply({{QStringLiteral("delegate_work_to_coworker"),
                                                         QStringLiteral(R"({"task":"echo hi","coworker":"Clerk"})")}});
                return ScriptedLlm::completion(QStringLiteral("Manager saw: ") + toolResultsOf(body).join(QLatin1Char('|')));
            }
            if (!ScriptedLlm::hasToolResults(body))
                return ScriptedLlm::toolCallsReply({{QStringLiteral("echo"), QStringLiteral(R"({"text":"from the clerk"})")}});
            return ScriptedLlm::completion(toolResultsOf(body).join(QLatin1Char('|')));
        });
        auto clerk = agent(QStringLiteral("Clerk"));
        CrewConfig cfg = crewOf({clerk}, {task(QStringLiteral("look"), nullptr)});
        cfg.process = Process::Hierarchical;
        cfg.managerLlm = m_provider;
        cfg.mcpServers = {fixture(QStringLiteral("fx"), {QStringLiteral("echo")})};
        Crew crew(cfg);
        QCOMPARE(crew.kickoffAndWait().raw, QStringLiteral("Manager saw: echo: from the clerk"));
    }

    void configurationIsChecked()
    {
        try {
            agent(QStringLiteral("Twice"), {fixture(QStringLiteral("fx"), {}), fixture(QStringLiteral("fx"), {})});
            QFAIL("accepted");
        } catch (const Error &e) {
            QVERIFY2(e.message().contains(QLatin1String("two MCP servers named \"fx\"")), qPrintable(e.message()));
        }
        try {
            agent(QStringLiteral("Nowhere"), {McpServerConfig::stdio(QStringLiteral("fx"), QString())});
            QFAIL("accepted");
        } catch (const Error &e) {
            QVERIFY2(e.message().startsWith(QLatin1String("Agent \"Nowhere\": MCP server \"fx\"")), qPrintable(e.message()));
        }
        auto worker = agent(QStringLiteral("Worker"));
        CrewConfig cfg = crewOf({worker}, {task(QStringLiteral("t"), worker)});
        cfg.process = Process::Hierarchical;
        cfg.managerAgent = agent(QStringLiteral("Boss"), {fixture(QStringLiteral("fx"), {})});
        try {
            Crew crew(cfg);
            QFAIL("accepted");
        } catch (const Error &e) {
            QVERIFY2(e.message().contains(QLatin1String("must have no MCP servers")), qPrintable(e.message()));
        }
    }

    void agentWithoutACrewRefusesItsServers()
    {
        // Only a crew's kickoff starts an agent's MCP servers: on its own or in a chat, the agent says so
        // instead of running without the tools it was given, and no server starts.
        m_llm->setFallback([](const Json &) { return ScriptedLlm::completion(QStringLiteral("ran without its servers")); });
        auto a = agent(QStringLiteral("Loner"), {fixture(QStringLiteral("fx"), {QStringLiteral("echo")},
                                                         {QStringLiteral("--pid-file"), pidFile(QStringLiteral("fx"))})});
        try {
            a->kickoffAndWait(QStringLiteral("echo hi"));
            QFAIL("Agent::kickoff ran an agent that has MCP servers");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
            QVERIFY2(e.message().startsWith(QLatin1String("Agent \"Loner\" has MCP servers")), qPrintable(e.message()));
            QVERIFY2(e.message().contains(QLatin1String("Agent::kickoff does not")), qPrintable(e.message()));
        }
        try {
            AgentChat chat(a);
            QFAIL("AgentChat took an agent that has MCP servers");
        } catch (const Error &e) {
            QVERIFY2(e.message().contains(QLatin1String("an AgentChat does not")), qPrintable(e.message()));
        }
        QCOMPARE(m_llm->totalCalls(), 0);
        QVERIFY(!QFileInfo::exists(pidFile(QStringLiteral("fx"))));
    }
};

QTEST_GUILESS_MAIN(TestCrewMcp)
#include "test_crew_mcp.moc"
