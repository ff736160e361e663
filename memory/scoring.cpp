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
    s.keyword = std::clamp(keyword, 0.0, 1.0);
    const double ageDays = createdAt.isValid() ? createdAt.msecsTo(now) / 86400000.0 : 0.0;
    s.recency = decay(ageDays, config);
    if (config.accessBoost > 0 && accessCount > 0)
        importance += config.accessBoost * std::log2(1.0 + accessCount);
    s.importance = std::clamp(importance, 0.0, 1.0);
    return s;
}

double Scoring::composite(const MatchSignals &s, const MemoryConfig &c)
{
    return c.semanticWeight * s.semantic + c.keywordWeight * s.keyword + c.recencyWeight * s.recency
         + c.importanceWeight * s.importance;
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
    m.score = composite(m.signalValues, config);
    m.matchReasons = reasons(m.signalValues);
    return m;
}

double Scoring::relevance(const MatchSignals &s, const MemoryConfig &c)
{
    return c.semanticWeight * s.semantic + c.keywordWeight * s.keyword;
}

void Scoring::weighByRelevance(QList<MemoryMatch> &matches, const MemoryConfig &config)
{
    double best = 0;
    for (const MemoryMatch &m : std::as_const(matches))
        best = std::max(best, relevance(m.signalValues, config));
    if (best <= 0)
        return;
    for (MemoryMatch &m : matches)
        m.score = weighed(m.signalValues, best, config);
}

double Scoring::weighed(const MatchSignals &s, double best, const MemoryConfig &c)
{
    if (best <= 0)
        return composite(s, c);
    const double rel = relevance(s, c);
    const double share = rel / best;
    return rel + (c.recencyWeight * s.recency + c.importanceWeight * s.importance) * share * share;
}

double Scoring::cosine(const Embedding &a, const Embedding &b)
{
    return VectorMath::cosine(a, b);
}

} // namespace mneme
