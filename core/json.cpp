#include "core/json.h"

#include "core/error.h"

#include <QJsonDocument>

namespace mneme {

QString toIso(const QDateTime &t)
{
    if (!t.isValid())
        return {};
    return t.toUTC().toString(Qt::ISODateWithMs);
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
