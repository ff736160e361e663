#pragma once

// nlohmann/json glue for Qt value types, and small helpers shared by every layer.

#include <mneme/core/export.h>

#include <QDateTime>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <nlohmann/json.hpp>
#include <string_view>

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
// Parses ISO 8601: a date ("2023-05-08"), or a date and a time ("2024-05-01T12:00", seconds and a
// fraction optional, 'T' or a space between), with "Z" or an offset up to 14 hours ("+02:00",
// "+0200", "-05") or none (UTC). The whole text (white space around it aside) must be the date-time,
// every field in its range, and the instant in UTC within the years 1 to 9999. Anything else gives
// an invalid QDateTime.
MNEME_CORE_EXPORT QDateTime fromIso(const QString &text);
// The current time in UTC, millisecond precision.
MNEME_CORE_EXPORT QDateTime nowUtc();

// How deep JSON read from outside (files, standard input, command-line values, providers' replies,
// the columns of a store) may nest. Deeper documents are refused before they are parsed: copying,
// comparing and writing a JSON value recurse once per level, and a hostile document of a few
// hundred kilobytes nested tens of thousands of levels deep would overflow a thread's stack.
inline constexpr int kJsonMaxDepth = 64;

// Parses JSON read from outside into *out. Returns an empty string when it is acceptable, else what
// is wrong with it in words, without the JSON library's prefix: "it nests deeper than 64 levels",
// "parse error at line 1, column 7: syntax error ...", "number overflow parsing '1e309'". With
// `ignoreComments`, /* */ and // comments are skipped.
MNEME_CORE_EXPORT QString readJson(std::string_view utf8, Json *out, bool ignoreComments = false);
// readJson() for callers that only need to know whether it worked: a discarded value
// (Json::is_discarded()) for what it refuses.
MNEME_CORE_EXPORT Json parseJsonOrDiscarded(std::string_view utf8, bool ignoreComments = false);
// Parses text as JSON (readJson()); throws mneme::Error(InvalidArgument) naming `what` when it is
// not acceptable JSON.
MNEME_CORE_EXPORT Json parseJson(const QString &text, const QString &what);
// The nesting depth of a value: 0 for a scalar, 1 for {} or [], 2 for {"a": []}. Not recursive.
MNEME_CORE_EXPORT int jsonDepth(const Json &value);
MNEME_CORE_EXPORT QJsonObject toQJson(const Json &object);
MNEME_CORE_EXPORT Json fromQJson(const QJsonObject &object);

} // namespace mneme
