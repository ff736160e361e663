#include <mneme/core/stream_parsers.h>

#include <QRandomGenerator>
#include <QtTest>
#include <functional>

using namespace mneme;

namespace {

// One event as a readable line, so that QCOMPARE shows what differs.
QString show(const QByteArray &event, const QByteArray &data, const QByteArray &id = {})
{
    QByteArray escaped = data;
    escaped.replace('\\', "\\\\").replace('\n', "\\n").replace('\r', "\\r");
    return QStringLiteral("event=%1 id=%2 data=%3")
        .arg(QString::fromUtf8(event), QString::fromUtf8(id), QString::fromUtf8(escaped));
}

QString show(const SseParser::Event &e)
{
    return show(e.event, e.data, e.id);
}

// Cuts `input` into chunks: -1 = all at once, 0 = one byte at a time, otherwise random cuts from
// that seed (chunks of 1 to 7 bytes, with an empty feed now and then).
QList<QByteArray> chunks(const QByteArray &input, int mode)
{
    QList<QByteArray> out;
    if (mode < 0) {
        out << input;
        return out;
    }
    if (mode == 0) {
        for (const char c : input)
            out << QByteArray(1, c);
        return out;
    }
    QRandomGenerator rng(static_cast<quint32>(mode));
    qsizetype i = 0;
    while (i < input.size()) {
        if (rng.bounded(10) == 0)
            out << QByteArray();
        const qsizetype n = std::min<qsizetype>(1 + rng.bounded(7), input.size() - i);
        out << input.mid(i, n);
        i += n;
    }
    return out;
}

QString modeName(int mode)
{
    if (mode < 0)
        return QStringLiteral("whole");
    if (mode == 0)
        return QStringLiteral("byte by byte");
    return QStringLiteral("random split, seed %1").arg(mode);
}

const QList<int> kModes = [] {
    QList<int> m{-1, 0};
    for (int seed = 1; seed <= 40; ++seed)
        m << seed;
    return m;
}();

QStringList runSse(const QByteArray &input, int mode)
{
    SseParser p;
    QStringList got;
    for (const QByteArray &c : chunks(input, mode)) {
        p.feed(c);
        for (const auto &e : p.take())
            got << show(e);
    }
    p.finish();
    for (const auto &e : p.take())
        got << show(e);
    return got;
}

QStringList runNdjson(const QByteArray &input, int mode)
{
    NdjsonParser p;
    QStringList got;
    for (const QByteArray &c : chunks(input, mode)) {
        p.feed(c);
        for (const auto &l : p.take())
            got << QString::fromUtf8(l);
    }
    p.finish();
    for (const auto &l : p.take())
        got << QString::fromUtf8(l);
    return got;
}

} // namespace

class TestStreamParsers : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void sse_data()
    {
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<QStringList>("expected");

        const QByteArray d1 = R"({"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"}}]})";
        const QByteArray d2 = R"({"id":"c1","choices":[{"index":0,"delta":{"content":"lo ✓"}}]})";
        QTest::newRow("openai") << "data: " + d1 + "\n\ndata: " + d2 + "\n\ndata: [DONE]\n\n"
                                << QStringList{show({}, d1), show({}, d2), show({}, "[DONE]")};

        const QByteArray start = R"({"type":"message_start","message":{"id":"msg_1","content":[]}})";
        const QByteArray delta = R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})";
        const QByteArray ping = R"({"type": "ping"})";
        const QByteArray stop = R"({"type":"message_stop"})";
        const QByteArray anthropic = "event: message_start\ndata: " + start + "\n\nevent: content_block_delta\ndata: "
                                   + delta + "\n\nevent: ping\ndata: " + ping + "\n\nevent: message_stop\ndata: "
                                   + stop + "\n\n";
        const QStringList anthropicEvents{show("message_start", start), show("content_block_delta", delta),
                                          show("ping", ping), show("message_stop", stop)};
        QTest::newRow("anthropic") << anthropic << anthropicEvents;
        QByteArray crlf = anthropic;
        crlf.replace("\n", "\r\n");
        QTest::newRow("anthropic crlf") << crlf << anthropicEvents;
        QByteArray cr = anthropic;
        cr.replace("\n", "\r");
        QTest::newRow("anthropic cr") << cr << anthropicEvents;

        QTest::newRow("gemini crlf") << QByteArray("data: {\"candidates\":[]}\r\n\r\ndata: {\"usageMetadata\":{}}\r\n\r\n")
                                     << QStringList{show({}, R"({"candidates":[]})"), show({}, R"({"usageMetadata":{}})")};
        QTest::newRow("mixed line ends")
            << QByteArray("data: a\r\ndata: b\rdata: c\n\r\nevent: e\rdata: d\r\r")
            << QStringList{show({}, "a\nb\nc"), show("e", "d")};
        QTest::newRow("cr cr") << QByteArray("data: a\r\rdata: b\r\r") << QStringList{show({}, "a"), show({}, "b")};

        QTest::newRow("comments") << QByteArray(": keep-alive\n\ndata: x\n: between\ndata: y\n\n:\n: trailing\n")
                                  << QStringList{show({}, "x\ny")};
        QTest::newRow("multi-line data") << QByteArray("data: a\ndata: b\ndata:\ndata: c\n\n")
                                         << QStringList{show({}, "a\nb\n\nc")};
        QTest::newRow("json across lines") << QByteArray("data: {\ndata:   \"a\": 1\ndata: }\n\n")
                                           << QStringList{show({}, "{\n  \"a\": 1\n}")};
        QTest::newRow("one leading space removed") << QByteArray("data:x\n\ndata:  y\n\ndata: \n\n")
                                                   << QStringList{show({}, "x"), show({}, " y"), show({}, "")};
        QTest::newRow("colon in value") << QByteArray("data: a: b:c\n\n") << QStringList{show({}, "a: b:c")};
        QTest::newRow("field without colon") << QByteArray("data\n\ndata\ndata\n\n")
                                             << QStringList{show({}, ""), show({}, "\n")};
        QTest::newRow("event without data not dispatched")
            << QByteArray("event: ping\n\nid: 3\n\ndata: y\n\n") << QStringList{show({}, "y", "3")};
        QTest::newRow("event name resets") << QByteArray("event: a\ndata: 1\n\ndata: 2\n\n")
                                           << QStringList{show("a", "1"), show({}, "2")};
        QTest::newRow("id persists and resets")
            << QByteArray("id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n")
            << QStringList{show({}, "a", "7"), show({}, "b", "7"), show({}, "c", "")};
        QTest::newRow("id with nul ignored") << QByteArray("id: 1\n\nid: 2") + QByteArray(1, '\0') + "x\ndata: a\n\n"
                                             << QStringList{show({}, "a", "1")};
        QTest::newRow("retry and unknown fields ignored")
            << QByteArray("retry: 1000\nfoo: bar\nData: no\ndata: z\n\n") << QStringList{show({}, "z")};
        QTest::newRow("last event without blank line") << QByteArray("data: a\n\nevent: end\ndata: last")
                                                       << QStringList{show({}, "a"), show("end", "last")};
        QTest::newRow("last line ended, no blank line") << QByteArray("data: last\r\n") << QStringList{show({}, "last")};
        QTest::newRow("last line ended by cr") << QByteArray("data: last\r") << QStringList{show({}, "last")};
        QTest::newRow("utf-8") << QByteArray("data: héllo ✓ 日本\n\n") << QStringList{show({}, "héllo ✓ 日本")};
        QTest::newRow("blank lines only") << QByteArray("\n\r\n\r\n\n") << QStringList{};
        QTest::newRow("empty") << QByteArray() << QStringList{};
    }
    void sse()
    {
        QFETCH(QByteArray, input);
        QFETCH(QStringList, expected);
        for (const int mode : kModes) {
            const QStringList got = runSse(input, mode);
            QVERIFY2(got == expected, qPrintable(QStringLiteral("%1:\n  got      %2\n  expected %3")
                                                     .arg(modeName(mode), got.join(QStringLiteral(" | ")),
                                                          expected.join(QStringLiteral(" | ")))));
        }
    }

    void sse_dispatchesWithoutWaiting()
    {
        SseParser p;
        p.feed("data: a\n");
        QVERIFY(p.take().empty());
        p.feed("\n");
        auto events = p.take();
        QCOMPARE(events.size(), size_t(1));
        QCOMPARE(events[0].data, QByteArray("a"));
        QVERIFY(p.take().empty()); // take() forgets what it returned

        // An event ended by \r at the very end of a chunk comes out at once, and the \n of a \r\n
        // split across chunks is not taken for a second line end.
        p.feed("data: b\r\n\r");
        events = p.take();
        QCOMPARE(events.size(), size_t(1));
        QCOMPARE(events[0].data, QByteArray("b"));
        p.feed("\ndata: c\r");
        QVERIFY(p.take().empty());
        p.feed("\n");
        QVERIFY(p.take().empty());
        p.feed("\r\n");
        events = p.take();
        QCOMPARE(events.size(), size_t(1));
        QCOMPARE(events[0].data, QByteArray("c"));

        // A chunk that starts with its own line end right after a complete line.
        p.feed("data: d\n");
        p.feed("\r\n");
        events = p.take();
        QCOMPARE(events.size(), size_t(1));
        QCOMPARE(events[0].data, QByteArray("d"));

        p.finish();
        QVERIFY(p.take().empty());
    }

    void ndjson_data()
    {
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<QStringList>("expected");
        const QString a = QStringLiteral(R"({"model":"llama3","message":{"role":"assistant","content":"Hi ✓"},"done":false})");
        const QString b = QStringLiteral(R"({"model":"llama3","done":true,"eval_count":12})");
        QTest::newRow("ollama") << (a + "\n" + b + "\n").toUtf8() << QStringList{a, b};
        QTest::newRow("crlf") << (a + "\r\n" + b + "\r\n").toUtf8() << QStringList{a, b};
        QTest::newRow("blank lines skipped") << ("\n" + a + "\n\n  \r\n\t\n" + b + "\n\n").toUtf8() << QStringList{a, b};
        QTest::newRow("last line without newline") << (a + "\n" + b).toUtf8() << QStringList{a, b};
        QTest::newRow("last line with cr only") << (a + "\r").toUtf8() << QStringList{a};
        QTest::newRow("single line") << a.toUtf8() << QStringList{a};
        QTest::newRow("empty") << QByteArray() << QStringList{};
        QTest::newRow("newlines only") << QByteArray("\n\r\n\n") << QStringList{};
    }
    void ndjson()
    {
        QFETCH(QByteArray, input);
        QFETCH(QStringList, expected);
        for (const int mode : kModes) {
            const QStringList got = runNdjson(input, mode);
            QVERIFY2(got == expected, qPrintable(QStringLiteral("%1:\n  got      %2\n  expected %3")
                                                     .arg(modeName(mode), got.join(QStringLiteral(" | ")),
                                                          expected.join(QStringLiteral(" | ")))));
        }
    }

    void ndjson_partialLineWaits()
    {
        NdjsonParser p;
        p.feed("{\"a\":1}\n{\"b\"");
        auto lines = p.take();
        QCOMPARE(lines.size(), size_t(1));
        QCOMPARE(lines[0], QByteArray("{\"a\":1}"));
        QVERIFY(p.take().empty());
        p.feed(":2}");
        QVERIFY(p.take().empty());
        p.finish();
        lines = p.take();
        QCOMPARE(lines.size(), size_t(1));
        QCOMPARE(lines[0], QByteArray("{\"b\":2}"));
        p.finish();
        QVERIFY(p.take().empty());
    }
};

QTEST_GUILESS_MAIN(TestStreamParsers)
#include "test_stream_parsers.moc"
