#include "graph_store_sqlite.h"

#include "sqlite_storage.h"

#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>
#include <mneme/core/vector_math.h>

#include <QMutexLocker>
#include <QSet>
#include <algorithm>
#include <cstring>
#include <sqlite3.h>

namespace mneme {

namespace {

constexpr int kEntity = 0;
constexpr int kRelation = 1;

qint64 msOf(const QDateTime &t)
{
    return (t.isValid() ? t : QDateTime::currentDateTimeUtc()).toMSecsSinceEpoch();
}

QDateTime timeOf(qint64 ms)
{
    return QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC);
}

// "Lives in" -> "lives_in": lower case, runs of anything but letters and digits made one '_'.
QString normalizedLabel(const QString &label)
{
    QString out;
    for (const QChar c : label.toCaseFolded()) {
        if (c.isLetterOrNumber())
            out += c;
        else if (!out.isEmpty() && !out.endsWith(QLatin1Char('_')))
            out += QLatin1Char('_');
    }
    while (out.endsWith(QLatin1Char('_')))
        out.chop(1);
    return out;
}

QByteArray idsJson(const std::vector<qint64> &ids)
{
    QByteArray out("[");
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i)
            out += ',';
        out += QByteArray::number(ids[i]);
    }
    return out + ']';
}

QByteArray textsJson(const QStringList &texts)
{
    Json j = Json::array();
    for (const QString &t : texts)
        j.push_back(t.toStdString());
    return QByteArray::fromStdString(j.dump());
}

GraphChange::Kind kindFromName(const QString &name)
{
    for (GraphChange::Kind k : {GraphChange::Kind::AddEntity, GraphChange::Kind::LinkEntity, GraphChange::Kind::AddRelation,
                                GraphChange::Kind::LinkRelation, GraphChange::Kind::Invalidate})
        if (GraphChange::kindName(k) == name)
            return k;
    return GraphChange::Kind::AddEntity;
}

} // namespace

// A statement on the storage's connection (its statement cache): reset and unbound when done.
class SqliteGraphStore::Query
{
public:
    Query(SqliteStorage &storage, const QByteArray &sql)
        : m_storage(storage), m_st(storage.prepare(sql, &m_owned))
    {
    }
    ~Query()
    {
        if (m_owned) {
            sqlite3_finalize(m_st);
        } else {
            sqlite3_reset(m_st);
            sqlite3_clear_bindings(m_st);
        }
    }
    Query(const Query &) = delete;
    Query &operator=(const Query &) = delete;

    Query &bind(int i, qint64 v) { return check(sqlite3_bind_int64(m_st, i, v)); }
    Query &bindDouble(int i, double v) { return check(sqlite3_bind_double(m_st, i, v)); }
    Query &bindNull(int i) { return check(sqlite3_bind_null(m_st, i)); }
    Query &bindText(int i, const QByteArray &utf8)
    {
        return check(sqlite3_bind_text64(m_st, i, utf8.constData(), sqlite3_uint64(utf8.size()), SQLITE_TRANSIENT, SQLITE_UTF8));
    }
    Query &bindText(int i, const QString &s) { return bindText(i, s.toUtf8()); }
    Query &bindEmbedding(int i, const Embedding &e)
    {
        if (e.empty())
            return bindNull(i);
        return check(sqlite3_bind_blob64(m_st, i, e.data(), sqlite3_uint64(e.size() * sizeof(float)), SQLITE_TRANSIENT));
    }
    // Binds `args` as texts from position `first`; returns the next position.
    int bindAll(const std::vector<QByteArray> &args, int first)
    {
        for (const QByteArray &a : args)
            bindText(first++, a);
        return first;
    }
    bool step(const QString &doing)
    {
        const int rc = sqlite3_step(m_st);
        if (rc == SQLITE_ROW)
            return true;
        if (rc == SQLITE_DONE)
            return false;
        m_storage.fail(rc, doing);
    }
    void run(const QString &doing)
    {
        while (step(doing)) {
        }
    }
    qint64 int64(int col) const { return sqlite3_column_int64(m_st, col); }
    bool isNull(int col) const { return sqlite3_column_type(m_st, col) == SQLITE_NULL; }
    QString text(int col) const
    {
        const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(m_st, col));
        return p ? QString::fromUtf8(p, sqlite3_column_bytes(m_st, col)) : QString();
    }
    Embedding embedding(int col) const
    {
        const int bytes = sqlite3_column_bytes(m_st, col);
        const void *data = sqlite3_column_blob(m_st, col);
        Embedding e;
        if (data && bytes > 0 && bytes % int(sizeof(float)) == 0) {
            e.resize(std::size_t(bytes) / sizeof(float));
            std::memcpy(e.data(), data, std::size_t(bytes));
        }
        return e;
    }

private:
    Query &check(int rc)
    {
        if (rc != SQLITE_OK)
            m_storage.fail(rc, QStringLiteral("binding a value"));
        return *this;
    }

    SqliteStorage &m_storage;
    bool m_owned = false;
    sqlite3_stmt *m_st;
};

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
        throw;
    }
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
        for (const GraphExtraction &x : extractions)
            writeLocked(x, options, result);
    });
    return result;
}

void SqliteGraphStore::writeLocked(const GraphExtraction &x, const GraphWriteOptions &options, GraphWriteResult &result)
{
    if (x.origin.recordId.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a graph extraction needs the id of the record it came from"));
    const qint64 at = msOf(x.origin.at);
    for (const GraphEntityInput &e : x.entities)
        resolveEntity(e, x.origin, options, result);
    for (const GraphTripletInput &t : x.triplets) {
        const QString label = normalizedLabel(t.label);
        const qint64 src = resolveEntity(t.source, x.origin, options, result);
        const qint64 dst = resolveEntity(t.destination, x.origin, options, result);
        if (label.isEmpty() || src == 0 || dst == 0 || src == dst)
            continue;
        {
            Query same(m_storage, "SELECT id FROM graph_relations WHERE src = ? AND label = ? AND dst = ? AND valid = 1 "
                                  "AND scope = ? AND private = ? AND (private = 0 OR source = ?) LIMIT 1");
            same.bind(1, src).bindText(2, label).bind(3, dst).bindText(4, x.origin.scope).bind(5, x.origin.isPrivate);
            same.bindText(6, x.origin.source);
            if (same.step(QStringLiteral("looking up a relation"))) {
                const qint64 id = same.int64(0);
                ++result.relationsLinked;
                link(kRelation, id, x.origin.recordId);
                note(x.origin.recordId, GraphChange::Kind::LinkRelation, id, at);
                continue;
            }
        }
        Query insert(m_storage, "INSERT INTO graph_relations(src, label, dst, created_at, scope, source, private, embedding, "
                                "extractor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
        insert.bind(1, src).bindText(2, label).bind(3, dst).bind(4, at).bindText(5, x.origin.scope);
        insert.bindText(6, x.origin.source).bind(7, x.origin.isPrivate).bindEmbedding(8, t.embedding);
        insert.bindText(9, t.extractor);
        insert.run(QStringLiteral("adding a relation"));
        const qint64 id = sqlite3_last_insert_rowid(m_storage.m_db);
        ++result.relationsAdded;
        link(kRelation, id, x.origin.recordId);
        note(x.origin.recordId, GraphChange::Kind::AddRelation, id, at);

        // What the new relation replaces: the same source and label with another destination (an
        // exclusive label), and what the extractor found it contradicts.
        std::vector<qint64> replaced = t.contradicts;
        if (t.exclusive) {
            Query old(m_storage, "SELECT id FROM graph_relations WHERE src = ? AND label = ? AND dst <> ? AND valid = 1 "
                                 "AND id <> ? AND scope = ? AND private = ? AND (private = 0 OR source = ?)");
            old.bind(1, src).bindText(2, label).bind(3, dst).bind(4, id).bindText(5, x.origin.scope);
            old.bind(6, x.origin.isPrivate).bindText(7, x.origin.source);
            while (old.step(QStringLiteral("looking up conflicting relations")))
                replaced.push_back(old.int64(0));
        }
        const QString why = QStringLiteral("replaced by \"%1 %2 %3\" (record %4)")
                                .arg(t.source.name, label, t.destination.name, x.origin.recordId);
        for (qint64 old : replaced) {
            if (old == id)
                continue;
            invalidate(old, why, x.origin);
            ++result.relationsInvalidated;
        }
    }
}

qint64 SqliteGraphStore::resolveEntity(const GraphEntityInput &in, const GraphOrigin &origin,
                                       const GraphWriteOptions &options, GraphWriteResult &result)
{
    const QString name = in.name.simplified();
    const QString norm = GraphEntity::normalize(name);
    if (norm.isEmpty())
        return 0;
    const qint64 at = msOf(origin.at);
    // The entities a record may join: its scope and privacy; a private record's, its source's only.
    const QByteArray partition = "scope = ? AND private = ? AND (private = 0 OR source = ?)";
    qint64 found = 0;
    {
        Query byName(m_storage, "SELECT id FROM graph_entities WHERE norm = ? AND " + partition + " ORDER BY id LIMIT 1");
        byName.bindText(1, norm).bindText(2, origin.scope).bind(3, origin.isPrivate).bindText(4, origin.source);
        if (byName.step(QStringLiteral("looking up an entity")))
            found = byName.int64(0);
    }
    if (found == 0 && !in.embedding.empty() && options.entitySimilarity <= 1) {
        Query all(m_storage, "SELECT id, embedding FROM graph_entities WHERE embedding IS NOT NULL AND " + partition);
        all.bindText(1, origin.scope).bind(2, origin.isPrivate).bindText(3, origin.source);
        double best = options.entitySimilarity;
        while (all.step(QStringLiteral("comparing entities"))) {
            const Embedding e = all.embedding(1);
            if (e.size() != in.embedding.size())
                continue;
            const double c = VectorMath::cosine(e, in.embedding);
            if (c >= best) {
                best = c;
                found = all.int64(0);
            }
        }
    }
    if (found != 0) {
        ++result.entitiesResolved;
        if (!recordsOf(kEntity, found).contains(origin.recordId)) {
            link(kEntity, found, origin.recordId);
            note(origin.recordId, GraphChange::Kind::LinkEntity, found, at);
        }
        return found;
    }
    Query insert(m_storage, "INSERT INTO graph_entities(name, norm, type, scope, source, private, created_at, embedding) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bindText(1, name).bindText(2, norm).bindText(3, in.type.trimmed().toLower()).bindText(4, origin.scope);
    insert.bindText(5, origin.source).bind(6, origin.isPrivate).bind(7, at).bindEmbedding(8, in.embedding);
    insert.run(QStringLiteral("adding an entity"));
    const qint64 id = sqlite3_last_insert_rowid(m_storage.m_db);
    ++result.entitiesAdded;
    link(kEntity, id, origin.recordId);
    note(origin.recordId, GraphChange::Kind::AddEntity, id, at);
    return id;
}

void SqliteGraphStore::link(int kind, qint64 rowId, const QString &recordId)
{
    Query q(m_storage, "INSERT OR IGNORE INTO graph_sources(kind, row_id, record_id) VALUES (?, ?, ?)");
    q.bind(1, kind).bind(2, rowId).bindText(3, recordId).run(QStringLiteral("linking a graph row to its record"));
}

void SqliteGraphStore::note(const QString &recordId, GraphChange::Kind kind, qint64 rowId, qint64 atMs)
{
    Query q(m_storage, "INSERT INTO graph_history(record_id, change, row_id, at) VALUES (?, ?, ?, ?)");
    q.bindText(1, recordId).bindText(2, GraphChange::kindName(kind)).bind(3, rowId).bind(4, atMs);
    q.run(QStringLiteral("writing the graph history"));
}

void SqliteGraphStore::invalidate(qint64 relationId, const QString &why, const GraphOrigin &origin)
{
    const qint64 at = msOf(origin.at);
    Query q(m_storage, "UPDATE graph_relations SET valid = 0, invalidated_at = ?, invalidated_by = ?, why = ? "
                       "WHERE id = ? AND valid = 1");
    q.bind(1, at).bindText(2, origin.recordId).bindText(3, why).bind(4, relationId);
    q.run(QStringLiteral("invalidating a relation"));
    if (sqlite3_changes(m_storage.m_db) > 0)
        note(origin.recordId, GraphChange::Kind::Invalidate, relationId, at);
}

int SqliteGraphStore::revertRecords(const QStringList &recordIds)
{
    QMutexLocker lock(&m_storage.m_mutex);
    if (recordIds.isEmpty() || !hasTables())
        return 0;
    int reverted = 0;
    inTransaction(QStringLiteral("reverting the graph of %1 records").arg(recordIds.size()), [&] {
        for (const QString &recordId : recordIds) {
            std::vector<std::pair<QString, qint64>> changes;
            {
                Query q(m_storage, "SELECT change, row_id FROM graph_history WHERE record_id = ? ORDER BY seq DESC");
                q.bindText(1, recordId);
                while (q.step(QStringLiteral("reading the graph history")))
                    changes.emplace_back(q.text(0), q.int64(1));
            }
            for (const auto &[change, rowId] : changes) {
                if (change == QLatin1String("INVALIDATE")) {
                    Query q(m_storage, "UPDATE graph_relations SET valid = 1, invalidated_at = NULL, invalidated_by = NULL, "
                                       "why = NULL WHERE id = ? AND invalidated_by = ?");
                    q.bind(1, rowId).bindText(2, recordId).run(QStringLiteral("validating a relation again"));
                } else {
                    const int kind = change.endsWith(QLatin1String("ENTITY")) ? kEntity : kRelation;
                    Query q(m_storage, "DELETE FROM graph_sources WHERE kind = ? AND row_id = ? AND record_id = ?");
                    q.bind(1, kind).bind(2, rowId).bindText(3, recordId).run(QStringLiteral("unlinking a graph row"));
                }
                ++reverted;
            }
            Query forget(m_storage, "DELETE FROM graph_history WHERE record_id = ?");
            forget.bindText(1, recordId).run(QStringLiteral("clearing the graph history of a record"));
        }
        deleteOrphans();
    });
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
            Query h(m_storage, QByteArray("DELETE FROM graph_history WHERE change IN ") + changes + " AND row_id IN (" + ids + ")");
            h.bindAll(args, 1);
            h.run(doing);
            Query s(m_storage, "DELETE FROM graph_sources WHERE kind = " + QByteArray::number(kind) + " AND row_id IN (" + ids + ")");
            s.bindAll(args, 1);
            s.run(doing);
            Query d(m_storage, QByteArray("DELETE FROM ") + table + " WHERE id IN (" + ids + ")");
            d.bindAll(args, 1);
            d.run(doing);
        }
        // Relations elsewhere that pointed at a deleted entity.
        m_storage.exec("DELETE FROM graph_relations WHERE src NOT IN (SELECT id FROM graph_entities) "
                       "OR dst NOT IN (SELECT id FROM graph_entities)",
                       doing);
        m_storage.exec("DELETE FROM graph_sources WHERE kind = 1 AND row_id NOT IN (SELECT id FROM graph_relations)", doing);
    });
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

QStringList SqliteGraphStore::recordsOf(int kind, qint64 rowId)
{
    QStringList out;
    Query q(m_storage, "SELECT record_id FROM graph_sources WHERE kind = ? AND row_id = ? ORDER BY record_id");
    q.bind(1, kind).bind(2, rowId);
    while (q.step(QStringLiteral("reading the records of a graph row")))
        out << q.text(0);
    return out;
}

std::vector<GraphEntity> SqliteGraphStore::readEntities(const QByteArray &where, const std::vector<QByteArray> &args,
                                                        bool withEmbedding, const QByteArray &tail)
{
    std::vector<GraphEntity> out;
    if (!hasTables())
        return out;
    Query q(m_storage, "SELECT t.id, t.name, t.norm, t.type, t.scope, t.source, t.private, t.created_at, "
                       "(SELECT group_concat(s.record_id, char(31)) FROM graph_sources s WHERE s.kind = 0 AND s.row_id = t.id), "
                           + QByteArray(withEmbedding ? "t.embedding" : "NULL") + " FROM graph_entities t WHERE " + where + tail);
    q.bindAll(args, 1);
    while (q.step(QStringLiteral("reading entities"))) {
        GraphEntity e;
        e.id = q.int64(0);
        e.name = q.text(1);
        e.normalizedName = q.text(2);
        e.type = q.text(3);
        e.scope = q.text(4);
        e.source = q.text(5);
        e.isPrivate = q.int64(6) != 0;
        e.createdAt = timeOf(q.int64(7));
        e.recordIds = q.text(8).split(QChar(31), Qt::SkipEmptyParts);
        if (withEmbedding)
            e.embedding = q.embedding(9);
        out.push_back(std::move(e));
    }
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
    Query q(m_storage, "SELECT t.id, t.src, a.name, t.label, t.dst, b.name, t.valid, t.created_at, t.invalidated_at, t.why, "
                       "t.scope, t.source, t.private, "
                       "(SELECT group_concat(s.record_id, char(31)) FROM graph_sources s WHERE s.kind = 1 AND s.row_id = t.id), "
                       "t.extractor "
                       "FROM graph_relations t JOIN graph_entities a ON a.id = t.src JOIN graph_entities b ON b.id = t.dst WHERE "
                           + condition + tail);
    q.bindAll(all, 1);
    while (q.step(QStringLiteral("reading relations"))) {
        GraphRelation r;
        r.id = q.int64(0);
        r.sourceId = q.int64(1);
        r.sourceName = q.text(2);
        r.label = q.text(3);
        r.destinationId = q.int64(4);
        r.destinationName = q.text(5);
        r.valid = q.int64(6) != 0;
        r.createdAt = timeOf(q.int64(7));
        if (!q.isNull(8))
            r.invalidatedAt = timeOf(q.int64(8));
        r.why = q.text(9);
        r.scope = q.text(10);
        r.source = q.text(11);
        r.isPrivate = q.int64(12) != 0;
        r.recordIds = q.text(13).split(QChar(31), Qt::SkipEmptyParts);
        r.extractor = q.text(14);
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
    Query q(m_storage, "SELECT seq, change, row_id, at FROM graph_history WHERE record_id = ? ORDER BY seq");
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
    std::vector<QByteArray> args;
    const QByteArray where = "t.embedding IS NOT NULL AND " + visible(filter, args);
    for (GraphEntity &e : readEntities(where, args, true)) {
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
    // The embeddings first (a narrow scan), then the rows of those close enough.
    std::vector<QByteArray> args;
    QByteArray where = "t.embedding IS NOT NULL AND " + visible(filter, args);
    if (!filter.includeInvalid && !filter.asOf.isValid())
        where += " AND t.valid = 1";
    std::vector<std::pair<double, qint64>> close;
    {
        Query q(m_storage, "SELECT t.id, t.embedding FROM graph_relations t WHERE " + where);
        q.bindAll(args, 1);
        while (q.step(QStringLiteral("comparing relations"))) {
            const Embedding e = q.embedding(1);
            if (e.size() != query.size())
                continue;
            const double c = VectorMath::cosine(e, query);
            if (c >= minScore)
                close.emplace_back(c, q.int64(0));
        }
    }
    std::sort(close.begin(), close.end(), [](const auto &a, const auto &b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
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
    for (GraphRelation &r : readRelations("t.id IN (SELECT value FROM json_each(?))", {idsJson(ids)}, filter))
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

Json recordIdsJson(const QString &joined)
{
    Json ids = Json::array();
    for (const QString &id : joined.split(QChar(31), Qt::SkipEmptyParts))
        ids.push_back(id.toStdString());
    return ids;
}

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
    const auto embeddingJson = [](const Query &q, int col) { return q.isNull(col) ? Json() : Json(q.embedding(col)); };
    switch (table) {
    case Table::Entities: {
        Query q(m_storage, "SELECT t.id, t.name, t.norm, t.type, t.scope, t.source, t.private, t.created_at, t.embedding, "
                           "(SELECT group_concat(s.record_id, char(31)) FROM graph_sources s WHERE s.kind = 0 AND s.row_id = t.id) "
                           "FROM graph_entities t WHERE t.id > ? ORDER BY t.id LIMIT ?");
        q.bind(1, after).bind(2, limit);
        while (q.step(QStringLiteral("reading entities")))
            out.push_back(Json{{"id", q.int64(0)}, {"name", q.text(1).toStdString()}, {"norm", q.text(2).toStdString()}, {"type", q.text(3).toStdString()}, {"scope", q.text(4).toStdString()}, {"source", q.text(5).toStdString()}, {"private", q.int64(6) != 0}, {"created_at", q.int64(7)}, {"embedding", embeddingJson(q, 8)}, {"record_ids", recordIdsJson(q.text(9))}});
        break;
    }
    case Table::Relations: {
        Query q(m_storage, "SELECT t.id, t.src, t.label, t.dst, t.valid, t.created_at, t.invalidated_at, t.invalidated_by, t.why, "
                           "t.scope, t.source, t.private, t.extractor, t.embedding, "
                           "(SELECT group_concat(s.record_id, char(31)) FROM graph_sources s WHERE s.kind = 1 AND s.row_id = t.id) "
                           "FROM graph_relations t WHERE t.id > ? ORDER BY t.id LIMIT ?");
        q.bind(1, after).bind(2, limit);
        while (q.step(QStringLiteral("reading relations")))
            out.push_back(Json{{"id", q.int64(0)}, {"src", q.int64(1)}, {"label", q.text(2).toStdString()}, {"dst", q.int64(3)}, {"valid", q.int64(4) != 0}, {"created_at", q.int64(5)}, {"invalidated_at", q.isNull(6) ? Json() : Json(q.int64(6))}, {"invalidated_by", q.isNull(7) ? Json() : Json(q.text(7).toStdString())}, {"why", q.isNull(8) ? Json() : Json(q.text(8).toStdString())}, {"scope", q.text(9).toStdString()}, {"source", q.text(10).toStdString()}, {"private", q.int64(11) != 0}, {"extractor", q.text(12).toStdString()}, {"embedding", embeddingJson(q, 13)}, {"record_ids", recordIdsJson(q.text(14))}});
        break;
    }
    case Table::History: {
        Query q(m_storage, "SELECT seq, record_id, change, row_id, at FROM graph_history WHERE seq > ? ORDER BY seq LIMIT ?");
        q.bind(1, after).bind(2, limit);
        while (q.step(QStringLiteral("reading the graph history")))
            out.push_back(Json{{"seq", q.int64(0)}, {"record_id", q.text(1).toStdString()}, {"change", q.text(2).toStdString()}, {"row_id", q.int64(3)}, {"at", q.int64(4)}});
        break;
    }
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
                    Query q(m_storage, "INSERT OR IGNORE INTO graph_entities(id, name, norm, type, scope, source, private, "
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
                    Query q(m_storage, "INSERT OR IGNORE INTO graph_relations(id, src, label, dst, valid, created_at, "
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
                    Query q(m_storage, "INSERT OR IGNORE INTO graph_history(seq, record_id, change, row_id, at) VALUES (?, ?, ?, ?, ?)");
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
}

} // namespace mneme
