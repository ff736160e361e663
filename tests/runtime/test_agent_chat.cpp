// Agents without a crew: Agent::kickoff (role, tools, memory recalled and saved, chat memory, events,
// failures, cancellation), AgentChat (turns with tools, the history sent back, what is stored, queued
// turns, streaming, blocks, cancellation), the chat memory's events on the bus, and a crew giving its
// agents chat sessions. The real `openai` plugin against a scripted server, real SQLite stores.

#include "crew_test_util.h"
#include "memory_test_util.h"
#include "scripted_llm.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/sqlite_chat_store.h>
#include <mneme/memory/static_memory_block.h>
#include <mneme/runtime/agent_chat.h>
#include <mneme/runtime/crew.h>
#include <mneme/runtime/function_tool.h>

#include <QSignalSpy>
#include <QtTest>
#include <optional>

using namespace mneme;
using namespace mneme::test;
using Role = ChatMessage::Role;

namespace {

// The step ScriptedLlm files a request without tools or schema under.
const QString kNoTools = QStringLiteral("(none)");

ScriptedReply text(const QString &content, int completion = 7) { return ScriptedLlm::completion(content, 11, completion); }

// The request's messages as "role: content" lines.
QStringList transcriptOf(const Json &body)
{
    QStringList out;
    for (const Json &m : body["messages"]) {
        QString line = QString::fromStdString(m.value("role", std::string())) + QStringLiteral(": ");
        if (m.contains("content") && m["content"].is_string())
            line += QString::fromStdString(m["content"].get<std::string>());
        if (m.contains("tool_calls"))
            line += QStringLiteral("[calls]");
        out << line;
    }
    return out;
}

std::shared_ptr<ChatMemory> chatMemory(std::vector<std::shared_ptr<MemoryBlock>> blocks = {}, ChatMemoryConfig config = {})
{
    return std::make_shared<ChatMemory>(QStringLiteral("chat"), config, std::make_shared<SqliteChatStore>(QStringLiteral(":memory:")),
                                        std::move(blocks));
}

// A block whose content cannot be had (its embedder is down, say).
class BrokenBlock : public MemoryBlock
{
public:
    BrokenBlock() : MemoryBlock(QStringLiteral("broken"), 1) {}
    QString get(const std::vector<ChatMessage> &) override { throw Error(ErrorKind::Embedder, QStringLiteral("the embedder is down")); }
    void put(const QList<SessionMessage> &, const FlushContext &) override {}
};

} // namespace

class TestAgentChat : public QObject
{
    Q_OBJECT
private:
    std::unique_ptr<ScriptedLlm> m_llm;
    std::unique_ptr<TempStore> m_tmp;
    EventBus *m_bus = nullptr;

    std::shared_ptr<Tool> calculator()
    {
        return std::make_shared<FunctionTool>(QStringLiteral("calculator"), QStringLiteral("Adds two numbers."),
                                              Json{{"type", "object"},
                                                   {"properties", {{"a", {{"type", "number"}}}, {"b", {{"type", "number"}}}}},
                                                   {"required", {"a", "b"}}},
                                              FunctionTool::SyncFunction([](const Json &args) {
                                                  return QString::number(args["a"].get<double>() + args["b"].get<double>());
                                              }));
    }
    std::shared_ptr<Agent> agent(AgentConfig c = {})
    {
        c.role = QStringLiteral("Planner");
        c.goal = QStringLiteral("Plan trips within budget.");
        c.backstory = QStringLiteral("A careful travel planner.");
        c.llm = m_llm->provider();
        c.maxRetryLimit = 0;
        return std::make_shared<Agent>(std::move(c));
    }
    // Calls the calculator first, then answers with its result.
    static ScriptedReply calculate(const Json &body)
    {
        if (!ScriptedLlm::hasToolResults(body) && ScriptedLlm::messageOf(body, "user", true).contains(QLatin1String("add")))
            return ScriptedLlm::toolCallsReply({{QStringLiteral("calculator"), QStringLiteral(R"({"a": 2, "b": 3})")}});
        QString last; // the result of this turn's call: after the last user message
        for (const Json &m : body["messages"]) {
            if (m.value("role", std::string()) == "user")
                last.clear();
            if (m.value("role", std::string()) == "tool")
                last = QString::fromStdString(m["content"].get<std::string>());
        }
        return text(last.isEmpty() ? QStringLiteral("Plain answer.") : QStringLiteral("The sum is %1.").arg(last), 9);
    }

private Q_SLOTS:
    void init()
    {
        m_llm = std::make_unique<ScriptedLlm>();
        m_tmp = std::make_unique<TempStore>();
        m_bus = new EventBus;
    }
    void cleanup()
    {
        delete m_bus;
        m_bus = nullptr;
        m_tmp.reset();
        m_llm.reset();
    }

    void kickoffWithoutACrew()
    {
        MemoryConfig mc;
        mc.storage = m_tmp->path().toStdString();
        Memory memory(mc);
        memory.remember(QStringLiteral("The user's travel budget is 500 EUR."), fields(QStringLiteral("/")));
        m_llm->setFallback(&TestAgentChat::calculate);
        AgentConfig c;
        c.tools = {calculator()};
        c.memory = &memory;
        auto planner = agent(c);
        EventRecorder rec(m_bus);
        QFuture<AgentOutput> f = planner->kickoff(QStringLiteral("Please add 2 and 3 for the trip budget."), AgentKickoffOptions{m_bus});
        QVERIFY(finish(f));
        const AgentOutput out = f.result();
        QCOMPARE(out.raw, QStringLiteral("The sum is 5."));
        QCOMPARE(out.agentRole, QStringLiteral("Planner"));
        QCOMPARE(out.toolCalls.size(), size_t(1));
        QCOMPARE(out.llmRequests, 2);
        QCOMPARE(out.usage.promptTokens, 22);
        QCOMPARE(out.toJson()["token_usage"]["total_tokens"], 22 + 7 + 9);

        // Its role, its tools and the memory tools, and what memory recalled, in the first request.
        const Json first = m_llm->requests(QStringLiteral("calculator")).first();
        QVERIFY(ScriptedLlm::messageOf(first, "system").contains(QLatin1String("You are Planner.")));
        QCOMPARE(ScriptedLlm::toolNamesOf(first), (QStringList{QStringLiteral("calculator"), QStringLiteral("search_memory"), QStringLiteral("save_to_memory")}));
        QVERIFY(ScriptedLlm::messageOf(first, "user").contains(QLatin1String("# Memories from earlier work")));
        QVERIFY(ScriptedLlm::messageOf(first, "user").contains(QLatin1String("500 EUR")));

        // Its events, paired, and the answer's facts saved before the future resolved.
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
        QCOMPARE(rec.ofType(events::kAgentExecutionCompleted).size(), 1);
        QCOMPARE(rec.ofType(events::kToolUsageFinished).size(), 1);
        QCOMPARE(rec.ofType(events::kMemoryRetrievalCompleted).size(), 1);
        QVERIFY(rec.ofType(events::kMemorySaveCompleted).size() >= 1);
        bool saved = false; // where save analysis put it: this Memory has no root scope
        for (const MemoryRecord &r : memory.listRecords(QStringLiteral("/")))
            saved = saved || r.content.contains(QLatin1String("The sum is 5."));
        QVERIFY(saved);

        // The blocking form.
        QCOMPARE(planner->kickoffAndWait(QStringLiteral("Hello"), AgentKickoffOptions{m_bus}).raw, QStringLiteral("Plain answer."));
    }

    void kickoffFailuresAreTyped()
    {
        m_llm->setFallback([](const Json &) { return ScriptedReply::json(R"({"error":{"message":"bad key"}})", 401); });
        auto planner = agent();
        QFuture<AgentOutput> f = planner->kickoff(QStringLiteral("Hi"), AgentKickoffOptions{m_bus});
        QVERIFY(finish(f));
        QCOMPARE(failureOf(f).kind(), ErrorKind::Authentication);
        QFuture<AgentOutput> blank = planner->kickoff(QStringLiteral("  "));
        QVERIFY(finish(blank));
        QCOMPARE(failureOf(blank).kind(), ErrorKind::InvalidArgument);
    }

    void kickoffCancelled()
    {
        m_llm->setFallback([](const Json &) {
            QThread::msleep(2000);
            return text(QStringLiteral("late"));
        });
        auto planner = agent();
        EventRecorder rec(m_bus);
        QFuture<AgentOutput> f = planner->kickoff(QStringLiteral("Hi"), AgentKickoffOptions{m_bus});
        QTest::qWait(100);
        f.cancel();
        QVERIFY(finish(f, 5000));
        QVERIFY(f.isCanceled());
        QTRY_VERIFY(rec.pairingProblems().isEmpty());
        QCOMPARE(rec.ofType(events::kAgentExecutionError).size(), 1);
    }

    // Blocking on the future of kickoff() on the agent's own thread would stop the loop the kickoff
    // needs: the wait fails at once with an error naming kickoffAndWait(), and the agent runs again.
    void waitingForTheKickoffOnItsThreadFails()
    {
        // The reply comes after the stopped kickoff has wound up, as in kickoffCancelled.
        m_llm->setFallback([](const Json &) {
            QThread::msleep(300);
            return text(QStringLiteral("done"));
        });
        auto planner = agent();
        QFuture<AgentOutput> f = planner->kickoff(QStringLiteral("Hi"), AgentKickoffOptions{m_bus});
        QTest::qWait(100);      // the kickoff is under way, its request sent
        std::optional<Error> e; // without the guard the wait never returns (the test fails by its timeout)
        try {
            (void)f.result();
        } catch (const Error &error) {
            e = error;
        }
        QVERIFY2(e, "the wait did not fail");
        QCOMPARE(e->kind(), ErrorKind::InvalidArgument);
        QVERIFY2(e->message().contains(QLatin1String("kickoffAndWait()")), qPrintable(e->message()));
        QTest::qWait(700); // the stopped kickoff winds up on the loop, its request's late reply dropped
        QCOMPARE(planner->kickoffAndWait(QStringLiteral("Hi"), AgentKickoffOptions{m_bus}).raw, QStringLiteral("done"));
    }

    void kickoffWithAChatMemory()
    {
        m_llm->setFallback([](const Json &body) { return text(QStringLiteral("Answer %1.").arg(body["messages"].size())); });
        AgentConfig c;
        c.chatMemory = chatMemory();
        auto planner = agent(c);
        QCOMPARE(planner->kickoffAndWait(QStringLiteral("First question"), AgentKickoffOptions{m_bus}).raw, QStringLiteral("Answer 2."));
        planner->kickoffAndWait(QStringLiteral("Second question"), AgentKickoffOptions{m_bus});
        const QStringList second = transcriptOf(m_llm->requests(kNoTools).last());
        QCOMPARE(second.size(), 4);
        QVERIFY(second[0].startsWith(QLatin1String("system: You are Planner.")));
        QCOMPARE(second[1], QStringLiteral("user: First question"));
        QCOMPARE(second[2], QStringLiteral("assistant: Answer 2."));
        QCOMPARE(second[3], QStringLiteral("user: Second question"));
        const QList<SessionMessage> stored = c.chatMemory->messages();
        QCOMPARE(stored.size(), 4);
        QCOMPARE(stored[1].tokens, std::optional<int>(7)); // the provider's completion tokens
    }

    void chatTurns()
    {
        m_llm->setFallback(&TestAgentChat::calculate);
        AgentConfig c;
        c.tools = {calculator()};
        auto planner = agent(c);
        auto memory = chatMemory();
        AgentChat chat(planner, memory, AgentChatOptions{m_bus});
        QSignalSpy started(&chat, &AgentChat::turnStarted);
        QSignalSpy tools(&chat, &AgentChat::toolFinished);
        QSignalSpy completed(&chat, &AgentChat::turnCompleted);
        const ChatReply one = chat.sendAndWait(QStringLiteral("Please add 2 and 3."));
        QCOMPARE(one.text, QStringLiteral("The sum is 5."));
        QCOMPARE(one.llmRequests, 2);
        QCOMPARE(one.stored.size(), 4); // the user's message, the call, its result, the answer
        QCOMPARE(one.stored[0].message.content, QStringLiteral("Please add 2 and 3."));
        QCOMPARE(one.stored[1].message.toolCalls.size(), size_t(1));
        QCOMPARE(one.stored[2].message.role, Role::Tool);
        QCOMPARE(one.stored[2].message.content, QStringLiteral("5"));
        QCOMPARE(one.stored[3].tokens, std::optional<int>(9));
        QCOMPARE(started.count(), 1);
        QCOMPARE(tools.count(), 1);
        QCOMPARE(completed.count(), 1);

        const ChatReply two = chat.sendAndWait(QStringLiteral("Thanks! Anything else?"));
        QCOMPARE(two.text, QStringLiteral("Plain answer."));
        const QStringList sent = transcriptOf(m_llm->requests(QStringLiteral("calculator")).last());
        QCOMPARE(sent.size(), 6);
        QVERIFY(sent[0].startsWith(QLatin1String("system: You are Planner.")));
        QCOMPARE(sent[1], QStringLiteral("user: Please add 2 and 3."));
        QCOMPARE(sent[2], QStringLiteral("assistant: [calls]"));
        QCOMPARE(sent[3], QStringLiteral("tool: 5"));
        QCOMPARE(sent[4], QStringLiteral("assistant: The sum is 5."));
        QCOMPARE(sent[5], QStringLiteral("user: Thanks! Anything else?"));
        QCOMPARE(memory->messages().size(), 6);
    }

    void turnsWaitForEachOther()
    {
        m_llm->setFallback([](const Json &body) {
            return text(QStringLiteral("Reply to %1").arg(ScriptedLlm::messageOf(body, "user", true)));
        });
        AgentChat chat(agent(), chatMemory(), AgentChatOptions{m_bus});
        QFuture<ChatReply> a = chat.send(QStringLiteral("one"));
        QFuture<ChatReply> b = chat.send(QStringLiteral("two"));
        QVERIFY(chat.isBusy());
        QVERIFY(finish(b));
        QVERIFY(a.isFinished());
        QCOMPARE(a.result().text, QStringLiteral("Reply to one"));
        QCOMPARE(b.result().text, QStringLiteral("Reply to two"));
        QCOMPARE(chat.memory()->messages().size(), 4);
        QCOMPARE(chat.memory()->messages()[2].message.content, QStringLiteral("two"));
        QVERIFY(!chat.isBusy());
        QFuture<ChatReply> blank = chat.send(QStringLiteral(" "));
        QVERIFY(finish(blank));
        QCOMPARE(failureOf(blank).kind(), ErrorKind::InvalidArgument);
    }

    void chatStreams()
    {
        m_llm->setFallback([](const Json &body) {
            if (!body.value("stream", false))
                return text(QStringLiteral("not streamed"));
            QList<QByteArray> events;
            for (const char *piece : {"Hel", "lo ", "there"})
                events << QByteArray("data: ") + QByteArray::fromStdString(Json{{"choices", {{{"index", 0}, {"delta", {{"content", piece}}}}}}}.dump()) + "\n\n";
            events << QByteArray("data: ") + QByteArray::fromStdString(Json{{"choices", {{{"index", 0}, {"delta", Json::object()}, {"finish_reason", "stop"}}}}, {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 3}}}}.dump()) + "\n\n";
            events << QByteArray("data: [DONE]\n\n");
            return ScriptedReply::sse(events, 10);
        });
        AgentConfig c;
        c.stream = true;
        AgentChat chat(agent(c), chatMemory(), AgentChatOptions{m_bus});
        QStringList chunks;
        connect(&chat, &AgentChat::textChunk, this, [&chunks](const QString &t) { chunks << t; });
        QCOMPARE(chat.sendAndWait(QStringLiteral("Say hello")).text, QStringLiteral("Hello there"));
        QCOMPARE(chunks, (QStringList{QStringLiteral("Hel"), QStringLiteral("lo "), QStringLiteral("there")}));
    }

    void chatWithMemoryBlocks()
    {
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("Hi Logan.")); });
        auto core = std::make_shared<StaticMemoryBlock>(QStringLiteral("core_info"), QStringLiteral("The user is Logan, from Saskatoon."));
        AgentChat chat(agent(), chatMemory({core}), AgentChatOptions{m_bus});
        chat.sendAndWait(QStringLiteral("Hello!"));
        const QString sent = ScriptedLlm::messageOf(m_llm->requests(kNoTools).last(), "system");
        QVERIFY2(sent.startsWith(QLatin1String("<memory>\n<static_memory>\nThe user is Logan, from Saskatoon.\n</static_memory>\n</memory>\n\nYou are Planner.")),
                 qPrintable(sent));
    }

    void chatCancelled()
    {
        m_llm->setFallback([](const Json &) {
            QThread::msleep(2000);
            return text(QStringLiteral("late"));
        });
        AgentChat chat(agent(), chatMemory(), AgentChatOptions{m_bus});
        QSignalSpy failed(&chat, &AgentChat::turnFailed);
        QFuture<ChatReply> f = chat.send(QStringLiteral("slow"));
        QFuture<ChatReply> queued = chat.send(QStringLiteral("after"));
        QTest::qWait(100);
        chat.cancel();
        QVERIFY(finish(f, 5000));
        QVERIFY(finish(queued, 1000));
        QVERIFY(f.isCanceled() || f.resultCount() == 0);
        QVERIFY(queued.resultCount() == 0);
        QTRY_COMPARE(failed.count(), 2);
        QVERIFY(chat.memory()->messages().isEmpty()); // nothing of a cancelled turn is stored
    }

    void chatMemoryEvents()
    {
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("An answer of a few words here.")); });
        ChatMemoryConfig small;
        small.tokenLimit = 120;
        small.chatHistoryTokenRatio = 0.5;
        small.tokenFlushSize = 20;
        auto block = std::make_shared<StaticMemoryBlock>(QStringLiteral("core_info"), QStringLiteral("Facts about the user."), 1);
        AgentChat chat(agent(), chatMemory({block}, small), AgentChatOptions{m_bus});
        EventRecorder rec(m_bus);
        for (int i = 0; i < 6; ++i)
            chat.sendAndWait(QStringLiteral("Question number %1 about the trip to Lisbon in May.").arg(i));
        chat.memory()->drain();
        QCOMPARE(rec.ofType(events::kChatMessageStored).size(), 6);
        QCOMPARE(rec.ofType(events::kChatMessageStored).first().properties["roles"], Json::array({"user", "assistant"}));
        const QList<Event> started = rec.ofType(events::kChatMemoryFlushStarted);
        QVERIFY(!started.isEmpty());
        QCOMPARE(started.first().properties["blocks"], Json::array({"core_info"}));
        QCOMPARE(rec.ofType(events::kChatMemoryFlushCompleted).size(), started.size());
        const QList<Event> blocks = rec.ofType(events::kChatMemoryBlockFlushed);
        QCOMPARE(blocks.size(), started.size());
        QCOMPARE(blocks.first().parentId, started.first().id);
        QVERIFY2(rec.pairingProblems().isEmpty(), qPrintable(rec.pairingProblems().join(QLatin1Char('\n'))));
    }

    void aFailingBlockIsLeftOutOfTheTurn()
    {
        m_llm->setFallback([](const Json &) { return text(QStringLiteral("Hi Logan.")); });
        auto core = std::make_shared<StaticMemoryBlock>(QStringLiteral("core_info"), QStringLiteral("The user is Logan."));
        AgentChat chat(agent(), chatMemory({std::make_shared<BrokenBlock>(), core}), AgentChatOptions{m_bus});
        EventRecorder rec(m_bus);
        QTest::ignoreMessage(QtWarningMsg, QRegularExpression(QStringLiteral("block broken could not give its content")));
        QCOMPARE(chat.sendAndWait(QStringLiteral("Hello!")).text, QStringLiteral("Hi Logan."));
        const QList<Event> failed = rec.ofType(events::kChatMemoryBlockFailed);
        QCOMPARE(failed.size(), 1);
        QCOMPARE(failed.first().sourceType, QStringLiteral("chat_memory"));
        QCOMPARE(failed.first().properties["session_id"], "chat");
        QCOMPARE(failed.first().properties["block"], "broken");
        QVERIFY(QString::fromStdString(failed.first().properties["error"].get<std::string>()).contains(QLatin1String("the embedder is down")));
        const QString sent = ScriptedLlm::messageOf(m_llm->requests(kNoTools).last(), "system");
        QVERIFY2(sent.startsWith(QLatin1String("<memory>\n<static_memory>\nThe user is Logan.\n</static_memory>\n</memory>")), qPrintable(sent));
    }

    void crewGivesItsAgentsChatSessions()
    {
        m_llm->setFallback([](const Json &body) { return text(QStringLiteral("Done %1.").arg(body["messages"].size())); });
        auto planner = agent();
        TaskConfig tc;
        tc.description = QStringLiteral("Plan the trip.");
        tc.expectedOutput = QStringLiteral("A plan.");
        tc.agent = planner;
        auto task = std::make_shared<Task>(tc);
        CrewConfig cc;
        cc.name = QStringLiteral("Trip Crew");
        cc.agents = {planner};
        cc.tasks = {task};
        cc.memory = true;
        cc.memoryConfig.storage = m_tmp->path().toStdString();
        cc.chatMemory = true;
        cc.eventBus = m_bus;
        Crew crew(cc);
        const std::shared_ptr<ChatMemory> session = crew.chatMemoryOf(planner);
        QVERIFY(session);
        QCOMPARE(session->sessionId(), QStringLiteral("crew/trip-crew/planner"));
        QCOMPARE(session->store()->location(), crew.memory()->storage().location());
        QCOMPARE(crew.kickoffAndWait().raw, QStringLiteral("Done 2."));
        QCOMPARE(crew.kickoffAndWait().raw, QStringLiteral("Done 4."));
        // The second kickoff's request held the first exchange; both are in the session.
        const QList<SessionMessage> stored = session->messages();
        QCOMPARE(stored.size(), 4);
        QVERIFY(stored[0].message.content.startsWith(QLatin1String("Plan the trip.")));
        QCOMPARE(stored[1].message.content, QStringLiteral("Done 2."));
    }
};

QTEST_GUILESS_MAIN(TestAgentChat)
#include "test_agent_chat.moc"
