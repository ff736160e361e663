#pragma once

#include "postgres_storage.h"

#include "plugins/storage/common/graph_write_steps.h"

#include <mneme/core/graph_store.h>

#include <QByteArray>
#include <QList>
#include <functional>

namespace mneme {

// The graph tables of a PostgreSQL store (PostgresStorage's migration step "graph"; a step is never
// edited once released): the same rows as the SQLite store's graph tables, with the mneme_ prefix.
// Entities and relations carry the scope, source and privacy of the record they came from;
// mneme_graph_sources lists, per row, the records it came from; mneme_graph_history holds every
// change a record's save made, so deleting the record reverts them (GraphStore::revertRecords).
inline constexpr const char kPostgresGraphSchemaSql[] = R"sql(
CREATE TABLE mneme_graph_entities (
    id bigserial PRIMARY KEY,
    name text NOT NULL,
    norm text NOT NULL,
    type text NOT NULL DEFAULT '',
    scope text NOT NULL,
    source text NOT NULL DEFAULT '',
    private boolean NOT NULL DEFAULT false,
    created_at bigint NOT NULL,
    embedding bytea
);
CREATE INDEX mneme_graph_entities_norm ON mneme_graph_entities (norm);
CREATE INDEX mneme_graph_entities_scope ON mneme_graph_entities (scope text_pattern_ops);
CREATE TABLE mneme_graph_relations (
    id bigserial PRIMARY KEY,
    src bigint NOT NULL,
    label text NOT NULL,
    dst bigint NOT NULL,
    valid boolean NOT NULL DEFAULT true,
    created_at bigint NOT NULL,
    invalidated_at bigint,
    invalidated_by text,
    why text,
    scope text NOT NULL,
    source text NOT NULL DEFAULT '',
    private boolean NOT NULL DEFAULT false,
    extractor text NOT NULL DEFAULT '',
    embedding bytea
);
CREATE INDEX mneme_graph_relations_src ON mneme_graph_relations (src, label);
CREATE INDEX mneme_graph_relations_dst ON mneme_graph_relations (dst);
CREATE INDEX mneme_graph_relations_scope ON mneme_graph_relations (scope text_pattern_ops);
CREATE TABLE mneme_graph_sources (
    kind smallint NOT NULL, -- 0: entity, 1: relation
    row_id bigint NOT NULL,
    record_id text NOT NULL,
    PRIMARY KEY (kind, row_id, record_id)
);
CREATE INDEX mneme_graph_sources_record ON mneme_graph_sources (record_id);
CREATE TABLE mneme_graph_history (
    seq bigserial PRIMARY KEY,
    record_id text NOT NULL,
    change text NOT NULL CHECK (change IN ('ADD_ENTITY', 'LINK_ENTITY', 'ADD_RELATION', 'LINK_RELATION', 'INVALIDATE')),
    row_id bigint NOT NULL,
    at bigint NOT NULL
);
CREATE INDEX mneme_graph_history_record ON mneme_graph_history (record_id, seq);
)sql";

// The graph tables read and written on the PostgresStorage's own connection, under its mutex (the
// one lock: every method takes it, as PostgresStorage's do). Writers on other connections (other
// processes, other hosts) are serialised by a transaction advisory lock every graph write takes
// first, so two of them never resolve the same new entity twice. Owned by the PostgresStorage.
class PostgresGraphStore : public GraphStore, private graphrows::GraphWriteSteps
{
public:
    explicit PostgresGraphStore(PostgresStorage &storage);

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
    Json dumpRows(Table table, qint64 after, int limit) override;
    void loadRows(Table table, const Json &rows) override;

private:
    using Rows = pg::Result;
    class Session;
    class Statement;
    // The write and revert steps (graph_write_steps.h), each a statement on the leased connection, in
    // the Session's transaction.
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
    static QByteArray partition(const GraphOrigin &origin, Statement &s);
    // The first column of the statement's first row as an id; 0 without a row.
    static qint64 firstId(Statement &s, const QByteArray &sql, const QString &doing);
    void deleteOrphans();
    // Plumbing on the storage's connection (the caller holds a Session). The statement's result rows;
    // Error(Storage) with the server's message on failure.
    static Rows exec(PostgresStorage &storage, const QByteArray &sql, const PostgresStorage::Params &params,
                     const QString &doing);
    void run(const QByteArray &sql, const QString &doing);
    // SQL conditions for the filter's scopes and privacy over a table aliased t, its parameters added.
    QByteArray visible(const GraphFilter &filter, Statement &s) const;
    std::vector<GraphEntity> readEntities(Statement &s, const QByteArray &where, bool withEmbedding, const QByteArray &tail = {});
    std::vector<GraphRelation> readRelations(Statement &s, const QByteArray &where, const GraphFilter &filter,
                                             const QByteArray &tail = {});

    PostgresStorage &m_storage;
};

} // namespace mneme
