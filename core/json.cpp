#include <mneme/core/json.h>

#include <mneme/core/error.h>

#include <QJsonDocument>
#include <QRegularExpression>
#include <algorithm>
#include <vector>

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
    // The whole text must be the date-time: Qt's own ISO reader takes the date of "2024-05-01T25:00"
    // or of "2024-05-01 and more" for the whole, and reads "2024/05/01" as a date.
    static const QRegularExpression iso(QStringLiteral("^(\\d{4})-(\\d{2})-(\\d{2})(?:[Tt ](\\d{2}):(\\d{2})(?::(\\d{2})(?:[.,](\\d+))?)?"
                                                       "\\s*(?:([Zz])|([+-])(\\d{2})(?::?(\\d{2}))?)?)?$"));
    const QRegularExpressionMatch m = iso.match(text.trimmed());
    if (!m.hasMatch())
        return {};
    const QDate date(m.captured(1).toInt(), m.captured(2).toInt(), m.captured(3).toInt());
    // Fractions beyond milliseconds are cut, not rounded, so 59.9999 stays in the same second.
    const int ms = m.captured(7).isEmpty() ? 0 : (m.captured(7) + QStringLiteral("00")).left(3).toInt();
    const QTime time = m.captured(4).isEmpty() ? QTime(0, 0) : QTime(m.captured(4).toInt(), m.captured(5).toInt(), m.captured(6).toInt(), ms);
    if (!date.isValid() || !time.isValid())
        return {};
    int offset = 0;
    if (!m.captured(9).isEmpty()) {
        const int hours = m.captured(10).toInt();
        const int minutes = m.captured(11).toInt();
        if (hours > 14 || minutes > 59 || (hours == 14 && minutes > 0))
            return {};
        offset = (hours * 3600 + minutes * 60) * (m.captured(9) == QLatin1String("-") ? -1 : 1);
    }
    const QDateTime utc = QDateTime(date, time, Qt::OffsetFromUTC, offset).toUTC();
    // Only the four-digit years: others have no ISO 8601 form without an agreement on more digits.
    if (utc.date().year() < 1 || utc.date().year() > 9999)
        return {};
    return utc;
}

QDateTime nowUtc()
{
    return QDateTime::currentDateTimeUtc();
}

namespace {

// True when the text opens more than kJsonMaxDepth arrays or objects at once. A scan of the bytes
// (strings skipped), so that nothing deep is ever built.
bool nestsTooDeep(std::string_view utf8)
{
    int depth = 0;
    bool inString = false;
    bool escaped = false;
    for (const char c : utf8) {
        if (inString) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kJsonMaxDepth)
                return true;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return false;
}

// The library's message without its "[json.exception.parse_error.101] " prefix.
QString withoutPrefix(const char *what)
{
    QString message = QString::fromUtf8(what);
    if (message.startsWith(QLatin1String("[json.exception."))) {
        const qsizetype end = message.indexOf(QLatin1String("] "));
        if (end > 0)
            message = message.mid(end + 2);
    }
    return message;
}

} // namespace

QString readJson(std::string_view utf8, Json *out, bool ignoreComments)
{
    if (nestsTooDeep(utf8))
        return QStringLiteral("it nests deeper than %1 levels of arrays and objects").arg(kJsonMaxDepth);
    try {
        *out = Json::parse(utf8.begin(), utf8.end(), nullptr, true, ignoreComments);
    } catch (const Json::exception &e) {
        return withoutPrefix(e.what());
    }
    return QString();
}

Json parseJsonOrDiscarded(std::string_view utf8, bool ignoreComments)
{
    if (nestsTooDeep(utf8))
        return Json(Json::value_t::discarded);
    return Json::parse(utf8.begin(), utf8.end(), nullptr, false, ignoreComments);
}

Json parseJson(const QString &text, const QString &what)
{
    const std::string utf8 = text.toStdString();
    Json j;
    const QString problem = readJson(utf8, &j);
    if (!problem.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1 is not valid JSON (%2); check its syntax").arg(what, problem));
    return j;
}

int jsonDepth(const Json &value)
{
    int deepest = 0;
    std::vector<std::pair<const Json *, int>> pending{{&value, 0}};
    while (!pending.empty()) {
        const auto [v, depth] = pending.back();
        pending.pop_back();
        if (!v->is_structured())
            continue;
        deepest = std::max(deepest, depth + 1);
        for (const Json &child : *v)
            pending.emplace_back(&child, depth + 1);
    }
    return deepest;
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
