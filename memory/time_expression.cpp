#include "memory/time_expression_p.h"

#include <QHash>
#include <QRegularExpression>
#include <vector>

namespace mneme {

namespace {

struct Period
{
    QDateTime from;
    QDateTime to;
};

// One reading of a stretch of text, before the words around it (since, before, in...) are applied.
struct Candidate
{
    qsizetype start = 0;
    qsizetype end = 0;
    Period period;
    bool needsPrefix = false; // a month name alone or a bare year: only after "in", "since"...
};

enum class Unit {
    Hour,
    Day,
    Week,
    Month,
    Year
};

constexpr auto kOptions = QRegularExpression::CaseInsensitiveOption | QRegularExpression::UseUnicodePropertiesOption;

const QString kMonths = QStringLiteral("(january|february|march|april|may|june|july|august|september|october|november|december"
                                       "|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)");
const QString kWeekdays = QStringLiteral("(monday|tuesday|wednesday|thursday|friday|saturday|sunday)");
const QString kUnits = QStringLiteral("(hour|day|week|month|year)s?");
const QString kCount = QStringLiteral("(\\d{1,4}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|few|couple(?:\\s+of)?)");
const QString kCountAgo = QStringLiteral("(\\d{1,4}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
                                         "|(?:a\\s+)?few|(?:a\\s+)?couple(?:\\s+of)?)");

QDateTime at(const QDate &d, const QTime &t = QTime(0, 0))
{
    return QDateTime(d, t, Qt::UTC);
}

Period dayOf(const QDate &d)
{
    return {at(d), at(d.addDays(1))};
}

QDate mondayOf(const QDate &d)
{
    return d.addDays(1 - d.dayOfWeek());
}

Period weekOf(const QDate &d)
{
    const QDate monday = mondayOf(d);
    return {at(monday), at(monday.addDays(7))};
}

Period monthOf(int year, int month)
{
    const QDate first(year, month, 1);
    return {at(first), at(first.addMonths(1))};
}

Period yearOf(int year)
{
    return {at(QDate(year, 1, 1)), at(QDate(year + 1, 1, 1))};
}

int monthNumber(const QString &name)
{
    static const QStringList abbreviations = {
        QStringLiteral("jan"),
        QStringLiteral("feb"),
        QStringLiteral("mar"),
        QStringLiteral("apr"),
        QStringLiteral("may"),
        QStringLiteral("jun"),
        QStringLiteral("jul"),
        QStringLiteral("aug"),
        QStringLiteral("sep"),
        QStringLiteral("oct"),
        QStringLiteral("nov"),
        QStringLiteral("dec"),
    };
    return int(abbreviations.indexOf(name.left(3).toLower())) + 1;
}

int weekdayNumber(const QString &name)
{
    static const QStringList abbreviations = {
        QStringLiteral("mon"),
        QStringLiteral("tue"),
        QStringLiteral("wed"),
        QStringLiteral("thu"),
        QStringLiteral("fri"),
        QStringLiteral("sat"),
        QStringLiteral("sun"),
    };
    return int(abbreviations.indexOf(name.left(3).toLower())) + 1;
}

Unit unitOf(const QString &word)
{
    const QString w = word.toLower();
    if (w.startsWith(QLatin1String("hour")))
        return Unit::Hour;
    if (w.startsWith(QLatin1String("day")))
        return Unit::Day;
    if (w.startsWith(QLatin1String("week")))
        return Unit::Week;
    if (w.startsWith(QLatin1String("month")))
        return Unit::Month;
    return Unit::Year;
}

// "3", "three", "a", "a few" (3), "a couple of" (2); 0 when not a count.
int countOf(const QString &words)
{
    static const QHash<QString, int> numbers = {
        {QStringLiteral("a"), 1},
        {QStringLiteral("an"), 1},
        {QStringLiteral("one"), 1},
        {QStringLiteral("two"), 2},
        {QStringLiteral("three"), 3},
        {QStringLiteral("four"), 4},
        {QStringLiteral("five"), 5},
        {QStringLiteral("six"), 6},
        {QStringLiteral("seven"), 7},
        {QStringLiteral("eight"), 8},
        {QStringLiteral("nine"), 9},
        {QStringLiteral("ten"), 10},
        {QStringLiteral("eleven"), 11},
        {QStringLiteral("twelve"), 12},
        {QStringLiteral("few"), 3},
        {QStringLiteral("couple"), 2},
    };
    const QStringList parts = words.toLower().simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    const QString w = parts.value(parts.size() > 1 && (parts.first() == QLatin1String("a")) ? 1 : 0);
    bool isNumber = false;
    const int n = w.toInt(&isNumber);
    if (isNumber)
        return n;
    return numbers.value(w, 0);
}

QDateTime shifted(const QDateTime &now, Unit unit, int n)
{
    switch (unit) {
    case Unit::Hour:
        return now.addSecs(-3600LL * n);
    case Unit::Day:
        return now.addDays(-n);
    case Unit::Week:
        return now.addDays(-7LL * n);
    case Unit::Month:
        return now.addMonths(-n);
    case Unit::Year:
        break;
    }
    return now.addYears(-n);
}

Period unitContaining(const QDateTime &t, Unit unit)
{
    switch (unit) {
    case Unit::Hour: {
        const QDateTime hour = at(t.date(), QTime(t.time().hour(), 0));
        return {hour, hour.addSecs(3600)};
    }
    case Unit::Day:
        return dayOf(t.date());
    case Unit::Week:
        return weekOf(t.date());
    case Unit::Month:
        return monthOf(t.date().year(), t.date().month());
    case Unit::Year:
        break;
    }
    return yearOf(t.date().year());
}

// The most recent date with this month and day that is not after `today`; Feb 29 looks back for a leap year.
QDate recentDay(int month, int day, const QDate &today)
{
    for (int year = today.year(); year >= today.year() - 8; --year) {
        const QDate d(year, month, day);
        if (d.isValid() && d <= today)
            return d;
    }
    return {};
}

// A day named by month, day and (maybe empty) year; no candidate when the date does not exist.
std::optional<Candidate> namedDay(const QString &month, const QString &day, const QString &year, const QDate &today)
{
    const int m = monthNumber(month);
    const int d = day.toInt();
    const QDate date = year.isEmpty() ? recentDay(m, d, today) : QDate(year.toInt(), m, d);
    if (!date.isValid())
        return std::nullopt;
    return Candidate{0, 0, dayOf(date), false};
}

using Reader = std::optional<Candidate> (*)(const QRegularExpressionMatch &, const QDateTime &);

struct Rule
{
    QRegularExpression pattern;
    Reader read;
};

const std::vector<Rule> &rules()
{
    static const std::vector<Rule> all = {
        // 2023-05-07, 2023/05/07: the whole day (a time after it is ignored).
        {QRegularExpression(QStringLiteral("(?<![\\d-])(\\d{4})[-/](\\d{1,2})[-/](\\d{1,2})(?!\\d)"), kOptions),
         [](const QRegularExpressionMatch &m, const QDateTime &) -> std::optional<Candidate> {
             const QDate d(m.captured(1).toInt(), m.captured(2).toInt(), m.captured(3).toInt());
             if (!d.isValid())
                 return std::nullopt;
             return Candidate{0, 0, dayOf(d), false};
         }},
        // May 7, 2023 / May 7th / Jan. 5 2024 (not "March 10:30").
        {QRegularExpression(QStringLiteral("\\b") + kMonths
                                + QStringLiteral("\\.?\\s+(\\d{1,2})(?:st|nd|rd|th)?(?:,?\\s+(\\d{4}))?\\b(?!:)"),
                            kOptions),
         [](const QRegularExpressionMatch &m, const QDateTime &now) {
             return namedDay(m.captured(1), m.captured(2), m.captured(3), now.date());
         }},
        // 7 May 2023 / the 7th of May.
        {QRegularExpression(QStringLiteral("\\b(?:the\\s+)?(\\d{1,2})(?:st|nd|rd|th)?\\s+(?:of\\s+)?") + kMonths
                                + QStringLiteral("\\b(?:,?\\s+(\\d{4})\\b)?"),
                            kOptions),
         [](const QRegularExpressionMatch &m, const QDateTime &now) {
             return namedDay(m.captured(2), m.captured(1), m.captured(3), now.date());
         }},
        // May 2023.
        {QRegularExpression(QStringLiteral("\\b") + kMonths + QStringLiteral("\\.?,?\\s+(\\d{4})\\b"), kOptions),
         [](const QRegularExpressionMatch &m, const QDateTime &) -> std::optional<Candidate> {
             return Candidate{0, 0, monthOf(m.captured(2).toInt(), monthNumber(m.captured(1))), false};
         }},
        // (last|this) May: alone it needs a preposition, since "may" is also a verb.
        {QRegularExpression(QStringLiteral("\\b(?:(last|this|past|previous)\\s+)?") + kMonths + QStringLiteral("\\b(?!['\\x{2019}]s\\b)"),
                            kOptions),
         [](const QRegularExpressionMatch &m, const QDateTime &now) -> std::optional<Candidate> {
             const QDate today = now.date();
             const int month = monthNumber(m.captured(2));
             const QString modifier = m.captured(1).toLower();
             int year = month <= today.month() ? today.year() : today.year() - 1;
             if (modifier == QLatin1String("this"))
                 year = today.year();
             else if (!modifier.isEmpty())
                 year = month < today.month() ? today.year() : today.year() - 1;
             return Candidate{0, 0, monthOf(year, month), modifier.isEmpty()};
         }},
        // in 2023: a bare number needs a preposition.
        {QRegularExpression(QStringLiteral("(?<![\\w/-])(1[89]\\d{2}|2[01]\\d{2})(?![\\w/-])"), kOptions),
         [](const QRegularExpressionMatch &m, const QDateTime &) -> std::optional<Candidate> {
             return Candidate{0, 0, yearOf(m.captured(1).toInt()), true};
         }},
        // Monday: the most recent, today included; last Monday: before today; this Monday: in this week.
        {QRegularExpression(QStringLiteral("\\b(?:(last|this|past|previous)\\s+)?") + kWeekdays + QStringLiteral("\\b"), kOptions),
         [](const QRegularExpressionMatch &m, const QDateTime &now) -> std::optional<Candidate> {
             const QDate today = now.date();
             const int target = weekdayNumber(m.captured(2));
             const QString modifier = m.captured(1).toLower();
             if (modifier == QLatin1String("this"))
                 return Candidate{0, 0, dayOf(mondayOf(today).addDays(target - 1)), false};
             int back = (today.dayOfWeek() - target + 7) % 7;
             if (back == 0 && !modifier.isEmpty())
                 back = 7;
             return Candidate{0, 0, dayOf(today.addDays(-back)), false};
         }},
        {QRegularExpression(QStringLiteral("\\b(the\\s+day\\s+before\\s+yesterday|yesterday|today|tonight|last\\s+night"
                                           "|this\\s+(?:morning|afternoon|evening))\\b"),
                            kOptions),
         [](const QRegularExpressionMatch &m, const QDateTime &now) -> std::optional<Candidate> {
             const QDate today = now.date();
             const QString w = m.captured(1).toLower().simplified();
             Period p = dayOf(today);
             if (w == QLatin1String("yesterday"))
                 p = dayOf(today.addDays(-1));
             else if (w.startsWith(QLatin1String("the day")))
                 p = dayOf(today.addDays(-2));
             else if (w == QLatin1String("last night"))
                 p = {at(today.addDays(-1), QTime(18, 0)), at(today, QTime(6, 0))};
             else if (w == QLatin1String("this morning"))
                 p = {at(today), at(today, QTime(12, 0))};
             else if (w == QLatin1String("this afternoon"))
                 p = {at(today, QTime(12, 0)), at(today, QTime(18, 0))};
             else if (w == QLatin1String("this evening") || w == QLatin1String("tonight"))
                 p = {at(today, QTime(18, 0)), at(today.addDays(1))};
             return Candidate{0, 0, p, false};
         }},
        // this/last week (calendar), past week (rolling, open end), last/this weekend.
        // "in the last week" reads as the past seven days, "last week" as the calendar week before this one.
        {QRegularExpression(QStringLiteral("\\b(the\\s+)?(this\\s+past|this|last|past|previous)\\s+(week|month|year|weekend)\\b"),
                            kOptions),
         [](const QRegularExpressionMatch &m, const QDateTime &now) -> std::optional<Candidate> {
             const QDate today = now.date();
             const QString modifier = m.captured(2).toLower().simplified();
             const QString unit = m.captured(3).toLower();
             const bool current = modifier == QLatin1String("this");
             const bool rolling = modifier.endsWith(QLatin1String("past")) || (!m.captured(1).isEmpty() && modifier == QLatin1String("last"));
             if (unit == QLatin1String("weekend")) {
                 const QDate monday = mondayOf(today);
                 return Candidate{0, 0, current ? Period{at(monday.addDays(5)), at(monday.addDays(7))} : Period{at(monday.addDays(-2)), at(monday)}, false};
             }
             const Unit u = unitOf(unit);
             if (rolling)
                 return Candidate{0, 0, {shifted(now, u, 1), {}}, false};
             const QDateTime point = current ? now : shifted(now, u, 1);
             return Candidate{0, 0, unitContaining(point, u), false};
         }},
        // last 3 days, the past two weeks: rolling, ending now.
        {QRegularExpression(QStringLiteral("\\b(?:the\\s+)?(?:last|past|previous)\\s+") + kCount + QStringLiteral("\\s+") + kUnits
                                + QStringLiteral("\\b"),
                            kOptions),
         [](const QRegularExpressionMatch &m, const QDateTime &now) -> std::optional<Candidate> {
             const int n = countOf(m.captured(1));
             if (n <= 0)
                 return std::nullopt;
             return Candidate{0, 0, {shifted(now, unitOf(m.captured(2)), n), {}}, false};
         }},
        // 3 days ago: the calendar day (week, month, year; clock hour) containing that moment.
        {QRegularExpression(QStringLiteral("\\b") + kCountAgo + QStringLiteral("\\s+") + kUnits + QStringLiteral("\\s+ago\\b"), kOptions),
         [](const QRegularExpressionMatch &m, const QDateTime &now) -> std::optional<Candidate> {
             const int n = countOf(m.captured(1));
             if (n <= 0)
                 return std::nullopt;
             const Unit u = unitOf(m.captured(2));
             return Candidate{0, 0, unitContaining(shifted(now, u, n), u), false};
         }},
    };
    return all;
}

// Every reading of every rule, except those marked as future or recurring ("next May", "every Monday").
std::vector<Candidate> candidates(const QString &text, const QDateTime &now)
{
    static const QRegularExpression blocker(QStringLiteral("\\b(?:next|coming|upcoming|every|each|following)\\s+$"), kOptions);
    std::vector<Candidate> out;
    for (const Rule &rule : rules()) {
        auto it = rule.pattern.globalMatch(text);
        while (it.hasNext()) {
            const QRegularExpressionMatch m = it.next();
            std::optional<Candidate> c = rule.read(m, now);
            if (!c || blocker.match(text.left(m.capturedStart())).hasMatch())
                continue;
            c->start = m.capturedStart();
            c->end = m.capturedEnd();
            out.push_back(*c);
        }
    }
    return out;
}

} // namespace

std::optional<TimeRange> TimeExpression::parse(const QString &text, const QDateTime &nowAny)
{
    static const QRegularExpression prefixPattern(
        QStringLiteral("\\b(since|from|as\\s+of|after|before|prior\\s+to|until|till|up\\s+to|in|on|of|during|for|within|over|between)\\s+$"),
        kOptions);
    // Only these make a month name alone or a bare year a date: "in May", but not "over 2000 people".
    static const QStringList qualifying = {
        QStringLiteral("since"),
        QStringLiteral("from"),
        QStringLiteral("as of"),
        QStringLiteral("after"),
        QStringLiteral("before"),
        QStringLiteral("prior to"),
        QStringLiteral("until"),
        QStringLiteral("till"),
        QStringLiteral("up to"),
        QStringLiteral("in"),
        QStringLiteral("during"),
        QStringLiteral("between"),
        QStringLiteral("of"),
    };
    static const QRegularExpression connector(QStringLiteral("^\\s*(?:and|to|until|till|through|-|\\x{2013})\\s*"), kOptions);

    if (text.trimmed().isEmpty() || !nowAny.isValid())
        return std::nullopt;
    const QDateTime now = nowAny.toUTC();
    const std::vector<Candidate> all = candidates(text, now);

    // The leftmost reading wins, counting its preposition; at the same start the longest.
    const Candidate *best = nullptr;
    qsizetype bestStart = 0;
    QString bestPrefix;
    for (const Candidate &c : all) {
        const QRegularExpressionMatch p = prefixPattern.match(text.left(c.start));
        if (c.needsPrefix && !(p.hasMatch() && qualifying.contains(p.captured(1).toLower().simplified())))
            continue;
        const qsizetype start = p.hasMatch() ? p.capturedStart() : c.start;
        if (!best || start < bestStart || (start == bestStart && c.end > best->end)) {
            best = &c;
            bestStart = start;
            bestPrefix = p.hasMatch() ? p.captured(1).toLower().simplified() : QString();
        }
    }
    if (!best)
        return std::nullopt;

    Period p = best->period;
    qsizetype end = best->end;
    if (bestPrefix == QLatin1String("between") || bestPrefix == QLatin1String("from")) {
        // "between May and July", "from Monday to Wednesday": up to the end of the second period.
        const QRegularExpressionMatch join = connector.match(text.mid(best->end));
        const Candidate *second = nullptr;
        if (join.hasMatch()) {
            for (const Candidate &c : all) {
                if (c.start == best->end + join.capturedLength() && (!second || c.end > second->end))
                    second = &c;
            }
        }
        if (second) {
            // Either order: "between May 2025 and June 2023" is the time from June 2023 to May 2025.
            const Period &a = best->period;
            const Period &b = second->period;
            const bool reversed = a.from.isValid() && b.from.isValid() && b.from < a.from;
            p.from = reversed ? b.from : a.from;
            p.to = reversed ? a.to : b.to;
            end = second->end;
        }
    } else if (bestPrefix == QLatin1String("since") || bestPrefix == QLatin1String("as of")) {
        p.to = QDateTime();
    } else if (bestPrefix == QLatin1String("after")) {
        p = {p.to.isValid() ? p.to : p.from, QDateTime()};
    } else if (bestPrefix == QLatin1String("before") || bestPrefix == QLatin1String("prior to")) {
        p = {QDateTime(), p.from};
    } else if (bestPrefix == QLatin1String("until") || bestPrefix == QLatin1String("till") || bestPrefix == QLatin1String("up to")) {
        p.from = QDateTime();
    }
    static const QRegularExpression definite(
        QStringLiteral("(?<![\\w/-])(?:1[89]\\d{2}|2[01]\\d{2})(?![\\w/])|\\b(?:yesterday|ago|last|past|previous)\\b"), kOptions);
    const QString phrase = text.mid(bestStart, end - bestStart).trimmed();
    return TimeRange{p.from, p.to, phrase, definite.match(phrase).hasMatch()};
}

} // namespace mneme
