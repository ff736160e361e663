#pragma once

#include <QDateTime>
#include <QString>
#include <optional>

namespace mneme {

// A period named in a text: records created in [from, to) match. An invalid bound is open.
struct TimeRange
{
    QDateTime from; // UTC
    QDateTime to;   // UTC, exclusive
    QString phrase; // the words that named it, as written ("last week")
    // True when the phrase can only mean a past period: it carries a year ("in May 2023",
    // "2023-05-07"), or is relative to now with yesterday / last / past / previous / ago
    // ("last Friday", "3 days ago", "the past week"). A bare weekday ("on Friday"), "today", "this
    // week" or a month or day without a year ("in December", "May 7") is not: such words often say
    // when something happens, not when it was said, and deep recall filters only by definite periods.
    bool definite = false;
};

// The offline stand-in for the query analysis' time_filter: reads the period a recall query names.
//
// Calendar periods: "today", "yesterday", "the day before yesterday", "this morning/afternoon/evening",
// "tonight", "last night" (18:00 yesterday to 06:00 today), "this/last week|month|year|weekend" (weeks
// start on Monday; "last" is the previous calendar period). Rolling periods end now and have an open
// end: "(the) past week|month|year", "the last week" ("in the last week": the past seven days),
// "last/past/in the last N hours|days|weeks|months|years" (N in digits,
// one..twelve, "few" = 3, "couple" = 2). "N days|weeks|months|years ago" is the calendar day, week,
// month or year containing that moment ("N hours ago": that clock hour).
// Dates: ISO "2023-05-07" (also with '/'), "May 7, 2023", "7 May 2023", "the 7th of May" (a whole day;
// without a year the most recent one not in the future), "May 2023", "in May" (the most recent May
// not in the future; "last May" is the most recent before this month), "in 2023", weekday names
// ("Monday", "on Monday": the most recent, today included; "last Monday": strictly before today;
// "this Monday": in the current week).
// A month name alone or a bare year counts only after in/during/of/since/from/before/after/until/
// between, so "I may call Bob" names no period. Prefixes: since/as of X -> [X.from, open); after X -> [X.to, open);
// before/prior to X -> [open, X.from); until/till/up to X -> [open, X.to); "between X and Y" and
// "from X to Y" -> [X.from, Y.to); "from X" alone is X ("notes from last week"); in/on/of/during/
// for/within/over change nothing. The phrase includes the prefix. Anything preceded by next/coming/every/
// each/following, and "tomorrow", are future or recurring and name no period. Not understood: numeric
// dates such as 05/07/2023 (day and month order is ambiguous), clock times, seasons, holidays, decades,
// "the 1st" without a month, "the beginning of the year".
class TimeExpression
{
public:
    // The first period the text names, measured from `now` (UTC), or nullopt.
    static std::optional<TimeRange> parse(const QString &text, const QDateTime &now);
};

} // namespace mneme
