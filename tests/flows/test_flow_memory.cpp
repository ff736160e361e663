// A flow's built-in memory: rooted at /flow/<sanitised flow name> (acceptance case 16), built on
// first use over the real SQLite plugin; a given Memory used as it is; memory off refused with a
// clear error (case 17); remember / recall inside steps (CrewAI's research flow example); and the pending
// background saves drained before the flow reports it finished, proven with a slow embedder.

#include "fake_embedder.h"
#include "memory_test_util.h"
#include "temp_store.h"
#include <mneme/flows/flow.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>

#include <QElapsedTimer>
#include <QFile>
#include <QMutex>
#include <QSemaphore>
#include <QSignalSpy>
#include <QThread>
#include <QTimer>
#include <QtTest>
#include <thread>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::FakeEmbedder;
using mneme::test::TempStore;

namespace {

Json sqliteAt(const QString &path)
{
    return Json{{"provider", "sqlite"}, {"config", {{"path", path.toStdString()}}}};
}

// Takes its time over every batch: a background save is still running when the steps are done.
class SlowEmbedder : public FakeEmbedder
{
public:
    explicit SlowEmbedder(int ms = 400) : m_ms(ms) {}
    std::vector<Embedding> embed(const QStringList &texts) override
    {
        QThread::msleep(m_ms);
        return FakeEmbedder::embed(texts);
    }

private:
    int m_ms;
};

// Holds every embedding call at a gate until the test opens it, then notes whether the memory it
// embeds for is still alive.
class GateEmbedder : public FakeEmbedder
{
public:
    std::vector<Embedding> embed(const QStringList &texts) override
    {
        if (armed) {
            entered.release();
            gate.acquire();
            memoryAlive = !memory.expired();
        }
        return FakeEmbedder::embed(texts);
    }
    std::atomic_bool armed = false;
    QSemaphore entered;
    QSemaphore gate;
    std::weak_ptr<Memory> memory;
    std::atomic_bool memoryAlive = false;
};

} // namespace

class TestFlowMemory : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void builtInMemoryIsRootedAtTheFlowName_data();
    void builtInMemoryIsRootedAtTheFlowName();
    void memoryOffIsAClearError();
    void givenMemoryIsUsedAsItIs();
    void researchFlowRemembersAndRecalls();
    void pendingSavesAreDrainedBeforeFinished();
    void memoryOutlivesTheCallsUsingIt();
    void cancellingDuringTheDrainFailsTheRun_data();
    void cancellingDuringTheDrainFailsTheRun();
    void chatMemoryForTheFlowsAgents();
};

void TestFlowMemory::builtInMemoryIsRootedAtTheFlowName_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("root");
    QTest::newRow("class name") << "MyPipelineFlow"
                                << "/flow/mypipelineflow";
    QTest::newRow("spaces and signs") << "My Awesome Flow #1!"
                                      << "/flow/my-awesome-flow-1";
    QTest::newRow("nothing usable") << "???"
                                    << "/flow/unknown";
}

void TestFlowMemory::builtInMemoryIsRootedAtTheFlowName()
{
    QFETCH(QString, name);
    QFETCH(QString, root);
    TempStore dir;
    FlowOptions options;
    options.memoryConfig.storage = sqliteAt(dir.path());
    Flow flow(name, options);
    QVERIFY2(!QFile::exists(dir.path()), "the memory was opened before it was used");
    Memory *memory = flow.memory();
    QVERIFY(memory);
    QCOMPARE(memory->rootScope(), root);
    QCOMPARE(flow.memory(), memory); // one memory per flow
    QVERIFY(QFile::exists(dir.path()));
    QCOMPARE(memory->thread(), flow.thread());
    // A root scope given in the options is kept.
    FlowOptions own = options;
    own.memoryConfig.rootScope = QStringLiteral("/custom");
    Flow custom(name, own);
    QCOMPARE(custom.memory()->rootScope(), QStringLiteral("/custom"));
}

void TestFlowMemory::memoryOffIsAClearError()
{
    FlowOptions options;
    options.memory = false;
    Flow flow(QStringLiteral("NoMemory"), options);
    QCOMPARE(flow.memory(), nullptr);
    const Error e = errorOf([&] { flow.remember(QStringLiteral("x")); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QCOMPARE(e.message(), QStringLiteral("No memory configured for this flow (\"NoMemory\" called remember(), but FlowOptions::memory "
                                         "is false); leave FlowOptions::memory on for the built-in memory, or give the flow one "
                                         "with setMemory()"));
    QVERIFY(errorOf([&] { flow.recall(QStringLiteral("x")); }).message().startsWith(QLatin1String("No memory configured for this flow")));
    QVERIFY(errorOf([&] { flow.recallAsync(QStringLiteral("x")); }).message().contains(QLatin1String("recallAsync()")));
    QVERIFY(errorOf([&] { flow.rememberMany({QStringLiteral("x")}); }).message().contains(QLatin1String("rememberMany()")));
    QVERIFY(errorOf([&] { flow.extractMemories(QStringLiteral("x")); }).message().contains(QLatin1String("extractMemories()")));
    // Inside a step, the step fails with that message.
    flow.start("save", [&flow]() { flow.remember(QStringLiteral("x")); });
    QVERIFY(errorOf([&] { flow.kickoffAndWait(); }).message().startsWith(QLatin1String("Flow \"NoMemory\" failed in step \"save\": No memory configured for this flow")));
}

void TestFlowMemory::givenMemoryIsUsedAsItIs()
{
    TempStore dir;
    MemoryConfig config;
    config.storage = sqliteAt(dir.path());
    auto memory = std::make_shared<Memory>(config, nullptr, std::make_shared<FakeEmbedder>());
    FlowOptions options;
    options.memory = false; // a given memory wins over the options
    Flow flow(QStringLiteral("Given"), options);
    flow.setMemory(memory);
    QCOMPARE(flow.memory(), memory.get());
    flow.start("save", [&flow]() { return flow.remember(QStringLiteral("We ship on Fridays."), test::fields(QStringLiteral("/ops"))).scope; });
    QCOMPARE(flow.kickoffAndWait(), Json("/ops")); // no /flow/... root added
    QCOMPARE(memory->listRecords(QStringLiteral("/ops")).size(), 1);
}

void TestFlowMemory::researchFlowRemembersAndRecalls()
{
    TempStore dir;
    FlowOptions options;
    options.memoryConfig.storage = sqliteAt(dir.path());
    Flow flow(QStringLiteral("ResearchFlow"), options);
    flow.start("gather_data", [&flow]() {
        const QString findings = QStringLiteral("PostgreSQL handles 10k concurrent connections. MySQL caps at 5k.");
        flow.remember(findings, test::fields(QStringLiteral("/research/databases"), 0.8));
        return findings;
    });
    flow.listen("write_report", "gather_data", [&flow](const QString &findings) {
        QStringList context;
        for (const MemoryMatch &m : flow.recall(QStringLiteral("database concurrent connections")))
            context << QStringLiteral("- ") + m.record.content + QStringLiteral(" (") + m.record.scope + QLatin1Char(')');
        return QStringLiteral("Report:\nNew findings: %1\nPrevious context:\n%2").arg(findings, context.join(QLatin1Char('\n')));
    });
    const QString report = QString::fromStdString(flow.kickoffAndWait().get<std::string>());
    QVERIFY2(report.contains(QLatin1String("- PostgreSQL handles 10k concurrent connections. MySQL caps at 5k. "
                                           "(/flow/researchflow/research/databases)")),
             qPrintable(report));
}

void TestFlowMemory::pendingSavesAreDrainedBeforeFinished()
{
    TempStore dir;
    MemoryConfig config;
    config.storage = sqliteAt(dir.path());
    config.rootScope = QStringLiteral("/flow/drain");
    auto memory = std::make_shared<Memory>(config, nullptr, std::make_shared<SlowEmbedder>());
    Flow flow(QStringLiteral("Drain"));
    flow.setMemory(memory);

    QMutex mutex;
    QStringList order;
    const auto note = [&](const QString &what) {
        QMutexLocker lock(&mutex);
        order << what;
    };
    QObject::connect(
        memory.get(), &Memory::saveCompleted, memory.get(), [&]() { note(QStringLiteral("save-done")); },
        Qt::DirectConnection);
    int recordsAtFinish = -1;
    QObject::connect(&flow, &Flow::flowFinished, [&]() {
        note(QStringLiteral("flow-finished"));
        recordsAtFinish = int(memory->listRecords().size());
    });
    qint64 stepMs = -1;
    flow.start("note", [&]() {
        QElapsedTimer t;
        t.start();
        flow.rememberMany({QStringLiteral("The deploy window is Tuesday 10:00.")}, test::fields(QStringLiteral("/ops")));
        stepMs = t.elapsed();
        return QStringLiteral("noted");
    });
    QCOMPARE(flow.kickoffAndWait(), Json("noted"));
    QVERIFY2(stepMs < 300, "rememberMany blocked the step");
    QCOMPARE(order, (QStringList{"save-done", "flow-finished"}));
    QCOMPARE(recordsAtFinish, 1);
}

void TestFlowMemory::memoryOutlivesTheCallsUsingIt()
{
    // A recall on another thread is under way when the flow is given another memory and the caller
    // lets go of the first: the recall keeps the memory it called alive until it returns.
    TempStore dir;
    MemoryConfig config;
    config.storage = sqliteAt(dir.path());
    auto embedder = std::make_shared<GateEmbedder>();
    auto memory = std::make_shared<Memory>(config, nullptr, embedder);
    embedder->memory = memory;
    FlowOptions options;
    options.memory = false; // only the given one
    Flow flow(QStringLiteral("Swap"), options);
    flow.setMemory(memory);
    embedder->armed = true;
    std::thread recall([&flow]() {
        RecallOptions options;
        options.depth = RecallDepth::Shallow;
        flow.recall(QStringLiteral("deploy window"), options);
    });
    QVERIFY(embedder->entered.tryAcquire(1, 10000));
    flow.setMemory(nullptr);
    memory.reset();
    embedder->gate.release();
    recall.join();
    QVERIFY2(embedder->memoryAlive, "the memory was destroyed while a call of the flow used it");
}

void TestFlowMemory::cancellingDuringTheDrainFailsTheRun_data()
{
    QTest::addColumn<bool>("throughTheFuture");
    QTest::newRow("cancel()") << false;
    QTest::newRow("future.cancel()") << true;
}

void TestFlowMemory::cancellingDuringTheDrainFailsTheRun()
{
    // The steps are done and the memory drains a slow save when the run is cancelled: either way
    // (Flow::cancel() or the future) the drain is waited for and the run fails as cancelled; it does
    // not report finished with a future that has no result.
    QFETCH(bool, throughTheFuture);
    TempStore dir;
    MemoryConfig config;
    config.storage = sqliteAt(dir.path());
    config.rootScope = QStringLiteral("/flow/drain");
    auto memory = std::make_shared<Memory>(config, nullptr, std::make_shared<SlowEmbedder>(1500));
    Flow flow(QStringLiteral("CancelDrain"));
    flow.setMemory(memory);
    flow.start("note", [&flow]() {
        flow.rememberMany({QStringLiteral("The deploy window is Tuesday 10:00.")}, test::fields(QStringLiteral("/ops")));
        return QStringLiteral("noted");
    });
    QFuture<Json> future;
    // The step is reported finished just before the run starts draining: cancel right after that.
    QObject::connect(&flow, &Flow::stepFinished, &flow, [&]() {
        QTimer::singleShot(0, &flow, [&]() {
            QVERIFY(flow.isRunning());
            if (throughTheFuture)
                future.cancel();
            else
                flow.cancel();
        });
    });
    QSignalSpy finished(&flow, &Flow::flowFinished);
    QSignalSpy failed(&flow, &Flow::flowFailed);
    int recordsAtFailure = -1;
    QObject::connect(&flow, &Flow::flowFailed, &flow, [&]() { recordsAtFailure = int(memory->listRecords().size()); });
    future = flow.kickoff();
    QVERIFY(QTest::qWaitFor([&] { return !flow.isRunning(); }, 20000));
    QCOMPARE(finished.size(), 0);
    QCOMPARE(failed.size(), 1);
    QVERIFY2(failed.at(0).at(1).toString().contains(QLatin1String("cancelled")), qPrintable(failed.at(0).at(1).toString()));
    QCOMPARE(recordsAtFailure, 1);
    QVERIFY(future.isFinished());
    QCOMPARE(future.resultCount(), 0);
    if (!throughTheFuture)
        QCOMPARE(errorOf([&] { future.waitForFinished(); }).kind(), ErrorKind::Cancelled);
}

void TestFlowMemory::chatMemoryForTheFlowsAgents()
{
    TempStore dir;
    FlowOptions options;
    options.memoryConfig.storage = sqliteAt(dir.path());
    options.chatMemoryConfig = ChatMemoryConfig::fromJson(Json::parse(R"({"token_limit": 200, "chat_history_token_ratio": 0.2,
        "token_flush_size": 20, "memory_blocks": [{"type": "long_term", "scope": "/chat"}]})"));
    Flow flow(QStringLiteral("SupportFlow"), options);
    flow.start("talk", [&flow]() {
        const std::shared_ptr<ChatMemory> chat = flow.chatMemory(QStringLiteral("customer-7"));
        for (int i = 0; i < 4; ++i) {
            chat->put(ChatMessage::user(QStringLiteral("My order number %1 arrived broken, I need a replacement by Friday.").arg(100 + i)));
            chat->put(ChatMessage::assistant(QStringLiteral("I am sorry; a replacement for order %1 is on its way.").arg(100 + i)));
        }
        return chat->sessionId();
    });
    QCOMPARE(QString::fromStdString(flow.kickoffAndWait().get<std::string>()), QStringLiteral("customer-7"));
    // One object per session, in the flow memory's file; its long-term block wrote into the flow's
    // memory (under its root), and the run ended after the flushes.
    const std::shared_ptr<ChatMemory> chat = flow.chatMemory(QStringLiteral("customer-7"));
    QCOMPARE(chat.get(), flow.chatMemory(QStringLiteral("customer-7")).get());
    QVERIFY(chat.get() != flow.chatMemory(QStringLiteral("customer-8")).get());
    QCOMPARE(chat->store()->location(), flow.memory()->storage().location());
    QVERIFY(chat->info().archivedMessages > 0);
    QCOMPARE(chat->info().pendingFlush, 0);
    const QList<MemoryRecord> facts = flow.memory()->listRecords(QStringLiteral("/chat"));
    QVERIFY(!facts.isEmpty());
    QVERIFY(facts.first().scope.startsWith(QLatin1String("/flow/supportflow/chat")));
}

QTEST_MAIN(TestFlowMemory)
#include "test_flow_memory.moc"
