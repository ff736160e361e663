#pragma once

#include <mneme/core/export.h>

#include <QString>
#include <QStringList>

namespace mneme {

// Scope paths are normalised absolute paths: "/", "/project/alpha". Matching is by whole path
// components (Mneme decision 1): "/crew/a" contains "/crew/a" and "/crew/a/x", never "/crew/ab".
class MNEME_CORE_EXPORT ScopePath
{
public:
    // Normalises a user-given path: trims white space, adds the leading '/', drops one trailing '/'.
    // Throws mneme::Error(InvalidArgument) for "..", ".", empty segments ("/a//b"), control
    // characters, a segment longer than 200 characters, more than 32 segments, or a path longer than
    // 1,000 characters. An empty string is "/".
    static QString normalize(const QString &path);
    // Like normalize(), but returns false and sets *error instead of throwing.
    static bool isValid(const QString &path, QString *error = nullptr);
    // Joins a root scope and an inner path: ("/crew/test", "/inner") -> "/crew/test/inner",
    // ("/crew/test", "/") -> "/crew/test", ("", "inner") -> "/inner". Both parts are normalised.
    static QString join(const QString &root, const QString &inner);
    // True when `path` is `prefix` or lies below it, component-wise.
    static bool contains(const QString &prefix, const QString &path);
    // "/a/b" -> "/a"; "/a" -> "/"; "/" -> "/".
    static QString parent(const QString &path);
    // "/a/b" -> ["a", "b"]; "/" -> [].
    static QStringList segments(const QString &path);
    // The immediate child of `parent` on the way to `path` ("/a", "/a/b/c" -> "/a/b"), or an empty
    // string when `path` is not strictly below `parent`.
    static QString childToward(const QString &parent, const QString &path);
    // A name made safe for one scope segment: lower case, [^a-z0-9_-] -> '-', runs of '-' collapsed,
    // '-' trimmed; "unknown" when nothing is left ("Research Crew" -> "research-crew").
    static QString sanitizeName(const QString &name);
};

} // namespace mneme
