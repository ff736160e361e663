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

    void isoTimes_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected");
        QTest::newRow("utc ms") << "2024-05-01T12:00:00.250Z"
                                << "2024-05-01T12:00:00.250Z";
        QTest::newRow("offset") << "2024-05-01T14:00:00+02:00"
                                << "2024-05-01T12:00:00.000Z";
        QTest::newRow("no zone is utc") << "2024-05-01T12:00:00"
                                        << "2024-05-01T12:00:00.000Z";
        QTest::newRow("date only") << "2023-05-08"
                                   << "2023-05-08T00:00:00.000Z";
        QTest::newRow("garbage") << "not a date"
                                 << "";
    }
    void isoTimes()
    {
        QFETCH(QString, text);
        QFETCH(QString, expected);
        QCOMPARE(toIso(fromIso(text)), expected);
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
