#include "memory/scoring_p.h"

#include <mneme/core/vector_math.h>

#include <algorithm>
#include <cmath>

namespace mneme {

double Scoring::decay(double ageDays, const MemoryConfig &config)
{
    const double age = std::max(0.0, ageDays);
    if (config.decayFunction == QLatin1String("linear"))
        return std::max(0.0, 1.0 - age / (2.0 * config.recencyHalfLifeDays));
    return std::pow(0.5, age / config.recencyHalfLifeDays);
}

MatchSignals Scoring::signalsFor(const MemoryRecord &record, double cosine, double keyword, const QDateTime &now,
                                 const MemoryConfig &config)
{
    return signals(cosine, keyword, record.createdAt, record.importance, record.accessCount, now, config);
}

MatchSignals Scoring::signals(double cosine, double keyword, const QDateTime &createdAt, double importance,
                              int accessCount, const QDateTime &now, const MemoryConfig &config)
{
    MatchSignals s;
    s.semantic = std::clamp(cosine, 0.0, 1.0);
    s.keywordEvidence = std::clamp(keyword, 0.0, 1.0);
    s.keyword = s.keywordEvidence; // until weighed against the other candidates (relativeKeywords())
    s.relevance = relevance(s.semantic, s.keywordEvidence, config);
    const double ageDays = createdAt.isValid() ? createdAt.msecsTo(now) / 86400000.0 : 0.0;
    s.recency = decay(ageDays, config);
    if (config.accessBoost > 0 && accessCount > 0)
        importance += config.accessBoost * std::log2(1.0 + accessCount);
    s.importance = std::clamp(importance, 0.0, 1.0);
    return s;
}

double Scoring::relevance(double semantic, double keyword, const MemoryConfig &c)
{
    const double weight = c.semanticWeight + c.keywordWeight;
    return weight > 0 ? (c.semanticWeight * semantic + c.keywordWeight * keyword) / weight : 0.0;
}

double Scoring::score(const MatchSignals &s, double best, const MemoryConfig &c)
{
    const double total = c.semanticWeight + c.keywordWeight + c.recencyWeight + c.importanceWeight;
    if (total <= 0)
        return 0;
    const double ranking = relevance(s.semantic, s.keyword, c);
    const double share = best > ranking ? ranking / best : 1.0;
    const double evidence = c.semanticWeight * s.semantic + c.keywordWeight * s.keyword;
    const double standing = c.recencyWeight * s.recency + c.importanceWeight * s.importance;
    return (evidence + standing * std::pow(share, c.standingExponent)) / total;
}

QStringList Scoring::reasons(const MatchSignals &s)
{
    QStringList r;
    if (s.semantic > 0)
        r << QStringLiteral("semantic");
    if (s.keyword > 0)
        r << QStringLiteral("keyword");
    if (s.recency > 0.5)
        r << QStringLiteral("recency");
    if (s.importance > 0.5)
        r << QStringLiteral("importance");
    return r;
}

MemoryMatch Scoring::match(MemoryRecord record, double cosine, double keyword, const QDateTime &now,
                           const MemoryConfig &config)
{
    MemoryMatch m;
    m.signalValues = signalsFor(record, cosine, keyword, now, config);
    m.record = std::move(record);
    m.score = score(m.signalValues, m.signalValues.relevance, config);
    m.matchReasons = reasons(m.signalValues);
    return m;
}

void Scoring::weighByRelevance(QList<MemoryMatch> &matches, const MemoryConfig &config)
{
    double best = 0;
    for (const MemoryMatch &m : std::as_const(matches))
        best = std::max(best, relevance(m.signalValues.semantic, m.signalValues.keyword, config));
    for (MemoryMatch &m : matches)
        m.score = score(m.signalValues, best, config);
}

void Scoring::relativeKeywords(const std::vector<MatchSignals *> &candidates)
{
    double best = 0;
    for (const MatchSignals *s : candidates)
        best = std::max(best, s->keywordEvidence);
    for (MatchSignals *s : candidates)
        s->keyword = best > 0 ? s->keywordEvidence / best : 0.0;
}

bool Scoring::anyRelevantEnough(const std::vector<const MatchSignals *> &candidates, double floor)
{
    for (const MatchSignals *s : candidates)
        if (s->relevance > 0 && s->relevance >= floor)
            return true;
    return false;
}

bool Scoring::relevantEnough(const MatchSignals &s, double floor)
{
    return s.relevance > 0 && s.relevance >= floor * kCompanionShare;
}

bool Scoring::asks(const QString &text)
{
    return text.trimmed().endsWith(QLatin1Char('?'));
}

bool Scoring::namesSpeaker(const QString &query, const QString &speaker)
{
    const QString name = speaker.trimmed();
    if (name.isEmpty())
        return false;
    const auto wordChar = [](QChar c) { return c.isLetterOrNumber() || c.isMark(); };
    for (qsizetype at = query.indexOf(name, 0, Qt::CaseInsensitive); at >= 0;
         at = query.indexOf(name, at + 1, Qt::CaseInsensitive)) {
        const qsizetype end = at + name.size();
        if ((at == 0 || !wordChar(query.at(at - 1))) && (end == query.size() || !wordChar(query.at(end))))
            return true;
    }
    return false;
}

namespace {

// The speaker of a conversation turn; nullptr for another record.
const Json *speakerOf(const MemoryRecord &record)
{
    const auto it = record.metadata.find("speaker");
    return it != record.metadata.end() && it->is_string() ? &*it : nullptr;
}

} // namespace

bool Scoring::isTurn(const MemoryRecord &record)
{
    return speakerOf(record) != nullptr;
}

bool Scoring::isNamedSpeakersTurn(const MemoryRecord &record, const QString &query)
{
    const Json *speaker = speakerOf(record);
    return speaker && namesSpeaker(query, QString::fromStdString(speaker->get<std::string>()));
}

double Scoring::turnFactor(const MemoryRecord &record, const QString &query)
{
    if (!speakerOf(record))
        return 1.0;
    double factor = 1.0;
    if (isNamedSpeakersTurn(record, query))
        factor *= 1.0 + kNamedSpeakerBoost;
    if (asks(record.content))
        factor *= 1.0 - kQuestionTurnDiscount;
    return factor * shortTurnFactor(record.content);
}

int Scoring::wordCount(const QString &text, int atMost)
{
    int words = 0;
    bool inWord = false;
    for (const QChar c : text) {
        const bool space = c.isSpace();
        if (!space && !inWord && ++words >= atMost)
            break;
        inWord = !space;
    }
    return words;
}

double Scoring::shortTurnFactor(const QString &content)
{
    const int words = wordCount(content, kFullTurnWords); // a long turn is read no further than this
    return std::clamp(std::sqrt(double(words) / kFullTurnWords), kShortTurnFloor, 1.0);
}

void Scoring::weighTurns(QList<MemoryMatch> &matches, const QString &query)
{
    for (MemoryMatch &m : matches)
        m.score = std::min(1.0, m.score * turnFactor(m.record, query));
}

double Scoring::cosine(const Embedding &a, const Embedding &b)
{
    return VectorMath::cosine(a, b);
}

} // namespace mneme
