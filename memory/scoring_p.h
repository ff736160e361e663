#pragma once

#include <mneme/core/memory_record.h>
#include <mneme/memory/memory_config.h>
#include <mneme/memory/memory_match.h>

#include <QDateTime>
#include <limits>
#include <vector>

namespace mneme {

// Recall's scores. Five signals, each in 0..1: semantic (the cosine similarity, clipped), keyword
// evidence (the storage's absolute keyword evidence), keyword (that evidence over the best of the
// recall's candidates: 1 for the best keyword match), recency (decay = 0.5^(age_days/half_life), or
// max(0, 1 - age_days/(2*half_life)) when linear) and importance. From them:
//   relevance = (semantic_weight*semantic + keyword_weight*keyword_evidence) / (semantic_weight + keyword_weight)
//   ranking   = the same with keyword instead of keyword_evidence
//   score     = (semantic_weight*semantic + keyword_weight*keyword
//                + (recency_weight*recency + importance_weight*importance) * (ranking/best)^standing_exponent)
//               / (semantic_weight + keyword_weight + recency_weight + importance_weight)
// where best is the highest ranking among the candidates of one recall. The score is the weighted
// mean of the signals, in 0..1, for a lone candidate or equally ranked ones; with keyword_weight 0 and
// weights that sum to 1 (the defaults but the keyword's) it is the reference's composite. Recency and
// importance order records that are about equally relevant but cannot lift a weakly related record
// over a clearly related one.
//
// The relevance floor (min_relevance) judges relevance, never recency or importance: a recall whose
// candidates all fall below it returns nothing; otherwise it returns the candidates whose relevance is
// at least kCompanionShare of it (the weaker evidence that comes with a related query, such as the
// other turns a multi-hop question needs).
class Scoring
{
public:
    static double decay(double ageDays, const MemoryConfig &config);
    // cosine: the raw cosine similarity (clipped to 0..1 here, decision 7); keyword: the storage's
    // keyword evidence (0..1). Sets every signal, relevance included; keyword is the evidence itself
    // until relativeKeywords().
    static MatchSignals signals(double cosine, double keyword, const QDateTime &createdAt, double importance,
                                int accessCount, const QDateTime &now, const MemoryConfig &config);
    static MatchSignals signalsFor(const MemoryRecord &record, double cosine, double keyword,
                                   const QDateTime &now, const MemoryConfig &config);
    // (semantic_weight*semantic + keyword_weight*keyword) / (semantic_weight + keyword_weight).
    static double relevance(double semantic, double keyword, const MemoryConfig &config);
    // The score above, `best` being the highest ranking among the candidates (the candidate's own
    // ranking when best is not above it: the weighted mean).
    static double score(const MatchSignals &signals, double best, const MemoryConfig &config);
    // "semantic" when the semantic signal is positive, "keyword" when the keyword signal is, "recency"
    // when the decay is above 0.5 (younger than one half-life), "importance" when importance > 0.5.
    static QStringList reasons(const MatchSignals &signals);
    // A match scored as a lone candidate.
    static MemoryMatch match(MemoryRecord record, double cosine, double keyword, const QDateTime &now,
                             const MemoryConfig &config);
    // Scores the matches of one recall against each other (score() with their best ranking).
    static void weighByRelevance(QList<MemoryMatch> &matches, const MemoryConfig &config);
    // Sets each candidate's keyword signal: its keyword evidence over the best among them.
    static void relativeKeywords(const std::vector<MatchSignals *> &candidates);
    // The floor's first test: whether one of the candidates has a positive relevance of at least `floor`.
    static bool anyRelevantEnough(const std::vector<const MatchSignals *> &candidates, double floor);
    // The second, once the first passed: whether a candidate may be returned (its relevance positive
    // and at least kCompanionShare of `floor`).
    static bool relevantEnough(const MatchSignals &signals, double floor);
    static constexpr double kCompanionShare = 0.5;
    // Cosine similarity; 0 when the lengths differ or a vector is zero.
    static double cosine(const Embedding &a, const Embedding &b);

    // Conversation turns: records whose metadata holds a "speaker" (Memory::rememberConversation
    // writes it). What a turn's record says weighs in its score, after the signals:
    //  - a turn whose speaker the query names is about that person: score * (1 + kNamedSpeakerBoost),
    //    at most 1 ("What does Melanie paint?" prefers what Melanie said to what was said to her);
    //  - a turn that asks (asks()) holds less than the reply after it, which is indexed with the
    //    question (kAnsweredQuestionWeight): score * (1 - kQuestionTurnDiscount);
    //  - a short turn says less than a long one: score * shortTurnFactor(). The vectors' cosine and
    //    BM25 both normalise by length, which puts "Wow, camping sounds great!" on a par with the turn
    //    that tells where the family camped; this prior on length (as pivoted length normalisation
    //    restores in document retrieval) gives the turn that says more its due.
    // None changes relevance, so none moves the relevance floor.
    static constexpr double kNamedSpeakerBoost = 0.2;
    static constexpr double kQuestionTurnDiscount = 0.2;
    // A turn of at least this many words (its content as stored, "Speaker:" included) is not lowered;
    // a shorter one of n words is lowered to sqrt(n / kFullTurnWords) (10 words: 0.71), never below
    // kShortTurnFloor (5 words or fewer): a short reply is still found by the question it answers
    // (kAnsweredQuestionWeight), and stays ahead of a question as short as itself.
    static constexpr int kFullTurnWords = 20;
    static constexpr double kShortTurnFloor = 0.5;
    // The words of `text` (its runs of non-space characters), counted up to `atMost`.
    static int wordCount(const QString &text, int atMost = std::numeric_limits<int>::max());
    // sqrt(wordCount(content) / kFullTurnWords), clamped to kShortTurnFloor..1.
    static double shortTurnFactor(const QString &content);
    // In a conversation's index, the turn before a reply, when it asks, weighs this many times a
    // neighbouring turn: in the reply's blended vector and in its keyword context (where its text
    // stands this many times).
    static constexpr int kAnsweredQuestionWeight = 3;
    // Whether a text asks something: it ends with a question mark (trailing spaces aside).
    static bool asks(const QString &text);
    // Whether `query` names `speaker`: the speaker's name, case-insensitively, as whole words.
    static bool namesSpeaker(const QString &query, const QString &speaker);
    // The factor above for `record` and `query` (1 for a record that is not a conversation turn).
    static double turnFactor(const MemoryRecord &record, const QString &query);
    // Whether `record` is a conversation turn (its metadata holds a "speaker" string).
    static bool isTurn(const MemoryRecord &record);
    // Whether `record` is a turn whose speaker `query` names.
    static bool isNamedSpeakersTurn(const MemoryRecord &record, const QString &query);
    // Multiplies each match's score by its turnFactor().
    static void weighTurns(QList<MemoryMatch> &matches, const QString &query);
};

} // namespace mneme
