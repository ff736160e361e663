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

} // namespace mneme::graphrows
