// Time expressions read offline for deep recall: TimeExpression::parse.

#include "memory/time_expression_p.h"

#include <QtTest>

using namespace mneme;

namespace {

// Wednesday; its week starts on Monday 2024-05-13.
const QDateTime kNow(QDate(2024, 5, 15), QTime(12, 0), Qt::UTC);

// "2024-05-13" or "2024-05-13T12:00" in UTC; empty -> an open (invalid) bound.
QDateTime utc(const QString &text)
{
    if (text.isEmpty())
        return {};
    if (text.size() == 10)
        return QDateTime(QDate::fromString(text, Qt::ISODate), QTime(0, 0), Qt::UTC);
    QDateTime t = QDateTime::fromString(text, Qt::ISODate);
    t.setTimeSpec(Qt::UTC);
    return t;
}

} // namespace

class TestTimeExpression : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void parse_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QDateTime>("now");
        QTest::addColumn<QString>("from");
        QTest::addColumn<QString>("to");
        QTest::addColumn<QString>("phrase");
        const auto row = [](const char *name, const char *text, const char *from, const char *to, const char *phrase,
                            const QDateTime &now = kNow) {
            QTest::newRow(name) << QString::fromUtf8(text) << now << QString::fromLatin1(from) << QString::fromLatin1(to)
                                << QString::fromUtf8(phrase);
        };
        // Days.
        row("today", "What did I do today?", "2024-05-15", "2024-05-16", "today");
        row("yesterday", "Notes from yesterday", "2024-05-14", "2024-05-15", "from yesterday");
        row("day before yesterday", "the day before yesterday we met", "2024-05-13", "2024-05-14", "the day before yesterday");
        row("this morning", "What came up this morning", "2024-05-15", "2024-05-15T12:00:00", "this morning");
        row("last night", "the call last night", "2024-05-14T18:00:00", "2024-05-15T06:00:00", "last night");
        row("upper case", "LAST WEEK", "2024-05-06", "2024-05-13", "LAST WEEK");
        // Calendar periods.
        row("this week", "decisions this week", "2024-05-13", "2024-05-20", "this week");
        row("last week", "what we decided last week", "2024-05-06", "2024-05-13", "last week");
        row("previous week", "the previous week", "2024-05-06", "2024-05-13", "the previous week");
        row("this month", "this month", "2024-05-01", "2024-06-01", "this month");
        row("last month", "bugs from last month", "2024-04-01", "2024-05-01", "from last month");
        row("this year", "this year", "2024-01-01", "2025-01-01", "this year");
        row("last year", "last year", "2023-01-01", "2024-01-01", "last year");
        row("last weekend", "last weekend", "2024-05-11", "2024-05-13", "last weekend");
        row("this weekend", "this weekend", "2024-05-18", "2024-05-20", "this weekend");
        // Rolling periods end now and stay open.
        row("past week", "in the past week", "2024-05-08T12:00:00", "", "in the past week");
        row("the last week is rolling", "what did I do in the last week", "2024-05-08T12:00:00", "", "in the last week");
        row("the last month is rolling", "over the last month", "2024-04-15T12:00:00", "", "over the last month");
        row("past month", "past month", "2024-04-15T12:00:00", "", "past month");
        row("past year", "the past year", "2023-05-15T12:00:00", "", "the past year");
        row("this past week", "this past week", "2024-05-08T12:00:00", "", "this past week");
        row("last 3 days", "errors in the last 3 days", "2024-05-12T12:00:00", "", "in the last 3 days");
        row("past 2 weeks", "past 2 weeks", "2024-05-01T12:00:00", "", "past 2 weeks");
        row("last six months", "the last six months", "2023-11-15T12:00:00", "", "the last six months");
        row("last two years", "over the last two years", "2022-05-15T12:00:00", "", "over the last two years");
        row("past few days", "the past few days", "2024-05-12T12:00:00", "", "the past few days");
        row("last couple of weeks", "last couple of weeks", "2024-05-01T12:00:00", "", "last couple of weeks");
        row("last 24 hours", "within the last 24 hours", "2024-05-14T12:00:00", "", "within the last 24 hours");
        // "N ago": the calendar unit containing that moment.
        row("3 days ago", "3 days ago", "2024-05-12", "2024-05-13", "3 days ago");
        row("a week ago", "a week ago", "2024-05-06", "2024-05-13", "a week ago");
        row("two weeks ago", "two weeks ago", "2024-04-29", "2024-05-06", "two weeks ago");
        row("2 months ago", "about 2 months ago", "2024-03-01", "2024-04-01", "2 months ago");
        row("a year ago", "a year ago", "2023-01-01", "2024-01-01", "a year ago");
        row("couple of days ago", "a couple of days ago", "2024-05-13", "2024-05-14", "a couple of days ago");
        row("hours ago", "2 hours ago", "2024-05-15T10:00:00", "2024-05-15T11:00:00", "2 hours ago");
        // Months and years.
        row("in month year", "What happened in April 2023?", "2023-04-01", "2023-05-01", "in April 2023");
        row("month year bare", "the March 2024 release", "2024-03-01", "2024-04-01", "March 2024");
        row("in current month", "in May", "2024-05-01", "2024-06-01", "in May");
        row("in later month is last year", "in June", "2023-06-01", "2023-07-01", "in June");
        row("in december across year", "in December", "2023-12-01", "2024-01-01", "in December");
        row("during january", "during January", "2024-01-01", "2024-02-01", "during January");
        row("of month", "summary of April", "2024-04-01", "2024-05-01", "of April");
        row("possessive is a name", "ask May's team about March 2024", "2024-03-01", "2024-04-01", "March 2024");
        row("last may", "last May", "2023-05-01", "2023-06-01", "last May");
        row("last april", "last April", "2024-04-01", "2024-05-01", "last April");
        row("abbreviated month", "in Sept", "2023-09-01", "2023-10-01", "in Sept");
        row("in year", "in 2023", "2023-01-01", "2024-01-01", "in 2023");
        // Dates.
        row("iso", "2023-05-07", "2023-05-07", "2023-05-08", "2023-05-07");
        row("on iso", "on 2023-05-07 we shipped", "2023-05-07", "2023-05-08", "on 2023-05-07");
        row("iso date-time", "at 2024-05-01T10:00:00Z", "2024-05-01", "2024-05-02", "2024-05-01");
        row("iso slashes", "2024/02/03", "2024-02-03", "2024-02-04", "2024/02/03");
        row("month day year", "May 7, 2023", "2023-05-07", "2023-05-08", "May 7, 2023");
        row("day month year", "on 7 May 2023", "2023-05-07", "2023-05-08", "on 7 May 2023");
        row("ordinal of month", "on the 7th of May", "2024-05-07", "2024-05-08", "on the 7th of May");
        row("month day future is last year", "May 20", "2023-05-20", "2023-05-21", "May 20");
        row("abbreviation with dot", "Jan. 5 2024", "2024-01-05", "2024-01-06", "Jan. 5 2024");
        row("leap day without year", "on Feb 29", "2024-02-29", "2024-03-01", "on Feb 29");
        row("leap day with year", "February 29, 2024", "2024-02-29", "2024-03-01", "February 29, 2024");
        row("leap day looks back", "Feb 29", "2020-02-29", "2020-03-01", "Feb 29",
            QDateTime(QDate(2023, 6, 1), QTime(0, 0), Qt::UTC));
        // Weekdays.
        row("on monday", "on Monday", "2024-05-13", "2024-05-14", "on Monday");
        row("last monday", "last Monday", "2024-05-13", "2024-05-14", "last Monday");
        row("weekday today", "on Wednesday", "2024-05-15", "2024-05-16", "on Wednesday");
        row("last weekday today", "last Wednesday", "2024-05-08", "2024-05-09", "last Wednesday");
        row("bare friday", "Friday standup", "2024-05-10", "2024-05-11", "Friday");
        row("this monday", "this Monday", "2024-05-13", "2024-05-14", "this Monday");
        // Prefixes.
        row("since iso", "since 2024-05-01", "2024-05-01", "", "since 2024-05-01");
        row("since month", "everything since March", "2024-03-01", "", "since March");
        row("since last week", "since last week", "2024-05-06", "", "since last week");
        row("as of", "as of yesterday", "2024-05-14", "", "as of yesterday");
        row("before year", "before 2024", "", "2024-01-01", "before 2024");
        row("before month year", "before March 2024", "", "2024-03-01", "before March 2024");
        row("after month year", "after April 2024", "2024-05-01", "", "after April 2024");
        row("after day", "after 2023-12-31", "2024-01-01", "", "after 2023-12-31");
        row("until yesterday", "until yesterday", "", "2024-05-15", "until yesterday");
        row("between months", "between March and April", "2024-03-01", "2024-05-01", "between March and April");
        row("from to weekdays", "from Monday to Wednesday", "2024-05-13", "2024-05-16", "from Monday to Wednesday");
        row("between dates", "between May 1, 2024 and May 10, 2024", "2024-05-01", "2024-05-11",
            "between May 1, 2024 and May 10, 2024");
        row("from without end", "from June 2023", "2023-06-01", "2023-07-01", "from June 2023");
        // The later period first: the range between them, not an empty one.
        row("between, later first", "between May 2024 and June 2023", "2023-06-01", "2024-06-01", "between May 2024 and June 2023");
        row("from to, later first", "from 2024 to 2022", "2022-01-01", "2025-01-01", "from 2024 to 2022");
        // The first period named wins.
        row("first wins", "yesterday, and also last week", "2024-05-14", "2024-05-15", "yesterday");
        row("verb then month", "I may have said it in April", "2024-04-01", "2024-05-01", "in April");
        row("skips future", "next Monday and last Friday", "2024-05-10", "2024-05-11", "last Friday");
        // Other clocks: month, year and leap boundaries.
        const QDateTime january(QDate(2024, 1, 10), QTime(8, 0), Qt::UTC);
        row("january last month", "last month", "2023-12-01", "2024-01-01", "last month", january);
        row("january last week", "last week", "2024-01-01", "2024-01-08", "last week", january);
        row("january in december", "in December", "2023-12-01", "2024-01-01", "in December", january);
        row("january this year", "this year", "2024-01-01", "2025-01-01", "this year", january);
        row("january past month", "past month", "2023-12-10T08:00:00", "", "past month", january);
        const QDateTime marchFirst(QDate(2024, 3, 1), QTime(0, 30), Qt::UTC);
        row("leap yesterday", "yesterday", "2024-02-29", "2024-03-01", "yesterday", marchFirst);
        row("leap last month", "last month", "2024-02-01", "2024-03-01", "last month", marchFirst);
        const QDateTime marchEnd(QDate(2024, 3, 31), QTime(12, 0), Qt::UTC);
        row("month ago clamps", "a month ago", "2024-02-01", "2024-03-01", "a month ago", marchEnd);
        row("past month clamps", "past month", "2024-02-29T12:00:00", "", "past month", marchEnd);
        row("non-leap past year", "past year", "2023-02-28T12:00:00", "", "past year",
            QDateTime(QDate(2024, 2, 29), QTime(12, 0), Qt::UTC));
        row("sunday week", "this week", "2024-05-13", "2024-05-20", "this week",
            QDateTime(QDate(2024, 5, 19), QTime(23, 0), Qt::UTC));
        row("other offset now", "today", "2024-05-14", "2024-05-15", "today",
            QDateTime(QDate(2024, 5, 15), QTime(1, 0), Qt::OffsetFromUTC, 3 * 3600));
    }

    void parse()
    {
        QFETCH(QString, text);
        QFETCH(QDateTime, now);
        QFETCH(QString, from);
        QFETCH(QString, to);
        QFETCH(QString, phrase);
        const std::optional<TimeRange> range = TimeExpression::parse(text, now);
        QVERIFY2(range.has_value(), qPrintable(text));
        QCOMPARE(range->from.isValid(), !from.isEmpty());
        QCOMPARE(range->to.isValid(), !to.isEmpty());
        if (!from.isEmpty()) {
            QCOMPARE(range->from, utc(from));
            QCOMPARE(range->from.timeSpec(), Qt::UTC);
        }
        if (!to.isEmpty()) {
            QCOMPARE(range->to, utc(to));
            QCOMPARE(range->to.timeSpec(), Qt::UTC);
        }
        QCOMPARE(range->phrase, phrase);
    }

    // Which periods can only mean the past (deep recall filters by those alone).
    void definite_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("definite");
        const auto row = [](const char *text, bool definite) { QTest::newRow(text) << QString::fromUtf8(text) << definite; };
        row("what did we decide last week", true);
        row("notes from yesterday", true);
        row("the day before yesterday", true);
        row("3 days ago", true);
        row("in the past two weeks", true);
        row("last Friday's meeting", true);
        row("in May 2023", true);
        row("on 2023-05-07", true);
        row("May 7, 2023", true);
        row("since 2021", true);
        row("Are deployments allowed on Friday?", false);
        row("what is on today", false);
        row("plans for this week", false);
        row("the launch in December", false);
        row("the party on May 7", false);
        row("since Monday", false);
    }
    void definite()
    {
        QFETCH(QString, text);
        QFETCH(bool, definite);
        const std::optional<TimeRange> range = TimeExpression::parse(text, QDateTime(QDate(2024, 5, 15), QTime(12, 0), Qt::UTC));
        QVERIFY2(range.has_value(), qPrintable(text));
        QCOMPARE(range->definite, definite);
    }

    void noPeriod_data()
    {
        QTest::addColumn<QString>("text");
        QTest::newRow("empty") << QString();
        QTest::newRow("blank") << QStringLiteral("   ");
        QTest::newRow("may as verb") << QStringLiteral("I may call Bob");
        QTest::newRow("may opens question") << QStringLiteral("May I ask something?");
        QTest::newRow("march as verb") << QStringLiteral("We march on");
        QTest::newRow("no time words") << QStringLiteral("The kettle is in the kitchen.");
        QTest::newRow("next weekday") << QStringLiteral("see you next Monday");
        QTest::newRow("recurring") << QStringLiteral("every Friday we deploy");
        QTest::newRow("next month name") << QStringLiteral("the coming June release");
        QTest::newRow("tomorrow") << QStringLiteral("tomorrow");
        QTest::newRow("next week") << QStringLiteral("next week");
        QTest::newRow("bare year") << QStringLiteral("the 2023 budget");
        QTest::newRow("number after over") << QStringLiteral("over 2000 people came");
        QTest::newRow("invalid iso") << QStringLiteral("2023-02-30");
        QTest::newRow("invalid day") << QStringLiteral("February 30, 2023");
        QTest::newRow("duration") << QStringLiteral("it took 3 days");
        QTest::newRow("planet") << QStringLiteral("the planet is round");
        QTest::newRow("phone") << QStringLiteral("call 555-123-4567");
        QTest::newRow("clock time") << QStringLiteral("March 10:30");
        QTest::newRow("zero days") << QStringLiteral("last 0 days");
    }

    void noPeriod()
    {
        QFETCH(QString, text);
        const std::optional<TimeRange> range = TimeExpression::parse(text, kNow);
        QVERIFY2(!range.has_value(), qPrintable(range ? range->phrase : QString()));
    }

    void invalidNow()
    {
        QVERIFY(!TimeExpression::parse(QStringLiteral("today"), QDateTime()).has_value());
    }
};

QTEST_GUILESS_MAIN(TestTimeExpression)
#include "test_time_expression.moc"
