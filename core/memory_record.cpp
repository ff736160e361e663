#include <mneme/core/memory_record.h>

#include <mneme/core/error.h>

#include <QRandomGenerator>
#include <QUuid>
#include <QtEndian>
#include <cmath>
#include <limits>

namespace mneme {

namespace {

// A version 7 UUID (RFC 9562): 48 bits of Unix time in milliseconds, then 74 random bits. Ids made
// one after another sort together, so a store's id index grows at its end instead of at random
// places, which keeps bulk saves of a large store from rewriting pages all over the index.
QString timeOrderedUuid()
{
    // The random bits only have to make ids differ: Qt's generator seeded once from the system's
    // (asking the system's for each id costs a hardware random-number instruction, slow in a VM).
    quint64 words[2];
    QRandomGenerator::global()->fillRange(words);
    uchar bytes[16];
    qToBigEndian(quint64(QDateTime::currentMSecsSinceEpoch()) << 16 | (words[0] & 0x0fff) | 0x7000, bytes);
    qToBigEndian((words[1] & 0x3fffffffffffffffULL) | 0x8000000000000000ULL, bytes + 8);
    return QUuid::fromRfc4122(QByteArrayView(bytes, 16)).toString(QUuid::WithoutBraces);
}

} // namespace

MemoryRecord MemoryRecord::create(const QString &content)
{
    MemoryRecord r;
    r.id = timeOrderedUuid();
    r.content = content;
    r.createdAt = nowUtc();
    r.updatedAt = r.createdAt;
    r.lastAccessed = r.createdAt;
    return r;
}

bool MemoryRecord::operator==(const MemoryRecord &o) const
{
    return id == o.id && content == o.content && scope == o.scope && categories == o.categories
        && importance == o.importance && source == o.source && isPrivate == o.isPrivate
        && metadata == o.metadata && createdAt == o.createdAt && updatedAt == o.updatedAt
        && lastAccessed == o.lastAccessed && accessCount == o.accessCount;
}

void to_json(Json &j, const MemoryRecord &r)
{
    j = Json{
        {"id", r.id},
        {"content", r.content},
        {"scope", r.scope},
        {"categories", r.categories},
        {"importance", r.importance},
        {"source", r.source.isEmpty() ? Json(nullptr) : Json(r.source)},
        {"private", r.isPrivate},
        {"metadata", r.metadata.is_object() ? r.metadata : Json::object()},
        {"created_at", toIso(r.createdAt)},
        {"updated_at", toIso(r.updatedAt)},
        {"last_accessed", toIso(r.lastAccessed)},
        {"access_count", r.accessCount},
    };
}

namespace {

[[noreturn]] void badField(const char *field, const char *expected)
{
    throw Error(ErrorKind::InvalidArgument,
                QStringLiteral("field \"%1\" must be %2").arg(QLatin1String(field), QLatin1String(expected)));
}

QDateTime timeField(const Json &j, const char *field)
{
    if (!j.contains(field) || j[field].is_null())
        return {};
    if (!j[field].is_string())
        badField(field, "an ISO 8601 string");
    const QDateTime t = fromIso(QString::fromStdString(j[field].get<std::string>()));
    if (!t.isValid())
        badField(field, "an ISO 8601 date or time such as 2024-05-01T12:00:00Z");
    return t;
}

} // namespace

void from_json(const Json &j, MemoryRecord &r)
{
    if (!j.is_object())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a record must be a JSON object"));
    r = MemoryRecord();
    auto str = [&](const char *field, QString &out) {
        if (!j.contains(field) || j[field].is_null())
            return;
        if (!j[field].is_string())
            badField(field, "a string");
        out = QString::fromStdString(j[field].get<std::string>());
    };
    str("id", r.id);
    str("content", r.content);
    str("scope", r.scope);
    str("source", r.source);
    if (j.contains("categories") && !j["categories"].is_null()) {
        if (!j["categories"].is_array())
            badField("categories", "an array of strings");
        for (const auto &c : j["categories"]) {
            if (!c.is_string())
                badField("categories", "an array of strings");
            r.categories.append(QString::fromStdString(c.get<std::string>()));
        }
    }
    if (j.contains("importance") && !j["importance"].is_null()) {
        if (!j["importance"].is_number())
            badField("importance", "a number between 0 and 1");
        r.importance = j["importance"].get<double>();
    }
    if (j.contains("private") && !j["private"].is_null()) {
        if (!j["private"].is_boolean())
            badField("private", "true or false");
        r.isPrivate = j["private"].get<bool>();
    }
    if (j.contains("metadata") && !j["metadata"].is_null()) {
        if (!j["metadata"].is_object())
            badField("metadata", "a JSON object");
        r.metadata = j["metadata"];
    }
    r.createdAt = timeField(j, "created_at");
    r.updatedAt = timeField(j, "updated_at");
    r.lastAccessed = timeField(j, "last_accessed");
    if (j.contains("access_count") && !j["access_count"].is_null()) {
        const Json &count = j["access_count"];
        // Read as the widest integer first: get<int>() would wrap 2^40 around to 0.
        const bool whole = count.is_number_integer() || (count.is_number_float() && std::floor(count.get<double>()) == count.get<double>());
        const double value = whole ? count.get<double>() : -1.0;
        if (!whole || value < 0 || value > double(std::numeric_limits<int>::max()))
            badField("access_count", "a whole number between 0 and 2147483647");
        r.accessCount = int(value);
    }
}

} // namespace mneme
