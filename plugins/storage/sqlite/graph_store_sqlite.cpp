#include "graph_store_sqlite.h"

#include "sqlite_statement.h"

#include "plugins/storage/common/graph_rows.h"
#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>

#include <QMutexLocker>
#include <QSet>
#include <algorithm>
#include <sqlite3.h>

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

// A row as graph_rows.h reads it: the statement's current row.
template<class Statement>
struct ColumnRow
{
    const Statement &q;
    qint64 int64(int c) const { return q.int64(c); }
    QString text(int c) const { return q.text(c); }
    bool isNull(int c) const { return q.isNull(c); }
    bool flag(int c) const { return q.int64(c) != 0; }
    Embedding embedding(int c) const { return q.embedding(c); }
};

// The partition an entity resolves in (its category in the entity index): the scope, the privacy
// and, for a private entity, the source.
QString partitionOf(const QString &scope, bool isPrivate, const QString &source)
{
    return isPrivate ? scope + QChar(31) + QLatin1Char('1') + QChar(31) + source : scope + QChar(31) + QLatin1Char('0');
}

// A relation's category in the relation index.
QString validityOf(bool valid)
{
    return valid ? QStringLiteral("valid") : QStringLiteral("invalid");
}

VectorIndex::Item indexItem(qint64 id, const QString &scope, const QString &source, bool isPrivate, qint64 createdMs,
                            const QString &category)
{
    VectorIndex::Item item;
    item.rowid = id;
    item.scope = scope;
    item.source = source;
    item.isPrivate = isPrivate;
    item.hasCreated = true;
    item.createdMs = createdMs;
    item.categories = {category};
    return item;
}

// The hits of an index search (best first) scoring at least minScore: their rows, and each one's score.
struct Matches
{
    std::vector<qint64> ids;
    QHash<qint64, double> score;
};

Matches matches(const std::vector<VectorIndex::Hit> &hits, double minScore)
{
    Matches out;
    for (const VectorIndex::Hit &h : hits) {
        if (h.score < minScore)
            break;
        out.ids.push_back(h.rowid);
        out.score.insert(h.rowid, h.score);
    }
    return out;
}

// Adds the item with its vector; an empty index without a length takes the vector's, a vector of
// another length is left out (as the scans it replaces skipped it).
void put(VectorIndex &index, const VectorIndex::Item &item, const Embedding &e)
{
    if (e.empty())
        return;
    if (int(e.size()) != index.dimension()) {
        if (index.size() != 0 || index.dimension() != 0)
            return;
        index.reset(int(e.size()));
    }
    index.upsert(item, e.data());
}

} // namespace

SqliteGraphStore::SqliteGraphStore(SqliteStorage &storage)
    : m_storage(storage)
{
}

bool SqliteGraphStore::hasTables() const
{
    return m_storage.m_version >= 5;
}

void SqliteGraphStore::inTransaction(const QString &doing, const std::function<void()> &work)
{
    m_storage.ensureOpen();
    m_storage.ensureWritable();
    if (!hasTables())
        throw Error(ErrorKind::ReadOnlyStore,
                    QStringLiteral("the store %1 predates graph memory (schema %2); open it writable once to upgrade it")
                        .arg(m_storage.location())
                        .arg(m_storage.m_version));
    m_storage.exec("BEGIN IMMEDIATE", QStringLiteral("starting a graph write"));
    try {
        work();
        m_storage.exec("COMMIT", QStringLiteral("committing %1").arg(doing));
    } catch (...) {
        sqlite3_exec(m_storage.m_db, "ROLLBACK", nullptr, nullptr, nullptr);
        dropIndexes(); // they may hold rows the rollback removed
        throw;
    }
}

// ---------------------------------------------------------------------------------------------
// The vector indexes

void SqliteGraphStore::ensureIndexes()
{
    {
        Statement version(m_storage, "PRAGMA data_version");
        version.step(QStringLiteral("checking for graph changes by other connections"));
        const qint64 v = version.int64(0);
        if (v != m_indexedDataVersion) {
            dropIndexes();
            m_indexedDataVersion = v;
        }
    }
    if (m_entityIndex.isLoaded())
        return;
    const int dimension = m_storage.m_binding ? m_storage.m_binding->dimension : 0;
    m_entityIndex.reset(dimension);
    m_relationIndex.reset(dimension);
    if (!hasTables())
        return;
    try {
        Statement e(m_storage, "SELECT id, scope, source, private, created_at, embedding FROM graph_entities "
                               "WHERE embedding IS NOT NULL");
        while (e.step(QStringLiteral("reading the entity embeddings"))) {
            const bool isPrivate = e.int64(3) != 0;
            put(m_entityIndex, indexItem(e.int64(0), e.text(1), e.text(2), isPrivate, e.int64(4), partitionOf(e.text(1), isPrivate, e.text(2))),
                e.embedding(5));
        }
        Statement r(m_storage, "SELECT id, scope, source, private, created_at, valid, embedding FROM graph_relations "
                               "WHERE embedding IS NOT NULL");
        while (r.step(QStringLiteral("reading the relation embeddings")))
            put(m_relationIndex, indexItem(r.int64(0), r.text(1), r.text(2), r.int64(3) != 0, r.int64(4), validityOf(r.int64(5) != 0)),
                r.embedding(6));
    } catch (...) {
        dropIndexes();
        throw;
    }
}

void SqliteGraphStore::dropIndexes()
{
    m_entityIndex.invalidate();
    m_relationIndex.invalidate();
}

void SqliteGraphStore::indexEntity(qint64 id, const GraphOrigin &origin, const Embedding &embedding)
{
    if (m_entityIndex.isLoaded())
        put(m_entityIndex,
            indexItem(id, origin.scope, origin.source, origin.isPrivate, msOf(origin.at), partitionOf(origin.scope, origin.isPrivate, origin.source)),
            embedding);
}

void SqliteGraphStore::indexRelation(qint64 id, const GraphOrigin &origin, const Embedding &embedding)
{
    if (m_relationIndex.isLoaded())
        put(m_relationIndex, indexItem(id, origin.scope, origin.source, origin.isPrivate, msOf(origin.at), validityOf(true)), embedding);
}

void SqliteGraphStore::reindexValidity(qint64 relationId, bool valid)
{
    if (!m_relationIndex.isLoaded() || !m_relationIndex.contains(relationId))
        return;
    Statement q(m_storage, "SELECT scope, source, private, created_at FROM graph_relations WHERE id = ?");
    q.bind(1, relationId);
    if (q.step(QStringLiteral("reading a relation")))
        m_relationIndex.updateAttributes(indexItem(relationId, q.text(0), q.text(1), q.int64(2) != 0, q.int64(3), validityOf(valid)));
}

RecordFilter SqliteGraphStore::indexFilter(const GraphFilter &filter)
{
    RecordFilter f;
    for (const QString &s : filter.scopes)
        f.scopes << ScopePath::normalize(s);
    if (f.scopes.contains(QStringLiteral("/")))
        f.scopes.clear();
    f.applyPrivacy = filter.applyPrivacy;
    f.includePrivate = filter.includePrivate;
    f.source = filter.source;
    return f;
}

// ---------------------------------------------------------------------------------------------
// Writing

GraphWriteResult SqliteGraphStore::write(const std::vector<GraphExtraction> &extractions, const GraphWriteOptions &options)
{
    QMutexLocker lock(&m_storage.m_mutex);
    GraphWriteResult result;
    bool any = false;
    for (const GraphExtraction &x : extractions)
        any = any || !x.entities.empty() || !x.triplets.empty();
    if (!any)
        return result;
    inTransaction(QStringLiteral("the graph of %1 records").arg(extractions.size()), [&] {
        ensureIndexes(); // entities resolve by similarity through it
        for (const GraphExtraction &x : extractions)
            writeExtraction(x, options, result);
    });
    return result;
}

qint64 SqliteGraphStore::entityNamed(const QString &norm, const GraphOrigin &origin)
{
    Statement q(m_storage, "SELECT id FROM graph_entities WHERE norm = ? AND scope = ? AND private = ? "
                           "AND (private = 0 OR source = ?) ORDER BY id LIMIT 1");
    q.bindText(1, norm).bindText(2, origin.scope).bind(3, origin.isPrivate).bindText(4, origin.source);
    return q.step(QStringLiteral("looking up an entity")) ? q.int64(0) : 0;
}

qint64 SqliteGraphStore::entityLike(const Embedding &name, const GraphOrigin &origin, double minScore)
{
    if (int(name.size()) != m_entityIndex.dimension())
        return 0;
    RecordFilter same;
    same.categories = {partitionOf(origin.scope, origin.isPrivate, origin.source)};
    const std::vector<VectorIndex::Hit> best = m_entityIndex.search(name.data(), same, 1);
    return !best.empty() && best.front().score >= minScore ? best.front().rowid : 0;
}

qint64 SqliteGraphStore::addEntity(const QString &name, const QString &norm, const QString &type, const GraphOrigin &origin,
                                   const Embedding &embedding)
{
    Statement insert(m_storage, "INSERT INTO graph_entities(name, norm, type, scope, source, private, created_at, embedding) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bindText(1, name).bindText(2, norm).bindText(3, type).bindText(4, origin.scope);
    insert.bindText(5, origin.source).bind(6, origin.isPrivate).bind(7, msOf(origin.at)).bindEmbedding(8, embedding);
    insert.run(QStringLiteral("adding an entity"));
    const qint64 id = sqlite3_last_insert_rowid(m_storage.m_db);
    indexEntity(id, origin, embedding);
    return id;
}

bool SqliteGraphStore::isLinked(int kind, qint64 rowId, const QString &recordId)
{
    Statement q(m_storage, "SELECT 1 FROM graph_sources WHERE kind = ? AND row_id = ? AND record_id = ?");
    q.bind(1, kind).bind(2, rowId).bindText(3, recordId);
    return q.step(QStringLiteral("reading the records of a graph row"));
}

qint64 SqliteGraphStore::validRelation(qint64 src, const QString &label, qint64 dst, const GraphOrigin &origin)
{
    Statement q(m_storage, "SELECT id FROM graph_relations WHERE src = ? AND label = ? AND dst = ? AND valid = 1 "
                           "AND scope = ? AND private = ? AND (private = 0 OR source = ?) ORDER BY id LIMIT 1");
    q.bind(1, src).bindText(2, label).bind(3, dst).bindText(4, origin.scope).bind(5, origin.isPrivate);
    q.bindText(6, origin.source);
    return q.step(QStringLiteral("looking up a relation")) ? q.int64(0) : 0;
}

qint64 SqliteGraphStore::addRelation(qint64 src, const QString &label, qint64 dst, const GraphOrigin &origin,
                                     const GraphTripletInput &t)
{
    Statement insert(m_storage, "INSERT INTO graph_relations(src, label, dst, created_at, scope, source, private, embedding, "
                                "extractor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, src).bindText(2, label).bind(3, dst).bind(4, msOf(origin.at)).bindText(5, origin.scope);
    insert.bindText(6, origin.source).bind(7, origin.isPrivate).bindEmbedding(8, t.embedding);
    insert.bindText(9, t.extractor);
    insert.run(QStringLiteral("adding a relation"));
    const qint64 id = sqlite3_last_insert_rowid(m_storage.m_db);
    indexRelation(id, origin, t.embedding);
    return id;
}

std::vector<qint64> SqliteGraphStore::otherDestinations(qint64 src, const QString &label, qint64 dst, qint64 except,
                                                        const GraphOrigin &origin)
{
    Statement q(m_storage, "SELECT id FROM graph_relations WHERE src = ? AND label = ? AND dst <> ? AND valid = 1 "
                           "AND id <> ? AND scope = ? AND private = ? AND (private = 0 OR source = ?) ORDER BY id");
    q.bind(1, src).bindText(2, label).bind(3, dst).bind(4, except).bindText(5, origin.scope);
    q.bind(6, origin.isPrivate).bindText(7, origin.source);
    std::vector<qint64> out;
    while (q.step(QStringLiteral("looking up conflicting relations")))
        out.push_back(q.int64(0));
    return out;
}

void SqliteGraphStore::link(int kind, qint64 rowId, const QString &recordId)
{
    Statement q(m_storage, "INSERT OR IGNORE INTO graph_sources(kind, row_id, record_id) VALUES (?, ?, ?)");
    q.bind(1, kind).bind(2, rowId).bindText(3, recordId).run(QStringLiteral("linking a graph row to its record"));
}

void SqliteGraphStore::note(const QString &recordId, GraphChange::Kind kind, qint64 rowId, qint64 atMs)
{
    Statement q(m_storage, "INSERT INTO graph_history(record_id, change, row_id, at) VALUES (?, ?, ?, ?)");
    q.bindText(1, recordId).bindText(2, GraphChange::kindName(kind)).bind(3, rowId).bind(4, atMs);
    q.run(QStringLiteral("writing the graph history"));
}

bool SqliteGraphStore::markInvalid(qint64 relationId, const QString &why, const QString &byRecord, qint64 atMs)
{
    Statement q(m_storage, "UPDATE graph_relations SET valid = 0, invalidated_at = ?, invalidated_by = ?, why = ? "
                           "WHERE id = ? AND valid = 1");
    q.bind(1, atMs).bindText(2, byRecord).bindText(3, why).bind(4, relationId);
    q.run(QStringLiteral("invalidating a relation"));
    if (sqlite3_changes(m_storage.m_db) == 0)
        return false;
    reindexValidity(relationId, false);
    return true;
}

std::vector<std::pair<GraphChange::Kind, qint64>> SqliteGraphStore::historyOf(const QString &recordId)
{
    std::vector<std::pair<GraphChange::Kind, qint64>> out;
    Statement q(m_storage, "SELECT change, row_id FROM graph_history WHERE record_id = ? ORDER BY seq DESC");
    q.bindText(1, recordId);
    while (q.step(QStringLiteral("reading the graph history")))
        out.emplace_back(kindFromName(q.text(0)), q.int64(1));
    return out;
}

void SqliteGraphStore::markValidAgain(qint64 relationId, const QString &recordId)
{
    Statement q(m_storage, "UPDATE graph_relations SET valid = 1, invalidated_at = NULL, invalidated_by = NULL, "
                           "why = NULL WHERE id = ? AND invalidated_by = ?");
    q.bind(1, relationId).bindText(2, recordId).run(QStringLiteral("validating a relation again"));
}

void SqliteGraphStore::unlink(int kind, qint64 rowId, const QString &recordId)
{
    Statement q(m_storage, "DELETE FROM graph_sources WHERE kind = ? AND row_id = ? AND record_id = ?");
    q.bind(1, kind).bind(2, rowId).bindText(3, recordId).run(QStringLiteral("unlinking a graph row"));
}

void SqliteGraphStore::forgetHistory(const QString &recordId)
{
    Statement q(m_storage, "DELETE FROM graph_history WHERE record_id = ?");
    q.bindText(1, recordId).run(QStringLiteral("clearing the graph history of a record"));
}

int SqliteGraphStore::revertRecords(const QStringList &recordIds)
{
    QMutexLocker lock(&m_storage.m_mutex);
    if (recordIds.isEmpty() || !hasTables())
        return 0;
    int reverted = 0;
    inTransaction(QStringLiteral("reverting the graph of %1 records").arg(recordIds.size()), [&] {
        for (const QString &recordId : recordIds)
            reverted += revertRecord(recordId);
        deleteOrphans();
    });
    dropIndexes(); // rows deleted and validated again in bulk: read again on the next search
    return reverted;
}

void SqliteGraphStore::deleteOrphans()
{
    const QString doing = QStringLiteral("deleting graph rows no record holds");
    m_storage.exec("DELETE FROM graph_relations WHERE NOT EXISTS "
                   "(SELECT 1 FROM graph_sources s WHERE s.kind = 1 AND s.row_id = graph_relations.id)",
                   doing);
    m_storage.exec("DELETE FROM graph_entities WHERE NOT EXISTS "
                   "(SELECT 1 FROM graph_sources s WHERE s.kind = 0 AND s.row_id = graph_entities.id) "
                   "AND NOT EXISTS (SELECT 1 FROM graph_relations r WHERE r.src = graph_entities.id OR r.dst = graph_entities.id)",
                   doing);
}

// ---------------------------------------------------------------------------------------------
// Checking

namespace {

// One kind of damage check() finds: how many rows have it, what that means, and the SQL that mends it.
struct GraphFault
{
    const char *count;
    const char *what; // "%1 relations pointing at missing entities"
    const char *mend;
    const char *mended; // "deleted"
};

// In the order the repair mends them: what points at nothing first, then what the history lacks.
const GraphFault kFaultsBeforeRecords[] = {
    {"SELECT count(*) FROM graph_relations WHERE src NOT IN (SELECT id FROM graph_entities) "
     "OR dst NOT IN (SELECT id FROM graph_entities)",
     "%1 relations pointing at missing entities",
     "DELETE FROM graph_relations WHERE src NOT IN (SELECT id FROM graph_entities) OR dst NOT IN (SELECT id FROM graph_entities)",
     "deleted"},
    {"SELECT count(*) FROM graph_sources WHERE (kind = 0 AND row_id NOT IN (SELECT id FROM graph_entities)) "
     "OR (kind = 1 AND row_id NOT IN (SELECT id FROM graph_relations)) OR kind NOT IN (0, 1)",
     "%1 provenance links (graph_sources) to missing entities or relations",
     "DELETE FROM graph_sources WHERE (kind = 0 AND row_id NOT IN (SELECT id FROM graph_entities)) "
     "OR (kind = 1 AND row_id NOT IN (SELECT id FROM graph_relations)) OR kind NOT IN (0, 1)",
     "deleted"},
    {"SELECT count(*) FROM graph_history WHERE (change IN ('ADD_ENTITY', 'LINK_ENTITY') AND row_id NOT IN "
     "(SELECT id FROM graph_entities)) OR (change IN ('ADD_RELATION', 'LINK_RELATION', 'INVALIDATE') AND row_id NOT IN "
     "(SELECT id FROM graph_relations))",
     "%1 graph history entries for missing entities or relations",
     "DELETE FROM graph_history WHERE (change IN ('ADD_ENTITY', 'LINK_ENTITY') AND row_id NOT IN "
     "(SELECT id FROM graph_entities)) OR (change IN ('ADD_RELATION', 'LINK_RELATION', 'INVALIDATE') AND row_id NOT IN "
     "(SELECT id FROM graph_relations))",
     "deleted"},
};

const GraphFault kFaultsAfterRecords[] = {
    {"SELECT count(*) FROM graph_relations WHERE valid = 0 AND (invalidated_by IS NULL OR invalidated_by NOT IN "
     "(SELECT id FROM records))",
     "%1 invalid relations whose invalidating record is missing",
     "UPDATE graph_relations SET valid = 1, invalidated_at = NULL, invalidated_by = NULL, why = NULL WHERE valid = 0 AND "
     "(invalidated_by IS NULL OR invalidated_by NOT IN (SELECT id FROM records))",
     "made valid again"},
    {"SELECT count(*) FROM graph_relations r WHERE r.valid = 0 AND NOT EXISTS (SELECT 1 FROM graph_history h WHERE "
     "h.record_id = r.invalidated_by AND h.change = 'INVALIDATE' AND h.row_id = r.id)",
     "%1 invalidations the graph history does not hold (an undo would not make them valid again)",
     "INSERT INTO graph_history(record_id, change, row_id, at) SELECT r.invalidated_by, 'INVALIDATE', r.id, "
     "coalesce(r.invalidated_at, r.created_at) FROM graph_relations r WHERE r.valid = 0 AND NOT EXISTS (SELECT 1 FROM "
     "graph_history h WHERE h.record_id = r.invalidated_by AND h.change = 'INVALIDATE' AND h.row_id = r.id)",
     "written to the history"},
    {"SELECT count(*) FROM graph_sources s WHERE NOT EXISTS (SELECT 1 FROM graph_history h WHERE h.record_id = s.record_id "
     "AND h.row_id = s.row_id AND h.change IN (CASE s.kind WHEN 0 THEN 'ADD_ENTITY' ELSE 'ADD_RELATION' END, "
     "CASE s.kind WHEN 0 THEN 'LINK_ENTITY' ELSE 'LINK_RELATION' END))",
     "%1 provenance links the graph history does not hold (an undo would not remove them)",
     "INSERT INTO graph_history(record_id, change, row_id, at) SELECT s.record_id, CASE s.kind WHEN 0 THEN 'LINK_ENTITY' "
     "ELSE 'LINK_RELATION' END, s.row_id, CAST(strftime('%s', 'now') AS INTEGER) * 1000 FROM graph_sources s WHERE NOT "
     "EXISTS (SELECT 1 FROM graph_history h WHERE h.record_id = s.record_id AND h.row_id = s.row_id AND h.change IN "
     "(CASE s.kind WHEN 0 THEN 'ADD_ENTITY' ELSE 'ADD_RELATION' END, CASE s.kind WHEN 0 THEN 'LINK_ENTITY' ELSE "
     "'LINK_RELATION' END))",
     "written to the history"},
    {"SELECT (SELECT count(*) FROM graph_relations WHERE NOT EXISTS (SELECT 1 FROM graph_sources s WHERE s.kind = 1 AND "
     "s.row_id = graph_relations.id)) + (SELECT count(*) FROM graph_entities WHERE NOT EXISTS (SELECT 1 FROM graph_sources s "
     "WHERE s.kind = 0 AND s.row_id = graph_entities.id) AND NOT EXISTS (SELECT 1 FROM graph_relations r WHERE r.src = "
     "graph_entities.id OR r.dst = graph_entities.id))",
     "%1 entities and relations no record holds",
     nullptr, // deleteOrphans()
     "deleted"},
};

// The records the graph names (provenance or history) that the records table does not hold.
constexpr const char kMissingRecords[] =
    "SELECT record_id FROM graph_sources WHERE record_id NOT IN (SELECT id FROM records) UNION "
    "SELECT record_id FROM graph_history WHERE record_id NOT IN (SELECT id FROM records)";

} // namespace

void SqliteGraphStore::checkLocked(bool repair, StoreCheck &report)
{
    if (!hasTables())
        return;
    const QString doing = QStringLiteral("checking the graph");
    const auto count = [&](const char *sql) {
        Statement q(m_storage, sql);
        q.step(doing);
        return q.int64(0);
    };
    const auto missingRecords = [&] {
        QStringList ids;
        Statement q(m_storage, kMissingRecords);
        while (q.step(doing))
            ids << q.text(0);
        return ids;
    };
    const auto problem = [&](qint64 n, const QString &what) {
        report.problems << QStringLiteral("the graph has %1; `mneme check --repair` mends it").arg(what.arg(n));
    };
    const auto faults = [&](const auto &list) {
        for (const GraphFault &f : list) {
            const qint64 n = count(f.count);
            if (n == 0)
                continue;
            if (!repair) {
                problem(n, QString::fromUtf8(f.what));
                continue;
            }
            if (f.mend)
                m_storage.exec(f.mend, QStringLiteral("mending the graph"));
            else
                deleteOrphans();
            report.repaired << QStringLiteral("the graph: %1 %2").arg(QString::fromUtf8(f.what).arg(n), QString::fromUtf8(f.mended));
        }
    };
    const auto check = [&] {
        faults(kFaultsBeforeRecords);
        const QStringList missing = missingRecords();
        if (!missing.isEmpty()) {
            const QString what = QStringLiteral("%1 records that no longer exist still in its provenance or history");
            if (!repair) {
                problem(missing.size(), what);
            } else {
                for (const QString &id : missing)
                    revertRecord(id);
                Statement links(m_storage, "DELETE FROM graph_sources WHERE record_id NOT IN (SELECT id FROM records)");
                links.run(QStringLiteral("mending the graph"));
                report.repaired << QStringLiteral("the graph: %1 reverted, as their deletion would have")
                                       .arg(what.arg(missing.size()));
            }
        }
        faults(kFaultsAfterRecords);
    };
    if (!repair) {
        check();
        return;
    }
    try {
        inTransaction(QStringLiteral("the graph's repair"), check);
    } catch (const Error &e) {
        report.problems << QStringLiteral("the graph could not be repaired: %1").arg(e.message());
    }
    dropIndexes();
}

void SqliteGraphStore::reset(const QString &scopePrefix)
{
    QMutexLocker lock(&m_storage.m_mutex);
    if (!hasTables())
        return;
    const QString prefix = ScopePath::normalize(scopePrefix);
    inTransaction(QStringLiteral("deleting the graph of %1").arg(prefix), [&] {
        const QString doing = QStringLiteral("deleting the graph");
        if (prefix == QLatin1String("/")) {
            for (const char *sql : {"DELETE FROM graph_relations", "DELETE FROM graph_entities", "DELETE FROM graph_sources",
                                    "DELETE FROM graph_history"})
                m_storage.exec(sql, doing);
            return;
        }
        GraphFilter below;
        below.scopes = {prefix};
        std::vector<QByteArray> args;
        const QByteArray where = visible(below, args);
        for (const auto &[table, kind, changes] :
             {std::tuple{"graph_relations", kRelation, "('ADD_RELATION', 'LINK_RELATION', 'INVALIDATE')"},
              std::tuple{"graph_entities", kEntity, "('ADD_ENTITY', 'LINK_ENTITY')"}}) {
            const QByteArray ids = QByteArray("SELECT t.id FROM ") + table + " t WHERE " + where;
            Statement h(m_storage, QByteArray("DELETE FROM graph_history WHERE change IN ") + changes + " AND row_id IN (" + ids + ")");
            h.bindAll(args, 1);
            h.run(doing);
            Statement s(m_storage, "DELETE FROM graph_sources WHERE kind = " + QByteArray::number(kind) + " AND row_id IN (" + ids + ")");
            s.bindAll(args, 1);
            s.run(doing);
            Statement d(m_storage, QByteArray("DELETE FROM ") + table + " WHERE id IN (" + ids + ")");
            d.bindAll(args, 1);
            d.run(doing);
        }
        // Relations elsewhere that pointed at a deleted entity.
        m_storage.exec("DELETE FROM graph_relations WHERE src NOT IN (SELECT id FROM graph_entities) "
                       "OR dst NOT IN (SELECT id FROM graph_entities)",
                       doing);
        m_storage.exec("DELETE FROM graph_sources WHERE kind = 1 AND row_id NOT IN (SELECT id FROM graph_relations)", doing);
    });
    dropIndexes();
}

// ---------------------------------------------------------------------------------------------
// Reading

QByteArray SqliteGraphStore::visible(const GraphFilter &filter, std::vector<QByteArray> &args) const
{
    QByteArray sql("1");
    QStringList prefixes;
    for (const QString &s : filter.scopes)
        prefixes << ScopePath::normalize(s);
    if (!prefixes.isEmpty() && !prefixes.contains(QStringLiteral("/"))) {
        sql += " AND (";
        for (qsizetype i = 0; i < prefixes.size(); ++i) {
            if (i)
                sql += " OR ";
            // At the prefix or below it: "/a" and "/a/..." ('0' follows '/').
            sql += "t.scope = ? OR (t.scope >= ? AND t.scope < ?)";
            args.push_back(prefixes[i].toUtf8());
            args.push_back((prefixes[i] + QLatin1Char('/')).toUtf8());
            args.push_back((prefixes[i] + QLatin1Char('0')).toUtf8());
        }
        sql += ")";
    }
    if (filter.applyPrivacy && !filter.includePrivate) {
        sql += " AND (t.private = 0 OR (t.source <> '' AND t.source = ?))";
        args.push_back(filter.source.toUtf8());
    }
    return sql;
}

std::vector<GraphEntity> SqliteGraphStore::readEntities(const QByteArray &where, const std::vector<QByteArray> &args,
                                                        bool withEmbedding, const QByteArray &tail)
{
    std::vector<GraphEntity> out;
    if (!hasTables())
        return out;
    Statement q(m_storage, "SELECT " + QByteArray(graphrows::kEntityReadColumns)
                               + ", (SELECT group_concat(s.record_id, char(31)) FROM graph_sources s WHERE s.kind = 0 AND s.row_id = t.id), "
                               + QByteArray(withEmbedding ? "t.embedding" : "NULL") + " FROM graph_entities t WHERE " + where + tail);
    q.bindAll(args, 1);
    while (q.step(QStringLiteral("reading entities")))
        out.push_back(graphrows::entityOf(ColumnRow<Statement>{q}, withEmbedding));
    return out;
}

std::vector<GraphRelation> SqliteGraphStore::readRelations(const QByteArray &where, const std::vector<QByteArray> &args,
                                                           const GraphFilter &filter, const QByteArray &tail)
{
    std::vector<GraphRelation> out;
    if (!hasTables())
        return out;
    std::vector<QByteArray> all;
    QByteArray condition = visible(filter, all) + " AND " + where;
    all.insert(all.end(), args.begin(), args.end());
    if (!filter.includeInvalid && !filter.asOf.isValid())
        condition += " AND t.valid = 1";
    Statement q(m_storage, "SELECT " + QByteArray(graphrows::kRelationReadColumns)
                               + ", (SELECT group_concat(s.record_id, char(31)) FROM graph_sources s WHERE s.kind = 1 AND s.row_id = t.id), "
                                 "t.extractor FROM graph_relations t JOIN graph_entities a ON a.id = t.src "
                                 "JOIN graph_entities b ON b.id = t.dst WHERE "
                               + condition + tail);
    q.bindAll(all, 1);
    while (q.step(QStringLiteral("reading relations"))) {
        GraphRelation r = graphrows::relationOf(ColumnRow<Statement>{q});
        if (filter.admits(r))
            out.push_back(std::move(r));
    }
    return out;
}

std::vector<GraphChange> SqliteGraphStore::changesOf(const QString &recordId)
{
    QMutexLocker lock(&m_storage.m_mutex);
    m_storage.ensureOpen();
    std::vector<GraphChange> out;
    if (!hasTables())
        return out;
    Statement q(m_storage, "SELECT seq, change, row_id, at FROM graph_history WHERE record_id = ? ORDER BY seq");
    q.bindText(1, recordId);
    while (q.step(QStringLiteral("reading the graph history"))) {
        GraphChange c;
        c.seq = q.int64(0);
        c.recordId = recordId;
        c.kind = kindFromName(q.text(1));
        c.rowId = q.int64(2);
        c.at = timeOf(q.int64(3));
        out.push_back(c);
    }
    return out;
}

std::vector<GraphEntity> SqliteGraphStore::entities(const GraphFilter &filter, int limit, int offset)
{
    QMutexLocker lock(&m_storage.m_mutex);
    m_storage.ensureOpen();
    std::vector<QByteArray> args;
    const QByteArray where = visible(filter, args);
    return readEntities(where, args, false,
                        " ORDER BY t.norm, t.id LIMIT " + QByteArray::number(limit < 0 ? -1 : limit) + " OFFSET "
                            + QByteArray::number(std::max(offset, 0)));
}

std::vector<GraphEntity> SqliteGraphStore::entitiesByName(const QStringList &normalizedNames, const GraphFilter &filter)
{
    QMutexLocker lock(&m_storage.m_mutex);
    m_storage.ensureOpen();
    if (normalizedNames.isEmpty())
        return {};
    std::vector<QByteArray> args{textsJson(normalizedNames)};
    const QByteArray where = "t.norm IN (SELECT value FROM json_each(?)) AND " + visible(filter, args);
    return readEntities(where, args, false, " ORDER BY t.norm, t.id");
}

std::vector<ScoredEntity> SqliteGraphStore::similarEntities(const Embedding &query, const GraphFilter &filter,
                                                            double minScore, int limit)
{
    QMutexLocker lock(&m_storage.m_mutex);
    m_storage.ensureOpen();
    std::vector<ScoredEntity> out;
    if (query.empty() || limit <= 0)
        return out;
    ensureIndexes();
    if (int(query.size()) != m_entityIndex.dimension())
        return out;
    const Matches found = matches(m_entityIndex.search(query.data(), indexFilter(filter), limit), minScore);
    if (found.ids.empty())
        return out;
    for (GraphEntity &e : readEntities("t.id IN (SELECT value FROM json_each(?))", {idsJson(found.ids)}, false)) {
        const double c = found.score.value(e.id);
        out.push_back({std::move(e), c});
    }
    std::sort(out.begin(), out.end(), [](const ScoredEntity &a, const ScoredEntity &b) {
        return a.score != b.score ? a.score > b.score : a.entity.id < b.entity.id;
    });
    return out;
}

std::vector<GraphRelation> SqliteGraphStore::relations(const GraphFilter &filter, int limit)
{
    QMutexLocker lock(&m_storage.m_mutex);
    m_storage.ensureOpen();
    std::vector<GraphRelation> out = readRelations("1", {}, filter, " ORDER BY t.created_at DESC, t.id DESC");
    if (limit >= 0 && int(out.size()) > limit)
        out.resize(std::size_t(limit));
    return out;
}

std::vector<GraphRelation> SqliteGraphStore::relationsOf(const std::vector<qint64> &entityIds, int hops, const GraphFilter &filter)
{
    QMutexLocker lock(&m_storage.m_mutex);
    m_storage.ensureOpen();
    std::vector<GraphRelation> out;
    QSet<qint64> seenRelations;
    QSet<qint64> reached(entityIds.begin(), entityIds.end());
    std::vector<qint64> frontier = entityIds;
    for (int hop = 0; hop < std::max(hops, 1) && !frontier.empty(); ++hop) {
        const QByteArray ids = idsJson(frontier);
        frontier.clear();
        for (GraphRelation &r : readRelations("(t.src IN (SELECT value FROM json_each(?)) OR t.dst IN (SELECT value FROM json_each(?)))",
                                              {ids, ids}, filter, " ORDER BY t.created_at DESC, t.id DESC")) {
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

std::vector<ScoredRelation> SqliteGraphStore::similarRelations(const Embedding &query, const GraphFilter &filter,
                                                               double minScore, int limit)
{
    QMutexLocker lock(&m_storage.m_mutex);
    m_storage.ensureOpen();
    std::vector<ScoredRelation> out;
    if (query.empty() || limit <= 0 || !hasTables())
        return out;
    ensureIndexes();
    if (int(query.size()) != m_relationIndex.dimension())
        return out;
    // Valid now: the index selects them itself. As of a time (or valid or not): every relation close
    // enough and created by then, whose validity then readRelations() judges on the rows.
    RecordFilter select = indexFilter(filter);
    const bool now = !filter.includeInvalid && !filter.asOf.isValid();
    if (now)
        select.categories = {validityOf(true)};
    else if (filter.asOf.isValid() && !filter.includeInvalid)
        select.createdBefore = filter.asOf.addMSecs(1);
    const Matches found = matches(m_relationIndex.search(query.data(), select, now ? limit : -1), minScore);
    if (found.ids.empty())
        return out;
    for (GraphRelation &r : readRelations("t.id IN (SELECT value FROM json_each(?))", {idsJson(found.ids)}, filter)) {
        const double c = found.score.value(r.id);
        out.push_back({std::move(r), c});
    }
    std::sort(out.begin(), out.end(), [](const ScoredRelation &a, const ScoredRelation &b) {
        return a.score != b.score ? a.score > b.score : a.relation.id < b.relation.id;
    });
    if (int(out.size()) > limit)
        out.resize(std::size_t(limit));
    return out;
}

QHash<qint64, int> SqliteGraphStore::degrees(const std::vector<qint64> &entityIds, const GraphFilter &filter)
{
    QMutexLocker lock(&m_storage.m_mutex);
    m_storage.ensureOpen();
    QHash<qint64, int> out;
    for (qint64 id : entityIds)
        out.insert(id, 0);
    if (entityIds.empty() || !hasTables())
        return out;
    std::vector<QByteArray> args;
    QByteArray seen = visible(filter, args);
    if (!filter.includeInvalid && !filter.asOf.isValid())
        seen += " AND t.valid = 1";
    else if (filter.asOf.isValid() && !filter.includeInvalid)
        seen += " AND t.created_at <= " + QByteArray::number(filter.asOf.toMSecsSinceEpoch());
    Statement q(m_storage, "SELECT e.value, (SELECT count(*) FROM graph_relations t WHERE t.src = e.value AND " + seen
                               + ") + (SELECT count(*) FROM graph_relations t WHERE t.dst = e.value AND " + seen
                               + ") FROM json_each(?) e");
    int next = q.bindAll(args, 1);
    next = q.bindAll(args, next);
    q.bindBytes(next, idsJson(entityIds));
    while (q.step(QStringLiteral("counting the relations of entities")))
        out.insert(q.int64(0), int(q.int64(1)));
    return out;
}

// ---------------------------------------------------------------------------------------------
// Moving a graph between stores

namespace {

QString textAt(const Json &row, const char *key)
{
    const Json &v = row.at(key);
    return v.is_null() ? QString() : QString::fromStdString(v.get<std::string>());
}

Embedding embeddingAt(const Json &row)
{
    const Json &v = row.at("embedding");
    return v.is_null() ? Embedding() : v.get<Embedding>();
}

} // namespace

Json SqliteGraphStore::dumpRows(Table table, qint64 after, int limit)
{
    QMutexLocker lock(&m_storage.m_mutex);
    m_storage.ensureOpen();
    Json out = Json::array();
    if (!hasTables() || limit <= 0)
        return out;
    const QByteArray page = " ORDER BY 1 LIMIT ?";
    const auto readAll = [&](const QByteArray &sql, const QString &doing, Json (*toJson)(const ColumnRow<Statement> &)) {
        Statement q(m_storage, sql);
        q.bind(1, after).bind(2, limit);
        while (q.step(doing))
            out.push_back(toJson(ColumnRow<Statement>{q}));
    };
    switch (table) {
    case Table::Entities:
        readAll("SELECT " + QByteArray(graphrows::kEntityDumpColumns)
                    + ", (SELECT group_concat(s.record_id, char(31)) FROM graph_sources s WHERE s.kind = 0 AND s.row_id = t.id) "
                      "FROM graph_entities t WHERE t.id > ?"
                    + page,
                QStringLiteral("reading entities"), graphrows::entityDumpJson<ColumnRow<Statement>>);
        break;
    case Table::Relations:
        readAll("SELECT " + QByteArray(graphrows::kRelationDumpColumns)
                    + ", (SELECT group_concat(s.record_id, char(31)) FROM graph_sources s WHERE s.kind = 1 AND s.row_id = t.id) "
                      "FROM graph_relations t WHERE t.id > ?"
                    + page,
                QStringLiteral("reading relations"), graphrows::relationDumpJson<ColumnRow<Statement>>);
        break;
    case Table::History:
        readAll("SELECT " + QByteArray(graphrows::kHistoryDumpColumns) + " FROM graph_history WHERE seq > ?" + page,
                QStringLiteral("reading the graph history"), graphrows::historyDumpJson<ColumnRow<Statement>>);
        break;
    }
    return out;
}

void SqliteGraphStore::loadRows(Table table, const Json &rows)
{
    QMutexLocker lock(&m_storage.m_mutex);
    if (!rows.is_array())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("graph rows to load must be a JSON array"));
    if (rows.empty())
        return;
    const auto linkAll = [&](int kind, const Json &row) {
        for (const Json &id : row.at("record_ids"))
            link(kind, row.at("id").get<qint64>(), QString::fromStdString(id.get<std::string>()));
    };
    inTransaction(QStringLiteral("loading %1 graph rows").arg(rows.size()), [&] {
        try {
            for (const Json &row : rows) {
                switch (table) {
                case Table::Entities: {
                    Statement q(m_storage, "INSERT OR IGNORE INTO graph_entities(id, name, norm, type, scope, source, private, "
                                           "created_at, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
                    q.bind(1, row.at("id").get<qint64>()).bindText(2, textAt(row, "name")).bindText(3, textAt(row, "norm"));
                    q.bindText(4, textAt(row, "type")).bindText(5, textAt(row, "scope")).bindText(6, textAt(row, "source"));
                    q.bind(7, row.at("private").get<bool>()).bind(8, row.at("created_at").get<qint64>());
                    q.bindEmbedding(9, embeddingAt(row));
                    q.run(QStringLiteral("loading an entity"));
                    linkAll(kEntity, row);
                    break;
                }
                case Table::Relations: {
                    Statement q(m_storage, "INSERT OR IGNORE INTO graph_relations(id, src, label, dst, valid, created_at, "
                                           "invalidated_at, invalidated_by, why, scope, source, private, extractor, embedding) "
                                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
                    q.bind(1, row.at("id").get<qint64>()).bind(2, row.at("src").get<qint64>()).bindText(3, textAt(row, "label"));
                    q.bind(4, row.at("dst").get<qint64>()).bind(5, row.at("valid").get<bool>());
                    q.bind(6, row.at("created_at").get<qint64>());
                    if (row.at("invalidated_at").is_null())
                        q.bindNull(7);
                    else
                        q.bind(7, row.at("invalidated_at").get<qint64>());
                    for (const auto &[i, key] : {std::pair{8, "invalidated_by"}, std::pair{9, "why"}})
                        if (row.at(key).is_null())
                            q.bindNull(i);
                        else
                            q.bindText(i, textAt(row, key));
                    q.bindText(10, textAt(row, "scope")).bindText(11, textAt(row, "source")).bind(12, row.at("private").get<bool>());
                    q.bindText(13, textAt(row, "extractor")).bindEmbedding(14, embeddingAt(row));
                    q.run(QStringLiteral("loading a relation"));
                    linkAll(kRelation, row);
                    break;
                }
                case Table::History: {
                    Statement q(m_storage, "INSERT OR IGNORE INTO graph_history(seq, record_id, change, row_id, at) VALUES (?, ?, ?, ?, ?)");
                    q.bind(1, row.at("seq").get<qint64>()).bindText(2, textAt(row, "record_id")).bindText(3, textAt(row, "change"));
                    q.bind(4, row.at("row_id").get<qint64>()).bind(5, row.at("at").get<qint64>());
                    q.run(QStringLiteral("loading the graph history"));
                    break;
                }
                }
            }
        } catch (const Json::exception &e) {
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("a graph row to load is malformed: %1").arg(QString::fromUtf8(e.what())));
        }
    });
    dropIndexes(); // rows written around the indexes: the next search reads them again
}

} // namespace mneme
