#pragma once

#include <mneme/core/memory_record.h>
#include <mneme/memory/memory_config.h>
#include <mneme/memory/memory_match.h>

#include <QDateTime>

namespace mneme {

// The composite score of the reference, with Mneme's keyword signal:
//   score = semantic_weight*semantic + keyword_weight*keyword + recency_weight*decay + importance_weight*importance
// decay = 0.5^(age_days/half_life) (exponential) or max(0, 1 - age_days/(2*half_life)) (linear).
class Scoring
{
public:
    static double decay(double ageDays, const MemoryConfig &config);
    // cosine: the raw cosine similarity (clipped to 0..1 here, decision 7); keyword: already in 0..1.
    static MatchSignals signalsFor(const MemoryRecord &record, double cosine, double keyword,
                                   const QDateTime &now, const MemoryConfig &config);
    // The same from the fields of a record that ranking reads.
    static MatchSignals signals(double cosine, double keyword, const QDateTime &createdAt, double importance,
                                int accessCount, const QDateTime &now, const MemoryConfig &config);
    static double composite(const MatchSignals &signals, const MemoryConfig &config);
    // "semantic" when the semantic signal is positive, "keyword" when the keyword signal is, "recency"
    // when the decay is above 0.5 (younger than one half-life), "importance" when importance > 0.5.
    static QStringList reasons(const MatchSignals &signals);
    static MemoryMatch match(MemoryRecord record, double cosine, double keyword, const QDateTime &now,
                             const MemoryConfig &config);
    // semantic_weight*semantic + keyword_weight*keyword.
    static double relevance(const MatchSignals &signals, const MemoryConfig &config);
    // Recall's final scores: each candidate's recency and importance terms are scaled by the square of
    // its relevance relative to the most relevant candidate, so they order records that are about
    // equally relevant but cannot lift a weakly related record over a clearly related one:
    //   score = relevance + (recency_weight*decay + importance_weight*importance) * (relevance/best)^2
    // With one candidate, or candidates equally relevant, this is the composite above.
    static void weighByRelevance(QList<MemoryMatch> &matches, const MemoryConfig &config);
    // One candidate's score under weighByRelevance(), `best` being the highest relevance among them
    // (the composite when best is 0).
    static double weighed(const MatchSignals &signals, double best, const MemoryConfig &config);
    // Cosine similarity; 0 when the lengths differ or a vector is zero.
    static double cosine(const Embedding &a, const Embedding &b);
};

} // namespace mneme
