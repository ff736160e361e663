// Memory::addConversation, Mem0-style: fact extraction with a rolling summary and recent messages,
// then ADD / UPDATE / DELETE / NOOP decisions over small ids. The LLM is the real `openai` plugin
// talking HTTP to a scripted server on loopback; storage is the SQLite plugin; the embedder is a
// bag-of-words test double, so texts sharing words are similar.

#include "fake_embedder.h"
#include "memory/statement_splitter_p.h"
#include "memory_test_util.h"
#include "scripted_llm.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <QRegularExpression>
#include <QSemaphore>
#include <QSignalSpy>
#include <QtTest>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::FakeEmbedder;
using mneme::test::fields;
using mneme::test::ScriptedLlm;
using mneme::test::ScriptedReply;
using mneme::test::TempStore;

namespace {

// These tests look at the store as its owner does: every record, private ones included.
const ReadContext kOwner = ReadContext::asCurator();

const QString kFacts = QStringLiteral("conversation_facts");
const QString kTool = QStringLiteral("record_memory_changes");
const QString kJsonUpdate = QStringLiteral("conversation_update");
const QString kSummary = QStringLiteral("conversation_summary");

// A provider without native tools, forwarding to the scripted one: the JSON path of the update step.
class JsonOnlyLlm : public LlmProvider
{
public:
    explicit JsonOnlyLlm(std::shared_ptr<LlmProvider> inner) : m_inner(std::move(inner)) {}
    QString id() const override { return QStringLiteral("test/json-only"); }
    Capabilities capabilities() const override { return m_inner->capabilities() & Capability::JsonSchema; }
    QFuture<ChatResponse> chat(const ChatRequest &request) override { return m_inner->chat(request); }

private:
    std::shared_ptr<LlmProvider> m_inner;
};

ConversationMessage msg(const QString &role, const QString &content, const QDateTime &at = {})
{
    return ConversationMessage{role, content, QString(), at};
}

QList<ConversationMessage> pair(const QString &user, const QString &assistant = QStringLiteral("Noted."))
{
    return {msg(QStringLiteral("user"), user), msg(QStringLiteral("assistant"), assistant)};
}

AddConversationOptions conv(const QString &id = QStringLiteral("c1"))
{
    AddConversationOptions o;
    o.conversationId = id;
    return o;
}

Json facts(const QStringList &list)
{
    return Json{{"facts", list}};
}

Json change(const QString &event, const Json &id, const QString &text = {}, const QString &oldText = {})
{
    Json c = {{"event", event}, {"id", id}};
    if (!text.isEmpty())
        c["text"] = text;
    if (!oldText.isEmpty())
        c["old_text"] = oldText;
    return c;
}

Json changes(std::initializer_list<Json> items)
{
    Json list = Json::array();
    for (const Json &i : items)
        list.push_back(i);
    return Json{{"changes", list}};
}

// An OpenAI reply with one tool call whose arguments are `raw`, verbatim (valid JSON or not).
ScriptedReply toolReply(const QString &raw)
{
    return ScriptedLlm::toolCallReply(QStringLiteral("record_memory_changes"), raw);
}

QStringList events(const ConversationResult &r)
{
    QStringList out;
    for (const ConversationChange &c : r.changes)
        out << c.event;
    return out;
}

// The steps of failed LLM calls, without the summary's (it has no scripted reply in most tests).
QStringList failedSteps(const QSignalSpy &spy)
{
    QStringList out;
    for (const QList<QVariant> &args : spy)
        if (args.at(0).toString() != QLatin1String("conversation_summary"))
            out << args.at(0).toString();
    return out;
}

QStringList pathsOf(const QSignalSpy &spy, const QString &step)
{
    QStringList out;
    for (const QList<QVariant> &args : spy)
        if (args.at(0).toString() == step)
            out << args.at(1).toString();
    return out;
}

const QDateTime kLongAgo = QDateTime(QDate(2021, 3, 4), QTime(5, 6, 7), Qt::UTC);

} // namespace

class TestConversationIngest : public QObject
{
    Q_OBJECT

    std::unique_ptr<TempStore> m_dir;
    std::unique_ptr<ScriptedLlm> m_llm;
    std::shared_ptr<FakeEmbedder> m_embedder;

    MemoryConfig config(bool withLlm = true) const
    {
        MemoryConfig c;
        c.storage = Json{{"provider", "sqlite"}, {"config", {{"path", m_dir->path()}}}};
        if (withLlm)
            c.llm = m_llm->config();
        return c;
    }
    std::unique_ptr<Memory> open(bool withLlm = true)
    {
        return std::make_unique<Memory>(config(withLlm), nullptr, m_embedder);
    }
    static int count(Memory &m) { return m.info(QStringLiteral("/"), kOwner).recordCount; }

    // Stores a record as given (no LLM involved), created long ago.
    static QString seed(Memory &m, const QString &content, const QString &source = {}, bool isPrivate = false,
                        const QString &scope = QStringLiteral("/"))
    {
        MemoryRecord r;
        r.content = content;
        r.source = source;
        r.isPrivate = isPrivate;
        r.scope = scope;
        r.createdAt = kLongAgo;
        const SaveResult s = m.importRecords({r}, false);
        return s.ids.value(0);
    }
    static Json state(Memory &m, const QString &id = QStringLiteral("c1"))
    {
        // Keys are hashes of the conversation's id, scope, source and privacy: find it by its id.
        for (const QString &key : m.storage().stateKeys(QStringLiteral("conversation:"))) {
            const Json s = m.storage().readState(key).value_or(Json());
            if (s.value("conversation_id", std::string()) == id.toStdString())
                return s;
        }
        return Json();
    }

private Q_SLOTS:
    void init()
    {
        m_dir = std::make_unique<TempStore>();
        m_llm = std::make_unique<ScriptedLlm>();
        m_embedder = std::make_shared<FakeEmbedder>(256);
    }
    void cleanup()
    {
        m_llm.reset();
        m_dir.reset();
    }

    // ---- The four operations -------------------------------------------------------------------

    void addsNewFacts()
    {
        m_llm->onJson(kFacts, facts({QStringLiteral("Lives in Berlin"), QStringLiteral("Enjoys hiking on weekends")}));
        auto m = open();
        QSignalSpy started(m.get(), &Memory::saveStarted);
        QSignalSpy completed(m.get(), &Memory::saveCompleted);
        QSignalSpy paths(m.get(), &Memory::analysisCompleted);
        const QDateTime at(QDate(2024, 5, 1), QTime(9, 0), Qt::UTC);
        QList<ConversationMessage> messages = {msg(QStringLiteral("user"), QStringLiteral("I live in Berlin and hike every weekend."), at),
                                               msg(QStringLiteral("assistant"), QStringLiteral("Berlin has great trails nearby."), at)};
        const ConversationResult r = m->addConversation(messages, conv()).result();
        m->drainWrites(); // the spies are read once the writer is done
        QCOMPARE(r.path, QStringLiteral("llm"));
        QCOMPARE(r.facts, (QStringList{QStringLiteral("Lives in Berlin"), QStringLiteral("Enjoys hiking on weekends")}));
        QCOMPARE(events(r), (QStringList{QStringLiteral("ADD"), QStringLiteral("ADD")}));
        QCOMPARE(count(*m), 2);
        const auto stored = m->get(r.changes[0].recordId, kOwner);
        QVERIFY(stored);
        QCOMPARE(stored->content, QStringLiteral("Lives in Berlin"));
        QCOMPARE(stored->createdAt, at); // the message's time
        // Nothing stored to compare with: no update call.
        QCOMPARE(m_llm->calls(kTool), 0);
        QCOMPARE(pathsOf(paths, kJsonUpdate), QStringList{QStringLiteral("skipped")});
        QCOMPARE(started.size(), 1);
        QCOMPARE(completed.size(), 1);
        // The extraction prompt has today's date, computed at the call.
        QVERIFY(m_llm->lastPrompt(kFacts).contains(QDate::currentDate().toString(Qt::ISODate)));
        QVERIFY(m_llm->lastPrompt(kFacts).contains(QStringLiteral("I live in Berlin and hike every weekend.")));
    }

    void updateKeepsIdCreatedAtAndHistory()
    {
        m_llm->onJson(kFacts, facts({QStringLiteral("Plays tennis with friends on Sundays")}));
        m_llm->onToolCall(kTool, kTool,
                          changes({change(QStringLiteral("UPDATE"), "0", QStringLiteral("Plays tennis with friends on Sundays"),
                                          QStringLiteral("Plays tennis"))}));
        auto m = open();
        const QString id = seed(*m, QStringLiteral("Plays tennis"));
        const ConversationResult r = m->addConversation(pair(QStringLiteral("I play tennis with friends every Sunday.")), conv()).result();
        QCOMPARE(events(r), QStringList{QStringLiteral("UPDATE")});
        QCOMPARE(r.changes[0].recordId, id);
        QCOMPARE(r.changes[0].previousContent, QStringLiteral("Plays tennis"));
        QCOMPARE(count(*m), 1);
        const auto stored = m->get(id, kOwner);
        QVERIFY(stored);
        QCOMPARE(stored->content, QStringLiteral("Plays tennis with friends on Sundays"));
        QCOMPARE(stored->createdAt, kLongAgo);
        const QList<HistoryEntry> h = m->history(id, kOwner);
        QCOMPARE(h.back().event, HistoryEntry::Event::Update);
        QCOMPARE(h.back().oldContent, QStringLiteral("Plays tennis"));
        // The tool was forced, and the request offered exactly it.
        const Json body = m_llm->requests(kTool).back();
        QCOMPARE(body["tool_choice"]["function"]["name"], "record_memory_changes");
        // The re-embedded content is what the store now finds.
        RecallOptions top;
        top.depth = RecallDepth::Shallow;
        top.limit = 1;
        QCOMPARE(m->recall(QStringLiteral("Sundays"), top).value(0).record.id, id);
    }

    void deleteRemovesTheRecord()
    {
        m_llm->onJson(kFacts, facts({QStringLiteral("Cancelled the trip to Rome")}));
        m_llm->onToolCall(kTool, kTool, changes({change(QStringLiteral("DELETE"), "0")}));
        auto m = open();
        const QString id = seed(*m, QStringLiteral("Plans a trip to Rome in June"));
        const ConversationResult r = m->addConversation(pair(QStringLiteral("I cancelled my trip to Rome.")), conv()).result();
        QCOMPARE(events(r), QStringList{QStringLiteral("DELETE")});
        QCOMPARE(r.changes[0].recordId, id);
        QCOMPARE(r.changes[0].content, QStringLiteral("Plans a trip to Rome in June"));
        QVERIFY(!m->get(id, kOwner));
        QCOMPARE(m->history(id, kOwner).back().event, HistoryEntry::Event::Delete);
        QCOMPARE(count(*m), 0);
    }

    void noopChangesNothing()
    {
        m_llm->onJson(kFacts, facts({QStringLiteral("Is vegetarian")}));
        m_llm->onToolCall(kTool, kTool, changes({change(QStringLiteral("NONE"), "0", QStringLiteral("Is vegetarian"))}));
        auto m = open();
        const QString id = seed(*m, QStringLiteral("Is vegetarian since 2015"));
        const ConversationResult r = m->addConversation(pair(QStringLiteral("I am vegetarian, by the way.")), conv()).result();
        QCOMPARE(events(r), QStringList{QStringLiteral("NOOP")}); // Mem0's "NONE" reads as NOOP
        QCOMPARE(r.changes[0].recordId, id);
        QCOMPARE(count(*m), 1);
        QCOMPARE(m->get(id, kOwner)->content, QStringLiteral("Is vegetarian since 2015"));
        QCOMPARE(m->history(id, kOwner).size(), 1);
    }

    void preferenceChangeIsAnUpdate()
    {
        m_llm->onJson(kFacts, facts({QStringLiteral("Now prefers coffee in the morning")}));
        m_llm->onToolCall(kTool, kTool,
                          changes({change(QStringLiteral("UPDATE"), "0",
                                          QStringLiteral("Used to prefer tea, now prefers coffee in the morning"))}));
        auto m = open();
        const QString id = seed(*m, QStringLiteral("Prefers tea in the morning"));
        const ConversationResult r =
            m->addConversation(pair(QStringLiteral("These days I drink coffee in the morning, not tea.")), conv()).result();
        QCOMPARE(events(r), QStringList{QStringLiteral("UPDATE")});
        QCOMPARE(count(*m), 1);
        QCOMPARE(m->get(id, kOwner)->content, QStringLiteral("Used to prefer tea, now prefers coffee in the morning"));
        // The prompt tells the model so.
        const QString prompt = m_llm->lastPrompt(kTool);
        QVERIFY(prompt.contains(QStringLiteral("changed preference")));
        QVERIFY(prompt.contains(QStringLiteral("never a DELETE and an ADD")));
    }

    // An UPDATE that only drops words keeps the richer stored text.
    void shorterContainedUpdateIsNoop()
    {
        m_llm->onJson(kFacts, facts({QStringLiteral("Has a cat")}));
        m_llm->onToolCall(kTool, kTool, changes({change(QStringLiteral("UPDATE"), "0", QStringLiteral("has a cat"))}));
        auto m = open();
        const QString id = seed(*m, QStringLiteral("Has a cat named Miso"));
        const ConversationResult r = m->addConversation(pair(QStringLiteral("I have a cat.")), conv()).result();
        QCOMPARE(events(r), QStringList{QStringLiteral("NOOP")});
        QCOMPARE(m->get(id, kOwner)->content, QStringLiteral("Has a cat named Miso"));
        QCOMPARE(m->history(id, kOwner).size(), 1);
    }

    // ---- Ids -----------------------------------------------------------------------------------

    void promptShowsSmallIdsOnly()
    {
        m_llm->onJson(kFacts, facts({QStringLiteral("Works as a nurse"), QStringLiteral("Works night shifts at the hospital")}));
        m_llm->onToolCall(kTool, kTool, changes({change(QStringLiteral("NOOP"), "1")}));
        auto m = open();
        const QStringList ids = {seed(*m, QStringLiteral("Works at the city hospital")), seed(*m, QStringLiteral("Works as a nurse")),
                                 seed(*m, QStringLiteral("Night shifts are hard"))};
        const ConversationResult r = m->addConversation(pair(QStringLiteral("I am a nurse and work night shifts.")), conv()).result();
        const QString prompt = m_llm->lastPrompt(kTool);
        for (const QString &id : ids)
            QVERIFY2(!prompt.contains(id), qPrintable(prompt));
        QVERIFY(!prompt.contains(QRegularExpression(QStringLiteral("[0-9a-f]{8}-[0-9a-f]{4}-"))));
        // Each memory once, numbered from 0, although both facts retrieve some of them.
        QVERIFY(prompt.contains(QStringLiteral("\"id\": \"0\"")));
        QVERIFY(prompt.contains(QStringLiteral("\"id\": \"2\"")));
        QVERIFY(!prompt.contains(QStringLiteral("\"id\": \"3\"")));
        QCOMPARE(prompt.count(QStringLiteral("Works as a nurse\"")), 1);
        QVERIFY(events(r).contains(QStringLiteral("NOOP")));
    }

    void unknownIdsAreIgnored_data()
    {
        QTest::addColumn<QString>("event");
        QTest::addColumn<QString>("id");
        QTest::newRow("update, out of range") << "UPDATE"
                                              << "7";
        QTest::newRow("delete, out of range") << "DELETE"
                                              << "1";
        QTest::newRow("update, word") << "UPDATE"
                                      << "first";
        QTest::newRow("delete, negative") << "DELETE"
                                          << "-1";
        QTest::newRow("delete, empty") << "DELETE"
                                       << "";
        QTest::newRow("update, the real uuid") << "UPDATE"
                                               << "<uuid>";
        QTest::newRow("delete, the real uuid") << "DELETE"
                                               << "<uuid>";
    }
    void unknownIdsAreIgnored()
    {
        QFETCH(QString, event);
        QFETCH(QString, id);
        auto m = open();
        const QString stored = seed(*m, QStringLiteral("Drives a red car"));
        if (id == QLatin1String("<uuid>"))
            id = stored; // never shown, so never accepted
        m_llm->onJson(kFacts, facts({QStringLiteral("Drives a blue car now")}));
        m_llm->onToolCall(kTool, kTool, changes({change(event, Json(id), QStringLiteral("Drives a blue car now"))}));
        const ConversationResult r = m->addConversation(pair(QStringLiteral("I drive a blue car now.")), conv()).result();
        QCOMPARE(m_llm->calls(kTool), 1);
        QVERIFY(r.changes.isEmpty());
        QCOMPARE(r.path, QStringLiteral("llm"));
        QCOMPARE(count(*m), 1);
        QCOMPARE(m->get(stored, kOwner)->content, QStringLiteral("Drives a red car"));
        QCOMPARE(m->history(stored, kOwner).size(), 1);
    }

    // The first update or delete of a record wins; a NOOP claims nothing; an update that came too
    // late is stored as a new memory rather than lost.
    void changesOfOneId_data()
    {
        QTest::addColumn<QString>("first");
        QTest::addColumn<QString>("second");
        QTest::addColumn<QStringList>("events");
        QTest::addColumn<QString>("content"); // of the seeded record afterwards; empty: deleted
        QTest::addColumn<int>("records");
        QTest::newRow("update then delete") << "UPDATE"
                                            << "DELETE" << QStringList{"UPDATE"}
                                            << "Reads science fiction and fantasy" << 1;
        QTest::newRow("delete then update") << "DELETE"
                                            << "UPDATE" << QStringList{"DELETE", "ADD"} << "" << 1;
        QTest::newRow("noop then update") << "NOOP"
                                          << "UPDATE" << QStringList{"NOOP", "UPDATE"}
                                          << "Reads only fantasy and science fiction books" << 1;
        QTest::newRow("update twice") << "UPDATE"
                                      << "UPDATE" << QStringList{"UPDATE", "ADD"}
                                      << "Reads science fiction and fantasy" << 2;
        QTest::newRow("noop twice") << "NOOP"
                                    << "NOOP" << QStringList{"NOOP"} << "Reads science fiction" << 1;
    }
    void changesOfOneId()
    {
        QFETCH(QString, first);
        QFETCH(QString, second);
        QFETCH(QStringList, events);
        QFETCH(QString, content);
        QFETCH(int, records);
        m_llm->onJson(kFacts, facts({QStringLiteral("Reads fantasy too")}));
        m_llm->onToolCall(kTool, kTool,
                          changes({change(first, "0", QStringLiteral("Reads science fiction and fantasy")),
                                   change(second, "0", QStringLiteral("Reads only fantasy and science fiction books"))}));
        auto m = open();
        const QString id = seed(*m, QStringLiteral("Reads science fiction"));
        const ConversationResult r = m->addConversation(pair(QStringLiteral("I read fantasy as well.")), conv()).result();
        QStringList got;
        for (const ConversationChange &c : r.changes)
            got << c.event;
        QCOMPARE(got, events);
        const auto stored = m->get(id, kOwner);
        QCOMPARE(stored ? stored->content : QString(), content);
        QCOMPARE(count(*m), records);
        if (events.contains(QStringLiteral("ADD")))
            QCOMPARE(r.changes.last().content, QStringLiteral("Reads only fantasy and science fiction books"));
    }

    // ---- Update path: tool call or JSON ---------------------------------------------------------

    void jsonPathWithoutTools()
    {
        m_llm->onJson(kFacts, facts({QStringLiteral("Speaks Spanish and Portuguese")}));
        m_llm->onJson(kJsonUpdate, changes({change(QStringLiteral("UPDATE"), "0", QStringLiteral("Speaks Spanish and Portuguese"))}));
        auto m = open();
        m->setLlm(std::make_shared<JsonOnlyLlm>(m_llm->provider()));
        const QString id = seed(*m, QStringLiteral("Speaks Spanish"));
        const ConversationResult r = m->addConversation(pair(QStringLiteral("I speak Spanish and Portuguese.")), conv()).result();
        QCOMPARE(m_llm->calls(kTool), 0);
        QCOMPARE(m_llm->calls(kJsonUpdate), 1);
        QVERIFY(!m_llm->requests(kJsonUpdate).back().contains("tools"));
        QCOMPARE(events(r), QStringList{QStringLiteral("UPDATE")});
        QCOMPARE(m->get(id, kOwner)->content, QStringLiteral("Speaks Spanish and Portuguese"));
    }

    // Replies of the update step: repaired, partly used, or unusable (then the offline rule adds the fact).
    void updateReplies_data()
    {
        QTest::addColumn<bool>("viaTool");
        QTest::addColumn<QString>("kind"); // "tool": arguments verbatim; "text": message content
        QTest::addColumn<QString>("reply");
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("content"); // of the stored record afterwards
        QTest::addColumn<int>("records");

        const QString upd = QStringLiteral("{\"changes\": [{\"event\": \"UPDATE\", \"id\": \"0\", \"text\": \"Owns two bikes\"}]}");
        const QString old = QStringLiteral("Owns a bike");
        const QString nu = QStringLiteral("Owns two bikes");
        QTest::newRow("tool: clean") << true << "tool" << upd << "llm" << nu << 1;
        QTest::newRow("tool: arguments in a fence") << true << "tool" << QStringLiteral("```json\n") + upd + QStringLiteral("\n```") << "llm" << nu << 1;
        QTest::newRow("tool: text instead, fenced") << true << "text" << QStringLiteral("```json\n") + upd + QStringLiteral("\n```") << "llm" << nu << 1;
        QTest::newRow("tool: text instead, prose") << true << "text" << QStringLiteral("Sure! Here it is: ") + upd + QStringLiteral(" Anything else?") << "llm" << nu << 1;
        QTest::newRow("tool: Mem0 shape, lower case, numeric id")
            << true << "tool" << QStringLiteral("{\"memory\": [{\"event\": \"update\", \"id\": 0, \"text\": \"Owns two bikes\", \"old_memory\": \"Owns a bike\"}]}")
            << "llm" << nu << 1;
        QTest::newRow("tool: missing fields") << true << "tool"
                                              << QStringLiteral("{\"changes\": [{\"event\": \"UPDATE\", \"id\": \"0\"}, {\"event\": \"ADD\"}, {\"id\": \"0\", \"text\": \"x\"}]}")
                                              << "llm" << old << 1;
        QTest::newRow("tool: no changes list") << true << "tool" << QStringLiteral("{\"result\": \"ok\"}") << "offline" << old << 2;
        QTest::newRow("tool: truncated arguments") << true << "tool" << QStringLiteral("{\"changes\": [{\"event\": \"UPD") << "offline" << old << 2;
        QTest::newRow("tool: prose text, no json") << true << "text" << QStringLiteral("I think you should update it.") << "offline" << old << 2;
        QTest::newRow("json: clean") << false << "text" << upd << "llm" << nu << 1;
        QTest::newRow("json: fenced") << false << "text" << QStringLiteral("```\n") + upd + QStringLiteral("\n```") << "llm" << nu << 1;
        QTest::newRow("json: prose around") << false << "text" << QStringLiteral("Decision: ") + upd + QStringLiteral(" Done.") << "llm" << nu << 1;
        QTest::newRow("json: malformed") << false << "text" << QStringLiteral("{\"changes\": [{\"event\": ") << "offline" << old << 2;
        QTest::newRow("json: missing changes") << false << "text" << QStringLiteral("{\"decisions\": []}") << "offline" << old << 2;
        QTest::newRow("json: missing item fields") << false << "text" << QStringLiteral("{\"changes\": [{\"text\": \"Owns two bikes\"}]}") << "llm" << old << 1;
    }
    void updateReplies()
    {
        QFETCH(bool, viaTool);
        QFETCH(QString, kind);
        QFETCH(QString, reply);
        QFETCH(QString, path);
        QFETCH(QString, content);
        QFETCH(int, records);
        m_llm->onJson(kFacts, facts({QStringLiteral("Owns two bikes")}));
        const QString step = viaTool ? kTool : kJsonUpdate;
        if (kind == QLatin1String("tool"))
            m_llm->on(step, [reply](const Json &) { return toolReply(reply); });
        else
            m_llm->onText(step, reply);
        auto m = open();
        if (!viaTool)
            m->setLlm(std::make_shared<JsonOnlyLlm>(m_llm->provider()));
        QSignalSpy paths(m.get(), &Memory::analysisCompleted);
        const QString id = seed(*m, QStringLiteral("Owns a bike"));
        const ConversationResult r = m->addConversation(pair(QStringLiteral("I own two bikes now.")), conv()).result();
        m->drainWrites();
        QCOMPARE(r.path, path);
        QCOMPARE(pathsOf(paths, kJsonUpdate), QStringList{path});
        QCOMPARE(m->get(id, kOwner)->content, content);
        QCOMPARE(count(*m), records);
        if (path == QLatin1String("offline"))
            QCOMPARE(events(r), QStringList{QStringLiteral("ADD")});
    }

    // ---- Extraction replies and the offline path -----------------------------------------------

    void factReplies_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("reply");
        QTest::addColumn<QString>("path");
        QTest::addColumn<QStringList>("expected"); // empty: the offline split of the user message
        const QStringList jazz = {QStringLiteral("Likes jazz"), QStringLiteral("Plays the piano")};
        const QString clean = QStringLiteral("{\"facts\": [\"Likes jazz\", \"Plays the piano\"]}");
        QTest::newRow("clean") << 200 << clean << "llm" << jazz;
        QTest::newRow("fenced") << 200 << QStringLiteral("```json\n") + clean + QStringLiteral("\n```") << "llm" << jazz;
        QTest::newRow("prose around") << 200 << QStringLiteral("Here are the facts: ") + clean + QStringLiteral(" Let me know.") << "llm" << jazz;
        QTest::newRow("objects, blanks and repeats")
            << 200 << QStringLiteral("{\"facts\": [{\"fact\": \"Likes jazz\"}, {\"text\": \"Plays the piano\"}, \"\", \"Likes jazz\"]}") << "llm" << jazz;
        QTest::newRow("small talk") << 200 << QStringLiteral("{\"facts\": []}") << "llm" << QStringList();
        QTest::newRow("malformed") << 200 << QStringLiteral("{\"facts\": [\"Likes jazz\",") << "offline" << QStringList();
        QTest::newRow("missing facts") << 200 << QStringLiteral("{\"summary\": \"music\"}") << "offline" << QStringList();
        QTest::newRow("prose only") << 200 << QStringLiteral("The user likes jazz.") << "offline" << QStringList();
        QTest::newRow("http 500") << 500 << QString() << "offline" << QStringList();
        QTest::newRow("http 401") << 401 << QString() << "offline" << QStringList();
    }
    void factReplies()
    {
        QFETCH(int, status);
        QFETCH(QString, reply);
        QFETCH(QString, path);
        QFETCH(QStringList, expected);
        if (status != 200)
            m_llm->onError(kFacts, status);
        else
            m_llm->onText(kFacts, reply);
        auto m = open();
        QSignalSpy paths(m.get(), &Memory::analysisCompleted);
        QSignalSpy failed(m.get(), &Memory::llmCallFailed);
        const QString userText = QStringLiteral("I like jazz. I play the piano.");
        const ConversationResult r =
            m->addConversation(pair(userText, QStringLiteral("Jazz piano is wonderful. Try Bill Evans.")), conv()).result();
        m->drainWrites();
        QCOMPARE(r.path, path);
        QCOMPARE(pathsOf(paths, kFacts), QStringList{path});
        if (path == QLatin1String("offline")) {
            QCOMPARE(r.facts, StatementSplitter::split(userText)); // the user's statements, not the assistant's
            QCOMPARE(failedSteps(failed), QStringList{kFacts});
        } else {
            QCOMPARE(r.facts, expected);
            QCOMPARE(failedSteps(failed), QStringList());
        }
        QCOMPARE(count(*m), int(r.facts.size()));
        QCOMPARE(events(r).count(QStringLiteral("ADD")), int(r.facts.size()));
    }

    // Offline, a statement already stored is not stored again.
    void offlineAddsUnlessIdentical()
    {
        auto m = open(false);
        QSignalSpy paths(m.get(), &Memory::analysisCompleted);
        QSignalSpy started(m.get(), &Memory::llmCallStarted);
        const auto messages = pair(QStringLiteral("My sister is called Ana. She lives in Lisbon."), QStringLiteral("Lisbon is lovely."));
        const ConversationResult first = m->addConversation(messages, conv()).result();
        QCOMPARE(first.path, QStringLiteral("offline"));
        QCOMPARE(events(first), (QStringList{QStringLiteral("ADD"), QStringLiteral("ADD")}));
        const ConversationResult second = m->addConversation(messages, conv()).result();
        QCOMPARE(events(second), (QStringList{QStringLiteral("NOOP"), QStringLiteral("NOOP")}));
        QCOMPARE(second.changes[0].recordId, first.changes[0].recordId);
        QCOMPARE(count(*m), 2);
        m->drainWrites();
        QCOMPARE(started.size(), 0);
        QCOMPARE(pathsOf(paths, kFacts), (QStringList{QStringLiteral("offline"), QStringLiteral("offline")}));
        QCOMPARE(pathsOf(paths, kSummary), (QStringList{QStringLiteral("skipped"), QStringLiteral("skipped")}));
        // No LLM, no summary; the messages are still kept.
        const Json s = state(*m);
        QCOMPARE(s["summary"], "");
        QCOMPARE(s["messages"].size(), 4u);
        QCOMPARE(s["message_count"], 4);
    }

    // ---- Summary and recent messages -----------------------------------------------------------

    void summaryIsRefreshedAfterTheCall()
    {
        QSemaphore gate;
        m_llm->onJson(kFacts, facts({}));
        m_llm->on(kSummary, [&gate](const Json &) {
            gate.tryAcquire(1, 30000); // guard only: the test releases it
            return ScriptedLlm::completion(QStringLiteral("{\"summary\": \"They talk about a trip to Japan in April.\"}"));
        });
        auto m = open();
        const ConversationResult r =
            m->addConversation(pair(QStringLiteral("I am going to Japan in April."), QStringLiteral("Great season!")), conv()).result();
        Q_UNUSED(r);
        // The call has returned while the summary request is still waiting: it was not part of it.
        QCOMPARE(state(*m)["summary"], "");
        QCOMPARE(state(*m)["messages"].size(), 2u);
        gate.release();
        m->drainWrites();
        QCOMPARE(state(*m)["summary"], "They talk about a trip to Japan in April.");
        QCOMPARE(state(*m)["summarized_through"], 2);
        QVERIFY(m_llm->lastPrompt(kSummary).contains(QStringLiteral("I am going to Japan in April.")));

        // The next call's extraction sees it; another conversation has its own state.
        m->addConversation(pair(QStringLiteral("Where should I stay in Kyoto?")), conv()).waitForFinished();
        QVERIFY(m_llm->lastPrompt(kFacts).contains(QStringLiteral("They talk about a trip to Japan in April.")));
        gate.release();
        m->addConversation(pair(QStringLiteral("I need a new laptop.")), conv(QStringLiteral("c2"))).waitForFinished();
        const QString other = m_llm->lastPrompt(kFacts);
        QVERIFY(!other.contains(QStringLiteral("Japan")));
        QVERIFY(!other.contains(QStringLiteral("Kyoto")));
        gate.release();
        m->drainWrites();
        // The second summary of c1 folded the old one with the messages since.
        QCOMPARE(m_llm->calls(kSummary), 3);
        const QString second = m_llm->requests(kSummary).at(1).dump().c_str();
        QVERIFY(second.contains(QStringLiteral("They talk about a trip to Japan in April.")));
        QVERIFY(second.contains(QStringLiteral("Kyoto")));
        QVERIFY(!second.contains(QStringLiteral("I am going to Japan in April.")));
    }

    void failedSummaryKeepsTheOldOne()
    {
        m_llm->onJson(kFacts, facts({}));
        m_llm->onJson(kSummary, Json{{"summary", "First summary."}});
        auto m = open();
        QSignalSpy paths(m.get(), &Memory::analysisCompleted);
        m->addConversation(pair(QStringLiteral("Hello there.")), conv()).waitForFinished();
        m->drainWrites();
        m_llm->onText(kSummary, QStringLiteral("no idea"));
        m->addConversation(pair(QStringLiteral("How are you?")), conv()).waitForFinished();
        m->drainWrites();
        QCOMPARE(pathsOf(paths, kSummary), (QStringList{QStringLiteral("llm"), QStringLiteral("defaults")}));
        QCOMPARE(state(*m)["summary"], "First summary.");
        QCOMPARE(state(*m)["summarized_through"], 2);
        // The next successful refresh catches up on everything since.
        m_llm->onJson(kSummary, Json{{"summary", "Third summary."}});
        m->addConversation(pair(QStringLiteral("Fine, thanks.")), conv()).waitForFinished();
        m->drainWrites();
        QVERIFY(m_llm->lastPrompt(kSummary).contains(QStringLiteral("How are you?")));
        QVERIFY(m_llm->lastPrompt(kFacts).contains(QStringLiteral("First summary.")));
        QCOMPARE(state(*m)["summary"], "Third summary.");
        QCOMPARE(state(*m)["summarized_through"], 6);
    }

    void recentMessagesWindow()
    {
        m_llm->onJson(kFacts, facts({}));
        auto m = open();
        AddConversationOptions o = conv();
        o.recentMessages = 2;
        m->addConversation({msg(QStringLiteral("user"), QStringLiteral("alpha one")), msg(QStringLiteral("assistant"), QStringLiteral("alpha two")),
                            msg(QStringLiteral("user"), QStringLiteral("beta one")), msg(QStringLiteral("assistant"), QStringLiteral("beta two"))},
                           o)
            .waitForFinished();
        m->addConversation(pair(QStringLiteral("gamma one")), o).waitForFinished();
        const QString prompt = m_llm->lastPrompt(kFacts);
        QVERIFY(prompt.contains(QStringLiteral("beta one")));
        QVERIFY(prompt.contains(QStringLiteral("beta two")));
        QVERIFY(!prompt.contains(QStringLiteral("alpha")));
        QVERIFY(prompt.contains(QStringLiteral("gamma one")));
        m->drainWrites();
        QCOMPARE(state(*m)["messages"].size(), 2u);
        QCOMPARE(state(*m)["message_count"], 6);
        // m = 0: no earlier message at all.
        o.recentMessages = 0;
        m->addConversation(pair(QStringLiteral("delta one")), o).waitForFinished();
        QVERIFY(!m_llm->lastPrompt(kFacts).contains(QStringLiteral("gamma")));
    }

    void stateSurvivesReopening()
    {
        m_llm->onJson(kFacts, facts({}));
        m_llm->onJson(kSummary, Json{{"summary", "Planning a garden."}});
        {
            auto m = open();
            m->addConversation(pair(QStringLiteral("I want to plant tomatoes.")), conv()).waitForFinished();
        } // closes, after the summary task
        auto m = open();
        m->addConversation(pair(QStringLiteral("And basil too.")), conv()).waitForFinished();
        const QString prompt = m_llm->lastPrompt(kFacts);
        QVERIFY(prompt.contains(QStringLiteral("Planning a garden.")));
        QVERIFY(prompt.contains(QStringLiteral("I want to plant tomatoes.")));
    }

    // ---- Scope and privacy ---------------------------------------------------------------------

    void privateFactNeverTouchesAnotherSource()
    {
        m_llm->onJson(kFacts, facts({QStringLiteral("Likes sushi with salmon")}));
        m_llm->onToolCall(kTool, kTool, changes({change(QStringLiteral("UPDATE"), "0", QStringLiteral("Likes sushi with salmon"))}));
        auto m = open();
        const QString bob = seed(*m, QStringLiteral("Likes sushi"), QStringLiteral("user:bob"), true);
        const QString shared = seed(*m, QStringLiteral("Likes sushi a lot"));
        const QString alicePublic = seed(*m, QStringLiteral("Likes sushi sometimes"), QStringLiteral("user:alice"), false);
        const QString alice = seed(*m, QStringLiteral("Likes sushi on Fridays"), QStringLiteral("user:alice"), true);
        AddConversationOptions o = conv();
        o.defaults.source = QStringLiteral("user:alice");
        o.defaults.isPrivate = true;
        const ConversationResult r = m->addConversation(pair(QStringLiteral("I like salmon sushi.")), o).result();
        const QString prompt = m_llm->lastPrompt(kTool);
        QVERIFY(prompt.contains(QStringLiteral("Likes sushi on Fridays")));
        QVERIFY(!prompt.contains(QStringLiteral("\"Likes sushi\"")));
        QVERIFY(!prompt.contains(QStringLiteral("a lot")));
        QVERIFY(!prompt.contains(QStringLiteral("sometimes")));
        QCOMPARE(events(r), QStringList{QStringLiteral("UPDATE")});
        QCOMPARE(r.changes[0].recordId, alice);
        QCOMPARE(m->get(alice, kOwner)->content, QStringLiteral("Likes sushi with salmon"));
        QVERIFY(m->get(alice, kOwner)->isPrivate);
        QCOMPARE(m->get(alice, kOwner)->source, QStringLiteral("user:alice"));
        for (const QString &id : {bob, shared, alicePublic})
            QCOMPARE(m->history(id, kOwner).size(), 1);
    }

    void privateFactWithoutOwnMemoriesIsAdded()
    {
        m_llm->onJson(kFacts, facts({QStringLiteral("Likes sushi with salmon")}));
        auto m = open();
        const QString bob = seed(*m, QStringLiteral("Likes sushi with salmon"), QStringLiteral("user:bob"), true);
        AddConversationOptions o = conv();
        o.defaults.source = QStringLiteral("user:alice");
        o.defaults.isPrivate = true;
        const ConversationResult r = m->addConversation(pair(QStringLiteral("I like salmon sushi.")), o).result();
        QCOMPARE(m_llm->calls(kTool), 0);
        QCOMPARE(events(r), QStringList{QStringLiteral("ADD")}); // not a NOOP on Bob's identical record
        QVERIFY(r.changes[0].recordId != bob);
        const auto added = m->get(r.changes[0].recordId, kOwner);
        QCOMPARE(added->source, QStringLiteral("user:alice"));
        QVERIFY(added->isPrivate);
        QCOMPARE(count(*m), 2);
    }

    void searchesOnlyUnderTheScope()
    {
        m_llm->onJson(kFacts, facts({QStringLiteral("Uses Python at work")}));
        m_llm->onToolCall(kTool, kTool, changes({change(QStringLiteral("NOOP"), "0")}));
        auto m = open();
        seed(*m, QStringLiteral("Uses Python for hobby projects"), {}, false, QStringLiteral("/home"));
        const QString work = seed(*m, QStringLiteral("Uses Python daily"), {}, false, QStringLiteral("/work"));
        AddConversationOptions o = conv();
        o.defaults.scope = QStringLiteral("/work");
        const ConversationResult r = m->addConversation(pair(QStringLiteral("At work I use Python.")), o).result();
        const QString prompt = m_llm->lastPrompt(kTool);
        QVERIFY(prompt.contains(QStringLiteral("Uses Python daily")));
        QVERIFY(!prompt.contains(QStringLiteral("hobby")));
        QCOMPARE(r.changes.value(0).recordId, work);
    }

    // A conversation's state belongs to its id *and* where its records go: another root, another
    // source or private ingestion reusing the id never sees it, and a reset of the root removes it.
    void stateIsIsolatedAndReset()
    {
        m_llm->onJson(kFacts, facts({}));
        MemoryConfig a = config();
        a.rootScope = QStringLiteral("/tenant/alice");
        MemoryConfig b = config();
        b.rootScope = QStringLiteral("/tenant/bob");
        Memory alice(a, nullptr, m_embedder);
        Memory bob(b, nullptr, m_embedder);
        alice.addConversation(pair(QStringLiteral("My bank PIN is 4321, keep it secret.")), conv(QStringLiteral("chat-1"))).result();
        alice.drainWrites();
        bob.addConversation(pair(QStringLiteral("Hello there.")), conv(QStringLiteral("chat-1"))).result();
        bob.drainWrites();
        QVERIFY2(!m_llm->lastPrompt(kFacts).contains(QStringLiteral("4321")), qPrintable(m_llm->lastPrompt(kFacts)));

        AddConversationOptions priv = conv(QStringLiteral("chat-1"));
        priv.defaults.source = QStringLiteral("user:alice");
        priv.defaults.isPrivate = true;
        alice.addConversation(pair(QStringLiteral("Private hello.")), priv).result();
        alice.drainWrites();
        QVERIFY(!m_llm->lastPrompt(kFacts).contains(QStringLiteral("4321")));
        QCOMPARE(alice.storage().stateKeys(QStringLiteral("conversation:")).size(), 3);

        alice.reset(); // the root's records and its two conversations
        const QStringList left = alice.storage().stateKeys(QStringLiteral("conversation:"));
        QCOMPARE(left.size(), 1);
        QCOMPARE(QString::fromStdString(alice.storage().readState(left.first())->value("scope", std::string())),
                 QStringLiteral("/tenant/bob"));
    }

    // ---- Failures and validation ---------------------------------------------------------------

    void embedderFailureFailsTheFuture()
    {
        m_llm->onJson(kFacts, facts({QStringLiteral("Likes chess")}));
        auto m = open();
        QSignalSpy failed(m.get(), &Memory::saveFailed);
        m_embedder->failWith(QStringLiteral("embedder down"));
        QFuture<ConversationResult> f = m->addConversation(pair(QStringLiteral("I like chess.")), conv());
        QCOMPARE(errorOf([&] { f.result(); }).kind(), ErrorKind::Embedder);
        m_embedder->failWith(QString());
        m->drainWrites();
        QCOMPARE(failed.size(), 1);
        // Nothing was written: no record, no state.
        QCOMPARE(count(*m), 0);
        QVERIFY(state(*m).is_null());
    }

    void validation_data()
    {
        QTest::addColumn<QString>("id");
        QTest::addColumn<QString>("role");
        QTest::addColumn<QString>("content");
        QTest::addColumn<bool>("noMessages");
        QTest::addColumn<int>("recent");
        QTest::addColumn<int>("similar");
        QTest::addColumn<bool>("privateWithoutSource");
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("mentions");
        const int invalid = int(ErrorKind::InvalidArgument);
        QTest::newRow("empty id") << ""
                                  << "user"
                                  << "hi" << false << 10 << 10 << false << invalid << "conversation id";
        QTest::newRow("blank id") << "   "
                                  << "user"
                                  << "hi" << false << 10 << 10 << false << invalid << "conversation id";
        QTest::newRow("id too long") << QString(300, QLatin1Char('x')) << "user"
                                     << "hi" << false << 10 << 10 << false << invalid << "at most";
        QTest::newRow("no messages") << "c"
                                     << "user"
                                     << "hi" << true << 10 << 10 << false << invalid << "at least one message";
        QTest::newRow("unknown role") << "c"
                                      << "robot"
                                      << "hi" << false << 10 << 10 << false << invalid << "robot";
        QTest::newRow("blank content") << "c"
                                       << "user"
                                       << "  \n"
                                       << false << 10 << 10 << false << invalid << "blank";
        QTest::newRow("negative window") << "c"
                                         << "user"
                                         << "hi" << false << -1 << 10 << false << invalid << "recent messages";
        QTest::newRow("zero similar") << "c"
                                      << "user"
                                      << "hi" << false << 10 << 0 << false << invalid << "similar memories";
        QTest::newRow("private without source") << "c"
                                                << "user"
                                                << "hi" << false << 10 << 10 << true
                                                << int(ErrorKind::PermissionDenied) << "source";
    }
    void validation()
    {
        QFETCH(QString, id);
        QFETCH(QString, role);
        QFETCH(QString, content);
        QFETCH(bool, noMessages);
        QFETCH(int, recent);
        QFETCH(int, similar);
        QFETCH(bool, privateWithoutSource);
        QFETCH(int, kind);
        QFETCH(QString, mentions);
        auto m = open();
        AddConversationOptions o = conv(id);
        o.recentMessages = recent;
        o.similarMemories = similar;
        o.defaults.isPrivate = privateWithoutSource;
        QList<ConversationMessage> messages;
        if (!noMessages)
            messages = {msg(QStringLiteral("assistant"), QStringLiteral("Hello!")), msg(role, content)};
        const Error e = errorOf([&] { m->addConversation(messages, o); });
        QCOMPARE(int(e.kind()), kind);
        QVERIFY2(e.message().contains(mentions), qPrintable(e.message()));
        m->drainWrites();
        QCOMPARE(m_llm->totalCalls(), 0);
        QCOMPARE(count(*m), 0);
    }

    void readOnlyMemoryRefuses()
    {
        {
            auto m = open();
        }
        MemoryConfig c = config();
        c.readOnly = true;
        Memory m(c, nullptr, m_embedder);
        const Error e = errorOf([&] { m.addConversation(pair(QStringLiteral("I like chess.")), conv()); });
        QCOMPARE(e.kind(), ErrorKind::PermissionDenied);
        QCOMPARE(m_llm->totalCalls(), 0);
    }

    void rolesAreCaseInsensitiveAndLoggedInEvents()
    {
        m_llm->onJson(kFacts, facts({}));
        m_llm->onJson(kSummary, Json{{"summary", "Greetings."}});
        auto m = open();
        QSignalSpy llmSteps(m.get(), &Memory::llmCallStarted);
        QSignalSpy started(m.get(), &Memory::saveStarted);
        const ConversationResult r =
            m->addConversation({msg(QStringLiteral("User"), QStringLiteral("Hi!")), msg(QStringLiteral(" ASSISTANT "), QStringLiteral("Hello!"))},
                               conv())
                .result();
        QVERIFY(r.facts.isEmpty());
        QVERIFY(r.changes.isEmpty());
        m->drainWrites();
        QStringList steps;
        for (const QList<QVariant> &args : llmSteps)
            steps << args.at(0).toString();
        QCOMPARE(steps, (QStringList{kFacts, kSummary}));
        QCOMPARE(started.size(), 1);
        QVERIFY(started.at(0).at(0).toString().contains(QStringLiteral("c1")));
        QCOMPARE(state(*m)["messages"][0]["role"], "user");
    }
};

QTEST_GUILESS_MAIN(TestConversationIngest)
#include "test_conversation_ingest.moc"
