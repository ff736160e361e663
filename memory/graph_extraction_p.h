#pragma once

// Private to the memory library: what graph memory extracts from a record's text.

#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>

namespace mneme {

struct ExtractedEntity
{
    QString name;
    QString type; // "person", "place", "date", "thing", ... lower case
    bool operator==(const ExtractedEntity &o) const { return name == o.name && type == o.type; }
};

struct ExtractedTriplet
{
    ExtractedEntity source;
    QString label; // "lives_in"
    ExtractedEntity destination;
    bool exclusive = false;    // the label holds one value at a time for a source
    QList<qint64> contradicts; // stored relations this one makes obsolete (the LLM's update resolver)
};

struct ExtractedGraph
{
    QList<ExtractedEntity> entities;
    QList<ExtractedTriplet> triplets;
    QString extractor = QStringLiteral("offline"); // "offline" or "llm": labels the relations it gives
    bool isEmpty() const { return entities.isEmpty() && triplets.isEmpty(); }
};

// The offline graph extractor: patterns over the statement splitter's sentences, no model. Weaker
// than the LLM extractor by design (docs/concepts.md, "Graph memory"): it reads
//   - a speaker prefix "Caroline: ..." (first-person words then mean the speaker; without one, "user");
//   - "X is Y's Z" and "Y's Z is X" (and "my Z is X") -> Y -Z-> X;
//   - subject-verb-object: a name or first-person subject, a verb phrase of up to four words (with its
//     negation and preposition: "never_visited", "moved_to"), and the noun phrase after it;
//   - places: "in / at / from / to" and a capitalised name -> subject -verb_in-> place;
//   - dates (time_expression_p.h, read against the record's time `at`, so "yesterday" is a day)
//     -> an event entity named by what happened ("Alice moved to Porto") -happened_on-> date;
//   - he, she and they as a subject: the last person the record named (none: no triplet). "You" is
//     not resolved (a record does not say whom it addresses).
// Then withResidences().
namespace OfflineGraphExtractor {
ExtractedGraph extract(const QString &text, const QDateTime &at);
// The label of where someone lives (exclusive: one value at a time).
inline const QString kResidence = QStringLiteral("lives_in");
// The residence family, for either extractor: a residence label (lives_in, live_in, lives_at,
// resides_in, based_in, ...) becomes kResidence, and a completed move (moved_to, moved_into,
// relocated_to, settled_in, moved_back_to) also gives source -lives_in-> destination, so that a move
// invalidates the residence before it.
void withResidences(ExtractedGraph &g);
// Whether a label (normalised) holds one value at a time: lives_in, works_at, married_to, age, ...
bool isExclusiveLabel(const QString &label);
// Lower case, runs of other characters than letters and digits made one '_'.
QString normalizedLabel(const QString &label);
// The candidate entity names of a query: its capitalised runs and its words and word pairs that are
// not stop words, for finding the query's entities by normalised name.
QStringList queryNames(const QString &query);
} // namespace OfflineGraphExtractor

} // namespace mneme
