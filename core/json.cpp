#include <mneme/core/json.h>

#include <mneme/core/error.h>

#include <QJsonDocument>

namespace mneme {

QString toIso(const QDateTime &t)
{
    if (!t.isValid())
        return {};
    // Formatted by hand from the milliseconds since the epoch: QDateTime::toString(), and even
    // date() and time(), are a measurable cost when every saved record writes its times into the
    // history. Years 1 to 9999 (the four-digit ones); any other goes through Qt.
    constexpr qint64 kDayMs = 86400000;
    constexpr qint64 kFirstMs = -62135596800000LL; // 0001-01-01T00:00:00.000Z
    constexpr qint64 kLastMs = 253402300799999LL;  // 9999-12-31T23:59:59.999Z
    const qint64 ms = t.toMSecsSinceEpoch();
    if (ms < kFirstMs || ms > kLastMs)
        return t.toUTC().toString(Qt::ISODateWithMs);
    const qint64 days = ms >= 0 ? ms / kDayMs : -((-ms + kDayMs - 1) / kDayMs);
    qint64 inDay = ms - days * kDayMs;
    // The civil date of a day count (proleptic Gregorian, 400-year eras that start on 1 March).
    const qint64 z = days + 719468;
    const qint64 era = (z >= 0 ? z : z - 146096) / 146097;
    const qint64 dayOfEra = z - era * 146097;
    const qint64 yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146096) / 365;
    const qint64 dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100);
    const qint64 mp = (5 * dayOfYear + 2) / 153;
    const int day = int(dayOfYear - (153 * mp + 2) / 5 + 1);
    const int month = int(mp < 10 ? mp + 3 : mp - 9);
    const int year = int(yearOfEra + era * 400 + (month <= 2 ? 1 : 0));
    const int msec = int(inDay % 1000);
    inDay /= 1000;
    const int second = int(inDay % 60), minute = int(inDay / 60 % 60), hour = int(inDay / 3600);
    char16_t out[24];
    const auto put = [&out](int at, int value, int digits) {
        for (int i = digits - 1; i >= 0; --i, value /= 10)
            out[at + i] = char16_t(u'0' + value % 10);
    };
    put(0, year, 4);
    out[4] = u'-';
    put(5, month, 2);
    out[7] = u'-';
    put(8, day, 2);
    out[10] = u'T';
    put(11, hour, 2);
    out[13] = u':';
    put(14, minute, 2);
    out[16] = u':';
    put(17, second, 2);
    out[19] = u'.';
    put(20, msec, 3);
    out[23] = u'Z';
    return QString(reinterpret_cast<const QChar *>(out), 24);
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
