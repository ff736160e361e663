#include "graph_store.h"

#include <mneme/core/scope_path.h>

namespace mneme {

QString GraphEntity::normalize(const QString &name)
{
    const QString decomposed = name.normalized(QString::NormalizationForm_KD).toCaseFolded();
    QString out;
    out.reserve(decomposed.size());
    bool space = false;
    for (const QChar c : decomposed) {
        if (c.category() == QChar::Mark_NonSpacing)
            continue;
        if (c.isLetterOrNumber()) {
            if (space && !out.isEmpty())
                out += QLatin1Char(' ');
            space = false;
            out += c;
        } else if (c != QLatin1Char('\'') && c != QChar(0x2019)) {
            space = true; // whitespace and punctuation separate words; apostrophes join them
        }
    }
    for (const char *article : {"the ", "a ", "an "}) {
        const QLatin1String a(article);
        if (out.startsWith(a) && out.size() > a.size())
            return out.mid(a.size());
    }
    return out;
}

QString GraphRelation::text() const
{
    return QStringLiteral("%1 -- %2 -> %3").arg(sourceName, label, destinationName);
}

bool GraphRelation::validAt(const QDateTime &t) const
{
    if (createdAt.isValid() && createdAt > t)
        return false;
    return valid || (invalidatedAt.isValid() && invalidatedAt > t);
}

void to_json(Json &j, const GraphEntity &e)
{
    Json records = Json::array();
    for (const QString &id : e.recordIds)
        records.push_back(id);
    j = Json{{"id", e.id},
             {"name", e.name},
             {"normalized_name", e.normalizedName},
             {"type", e.type},
             {"scope", e.scope},
             {"source", e.source},
             {"private", e.isPrivate},
             {"created_at", toIso(e.createdAt)},
             {"record_ids", records}};
}

void to_json(Json &j, const GraphRelation &r)
{
    Json records = Json::array();
    for (const QString &id : r.recordIds)
        records.push_back(id);
    j = Json{{"id", r.id},
             {"source", r.sourceName},
             {"source_id", r.sourceId},
             {"label", r.label},
             {"destination", r.destinationName},
             {"destination_id", r.destinationId},
             {"valid", r.valid},
             {"created_at", toIso(r.createdAt)},
             {"invalidated_at", r.invalidatedAt.isValid() ? Json(toIso(r.invalidatedAt)) : Json(nullptr)},
             {"why", r.why.isEmpty() ? Json(nullptr) : Json(r.why)},
             {"scope", r.scope},
             {"private", r.isPrivate},
             {"record_ids", records},
             {"extractor", r.extractor}};
    if (!r.source.isEmpty())
        j["source_name"] = r.source;
}

bool GraphFilter::sees(const QString &scope, const QString &rowSource, bool isPrivate) const
{
    if (applyPrivacy && isPrivate && !includePrivate && (source.isEmpty() || rowSource != source))
        return false;
    if (scopes.isEmpty())
        return true;
    for (const QString &prefix : scopes)
        if (ScopePath::contains(prefix, scope))
            return true;
    return false;
}

bool GraphFilter::admits(const GraphRelation &r) const
{
    if (!sees(r.scope, r.source, r.isPrivate))
        return false;
    if (includeInvalid)
        return true;
    return asOf.isValid() ? r.validAt(asOf) : r.valid;
}

QString GraphChange::kindName(Kind k)
{
    switch (k) {
    case Kind::AddEntity: return QStringLiteral("ADD_ENTITY");
    case Kind::LinkEntity: return QStringLiteral("LINK_ENTITY");
    case Kind::AddRelation: return QStringLiteral("ADD_RELATION");
    case Kind::LinkRelation: return QStringLiteral("LINK_RELATION");
    case Kind::Invalidate: return QStringLiteral("INVALIDATE");
    }
    return QString();
}

QHash<qint64, int> GraphStore::degrees(const std::vector<qint64> &entityIds, const GraphFilter &filter)
{
    QHash<qint64, int> out;
    for (qint64 id : entityIds)
        out.insert(id, 0);
    for (const GraphRelation &r : relationsOf(entityIds, 1, filter))
        for (qint64 end : {r.sourceId, r.destinationId})
            if (out.contains(end))
                ++out[end];
    return out;
}

} // namespace mneme
