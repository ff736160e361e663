#pragma once

#include "locomo_dataset.h"

#include <mneme/memory/memory_config.h>

#include <QList>
#include <QMap>
#include <QString>
#include <functional>

namespace mneme::cli {

// Recall@k of a set of questions: the sum of the per-question recalls and how many questions.
struct LocomoScore
{
    int questions = 0;
    QMap<int, double> recallSum; // k -> sum over questions of (evidence found in the top k) / evidence

    // The mean recall@k; NaN when there is no question.
    double recallAt(int k) const;
};

// What a run did and measured.
struct LocomoEvalResult
{
    LocomoScore overall;
    QMap<int, LocomoScore> byCategory; // every selected category, even without questions
    QStringList conversationIds;       // sample ids of the conversations evaluated
    QString embedderId;
    Json memoryConfig; // MemoryConfig::toJson() of the stores (secrets masked)

    int turns = 0;               // turns in the conversations evaluated
    int turnsStored = 0;         // records written
    int turnsDropped = 0;        // turns not stored (blank text)
    int evidenceIdsRepaired = 0; // over the questions of the selected categories
    int evidenceIdsDropped = 0;
    int questionsSkipped = 0; // selected questions without any usable evidence id
    int recalls = 0;
    double recallMs = 0; // total wall time of the recall calls

    // Off-topic queries (LocomoEvaluator::setOffTopic): each recalled on every conversation, with the
    // options of the questions. A recall passes when it returns nothing.
    int offTopicQueries = 0;
    int offTopicRecalls = 0;
    int offTopicEmpty = 0;
    QStringList offTopicAnswered; // "<conversation>: <query>" for every recall that returned something

    double msPerQuery() const { return recalls > 0 ? recallMs / recalls : 0.0; }
    // The share of the off-topic recalls that returned nothing; NaN without any.
    double offTopicEmptyFraction() const;
};

// Runs the LOCOMO retrieval evaluation (docs/cli.md, "eval locomo"): per conversation a fresh in-memory
// Memory built from `config` with its storage replaced by SQLite ":memory:", every turn one record
// (stored with one rememberMany), every selected question recalled shallow with `now` = the last
// session's date and scored by turn-level evidence recall at each k.
class LocomoEvaluator
{
public:
    // `ks` ascending and distinct, `categories` within 1..5 (all five when empty).
    LocomoEvaluator(const MemoryConfig &config, const QList<int> &ks, const QList<int> &categories);

    // Called after each recalled question with the number done so far.
    using Progress = std::function<void(qint64 done)>;
    // Called once per conversation with a line for --verbose.
    using Log = std::function<void(const QString &line)>;

    // Throws mneme::Error when a store cannot be built or a save or recall fails.
    LocomoEvalResult run(const QList<LocomoConversation> &conversations, const Progress &progress = {},
                         const Log &log = {}) const;

    // Queries that should find nothing in any conversation (unrelated questions, nonsense), recalled on
    // every conversation after its questions.
    void setOffTopic(const QStringList &queries) { m_offTopic = queries; }
    // The queries of an off-topic file: one a line; blank lines and lines starting with # are skipped.
    // Throws Error(InvalidArgument) naming the file when it cannot be read or holds no query.
    static QStringList readOffTopic(const QString &path);

    // The questions run() would recall (selected category, usable evidence).
    qint64 questionCount(const QList<LocomoConversation> &conversations) const;

    // "<speaker>: <text>", plus " [image: <caption>]" when the turn shares an image.
    static QString recordContent(const LocomoTurn &turn);
    // The turn's text with its caption, as given to Memory::rememberConversation with the speaker.
    static QString recordText(const LocomoTurn &turn);
    // The format of recordContent() as the options of the output describe it.
    static QString recordContentFormat();
    // The configuration of one conversation's store: `config` with an in-memory SQLite storage.
    static MemoryConfig storeConfig(const MemoryConfig &config);

private:
    bool selected(int category) const { return m_categories.contains(category); }
    void evaluate(const LocomoConversation &conversation, LocomoEvalResult &result, qint64 &done,
                  const Progress &progress, const Log &log) const;

    MemoryConfig m_config;
    QList<int> m_ks;
    QList<int> m_categories;
    QStringList m_offTopic;
};

} // namespace mneme::cli
