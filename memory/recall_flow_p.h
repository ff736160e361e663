#pragma once

// Private to the memory library: deep recall.

#include <mneme/core/memory_record.h>
#include <mneme/memory/memory_match.h>
#include <mneme/memory/memory_options.h>

#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>

namespace mneme {

class MemoryPrivate;

// Deep recall, the reference's RecallFlow with Mneme's decisions 3, 4, 8 and 9:
//  1. Query analysis. A query of query_analysis_threshold characters or more is analysed by the LLM
//     (one call): scopes worth searching (shown relative to the searched prefix and clamped back inside
//     it), complexity, up to 3 search phrases (embedded in one call) and the earliest date of a period
//     the query names. Without an LLM, when the call fails or its reply is unusable, and for shorter
//     queries, the offline path runs: the query itself is the only phrase, the whole prefix is searched,
//     and the period comes from TimeExpression::parse. The LLM's time_filter stands when the LLM answered
//     (null: no period); its end is taken from the offline reading when that names a period starting
//     the same day ("in May 2023" -> May only).
//  2. Search: one ranked search per (phrase x scope), of the prefix and everything below it, under the
//     period's created_at bounds. Suggested scopes that hold nothing relevant give way to the whole
//     prefix; a period that holds nothing relevant gives way to all time, with an evidence gap saying so.
//     Confidence is the best score of any search.
//  3. Routing, the reference's rules in order: a complex query below complex_query_threshold explores
//     (budget left); confidence >= confidence_threshold_high synthesizes; below confidence_threshold_low
//     explores (budget left); anything else synthesizes.
//  4. Exploration (one LLM call per round, each round spending one unit of exploration_budget): the LLM
//     reads the 5 best excerpts, says what is missing (an evidence gap) and proposes up to 3 new phrases,
//     which are searched like the first ones and added to the findings; then the router decides again.
//     No LLM, a failed call or no new phrase ends the exploration.
//  5. Synthesis: the findings merged (scores weighed against the best of all of them, each record once
//     with its best score), sorted, cut to the limit; evidence gaps on the first match.
// Only storage and embedder failures raise.
class RecallFlow
{
public:
    explicit RecallFlow(MemoryPrivate &d) : d(d) {}
    // `scopes`: resolved, normalised scopes to search (the root scope when none was asked for);
    // `categories`: validated. Throws only for storage and embedder failures.
    QList<MemoryMatch> run(const QString &query, const RecallOptions &options, const QStringList &scopes,
                           const QStringList &categories, const QDateTime &now);

private:
    struct Phrase
    {
        QString text;
        Embedding vector;
    };
    // What the query analysis settled.
    struct Plan
    {
        QList<Phrase> phrases;
        QStringList scopes; // the scopes to search; a suggestion list when `suggested`
        bool suggested = false;
        bool complex = false;
        QDateTime after;            // created_at >= after (invalid: open)
        QDateTime before;           // created_at < before (invalid: open)
        QString period;             // how the period was named, for the evidence gap
        bool offlinePeriod = false; // the offline analyzer read the period
    };

    Plan analyze(const QString &query, const RecallOptions &o, const QStringList &scopes, const QDateTime &now);
    // The phrases embedded in one call; phrases with an empty vector are dropped.
    QList<Phrase> embedPhrases(const QStringList &texts);
    // One search per (phrase x scope) of the plan; returns the non-empty result lists.
    QList<QList<MemoryMatch>> search(const QList<Phrase> &phrases, const Plan &plan, bool timed, int perSearch);
    // One exploration round; false when it ends the exploration.
    bool explore(const QString &query, const Plan &plan, bool timed, QList<QList<MemoryMatch>> &findings);
    // Whether any record of the plan's scopes is visible to this recall (its categories and privacy).
    bool anythingVisible(const Plan &plan) const;

    MemoryPrivate &d;
    RecallOptions m_options;
    QStringList m_categories;
    QDateTime m_now;
    QStringList m_gaps;
    QStringList m_searched; // phrases already searched (lower case)
};

} // namespace mneme
