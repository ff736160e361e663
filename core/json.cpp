#include "core/json.h"

#include "core/error.h"

#include <QJsonDocument>
#include <cstdio>

namespace mneme {

QString toIso(const QDateTime &t)
{
    if (!t.isValid())
        return {};
    // Formatted by hand: QDateTime::toString() is a measurable cost when every saved record writes
    // its times into the history.
    const QDateTime u = t.timeSpec() == Qt::UTC ? t : t.toUTC();
    const QDate d = u.date();
    const QTime c = u.time();
    if (d.year() < 0 || d.year() > 9999)
        return u.toString(Qt::ISODateWithMs);
    char buf[32];
    const int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", d.year(), d.month(), d.day(),
                                c.hour(), c.minute(), c.second(), c.msec());
    return QString::fromLatin1(buf, n);
}

QDateTime fromIso(const QString &text)
{
    const QString s = text.trimmed();
    if (s.isEmpty())
        return {};
    QDateTime t = QDateTime::fromString(s, Qt::ISODateWithMs);
    if (!t.isValid())
        t = QDateTime::fromString(s, Qt::ISODate);
    if (!t.isValid()) {
        const QDate d = QDate::fromString(s, Qt::ISODate);
        if (d.isValid())
            t = QDateTime(d, QTime(0, 0), Qt::UTC);
    }
    if (!t.isValid())
        return {};
    if (t.timeSpec() == Qt::LocalTime)
        t = QDateTime(t.date(), t.time(), Qt::UTC);
    return t.toUTC();
}

QDateTime nowUtc()
{
    return QDateTime::currentDateTimeUtc();
}

Json parseJson(const QString &text, const QString &what)
{
    try {
        return Json::parse(text.toStdString());
    } catch (const Json::parse_error &e) {
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1 is not valid JSON (%2); check its syntax")
                        .arg(what, QString::fromUtf8(e.what())));
    }
}

QJsonObject toQJson(const Json &object)
{
    if (!object.is_object())
        return {};
    return QJsonDocument::fromJson(QByteArray::fromStdString(object.dump())).object();
}

Json fromQJson(const QJsonObject &object)
{
    return Json::parse(QJsonDocument(object).toJson(QJsonDocument::Compact).toStdString());
}

} // namespace mneme
