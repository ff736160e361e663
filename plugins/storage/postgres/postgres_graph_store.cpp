#include "postgres_graph_store.h"

#include "postgres_result.h"
#include "postgres_storage.h"

#include "plugins/storage/common/graph_rows.h"
#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>
#include <mneme/core/vector_math.h>

#include <QHash>
#include <QMutexLocker>
#include <QSet>
#include <algorithm>
#include <libpq-fe.h>

namespace mneme {

namespace {

using graphrows::idsJson;
using graphrows::kindFromName;
using graphrows::msOf;
using graphrows::normalizedLabel;
using graphrows::textsJson;
using graphrows::timeOf;

constexpr int kEntity = graphrows::kEntityRow;
constexpr int kRelation = graphrows::kRelationRow;

// A row as graph_rows.h reads it: row i of a result.
struct ColumnRow
{
    const pg::Result &r;
    int i;
    qint64 int64(int c) const { return r.int64(i, c); }
    QString text(int c) const { return r.text(i, c); }
    bool isNull(int c) const { return r.isNull(i, c); }
    bool flag(int c) const { return r.boolean(i, c); }
    Embedding embedding(int c) const { return r.embedding(i, c); }
};

// The lock every graph write takes (pg_advisory_xact_lock), beside the schema and embedder locks.
constexpr qint64 kGraphLock = 0x6d6e656d65L + 16; // "mneme" + 16

} // namespace

// One graph operation: leases a connection of the storage's pool for the operation (the thread's
// current connection until it ends), and runs its transaction.
class PostgresGraphStore::Session
{
public:
    explicit Session(PostgresStorage &storage) : m_storage(storage), m_lease(storage) {}

    // A write in one transaction, after the graph writers' advisory lock (rolled back on an exception).
    void transaction(const QString &doing, const std::function<void()> &work)
    {
        exec(m_storage, "BEGIN", {}, doing);
        try {
            PostgresStorage::Params lock;
            lock.add(kGraphLock);
            exec(m_storage, "SELECT pg_advisory_xact_lock($1)", lock, QStringLiteral("waiting for other graph writers"));
            work();
            exec(m_storage, "COMMIT", {}, doing);
        } catch (...) {
            PQclear(PQexec(m_storage.current(), "ROLLBACK"));
            throw;
        }
    }

private:
    PostgresStorage &m_storage;
    PostgresStorage::GraphLease m_lease;
};

// One statement's parameters: each arg() adds one and returns its placeholder ("$3").
class PostgresGraphStore::Statement
{
public:
    explicit Statement(PostgresStorage &storage) : m_storage(storage) {}

    QByteArray arg(std::optional<QByteArray> value, bool binary = false)
    {
        return "$" + QByteArray::number(m_params.add(std::move(value), binary));
    }
    QByteArray arg(const QString &text) { return arg(std::optional(text.toUtf8())); }
    QByteArray arg(qint64 n) { return arg(std::optional(QByteArray::number(n))); }
    QByteArray flag(bool b) { return arg(std::optional(QByteArray(b ? "true" : "false"))) + "::boolean"; }
    QByteArray embedding(const Embedding &e)
    {
        return arg(e.empty() ? std::nullopt : std::optional(pg::embeddingBytes(e)), true) + "::bytea";
    }
    QByteArray json(const QByteArray &array) { return arg(std::optional(array)) + "::jsonb"; }

    Rows run(const QByteArray &sql, const QString &doing) { return exec(m_storage, sql, m_params, doing); }

private:
    PostgresStorage &m_storage;
    PostgresStorage::Params m_params;
};

PostgresGraphStore::Rows PostgresGraphStore::exec(PostgresStorage &storage, const QByteArray &sql,
                                                  const PostgresStorage::Params &params, const QString &doing)
{
    std::vector<const char *> values;
    std::vector<int> lengths, formats;
    for (std::size_t i = 0; i < params.values.size(); ++i) {
        const std::optional<QByteArray> &v = params.values[i];
        values.push_back(v ? v->constData() : nullptr);
        lengths.push_back(v ? int(v->size()) : 0);
        formats.push_back(params.binary[i] ? 1 : 0);
    }
    pg_conn *conn = storage.current();
    // Without parameters, the simple protocol, which runs several statements at once.
    Rows r(values.empty() ? PQexec(conn, sql.constData())
                          : PQexecParams(conn, sql.constData(), int(values.size()), nullptr, values.data(), lengths.data(),
                                         formats.data(), 0));
    const ExecStatusType status = r.status();
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        if (PQstatus(conn) == CONNECTION_BAD)
            PQreset(conn); // the next statement finds the server again, if it came back
        storage.fail(doing, PQerrorMessage(conn));
    }
    return r;
}

PostgresGraphStore::PostgresGraphStore(PostgresStorage &storage) : m_storage(storage) {}

void PostgresGraphStore::run(const QByteArray &sql, const QString &doing)
{
    exec(m_storage, sql, {}, doing);
}

// ---------------------------------------------------------------------------------------------
// Writing

GraphWriteResult PostgresGraphStore::write(const std::vector<GraphExtraction> &extractions, const GraphWriteOptions &options)
{
    Session session(m_storage);
    GraphWriteResult result;
    bool any = false;
    for (const GraphExtraction &x : extractions)
        any = any || !x.entities.empty() || !x.triplets.empty();
    if (!any)
        return result;
    session.transaction(QStringLiteral("writing the graph of %1 records").arg(extractions.size()), [&] {
        for (const GraphExtraction &x : extractions)
            writeExtraction(x, options, result);
    });
    return result;
}

// The partition a record may join, for a statement over a table of entities or relations.
QByteArray PostgresGraphStore::partition(const GraphOrigin &origin, Statement &s)
{
    return " AND scope = " + s.arg(origin.scope) + " AND private = " + s.flag(origin.isPrivate)
         + " AND (NOT private OR source = " + s.arg(origin.source) + ")";
}

qint64 PostgresGraphStore::firstId(Statement &s, const QByteArray &sql, const QString &doing)
{
    const Rows r = s.run(sql, doing);
    return r.rows() ? r.int64(0, 0) : 0;
}

qint64 PostgresGraphStore::entityNamed(const QString &norm, const GraphOrigin &origin)
{
    Statement s(m_storage);
    return firstId(s, "SELECT id FROM mneme_graph_entities WHERE norm = " + s.arg(norm) + partition(origin, s) + " ORDER BY id LIMIT 1",
                   QStringLiteral("looking up an entity"));
}

qint64 PostgresGraphStore::entityLike(const Embedding &name, const GraphOrigin &origin, double minScore)
{
    Statement s(m_storage);
    const Rows r = s.run("SELECT id, embedding FROM mneme_graph_entities WHERE embedding IS NOT NULL" + partition(origin, s)
                             + " ORDER BY id",
                         QStringLiteral("comparing entities"));
    qint64 found = 0;
    double best = minScore;
    for (int i = 0; i < r.rows(); ++i) {
        const Embedding e = r.embedding(i, 1);
        if (e.size() != name.size())
            continue;
        const double c = VectorMath::cosine(e, name);
        if (c >= best) {
            best = c;
            found = r.int64(i, 0);
        }
    }
    return found;
}

qint64 PostgresGraphStore::addEntity(const QString &name, const QString &norm, const QString &type, const GraphOrigin &origin,
                                     const Embedding &embedding)
{
    Statement s(m_storage);
    return firstId(s,
                   "INSERT INTO mneme_graph_entities(name, norm, type, scope, source, private, created_at, embedding) VALUES ("
                       + s.arg(name) + ", " + s.arg(norm) + ", " + s.arg(type) + ", " + s.arg(origin.scope) + ", "
                       + s.arg(origin.source) + ", " + s.flag(origin.isPrivate) + ", " + s.arg(msOf(origin.at)) + ", "
                       + s.embedding(embedding) + ") RETURNING id",
                   QStringLiteral("adding an entity"));
}

bool PostgresGraphStore::isLinked(int kind, qint64 rowId, const QString &recordId)
{
    Statement s(m_storage);
    return firstId(s,
                   "SELECT 1 FROM mneme_graph_sources WHERE kind = " + s.arg(qint64(kind)) + " AND row_id = " + s.arg(rowId)
                       + " AND record_id = " + s.arg(recordId),
                   QStringLiteral("reading the records of a graph row"))
        != 0;
}

qint64 PostgresGraphStore::validRelation(qint64 src, const QString &label, qint64 dst, const GraphOrigin &origin)
{
    Statement s(m_storage);
    return firstId(s,
                   "SELECT id FROM mneme_graph_relations WHERE src = " + s.arg(src) + " AND label = " + s.arg(label)
                       + " AND dst = " + s.arg(dst) + " AND valid" + partition(origin, s) + " ORDER BY id LIMIT 1",
                   QStringLiteral("looking up a relation"));
}

qint64 PostgresGraphStore::addRelation(qint64 src, const QString &label, qint64 dst, const GraphOrigin &origin,
                                       const GraphTripletInput &t)
{
    Statement s(m_storage);
    return firstId(s,
                   "INSERT INTO mneme_graph_relations(src, label, dst, created_at, scope, source, private, embedding, extractor) "
                   "VALUES ("
                       + s.arg(src) + ", " + s.arg(label) + ", " + s.arg(dst) + ", " + s.arg(msOf(origin.at)) + ", "
                       + s.arg(origin.scope) + ", " + s.arg(origin.source) + ", " + s.flag(origin.isPrivate) + ", "
                       + s.embedding(t.embedding) + ", " + s.arg(t.extractor) + ") RETURNING id",
                   QStringLiteral("adding a relation"));
}

std::vector<qint64> PostgresGraphStore::otherDestinations(qint64 src, const QString &label, qint64 dst, qint64 except,
                                                          const GraphOrigin &origin)
{
    Statement s(m_storage);
    const Rows r = s.run("SELECT id FROM mneme_graph_relations WHERE src = " + s.arg(src) + " AND label = " + s.arg(label)
                             + " AND dst <> " + s.arg(dst) + " AND valid AND id <> " + s.arg(except) + partition(origin, s)
                             + " ORDER BY id",
                         QStringLiteral("looking up conflicting relations"));
    std::vector<qint64> out;
    for (int i = 0; i < r.rows(); ++i)
        out.push_back(r.int64(i, 0));
    return out;
}

void PostgresGraphStore::link(int kind, qint64 rowId, const QString &recordId)
{
    Statement s(m_storage);
    s.run("INSERT INTO mneme_graph_sources(kind, row_id, record_id) VALUES (" + s.arg(qint64(kind)) + ", " + s.arg(rowId) + ", "
              + s.arg(recordId) + ") ON CONFLICT DO NOTHING",
          QStringLiteral("linking a graph row to its record"));
}

void PostgresGraphStore::note(const QString &recordId, GraphChange::Kind kind, qint64 rowId, qint64 atMs)
{
    Statement s(m_storage);
    s.run("INSERT INTO mneme_graph_history(record_id, change, row_id, at) VALUES (" + s.arg(recordId) + ", "
              + s.arg(GraphChange::kindName(kind)) + ", " + s.arg(rowId) + ", " + s.arg(atMs) + ")",
          QStringLiteral("writing the graph history"));
}

bool PostgresGraphStore::markInvalid(qint64 relationId, const QString &why, const QString &byRecord, qint64 atMs)
{
    Statement s(m_storage);
    return firstId(s,
                   "UPDATE mneme_graph_relations SET valid = false, invalidated_at = " + s.arg(atMs) + ", invalidated_by = "
                       + s.arg(byRecord) + ", why = " + s.arg(why) + " WHERE id = " + s.arg(relationId) + " AND valid RETURNING id",
                   QStringLiteral("invalidating a relation"))
        != 0;
}

std::vector<std::pair<GraphChange::Kind, qint64>> PostgresGraphStore::historyOf(const QString &recordId)
{
    Statement s(m_storage);
    const Rows r = s.run("SELECT change, row_id FROM mneme_graph_history WHERE record_id = " + s.arg(recordId) + " ORDER BY seq DESC",
                         QStringLiteral("reading the graph history"));
    std::vector<std::pair<GraphChange::Kind, qint64>> out;
    for (int i = 0; i < r.rows(); ++i)
        out.emplace_back(kindFromName(r.text(i, 0)), r.int64(i, 1));
    return out;
}

void PostgresGraphStore::markValidAgain(qint64 relationId, const QString &recordId)
{
    Statement s(m_storage);
    s.run("UPDATE mneme_graph_relations SET valid = true, invalidated_at = NULL, invalidated_by = NULL, why = NULL WHERE id = "
              + s.arg(relationId) + " AND invalidated_by = " + s.arg(recordId),
          QStringLiteral("validating a relation again"));
}

void PostgresGraphStore::unlink(int kind, qint64 rowId, const QString &recordId)
{
    Statement s(m_storage);
    s.run("DELETE FROM mneme_graph_sources WHERE kind = " + s.arg(qint64(kind)) + " AND row_id = " + s.arg(rowId)
              + " AND record_id = " + s.arg(recordId),
          QStringLiteral("unlinking a graph row"));
}

void PostgresGraphStore::forgetHistory(const QString &recordId)
{
    Statement s(m_storage);
    s.run("DELETE FROM mneme_graph_history WHERE record_id = " + s.arg(recordId),
          QStringLiteral("clearing the graph history of a record"));
}

int PostgresGraphStore::revertRecords(const QStringList &recordIds)
{
    Session session(m_storage);
    if (recordIds.isEmpty())
        return 0;
    int reverted = 0;
    session.transaction(QStringLiteral("reverting the graph of %1 records").arg(recordIds.size()), [&] {
        for (const QString &recordId : recordIds)
            reverted += revertRecord(recordId);
        deleteOrphans();
    });
    return reverted;
}

void PostgresGraphStore::deleteOrphans()
{
    const QString doing = QStringLiteral("deleting graph rows no record holds");
    run("DELETE FROM mneme_graph_relations t WHERE NOT EXISTS "
        "(SELECT 1 FROM mneme_graph_sources s WHERE s.kind = 1 AND s.row_id = t.id)",
        doing);
    run("DELETE FROM mneme_graph_entities t WHERE NOT EXISTS "
        "(SELECT 1 FROM mneme_graph_sources s WHERE s.kind = 0 AND s.row_id = t.id) "
        "AND NOT EXISTS (SELECT 1 FROM mneme_graph_relations r WHERE r.src = t.id OR r.dst = t.id)",
        doing);
}

void PostgresGraphStore::reset(const QString &scopePrefix)
{
    Session session(m_storage);
    const QString prefix = ScopePath::normalize(scopePrefix);
    session.transaction(QStringLiteral("deleting the graph of %1").arg(prefix), [&] {
        const QString doing = QStringLiteral("deleting the graph");
        if (prefix == QLatin1String("/")) {
            run("TRUNCATE mneme_graph_relations, mneme_graph_entities, mneme_graph_sources, mneme_graph_history", doing);
            return;
        }
        GraphFilter below;
        below.scopes = {prefix};
        for (const auto &[table, kind, changes] :
             {std::tuple{"mneme_graph_relations", kRelation, "('ADD_RELATION', 'LINK_RELATION', 'INVALIDATE')"},
              std::tuple{"mneme_graph_entities", kEntity, "('ADD_ENTITY', 'LINK_ENTITY')"}}) {
            Statement s(m_storage);
            const QByteArray ids = QByteArray("SELECT t.id FROM ") + table + " t WHERE " + visible(below, s);
            // One statement of three data-modifying parts, all seeing the rows before any is deleted.
            s.run("WITH doomed AS (" + ids + "), h AS (DELETE FROM mneme_graph_history WHERE change IN " + changes
                      + " AND row_id IN (SELECT id FROM doomed)), src AS (DELETE FROM mneme_graph_sources WHERE kind = "
                      + QByteArray::number(kind) + " AND row_id IN (SELECT id FROM doomed)) DELETE FROM " + table
                      + " WHERE id IN (SELECT id FROM doomed)",
                  doing);
        }
        // Relations elsewhere that pointed at a deleted entity.
        run("DELETE FROM mneme_graph_relations r WHERE NOT EXISTS (SELECT 1 FROM mneme_graph_entities e WHERE e.id = r.src) "
            "OR NOT EXISTS (SELECT 1 FROM mneme_graph_entities e WHERE e.id = r.dst)",
            doing);
        run("DELETE FROM mneme_graph_sources s WHERE kind = 1 AND NOT EXISTS "
            "(SELECT 1 FROM mneme_graph_relations r WHERE r.id = s.row_id)",
            doing);
    });
}

// ---------------------------------------------------------------------------------------------
// Reading

QByteArray PostgresGraphStore::visible(const GraphFilter &filter, Statement &s) const
{
    QByteArray sql("true");
    QStringList prefixes;
    for (const QString &scope : filter.scopes)
        prefixes << ScopePath::normalize(scope);
    if (!prefixes.isEmpty() && !prefixes.contains(QStringLiteral("/"))) {
        QList<QByteArray> any;
        // At the prefix or below it: "/a" and "/a/..." ('0' follows '/'), by the scope index.
        for (const QString &p : std::as_const(prefixes))
            any << "t.scope = " + s.arg(p) + " OR (t.scope COLLATE \"C\" >= " + s.arg(p + QLatin1Char('/'))
                       + " AND t.scope COLLATE \"C\" < " + s.arg(p + QLatin1Char('0')) + ")";
        sql += " AND (" + any.join(" OR ") + ")";
    }
    if (filter.applyPrivacy && !filter.includePrivate)
        sql += " AND (NOT t.private OR (t.source <> '' AND t.source = " + s.arg(filter.source) + "))";
    return sql;
}

std::vector<GraphEntity> PostgresGraphStore::readEntities(Statement &s, const QByteArray &where, bool withEmbedding,
                                                          const QByteArray &tail)
{
    const Rows r = s.run("SELECT " + QByteArray(graphrows::kEntityReadColumns)
                             + ", (SELECT string_agg(g.record_id, chr(31) ORDER BY g.record_id) FROM mneme_graph_sources g "
                               "WHERE g.kind = 0 AND g.row_id = t.id), "
                             + QByteArray(withEmbedding ? "t.embedding" : "NULL::bytea") + " FROM mneme_graph_entities t WHERE " + where
                             + tail,
                         QStringLiteral("reading entities"));
    std::vector<GraphEntity> out;
    for (int i = 0; i < r.rows(); ++i)
        out.push_back(graphrows::entityOf(ColumnRow{r, i}, withEmbedding));
    return out;
}

std::vector<GraphRelation> PostgresGraphStore::readRelations(Statement &s, const QByteArray &where, const GraphFilter &filter,
                                                             const QByteArray &tail)
{
    QByteArray condition = visible(filter, s) + " AND " + where;
    if (!filter.includeInvalid && !filter.asOf.isValid())
        condition += " AND t.valid";
    const Rows r = s.run("SELECT " + QByteArray(graphrows::kRelationReadColumns)
                             + ", (SELECT string_agg(g.record_id, chr(31) ORDER BY g.record_id) FROM mneme_graph_sources g "
                               "WHERE g.kind = 1 AND g.row_id = t.id), t.extractor FROM mneme_graph_relations t "
                               "JOIN mneme_graph_entities a ON a.id = t.src JOIN mneme_graph_entities b ON b.id = t.dst WHERE "
                             + condition + tail,
                         QStringLiteral("reading relations"));
    std::vector<GraphRelation> out;
    for (int i = 0; i < r.rows(); ++i) {
        GraphRelation rel = graphrows::relationOf(ColumnRow{r, i});
        if (filter.admits(rel))
            out.push_back(std::move(rel));
    }
    return out;
}

std::vector<GraphChange> PostgresGraphStore::changesOf(const QString &recordId)
{
    Session session(m_storage);
    Statement s(m_storage);
    const Rows r =
        s.run("SELECT seq, change, row_id, at FROM mneme_graph_history WHERE record_id = " + s.arg(recordId) + " ORDER BY seq",
              QStringLiteral("reading the graph history"));
    std::vector<GraphChange> out;
    for (int i = 0; i < r.rows(); ++i) {
        GraphChange c;
        c.seq = r.int64(i, 0);
        c.recordId = recordId;
        c.kind = kindFromName(r.text(i, 1));
        c.rowId = r.int64(i, 2);
        c.at = timeOf(r.int64(i, 3));
        out.push_back(c);
    }
    return out;
}

std::vector<GraphEntity> PostgresGraphStore::entities(const GraphFilter &filter, int limit, int offset)
{
    Session session(m_storage);
    Statement s(m_storage);
    const QByteArray where = visible(filter, s);
    QByteArray tail = " ORDER BY t.norm COLLATE \"C\", t.id";
    if (limit >= 0)
        tail += " LIMIT " + QByteArray::number(limit);
    tail += " OFFSET " + QByteArray::number(std::max(offset, 0));
    return readEntities(s, where, false, tail);
}

std::vector<GraphEntity> PostgresGraphStore::entitiesByName(const QStringList &normalizedNames, const GraphFilter &filter)
{
    Session session(m_storage);
    if (normalizedNames.isEmpty())
        return {};
    Statement s(m_storage);
    const QByteArray where = "t.norm IN (SELECT jsonb_array_elements_text(" + s.json(textsJson(normalizedNames)) + ")) AND "
                           + visible(filter, s);
    return readEntities(s, where, false, " ORDER BY t.norm COLLATE \"C\", t.id");
}

std::vector<ScoredEntity> PostgresGraphStore::similarEntities(const Embedding &query, const GraphFilter &filter, double minScore,
                                                              int limit)
{
    Session session(m_storage);
    std::vector<ScoredEntity> out;
    if (query.empty() || limit <= 0)
        return out;
    Statement s(m_storage);
    const QByteArray where = "t.embedding IS NOT NULL AND " + visible(filter, s);
    for (GraphEntity &e : readEntities(s, where, true)) {
        if (e.embedding.size() != query.size())
            continue;
        const double c = VectorMath::cosine(e.embedding, query);
        if (c >= minScore) {
            e.embedding.clear();
            out.push_back({std::move(e), c});
        }
    }
    std::sort(out.begin(), out.end(), [](const ScoredEntity &a, const ScoredEntity &b) {
        return a.score != b.score ? a.score > b.score : a.entity.id < b.entity.id;
    });
    if (int(out.size()) > limit)
        out.resize(std::size_t(limit));
    return out;
}

std::vector<GraphRelation> PostgresGraphStore::relations(const GraphFilter &filter, int limit)
{
    Session session(m_storage);
    Statement s(m_storage);
    std::vector<GraphRelation> out = readRelations(s, "true", filter, " ORDER BY t.created_at DESC, t.id DESC");
    if (limit >= 0 && int(out.size()) > limit)
        out.resize(std::size_t(limit));
    return out;
}

std::vector<GraphRelation> PostgresGraphStore::relationsOf(const std::vector<qint64> &entityIds, int hops, const GraphFilter &filter)
{
    Session session(m_storage);
    std::vector<GraphRelation> out;
    QSet<qint64> seenRelations;
    QSet<qint64> reached(entityIds.begin(), entityIds.end());
    std::vector<qint64> frontier = entityIds;
    for (int hop = 0; hop < std::max(hops, 1) && !frontier.empty(); ++hop) {
        Statement s(m_storage);
        const QByteArray ids = s.json(idsJson(frontier));
        frontier.clear();
        const QByteArray where = "(t.src IN (SELECT jsonb_array_elements_text(" + ids + ")::bigint) OR t.dst IN "
                                                                                        "(SELECT jsonb_array_elements_text("
                               + ids + ")::bigint))";
        for (GraphRelation &r : readRelations(s, where, filter, " ORDER BY t.created_at DESC, t.id DESC")) {
            if (seenRelations.contains(r.id))
                continue;
            seenRelations.insert(r.id);
            for (qint64 next : {r.sourceId, r.destinationId})
                if (!reached.contains(next)) {
                    reached.insert(next);
                    frontier.push_back(next);
                }
            out.push_back(std::move(r));
        }
    }
    return out;
}

std::vector<ScoredRelation> PostgresGraphStore::similarRelations(const Embedding &query, const GraphFilter &filter, double minScore,
                                                                 int limit)
{
    Session session(m_storage);
    std::vector<ScoredRelation> out;
    if (query.empty() || limit <= 0)
        return out;
    // The embeddings first (a narrow scan), then the rows of those close enough.
    std::vector<std::pair<double, qint64>> close;
    {
        Statement s(m_storage);
        QByteArray where = "t.embedding IS NOT NULL AND " + visible(filter, s);
        if (!filter.includeInvalid && !filter.asOf.isValid())
            where += " AND t.valid";
        const Rows r =
            s.run("SELECT t.id, t.embedding FROM mneme_graph_relations t WHERE " + where, QStringLiteral("comparing relations"));
        for (int i = 0; i < r.rows(); ++i) {
            const Embedding e = r.embedding(i, 1);
            if (e.size() != query.size())
                continue;
            const double c = VectorMath::cosine(e, query);
            if (c >= minScore)
                close.emplace_back(c, r.int64(i, 0));
        }
    }
    std::sort(close.begin(), close.end(),
              [](const auto &a, const auto &b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    std::vector<qint64> ids;
    QHash<qint64, double> score;
    for (const auto &[c, id] : close) {
        if (int(ids.size()) >= 4 * limit)
            break;
        ids.push_back(id);
        score.insert(id, c);
    }
    if (ids.empty())
        return out;
    Statement s(m_storage);
    const QByteArray where = "t.id IN (SELECT jsonb_array_elements_text(" + s.json(idsJson(ids)) + ")::bigint)";
    for (GraphRelation &r : readRelations(s, where, filter))
        out.push_back({std::move(r), score.value(r.id)});
    std::sort(out.begin(), out.end(), [](const ScoredRelation &a, const ScoredRelation &b) {
        return a.score != b.score ? a.score > b.score : a.relation.id < b.relation.id;
    });
    if (int(out.size()) > limit)
        out.resize(std::size_t(limit));
    return out;
}

// ---------------------------------------------------------------------------------------------
// Moving a graph between stores

namespace {

std::optional<QByteArray> textAt(const Json &row, const char *key)
{
    const Json &v = row.at(key);
    return v.is_null() ? std::nullopt : std::optional(QByteArray::fromStdString(v.get<std::string>()));
}

std::optional<QByteArray> numberAt(const Json &row, const char *key)
{
    const Json &v = row.at(key);
    return v.is_null() ? std::nullopt : std::optional(QByteArray::number(v.get<qint64>()));
}

} // namespace

Json PostgresGraphStore::dumpRows(Table table, qint64 after, int limit)
{
    Session session(m_storage);
    Json out = Json::array();
    if (limit <= 0)
        return out;
    Statement s(m_storage);
    const QByteArray page = " > " + s.arg(after) + " ORDER BY 1 LIMIT " + s.arg(qint64(limit));
    const auto readAll = [&](const QByteArray &sql, const QString &doing, Json (*toJson)(const ColumnRow &)) {
        const Rows r = s.run(sql, doing);
        for (int i = 0; i < r.rows(); ++i)
            out.push_back(toJson(ColumnRow{r, i}));
    };
    switch (table) {
    case Table::Entities:
        readAll("SELECT " + QByteArray(graphrows::kEntityDumpColumns)
                    + ", (SELECT string_agg(g.record_id, chr(31) ORDER BY g.record_id) FROM mneme_graph_sources g "
                      "WHERE g.kind = 0 AND g.row_id = t.id) FROM mneme_graph_entities t WHERE t.id"
                    + page,
                QStringLiteral("reading entities"), graphrows::entityDumpJson<ColumnRow>);
        break;
    case Table::Relations:
        readAll("SELECT " + QByteArray(graphrows::kRelationDumpColumns)
                    + ", (SELECT string_agg(g.record_id, chr(31) ORDER BY g.record_id) FROM mneme_graph_sources g "
                      "WHERE g.kind = 1 AND g.row_id = t.id) FROM mneme_graph_relations t WHERE t.id"
                    + page,
                QStringLiteral("reading relations"), graphrows::relationDumpJson<ColumnRow>);
        break;
    case Table::History:
        readAll("SELECT " + QByteArray(graphrows::kHistoryDumpColumns) + " FROM mneme_graph_history WHERE seq" + page,
                QStringLiteral("reading the graph history"), graphrows::historyDumpJson<ColumnRow>);
        break;
    }
    return out;
}

void PostgresGraphStore::loadRows(Table table, const Json &rows)
{
    Session session(m_storage);
    if (!rows.is_array())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("graph rows to load must be a JSON array"));
    if (rows.empty())
        return;
    const auto linkAll = [&](int kind, const Json &row) {
        for (const Json &id : row.at("record_ids"))
            link(kind, row.at("id").get<qint64>(), QString::fromStdString(id.get<std::string>()));
    };
    const auto embeddingAt = [](const Json &row) { return row.at("embedding").is_null() ? Embedding() : row.at("embedding").get<Embedding>(); };
    session.transaction(QStringLiteral("loading %1 graph rows").arg(rows.size()), [&] {
        try {
            for (const Json &row : rows) {
                Statement s(m_storage);
                switch (table) {
                case Table::Entities:
                    s.run("INSERT INTO mneme_graph_entities(id, name, norm, type, scope, source, private, created_at, embedding) "
                          "VALUES ("
                              + s.arg(numberAt(row, "id")) + ", " + s.arg(textAt(row, "name")) + ", " + s.arg(textAt(row, "norm"))
                              + ", " + s.arg(textAt(row, "type")) + ", " + s.arg(textAt(row, "scope")) + ", "
                              + s.arg(textAt(row, "source")) + ", " + s.flag(row.at("private").get<bool>()) + ", "
                              + s.arg(numberAt(row, "created_at")) + ", " + s.embedding(embeddingAt(row)) + ") ON CONFLICT DO NOTHING",
                          QStringLiteral("loading an entity"));
                    linkAll(kEntity, row);
                    break;
                case Table::Relations:
                    s.run("INSERT INTO mneme_graph_relations(id, src, label, dst, valid, created_at, invalidated_at, invalidated_by, "
                          "why, scope, source, private, extractor, embedding) VALUES ("
                              + s.arg(numberAt(row, "id")) + ", " + s.arg(numberAt(row, "src")) + ", " + s.arg(textAt(row, "label"))
                              + ", " + s.arg(numberAt(row, "dst")) + ", " + s.flag(row.at("valid").get<bool>()) + ", "
                              + s.arg(numberAt(row, "created_at")) + ", " + s.arg(numberAt(row, "invalidated_at")) + ", "
                              + s.arg(textAt(row, "invalidated_by")) + ", " + s.arg(textAt(row, "why")) + ", "
                              + s.arg(textAt(row, "scope")) + ", " + s.arg(textAt(row, "source")) + ", "
                              + s.flag(row.at("private").get<bool>()) + ", " + s.arg(textAt(row, "extractor")) + ", "
                              + s.embedding(embeddingAt(row)) + ") ON CONFLICT DO NOTHING",
                          QStringLiteral("loading a relation"));
                    linkAll(kRelation, row);
                    break;
                case Table::History:
                    s.run("INSERT INTO mneme_graph_history(seq, record_id, change, row_id, at) VALUES (" + s.arg(numberAt(row, "seq"))
                              + ", " + s.arg(textAt(row, "record_id")) + ", " + s.arg(textAt(row, "change")) + ", "
                              + s.arg(numberAt(row, "row_id")) + ", " + s.arg(numberAt(row, "at")) + ") ON CONFLICT DO NOTHING",
                          QStringLiteral("loading the graph history"));
                    break;
                }
            }
        } catch (const Json::exception &e) {
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("a graph row to load is malformed: %1").arg(QString::fromUtf8(e.what())));
        }
        // Rows written later get keys after the loaded ones.
        const auto [name, key] = table == Table::Entities  ? std::pair{"mneme_graph_entities", "id"}
                               : table == Table::Relations ? std::pair{"mneme_graph_relations", "id"}
                                                           : std::pair{"mneme_graph_history", "seq"};
        run(QByteArray("SELECT setval(pg_get_serial_sequence('") + name + "', '" + key + "'), (SELECT coalesce(max(" + key
                + "), 0) + 1 FROM " + name + "), false)",
            QStringLiteral("moving the graph keys on"));
    });
}

} // namespace mneme
