// The pure parts of ChatMemory's window: which messages a flush moves out, where a history may start,
// how the memory section is written and inserted, and the default token counter.

#include "memory/chat_window_p.h"
#include <mneme/memory/session_message.h>
#include <mneme/memory/token_counter.h>

#include <QtTest>

using namespace mneme;
using Role = ChatMessage::Role;

Q_DECLARE_METATYPE(std::vector<mneme::ChatMessage::Role>)
Q_DECLARE_METATYPE(std::vector<int>)

namespace {

std::vector<Role> roles(const QString &letters)
{
    std::vector<Role> out;
    for (const QChar c : letters) {
        switch (c.toLatin1()) {
        case 's': out.push_back(Role::System); break;
        case 'u': out.push_back(Role::User); break;
        case 'a': out.push_back(Role::Assistant); break;
        case 't': out.push_back(Role::Tool); break;
        default: break;
        }
    }
    return out;
}

} // namespace

class TestChatWindow : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void selectFlush_data();
    void selectFlush();
    void flushNeverSplitsToolCalls();
    void renderMemory();
    void insertMemory();
    void estimate_data();
    void estimate();
    void messageTokens();
    void customCounter();
};

void TestChatWindow::selectFlush_data()
{
    QTest::addColumn<QString>("roles");
    QTest::addColumn<std::vector<int>>("tokens");
    QTest::addColumn<int>("budget");
    QTest::addColumn<int>("flushSize");
    QTest::addColumn<int>("count");

    QTest::newRow("at the budget: nothing") << "uaua" << std::vector<int>{10, 10, 10, 10} << 40 << 15 << 0;
    QTest::newRow("one over: a flush") << "uaua" << std::vector<int>{10, 10, 10, 11} << 40 << 15 << 2;
    QTest::newRow("flush size reached in the first message, then on to the next user")
        << "uaua" << std::vector<int>{20, 10, 10, 10} << 40 << 15 << 2;
    QTest::newRow("the last message is never flushed") << "ua" << std::vector<int>{10, 100} << 40 << 500 << 0;
    QTest::newRow("three 500-token messages, flush 700 (the reference's case)")
        << "uau" << std::vector<int>{500, 500, 500} << 900 << 700 << 2;
    QTest::newRow("no user message follows: the last user message stays with what follows")
        << "uauata" << std::vector<int>{10, 10, 10, 10, 10, 10} << 40 << 35 << 2;
    QTest::newRow("only user message first: nothing to flush") << "uatata" << std::vector<int>{10, 10, 10, 10, 10, 10} << 40 << 25 << 0;
    QTest::newRow("no user message at all: back to the assistant of the results")
        << "atatat" << std::vector<int>{10, 10, 10, 10, 10, 10} << 40 << 25 << 2;
    QTest::newRow("one message: nothing") << "u" << std::vector<int>{100} << 40 << 10 << 0;
}

void TestChatWindow::selectFlush()
{
    QFETCH(QString, roles);
    QFETCH(std::vector<int>, tokens);
    QFETCH(int, budget);
    QFETCH(int, flushSize);
    QFETCH(int, count);
    const ChatWindow::FlushSelection s = ChatWindow::selectFlush(::roles(roles), tokens, budget, flushSize);
    QCOMPARE(s.count, count);
    int sum = 0;
    for (int i = 0; i < count; ++i)
        sum += tokens[size_t(i)];
    QCOMPARE(s.tokens, sum);
}

void TestChatWindow::flushNeverSplitsToolCalls()
{
    // Every history of up to seven messages, every budget and flush size: what stays never starts with
    // a tool result, and the last message always stays.
    const QString letters = QStringLiteral("suat");
    int checked = 0;
    for (int n = 1; n <= 7; ++n) {
        int combos = 1;
        for (int i = 0; i < n; ++i)
            combos *= 4;
        for (int c = 0; c < combos; ++c) {
            QString shape;
            int v = c;
            for (int i = 0; i < n; ++i, v /= 4)
                shape += letters[v % 4];
            if (shape.startsWith(QLatin1Char('t')))
                continue; // a stored history never starts with a tool result
            const std::vector<Role> r = roles(shape);
            const std::vector<int> t(size_t(n), 10);
            for (int budget : {5, 25, 45})
                for (int flush : {1, 15, 35}) {
                    const ChatWindow::FlushSelection s = ChatWindow::selectFlush(r, t, budget, flush);
                    QVERIFY2(s.count < n, qPrintable(shape));
                    if (s.count > 0)
                        QVERIFY2(r[size_t(s.count)] != Role::Tool, qPrintable(QStringLiteral("%1 flush %2 budget %3").arg(shape).arg(flush).arg(budget)));
                    ++checked;
                }
        }
    }
    QVERIFY(checked > 10000);
}

void TestChatWindow::renderMemory()
{
    QCOMPARE(ChatWindow::renderMemory({}), QString());
    const QString memory = ChatWindow::renderMemory({{QStringLiteral("static_memory"), QStringLiteral("core_info"), QStringLiteral("My name is Logan.")},
                                                     {QStringLiteral("fact_extraction_memory"), QStringLiteral("facts"), QStringLiteral("<fact>Fact 1</fact>")}});
    QCOMPARE(memory, QStringLiteral("<memory>\n<static_memory>\nMy name is Logan.\n</static_memory>\n<fact_extraction_memory>\n"
                                    "<fact>Fact 1</fact>\n</fact_extraction_memory>\n</memory>"));
    // Two sections of one tag are told apart by their names (escaped as attribute values).
    const QString two = ChatWindow::renderMemory({{QStringLiteral("static_memory"), QStringLiteral("a'b"), QStringLiteral("x")},
                                                  {QStringLiteral("static_memory"), QStringLiteral("c"), QStringLiteral("y")}});
    QVERIFY(two.contains(QStringLiteral("<static_memory name='a&apos;b'>\nx\n</static_memory>")));
    QVERIFY(two.contains(QStringLiteral("<static_memory name='c'>\ny\n</static_memory>")));
}

void TestChatWindow::insertMemory()
{
    std::vector<ChatMessage> m = {ChatMessage::user(QStringLiteral("hi")), ChatMessage::assistant(QStringLiteral("hello"))};
    QCOMPARE(ChatWindow::insertMemory(m, QStringLiteral("<memory/>"), InsertMethod::System), size_t(0));
    QCOMPARE(m.size(), size_t(3));
    QCOMPARE(m[0].role, Role::System);
    QCOMPARE(m[0].content, QStringLiteral("<memory/>"));

    std::vector<ChatMessage> s = {ChatMessage::system(QStringLiteral("You help.")), ChatMessage::user(QStringLiteral("hi"))};
    QCOMPARE(ChatWindow::insertMemory(s, QStringLiteral("M"), InsertMethod::System), size_t(0));
    QCOMPARE(s[0].content, QStringLiteral("M\n\nYou help."));

    std::vector<ChatMessage> u = {ChatMessage::user(QStringLiteral("one")), ChatMessage::assistant(QStringLiteral("a")),
                                  ChatMessage::user(QStringLiteral("two")), ChatMessage::assistant(QStringLiteral("b"))};
    QCOMPARE(ChatWindow::insertMemory(u, QStringLiteral("M"), InsertMethod::User), size_t(2));
    QCOMPARE(u[2].content, QStringLiteral("M\n\ntwo"));
    QCOMPARE(u[0].content, QStringLiteral("one"));

    std::vector<ChatMessage> none = {ChatMessage::assistant(QStringLiteral("a"))};
    QCOMPARE(ChatWindow::insertMemory(none, QStringLiteral("M"), InsertMethod::User), size_t(1));
    QCOMPARE(none.back().role, Role::User);
}

void TestChatWindow::estimate_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("tokens");
    // The estimate; each equals what OpenAI's cl100k_base tokenizer counts, but for the CJK text (5).
    QTest::newRow("empty") << QString() << 0;
    QTest::newRow("two words") << QStringLiteral("Hello world") << 2;
    QTest::newRow("a sentence") << QStringLiteral("My name is Logan, and I live in Saskatoon.") << 12;
    QTest::newRow("contraction") << QStringLiteral("I'm here") << 3;
    QTest::newRow("digits in threes") << QStringLiteral("1234567") << 3;
    QTest::newRow("spaces before a word") << QStringLiteral("a   b") << 3;
    QTest::newRow("new lines") << QStringLiteral("a\n\nb") << 3;
    QTest::newRow("a long word") << QStringLiteral("internationalization") << 2;
    QTest::newRow("CJK one per character") << QStringLiteral("你好世界") << 4;
    QTest::newRow("emoji") << QStringLiteral("ok 👍") << 3;
}

void TestChatWindow::estimate()
{
    QFETCH(QString, text);
    QFETCH(int, tokens);
    QCOMPARE(TokenCounter::estimate(text), tokens);
}

void TestChatWindow::messageTokens()
{
    const TokenCounter counter([](const QString &t) { return int(t.size()); }); // one token per character
    QCOMPARE(counter.count(ChatMessage::user(QStringLiteral("abc"))), TokenCounter::kMessageOverhead + 3);
    ChatMessage call = ChatMessage::assistant(QString(), {ToolCall{QStringLiteral("c1"), QStringLiteral("calc"), Json{{"x", 1}}}});
    QCOMPARE(counter.count(call), TokenCounter::kMessageOverhead + TokenCounter::kToolCallOverhead + 4 + int(QByteArray(R"({"x":1})").size()));
    const ChatMessage result = ChatMessage::toolResult(QStringLiteral("c1"), QStringLiteral("calc"), QStringLiteral("2"));
    QCOMPARE(counter.count(result), TokenCounter::kMessageOverhead + 1 + 4 + 2);
    SessionMessage reported(ChatMessage::assistant(QStringLiteral("a long answer")));
    reported.tokens = 42;
    QCOMPARE(counter.count(reported), 42);
}

void TestChatWindow::customCounter()
{
    const TokenCounter negative([](const QString &) { return -5; });
    QCOMPARE(negative.count(QStringLiteral("x")), 0);
    const TokenCounter fallback{TokenCounter::Function()};
    QCOMPARE(fallback.count(QStringLiteral("Hello world")), 2);
}

QTEST_GUILESS_MAIN(TestChatWindow)
#include "test_chat_window.moc"
