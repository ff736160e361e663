#include "graph_write_steps.h"

#include "graph_rows.h"

#include <mneme/core/error.h>

namespace mneme::graphrows {

void GraphWriteSteps::writeExtraction(const GraphExtraction &x, const GraphWriteOptions &options, GraphWriteResult &result)
{
    if (x.origin.recordId.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a graph extraction needs the id of the record it came from"));
    for (const GraphEntityInput &e : x.entities)
        resolveEntity(e, x.origin, options, result);
    for (const GraphTripletInput &t : x.triplets)
        writeTriplet(t, x.origin, options, result);
}

void GraphWriteSteps::writeTriplet(const GraphTripletInput &t, const GraphOrigin &origin, const GraphWriteOptions &options,
                                   GraphWriteResult &result)
{
    const qint64 at = msOf(origin.at);
    const QString label = normalizedLabel(t.label);
    const qint64 src = resolveEntity(t.source, origin, options, result);
    const qint64 dst = resolveEntity(t.destination, origin, options, result);
    if (label.isEmpty() || src == 0 || dst == 0 || src == dst)
        return;
    if (const qint64 same = validRelation(src, label, dst, origin)) {
        ++result.relationsLinked;
        link(kRelationRow, same, origin.recordId);
        note(origin.recordId, GraphChange::Kind::LinkRelation, same, at);
        return;
    }
    const qint64 id = addRelation(src, label, dst, origin, t);
    ++result.relationsAdded;
    link(kRelationRow, id, origin.recordId);
    note(origin.recordId, GraphChange::Kind::AddRelation, id, at);

    std::vector<qint64> replaced = t.contradicts;
    if (t.exclusive) {
        const std::vector<qint64> others = otherDestinations(src, label, dst, id, origin);
        replaced.insert(replaced.end(), others.begin(), others.end());
    }
    const QString why =
        QStringLiteral("replaced by \"%1 %2 %3\" (record %4)").arg(t.source.name, label, t.destination.name, origin.recordId);
    for (qint64 old : replaced) {
        if (old == id || !markInvalid(old, why, origin.recordId, at))
            continue;
        note(origin.recordId, GraphChange::Kind::Invalidate, old, at);
        ++result.relationsInvalidated;
    }
}

qint64 GraphWriteSteps::resolveEntity(const GraphEntityInput &in, const GraphOrigin &origin, const GraphWriteOptions &options,
                                      GraphWriteResult &result)
{
    const QString name = in.name.simplified();
    const QString norm = GraphEntity::normalize(name);
    if (norm.isEmpty())
        return 0;
    const qint64 at = msOf(origin.at);
    qint64 found = entityNamed(norm, origin);
    if (found == 0 && !in.embedding.empty() && options.entitySimilarity <= 1)
        found = entityLike(in.embedding, origin, options.entitySimilarity);
    if (found != 0) {
        ++result.entitiesResolved;
        if (!isLinked(kEntityRow, found, origin.recordId)) {
            link(kEntityRow, found, origin.recordId);
            note(origin.recordId, GraphChange::Kind::LinkEntity, found, at);
        }
        return found;
    }
    const qint64 id = addEntity(name, norm, in.type.trimmed().toLower(), origin, in.embedding);
    ++result.entitiesAdded;
    link(kEntityRow, id, origin.recordId);
    note(origin.recordId, GraphChange::Kind::AddEntity, id, at);
    return id;
}

int GraphWriteSteps::revertRecord(const QString &recordId)
{
    int reverted = 0;
    for (const auto &[kind, rowId] : historyOf(recordId)) {
        switch (kind) {
        case GraphChange::Kind::Invalidate:
            markValidAgain(rowId, recordId);
            break;
        case GraphChange::Kind::AddEntity:
        case GraphChange::Kind::LinkEntity:
            unlink(kEntityRow, rowId, recordId);
            break;
        case GraphChange::Kind::AddRelation:
        case GraphChange::Kind::LinkRelation:
            unlink(kRelationRow, rowId, recordId);
            break;
        }
        ++reverted;
    }
    forgetHistory(recordId);
    return reverted;
}

} // namespace mneme::graphrows
