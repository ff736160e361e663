// Memory in the crew's loop: the crew's memory root and LLM (case 41), the agent's save scope and the
// extraction blob (cases 20, 42), delegation transcripts skipped (21), the kickoff draining saves
// before it completes (46), resetMemories (47), memory events (48), recall injected into the prompt
// and a second run recalling what the first learned, the memory tools, read-only slices, private
// scopes, an agent's own memory, and memory failures that never fail a task. Real SQLite files, the
// real `openai` plugin against a scripted server.

#include "crew_test_util.h"
#include "fake_embedder.h"
#include "memory_test_util.h"
#include "scripted_llm.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/memory/memory.h>
#include <mneme/runtime/crew.h>
#include <mneme/runtime/memory_tools.h>

#include <QtTest>

using namespace mneme;
using namespace mneme::test;

namespace {

ScriptedReply text(const QString &content) { return ScriptedLlm::completion(content); }
QString userOf(const Json &body) { return ScriptedLlm::messageOf(body, "user"); }

// An embedder that takes its time, and logs when it has embedded a text it watches for.
class SlowEmbedder : public FakeEmbedder
{
public:
    SlowEmbedder(QStringList *log, QMutex *mutex) : m_log(log), m_mutex(mutex) {}
    std::vector<Embedding> embed(const QStringList &texts) override
    {
        if (texts.contains(QStringLiteral("saved from the callback"))) {
            QThread::msleep(400);
            QMutexLocker lock(m_mutex);
            *m_log << QStringLiteral("save-done");
        }
        return FakeEmbedder::embed(texts);
    }

private:
    QStringList *m_log;
    QMutex *m_mutex;
};

QStringList contentsOf(const QList<MemoryRecord> &records)
{
    QStringList out;
    for (const MemoryRecord &r : records)
        out << r.content;
    out.sort();
    return out;
}

} // namespace

class TestCrewMemory : public QObject
{
    Q_OBJECT

private:
    ScriptedLlm *m_llm = nullptr;
    std::shared_ptr<LlmProvider> m_provider;
    EventBus *m_bus = nullptr;
    TempStore *m_tmp = nullptr;

    MemoryConfig storeConfig(const QString &file = QStringLiteral("memory.db")) const
    {
        MemoryConfig c;
        c.storage = m_tmp->path(file).toStdString();
        return c;
    }
    std::shared_ptr<Agent> agent(const QString &role, MemoryRef memory = {})
    {
        AgentConfig c;
        c.role = role;
        c.goal = QStringLiteral("Do %1 work.").arg(role);
        c.backstory = QStringLiteral("A careful %1.").arg(role);
        c.llm = m_provider;
        c.memory = memory;
        return std::make_shared<Agent>(std::move(c));
    }
    std::shared_ptr<Task> task(const QString &description, const QString &expected, const std::shared_ptr<Agent> &by)
    {
        TaskConfig c;
        c.description = description;
        c.expectedOutput = expected;
        c.agent = by;
        return std::make_shared<Task>(std::move(c));
    }
    CrewConfig crewOf(const QString &name, std::vector<std::shared_ptr<Agent>> agents, std::vector<std::shared_ptr<Task>> tasks,
                      MemoryRef memory = true)
    {
        CrewConfig c;
        c.name = name;
        c.agents = std::move(agents);
        c.tasks = std::move(tasks);
        c.memory = memory;
        c.memoryConfig = storeConfig();
        c.eventBus = m_bus;
        return c;
    }
    // Agent turns (their first tool is search_memory when they have memory) answer `answer`; fact
    // extraction answers `facts`.
    void script(const QString &answer, const QStringList &facts)
    {
        m_llm->on(QLatin1String(MemoryTools::kSearchName), [answer](const Json &) { return text(answer); });
        m_llm->on(QStringLiteral("(none)"), [answer](const Json &) { return text(answer); });
        Json list = Json::array();
        for (const QString &f : facts)
            list.push_back(f.toStdString());
        m_llm->onJson(QStringLiteral("extracted_memories"), Json{{"memories", list}});
    }

private Q_SLOTS:
    void init()
    {
        m_llm = new ScriptedLlm;
        m_provider = m_llm->provider();
        m_bus = new EventBus;
        m_tmp = new TempStore;
    }
    void cleanup()
    {
        m_provider.reset();
        delete m_llm;
        delete m_bus;
        delete m_tmp;
    }

    // Case 41.
    void crewMemoryRootAndLlm()
    {
        auto a = agent(QStringLiteral("Researcher"));
        {
            Crew crew(crewOf(QStringLiteral("Research Crew"), {a}, {task(QStringLiteral("t"), QStringLiteral("e"), a)}));
            QVERIFY(crew.memory());
            QCOMPARE(crew.memory()->rootScope(), QStringLiteral("/crew/research-crew"));
            QCOMPARE(crew.memory()->llm().get(), a->llm().get());
        }
        {
            Crew crew(crewOf(QStringLiteral("My Awesome Crew #1!"), {a}, {task(QStringLiteral("t"), QStringLiteral("e"), a)}));
            QCOMPARE(crew.memory()->rootScope(), QStringLiteral("/crew/my-awesome-crew-1"));
        }
        {
            CrewConfig c = crewOf(QString(), {a}, {task(QStringLiteral("t"), QStringLiteral("e"), a)});
            auto chat = m_llm->provider();
            c.chatLlm = chat;
            Crew crew(c);
            QCOMPARE(crew.name(), QStringLiteral("crew"));
            QCOMPARE(crew.memory()->rootScope(), QStringLiteral("/crew/crew"));
            QCOMPARE(crew.memory()->llm().get(), chat.get());
        }
        {
            // The crew's embedder configuration is the built Memory's embedder.
            CrewConfig c = crewOf(QStringLiteral("Dims"), {a}, {task(QStringLiteral("t"), QStringLiteral("e"), a)});
            c.memoryConfig = storeConfig(QStringLiteral("dims.db"));
            c.embedder = Json{{"provider", "builtin"}, {"config", {{"dimension", 64}}}};
            Crew crew(c);
            QCOMPARE(crew.memory()->embedder().dimension(), 64);
        }
        {
            Memory mine(storeConfig(QStringLiteral("mine.db")));
            Crew crew(crewOf(QStringLiteral("Research Crew"), {a}, {task(QStringLiteral("t"), QStringLiteral("e"), a)}, &mine));
            QCOMPARE(crew.memory(), &mine);
            QVERIFY(mine.rootScope().isEmpty());
        }
        {
            CrewConfig c = crewOf(QStringLiteral("Off"), {a}, {task(QStringLiteral("t"), QStringLiteral("e"), a)}, MemoryRef());
            Crew crew(c);
            QVERIFY(!crew.memory());
        }
    }

    // Cases 20 and 42.
    void agentSavesExtractedFactsUnderItsRole_data()
    {
        QTest::addColumn<QString>("role");
        QTest::addColumn<QString>("scope");
        QTest::newRow("Researcher") << "Researcher"
                                    << "/crew/research-crew/agent/researcher";
        QTest::newRow("sanitised") << "Senior Research Analyst #1"
                                   << "/crew/research-crew/agent/senior-research-analyst-1";
    }

    void agentSavesExtractedFactsUnderItsRole()
    {
        QFETCH(QString, role);
        QFETCH(QString, scope);
        script(QStringLiteral("We found X and Y."), {QStringLiteral("Fact A."), QStringLiteral("Fact B.")});
        auto a = agent(role);
        Crew crew(crewOf(QStringLiteral("Research Crew"), {a}, {task(QStringLiteral("Do research"), QStringLiteral("A report"), a)}));
        crew.kickoffAndWait();
        QCOMPARE(m_llm->calls(QStringLiteral("extracted_memories")), 1);
        QVERIFY(m_llm->lastPrompt(QStringLiteral("extracted_memories"))
                    .contains(QStringLiteral("Task: Do research\nAgent: %1\nExpected result: A report\nResult: We found X and Y.").arg(role)));
        const QList<MemoryRecord> records = crew.memory()->listRecords(scope.mid(QStringLiteral("/crew/research-crew").size()));
        QCOMPARE(contentsOf(records), (QStringList{QStringLiteral("Fact A."), QStringLiteral("Fact B.")}));
        for (const MemoryRecord &r : records)
            QCOMPARE(r.scope, scope);
    }

    // Case 42: a Memory without a root scope gets no agent subtree.
    void noRootNoAgentScope()
    {
        script(QStringLiteral("We found X."), {QStringLiteral("Fact C.")});
        Memory mine(storeConfig(QStringLiteral("mine.db")));
        mine.setLlm(m_provider);
        auto a = agent(QStringLiteral("Researcher"));
        Crew crew(crewOf(QStringLiteral("Crew"), {a}, {task(QStringLiteral("Do research"), QStringLiteral("A report"), a)}, &mine));
        crew.kickoffAndWait();
        const QList<MemoryRecord> records = mine.listRecords();
        QCOMPARE(contentsOf(records), QStringList{QStringLiteral("Fact C.")});
        QVERIFY(!records.first().scope.contains(QLatin1String("/agent/")));
    }

    // Case 21.
    void delegationTranscriptIsNotSaved()
    {
        script(QStringLiteral("Thought: hand it over\nAction: delegate_work_to_coworker\nAction Input: {}"), {QStringLiteral("Nope.")});
        auto a = agent(QStringLiteral("Lead"));
        Crew crew(crewOf(QStringLiteral("Crew"), {a}, {task(QStringLiteral("Lead it"), QStringLiteral("Done"), a)}));
        crew.kickoffAndWait();
        QCOMPARE(m_llm->calls(QStringLiteral("extracted_memories")), 0);
        QCOMPARE(crew.memory()->info().recordCount, 0);
    }

    // Case 46, for the crew's memory and for an agent's own.
    void kickoffDrainsSavesBeforeCompleting_data()
    {
        QTest::addColumn<bool>("agentMemory");
        QTest::newRow("crew memory") << false;
        QTest::newRow("agent memory") << true;
    }

    void kickoffDrainsSavesBeforeCompleting()
    {
        QFETCH(bool, agentMemory);
        script(QStringLiteral("done"), {});
        QStringList log;
        QMutex mutex;
        Memory slow(storeConfig(QStringLiteral("slow.db")), PluginRegistry::instance().createStorage(QStringLiteral("sqlite"), Json{{"path", m_tmp->path(QStringLiteral("slow.db")).toStdString()}}),
                    std::make_shared<SlowEmbedder>(&log, &mutex));
        auto a = agentMemory ? agent(QStringLiteral("Worker"), &slow) : agent(QStringLiteral("Worker"));
        CrewConfig c = crewOf(QStringLiteral("Crew"), {a}, {task(QStringLiteral("Work"), QStringLiteral("Done"), a)},
                              agentMemory ? MemoryRef(false) : MemoryRef(&slow));
        c.taskCallback = [&slow](const TaskOutput &) {
            RememberOptions o;
            o.scope = QStringLiteral("/cb");
            o.importance = 0.5;
            o.categories = QStringList();
            slow.rememberMany({QStringLiteral("saved from the callback")}, o);
        };
        connect(
            m_bus, &EventBus::crewEvent, this, [&](const Event &e) {
                if (e.type == QLatin1String(events::kCrewKickoffCompleted)) {
                    QMutexLocker lock(&mutex);
                    log << QStringLiteral("kickoff-completed");
                }
            },
            Qt::DirectConnection);
        Crew crew(c);
        crew.kickoffAndWait();
        QCOMPARE(log, (QStringList{QStringLiteral("save-done"), QStringLiteral("kickoff-completed")}));
    }

    // Case 47 (Mneme resets what the crew's memory holds: its root's subtree, not the whole file).
    void resetMemories()
    {
        auto a = agent(QStringLiteral("Worker"));
        {
            Memory other(storeConfig());
            other.remember(QStringLiteral("kept"), fields(QStringLiteral("/other"), 0.5));
        }
        Crew crew(crewOf(QStringLiteral("X"), {a}, {task(QStringLiteral("t"), QStringLiteral("e"), a)}));
        crew.memory()->remember(QStringLiteral("crew fact"), fields(QStringLiteral("/a"), 0.5));
        QCOMPARE(crew.resetMemories(), 1);
        QCOMPARE(crew.memory()->info().recordCount, 0);
        {
            Memory whole(storeConfig());
            QCOMPARE(contentsOf(whole.listRecords()), QStringList{QStringLiteral("kept")});
            // A given Memory without a root is reset entirely.
            Crew given(crewOf(QStringLiteral("Y"), {a}, {task(QStringLiteral("t"), QStringLiteral("e"), a)}, &whole));
            QCOMPARE(given.resetMemories(), 1);
            QCOMPARE(whole.info().recordCount, 0);
            Crew sliced(crewOf(QStringLiteral("Z"), {a}, {task(QStringLiteral("t"), QStringLiteral("e"), a)},
                               whole.slice({QStringLiteral("/a")})));
            QCOMPARE(errorOf([&] { sliced.resetMemories(); }).kind(), ErrorKind::PermissionDenied);
        }
        Crew off(crewOf(QStringLiteral("W"), {a}, {task(QStringLiteral("t"), QStringLiteral("e"), a)}, MemoryRef()));
        QCOMPARE(errorOf([&] { off.resetMemories(); }).kind(), ErrorKind::InvalidArgument);
    }

    // Case 48, and how the memory events nest.
    void memoryEvents()
    {
        script(QStringLiteral("All done."), {QStringLiteral("Something learned.")});
        auto a = agent(QStringLiteral("Worker"));
        Crew crew(crewOf(QStringLiteral("Crew"), {a}, {task(QStringLiteral("Work"), QStringLiteral("Done"), a)}));
        EventRecorder rec(m_bus);
        crew.kickoffAndWait();
        for (const char *type : {events::kMemoryRetrievalStarted, events::kMemoryRetrievalCompleted, events::kMemoryQueryStarted,
                                 events::kMemoryQueryCompleted, events::kMemorySaveStarted, events::kMemorySaveCompleted})
            QVERIFY2(!rec.ofType(type).isEmpty(), type);
        const Event retrieval = rec.ofType(events::kMemoryRetrievalStarted).first();
        QCOMPARE(retrieval.parentId, rec.ofType(events::kAgentExecutionStarted).first().id);
        QCOMPARE(rec.ofType(events::kMemoryQueryStarted).first().parentId, retrieval.id);
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
        QCOMPARE(rec.types().last(), QLatin1String(events::kCrewKickoffCompleted));
    }

    // The example's promise: what one run learned, the next run recalls into the prompt.
    void secondRunRecallsWhatTheFirstLearned()
    {
        script(QStringLiteral("The launch is set for March 3 in Lisbon."), {QStringLiteral("The product launch is on March 3 in Lisbon.")});
        auto a = agent(QStringLiteral("Planner"));
        auto t = task(QStringLiteral("When and where is the product launch?"), QStringLiteral("The date and place"), a);
        Crew crew(crewOf(QStringLiteral("Launch"), {a}, {t}));
        crew.kickoffAndWait();
        QVERIFY(!userOf(m_llm->requests(QLatin1String(MemoryTools::kSearchName)).first()).contains(QLatin1String("Memories from earlier work")));
        crew.kickoffAndWait();
        const QString second = userOf(m_llm->requests(QLatin1String(MemoryTools::kSearchName)).last());
        QVERIFY2(second.contains(QLatin1String("# Memories from earlier work")), qPrintable(second));
        QVERIFY2(second.contains(QLatin1String("The product launch is on March 3 in Lisbon.")), qPrintable(second));
    }

    // Graph memory: the facts an agent saved feed the graph, and a later run's memory block shows the
    // relations of its task's entities.
    void graphMemoryShowsRelations()
    {
        script(QStringLiteral("Maria lives in Oslo."), {QStringLiteral("Maria lives in Oslo.")});
        auto a = agent(QStringLiteral("Planner"));
        auto t = task(QStringLiteral("Where does Maria live?"), QStringLiteral("The city"), a);
        CrewConfig c = crewOf(QStringLiteral("Graph"), {a}, {t});
        c.memoryConfig.graphMemory = true;
        c.memoryConfig.graphExtractor = QStringLiteral("offline");
        Crew crew(std::move(c));
        crew.kickoffAndWait();
        crew.kickoffAndWait();
        const QString second = userOf(m_llm->requests(QLatin1String(MemoryTools::kSearchName)).last());
        QVERIFY2(second.contains(QLatin1String("Known relations:")), qPrintable(second));
        QVERIFY2(second.contains(QLatin1String("- Maria -- lives_in -> Oslo (since ")), qPrintable(second));
    }

    // The crew's read barrier: a task recalls what the tasks before it stored, even while their fact
    // extraction is still on its way.
    void laterTaskRecallsWhatEarlierTasksStored()
    {
        m_llm->on(QLatin1String(MemoryTools::kSearchName), [](const Json &body) {
            return text(ScriptedLlm::messageOf(body, "system").contains(QLatin1String("You are Scout")) ? QStringLiteral("Found it.")
                                                                                                        : QStringLiteral("Used it."));
        });
        m_llm->on(QStringLiteral("extracted_memories"), [](const Json &body) {
            ScriptedReply r = text(QString::fromStdString(
                Json{{"memories", userOf(body).contains(QLatin1String("Agent: Scout")) ? Json::array({"The vault code is 4417."})
                                                                                       : Json::array()}}
                    .dump()));
            r.delayMs = 600;
            return r;
        });
        auto scout = agent(QStringLiteral("Scout"));
        auto user = agent(QStringLiteral("User"));
        TaskConfig second;
        second.description = QStringLiteral("What is the vault code?");
        second.expectedOutput = QStringLiteral("The code");
        second.agent = user;
        second.context = std::vector<std::shared_ptr<Task>>{};
        Crew crew(crewOf(QStringLiteral("Vault"), {scout, user},
                         {task(QStringLiteral("Find the vault code"), QStringLiteral("The code"), scout), std::make_shared<Task>(second)}));
        crew.kickoffAndWait();
        const QString prompt = userOf(m_llm->requests(QLatin1String(MemoryTools::kSearchName)).last());
        QVERIFY2(prompt.contains(QLatin1String("The vault code is 4417.")), qPrintable(prompt));
    }

    // A kickoff cancelled while a task's recall waits for earlier saves: the recall never runs.
    void cancelledKickoffDoesNotRecall()
    {
        m_llm->on(QLatin1String(MemoryTools::kSearchName), [](const Json &) { return text(QStringLiteral("Found it.")); });
        m_llm->on(QStringLiteral("extracted_memories"), [](const Json &) {
            ScriptedReply r = text(QStringLiteral("{\"memories\": [\"Something.\"]}"));
            r.delayMs = 1500;
            return r;
        });
        auto a = agent(QStringLiteral("Worker"));
        Crew crew(crewOf(QStringLiteral("Stop"), {a},
                         {task(QStringLiteral("First"), QStringLiteral("e"), a), task(QStringLiteral("Second"), QStringLiteral("e"), a)}));
        EventRecorder rec(m_bus);
        QFuture<CrewOutput> f = crew.kickoff();
        QTRY_COMPARE(rec.ofType(events::kTaskStarted).size(), 2);
        crew.cancel();
        QVERIFY(f.isCanceled());
        QTest::qWait(2000);                                              // the first task's extraction ends meanwhile
        QCOMPARE(rec.ofType(events::kMemoryRetrievalStarted).size(), 1); // the first task's only
        QCOMPARE(rec.ofType(events::kCrewKickoffFailed).size(), 1);
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
    }

    void memoryTools()
    {
        m_llm->on(QLatin1String(MemoryTools::kSearchName), [](const Json &body) {
            const QStringList results = [&] {
                QStringList r;
                for (const Json &m : body["messages"])
                    if (m.value("role", std::string()) == "tool")
                        r << QString::fromStdString(m["content"].get<std::string>());
                return r;
            }();
            if (results.isEmpty())
                return ScriptedLlm::toolCallsReply({{QLatin1String(MemoryTools::kSearchName), QStringLiteral(R"({"queries":["budget","nothing like this"]})")},
                                                    {QLatin1String(MemoryTools::kSaveName), QStringLiteral(R"({"contents":["The venue holds 300 people."]})")}});
            return text(results.join(QStringLiteral(" || ")));
        });
        m_llm->onJson(QStringLiteral("extracted_memories"), Json{{"memories", Json::array()}});
        auto a = agent(QStringLiteral("Planner"));
        Crew crew(crewOf(QStringLiteral("Tools"), {a}, {task(QStringLiteral("Plan"), QStringLiteral("A plan"), a)}));
        crew.memory()->remember(QStringLiteral("The budget is 5000 euros."), fields(QStringLiteral("/"), 0.5));
        const CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(ScriptedLlm::toolNamesOf(m_llm->requests(QLatin1String(MemoryTools::kSearchName)).first()),
                 (QStringList{QLatin1String(MemoryTools::kSearchName), QLatin1String(MemoryTools::kSaveName)}));
        QVERIFY2(out.raw.startsWith(QLatin1String("Memories found:\n- (score=")), qPrintable(out.raw));
        QVERIFY(out.raw.contains(QLatin1String("The budget is 5000 euros.")));
        QVERIFY2(out.raw.contains(QLatin1String("|| Saved to memory (scope=/crew/tools")), qPrintable(out.raw));
        QCOMPARE(crew.memory()->recall(QStringLiteral("venue capacity")).first().record.content, QStringLiteral("The venue holds 300 people."));
    }

    // A crew destroyed while a memory tool runs waits for the tool's recall before its memory goes.
    void destroyingTheCrewWaitsForARunningMemoryTool()
    {
        const QString longQuery = QStringLiteral("everything we ever wrote down about the venue, the catering, the "
                                                 "budget, the speakers, the schedule, the travel arrangements and the "
                                                 "sponsors of the conference, with every figure, name, address and date that we have");
        QVERIFY(longQuery.size() >= 200);
        m_llm->on(QLatin1String(MemoryTools::kSearchName), [longQuery](const Json &) {
            return ScriptedLlm::toolCallReply(QLatin1String(MemoryTools::kSearchName),
                                              QString::fromStdString(Json{{"queries", {longQuery.toStdString()}}}.dump()));
        });
        m_llm->on(QStringLiteral("query_analysis"), [](const Json &) {
            ScriptedReply r = text(QStringLiteral("{\"recall_queries\": [\"venue\"], \"complexity\": \"simple\"}"));
            r.delayMs = 800;
            return r;
        });
        auto a = agent(QStringLiteral("Planner"));
        auto crew = std::make_unique<Crew>(crewOf(QStringLiteral("Doomed"), {a}, {task(QStringLiteral("Plan"), QStringLiteral("A plan"), a)}));
        crew->memory()->remember(QStringLiteral("The venue holds 300 people."), fields(QStringLiteral("/"), 0.5));
        EventRecorder rec(m_bus);
        QFuture<CrewOutput> f = crew->kickoff();
        QTRY_VERIFY(!rec.ofType(events::kToolUsageStarted).isEmpty());
        QTRY_COMPARE(m_llm->calls(QStringLiteral("query_analysis")), 1);
        crew.reset(); // must wait for the tool's recall, then close the memory
        QVERIFY(f.isCanceled());
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
    }

    void readOnlySliceAndPrivateScope()
    {
        script(QStringLiteral("Noted."), {QStringLiteral("Alice prefers window seats.")});
        Memory shared(storeConfig());
        shared.setLlm(m_provider);
        shared.remember(QStringLiteral("Team rule: no meetings on Friday."), fields(QStringLiteral("/team"), 0.5));
        auto alice = agent(QStringLiteral("Alice"), shared.scope(QStringLiteral("/private/alice")));
        auto reader = agent(QStringLiteral("Reader"), shared.slice({QStringLiteral("/team")}));
        Crew crew(crewOf(QStringLiteral("Mixed"), {alice, reader},
                         {task(QStringLiteral("Note Alice's preference"), QStringLiteral("ok"), alice),
                          task(QStringLiteral("Read the team rules"), QStringLiteral("ok"), reader)},
                         MemoryRef()));
        crew.kickoffAndWait();
        const QList<Json> turns = m_llm->requests(QLatin1String(MemoryTools::kSearchName));
        QCOMPARE(turns.size(), 2);
        QCOMPARE(ScriptedLlm::toolNamesOf(turns[0]), (QStringList{QLatin1String(MemoryTools::kSearchName), QLatin1String(MemoryTools::kSaveName)}));
        QCOMPARE(ScriptedLlm::toolNamesOf(turns[1]), QStringList{QLatin1String(MemoryTools::kSearchName)});
        QVERIFY(userOf(turns[1]).contains(QLatin1String("no meetings on Friday")));
        QVERIFY(!userOf(turns[0]).contains(QLatin1String("no meetings on Friday"))); // outside Alice's scope
        QCOMPARE(m_llm->calls(QStringLiteral("extracted_memories")), 1);             // the reader saves nothing
        const QList<MemoryRecord> alices = shared.listRecords(QStringLiteral("/private/alice"));
        QCOMPARE(contentsOf(alices), QStringList{QStringLiteral("Alice prefers window seats.")});
        QCOMPARE(alices.first().scope, QStringLiteral("/private/alice/agent/alice"));
        QCOMPARE(shared.info(QStringLiteral("/team")).recordCount, 1);
    }

    void agentWithItsOwnMemory()
    {
        script(QStringLiteral("Mine."), {QStringLiteral("Own fact.")});
        AgentConfig c;
        c.role = QStringLiteral("Solo");
        c.goal = QStringLiteral("g");
        c.backstory = QStringLiteral("b");
        c.llm = m_provider;
        c.memory = MemoryRef::own(storeConfig(QStringLiteral("solo.db")));
        auto solo = std::make_shared<Agent>(c);
        QVERIFY(solo->ownMemory());
        QCOMPARE(solo->ownMemory()->llm().get(), solo->llm().get());
        Crew crew(crewOf(QStringLiteral("Crew"), {solo}, {task(QStringLiteral("Work"), QStringLiteral("Done"), solo)}));
        crew.kickoffAndWait();
        QCOMPARE(contentsOf(solo->ownMemory()->listRecords()), QStringList{QStringLiteral("Own fact.")});
        QCOMPARE(crew.memory()->info().recordCount, 0);
    }

    void memoryFailuresNeverFailTheTask()
    {
        script(QStringLiteral("Done anyway."), {QStringLiteral("A fact.")});
        auto broken = std::make_shared<FakeEmbedder>();
        Memory memory(storeConfig(QStringLiteral("broken.db")),
                      PluginRegistry::instance().createStorage(QStringLiteral("sqlite"), Json{{"path", m_tmp->path(QStringLiteral("broken.db")).toStdString()}}),
                      broken);
        memory.setLlm(m_provider);
        broken->failWith(QStringLiteral("embedding service down"));
        auto a = agent(QStringLiteral("Worker"));
        Crew crew(crewOf(QStringLiteral("Crew"), {a}, {task(QStringLiteral("Work"), QStringLiteral("Done"), a)}, &memory));
        EventRecorder rec(m_bus);
        const CrewOutput out = crew.kickoffAndWait();
        QCOMPARE(out.raw, QStringLiteral("Done anyway."));
        QCOMPARE(rec.ofType(events::kMemoryRetrievalFailed).size(), 1);
        QVERIFY(rec.ofType(events::kMemoryRetrievalFailed).first().properties["error"].get<std::string>().find("embedding service down") != std::string::npos);
        QVERIFY(!rec.ofType(events::kMemorySaveFailed).isEmpty());
        QCOMPARE(rec.types().last(), QLatin1String(events::kCrewKickoffCompleted));
    }

    // A provider that fails mid-crew loses none of the saves of the tasks that completed.
    void failedKickoffKeepsEarlierSaves()
    {
        m_llm->on(QLatin1String(MemoryTools::kSearchName), [](const Json &body) {
            if (ScriptedLlm::messageOf(body, "system").contains(QLatin1String("You are Second")))
                return ScriptedReply::json(R"({"error":{"message":"bad key"}})", 401);
            return text(QStringLiteral("First result."));
        });
        m_llm->onJson(QStringLiteral("extracted_memories"), Json{{"memories", {"The first task found this."}}});
        auto first = agent(QStringLiteral("First"));
        auto second = agent(QStringLiteral("Second"));
        Crew crew(crewOf(QStringLiteral("Crew"), {first, second},
                         {task(QStringLiteral("One"), QStringLiteral("e"), first), task(QStringLiteral("Two"), QStringLiteral("e"), second)}));
        QFuture<CrewOutput> f = crew.kickoff();
        QVERIFY(finish(f));
        QCOMPARE(failureOf(f).kind(), ErrorKind::Authentication);
        // Reported only after the save was written: no drain needed here.
        QCOMPARE(contentsOf(crew.memory()->listRecords(QStringLiteral("/agent/first"))), QStringList{QStringLiteral("The first task found this.")});
    }
};

QTEST_GUILESS_MAIN(TestCrewMemory)
#include "test_crew_memory.moc"
