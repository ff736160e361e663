// SqliteChatStore on real files: sessions, messages, the flush journal and its compare steps, block
// states, clear and delete, sharing a file with the memory store, and the files it refuses.

#include "memory_test_util.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/sqlite_chat_store.h>

#include <QFile>
#include <QtTest>
#include <sqlite3.h>

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::TempStore;

namespace {

QList<SessionMessage> conversation(int turns)
{
    QList<SessionMessage> out;
    for (int i = 0; i < turns; ++i) {
        out << SessionMessage(ChatMessage::user(QStringLiteral("question %1").arg(i)), Json{{"turn", i}});
        out << SessionMessage(ChatMessage::assistant(QStringLiteral("answer %1").arg(i)));
    }
    return out;
}

void execSql(const QString &path, const char *sql)
{
    sqlite3 *db = nullptr;
    QCOMPARE(sqlite3_open(path.toUtf8().constData(), &db), SQLITE_OK);
    char *err = nullptr;
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
    const QString message = err ? QString::fromUtf8(err) : QString();
    sqlite3_free(err);
    sqlite3_close(db);
    QVERIFY2(rc == SQLITE_OK, qPrintable(message));
}

} // namespace

class TestChatStore : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void appendAndRead();
    void toolCallsRoundTrip();
    void sessionsAreListedNewestFirst();
    void sessionIds_data();
    void sessionIds();
    void beginFlushIsACompareStep();
    void completeBlockRecordsStateAndProgress();
    void claimFlush();
    void clearStartsANewIncarnation();
    void deleteSession();
    void sharesTheMemoryStoreFile();
    void memoryStoreOpensAFileWithChatTablesOnly();
    void refusesOtherFiles();
    void refusesANewerSchema();
    void inMemory();
    void closedStoreRefuses();
};

void TestChatStore::appendAndRead()
{
    TempStore dir;
    {
        SqliteChatStore store(dir.path());
        const QList<SessionMessage> stored = store.append(QStringLiteral("s1"), conversation(2));
        QCOMPARE(stored.size(), 4);
        QCOMPARE(stored.first().seq, 1);
        QCOMPARE(stored.last().seq, 4);
        QVERIFY(stored.first().at.isValid());
        QCOMPARE(stored.first().at.timeSpec(), Qt::UTC);
        store.append(QStringLiteral("s1"), conversation(1));
    }
    // Read back by another connection: the session survives.
    SqliteChatStore again(dir.path());
    const QList<SessionMessage> all = again.messages(QStringLiteral("s1"), true);
    QCOMPARE(all.size(), 6);
    QCOMPARE(all.at(4).seq, 5);
    QCOMPARE(all.at(0).message.content, QStringLiteral("question 0"));
    QCOMPARE(all.at(0).metadata, (Json{{"turn", 0}}));
    QCOMPARE(all.at(1).message.role, ChatMessage::Role::Assistant);
    QVERIFY(all.at(0).flush == 0);
    QCOMPARE(again.session(QStringLiteral("s1"))->activeMessages, 6);
    QVERIFY(!again.session(QStringLiteral("nope")));
}

void TestChatStore::toolCallsRoundTrip()
{
    SqliteChatStore store(QStringLiteral(":memory:"));
    SessionMessage call(ChatMessage::assistant(QStringLiteral("Let me compute."),
                                               {ToolCall{QStringLiteral("call_1"), QStringLiteral("calculator"), Json{{"expression", "2+2"}}}}));
    call.tokens = 17;
    SessionMessage result(ChatMessage::toolResult(QStringLiteral("call_1"), QStringLiteral("calculator"), QStringLiteral("4")));
    result.at = QDateTime(QDate(2024, 5, 1), QTime(12, 0), Qt::UTC);
    store.append(QStringLiteral("t"), {call, result});
    const QList<SessionMessage> back = store.messages(QStringLiteral("t"), false);
    QCOMPARE(back.size(), 2);
    QCOMPARE(back[0].message.toolCalls.size(), size_t(1));
    QCOMPARE(back[0].message.toolCalls[0].id, QStringLiteral("call_1"));
    QCOMPARE(back[0].message.toolCalls[0].arguments, (Json{{"expression", "2+2"}}));
    QCOMPARE(back[0].tokens, std::optional<int>(17));
    QCOMPARE(back[1].message.toolCallId, QStringLiteral("call_1"));
    QCOMPARE(back[1].message.name, QStringLiteral("calculator"));
    QCOMPARE(back[1].at, result.at);
    QVERIFY(!back[1].tokens);
}

void TestChatStore::sessionsAreListedNewestFirst()
{
    SqliteChatStore store(QStringLiteral(":memory:"));
    store.append(QStringLiteral("old"), conversation(1));
    QTest::qWait(5);
    store.append(QStringLiteral("new"), conversation(2));
    const QList<SessionInfo> list = store.sessions();
    QCOMPARE(list.size(), 2);
    QCOMPARE(list[0].id, QStringLiteral("new"));
    QCOMPARE(list[0].activeMessages, 4);
    QCOMPARE(list[1].id, QStringLiteral("old"));
    QVERIFY(!list[0].uid.isEmpty());
    QVERIFY(list[0].uid != list[1].uid);
}

void TestChatStore::sessionIds_data()
{
    QTest::addColumn<QString>("id");
    QTest::newRow("empty") << QString();
    QTest::newRow("blank") << QStringLiteral("  ");
    QTest::newRow("control") << QStringLiteral("a\nb");
    QTest::newRow("too long") << QString(201, QLatin1Char('x'));
}

void TestChatStore::sessionIds()
{
    QFETCH(QString, id);
    SqliteChatStore store(QStringLiteral(":memory:"));
    QCOMPARE(errorOf([&] { store.append(id, conversation(1)); }).kind(), ErrorKind::InvalidArgument);
    QCOMPARE(errorOf([&] { store.openSession(id); }).kind(), ErrorKind::InvalidArgument);
    QVERIFY(store.sessions().isEmpty());
}

void TestChatStore::beginFlushIsACompareStep()
{
    SqliteChatStore store(QStringLiteral(":memory:"));
    const QString s = QStringLiteral("s");
    store.append(s, conversation(3));
    // Not the oldest active message: refused, nothing changes.
    QVERIFY(!store.beginFlush(s, 2, 3, 10, {QStringLiteral("b")}, QStringLiteral("me")));
    QCOMPARE(store.messages(s, false).size(), 6);
    const std::optional<FlushRecord> f = store.beginFlush(s, 1, 2, 10, {QStringLiteral("a"), QStringLiteral("b")}, QStringLiteral("me"));
    QVERIFY(f);
    QCOMPARE(f->flush, 1);
    QCOMPARE(f->messages.size(), 2);
    QCOMPARE(f->messages[0].flush, 1);
    QCOMPARE(f->pendingBlocks, (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
    QCOMPARE(store.messages(s, false).size(), 4);
    QCOMPARE(store.messages(s, true).size(), 6);
    // A pending flush blocks the next one.
    QVERIFY(!store.beginFlush(s, 3, 4, 10, {QStringLiteral("a")}, QStringLiteral("other")));
    const std::optional<FlushRecord> pending = store.pendingFlush(s);
    QVERIFY(pending);
    QCOMPARE(pending->flush, 1);
    QCOMPARE(pending->owner, QStringLiteral("me"));
    QCOMPARE(pending->messages.size(), 2);
    QCOMPARE(store.session(s)->pendingFlush, 1);
    // A flush without blocks is complete as it begins.
    SqliteChatStore bare(QStringLiteral(":memory:"));
    bare.append(s, conversation(2));
    QVERIFY(bare.beginFlush(s, 1, 2, 5, {}, QStringLiteral("me")));
    QVERIFY(!bare.pendingFlush(s));
}

void TestChatStore::completeBlockRecordsStateAndProgress()
{
    SqliteChatStore store(QStringLiteral(":memory:"));
    const QString s = QStringLiteral("s");
    store.append(s, conversation(2));
    QVERIFY(store.beginFlush(s, 1, 2, 10, {QStringLiteral("a"), QStringLiteral("b")}, QStringLiteral("me")));
    store.completeBlock(s, 1, QStringLiteral("a"), Json{{"facts", {"x"}}});
    QCOMPARE(store.pendingFlush(s)->pendingBlocks, QStringList{QStringLiteral("b")});
    QCOMPARE(store.blockStates(s).value(QStringLiteral("a")), (Json{{"facts", {"x"}}}));
    // Completing it again, or for a block not pending, writes nothing.
    store.completeBlock(s, 1, QStringLiteral("a"), Json{{"facts", {"changed"}}});
    QCOMPARE(store.blockStates(s).value(QStringLiteral("a")), (Json{{"facts", {"x"}}}));
    store.completeBlock(s, 1, QStringLiteral("b"), Json());
    QVERIFY(!store.pendingFlush(s));
    QCOMPARE(store.session(s)->pendingFlush, 0);
    QCOMPARE(store.session(s)->flushes, 1);
    // The next flush can begin.
    QVERIFY(store.beginFlush(s, 3, 3, 5, {QStringLiteral("a")}, QStringLiteral("me")));
    store.abandonBlocks(s, 2, {QStringLiteral("a")});
    QVERIFY(!store.pendingFlush(s));
}

void TestChatStore::claimFlush()
{
    SqliteChatStore store(QStringLiteral(":memory:"));
    const QString s = QStringLiteral("s");
    store.append(s, conversation(2));
    QVERIFY(store.beginFlush(s, 1, 2, 10, {QStringLiteral("a")}, QStringLiteral("first")));
    QVERIFY(!store.claimFlush(s, 1, QStringLiteral("someone else"), QStringLiteral("second")));
    QVERIFY(store.claimFlush(s, 1, QStringLiteral("first"), QStringLiteral("second")));
    QCOMPARE(store.pendingFlush(s)->owner, QStringLiteral("second"));
    QVERIFY(store.claimFlush(s, 1, QStringLiteral("second"), QString()));
    QCOMPARE(store.pendingFlush(s)->owner, QString());
}

void TestChatStore::clearStartsANewIncarnation()
{
    SqliteChatStore store(QStringLiteral(":memory:"));
    const QString s = QStringLiteral("s");
    store.append(s, conversation(2));
    QVERIFY(store.beginFlush(s, 1, 2, 10, {QStringLiteral("a")}, QStringLiteral("me")));
    store.completeBlock(s, 1, QStringLiteral("a"), Json{{"n", 1}});
    const QString uid = store.session(s)->uid;
    QCOMPARE(store.clearSession(s), 4);
    const SessionInfo after = *store.session(s);
    QVERIFY(after.uid != uid);
    QCOMPARE(after.activeMessages + after.archivedMessages, 0);
    QVERIFY(store.blockStates(s).isEmpty());
    // Numbering goes on: a seq or a flush is never reused within a session.
    const QList<SessionMessage> next = store.append(s, conversation(1));
    QCOMPARE(next.first().seq, 5);
    QCOMPARE(store.beginFlush(s, 5, 5, 3, {QStringLiteral("a")}, QStringLiteral("me"))->flush, 2);
}

void TestChatStore::deleteSession()
{
    SqliteChatStore store(QStringLiteral(":memory:"));
    store.append(QStringLiteral("a"), conversation(1));
    store.append(QStringLiteral("b"), conversation(1));
    QVERIFY(store.deleteSession(QStringLiteral("a")));
    QVERIFY(!store.deleteSession(QStringLiteral("a")));
    QCOMPARE(store.sessions().size(), 1);
    QVERIFY(store.messages(QStringLiteral("a"), true).isEmpty());
    QCOMPARE(store.messages(QStringLiteral("b"), true).size(), 2);
}

void TestChatStore::sharesTheMemoryStoreFile()
{
    TempStore dir;
    MemoryConfig cfg;
    cfg.storage = dir.path().toStdString();
    {
        Memory memory(cfg);
        memory.remember(QStringLiteral("The staging port is 8080."), mneme::test::fields(QStringLiteral("/ops")));
        SqliteChatStore chat(memory.storage().location());
        chat.append(QStringLiteral("s"), conversation(1));
        memory.remember(QStringLiteral("The production port is 443."), mneme::test::fields(QStringLiteral("/ops")));
    }
    // Both open again, in either order, and see their own data.
    SqliteChatStore chat(dir.path());
    QCOMPARE(chat.messages(QStringLiteral("s"), true).size(), 2);
    Memory memory(cfg);
    QCOMPARE(memory.listRecords(QStringLiteral("/ops")).size(), 2);
    // Resetting the memory store leaves the chat sessions alone.
    memory.resetAll();
    QCOMPARE(chat.messages(QStringLiteral("s"), true).size(), 2);
}

void TestChatStore::memoryStoreOpensAFileWithChatTablesOnly()
{
    TempStore dir;
    {
        SqliteChatStore chat(dir.path());
        chat.append(QStringLiteral("s"), conversation(1));
    }
    MemoryConfig cfg;
    cfg.storage = dir.path().toStdString();
    Memory memory(cfg);
    memory.remember(QStringLiteral("A fact."), mneme::test::fields(QStringLiteral("/")));
    QCOMPARE(memory.listRecords().size(), 1);
    SqliteChatStore again(dir.path());
    QCOMPARE(again.messages(QStringLiteral("s"), true).size(), 2);
}

void TestChatStore::refusesOtherFiles()
{
    TempStore dir;
    // Another SQLite database: refused and untouched.
    const QString other = dir.path(QStringLiteral("other.db"));
    execSql(other, "CREATE TABLE notes(x)");
    const Error e = errorOf([&] { SqliteChatStore s(other); });
    QCOMPARE(e.kind(), ErrorKind::Corrupt);
    QVERIFY2(e.message().contains(QStringLiteral("neither a Mneme memory store nor a chat store")), qPrintable(e.message()));
    // A flow-state store: named as such.
    const QString flows = dir.path(QStringLiteral("flows.db"));
    execSql(flows, "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT); CREATE TABLE flow_states(id INTEGER)");
    QVERIFY(errorOf([&] { SqliteChatStore s(flows); }).message().contains(QStringLiteral("flow-state store")));
    // Not SQLite at all.
    const QString text = dir.path(QStringLiteral("text.db"));
    QFile f(text);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(4096, 'x'));
    f.close();
    QCOMPARE(errorOf([&] { SqliteChatStore s(text); }).kind(), ErrorKind::Corrupt);
    QCOMPARE(f.size(), 4096);
    // A folder, an empty path.
    QCOMPARE(errorOf([&] { SqliteChatStore s(dir.dir()); }).kind(), ErrorKind::InvalidArgument);
    QCOMPARE(errorOf([&] { SqliteChatStore s{QString()}; }).kind(), ErrorKind::InvalidArgument);
}

void TestChatStore::refusesANewerSchema()
{
    TempStore dir;
    {
        SqliteChatStore chat(dir.path());
        chat.append(QStringLiteral("s"), conversation(1));
    }
    execSql(dir.path(), "UPDATE chat_meta SET value = '99' WHERE key = 'schema_version'");
    const Error e = errorOf([&] { SqliteChatStore s(dir.path()); });
    QCOMPARE(e.kind(), ErrorKind::SchemaTooNew);
    QVERIFY(e.message().contains(QStringLiteral("chat schema 99")));
    execSql(dir.path(), "DROP TABLE chat_flushes; UPDATE chat_meta SET value = '1' WHERE key = 'schema_version'");
    QVERIFY(errorOf([&] { SqliteChatStore s(dir.path()); }).message().contains(QStringLiteral("chat_flushes")));
}

void TestChatStore::inMemory()
{
    SqliteChatStore a(QStringLiteral(":memory:"));
    SqliteChatStore b(QStringLiteral(":memory:"));
    a.append(QStringLiteral("s"), conversation(1));
    QVERIFY(b.sessions().isEmpty());
    QCOMPARE(a.location(), QStringLiteral(":memory:"));
}

void TestChatStore::closedStoreRefuses()
{
    SqliteChatStore store(QStringLiteral(":memory:"));
    store.close();
    QCOMPARE(errorOf([&] { store.sessions(); }).kind(), ErrorKind::Storage);
}

QTEST_GUILESS_MAIN(TestChatStore)
#include "test_chat_store.moc"
