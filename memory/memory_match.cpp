#include <mneme/memory/memory_match.h>

namespace mneme {

namespace {

// A metadata value as a prompt shows it: strings as they are, a list of plain values joined with
// commas, anything else as JSON; empty for nothing worth a line.
QString promptText(const Json &value)
{
    if (value.is_string())
        return QString::fromStdString(value.get<std::string>()).trimmed();
    if (value.is_array()) {
        QStringList items;
        for (const Json &item : value) {
            if (item.is_structured())
                return QString::fromStdString(value.dump());
            const QString text = promptText(item);
            if (!text.isEmpty())
                items << text;
        }
        return items.join(QStringLiteral(", "));
    }
    if (value.is_null() || (value.is_object() && value.empty()))
        return {};
    return QString::fromStdString(value.dump());
}

} // namespace

QString MemoryMatch::format() const
{
    QString out = QStringLiteral("- (score=%1) %2").arg(score, 0, 'f', 2).arg(record.content);
    if (!record.categories.isEmpty())
        out += QStringLiteral("\n  categories: %1").arg(record.categories.join(QStringLiteral(", ")));
    if (record.metadata.is_object()) {
        for (auto it = record.metadata.begin(); it != record.metadata.end(); ++it) {
            const QString value = promptText(it.value());
            if (!value.isEmpty())
                out += QStringLiteral("\n  %1: %2").arg(QString::fromStdString(it.key()), value);
        }
    }
    return out;
}

void to_json(Json &j, const MemoryMatch &m)
{
    to_json(j, m.record);
    j["score"] = m.score;
    j["signals"] = Json{
        {"semantic", m.signalValues.semantic},
        {"recency", m.signalValues.recency},
        {"importance", m.signalValues.importance},
        {"keyword", m.signalValues.keyword},
        {"keyword_evidence", m.signalValues.keywordEvidence},
        {"relevance", m.signalValues.relevance},
    };
    j["match_reasons"] = m.matchReasons;
    if (!m.evidenceGaps.isEmpty())
        j["evidence_gaps"] = m.evidenceGaps;
}

void to_json(Json &j, const RecallStats &s)
{
    j = Json{
        {"exact", s.exact},
        {"index_building", s.indexBuilding},
        {"vector_searches", s.vectorSearches},
        {"answers", s.answers},
        {"elapsed_ms", s.elapsedMs},
    };
}

} // namespace mneme

namespace mneme {

QString RelationMatch::format() const
{
    const QString since = relation.createdAt.isValid() ? relation.createdAt.date().toString(Qt::ISODate) : QString();
    QString out = QStringLiteral("- %1 -- %2 -> %3").arg(relation.sourceName, relation.label, relation.destinationName);
    if (!relation.valid && relation.invalidatedAt.isValid())
        out += QStringLiteral(" (from %1 until %2)").arg(since, relation.invalidatedAt.date().toString(Qt::ISODate));
    else if (!since.isEmpty())
        out += QStringLiteral(" (since %1)").arg(since);
    return out;
}

void to_json(Json &j, const RelationMatch &m)
{
    to_json(j, m.relation);
    j["score"] = m.score;
    j["entity_score"] = m.entityScore;
    j["triplet_score"] = m.tripletScore;
    j["hops"] = m.hops;
    j["match_reasons"] = m.matchReasons;
}

} // namespace mneme
