#include "locomo_evaluator.h"

#include "core/error.h"
#include "core/vector_math.h"
#include "memory/memory.h"

#include <QElapsedTimer>
#include <QHash>

#include <cmath>
#include <limits>

namespace mneme::cli {

namespace {

constexpr int kExportBatch = 1000;

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
    //    (Memory::rememberConversation: each turn indexed with its neighbours in the session).
    QList<MemoryInput> items; // what each turn became, for the dedup bookkeeping below
    items.reserve(conversation.turns.size());
    SaveResult saved;
    for (qsizetype start = 0; start < conversation.turns.size();) {
        const int session = conversation.turns.at(start).session;
        QList<ConversationTurn> turns;
        qsizetype end = start;
        for (; end < conversation.turns.size() && conversation.turns.at(end).session == session; ++end) {
            const LocomoTurn &turn = conversation.turns.at(end);
            turns << ConversationTurn{turn.speaker, recordText(turn), turn.at, Json{{"dia_id", turn.diaId.toStdString()}}};
            MemoryInput item;
            item.content = recordContent(turn);
            items << item;
        }
        ConversationOptions options;
        options.defaults.scope = QStringLiteral("/");
        options.defaults.importance = m_config.defaultImportance;
        const SaveResult part = memory.rememberConversation(turns, options).result();
        saved.stored += part.stored;
        saved.dropped += part.dropped;
        saved.existing += part.existing;
        start = end;
    }
    result.turns += int(conversation.turns.size());
    result.turnsStored += saved.stored;
    const double storeMs = elapsedMs(timer);

    // 2. Which turns were stored. rememberMany drops a turn nearly identical to an earlier kept one
    // (batch_dedup_threshold); such a turn is represented by that earlier turn, so that evidence
    // naming it is found when its twin is recalled.
    QHash<QString, Embedding> storedVectors;
    for (int offset = 0;; offset += kExportBatch) {
        const QList<MemoryRecord> batch = memory.exportRecords(offset, kExportBatch);
        for (const MemoryRecord &r : batch) {
            const QString id = diaIdOf(r);
            if (!id.isEmpty())
                storedVectors.insert(id, r.embedding);
        }
        if (batch.size() < kExportBatch)
            break;
    }
    QHash<QString, QString> representative;     // turn id -> the stored turn id that stands for it
    QList<qsizetype> droppedTurns;
    for (qsizetype i = 0; i < conversation.turns.size(); ++i) {
        const QString &id = conversation.turns.at(i).diaId;
        if (storedVectors.contains(id))
            representative.insert(id, id);
        else
            droppedTurns << i;
    }
    result.turnsDropped += int(droppedTurns.size());
    if (!droppedTurns.isEmpty() && !storedVectors.isEmpty()) {
        QStringList texts;
        for (qsizetype i : std::as_const(droppedTurns))
            texts << items.at(i).content;
        const std::vector<Embedding> vectors = memory.embedder().embed(texts);
        for (qsizetype n = 0; n < droppedTurns.size() && size_t(n) < vectors.size(); ++n) {
            const qsizetype i = droppedTurns.at(n);
            const Embedding &v = vectors.at(size_t(n));
            // As the dedup does: the first earlier stored turn at or above the threshold; failing
            // that (rounding at the threshold), the most similar stored turn.
            QString twin;
            QString best;
            double bestCosine = -2;
            for (qsizetype j = 0; j < conversation.turns.size(); ++j) {
                const QString &other = conversation.turns.at(j).diaId;
                const auto it = storedVectors.constFind(other);
                if (it == storedVectors.constEnd())
                    continue;
                const double cosine = VectorMath::cosine(v, it.value());
                if (j < i && cosine >= m_config.batchDedupThreshold) {
                    twin = other;
                    break;
                }
                if (cosine > bestCosine) {
                    bestCosine = cosine;
                    best = other;
                }
            }
            representative.insert(conversation.turns.at(i).diaId, twin.isEmpty() ? best : twin);
        }
    }

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
                if (top.contains(representative.value(evidence, evidence)))
                    ++found;
            }
            const double recall = double(found) / double(q.evidence.size());
            category.recallSum[k] += recall;
            result.overall.recallSum[k] += recall;
        }
        if (progress)
            progress(++done);
    }
    memory.close();

    if (log) {
        log(QStringLiteral("%1: %2 turns, %3 stored, %4 dropped as near-duplicates, in %5 ms; %6 questions, %7 ms per query")
                .arg(conversation.sampleId, QString::number(conversation.turns.size()), QString::number(saved.stored),
                     QString::number(droppedTurns.size()), QString::number(storeMs, 'f', 1), QString::number(questions),
                     QString::number(questions > 0 ? recallMs / questions : 0.0, 'f', 2)));
    }
}

} // namespace mneme::cli
