#pragma once

#include <mneme/core/graph_store.h>

#include <QString>
#include <utility>
#include <vector>

namespace mneme::graphrows {

// graph_sources.kind: what a provenance row points at.
constexpr int kEntityRow = 0;
constexpr int kRelationRow = 1;

// How a graph store writes a record's extraction and reverts a record's graph changes: one algorithm for
// every backend, here, over steps each backend implements as one statement (or an index search) on its
// connection. Every step runs inside the transaction (and under the lock) the store opened; a step
// throws mneme::Error on failure, which rolls that transaction back.
//
// "The partition" of an origin is what a record may join: rows of its scope and privacy, and for a
// private record its source's rows only.
class GraphWriteSteps
{
public:
    virtual ~GraphWriteSteps() = default;

    // Writes one record's entities and relations. An entity joins the partition's entity of its
    // normalised name, else its most similar one (at least options.entitySimilarity), else is added. A
    // relation joins the partition's same valid relation, else is added and invalidates what it replaces:
    // the same source and label with another destination when the label is exclusive, and the relations
    // the extractor found it contradicts. Each row is linked to the record and each change noted in the
    // record's graph history.
    void writeExtraction(const GraphExtraction &x, const GraphWriteOptions &options, GraphWriteResult &result);

    // Undoes the record's graph changes, newest first, and forgets its history: links removed,
    // invalidations it made lifted. Rows left without a record are for the caller to delete. Returns
    // the number of changes undone.
    int revertRecord(const QString &recordId);

protected:
    // The partition's entity of this normalised name (the oldest), or 0.
    virtual qint64 entityNamed(const QString &norm, const GraphOrigin &origin) = 0;
    // The partition's entity whose name embedding is the most similar, if at least minScore; else 0.
    virtual qint64 entityLike(const Embedding &name, const GraphOrigin &origin, double minScore) = 0;
    virtual qint64 addEntity(const QString &name, const QString &norm, const QString &type, const GraphOrigin &origin,
                             const Embedding &embedding) = 0;
    virtual bool isLinked(int kind, qint64 rowId, const QString &recordId) = 0;
    // The partition's valid relation src -label-> dst, or 0.
    virtual qint64 validRelation(qint64 src, const QString &label, qint64 dst, const GraphOrigin &origin) = 0;
    virtual qint64 addRelation(qint64 src, const QString &label, qint64 dst, const GraphOrigin &origin,
                               const GraphTripletInput &t) = 0;
    // The partition's valid relations src -label-> another destination than dst, but `except`.
    virtual std::vector<qint64> otherDestinations(qint64 src, const QString &label, qint64 dst, qint64 except,
                                                  const GraphOrigin &origin) = 0;
    virtual void link(int kind, qint64 rowId, const QString &recordId) = 0;
    virtual void note(const QString &recordId, GraphChange::Kind kind, qint64 rowId, qint64 atMs) = 0;
    // Marks a valid relation invalid (at, by the record, why); false when it was not valid.
    virtual bool markInvalid(qint64 relationId, const QString &why, const QString &byRecord, qint64 atMs) = 0;

    // The record's graph history, newest first: each change's kind and row.
    virtual std::vector<std::pair<GraphChange::Kind, qint64>> historyOf(const QString &recordId) = 0;
    // Lifts the record's invalidation of the relation (valid again, if the record invalidated it).
    virtual void markValidAgain(qint64 relationId, const QString &recordId) = 0;
    virtual void unlink(int kind, qint64 rowId, const QString &recordId) = 0;
    virtual void forgetHistory(const QString &recordId) = 0;

private:
    qint64 resolveEntity(const GraphEntityInput &in, const GraphOrigin &origin, const GraphWriteOptions &options,
                         GraphWriteResult &result);
    void writeTriplet(const GraphTripletInput &t, const GraphOrigin &origin, const GraphWriteOptions &options,
                      GraphWriteResult &result);
};

} // namespace mneme::graphrows
