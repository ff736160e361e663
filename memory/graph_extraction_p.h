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
//     -> subject -verb_on-> date.
// Pronouns other than the first person (he, she, they) are not resolved: such sentences give no triplet.
namespace OfflineGraphExtractor {
ExtractedGraph extract(const QString &text, const QDateTime &at);
// Whether a label (normalised) holds one value at a time: lives_in, works_at, married_to, age, ...
bool isExclusiveLabel(const QString &label);
// Lower case, runs of other characters than letters and digits made one '_'.
QString normalizedLabel(const QString &label);
// The candidate entity names of a query: its capitalised runs and its words and word pairs that are
// not stop words, for finding the query's entities by normalised name.
QStringList queryNames(const QString &query);
} // namespace OfflineGraphExtractor

} // namespace mneme
