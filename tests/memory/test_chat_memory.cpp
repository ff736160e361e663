// ChatMemory end to end over real SQLite chat stores: configuration, messages, flushes (limits at and
// one over, order, exactly once, failures, recovery of a writer's flush), get() under the token limit
// (priorities, history trimming, tool-call pairs, insertion), threads, and a property test over
// random sessions, blocks and limits.

#include "chat_test_util.h"
#include "memory_test_util.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/fact_extraction_memory_block.h>
#include <mneme/memory/sqlite_chat_store.h>
#include <mneme/memory/static_memory_block.h>

#include <QCoreApplication>
#include <QRandomGenerator>
#include <QSet>
#include <QSignalSpy>
#include <QSysInfo>
#include <QtConcurrent>
#include <QtTest>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::Received;
using mneme::test::RecordingBlock;
using mneme::test::TempStore;
using mneme::test::wordCounter;
using mneme::test::words;
using Role = ChatMessage::Role;

namespace {

const QString kSession = QStringLiteral("session");

// token_limit 100, history budget 50, flush size 20, one token per word.
ChatMemoryConfig small()
{
    ChatMemoryConfig c;
    c.tokenLimit = 100;
    c.chatHistoryTokenRatio = 0.5;
    c.tokenFlushSize = 20;
    c.tokenCounter = wordCounter();
    return c;
}

std::shared_ptr<ChatStore> memoryStore()
{
    return std::make_shared<SqliteChatStore>(QStringLiteral(":memory:"));
}

// A message of `tokens` tokens in all (its words and the message overhead).
ChatMessage sized(Role role, int tokens)
{
    ChatMessage m;
    m.role = role;
    m.content = words(tokens - TokenCounter::kMessageOverhead);
    return m;
}

int countOf(const std::vector<ChatMessage> &messages)
{
    return wordCounter().count(messages);
}

// The checks every request get() returns must pass: no tool result without the assistant message
// that called it right before (with only other results between), no call without all its results.
QString toolPairProblem(const std::vector<ChatMessage> &messages)
{
    QStringList open;
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage &m = messages[i];
        if (m.role == Role::Tool) {
            if (!open.contains(m.toolCallId))
                return QStringLiteral("message %1 is a tool result for %2 without its call").arg(i).arg(m.toolCallId);
            open.removeAll(m.toolCallId);
            continue;
        }
        if (!open.isEmpty())
            return QStringLiteral("message %1 follows calls without results: %2").arg(i).arg(open.join(QLatin1Char(',')));
        for (const ToolCall &c : m.toolCalls)
            open << c.id;
    }
    return open.isEmpty() ? QString() : QStringLiteral("calls without results at the end: %1").arg(open.join(QLatin1Char(',')));
}

} // namespace

class TestChatMemory : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void defaultsAreTheSeeds();
    void configFromJson();
    void badConfig_data();
    void badConfig();
    void badMessages_data();
    void badMessages();
    void toolCallPairs();
    void putAndGet();
    void persistsAcrossObjects();
    void historyAtTheBudgetAndOneOver();
    void flushGoesToEveryBlockInOrderOnce();
    void blockFailureKeepsTheFlush();
    void aFailingBlockIsLeftOutOfARequest();
    void finishesAFlushLeftByADeadWriter();
    void leavesALiveWritersFlushAlone();
    void getAtTheLimitAndOneOver();
    void prioritiesDecideWhatGivesWay();
    void priorityZeroNeverGivesWay();
    void historyIsTrimmedWithoutBreakingToolCalls();
    void extraMessagesAndInsertion();
    void renderedAsTheSeedShows();
    void clearStartsAnew();
    void blockingCallsAreRefusedOnTheWorker();
    void blocksAreOneSessionEach();
    void twoThreadsOneChatMemory();
    void twoWritersOneSession();
    void randomSessionsFitTheLimit();
};

void TestChatMemory::defaultsAreTheSeeds()
{
    const ChatMemoryConfig c;
    QCOMPARE(c.tokenLimit, 30000);
    QCOMPARE(c.chatHistoryTokenRatio, 0.7);
    QCOMPARE(c.flushSize(), 3000);
    QCOMPARE(c.historyBudget(), 21000);
    QCOMPARE(c.insertMethod, InsertMethod::System);
    const Json j = c.toJson();
    QCOMPARE(j["token_limit"], 30000);
    QCOMPARE(j["token_flush_size"], 3000);
    QCOMPARE(j["insert_method"], "system");
    QVERIFY(j["memory_blocks"].is_array());
    // Unset, the flush size stays 3000 while that is below the limit, else it is a tenth of the limit.
    ChatMemoryConfig small;
    small.tokenLimit = 3001;
    QCOMPARE(small.flushSize(), 3000);
    small.tokenLimit = 3000;
    QCOMPARE(small.flushSize(), 300);
    small.tokenLimit = 5;
    QCOMPARE(small.flushSize(), 1);
    small.validate();
}

void TestChatMemory::configFromJson()
{
    const ChatMemoryConfig c = ChatMemoryConfig::fromJson(Json::parse(R"({
        "token_limit": 40000, "chat_history_token_ratio": 0.5, "insert_method": "user",
        "memory_blocks": [{"type": "static", "name": "core_info", "static_content": "I am Logan.", "priority": 0},
                          {"type": "fact_extraction", "name": "facts", "max_facts": 10, "priority": 1}],
        "llm": {"provider": "openai", "config": {"model": "gpt-4o-mini", "api_key": "sk-secret-value"}}})"));
    QCOMPARE(c.tokenLimit, 40000);
    QCOMPARE(c.flushSize(), 3000); // LlamaIndex's default whatever the limit, when not given
    QCOMPARE(c.historyBudget(), 20000);
    QCOMPARE(c.insertMethod, InsertMethod::User);
    QCOMPARE(c.memoryBlocks.size(), size_t(2));
    // Secrets never leave through toJson().
    QVERIFY(!QString::fromStdString(c.toJson().dump()).contains(QStringLiteral("sk-secret-value")));
    const auto blocks = ChatMemory::buildBlocks(c.memoryBlocks);
    QCOMPARE(blocks.size(), size_t(2));
    QCOMPARE(blocks[0]->section(), QStringLiteral("static_memory"));
    QCOMPARE(blocks[1]->priority(), 1);
    QCOMPARE(std::dynamic_pointer_cast<FactExtractionMemoryBlock>(blocks[1])->maxFacts(), 10);
}

void TestChatMemory::badConfig_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("message");
    QTest::newRow("token_limit 0") << R"({"token_limit": 0})"
                                   << "token_limit";
    QTest::newRow("token_limit negative") << R"({"token_limit": -5})"
                                          << "must be a positive number";
    QTest::newRow("token_limit text") << R"({"token_limit": "many"})"
                                      << "whole number";
    QTest::newRow("ratio 0") << R"({"chat_history_token_ratio": 0})"
                             << "above 0 and at most 1";
    QTest::newRow("ratio above 1") << R"({"chat_history_token_ratio": 1.5})"
                                   << "above 0 and at most 1";
    QTest::newRow("flush 0") << R"({"token_flush_size": 0})"
                             << "token_flush_size";
    QTest::newRow("flush at the limit") << R"({"token_limit": 1000, "token_flush_size": 1000})"
                                        << "below token_limit";
    QTest::newRow("insert method") << R"({"insert_method": "assistant"})"
                                   << R"("system" or "user")";
    QTest::newRow("unknown key") << R"({"token_limt": 5})"
                                 << "not a chat memory setting";
    QTest::newRow("blocks not an array") << R"({"memory_blocks": {}})"
                                         << "array of block specs";
    QTest::newRow("unknown block type") << R"({"memory_blocks": [{"type": "graph"}]})"
                                        << "unknown type";
    QTest::newRow("unknown block key") << R"({"memory_blocks": [{"type": "static", "static_content": "x", "size": 1}]})"
                                       << "unknown key \"size\"";
    QTest::newRow("static without content") << R"({"memory_blocks": [{"type": "static"}]})"
                                            << "static_content";
    QTest::newRow("negative priority") << R"({"memory_blocks": [{"type": "static", "static_content": "x", "priority": -1}]})"
                                       << "priority";
    QTest::newRow("max_facts 0") << R"({"memory_blocks": [{"type": "fact_extraction", "max_facts": 0}]})"
                                 << "max_facts";
    QTest::newRow("top k 0") << R"({"memory_blocks": [{"type": "vector", "similarity_top_k": 0}]})"
                             << "similarity_top_k";
    QTest::newRow("bad scope") << R"({"memory_blocks": [{"type": "long_term", "scope": "/a/../b"}]})"
                               << "scope";
    QTest::newRow("repeated name") << R"({"memory_blocks": [{"type": "static", "name": "x", "static_content": "a"},
                                                            {"type": "fact_extraction", "name": "x"}]})"
                                   << "repeats the block name";
    QTest::newRow("bad llm") << R"({"llm": 5})"
                             << "llm";
}

void TestChatMemory::badConfig()
{
    QFETCH(QString, json);
    QFETCH(QString, message);
    const Error e = errorOf([&] { ChatMemoryConfig::fromJson(Json::parse(json.toStdString())); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QVERIFY2(e.message().contains(message), qPrintable(e.message()));
    // The same checks in C++: a ChatMemory is not built, nothing is stored.
    auto store = memoryStore();
    ChatMemoryConfig c = small();
    c.tokenLimit = 0;
    QCOMPARE(errorOf([&] { ChatMemory m(kSession, c, store); }).kind(), ErrorKind::InvalidArgument);
    QVERIFY(store->sessions().isEmpty());
}

void TestChatMemory::badMessages_data()
{
    QTest::addColumn<SessionMessage>("message");
    QTest::addColumn<QString>("text");
    QTest::newRow("empty") << SessionMessage(ChatMessage::user(QStringLiteral("  "))) << "needs content";
    QTest::newRow("calls on a user message")
        << SessionMessage([] {
               ChatMessage m = ChatMessage::user(QStringLiteral("x"));
               m.toolCalls.push_back(ToolCall{QStringLiteral("c"), QStringLiteral("t"), Json::object()});
               return m;
           }())
        << "only an assistant message";
    QTest::newRow("result without call id") << SessionMessage(ChatMessage::toolResult(QString(), QStringLiteral("calc"), QStringLiteral("4")))
                                            << "id of the call";
    QTest::newRow("call without id")
        << SessionMessage(ChatMessage::assistant(QString(), {ToolCall{QString(), QStringLiteral("calc"), Json::object()}})) << "has no id";
    QTest::newRow("metadata not an object") << SessionMessage(ChatMessage::user(QStringLiteral("x")), Json::array()) << "metadata";
    QTest::newRow("too long for the limit") << SessionMessage(sized(Role::User, 101)) << "longer than the chat memory's whole token_limit";
}

void TestChatMemory::badMessages()
{
    QFETCH(SessionMessage, message);
    QFETCH(QString, text);
    auto store = memoryStore();
    ChatMemory memory(kSession, small(), store);
    const Error e = errorOf([&] { memory.putMessages({SessionMessage(ChatMessage::user(QStringLiteral("fine"))), message}); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QVERIFY2(e.message().contains(text), qPrintable(e.message()));
    QVERIFY(memory.messages(true).isEmpty()); // nothing stored, not even the good message
}

void TestChatMemory::toolCallPairs()
{
    ChatMemory memory(kSession, small(), memoryStore());
    const ChatMessage call =
        ChatMessage::assistant(QString(), {ToolCall{QStringLiteral("c1"), QStringLiteral("calc"), Json::object()},
                                           ToolCall{QStringLiteral("c2"), QStringLiteral("calc"), Json::object()}});
    memory.put(ChatMessage::user(QStringLiteral("add things")));
    memory.put(call);
    // Another message while calls are open: refused, nothing stored.
    Error e = errorOf([&] { memory.put(ChatMessage::user(QStringLiteral("and?"))); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QVERIFY2(e.message().contains(QStringLiteral("c1, c2")), qPrintable(e.message()));
    // A result for a call nobody made: refused.
    e = errorOf([&] { memory.put(ChatMessage::toolResult(QStringLiteral("c9"), QStringLiteral("calc"), QStringLiteral("1"))); });
    QVERIFY2(e.message().contains(QStringLiteral("answers no open tool call")), qPrintable(e.message()));
    QCOMPARE(memory.messages().size(), 2);
    memory.putMessages({SessionMessage(ChatMessage::toolResult(QStringLiteral("c2"), QStringLiteral("calc"), QStringLiteral("2"))),
                        SessionMessage(ChatMessage::toolResult(QStringLiteral("c1"), QStringLiteral("calc"), QStringLiteral("1"))),
                        SessionMessage(ChatMessage::assistant(QStringLiteral("3")))});
    // Answered twice: refused.
    e = errorOf([&] { memory.put(ChatMessage::toolResult(QStringLiteral("c1"), QStringLiteral("calc"), QStringLiteral("1"))); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QCOMPARE(memory.messages().size(), 5);
    QVERIFY(toolPairProblem(memory.get()).isEmpty());
}

void TestChatMemory::putAndGet()
{
    ChatMemory memory(kSession, small(), memoryStore());
    QSignalSpy stored(&memory, &ChatMemory::messagesStored);
    const SessionMessage first = memory.put(ChatMessage::user(QStringLiteral("Hello, world!")), Json{{"client", "test"}});
    QCOMPARE(first.seq, 1);
    QCOMPARE(first.metadata, (Json{{"client", "test"}}));
    memory.putMessages({SessionMessage(ChatMessage::assistant(QStringLiteral("Hello, world to you too!")))});
    QCOMPARE(stored.count(), 2);
    const std::vector<ChatMessage> got = memory.get();
    QCOMPARE(got.size(), size_t(2));
    QCOMPARE(got[0].content, QStringLiteral("Hello, world!"));
    QCOMPARE(got[1].role, Role::Assistant);
    const ChatContext ctx = memory.getContext();
    QCOMPARE(ctx.tokens, countOf(ctx.messages));
    QCOMPARE(ctx.historyMessages, 2);
    QCOMPARE(ctx.memoryTokens, 0);
    QCOMPARE(memory.info().activeMessages, 2);
    // The asynchronous form, from the caller's event loop.
    QFuture<std::vector<ChatMessage>> f = memory.getAsync({ChatMessage::user(QStringLiteral("next"))});
    QTRY_VERIFY(f.isFinished());
    QCOMPARE(f.result().size(), size_t(3));
}

void TestChatMemory::persistsAcrossObjects()
{
    TempStore dir;
    auto received = std::make_shared<Received>();
    {
        auto block = std::make_shared<RecordingBlock>(QStringLiteral("rec"), 1, received);
        ChatMemory memory(kSession, small(), std::make_shared<SqliteChatStore>(dir.path()), {block});
        for (int i = 0; i < 6; ++i)
            memory.put(sized(i % 2 ? Role::Assistant : Role::User, 10));
        memory.drain();
        QCOMPARE(block->count, 2); // one flush of two messages
    }
    auto block = std::make_shared<RecordingBlock>(QStringLiteral("rec"), 1, received);
    ChatMemory again(kSession, small(), std::make_shared<SqliteChatStore>(dir.path()), {block});
    QCOMPARE(block->count, 2); // its state, restored
    QCOMPARE(again.messages().size(), 4);
    QCOMPARE(again.messages(true).size(), 6);
    QCOMPARE(again.get().size(), size_t(4));
}

void TestChatMemory::historyAtTheBudgetAndOneOver()
{
    auto block = std::make_shared<RecordingBlock>(QStringLiteral("rec"), 1);
    ChatMemory memory(kSession, small(), memoryStore(), {block});
    QSignalSpy started(&memory, &ChatMemory::flushStarted);
    QSignalSpy completed(&memory, &ChatMemory::flushCompleted);
    // Five messages of 10 tokens: exactly the budget of 50, no flush.
    for (int i = 0; i < 5; ++i)
        memory.put(sized(i % 2 ? Role::Assistant : Role::User, 10));
    memory.drain();
    QCOMPARE(started.count(), 0);
    QCOMPARE(memory.info().archivedMessages, 0);
    // One token over: the oldest 20 tokens (two messages) go, and what stays starts with a user message.
    memory.put(sized(Role::Assistant, 4));
    memory.drain();
    QCOMPARE(started.count(), 1);
    QCOMPARE(started.first().at(1).toLongLong(), 1);
    QCOMPARE(started.first().at(2).toInt(), 2);  // messages
    QCOMPARE(started.first().at(3).toInt(), 20); // tokens
    QCOMPARE(completed.count(), 1);
    const QList<SessionMessage> active = memory.messages();
    QCOMPARE(active.size(), 4);
    QCOMPARE(active.first().message.role, Role::User);
    QCOMPARE(active.first().seq, 3);
    QCOMPARE(block->received->seqs, (QList<qint64>{1, 2}));
    QCOMPARE(block->count, 2);
}

void TestChatMemory::flushGoesToEveryBlockInOrderOnce()
{
    auto received = std::make_shared<Received>();
    auto a = std::make_shared<RecordingBlock>(QStringLiteral("a"), 1, received);
    auto b = std::make_shared<RecordingBlock>(QStringLiteral("b"), 2, received);
    ChatMemory memory(kSession, small(), memoryStore(), {a, b});
    for (int i = 0; i < 40; ++i)
        memory.put(sized(i % 2 ? Role::Assistant : Role::User, 7 + i % 5));
    memory.drain();
    const QList<SessionMessage> all = memory.messages(true);
    QList<qint64> archived;
    for (const SessionMessage &m : all)
        if (m.isArchived())
            archived << m.seq;
    QVERIFY(archived.size() > 10);
    // Each flush reached a, then b, in the order of the flushes, each archived message exactly once.
    QList<qint64> toA, toB;
    {
        QMutexLocker lock(&received->mutex);
        QCOMPARE(received->blockOrder.size() % 2, 0);
        for (qsizetype i = 0; i < received->blockOrder.size(); i += 2) {
            QCOMPARE(received->blockOrder[i], QStringLiteral("a"));
            QCOMPARE(received->blockOrder[i + 1], QStringLiteral("b"));
            QCOMPARE(received->flushes[i], received->flushes[i + 1]);
            QCOMPARE(received->flushes[i], qint64(i / 2 + 1));
        }
    }
    QCOMPARE(a->count, int(archived.size()));
    QCOMPARE(b->count, int(archived.size()));
    QList<qint64> sorted = received->seqs;
    std::sort(sorted.begin(), sorted.end());
    QList<qint64> twice;
    for (qint64 s : archived)
        twice << s << s;
    QCOMPARE(sorted, twice);
    QVERIFY(memory.info().pendingFlush == 0);
    QVERIFY(countOf(memory.get()) <= 100);
}

void TestChatMemory::blockFailureKeepsTheFlush()
{
    auto received = std::make_shared<Received>();
    auto a = std::make_shared<RecordingBlock>(QStringLiteral("a"), 1, received);
    auto b = std::make_shared<RecordingBlock>(QStringLiteral("b"), 1, received);
    ChatMemory memory(kSession, small(), memoryStore(), {a, b});
    QSignalSpy failed(&memory, &ChatMemory::flushFailed);
    b->failNext = true;
    for (int i = 0; i < 6; ++i)
        memory.put(sized(i % 2 ? Role::Assistant : Role::User, 10));
    memory.drain();
    QCOMPARE(failed.count(), 1);
    QCOMPARE(failed.first().at(2).toString(), QStringLiteral("b"));
    QVERIFY(failed.first().at(3).toString().contains(QStringLiteral("the test's block failed")));
    // The flush stays recorded with b pending; a applied it (state stored), b's state is as before.
    QCOMPARE(memory.info().pendingFlush, 1);
    QCOMPARE(a->count, 2);
    QCOMPARE(b->count, 0);
    // The next put applies it to b alone, then goes on.
    memory.put(sized(Role::User, 5));
    memory.drain();
    QCOMPARE(memory.info().pendingFlush, 0);
    QCOMPARE(a->count, 2);
    QCOMPARE(b->count, 2);
    QCOMPARE(received->blockOrder, (QStringList{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("b")}));
}

void TestChatMemory::aFailingBlockIsLeftOutOfARequest()
{
    auto good = std::make_shared<RecordingBlock>(QStringLiteral("good"), 1);
    good->content = QStringLiteral("good content");
    auto bad = std::make_shared<RecordingBlock>(QStringLiteral("bad"), 0);
    bad->failGet = true;
    ChatMemory memory(kSession, small(), memoryStore(), {good, bad});
    QSignalSpy failed(&memory, &ChatMemory::blockFailed);
    memory.put(ChatMessage::user(QStringLiteral("hello")));
    const ChatContext ctx = memory.getContext();
    QCOMPARE(failed.count(), 1);
    QCOMPARE(failed.first().at(1).toString(), QStringLiteral("bad"));
    QVERIFY(failed.first().at(2).toString().contains(QStringLiteral("cannot embed")));
    QCOMPARE(ctx.failedBlocks, QStringList{QStringLiteral("bad")});
    QCOMPARE(ctx.blocks, QStringList{QStringLiteral("good")});
    QVERIFY(ctx.messages.front().content.contains(QStringLiteral("good content")));
}

void TestChatMemory::finishesAFlushLeftByADeadWriter()
{
    TempStore dir;
    auto store = std::make_shared<SqliteChatStore>(dir.path());
    store->append(kSession, {SessionMessage(sized(Role::User, 10)), SessionMessage(sized(Role::Assistant, 10)),
                             SessionMessage(sized(Role::User, 10))});
    // A writer of this host whose process is gone (no process has pid 2^22 + 1 here).
    const QString dead = QStringLiteral("%1/4194305/abc").arg(QSysInfo::machineHostName().replace(QLatin1Char('/'), QLatin1Char('_')));
    QVERIFY(store->beginFlush(kSession, 1, 2, 20, {QStringLiteral("rec")}, dead));
    auto block = std::make_shared<RecordingBlock>(QStringLiteral("rec"), 1);
    ChatMemory memory(kSession, small(), std::make_shared<SqliteChatStore>(dir.path()), {block});
    memory.drain();
    QCOMPARE(block->received->seqs, (QList<qint64>{1, 2}));
    QVERIFY(!store->pendingFlush(kSession));
    QCOMPARE(store->blockStates(kSession).value(QStringLiteral("rec")), (Json{{"count", 2}}));
}

void TestChatMemory::leavesALiveWritersFlushAlone()
{
    auto store = memoryStore();
    store->append(kSession, {SessionMessage(sized(Role::User, 10)), SessionMessage(sized(Role::Assistant, 10))});
    // Another process of this host, alive: this test's parent (or init).
    const QString alive = QStringLiteral("%1/1/abc").arg(QSysInfo::machineHostName().replace(QLatin1Char('/'), QLatin1Char('_')));
    QVERIFY(store->beginFlush(kSession, 1, 1, 10, {QStringLiteral("rec")}, alive));
    auto block = std::make_shared<RecordingBlock>(QStringLiteral("rec"), 1);
    ChatMemory memory(kSession, small(), store, {block});
    memory.put(sized(Role::User, 45)); // over the budget, but a flush is in another writer's hands
    memory.drain();
    QVERIFY(block->received->seqs.isEmpty());
    QCOMPARE(store->pendingFlush(kSession)->owner, alive);
}

void TestChatMemory::getAtTheLimitAndOneOver()
{
    // History: four messages of 10 tokens (40). Memory: a system message of 3 + 4 markup tokens plus
    // one token per line of the block: 53 lines fill token_limit 100 exactly.
    for (const int lines : {53, 54}) {
        auto block = std::make_shared<RecordingBlock>(QStringLiteral("rec"), 1);
        QStringList content;
        for (int i = 0; i < lines; ++i)
            content << QStringLiteral("w");
        block->content = content.join(QLatin1Char('\n'));
        ChatMemory memory(kSession, small(), memoryStore(), {block});
        QSignalSpy truncated(&memory, &ChatMemory::blockTruncated);
        for (int i = 0; i < 4; ++i)
            memory.put(sized(i % 2 ? Role::Assistant : Role::User, 10));
        const ChatContext ctx = memory.getContext();
        QCOMPARE(ctx.tokens, 100);
        QCOMPARE(countOf(ctx.messages), 100);
        QCOMPARE(ctx.historyMessages, 4);
        if (lines == 53) {
            QCOMPARE(truncated.count(), 0);
            QVERIFY(ctx.truncatedBlocks.isEmpty());
        } else {
            QCOMPARE(truncated.count(), 1);
            QCOMPARE(truncated.first().at(2).toInt(), 54);
            QCOMPARE(truncated.first().at(3).toInt(), 53);
            QCOMPARE(ctx.truncatedBlocks, QStringList{QStringLiteral("rec")});
        }
    }
}

void TestChatMemory::prioritiesDecideWhatGivesWay()
{
    const auto make = [](const QString &name, int priority, int lines) {
        auto b = std::make_shared<RecordingBlock>(name, priority);
        QStringList content;
        for (int i = 0; i < lines; ++i)
            content << name;
        b->content = content.join(QLatin1Char('\n'));
        return b;
    };
    // 40 history tokens, 3 for the system message, 2 for <memory></memory> and 2 per section: 49
    // tokens of block content fit, and the blocks hold 70.
    auto keep = make(QStringLiteral("keep"), 0, 10);
    auto first = make(QStringLiteral("first"), 1, 30);
    auto second = make(QStringLiteral("second"), 2, 30);
    ChatMemory memory(kSession, small(), memoryStore(), {keep, first, second});
    QSignalSpy truncated(&memory, &ChatMemory::blockTruncated);
    for (int i = 0; i < 4; ++i)
        memory.put(sized(i % 2 ? Role::Assistant : Role::User, 10));
    ChatContext ctx = memory.getContext();
    QVERIFY(ctx.tokens <= 100);
    // The largest priority number gave way first: 21 tokens over, 9 of its 30 lines left; enough.
    QCOMPARE(truncated.count(), 1);
    QCOMPARE(truncated.first().at(1).toString(), QStringLiteral("second"));
    QCOMPARE(truncated.first().at(2).toInt(), 30);
    QCOMPARE(truncated.first().at(3).toInt(), 9);
    QCOMPARE(ctx.tokens, 100);
    QCOMPARE(ctx.blocks, (QStringList{QStringLiteral("keep"), QStringLiteral("first"), QStringLiteral("second")}));

    // Without truncation of their own, blocks are left out whole, largest number first.
    first->truncates = false;
    second->truncates = false;
    truncated.clear();
    ctx = memory.getContext();
    QVERIFY(ctx.tokens <= 100);
    QCOMPARE(truncated.count(), 1);
    QCOMPARE(truncated.first().at(1).toString(), QStringLiteral("second"));
    QCOMPARE(truncated.first().at(3).toInt(), 0);
    QCOMPARE(ctx.blocks, (QStringList{QStringLiteral("keep"), QStringLiteral("first")}));
    QCOMPARE(ctx.truncatedBlocks, QStringList{QStringLiteral("second")});
    QVERIFY(!ctx.messages.front().content.contains(QStringLiteral("second")));
}

void TestChatMemory::priorityZeroNeverGivesWay()
{
    auto fixed = std::make_shared<RecordingBlock>(QStringLiteral("fixed"), 0);
    fixed->content = words(80);
    ChatMemory memory(kSession, small(), memoryStore(), {fixed});
    QSignalSpy truncated(&memory, &ChatMemory::blockTruncated);
    memory.put(sized(Role::User, 10));
    // 3 + 4 + 80 = 87 of memory, 10 of history: fits.
    QCOMPARE(memory.getContext().tokens, 97);
    memory.put(sized(Role::Assistant, 10));
    // Over by 7: the block stays whole; the oldest history goes instead.
    const ChatContext ctx = memory.getContext();
    QCOMPARE(truncated.count(), 0);
    QCOMPARE(ctx.omittedMessages, 1);
    QCOMPARE(ctx.tokens, 97);
    // The latest message does not fit beside it either: a clear error.
    memory.put(sized(Role::User, 14));
    const Error e = errorOf([&] { memory.get(); });
    QCOMPARE(e.kind(), ErrorKind::ContextLength);
    QVERIFY2(e.message().contains(QStringLiteral("fixed")) && e.message().contains(QStringLiteral("token_limit 100")), qPrintable(e.message()));
}

void TestChatMemory::historyIsTrimmedWithoutBreakingToolCalls()
{
    auto fixed = std::make_shared<RecordingBlock>(QStringLiteral("fixed"), 0);
    fixed->content = words(40);
    ChatMemoryConfig c = small();
    c.chatHistoryTokenRatio = 1.0; // no flush: only get() decides
    c.tokenFlushSize = 90;
    ChatMemory memory(kSession, c, memoryStore(), {fixed});
    memory.putMessages({SessionMessage(sized(Role::User, 8)),
                        SessionMessage(ChatMessage::assistant(QString(), {ToolCall{QStringLiteral("a"), QStringLiteral("t"), Json::object()}})),
                        SessionMessage(ChatMessage::toolResult(QStringLiteral("a"), QStringLiteral("t"), words(10))),
                        SessionMessage(ChatMessage::assistant(QString(), {ToolCall{QStringLiteral("b"), QStringLiteral("t"), Json::object()}})),
                        SessionMessage(ChatMessage::toolResult(QStringLiteral("b"), QStringLiteral("t"), words(10))),
                        SessionMessage(ChatMessage::assistant(words(5)))});
    const ChatContext ctx = memory.getContext();
    QVERIFY(ctx.tokens <= 100);
    QVERIFY(ctx.omittedMessages > 0);
    QVERIFY2(toolPairProblem(ctx.messages).isEmpty(), qPrintable(toolPairProblem(ctx.messages)));
    QVERIFY(ctx.messages.at(1).role != Role::Tool);
}

void TestChatMemory::extraMessagesAndInsertion()
{
    auto stat = std::make_shared<StaticMemoryBlock>(QStringLiteral("core_info"), QStringLiteral("I am Logan."));
    ChatMemoryConfig c = small();
    ChatMemory memory(kSession, c, memoryStore(), {stat});
    memory.put(ChatMessage::user(QStringLiteral("hi")));
    memory.put(ChatMessage::assistant(QStringLiteral("hello")));
    std::vector<ChatMessage> got = memory.get({ChatMessage::user(QStringLiteral("what is my name?")), ChatMessage::system(QStringLiteral("You help."))});
    QCOMPARE(got.size(), size_t(4));
    QCOMPARE(got[0].role, Role::System);
    QVERIFY(got[0].content.startsWith(QStringLiteral("<memory>\n<static_memory>\nI am Logan.\n</static_memory>\n</memory>\n\nYou help.")));
    QCOMPARE(got[1].content, QStringLiteral("hi"));
    QCOMPARE(got[3].content, QStringLiteral("what is my name?"));
    // The blocks saw the history and the extra messages.
    // insert_method user: into the latest user message, here the extra one.
    c.insertMethod = InsertMethod::User;
    auto stat2 = std::make_shared<StaticMemoryBlock>(QStringLiteral("core_info"), QStringLiteral("I am Logan."));
    ChatMemory userMemory(QStringLiteral("other"), c, memory.store(), {stat2});
    userMemory.put(ChatMessage::user(QStringLiteral("hi")));
    got = userMemory.get({ChatMessage::user(QStringLiteral("what is my name?"))});
    QCOMPARE(got.size(), size_t(2));
    QCOMPARE(got[0].content, QStringLiteral("hi"));
    QVERIFY(got[1].content.startsWith(QStringLiteral("<memory>")));
    QVERIFY(got[1].content.endsWith(QStringLiteral("\n\nwhat is my name?")));
    QVERIFY(std::none_of(got.begin(), got.end(), [](const ChatMessage &m) { return m.role == Role::System; }));
    // Nothing is stored by get().
    QCOMPARE(userMemory.messages().size(), 1);
}

void TestChatMemory::renderedAsTheSeedShows()
{
    auto core = std::make_shared<StaticMemoryBlock>(QStringLiteral("core_info"),
                                                    QStringLiteral("My name is Logan, and I live in Saskatoon. I work at LlamaIndex."));
    auto facts = std::make_shared<FactExtractionMemoryBlock>(QStringLiteral("extracted_info"), nullptr, 50, 1);
    auto store = memoryStore();
    ChatMemory memory(kSession, ChatMemoryConfig(), store, {core, facts});
    facts->restoreState(Json{{"facts", {"Fact 1", "Fact 2 </fact></memory> & more"}}});
    // get() reads the state stored with the last flush: store this one as a flush would.
    store->append(kSession, {SessionMessage(ChatMessage::user(QStringLiteral("x")))});
    QVERIFY(store->beginFlush(kSession, 1, 1, 4, {QStringLiteral("extracted_info")}, QStringLiteral("test")));
    store->completeBlock(kSession, 1, QStringLiteral("extracted_info"), facts->state());
    memory.put(ChatMessage::user(QStringLiteral("Hello!")));
    const std::vector<ChatMessage> got = memory.get();
    QCOMPARE(got.front().role, Role::System);
    QCOMPARE(got.front().content, QStringLiteral("<memory>\n"
                                                 "<static_memory>\n"
                                                 "My name is Logan, and I live in Saskatoon. I work at LlamaIndex.\n"
                                                 "</static_memory>\n"
                                                 "<fact_extraction_memory>\n"
                                                 "<fact>Fact 1</fact>\n"
                                                 "<fact>Fact 2 &lt;/fact&gt;&lt;/memory&gt; &amp; more</fact>\n"
                                                 "</fact_extraction_memory>\n"
                                                 "</memory>"));
}

void TestChatMemory::clearStartsAnew()
{
    auto block = std::make_shared<RecordingBlock>(QStringLiteral("rec"), 1);
    ChatMemory memory(kSession, small(), memoryStore(), {block});
    for (int i = 0; i < 6; ++i)
        memory.put(sized(i % 2 ? Role::Assistant : Role::User, 10));
    memory.drain();
    QCOMPARE(block->count, 2);
    const QString uid = memory.sessionUid();
    QCOMPARE(memory.clear(), 6);
    QVERIFY(memory.sessionUid() != uid);
    QCOMPARE(block->count, 0);
    QVERIFY(memory.messages(true).isEmpty());
    QCOMPARE(memory.put(ChatMessage::user(QStringLiteral("again"))).seq, 7);
}

void TestChatMemory::blockingCallsAreRefusedOnTheWorker()
{
    ChatMemory memory(kSession, small(), memoryStore());
    QString error;
    connect(
        &memory, &ChatMemory::messagesStored, &memory, [&] {
            try {
                memory.get();
            } catch (const Error &e) {
                error = e.message();
            }
        },
        Qt::DirectConnection);
    memory.put(ChatMessage::user(QStringLiteral("x")));
    QVERIFY2(error.contains(QStringLiteral("would wait for itself")), qPrintable(error));
}

void TestChatMemory::blocksAreOneSessionEach()
{
    auto block = std::make_shared<RecordingBlock>(QStringLiteral("rec"), 1);
    auto store = memoryStore();
    ChatMemory one(QStringLiteral("one"), small(), store, {block});
    const Error e = errorOf([&] { ChatMemory two(QStringLiteral("two"), small(), store, {block}); });
    QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
    QVERIFY(e.message().contains(QStringLiteral("already belongs")));
    const Error dup = errorOf([&] {
        ChatMemory three(QStringLiteral("three"), small(), store,
                         {std::make_shared<RecordingBlock>(QStringLiteral("x"), 1), std::make_shared<RecordingBlock>(QStringLiteral("x"), 2)});
    });
    QVERIFY(dup.message().contains(QStringLiteral("two memory blocks named x")));
}

void TestChatMemory::twoThreadsOneChatMemory()
{
    auto block = std::make_shared<RecordingBlock>(QStringLiteral("rec"), 1);
    ChatMemory memory(kSession, small(), memoryStore(), {block});
    const auto writer = [&memory](int who) {
        for (int i = 0; i < 50; ++i)
            memory.put(ChatMessage::user(QStringLiteral("writer %1 message %2 %3").arg(who).arg(i).arg(words(i % 7))));
    };
    QFuture<void> a = QtConcurrent::run(writer, 1);
    QFuture<void> b = QtConcurrent::run(writer, 2);
    a.waitForFinished();
    b.waitForFinished();
    memory.drain();
    const QList<SessionMessage> all = memory.messages(true);
    QCOMPARE(all.size(), 100);
    QSet<QString> texts;
    for (qsizetype i = 0; i < all.size(); ++i) {
        QCOMPARE(all[i].seq, qint64(i + 1));
        texts.insert(all[i].message.content);
    }
    QCOMPARE(texts.size(), 100);
    int archived = 0;
    for (const SessionMessage &m : all)
        archived += m.isArchived();
    QCOMPARE(block->count, archived);
    QCOMPARE(int(block->received->seqs.size()), archived);
}

void TestChatMemory::twoWritersOneSession()
{
    // Two ChatMemory objects, each with its own connection to one file, write one session at once.
    TempStore dir;
    auto received = std::make_shared<Received>();
    auto blockA = std::make_shared<RecordingBlock>(QStringLiteral("rec"), 1, received);
    auto blockB = std::make_shared<RecordingBlock>(QStringLiteral("rec"), 1, received);
    ChatMemory a(kSession, small(), std::make_shared<SqliteChatStore>(dir.path()), {blockA});
    ChatMemory b(kSession, small(), std::make_shared<SqliteChatStore>(dir.path()), {blockB});
    const auto writer = [](ChatMemory *m, int who) {
        for (int i = 0; i < 40; ++i)
            m->put(ChatMessage::user(QStringLiteral("writer %1 message %2 %3").arg(who).arg(i).arg(words(3 + i % 5))));
    };
    QFuture<void> fa = QtConcurrent::run(writer, &a, 1);
    QFuture<void> fb = QtConcurrent::run(writer, &b, 2);
    fa.waitForFinished();
    fb.waitForFinished();
    a.drain();
    b.drain();
    const QList<SessionMessage> all = a.messages(true);
    QCOMPARE(all.size(), 80);
    QList<qint64> archived;
    for (qsizetype i = 0; i < all.size(); ++i) {
        QCOMPARE(all[i].seq, qint64(i + 1));
        if (all[i].isArchived())
            archived << all[i].seq;
    }
    QVERIFY(!archived.isEmpty());
    // Every archived message reached a block exactly once, whichever writer flushed it.
    QList<qint64> got = received->seqs;
    std::sort(got.begin(), got.end());
    QCOMPARE(got, archived);
    QCOMPARE(a.info().pendingFlush, 0);
    QVERIFY(countOf(a.get()) <= 100);
}

void TestChatMemory::randomSessionsFitTheLimit()
{
    QRandomGenerator rng(20240518);
    int fitted = 0, refused = 0, truncations = 0, trimmed = 0;
    for (int round = 0; round < 300; ++round) {
        ChatMemoryConfig c;
        c.tokenCounter = wordCounter();
        c.tokenLimit = 30 + int(rng.bounded(400));
        c.chatHistoryTokenRatio = 0.2 + rng.generateDouble() * 0.8;
        c.tokenFlushSize = 1 + int(rng.bounded(c.tokenLimit - 1));
        c.insertMethod = rng.bounded(2) ? InsertMethod::System : InsertMethod::User;
        if (c.historyBudget() < 1)
            continue;

        std::vector<std::shared_ptr<MemoryBlock>> blocks;
        const int blockCount = int(rng.bounded(4));
        for (int b = 0; b < blockCount; ++b) {
            auto block = std::make_shared<RecordingBlock>(QStringLiteral("b%1").arg(b), int(rng.bounded(4)));
            QStringList lines;
            const int n = int(rng.bounded(1, 12));
            for (int l = 0; l < n; ++l)
                lines << words(1 + int(rng.bounded(8)));
            block->content = lines.join(QLatin1Char('\n'));
            block->truncates = rng.bounded(2);
            blocks.push_back(block);
        }
        ChatMemory memory(kSession, c, memoryStore(), blocks);
        QSignalSpy truncated(&memory, &ChatMemory::blockTruncated);

        // A session of turns: user, sometimes an assistant with tool calls and their results, an answer.
        const int maxWords = std::max(1, std::min(20, c.tokenLimit - TokenCounter::kMessageOverhead - 10));
        const int turns = 1 + int(rng.bounded(12));
        int call = 0;
        for (int t = 0; t < turns; ++t) {
            QList<SessionMessage> turn{SessionMessage(ChatMessage::user(words(1 + int(rng.bounded(maxWords)))))};
            if (rng.bounded(3) == 0) {
                std::vector<ToolCall> calls;
                const int n = 1 + int(rng.bounded(2));
                for (int k = 0; k < n; ++k)
                    calls.push_back(ToolCall{QStringLiteral("c%1").arg(++call), QStringLiteral("tool"), Json::object()});
                turn << SessionMessage(ChatMessage::assistant(QString(), calls));
                for (const ToolCall &tc : calls)
                    turn << SessionMessage(ChatMessage::toolResult(tc.id, tc.name, words(1 + int(rng.bounded(maxWords)))));
            }
            if (rng.bounded(4) != 0)
                turn << SessionMessage(ChatMessage::assistant(words(1 + int(rng.bounded(maxWords)))));
            memory.putMessages(turn);
        }
        std::vector<ChatMessage> extra;
        if (rng.bounded(2))
            extra.push_back(ChatMessage::system(words(1 + int(rng.bounded(5)))));
        if (rng.bounded(2))
            extra.push_back(ChatMessage::user(words(1 + int(rng.bounded(5)))));

        try {
            const ChatContext ctx = memory.getContext(extra);
            ++fitted;
            QVERIFY2(countOf(ctx.messages) <= c.tokenLimit,
                     qPrintable(QStringLiteral("round %1: %2 tokens for a limit of %3").arg(round).arg(countOf(ctx.messages)).arg(c.tokenLimit)));
            QCOMPARE(ctx.tokens, countOf(ctx.messages));
            QVERIFY2(toolPairProblem(ctx.messages).isEmpty(), qPrintable(QStringLiteral("round %1: %2").arg(round).arg(toolPairProblem(ctx.messages))));
            for (const auto &b : blocks)
                if (b->priority() == 0)
                    QVERIFY2(ctx.blocks.contains(b->name()), qPrintable(QStringLiteral("round %1: priority-0 block %2 missing").arg(round).arg(b->name())));
            for (const QVariantList &args : truncated)
                QVERIFY(memory.block(args.at(1).toString())->priority() > 0);
            truncations += int(truncated.size());
            trimmed += ctx.omittedMessages > 0;
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::ContextLength);
            ++refused;
            // Only when the priority-0 blocks, the extra messages and the latest message cannot fit.
            std::vector<ChatMessage> minimal;
            for (const ChatMessage &m : extra)
                minimal.push_back(m);
            const QList<SessionMessage> active = memory.messages();
            if (extra.empty() || std::none_of(extra.begin(), extra.end(), [](const ChatMessage &m) { return m.role != Role::System; })) {
                qsizetype from = active.size() - 1;
                while (from > 0 && active[from].message.role == Role::Tool)
                    --from;
                for (qsizetype i = from; i < active.size(); ++i)
                    minimal.push_back(active[i].message);
            }
            // The smallest request possible: the priority-0 sections (with the <memory> markup, and a
            // message of their own when nothing takes them) beside the minimal messages.
            int fixed = 0, sections = 0;
            for (const auto &b : blocks)
                if (b->priority() == 0) {
                    fixed += wordCounter().count(b->render(std::static_pointer_cast<RecordingBlock>(b)->content));
                    ++sections;
                }
            int smallest = countOf(minimal);
            if (sections > 0) {
                const Role target = c.insertMethod == InsertMethod::System ? Role::System : Role::User;
                const bool merged = std::any_of(minimal.begin(), minimal.end(), [target](const ChatMessage &m) { return m.role == target; });
                smallest += fixed + 2 + 2 * sections + (merged ? 0 : TokenCounter::kMessageOverhead);
            }
            QVERIFY2(smallest > c.tokenLimit,
                     qPrintable(QStringLiteral("round %1 was refused, yet a request of %2 tokens fits %3").arg(round).arg(smallest).arg(c.tokenLimit)));
        }
    }
    qInfo("%d requests fitted (%d block truncations, %d with history left out), %d refused", fitted, truncations, trimmed, refused);
    QVERIFY(fitted > 200);
    QVERIFY(truncations > 20);
    QVERIFY(trimmed > 10);
    QVERIFY(refused > 0);
}

QTEST_GUILESS_MAIN(TestChatMemory)
#include "test_chat_memory.moc"
