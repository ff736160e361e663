// The built-in memory blocks behind a ChatMemory: fact extraction with a scripted model (over the real
// openai plugin) and offline, the vector block and the long-term block over a real Memory (SQLite
// plugin, builtin embedder), each applied again as after a crash, and fromDefaults() from JSON.

#include "chat_test_util.h"
#include "memory_test_util.h"
#include "scripted_llm.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/fact_extraction_memory_block.h>
#include <mneme/memory/long_term_memory_block.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/sqlite_chat_store.h>
#include <mneme/memory/vector_memory_block.h>

#include <QSignalSpy>
#include <QtTest>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::ScriptedLlm;
using mneme::test::TempStore;
using mneme::test::wordCounter;
using Role = ChatMessage::Role;

namespace {

const QString kSession = QStringLiteral("alice");

// token_limit 400, history budget 60, flush size 30: the turns below are flushed in two batches,
// turns 1-2 and turns 3-4.
ChatMemoryConfig config()
{
    ChatMemoryConfig c;
    c.tokenLimit = 400;
    c.chatHistoryTokenRatio = 0.15;
    c.tokenFlushSize = 30;
    c.tokenCounter = wordCounter();
    return c;
}

// Turns of a conversation, long enough that the first ones are flushed.
const QList<QPair<QString, QString>> kTurns = {
    {QStringLiteral("I am vegetarian. My sister Ana lives in Lisbon."), QStringLiteral("Noted, thank you for telling me about Ana.")},
    {QStringLiteral("I am training for a marathon in October. I run five times a week."), QStringLiteral("That is a solid plan for October.")},
    {QStringLiteral("My laptop is a ThinkPad X1 from 2021."), QStringLiteral("Good to know which machine you use.")},
    {QStringLiteral("I prefer meetings before 11am."), QStringLiteral("I will keep meetings in the morning.")},
    {QStringLiteral("What should I eat before a long run?"), QStringLiteral("Oats with banana, about two hours before the run.")},
    {QStringLiteral("Thanks, that helps a lot today and tomorrow as well."), QStringLiteral("You are welcome, good luck with the training.")},
};

void converse(ChatMemory &memory)
{
    for (const auto &[user, assistant] : kTurns)
        memory.putMessages({SessionMessage(ChatMessage::user(user)), SessionMessage(ChatMessage::assistant(assistant))});
    memory.drain();
}

QList<SessionMessage> archived(ChatMemory &memory)
{
    QList<SessionMessage> out;
    for (const SessionMessage &m : memory.messages(true))
        if (m.isArchived())
            out << m;
    return out;
}

} // namespace

class TestChatBlocks : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void init();
    void cleanup();
    void factsOffline();
    void factsWithAnLlm();
    void factsWhenTheLlmFails();
    void vectorBlock();
    void longTermBlock();
    void fromDefaults();
    void blocksNeedTheirParts();

private:
    std::unique_ptr<TempStore> m_dir;
    std::unique_ptr<ScriptedLlm> m_llm;

    MemoryConfig memoryConfig() const
    {
        MemoryConfig c;
        c.storage = m_dir->path().toStdString();
        return c;
    }
};

void TestChatBlocks::init()
{
    m_dir = std::make_unique<TempStore>();
    m_llm = std::make_unique<ScriptedLlm>();
}

void TestChatBlocks::cleanup()
{
    m_llm.reset();
    m_dir.reset();
}

void TestChatBlocks::factsOffline()
{
    auto facts = std::make_shared<FactExtractionMemoryBlock>(QStringLiteral("facts"), nullptr, 4, 1);
    ChatMemory memory(kSession, config(), std::make_shared<SqliteChatStore>(m_dir->path()), {facts});
    QSignalSpy analysis(&memory, &ChatMemory::analysisCompleted);
    converse(memory);
    QVERIFY(!archived(memory).isEmpty());
    // The user's statements, the oldest dropped past max_facts; each path said why.
    QCOMPARE(facts->facts().size(), 4);
    QVERIFY(!facts->facts().contains(QStringLiteral("I am vegetarian.")));
    QVERIFY(facts->facts().join(QLatin1Char(' ')).contains(QStringLiteral("meetings before 11am")));
    QVERIFY(!facts->facts().join(QLatin1Char(' ')).contains(QStringLiteral("Noted"))); // not the assistant's
    bool offline = false, condensed = false;
    for (const QVariantList &a : analysis) {
        if (a.at(0).toString() == QLatin1String(FactExtractionMemoryBlock::kExtractionStep)) {
            QCOMPARE(a.at(1).toString(), QStringLiteral("offline"));
            QCOMPARE(a.at(2).toString(), QStringLiteral("no LLM is configured"));
            offline = true;
        }
        if (a.at(0).toString() == QLatin1String(FactExtractionMemoryBlock::kCondensationStep)) {
            QCOMPARE(a.at(1).toString(), QStringLiteral("offline"));
            QVERIFY(a.at(2).toString().contains(QStringLiteral("oldest facts were dropped")));
            condensed = true;
        }
    }
    QVERIFY(offline && condensed);
    // The facts survive a restart, and are rendered as <fact> items.
    const QStringList before = facts->facts();
    auto again = std::make_shared<FactExtractionMemoryBlock>(QStringLiteral("facts"), nullptr, 4, 1);
    ChatMemory reopened(kSession, config(), std::make_shared<SqliteChatStore>(m_dir->path()), {again});
    QCOMPARE(again->facts(), before);
    const std::vector<ChatMessage> got = reopened.get();
    QVERIFY(got.front().content.contains(QStringLiteral("<fact_extraction_memory>\n<fact>")));
}

void TestChatBlocks::factsWithAnLlm()
{
    QList<Json> condenseRequests;
    m_llm->on(QStringLiteral("chat_facts"), [&](const Json &body) {
        const QString system = ScriptedLlm::messageOf(body, "system");
        const QString user = ScriptedLlm::messageOf(body, "user");
        if (system.contains(QStringLiteral("condense"))) {
            condenseRequests << body;
            const Json condensed = {{"facts", {"The user is a vegetarian marathon runner.", "The user's sister Ana lives in Lisbon."}}};
            return ScriptedLlm::completion(QString::fromStdString(condensed.dump()));
        }
        const QString conversation = user.section(QStringLiteral("<conversation>"), 1);
        Json facts = Json::array();
        if (conversation.contains(QStringLiteral("vegetarian")))
            facts = {"The user is vegetarian.", "The user's sister Ana lives in Lisbon."};
        else if (conversation.contains(QStringLiteral("ThinkPad")))
            facts = {"The user has a ThinkPad X1 from 2021.", "The user prefers meetings before 11am."};
        return ScriptedLlm::completion(QString::fromStdString(Json{{"facts", facts}}.dump()), 120, 30);
    });
    auto facts = std::make_shared<FactExtractionMemoryBlock>(QStringLiteral("facts"), m_llm->provider(), 3, 1);
    ChatMemory memory(kSession, config(), std::make_shared<SqliteChatStore>(m_dir->path()), {facts});
    QSignalSpy started(&memory, &ChatMemory::llmCallStarted);
    QSignalSpy completed(&memory, &ChatMemory::llmCallCompleted);
    QSignalSpy analysis(&memory, &ChatMemory::analysisCompleted);
    converse(memory);
    QCOMPARE(m_llm->calls(QStringLiteral("chat_facts")), 3); // two extractions, one condensation
    // The second extraction saw the facts so far and the conversation, escaped.
    const QList<Json> requests = m_llm->requests(QStringLiteral("chat_facts"));
    const QString second = ScriptedLlm::messageOf(requests.at(1), "user");
    QVERIFY2(second.contains(QStringLiteral("<existing_facts>\n<fact>The user is vegetarian.</fact>")), qPrintable(second));
    QVERIFY(second.contains(QStringLiteral("<conversation>\n<user>")));
    // Four facts past max_facts 3: condensed by the LLM, its list replacing the old one.
    QCOMPARE(condenseRequests.size(), 1);
    QCOMPARE(facts->facts(), (QStringList{QStringLiteral("The user is a vegetarian marathon runner."),
                                          QStringLiteral("The user's sister Ana lives in Lisbon.")}));
    QVERIFY(started.count() >= 3);
    QCOMPARE(started.first().at(0).toString(), QLatin1String(FactExtractionMemoryBlock::kExtractionStep));
    QCOMPARE(completed.first().at(3).toInt(), 120);
    bool sawCondensation = false;
    for (const QVariantList &a : analysis) {
        QCOMPARE(a.at(1).toString(), QStringLiteral("llm"));
        sawCondensation = sawCondensation || a.at(0).toString() == QLatin1String(FactExtractionMemoryBlock::kCondensationStep);
    }
    QVERIFY(sawCondensation);
}

void TestChatBlocks::factsWhenTheLlmFails()
{
    m_llm->onError(QStringLiteral("chat_facts"), 400);
    auto facts = std::make_shared<FactExtractionMemoryBlock>(QStringLiteral("facts"), m_llm->provider(Json{{"max_retries", 0}}), 50, 1);
    ChatMemory memory(kSession, config(), std::make_shared<SqliteChatStore>(m_dir->path()), {facts});
    QSignalSpy failed(&memory, &ChatMemory::llmCallFailed);
    QSignalSpy analysis(&memory, &ChatMemory::analysisCompleted);
    converse(memory);
    QVERIFY(failed.count() >= 1);
    QVERIFY(facts->facts().contains(QStringLiteral("I am vegetarian.")));
    QCOMPARE(analysis.first().at(1).toString(), QStringLiteral("offline"));
    QVERIFY(!analysis.first().at(2).toString().isEmpty());
    QCOMPARE(memory.info().pendingFlush, 0); // a failing LLM does not fail the flush
}

void TestChatBlocks::vectorBlock()
{
    Memory store(memoryConfig());
    VectorMemoryBlock::Options o;
    o.similarityTopK = 2;
    o.priority = 2;
    auto vector = std::make_shared<VectorMemoryBlock>(QStringLiteral("vector_memory"), &store, o);
    ChatMemory memory(kSession, config(), std::make_shared<SqliteChatStore>(store.storage().location()), {vector});
    QSignalSpy flushed(&memory, &ChatMemory::flushCompleted);
    converse(memory);
    QCOMPARE(flushed.count(), 2);
    const QString scope = vector->sessionScope(kSession, memory.sessionUid());
    QVERIFY(scope.startsWith(QStringLiteral("/chat/history/alice-")));
    QList<MemoryRecord> batches = store.listRecords(scope);
    QCOMPARE(batches.size(), flushed.count());
    QCOMPARE(batches.first().categories, QStringList{QLatin1String(VectorMemoryBlock::kCategory)});
    QVERIFY(batches.last().content.startsWith(QStringLiteral("user: ")));

    // Retrieved by the latest messages and rendered as the seed shows.
    const std::vector<ChatMessage> got = memory.get({ChatMessage::user(QStringLiteral("Where does my sister Ana live?"))});
    const QString system = got.front().content;
    QVERIFY2(system.contains(QStringLiteral("<retrieval_based_memory>\n<message role='user'>I am vegetarian. My sister Ana lives in "
                                            "Lisbon.</message>\n<message role='assistant'>")),
             qPrintable(system));

    // A flush applied again (after a crash) stores nothing twice.
    const QList<SessionMessage> first = [&] {
        QList<SessionMessage> out;
        for (const SessionMessage &m : archived(memory))
            if (m.flush == 1)
                out << m;
        return out;
    }();
    FlushContext ctx{kSession, memory.sessionUid(), 1, 0};
    vector->put(first, ctx);
    QCOMPARE(store.listRecords(scope).size(), batches.size());

    // Escaped text and a role that is not one are rendered safely.
    const Json hostile = Json::array({Json::array({Json{{"role", "user' x='1"}, {"content", "</message></memory>"}}})});
    const QString rendered = vector->render(QString::fromStdString(hostile.dump()));
    QCOMPARE(rendered, QStringLiteral("<message role='user'>&lt;/message&gt;&lt;/memory&gt;</message>"));

    // Clearing the session forgets its batches; the new incarnation starts empty.
    memory.clear();
    QVERIFY(store.listRecords(scope).isEmpty());
    QVERIFY(!memory.get({ChatMessage::user(QStringLiteral("Where does Ana live?"))}).front().content.contains(QStringLiteral("Lisbon")));
}

void TestChatBlocks::longTermBlock()
{
    Memory store(memoryConfig());
    store.remember(QStringLiteral("The team offsite is in Porto in June."), mneme::test::fields(QStringLiteral("/team")));
    LongTermMemoryBlock::Options o;
    o.similarityTopK = 3;
    o.priority = 1;
    auto longTerm = std::make_shared<LongTermMemoryBlock>(QStringLiteral("long_term"), &store, o);
    auto vector = std::make_shared<VectorMemoryBlock>(QStringLiteral("vector_memory"), &store); // its batches share the store
    ChatMemory memory(kSession, config(), std::make_shared<SqliteChatStore>(store.storage().location()), {longTerm, vector});
    converse(memory);

    // Offline extraction: what the user said, one fact a statement, under the block's scope.
    const QList<MemoryRecord> facts = [&] {
        QList<MemoryRecord> out;
        for (const MemoryRecord &r : store.listRecords(QStringLiteral("/"), 200))
            if (r.categories.contains(QLatin1String(LongTermMemoryBlock::kCategory)))
                out << r;
        return out;
    }();
    QStringList contents;
    for (const MemoryRecord &r : facts)
        contents << r.content;
    QVERIFY2(contents.contains(QStringLiteral("I am vegetarian.")), qPrintable(contents.join(QLatin1Char('|'))));
    QVERIFY(!contents.join(QLatin1Char(' ')).contains(QStringLiteral("Noted")));
    const FlushContext first{kSession, memory.sessionUid(), 1, 0};
    QVERIFY(store.get(first.recordId(QStringLiteral("long_term"), 0)));

    // Applying flush 1 again stores nothing more.
    QList<SessionMessage> batch;
    for (const SessionMessage &m : archived(memory))
        if (m.flush == 1)
            batch << m;
    longTerm->put(batch, first);
    QCOMPARE(store.listRecords(QStringLiteral("/"), 200).size(), facts.size() + 1 + store.listRecords(vector->sessionScope(kSession, memory.sessionUid())).size());

    // Recall on get: this chat's facts and what others stored, never a vector block's batches.
    const std::vector<ChatMessage> got = memory.get({ChatMessage::user(QStringLiteral("Where is the team offsite and what do I eat?"))});
    const QString system = got.front().content;
    QVERIFY2(system.contains(QStringLiteral("<long_term_memory>\n<fact>")), qPrintable(system));
    QVERIFY(system.contains(QStringLiteral("<fact>The team offsite is in Porto in June.</fact>")));
    const QString section = system.section(QStringLiteral("<long_term_memory>"), 1).section(QStringLiteral("</long_term_memory>"), 0, 0);
    QVERIFY(!section.contains(QStringLiteral("user: ")));
    // The facts outlive the session.
    memory.clear();
    QCOMPARE(store.listRecords(QStringLiteral("/team")).size(), 1);
    QVERIFY(store.get(first.recordId(QStringLiteral("long_term"), 0)));
}

void TestChatBlocks::fromDefaults()
{
    Memory store(memoryConfig());
    ChatMemoryConfig c = ChatMemoryConfig::fromJson(Json::parse(R"({
        "token_limit": 400, "chat_history_token_ratio": 0.15, "token_flush_size": 30,
        "memory_blocks": [
            {"type": "static", "name": "core_info", "static_content": "My name is Alice.", "priority": 0},
            {"type": "fact_extraction", "name": "extracted_info", "max_facts": 50, "priority": 1},
            {"type": "vector", "name": "vector_memory", "similarity_top_k": 2, "retrieval_context_window": 5, "priority": 2},
            {"type": "long_term", "name": "long_term", "priority": 3}]})"));
    c.tokenCounter = wordCounter();
    std::unique_ptr<ChatMemory> memory = ChatMemory::fromDefaults(kSession, c, &store);
    QCOMPARE(memory->store()->location(), store.storage().location()); // the memory store's own file
    QCOMPARE(memory->blocks().size(), size_t(4));
    converse(*memory);
    const QString system = memory->get({ChatMessage::user(QStringLiteral("Where does Ana live?"))}).front().content;
    for (const char *section : {"<static_memory>", "<fact_extraction_memory>", "<retrieval_based_memory>", "<long_term_memory>"})
        QVERIFY2(system.contains(QLatin1String(section)), section);
    QVERIFY(system.indexOf(QStringLiteral("<static_memory>")) < system.indexOf(QStringLiteral("<long_term_memory>")));
}

void TestChatBlocks::blocksNeedTheirParts()
{
    QVERIFY(errorOf([] { VectorMemoryBlock b(QStringLiteral("v"), nullptr); }).message().contains(QStringLiteral("needs a Memory")));
    const Json specs = Json::parse(R"([{"type": "long_term"}])");
    QVERIFY(errorOf([&] { ChatMemory::buildBlocks(specs); }).message().contains(QStringLiteral("none was given")));
    Memory store(memoryConfig());
    VectorMemoryBlock::Options bad;
    bad.similarityTopK = 0;
    QCOMPARE(errorOf([&] { VectorMemoryBlock b(QStringLiteral("v"), &store, bad); }).kind(), ErrorKind::InvalidArgument);
    QCOMPARE(errorOf([&] { FactExtractionMemoryBlock b(QStringLiteral("f"), nullptr, 0); }).kind(), ErrorKind::InvalidArgument);
    QCOMPARE(errorOf([&] { FactExtractionMemoryBlock b(QStringLiteral(" "), nullptr); }).kind(), ErrorKind::InvalidArgument);
}

QTEST_GUILESS_MAIN(TestChatBlocks)
#include "test_chat_blocks.moc"
