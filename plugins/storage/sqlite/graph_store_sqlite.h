#pragma once

#include "sqlite_storage.h"

#include "plugins/storage/common/graph_write_steps.h"
#include <mneme/core/graph_store.h>

#include <QByteArray>
#include <functional>

namespace mneme {

// The graph tables a store gains at schema 5 (SqliteStorage's migration step 5; a step is never
// edited once released). Entities and relations carry the scope, source and privacy of the record
// they came from; graph_sources lists, per row, the records it came from; graph_history holds every
// change a record's save made, so deleting the record reverts them (GraphStore::revertRecords).
inline constexpr const char kGraphSchemaSql[] = R"SQL(
CREATE TABLE graph_entities(
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    norm TEXT NOT NULL,
    type TEXT NOT NULL DEFAULT '',
    scope TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    private INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    embedding BLOB
);
CREATE INDEX graph_entities_norm ON graph_entities(norm);
CREATE INDEX graph_entities_scope ON graph_entities(scope);

CREATE TABLE graph_relations(
    id INTEGER PRIMARY KEY,
    src INTEGER NOT NULL,
    label TEXT NOT NULL,
    dst INTEGER NOT NULL,
    valid INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    invalidated_at INTEGER,
    invalidated_by TEXT,
    why TEXT,
    scope TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    private INTEGER NOT NULL DEFAULT 0,
    extractor TEXT NOT NULL DEFAULT '',
    embedding BLOB
);
CREATE INDEX graph_relations_src ON graph_relations(src, label);
CREATE INDEX graph_relations_dst ON graph_relations(dst);

CREATE TABLE graph_sources(
    kind INTEGER NOT NULL, -- 0: entity, 1: relation
    row_id INTEGER NOT NULL,
    record_id TEXT NOT NULL,
    PRIMARY KEY (kind, row_id, record_id)
) WITHOUT ROWID;
CREATE INDEX graph_sources_record ON graph_sources(record_id);

CREATE TABLE graph_history(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    record_id TEXT NOT NULL,
    change TEXT NOT NULL CHECK (change IN ('ADD_ENTITY', 'LINK_ENTITY', 'ADD_RELATION', 'LINK_RELATION', 'INVALIDATE')),
    row_id INTEGER NOT NULL,
    at INTEGER NOT NULL
);
CREATE INDEX graph_history_record ON graph_history(record_id, seq);
)SQL";

// The graph tables read and written on the SqliteStorage's own connection, under its mutex (the one
// lock: every method takes it, as SqliteStorage's do; it also guards the two vector indexes below).
// Owned by the SqliteStorage.
//
// The entity and relation embeddings are searched in process: two flat VectorIndex instances (the
// ids, scope, source, privacy and creation time of the rows; an entity's category is the partition it
// resolves in, a relation's is "valid" or "invalid"), read from the tables on the first search, kept in
// step by this store's own writes, and dropped, to be read again on the next search, when a write
// transaction rolls back, when rows are deleted in bulk (revertRecords, reset) or when another
// connection has committed (PRAGMA data_version). Not persisted: reading them is one scan of the
// graph tables, what a search cost before them.
class SqliteGraphStore : public GraphStore, private graphrows::GraphWriteSteps
{
public:
    explicit SqliteGraphStore(SqliteStorage &storage);

    GraphWriteResult write(const std::vector<GraphExtraction> &extractions, const GraphWriteOptions &options) override;
    int revertRecords(const QStringList &recordIds) override;
    void reset(const QString &scopePrefix) override;
    std::vector<GraphChange> changesOf(const QString &recordId) override;
    std::vector<GraphEntity> entities(const GraphFilter &filter, int limit, int offset) override;
    std::vector<GraphEntity> entitiesByName(const QStringList &normalizedNames, const GraphFilter &filter) override;
    std::vector<ScoredEntity> similarEntities(const Embedding &query, const GraphFilter &filter, double minScore,
                                              int limit) override;
    std::vector<GraphRelation> relations(const GraphFilter &filter, int limit) override;
    std::vector<GraphRelation> relationsOf(const std::vector<qint64> &entityIds, int hops, const GraphFilter &filter) override;
    std::vector<ScoredRelation> similarRelations(const Embedding &query, const GraphFilter &filter, double minScore,
                                                 int limit) override;
    // Counted in place: the relations the filter's scopes and privacy see, valid ones only unless it
    // asks for invalid ones or a past time (then every one created by then, an upper bound).
    QHash<qint64, int> degrees(const std::vector<qint64> &entityIds, const GraphFilter &filter) override;

    // SqliteStorage::check's graph part (the caller holds the storage's mutex): relations pointing at
    // missing entities, provenance (graph_sources) pointing at missing rows or records, history
    // entries for missing rows, links and invalidations the history does not hold, and rows no record
    // holds. Adds a sentence per problem to `report`; with `repair`, mends them in one transaction: what
    // points at nothing is deleted, the graph changes of missing records are reverted (as their
    // deletion would have), missing history entries are written, then orphans deleted.
    void checkLocked(bool repair, StoreCheck &report);
    Json dumpRows(Table table, qint64 after, int limit) override;
    void loadRows(Table table, const Json &rows) override;

private:
    using Statement = SqliteStorage::Statement;
    struct Resolved;
    // False on a store older than schema 5 opened read-only (no graph tables): reads find nothing.
    bool hasTables() const;
    // The write and revert steps (graph_write_steps.h), on the connection, in the caller's transaction.
    qint64 entityNamed(const QString &norm, const GraphOrigin &origin) override;
    qint64 entityLike(const Embedding &name, const GraphOrigin &origin, double minScore) override;
    qint64 addEntity(const QString &name, const QString &norm, const QString &type, const GraphOrigin &origin,
                     const Embedding &embedding) override;
    bool isLinked(int kind, qint64 rowId, const QString &recordId) override;
    qint64 validRelation(qint64 src, const QString &label, qint64 dst, const GraphOrigin &origin) override;
    qint64 addRelation(qint64 src, const QString &label, qint64 dst, const GraphOrigin &origin, const GraphTripletInput &t) override;
    std::vector<qint64> otherDestinations(qint64 src, const QString &label, qint64 dst, qint64 except,
                                          const GraphOrigin &origin) override;
    void link(int kind, qint64 rowId, const QString &recordId) override;
    void note(const QString &recordId, GraphChange::Kind kind, qint64 rowId, qint64 atMs) override;
    bool markInvalid(qint64 relationId, const QString &why, const QString &byRecord, qint64 atMs) override;
    std::vector<std::pair<GraphChange::Kind, qint64>> historyOf(const QString &recordId) override;
    void markValidAgain(qint64 relationId, const QString &recordId) override;
    void unlink(int kind, qint64 rowId, const QString &recordId) override;
    void forgetHistory(const QString &recordId) override;
    // SQL conditions for the filter's scopes and privacy over a table (alias t), its arguments appended.
    QByteArray visible(const GraphFilter &filter, std::vector<QByteArray> &args) const;
    std::vector<GraphEntity> readEntities(const QByteArray &where, const std::vector<QByteArray> &args, bool withEmbedding,
                                          const QByteArray &tail = {});
    std::vector<GraphRelation> readRelations(const QByteArray &where, const std::vector<QByteArray> &args,
                                             const GraphFilter &filter, const QByteArray &tail = {});
    void deleteOrphans();
    void inTransaction(const QString &doing, const std::function<void()> &work);

    // The vector indexes, loaded (and current with other connections' commits) on return.
    void ensureIndexes();
    void dropIndexes();
    // Adds a row just written to its index (when loaded: else the next load reads it).
    void indexEntity(qint64 id, const GraphOrigin &origin, const Embedding &embedding);
    void indexRelation(qint64 id, const GraphOrigin &origin, const Embedding &embedding);
    // The index's copy of a relation whose validity changed.
    void reindexValidity(qint64 relationId, bool valid);
    // The filter's scopes and privacy as the indexes read them.
    static RecordFilter indexFilter(const GraphFilter &filter);

    SqliteStorage &m_storage;
    VectorIndex m_entityIndex;
    VectorIndex m_relationIndex;
    qint64 m_indexedDataVersion = -1; // PRAGMA data_version when the indexes were read
};

} // namespace mneme
