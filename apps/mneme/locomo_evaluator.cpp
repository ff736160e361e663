#include "locomo_evaluator.h"

#include <mneme/core/error.h>
#include <mneme/core/vector_math.h>
#include <mneme/memory/memory.h>

#include "input_lines.h"

#include <QElapsedTimer>

#include <cmath>
#include <limits>

namespace mneme::cli {

namespace {


double elapsedMs(const QElapsedTimer &timer)
{
    return double(timer.nsecsElapsed()) / 1e6;
}

// The turn id a record was stored with (metadata.dia_id), or an empty string.
QString diaIdOf(const MemoryRecord &record)
{
    const auto it = record.metadata.find("dia_id");
    if (it == record.metadata.end() || !it->is_string())
        return QString();
    return QString::fromStdString(it->get<std::string>());
}

} // namespace

double LocomoScore::recallAt(int k) const
{
    if (questions == 0)
        return std::numeric_limits<double>::quiet_NaN();
    return recallSum.value(k) / questions;
}

double LocomoEvalResult::offTopicEmptyFraction() const
{
    if (offTopicRecalls == 0)
        return std::numeric_limits<double>::quiet_NaN();
    return double(offTopicEmpty) / offTopicRecalls;
}

QStringList LocomoEvaluator::readOffTopic(const QString &path)
{
    QStringList queries;
    for (const InputLines::Line &line : InputLines::read(path).nonBlankLines()) {
        const QString query = line.text.trimmed();
        if (!query.startsWith(QLatin1Char('#')))
            queries << query;
    }
    if (queries.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the off-topic file %1 holds no query; write one query a line (lines starting with # "
                                   "are comments)")
                        .arg(path));
    return queries;
}

LocomoEvaluator::LocomoEvaluator(const MemoryConfig &config, const QList<int> &ks, const QList<int> &categories)
    : m_config(storeConfig(config)),
      m_ks(ks),
      m_categories(categories.isEmpty() ? QList<int>{1, 2, 3, 4, 5} : categories)
{
    if (m_ks.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("eval locomo needs at least one k"));
}

QString LocomoEvaluator::recordText(const LocomoTurn &turn)
{
    if (turn.caption.isEmpty())
        return turn.text;
    return turn.text + QStringLiteral(" [image: ") + turn.caption + QLatin1Char(']');
}

QString LocomoEvaluator::recordContent(const LocomoTurn &turn)
{
    return turn.speaker + QStringLiteral(": ") + recordText(turn);
}

QString LocomoEvaluator::recordContentFormat()
{
    return QStringLiteral("<speaker>: <text> [image: <blip_caption>]  (the bracket only when the turn has a caption)");
}

MemoryConfig LocomoEvaluator::storeConfig(const MemoryConfig &config)
{
    MemoryConfig c = config;
    c.storage = Json{{"provider", "sqlite"}, {"config", {{"path", ":memory:"}}}};
    return c;
}

qint64 LocomoEvaluator::questionCount(const QList<LocomoConversation> &conversations) const
{
    qint64 n = 0;
    for (const LocomoConversation &c : conversations) {
        for (const LocomoQuestion &q : c.questions) {
            if (selected(q.category) && !q.evidence.isEmpty())
                ++n;
        }
    }
    return n;
}

LocomoEvalResult LocomoEvaluator::run(const QList<LocomoConversation> &conversations, const Progress &progress,
                                      const Log &log) const
{
    LocomoEvalResult result;
    result.memoryConfig = m_config.toJson();
    for (int category : m_categories)
        result.byCategory[category] = LocomoScore();
    result.offTopicQueries = int(m_offTopic.size());
    qint64 done = 0;
    for (const LocomoConversation &conversation : conversations) {
        result.conversationIds << conversation.sampleId;
        evaluate(conversation, result, done, progress, log);
    }
    return result;
}

void LocomoEvaluator::evaluate(const LocomoConversation &conversation, LocomoEvalResult &result, qint64 &done,
                               const Progress &progress, const Log &log) const
{
    QElapsedTimer timer;
    timer.start();
    Memory memory(m_config);
    if (result.embedderId.isEmpty())
        result.embedderId = memory.embedder().id();

    // 1. Every turn one record, stored session by session as the conversation it is
    //    (Memory::rememberConversation: each turn indexed with its neighbours in the session; a turn
    //    repeating earlier words is still its own record). Only a blank turn is not stored.
    SaveResult saved;
    for (qsizetype start = 0; start < conversation.turns.size();) {
        const int session = conversation.turns.at(start).session;
        QList<ConversationTurn> turns;
        qsizetype end = start;
        for (; end < conversation.turns.size() && conversation.turns.at(end).session == session; ++end) {
            const LocomoTurn &turn = conversation.turns.at(end);
            turns << ConversationTurn{turn.speaker, recordText(turn), turn.at, Json{{"dia_id", turn.diaId.toStdString()}}};
        }
        ConversationOptions options;
        options.defaults.scope = QStringLiteral("/");
        options.defaults.importance = m_config.defaultImportance;
        const SaveResult part = memory.rememberConversation(turns, options).result();
        saved.stored += part.stored;
        saved.dropped += part.dropped;
        start = end;
    }
    result.turns += int(conversation.turns.size());
    result.turnsStored += saved.stored;
    result.turnsDropped += saved.dropped;
    const double storeMs = elapsedMs(timer);

    // 3. Every selected question, recalled shallow as of the last session.
    int maxK = 0;
    for (int k : m_ks)
        maxK = std::max(maxK, k);
    RecallOptions options;
    options.limit = maxK;
    options.depth = RecallDepth::Shallow;
    options.now = conversation.lastSessionAt;
    int questions = 0;
    double recallMs = 0;
    for (const LocomoQuestion &q : conversation.questions) {
        if (!selected(q.category))
            continue;
        result.evidenceIdsRepaired += q.repairedIds;
        result.evidenceIdsDropped += q.droppedIds;
        if (q.evidence.isEmpty()) {
            ++result.questionsSkipped;
            continue;
        }
        QElapsedTimer recallTimer;
        recallTimer.start();
        const QList<MemoryMatch> matches = memory.recall(q.question, options);
        const double ms = elapsedMs(recallTimer);
        recallMs += ms;
        ++questions;
        result.recallMs += ms;
        ++result.recalls;

        QStringList ranked;
        for (const MemoryMatch &m : matches)
            ranked << diaIdOf(m.record);
        LocomoScore &category = result.byCategory[q.category];
        ++category.questions;
        ++result.overall.questions;
        for (int k : m_ks) {
            const QStringList top = ranked.mid(0, k);
            int found = 0;
            for (const QString &evidence : q.evidence) {
                if (top.contains(evidence))
                    ++found;
            }
            const double recall = double(found) / double(q.evidence.size());
            category.recallSum[k] += recall;
            result.overall.recallSum[k] += recall;
        }
        if (progress)
            progress(++done);
    }
    // 4. The off-topic queries, with the same options: each should find nothing.
    for (const QString &query : m_offTopic) {
        ++result.offTopicRecalls;
        if (memory.recall(query, options).isEmpty())
            ++result.offTopicEmpty;
        else
            result.offTopicAnswered << conversation.sampleId + QStringLiteral(": ") + query;
    }
    memory.close();

    if (log) {
        log(QStringLiteral("%1: %2 turns, %3 stored, %4 blank, in %5 ms; %6 questions, %7 ms per query")
                .arg(conversation.sampleId, QString::number(conversation.turns.size()), QString::number(saved.stored),
                     QString::number(saved.dropped), QString::number(storeMs, 'f', 1), QString::number(questions),
                     QString::number(questions > 0 ? recallMs / questions : 0.0, 'f', 2)));
    }
}

} // namespace mneme::cli
