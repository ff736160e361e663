#pragma once

#include <mneme/core/graph_store.h>
#include <mneme/core/json.h>

#include <QByteArray>
#include <QDateTime>
#include <QString>
#include <QStringList>
#include <vector>

// What the storage plugins' graph stores (SQLite, PostgreSQL) share in turning graph rows into
// columns and back.
namespace mneme::graphrows {

// A row's time in milliseconds since the epoch, UTC (now for an invalid time), and back.
inline qint64 msOf(const QDateTime &t)
{
    return (t.isValid() ? t : QDateTime::currentDateTimeUtc()).toMSecsSinceEpoch();
}

inline QDateTime timeOf(qint64 ms)
{
    return QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC);
}

// "Lives in" -> "lives_in": lower case, runs of anything but letters and digits made one '_'.
inline QString normalizedLabel(const QString &label)
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

// Ids and texts as a JSON array, for statements that take a list as one parameter.
inline QByteArray idsJson(const std::vector<qint64> &ids)
{
    Json j = Json::array();
    for (qint64 id : ids)
        j.push_back(id);
    return QByteArray::fromStdString(j.dump());
}

inline QByteArray textsJson(const QStringList &texts)
{
    Json j = Json::array();
    for (const QString &t : texts)
        j.push_back(t.toStdString());
    return QByteArray::fromStdString(j.dump());
}

// The kind a graph history row names (GraphChange::kindName()); AddEntity for an unknown name.
inline GraphChange::Kind kindFromName(const QString &name)
{
    for (GraphChange::Kind k : {GraphChange::Kind::AddEntity, GraphChange::Kind::LinkEntity, GraphChange::Kind::AddRelation,
                                GraphChange::Kind::LinkRelation, GraphChange::Kind::Invalidate})
        if (GraphChange::kindName(k) == name)
            return k;
    return GraphChange::Kind::AddEntity;
}

// Graph reads (entities, relations, the searches): the columns read, in this order (a table aliased t;
// an entity's then add its record ids joined by char 31 and its embedding or NULL; a relation's read
// its entities' names from the tables aliased a and b, then add its record ids joined by char 31 and
// its extractor), and the entity or relation of a row read so. `Row` as for the dumps below.
inline constexpr char kEntityReadColumns[] = "t.id, t.name, t.norm, t.type, t.scope, t.source, t.private, t.created_at";
inline constexpr char kRelationReadColumns[] = "t.id, t.src, a.name, t.label, t.dst, b.name, t.valid, t.created_at, "
                                               "t.invalidated_at, t.why, t.scope, t.source, t.private";

template<class Row>
GraphEntity entityOf(const Row &r, bool withEmbedding)
{
    GraphEntity e;
    e.id = r.int64(0);
    e.name = r.text(1);
    e.normalizedName = r.text(2);
    e.type = r.text(3);
    e.scope = r.text(4);
    e.source = r.text(5);
    e.isPrivate = r.flag(6);
    e.createdAt = timeOf(r.int64(7));
    e.recordIds = r.text(8).split(QChar(31), Qt::SkipEmptyParts);
    if (withEmbedding && !r.isNull(9))
        e.embedding = r.embedding(9);
    return e;
}

template<class Row>
GraphRelation relationOf(const Row &r)
{
    GraphRelation rel;
    rel.id = r.int64(0);
    rel.sourceId = r.int64(1);
    rel.sourceName = r.text(2);
    rel.label = r.text(3);
    rel.destinationId = r.int64(4);
    rel.destinationName = r.text(5);
    rel.valid = r.flag(6);
    rel.createdAt = timeOf(r.int64(7));
    if (!r.isNull(8))
        rel.invalidatedAt = timeOf(r.int64(8));
    rel.why = r.text(9);
    rel.scope = r.text(10);
    rel.source = r.text(11);
    rel.isPrivate = r.flag(12);
    rel.recordIds = r.text(13).split(QChar(31), Qt::SkipEmptyParts);
    rel.extractor = r.text(14);
    return rel;
}

// Graph dumps (GraphStore::dumpRows): the columns each table's dump reads, in this order (a table
// aliased t; the entities and relations then add their record ids joined by char 31), and the JSON
// object of a row read so. `Row` reads the current row's column c: int64(c), text(c), isNull(c),
// flag(c) and embedding(c): the backend's current row.
inline constexpr char kEntityDumpColumns[] = "t.id, t.name, t.norm, t.type, t.scope, t.source, t.private, t.created_at, t.embedding";
inline constexpr char kRelationDumpColumns[] = "t.id, t.src, t.label, t.dst, t.valid, t.created_at, t.invalidated_at, "
                                               "t.invalidated_by, t.why, t.scope, t.source, t.private, t.extractor, t.embedding";
inline constexpr char kHistoryDumpColumns[] = "seq, record_id, change, row_id, at";

inline Json recordIdsJson(const QString &joined)
{
    Json ids = Json::array();
    for (const QString &id : joined.split(QChar(31), Qt::SkipEmptyParts))
        ids.push_back(id.toStdString());
    return ids;
}

template<class Row>
Json nullableText(const Row &r, int c)
{
    return r.isNull(c) ? Json() : Json(r.text(c).toStdString());
}

template<class Row>
Json entityDumpJson(const Row &r)
{
    return Json{{"id", r.int64(0)},
                {"name", r.text(1).toStdString()},
                {"norm", r.text(2).toStdString()},
                {"type", r.text(3).toStdString()},
                {"scope", r.text(4).toStdString()},
                {"source", r.text(5).toStdString()},
                {"private", r.flag(6)},
                {"created_at", r.int64(7)},
                {"embedding", r.isNull(8) ? Json() : Json(r.embedding(8))},
                {"record_ids", recordIdsJson(r.text(9))}};
}

template<class Row>
Json relationDumpJson(const Row &r)
{
    return Json{{"id", r.int64(0)},
                {"src", r.int64(1)},
                {"label", r.text(2).toStdString()},
                {"dst", r.int64(3)},
                {"valid", r.flag(4)},
                {"created_at", r.int64(5)},
                {"invalidated_at", r.isNull(6) ? Json() : Json(r.int64(6))},
                {"invalidated_by", nullableText(r, 7)},
                {"why", nullableText(r, 8)},
                {"scope", r.text(9).toStdString()},
                {"source", r.text(10).toStdString()},
                {"private", r.flag(11)},
                {"extractor", r.text(12).toStdString()},
                {"embedding", r.isNull(13) ? Json() : Json(r.embedding(13))},
                {"record_ids", recordIdsJson(r.text(14))}};
}

template<class Row>
Json historyDumpJson(const Row &r)
{
    return Json{{"seq", r.int64(0)},
                {"record_id", r.text(1).toStdString()},
                {"change", r.text(2).toStdString()},
                {"row_id", r.int64(3)},
                {"at", r.int64(4)}};
}

} // namespace mneme::graphrows
