#pragma once

#include <mneme/core/json.h>

#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>

namespace mneme {

struct OfflineAnalysis
{
    double importance = 0.5;
    QStringList categories;
    Json metadata = Json::object(); // {"entities":[...], "dates":[...], "topics":[...]} (always all three keys)
};

// A word as the analyzer compares it: a crude stem, enough to match "plans" and "planning" to "plan"
// but not "planet".
struct OfflineStem
{
    QString text;
    bool suffixRemoved = false; // "-ing" or "-ed" was cut, so a lost final 'e' may be missing ("saving")
};

// The existing categories, their words stemmed once for the analyses of a whole batch.
class OfflineCategories
{
public:
    explicit OfflineCategories(const QStringList &names);

    struct Name
    {
        QString name;
        QList<OfflineStem> words;
        QString key; // the stems joined: two names of one key are one category
    };
    QList<Name> names;
};

// The offline half of the save analysis: what an LLM would propose for a new record (importance,
// categories, extracted metadata, scope), guessed from word cues alone. Every function is pure and
// deterministic; the cue lists are English only. See docs/concepts.md, "Offline analyzer".
class OfflineAnalyzer
{
public:
    // Importance 0..1: `base` (the configured default_importance) for a neutral statement, raised for
    // decisions (+0.2), constraints and rules ("must", "never", "always", "required"; +0.2), warnings and
    // security (+0.2), commitments (+0.15), deadlines and dates (+0.15), preferences (+0.15), problems,
    // lessons and contact details (+0.1 each), names and numbers (+0.05 each); lowered for hedges
    // ("maybe", "I think"; -0.1), questions (-0.1), texts under four words (-0.15; empty -0.3) and small
    // talk without a substantive cue (-0.25; a date, a name or a number does not count as one). Each
    // cue counts once. Clamped to [0.05, 0.95].
    static double importance(const QString &content, double base);
    // Categories: existing categories whose name (case-insensitive, '-'/'_' as spaces, simple plural/stem
    // match, whole words) appears in the content, in order of first appearance; then the fixed vocabulary
    // below where its cues are clear: decision, deadline, rule, preference, plan, problem, security, lesson,
    // person, event, contact (an email address or phone number). A vocabulary name that matches an existing
    // category ("Decisions") is given in that category's spelling. Deduplicated, at most 4.
    static QStringList categories(const QString &content, const QStringList &existingCategories);
    static QStringList categories(const QString &content, const OfflineCategories &existingCategories);
    // entities: capitalised words and phrases ("New York") not at a sentence start unless two words or more,
    // without stop words, month and weekday names; emails and @handles. dates: date and time expressions as
    // written ("2024-05-03", "May 3rd", "next Tuesday", "3pm"). topics: up to 5 content words, lowercase,
    // stop words removed, most frequent first, then longest, then first seen. All in order of appearance
    // except topics; repeats (case-insensitive) kept once.
    static Json metadata(const QString &content);
    // All three above. The text is read once (its words, dates and names found once for all three), and
    // a regular expression is run only where the text holds a word any of its matches must contain.
    static OfflineAnalysis analyze(const QString &content, double baseImportance, const QStringList &existingCategories);
    static OfflineAnalysis analyze(const QString &content, double baseImportance, const OfflineCategories &existingCategories);
    // For tests: the names of the cue and date patterns that match `content` although the words they
    // are skipped without are absent from it (empty when the shortcut above loses nothing on it).
    static QStringList missedByShortcut(const QString &content);
    // Chooses a scope for a new record among the scopes of its nearest stored records: `neighbours` are
    // (scope, cosine similarity) pairs, best first. Neighbours with similarity >= minSimilarity vote with
    // their similarity; the scope with the highest total wins; when none qualifies, `fallback`.
    // Ties: the more specific (deeper) scope, then alphabetical. Empty scope names do not vote.
    static QString chooseScope(const QList<QPair<QString, double>> &neighbours, const QString &fallback,
                               double minSimilarity = 0.55);
};

} // namespace mneme
