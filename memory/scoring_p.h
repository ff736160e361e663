#pragma once

#include <mneme/core/memory_record.h>
#include <mneme/memory/memory_config.h>
#include <mneme/memory/memory_match.h>

#include <QDateTime>

namespace mneme {

// Recall's scores. Four signals, each in 0..1: semantic (the cosine similarity, clipped), keyword (the
// storage's absolute keyword evidence), recency (decay = 0.5^(age_days/half_life), or
// max(0, 1 - age_days/(2*half_life)) when linear) and importance. From them:
//   relevance = (semantic_weight*semantic + keyword_weight*keyword) / (semantic_weight + keyword_weight)
//   score     = (semantic_weight*semantic + keyword_weight*keyword
//                + (recency_weight*recency + importance_weight*importance) * (relevance/best)^2)
//               / (semantic_weight + keyword_weight + recency_weight + importance_weight)
// where best is the highest relevance among the candidates of one recall. The score is the weighted
// mean of the signals, in 0..1, for a lone candidate or equally relevant ones; with keyword_weight 0 and
// weights that sum to 1 (the defaults but the keyword's) it is the reference's composite. Recency and
// importance order records that are about equally relevant but cannot lift a weakly related record
// over a clearly related one.
class Scoring
{
public:
    static double decay(double ageDays, const MemoryConfig &config);
    // cosine: the raw cosine similarity (clipped to 0..1 here, decision 7); keyword: the storage's
    // keyword evidence (0..1). Sets every signal, relevance included.
    static MatchSignals signals(double cosine, double keyword, const QDateTime &createdAt, double importance,
                                int accessCount, const QDateTime &now, const MemoryConfig &config);
    static MatchSignals signalsFor(const MemoryRecord &record, double cosine, double keyword,
                                   const QDateTime &now, const MemoryConfig &config);
    // (semantic_weight*semantic + keyword_weight*keyword) / (semantic_weight + keyword_weight).
    static double relevance(double semantic, double keyword, const MemoryConfig &config);
    // The score above, `best` being the highest relevance among the candidates (the candidate's own
    // relevance when best is not above it: the weighted mean).
    static double score(const MatchSignals &signals, double best, const MemoryConfig &config);
    // "semantic" when the semantic signal is positive, "keyword" when the keyword signal is, "recency"
    // when the decay is above 0.5 (younger than one half-life), "importance" when importance > 0.5.
    static QStringList reasons(const MatchSignals &signals);
    // A match scored as a lone candidate.
    static MemoryMatch match(MemoryRecord record, double cosine, double keyword, const QDateTime &now,
                             const MemoryConfig &config);
    // Scores the matches of one recall against each other (score() with their best relevance).
    static void weighByRelevance(QList<MemoryMatch> &matches, const MemoryConfig &config);
    // Whether a candidate may be returned: its relevance is positive and at least `floor`.
    static bool relevantEnough(const MatchSignals &signals, double floor);
    // Cosine similarity; 0 when the lengths differ or a vector is zero.
    static double cosine(const Embedding &a, const Embedding &b);
};

} // namespace mneme
