#pragma once

// nlohmann/json glue for Qt value types, and small helpers shared by every layer.

#include <mneme/core/export.h>

#include <QDateTime>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <nlohmann/json.hpp>

namespace nlohmann {

template<>
struct adl_serializer<QString>
{
    static void to_json(json &j, const QString &s) { j = s.toStdString(); }
    static void from_json(const json &j, QString &s) { s = QString::fromStdString(j.get<std::string>()); }
};

template<>
struct adl_serializer<QStringList>
{
    static void to_json(json &j, const QStringList &list)
    {
        j = json::array();
        for (const QString &s : list)
            j.push_back(s.toStdString());
    }
    static void from_json(const json &j, QStringList &list)
    {
        list.clear();
        for (const auto &e : j)
            list.append(QString::fromStdString(e.get<std::string>()));
    }
};

} // namespace nlohmann

namespace mneme {

using Json = nlohmann::json;

// ISO 8601 in UTC with milliseconds and a trailing Z ("2026-11-21T23:39:26.123Z"); empty for an invalid time.
MNEME_CORE_EXPORT QString toIso(const QDateTime &t);
// Parses ISO 8601 with or without offset, date-only ("2023-05-08") or with time; assumes UTC when no
// offset is given. Returns an invalid QDateTime when the text is not a date.
MNEME_CORE_EXPORT QDateTime fromIso(const QString &text);
// The current time in UTC, millisecond precision.
MNEME_CORE_EXPORT QDateTime nowUtc();

// Parses text as JSON; throws mneme::Error(InvalidArgument) naming `what` when it is not valid JSON.
MNEME_CORE_EXPORT Json parseJson(const QString &text, const QString &what);
MNEME_CORE_EXPORT QJsonObject toQJson(const Json &object);
MNEME_CORE_EXPORT Json fromQJson(const QJsonObject &object);

} // namespace mneme
