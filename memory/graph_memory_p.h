#pragma once

// Private to the memory library: graph memory, between Memory and its store's GraphStore.

#include "memory/graph_extraction_p.h"
#include <mneme/core/graph_store.h>
#include <mneme/core/llm_provider.h>
#include <mneme/core/record_filter.h>
#include <mneme/memory/memory_match.h>

#include <QHash>
#include <QList>
#include <QString>
#include <optional>
#include <vector>

namespace mneme {

class MemoryPrivate;

// Keeps the graph in step with the records (graph_memory on): every save path hands it the records
// it stored, every delete the ids it deleted. Runs on the memory's writer thread (writes) and the
// recalling thread (reads); holds no state of its own besides its references.
class GraphMemory
{
public:
    GraphMemory(MemoryPrivate &d, GraphStore &store) : d(d), m_store(store) {}

    // Extracts entities and relations from stored records and writes them (one transaction). Never
    // throws: an extraction or a write that fails leaves the graph as it was and is reported
    // (Memory::analysisCompleted for step graph_relations, and a warning); the records stay saved.
    void add(const std::vector<MemoryRecord> &records);
    // Records whose content changed: their graph changes reverted, then extracted again.
    void replace(const std::vector<MemoryRecord> &records);
    // Deleted records: their graph changes reverted (never throws, as add()).
    void remove(const QStringList &recordIds);

    // Graph recall: entity-centric and triplet-semantic, merged and ranked. `queryVector` is the
    // query's embedding.
    QList<RelationMatch> recall(const QString &query, const Embedding &queryVector, const GraphFilter &filter, int limit);

    // The graph filter of a record filter (its scopes and privacy).
    static GraphFilter filterOf(const RecordFilter &records, const QDateTime &asOf, bool includeInvalid = false);

    // The LLM path: the entity extractor's and the relationship generator's prompts and readers.
    static ChatRequest entityRequest(const QString &content, const QString &speaker);
    // nullopt when the reply has no "entities" list.
    static std::optional<QList<ExtractedEntity>> readEntities(const Json &reply);
    // `known`: valid stored relations of those entities, numbered by id, for the model to mark obsolete.
    static ChatRequest relationRequest(const QString &content, const QList<ExtractedEntity> &entities,
                                       const std::vector<GraphRelation> &known);
    // nullopt when the reply has no "relations" list; a relation naming an unknown entity is kept (the
    // entity is added), an obsolete id that was not offered is dropped.
    static std::optional<QList<ExtractedTriplet>> readRelations(const Json &reply, const std::vector<GraphRelation> &known);

private:
    bool useLlm() const;
    // The extraction of each record (nullopt: it failed, reported; the record adds nothing).
    std::vector<std::optional<ExtractedGraph>> extract(const std::vector<MemoryRecord> &records);
    std::vector<std::optional<ExtractedGraph>> extractWithLlm(const std::vector<MemoryRecord> &records);
    // The relations stored for these entity names, visible to the record (its scope and privacy).
    std::vector<GraphRelation> knownRelations(const MemoryRecord &record, const QList<ExtractedEntity> &entities);
    // The entity-centric path: the relations of the query's entities (`seeds`, by id, with how surely
    // the query names each) and, with graph_hops 2, of their neighbours, added to `found` with their
    // entity score and hops. Hubs are not expanded; other entities weigh by their specificity.
    void expandEntities(const QHash<qint64, double> &seeds, const GraphFilter &filter, int limit,
                        QHash<qint64, RelationMatch> &found);
    // Of these entities (by id, with their evidence), the `limit` best that are not hubs, each with its
    // evidence times its specificity (its degree's weight).
    QHash<qint64, double> specificEntities(const QHash<qint64, double> &evidence, const GraphFilter &filter, int limit);

    MemoryPrivate &d;
    GraphStore &m_store;
};

} // namespace mneme
