// EventBus and ConsoleListener: family routing, scope pairing (nested, out of order, mismatched),
// per-thread scope stacks, queued delivery across threads, Memory's and AgentExecutor's signals
// republished as events, and the console trace (indentation, durations, errors, no secrets).

#include "fake_embedder.h"
#include "memory_test_util.h"
#include "scripted_llm.h"
#include "temp_store.h"
#include <mneme/memory/memory.h>
#include <mneme/runtime/agent_executor.h>
#include <mneme/runtime/console_listener.h>
#include <mneme/runtime/event_bus.h>
#include <mneme/runtime/function_tool.h>

#include <QMutex>
#include <QPromise>
#include <QSemaphore>
#include <QSignalSpy>
#include <QThread>
#include <QUuid>
#include <QtTest>
#include <cstdio>

using namespace mneme;
using mneme::test::FakeEmbedder;
using mneme::test::TempStore;

namespace {

// A Memory over a SQLite file in `dir` whose analysis asks `server`'s LLM (no field given: it asks).
std::unique_ptr<Memory> analysingMemory(const mneme::test::TempStore &dir, mneme::test::ScriptedLlm &server)
{
    MemoryConfig config;
    config.storage = Json{{"provider", "sqlite"}, {"config", {{"path", dir.path()}}}};
    auto memory = std::make_unique<Memory>(config, nullptr, std::make_shared<mneme::test::FakeEmbedder>());
    memory->setLlm(server.provider());
    return memory;
}

// Collects every event of a bus, from any thread, in publishing order.
class Recorder
{
public:
    explicit Recorder(EventBus &bus)
    {
        QObject::connect(
            &bus, &EventBus::eventPublished, &m_context, [this](const Event &e) {
                QMutexLocker lock(&m_mutex);
                m_events.append(e);
            },
            Qt::DirectConnection);
    }
    QList<Event> events() const
    {
        QMutexLocker lock(&m_mutex);
        return m_events;
    }
    // The events whose type starts with `prefix`.
    QList<Event> withPrefix(const QString &prefix) const
    {
        QList<Event> out;
        for (const Event &e : events())
            if (e.type.startsWith(prefix))
                out.append(e);
        return out;
    }
    QStringList types(const QString &prefix = {}) const
    {
        QStringList out;
        for (const Event &e : withPrefix(prefix))
            out << e.type;
        return out;
    }

private:
    QObject m_context;
    mutable QMutex m_mutex;
    QList<Event> m_events;
};

// Answers chat requests from a script: each entry a reply or an error message.
class FakeLlm : public LlmProvider
{
public:
    QList<std::variant<ChatResponse, QString>> script;
    int calls = 0;

    QString id() const override { return QStringLiteral("fake/model"); }
    Capabilities capabilities() const override { return Capability::Tools; }
    QFuture<ChatResponse> chat(const ChatRequest &) override
    {
        const auto step = script.value(std::min<qsizetype>(calls++, script.size() - 1));
        QPromise<ChatResponse> promise;
        promise.start();
        if (const auto *reply = std::get_if<ChatResponse>(&step))
            promise.addResult(*reply);
        else
            promise.setException(std::make_exception_ptr(Error(ErrorKind::ServerError, std::get<QString>(step))));
        promise.finish();
        return promise.future();
    }

    static ChatResponse text(const QString &t)
    {
        ChatResponse r;
        r.text = t;
        r.finishReason = QStringLiteral("stop");
        r.usage.promptTokens = 5;
        r.usage.completionTokens = 3;
        return r;
    }
    static ChatResponse call(const QString &tool, const Json &args)
    {
        ChatResponse r;
        r.toolCalls.push_back(ToolCall{QStringLiteral("call_1"), tool, args});
        r.finishReason = QStringLiteral("tool_calls");
        r.usage.promptTokens = 7;
        r.usage.completionTokens = 2;
        return r;
    }
};

std::vector<ChatMessage> ask(const QString &text)
{
    ChatMessage m;
    m.content = text;
    return {m};
}

} // namespace

class TestEventBus : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void routesToFamilySignal_data()
    {
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("family"); // empty: only the general signal
        QTest::newRow("crew") << QString::fromLatin1(events::kCrewKickoffStarted) << "crew";
        QTest::newRow("task") << QString::fromLatin1(events::kTaskFailed) << "task";
        QTest::newRow("agent") << QString::fromLatin1(events::kAgentExecutionCompleted) << "agent";
        QTest::newRow("llm") << QString::fromLatin1(events::kLlmStreamChunk) << "llm";
        QTest::newRow("tool") << QString::fromLatin1(events::kToolUsageError) << "tool";
        QTest::newRow("memory") << QString::fromLatin1(events::kMemoryRetrievalStarted) << "memory";
        QTest::newRow("other") << QStringLiteral("flow_started") << "";
    }
    void routesToFamilySignal()
    {
        QFETCH(QString, type);
        QFETCH(QString, family);
        EventBus bus;
        QSignalSpy general(&bus, &EventBus::eventPublished);
        const QMap<QString, std::shared_ptr<QSignalSpy>> spies = {
            {"crew", std::make_shared<QSignalSpy>(&bus, &EventBus::crewEvent)},
            {"task", std::make_shared<QSignalSpy>(&bus, &EventBus::taskEvent)},
            {"agent", std::make_shared<QSignalSpy>(&bus, &EventBus::agentEvent)},
            {"llm", std::make_shared<QSignalSpy>(&bus, &EventBus::llmEvent)},
            {"tool", std::make_shared<QSignalSpy>(&bus, &EventBus::toolEvent)},
            {"memory", std::make_shared<QSignalSpy>(&bus, &EventBus::memoryEvent)},
        };
        const QString id = bus.publish(type, {{"k", 1}}, QStringLiteral("crew"), QStringLiteral("t1"), QStringLiteral("a1"));

        QCOMPARE(general.size(), 1);
        const Event e = general.first().first().value<Event>();
        QCOMPARE(e.type, type);
        QCOMPARE(e.id, id);
        QVERIFY(!QUuid::fromString(id).isNull());
        QCOMPARE(e.timestamp.timeSpec(), Qt::UTC);
        QVERIFY(e.parentId.isEmpty());
        QCOMPARE(e.sourceType, QStringLiteral("crew"));
        QCOMPARE(e.taskId, QStringLiteral("t1"));
        QCOMPARE(e.agentId, QStringLiteral("a1"));
        QCOMPARE(e.properties["k"], Json(1));
        for (auto it = spies.begin(); it != spies.end(); ++it) {
            QCOMPARE(it.value()->size(), it.key() == family ? 1 : 0);
            if (it.key() == family)
                QCOMPARE(it.value()->first().first().value<Event>().id, id);
        }
    }

    void serialisesToJson()
    {
        Event e;
        e.type = QStringLiteral("task_started");
        e.id = QStringLiteral("id-1");
        e.timestamp = QDateTime(QDate(2026, 11, 22), QTime(8, 0, 1, 250), Qt::UTC);
        e.taskId = QStringLiteral("t");
        e.properties = {{"name", "write"}};
        const Json j = e.toJson();
        QCOMPARE(j["type"], Json("task_started"));
        QCOMPARE(j["event_id"], Json("id-1"));
        QVERIFY(j["parent_event_id"].is_null());
        QCOMPARE(j["timestamp"], Json("2026-11-22T08:00:01.250Z"));
        QCOMPARE(j["task_id"], Json("t"));
        QVERIFY(j["agent_id"].is_null());
        QCOMPARE(j["properties"]["name"], Json("write"));
    }

    void nestedScopesPairAndParent()
    {
        EventBus bus;
        Recorder rec(bus);
        const QString crew = bus.begin(QLatin1String(events::kCrewKickoffStarted), {}, QStringLiteral("crew"));
        const QString task = bus.begin(QLatin1String(events::kTaskStarted), {}, QStringLiteral("task"), QStringLiteral("t1"));
        const QString chunk = bus.publish(QLatin1String(events::kLlmStreamChunk), {{"chunk", "hi"}});
        QCOMPARE(bus.openScopes(), 2);
        const QString taskEnd = bus.end(QLatin1String(events::kTaskCompleted), {{"output", "done"}});
        const QString crewEnd = bus.end(QLatin1String(events::kCrewKickoffCompleted));
        QCOMPARE(bus.openScopes(), 0);
        const QString after = bus.publish(QLatin1String(events::kLlmStreamChunk));

        const QList<Event> ev = rec.events();
        QCOMPARE(ev.size(), 6);
        QCOMPARE(ev[0].id, crew);
        QVERIFY(ev[0].parentId.isEmpty());
        QCOMPARE(ev[1].id, task);
        QCOMPARE(ev[1].parentId, crew); // a start inside a scope is its child
        QCOMPARE(ev[2].id, chunk);
        QCOMPARE(ev[2].parentId, task); // the innermost open scope
        QCOMPARE(ev[3].id, taskEnd);
        QCOMPARE(ev[3].parentId, task);               // an end points at its start
        QCOMPARE(ev[3].taskId, QStringLiteral("t1")); // inherited from the start
        QCOMPARE(ev[3].sourceType, QStringLiteral("task"));
        QCOMPARE(ev[4].id, crewEnd);
        QCOMPARE(ev[4].parentId, crew);
        QCOMPARE(ev[5].id, after);
        QVERIFY(ev[5].parentId.isEmpty());
    }

    void failedEndClosesItsStart()
    {
        EventBus bus;
        Recorder rec(bus);
        const QString start = bus.begin(QLatin1String(events::kTaskStarted));
        bus.end(QLatin1String(events::kTaskFailed), {{"error", "boom"}});
        QCOMPARE(rec.events().last().parentId, start);
        QCOMPARE(bus.openScopes(), 0);
    }

    void endPairsWithAnOpenStartOutOfOrder()
    {
        // Two tools of one reply: the first started finishes last.
        EventBus bus;
        Recorder rec(bus);
        const QString a = bus.begin(QLatin1String(events::kToolUsageStarted), {{"tool_name", "a"}});
        const QString b = bus.begin(QLatin1String(events::kToolUsageStarted), {{"tool_name", "b"}});
        QCOMPARE(rec.events()[1].parentId, a); // b started inside a's scope on this thread
        bus.end(QLatin1String(events::kToolUsageFinished), {}, {}, {}, {}, a);
        QCOMPARE(rec.events().last().parentId, a);
        QVERIFY(bus.isOpen(QLatin1String(events::kToolUsageStarted)));
        bus.end(QLatin1String(events::kToolUsageFinished));
        QCOMPARE(rec.events().last().parentId, b);
        QCOMPARE(bus.openScopes(), 0);
    }

    void mismatchedEndWarnsAndPublishesWithoutParent()
    {
        EventBus bus;
        Recorder rec(bus);
        QSignalSpy tasks(&bus, &EventBus::taskEvent);
        const QString crew = bus.begin(QLatin1String(events::kCrewKickoffStarted));
        QTest::ignoreMessage(QtWarningMsg, QRegularExpression(QStringLiteral("task_completed has no open task_started")));
        const QString id = bus.end(QLatin1String(events::kTaskCompleted), {{"output", "x"}});
        const Event e = rec.events().last();
        QCOMPARE(e.id, id);
        QCOMPARE(e.type, QStringLiteral("task_completed"));
        QVERIFY(e.parentId.isEmpty()); // not adopted by the open crew scope
        QCOMPARE(tasks.size(), 1);
        QCOMPARE(bus.openScopes(), 1); // the crew scope is untouched
        bus.end(QLatin1String(events::kCrewKickoffCompleted));
        QCOMPARE(rec.events().last().parentId, crew);
    }

    void scopesArePerThread()
    {
        EventBus bus;
        Recorder rec(bus);
        constexpr int kRounds = 200;
        auto work = [&bus](const QString &name) {
            return QThread::create([&bus, name] {
                for (int i = 0; i < kRounds; ++i) {
                    bus.begin(QLatin1String(events::kTaskStarted), {{"thread", name}});
                    bus.publish(QLatin1String(events::kLlmStreamChunk), {{"thread", name}});
                    bus.end(QLatin1String(events::kTaskCompleted), {{"thread", name}});
                }
            });
        };
        std::unique_ptr<QThread> one(work(QStringLiteral("one")));
        std::unique_ptr<QThread> two(work(QStringLiteral("two")));
        one->start();
        two->start();
        QVERIFY(one->wait());
        QVERIFY(two->wait());

        const QList<Event> ev = rec.events();
        QCOMPARE(ev.size(), 2 * 3 * kRounds);
        QHash<QString, Event> byId;
        for (const Event &e : ev)
            byId.insert(e.id, e);
        int children = 0;
        for (const Event &e : ev) {
            if (e.type == QLatin1String(events::kTaskStarted)) {
                QVERIFY(e.parentId.isEmpty());
                continue;
            }
            QVERIFY2(byId.contains(e.parentId), qPrintable(e.type));
            const Event &parent = byId[e.parentId];
            QCOMPARE(parent.type, QString::fromLatin1(events::kTaskStarted));
            QCOMPARE(parent.properties["thread"], e.properties["thread"]);
            ++children;
        }
        QCOMPARE(children, 2 * 2 * kRounds);
        QCOMPARE(bus.openScopes(), 0);
    }

    void interleavedThreadsKeepTheirOwnScopes()
    {
        // Deterministic interleaving: one opens a scope, two opens one, then one publishes and closes
        // while two's scope is still open. A shared stack would hand one's events to two's scope.
        EventBus bus;
        Recorder rec(bus);
        QSemaphore oneOpened, twoOpened, oneDone;
        QString oneStart, twoStart, oneChild, oneEnd, twoChild;
        std::unique_ptr<QThread> one(QThread::create([&] {
            oneStart = bus.begin(QLatin1String(events::kTaskStarted));
            oneOpened.release();
            twoOpened.acquire();
            oneChild = bus.publish(QLatin1String(events::kLlmStreamChunk));
            oneEnd = bus.end(QLatin1String(events::kTaskCompleted));
            oneDone.release();
        }));
        std::unique_ptr<QThread> two(QThread::create([&] {
            oneOpened.acquire();
            twoStart = bus.begin(QLatin1String(events::kTaskStarted));
            twoOpened.release();
            oneDone.acquire();
            twoChild = bus.publish(QLatin1String(events::kLlmStreamChunk));
            bus.end(QLatin1String(events::kTaskCompleted));
        }));
        one->start();
        two->start();
        QVERIFY(one->wait());
        QVERIFY(two->wait());
        QHash<QString, QString> parentOf;
        for (const Event &e : rec.events())
            parentOf.insert(e.id, e.parentId);
        QCOMPARE(parentOf.value(twoStart), QString()); // not nested in one's scope
        QCOMPARE(parentOf.value(oneChild), oneStart);
        QCOMPARE(parentOf.value(oneEnd), oneStart);
        QCOMPARE(parentOf.value(twoChild), twoStart);
    }

    void queuedToReceiverThread()
    {
        // A receiver on the main thread gets events published on a worker through its event loop.
        EventBus bus;
        QObject receiver;
        QList<QThread *> threads;
        connect(&bus, &EventBus::toolEvent, &receiver, [&threads](const Event &) { threads << QThread::currentThread(); });
        std::unique_ptr<QThread> worker(QThread::create([&bus] { bus.publish(QLatin1String(events::kToolUsageStarted)); }));
        worker->start();
        QVERIFY(worker->wait());
        QVERIFY(threads.isEmpty()); // not delivered on the worker
        QTRY_COMPARE(threads.size(), 1);
        QCOMPARE(threads.first(), QThread::currentThread());
    }

    void republishesMemorySignals()
    {
        TempStore dir;
        MemoryConfig config;
        config.storage = Json{{"provider", "sqlite"}, {"config", {{"path", dir.path()}}}};
        auto embedder = std::make_shared<FakeEmbedder>();
        Memory memory(config, nullptr, embedder);
        EventBus bus;
        bus.attachMemory(&memory);
        Recorder rec(bus);
        QSignalSpy memoryFamily(&bus, &EventBus::memoryEvent);

        RememberOptions o = test::fields(QStringLiteral("/project"), 0.7);
        o.metadata = Json{{"origin", "test"}};
        memory.remember(QStringLiteral("The staging database runs on port 5433."), o);
        RecallOptions ro;
        ro.limit = 3;
        ro.depth = RecallDepth::Shallow;
        const auto matches = memory.recall(QStringLiteral("staging database port"), ro);
        QCOMPARE(matches.size(), 1);
        embedder->failWith(QStringLiteral("embedding service down"));
        QVERIFY_THROWS_EXCEPTION(Error, memory.remember(QStringLiteral("Deploys happen on Fridays."), test::fields(QStringLiteral("/project"))));

        const QList<Event> ev = rec.withPrefix(QStringLiteral("memory_"));
        QCOMPARE(rec.types(QStringLiteral("memory_")),
                 QStringList({"memory_save_started", "memory_save_completed", "memory_query_started",
                              "memory_query_completed", "memory_save_started", "memory_save_failed"}));
        QCOMPARE(memoryFamily.size(), 6);
        for (const Event &e : ev)
            QCOMPARE(e.sourceType, QStringLiteral("unified_memory"));

        QCOMPARE(ev[0].properties["value"], Json("The staging database runs on port 5433."));
        QCOMPARE(ev[0].properties["metadata"]["origin"], Json("test"));
        QCOMPARE(ev[1].parentId, ev[0].id);
        QVERIFY(ev[1].properties["save_time_ms"].get<double>() >= 0);
        QCOMPARE(ev[1].properties["metadata"]["origin"], Json("test"));

        QCOMPARE(ev[2].properties["query"], Json("staging database port"));
        QCOMPARE(ev[2].properties["limit"], Json(3));
        QCOMPARE(ev[3].parentId, ev[2].id);
        QCOMPARE(ev[3].properties["results_count"], Json(1));
        QCOMPARE(ev[3].properties["limit"], Json(3));
        QCOMPARE(ev[3].properties["results"][0]["id"], Json(matches.first().record.id));
        QVERIFY(ev[3].properties.contains("query_time_ms"));

        QCOMPARE(ev[5].parentId, ev[4].id);
        QVERIFY(QString::fromStdString(ev[5].properties["error"].get<std::string>()).contains(QLatin1String("embedding service down")));
        QCOMPARE(ev[5].properties["value"], Json("Deploys happen on Fridays."));
        QCOMPARE(bus.openScopes(), 0);
    }

    void memoryAnalysisCallsNestInTheirSave()
    {
        // No field given, so the save asks the LLM for an analysis; the scripted server answers 500,
        // the call fails and the offline analyzer takes over. The LLM call pairs inside the save scope
        // on the writer thread.
        test::ScriptedLlm server;
        TempStore dir;
        const auto memoryPtr = analysingMemory(dir, server);
        Memory &memory = *memoryPtr;
        EventBus bus;
        bus.attachMemory(&memory);
        Recorder rec(bus);

        QTest::ignoreMessage(QtWarningMsg, QRegularExpression(QStringLiteral("save_analysis fell back")));
        memory.remember(QStringLiteral("The staging database runs on port 5433."));
        const QList<Event> ev = rec.events();
        QVERIFY(ev.size() >= 4);
        QCOMPARE(ev.first().type, QString::fromLatin1(events::kMemorySaveStarted));
        QCOMPARE(ev.last().type, QString::fromLatin1(events::kMemorySaveCompleted));
        QCOMPARE(ev.last().parentId, ev.first().id);
        const QList<Event> llm = rec.withPrefix(QStringLiteral("llm_call_"));
        QCOMPARE(llm.size(), 2);
        QCOMPARE(llm[0].type, QString::fromLatin1(events::kLlmCallStarted));
        QCOMPARE(llm[0].parentId, ev.first().id);
        QCOMPARE(llm[0].sourceType, QStringLiteral("unified_memory"));
        QCOMPARE(llm[0].properties["step"], Json("save_analysis"));
        QCOMPARE(llm[1].type, QString::fromLatin1(events::kLlmCallFailed));
        QCOMPARE(llm[1].parentId, llm[0].id);
        QVERIFY(!llm[1].properties["error"].get<std::string>().empty());
        QCOMPARE(bus.openScopes(), 0);
    }

    // A batch analyses its items concurrently: every call is a child of the batch's save and is closed
    // by its own end, never nested in another call.
    void concurrentAnalysisCallsPairByThemselves()
    {
        test::ScriptedLlm server;
        server.onJson(QStringLiteral("memory_analysis"),
                      Json{{"scope", "/ops"}, {"categories", {"ops"}}, {"importance", 0.6}});
        TempStore dir;
        const auto memoryPtr = analysingMemory(dir, server);
        Memory &memory = *memoryPtr;
        EventBus bus;
        bus.attachMemory(&memory);
        bus.attachMemory(&memory); // a second attach adds nothing
        Recorder rec(bus);
        memory.rememberMany({QStringLiteral("Backups run at 02:00."), QStringLiteral("The VPN gateway is vpn2."),
                             QStringLiteral("Deploys need two approvals.")});
        memory.drainWrites();
        const QList<Event> llm = rec.withPrefix(QStringLiteral("llm_call_"));
        QCOMPARE(llm.size(), 6);
        const QList<Event> all = rec.events();
        const Event save = all.first();
        QCOMPARE(save.type, QString::fromLatin1(events::kMemorySaveStarted));
        QSet<QString> starts;
        for (const Event &e : llm) {
            if (e.type == QLatin1String(events::kLlmCallStarted)) {
                QCOMPARE(e.parentId, save.id);
                starts.insert(e.id);
            } else {
                QCOMPARE(e.type, QString::fromLatin1(events::kLlmCallCompleted));
                QVERIFY(starts.remove(e.parentId));
            }
        }
        QVERIFY(starts.isEmpty());
    }

    void republishesExecutorSignals()
    {
        auto llm = std::make_shared<FakeLlm>();
        llm->script = {FakeLlm::call(QStringLiteral("lookup"), {{"key", "port"}}), FakeLlm::text(QStringLiteral("5433"))};
        const Json schema = {{"type", "object"}, {"properties", {{"key", {{"type", "string"}}}}}, {"required", {"key"}}};
        auto tool = std::make_shared<FunctionTool>(QStringLiteral("lookup"), QStringLiteral("Looks a key up."), schema,
                                                   FunctionTool::SyncFunction([](const Json &) { return QStringLiteral("5433"); }));
        AgentExecutor executor(llm);
        EventBus bus;
        bus.attachExecutor(&executor, QStringLiteral("agent-7"));
        Recorder rec(bus);

        auto future = executor.run(ask(QStringLiteral("Which port?")), {tool});
        QTRY_VERIFY(future.isFinished());
        QCOMPARE(future.result().finalAnswer, QStringLiteral("5433"));

        const QList<Event> ev = rec.events();
        QCOMPARE(rec.types(), QStringList({"llm_call_started", "llm_call_completed", "tool_usage_started",
                                           "tool_usage_finished", "llm_call_started", "llm_call_completed"}));
        QCOMPARE(ev[1].parentId, ev[0].id);
        QCOMPARE(ev[1].properties["prompt_tokens"], Json(7));
        QCOMPARE(ev[1].agentId, QStringLiteral("agent-7"));
        QCOMPARE(ev[2].properties["tool_name"], Json("lookup"));
        QCOMPARE(parseJson(QString::fromStdString(ev[2].properties["tool_args"].get<std::string>()), QStringLiteral("args")),
                 Json({{"key", "port"}}));
        QCOMPARE(ev[3].parentId, ev[2].id);
        QCOMPARE(ev[3].properties["output"], Json("5433"));
        QCOMPARE(ev[5].parentId, ev[4].id);
        for (const Event &e : ev)
            QCOMPARE(e.sourceType, QStringLiteral("agent"));
        QCOMPARE(bus.openScopes(), 0);
    }

    void republishesExecutorFailure()
    {
        auto llm = std::make_shared<FakeLlm>();
        llm->script = {QStringLiteral("upstream returned 503")};
        AgentExecutor executor(llm);
        EventBus bus;
        bus.attachExecutor(&executor);
        Recorder rec(bus);
        auto future = executor.run(ask(QStringLiteral("Hi")), {});
        QTRY_VERIFY(future.isFinished());
        const QList<Event> ev = rec.events();
        QCOMPARE(rec.types(), QStringList({"llm_call_started", "llm_call_failed"}));
        QCOMPARE(ev[1].parentId, ev[0].id);
        QVERIFY(QString::fromStdString(ev[1].properties["error"].get<std::string>()).contains(QLatin1String("503")));
    }

    void consoleTrace()
    {
        EventBus bus;
        QString out;
        ConsoleListener listener(&bus, &out);
        bus.begin(QLatin1String(events::kCrewKickoffStarted),
                  {{"crew_name", "research"}, {"api_key", "sk-SECRET-1"}, {"config", {{"authorization", "Bearer SECRET-2"}}}});
        bus.begin(QLatin1String(events::kLlmCallStarted), {{"model", "gpt-test"}, {"token", "SECRET-3"}});
        bus.publish(QLatin1String(events::kLlmStreamChunk), {{"chunk", "Hel"}});
        bus.end(QLatin1String(events::kLlmCallFailed), {{"error", "rate limited"}, {"prompt_tokens", 12}});
        bus.end(QLatin1String(events::kCrewKickoffCompleted), {{"output", QString(300, QLatin1Char('x'))}});

        const QStringList lines = out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 5);
        const QRegularExpression stamp(QStringLiteral("^\\d\\d:\\d\\d:\\d\\d\\.\\d{3}  "));
        for (const QString &l : lines)
            QVERIFY2(stamp.match(l).hasMatch(), qPrintable(l));
        auto body = [&](int i) { return lines[i].mid(14); };
        QVERIFY(body(0).startsWith(QLatin1String("crew_kickoff_started")));
        QVERIFY(body(0).contains(QLatin1String("crew_name=\"research\"")));
        QVERIFY(body(1).startsWith(QLatin1String("  llm_call_started")));
        QVERIFY(body(2).startsWith(QLatin1String("    llm_stream_chunk")));
        QVERIFY(body(3).startsWith(QLatin1String("  llm_call_failed  error=\"rate limited\"")));
        QVERIFY(body(3).contains(QLatin1String("prompt_tokens=12"))); // counts are not secrets
        QVERIFY(QRegularExpression(QStringLiteral("\\(\\d+ ms\\)$")).match(body(3)).hasMatch());
        QVERIFY(body(4).startsWith(QLatin1String("crew_kickoff_completed")));
        QVERIFY(body(4).contains(QLatin1String("...\""))); // long values are cut
        QVERIFY(body(4).size() < 200);
        QVERIFY(body(4).endsWith(QLatin1String(" ms)")));
        QVERIFY(!body(0).endsWith(QLatin1String(" ms)"))); // starts have no duration
        QVERIFY(!out.contains(QLatin1String("SECRET")));
        QVERIFY(!out.contains(QLatin1String("api_key")));
        QVERIFY(!out.contains(QLatin1String("authorization")));
    }

    void consoleTraceToFile()
    {
        FILE *file = std::tmpfile();
        QVERIFY(file);
        {
            EventBus bus;
            ConsoleListener listener(&bus, file);
            bus.begin(QLatin1String(events::kMemorySaveStarted), {{"value", "a fact"}});
            bus.end(QLatin1String(events::kMemorySaveFailed), {{"error", "disk full"}});
        }
        std::rewind(file);
        QByteArray text(4096, '\0');
        text.resize(qsizetype(std::fread(text.data(), 1, size_t(text.size()), file)));
        std::fclose(file);
        const QStringList lines = QString::fromUtf8(text).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 2);
        QVERIFY(lines[0].contains(QLatin1String("memory_save_started  value=\"a fact\"")));
        QVERIFY(lines[1].contains(QLatin1String("memory_save_failed  error=\"disk full\"")));
    }

    void secretKeys_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<bool>("secret");
        QTest::newRow("api_key") << "api_key" << true;
        QTest::newRow("OPENAI_API_KEY") << "OPENAI_API_KEY" << true;
        QTest::newRow("Authorization") << "Authorization" << true;
        QTest::newRow("token") << "token" << true;
        QTest::newRow("access_token") << "access_token" << true;
        QTest::newRow("password") << "password" << true;
        QTest::newRow("prompt_tokens") << "prompt_tokens" << false;
        QTest::newRow("query") << "query" << false;
    }
    void secretKeys()
    {
        QFETCH(QString, key);
        QFETCH(bool, secret);
        QCOMPARE(ConsoleListener::isSecretKey(key), secret);
    }
};

QTEST_MAIN(TestEventBus)
#include "test_event_bus.moc"
