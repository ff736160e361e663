#include <mneme/core/error.h>
#include <mneme/core/history_entry.h>
#include <mneme/core/memory_record.h>
#include <mneme/core/record_filter.h>
#include <mneme/core/scope_info.h>

#include <QRandomGenerator>
#include <QtTest>

using namespace mneme;

class TestMemoryRecord : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // Acceptance case 1.
    void defaults()
    {
        const MemoryRecord r = MemoryRecord::create(QStringLiteral("hello"));
        QCOMPARE(r.scope, QStringLiteral("/"));
        QVERIFY(r.categories.isEmpty());
        QCOMPARE(r.importance, 0.5);
        QVERIFY(r.embedding.empty());
        QVERIFY(!r.id.isEmpty());
        QVERIFY(!QUuid::fromString(r.id).isNull());
        QVERIFY(r.createdAt.isValid());
        QCOMPARE(r.createdAt.timeSpec(), Qt::UTC);
        QVERIFY(r.source.isEmpty());
        QVERIFY(!r.isPrivate);
        QVERIFY(MemoryRecord::create(QStringLiteral("x")).id != r.id);
    }

    void idsAreTimeOrderedUuids()
    {
        const MemoryRecord first = MemoryRecord::create(QStringLiteral("a"));
        QTest::qWait(3);
        const MemoryRecord second = MemoryRecord::create(QStringLiteral("b"));
        for (const MemoryRecord *r : {&first, &second}) {
            // Qt 6.4's QUuid::version() knows versions 1 to 5 only: read the version digit.
            QVERIFY(!QUuid::fromString(r->id).isNull());
            QCOMPARE(QUuid::fromString(r->id).variant(), QUuid::DCE);
            QCOMPARE(r->id.size(), 36);
            QCOMPARE(r->id.at(14), QLatin1Char('7'));
        }
        QVERIFY2(first.id < second.id, qPrintable(first.id + QLatin1Char(' ') + second.id)); // later ids sort after
        // The first 48 bits are the creation time in milliseconds.
        const qint64 ms = first.id.left(8).toLongLong(nullptr, 16) << 16 | first.id.mid(9, 4).toLongLong(nullptr, 16);
        QVERIFY(qAbs(ms - first.createdAt.toMSecsSinceEpoch()) < 1000);
        QSet<QString> many;
        for (int i = 0; i < 1000; ++i)
            many.insert(MemoryRecord::create(QString()).id);
        QCOMPARE(many.size(), 1000);
    }

    // Acceptance case 2: the embedding is never serialised.
    void embeddingNotSerialised()
    {
        MemoryRecord r = MemoryRecord::create(QStringLiteral("hello"));
        r.embedding = {0.1f, 0.2f, 0.3f};
        Json j = r;
        QVERIFY(!j.contains("embedding"));
        const MemoryRecord back = Json::parse(j.dump()).get<MemoryRecord>();
        QVERIFY(back.embedding.empty());
        QCOMPARE(r.embedding.size(), size_t(3));
        QVERIFY(back == r); // every other field survives, times to the millisecond
    }

    void jsonFields()
    {
        MemoryRecord r = MemoryRecord::create(QStringLiteral("c"));
        r.scope = QStringLiteral("/a");
        r.categories = {QStringLiteral("x"), QStringLiteral("y")};
        r.source = QStringLiteral("user:alice");
        r.isPrivate = true;
        r.metadata = Json{{"k", 1}};
        const Json j = r;
        for (const char *key : {"id", "content", "scope", "categories", "importance", "source", "private", "metadata",
                                "created_at", "updated_at", "last_accessed", "access_count"})
            QVERIFY2(j.contains(key), key);
        QCOMPARE(j.size(), size_t(12));
        QVERIFY(QString::fromStdString(j["created_at"].get<std::string>()).endsWith(QLatin1Char('Z')));
        QVERIFY(Json(MemoryRecord::create(QStringLiteral("n")))["source"].is_null());
    }

    void badJson_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("field");
        QTest::newRow("not object") << "[1]"
                                    << "object";
        QTest::newRow("content number") << R"({"content": 5})"
                                        << "content";
        QTest::newRow("categories string") << R"({"content": "a", "categories": "x"})"
                                           << "categories";
        QTest::newRow("importance string") << R"({"content": "a", "importance": "high"})"
                                           << "importance";
        QTest::newRow("private string") << R"({"content": "a", "private": "yes"})"
                                        << "private";
        QTest::newRow("metadata array") << R"({"content": "a", "metadata": [1]})"
                                        << "metadata";
        QTest::newRow("bad date") << R"({"content": "a", "created_at": "yesterday"})"
                                  << "created_at";
    }
    void badJson()
    {
        QFETCH(QString, json);
        QFETCH(QString, field);
        try {
            (void)Json::parse(json.toStdString()).get<MemoryRecord>();
            QFAIL("accepted bad JSON");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
            QVERIFY2(e.message().contains(field), qPrintable(e.message()));
        }
    }

    // fromIso reads strict ISO 8601 only: what it cannot read whole is refused, never read as midnight.
    void isoTimes_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected");
        const auto row = [](const char *name, const char *text, const char *expected) { QTest::newRow(name) << text << expected; };
        row("utc ms", "2024-05-01T12:00:00.250Z", "2024-05-01T12:00:00.250Z");
        row("offset", "2024-05-01T14:00:00+02:00", "2024-05-01T12:00:00.000Z");
        row("minus half hour", "2024-05-01T10:00:00-05:30", "2024-05-01T15:30:00.000Z");
        row("offset crosses day", "2024-05-01T01:00:00+02:00", "2024-04-30T23:00:00.000Z");
        row("offset without colon", "2024-05-01T10:00+0200", "2024-05-01T08:00:00.000Z");
        row("offset hours only", "2024-05-01T10:00-03", "2024-05-01T13:00:00.000Z");
        row("offset 14:00", "2024-05-01T14:00:00+14:00", "2024-05-01T00:00:00.000Z");
        row("no zone is utc", "2024-05-01T12:00:00", "2024-05-01T12:00:00.000Z");
        row("no seconds", "2024-05-01T10:15", "2024-05-01T10:15:00.000Z");
        row("space separator", "2024-05-01 10:00:05", "2024-05-01T10:00:05.000Z");
        row("microseconds are cut", "2024-05-01T10:00:00.123956Z", "2024-05-01T10:00:00.123Z");
        row("tenths", "2024-05-01T10:00:00.5Z", "2024-05-01T10:00:00.500Z");
        row("comma fraction", "2024-05-01T10:00:00,5Z", "2024-05-01T10:00:00.500Z");
        row("lower case", "2024-05-01t10:00:00z", "2024-05-01T10:00:00.000Z");
        row("surrounding blanks", " 2024-02-29 ", "2024-02-29T00:00:00.000Z");
        row("date only", "2023-05-08", "2023-05-08T00:00:00.000Z");
        row("first instant", "0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z");
        row("last instant", "9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z");
        // Refused: every one of these used to be read (some as the midnight of their date).
        row("garbage", "not a date", "");
        row("empty", "", "");
        row("offset +25:00", "2024-05-01T10:00:00+25:00", "");
        row("offset +15:00", "2024-05-01T10:00:00+15:00", "");
        row("offset minutes 60", "2024-05-01T10:00:00+01:60", "");
        row("hour 25", "2024-05-01T25:00:00Z", "");
        row("hour 24", "2024-05-01T24:00:00Z", "");
        row("minute 60", "2024-05-01T10:60:00Z", "");
        row("leap second", "2024-05-01T10:00:60Z", "");
        row("trailing garbage", "2024-05-01T10:00:00Z please", "");
        row("trailing garbage after a date", "2024-05-01xyz", "");
        row("slashes", "2024/05/01", "");
        row("us date", "05/01/2024", "");
        row("year-month", "2024-05", "");
        row("month 13", "2024-13-01", "");
        row("not leap", "2023-02-29", "");
        row("one digit day", "2024-05-1", "");
        row("five-digit year", "10000-01-01", "");
        row("before year 1 in UTC", "0001-01-01T00:30:00+01:00", "");
        row("after year 9999 in UTC", "9999-12-31T23:30:00-01:00", "");
        row("year 0", "0000-06-01", "");
    }
    void isoTimes()
    {
        QFETCH(QString, text);
        QFETCH(QString, expected);
        const QDateTime t = fromIso(text);
        QCOMPARE(toIso(t), expected);
        if (t.isValid())
            QCOMPARE(t.timeSpec(), Qt::UTC);
    }

    // toIso formats by hand: it must agree with Qt's own formatting at the edges of days, months,
    // leap years, centuries and the four-digit years, before and after the epoch, in any time spec.
    void isoFormatMatchesQt_data()
    {
        QTest::addColumn<qint64>("ms");
        const auto row = [](const char *name, qint64 ms) { QTest::newRow(name) << ms; };
        row("epoch", 0);
        row("one ms before the epoch", -1);
        row("one day before the epoch, minus 1 ms", -86400001);
        row("2000-02-29 (leap century)", QDateTime(QDate(2000, 2, 29), QTime(23, 59, 59, 999), Qt::UTC).toMSecsSinceEpoch());
        row("1900-03-01 (no leap day)", QDateTime(QDate(1900, 3, 1), QTime(0, 0), Qt::UTC).toMSecsSinceEpoch());
        row("2024-12-31 last ms", QDateTime(QDate(2024, 12, 31), QTime(23, 59, 59, 999), Qt::UTC).toMSecsSinceEpoch());
        row("2025-01-01 first ms", QDateTime(QDate(2025, 1, 1), QTime(0, 0), Qt::UTC).toMSecsSinceEpoch());
        row("1600-02-29", QDateTime(QDate(1600, 2, 29), QTime(12, 30, 15, 7), Qt::UTC).toMSecsSinceEpoch());
        row("year 1, first ms", QDateTime(QDate(1, 1, 1), QTime(0, 0), Qt::UTC).toMSecsSinceEpoch());
        row("year 9999, last ms", QDateTime(QDate(9999, 12, 31), QTime(23, 59, 59, 999), Qt::UTC).toMSecsSinceEpoch());
        row("year 10000 (Qt's format)", QDateTime(QDate(10000, 1, 1), QTime(0, 0), Qt::UTC).toMSecsSinceEpoch());
        row("1 BC (Qt's format)", QDateTime(QDate(-1, 12, 31), QTime(23, 59, 59, 999), Qt::UTC).toMSecsSinceEpoch());
    }
    void isoFormatMatchesQt()
    {
        QFETCH(qint64, ms);
        const QDateTime utc = QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC);
        QCOMPARE(toIso(utc), utc.toString(Qt::ISODateWithMs));
        if (utc.date().year() >= 1 && utc.date().year() <= 9999)
            QVERIFY(toIso(utc).endsWith(QLatin1Char('Z')));
        QCOMPARE(toIso(utc.toOffsetFromUtc(-5 * 3600)), toIso(utc)); // the same instant, written in UTC
    }
    // Every millisecond-resolution instant of a pseudo-random sample over the four-digit years.
    void isoFormatSample()
    {
        QRandomGenerator rng(20261125);
        const qint64 first = QDateTime(QDate(1, 1, 1), QTime(0, 0), Qt::UTC).toMSecsSinceEpoch();
        const qint64 last = QDateTime(QDate(9999, 12, 31), QTime(23, 59, 59, 999), Qt::UTC).toMSecsSinceEpoch();
        for (int i = 0; i < 20000; ++i) {
            const qint64 ms = first + qint64(rng.bounded(double(last - first)));
            const QDateTime utc = QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC);
            QCOMPARE(toIso(utc), utc.toString(Qt::ISODateWithMs));
        }
    }

    void filterMatches()
    {
        MemoryRecord r = MemoryRecord::create(QStringLiteral("c"));
        r.scope = QStringLiteral("/crew/ab");
        r.categories = {QStringLiteral("db")};
        r.source = QStringLiteral("user:alice");
        r.isPrivate = true;
        RecordFilter f;
        QVERIFY(f.isEmpty());
        QVERIFY(f.matches(r));
        f.scopes = {QStringLiteral("/crew/a")};
        QVERIFY(!f.matches(r));
        f.scopes = {QStringLiteral("/crew/a"), QStringLiteral("/crew/ab")};
        QVERIFY(f.matches(r));
        f.categories = {QStringLiteral("other")};
        QVERIFY(!f.matches(r));
        f.categories = {QStringLiteral("other"), QStringLiteral("db")};
        QVERIFY(f.matches(r));
        f.applyPrivacy = true;
        QVERIFY(!f.matches(r));
        f.source = QStringLiteral("user:bob");
        QVERIFY(!f.matches(r));
        f.source = QStringLiteral("user:alice");
        QVERIFY(f.matches(r));
        f.source.clear();
        f.includePrivate = true;
        QVERIFY(f.matches(r));
        f.metadata = Json{{"k", 1}};
        QVERIFY(!f.matches(r));
        r.metadata = Json{{"k", 1}, {"j", 2}};
        QVERIFY(f.matches(r));
        f.createdBefore = r.createdAt;
        QVERIFY(!f.matches(r));
        f.createdBefore = r.createdAt.addMSecs(1);
        QVERIFY(f.matches(r));
    }

    void historyAndInfoJson()
    {
        HistoryEntry e;
        e.event = HistoryEntry::Event::Update;
        e.oldContent = QStringLiteral("a");
        e.newContent = QStringLiteral("b");
        e.at = fromIso(QStringLiteral("2024-01-01T00:00:00Z"));
        const Json j = e;
        QCOMPARE(j["event"], "UPDATE");
        QCOMPARE(j["old_content"], "a");
        QCOMPARE(j["new_content"], "b");
        QCOMPARE(j["at"], "2024-01-01T00:00:00.000Z");
        QCOMPARE(HistoryEntry::eventFromName(QStringLiteral("DELETE")), HistoryEntry::Event::Delete);
        ScopeInfo info;
        info.path = QStringLiteral("/p");
        const Json ij = info;
        for (const char *key : {"path", "record_count", "categories", "oldest_record", "newest_record", "child_scopes"})
            QVERIFY2(ij.contains(key), key);
        QVERIFY(ij["oldest_record"].is_null());
    }

    void errorExitCodes()
    {
        QCOMPARE(Error(ErrorKind::InvalidArgument, QStringLiteral("x")).exitCode(), 2);
        QCOMPARE(Error(ErrorKind::NotFound, QStringLiteral("x")).exitCode(), 2);
        QCOMPARE(Error(ErrorKind::PermissionDenied, QStringLiteral("x")).exitCode(), 3);
        QCOMPARE(Error(ErrorKind::ReadOnlyStore, QStringLiteral("x")).exitCode(), 3);
        QCOMPARE(Error(ErrorKind::Storage, QStringLiteral("x")).exitCode(), 1);
        QCOMPARE(Error(ErrorKind::EmbedderMismatch, QStringLiteral("x")).exitCode(), 1);
        QCOMPARE(Error::kindName(ErrorKind::SchemaTooNew), QStringLiteral("schema_too_new"));
    }
};

QTEST_GUILESS_MAIN(TestMemoryRecord)
#include "test_memory_record.moc"
