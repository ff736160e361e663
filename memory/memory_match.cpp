#include "memory/memory_match.h"

namespace mneme {

QString MemoryMatch::format() const
{
    QString out = QStringLiteral("- (score=%1) %2").arg(score, 0, 'f', 2).arg(record.content);
    if (!record.categories.isEmpty())
        out += QStringLiteral("\n  categories: %1").arg(record.categories.join(QStringLiteral(", ")));
    if (record.metadata.is_object()) {
        for (auto it = record.metadata.begin(); it != record.metadata.end(); ++it) {
            if (it.value().is_null())
                continue;
            const std::string value = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
            out += QStringLiteral("\n  %1: %2").arg(QString::fromStdString(it.key()), QString::fromStdString(value));
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
    };
    j["match_reasons"] = m.matchReasons;
    if (!m.evidenceGaps.isEmpty())
        j["evidence_gaps"] = m.evidenceGaps;
}

} // namespace mneme
