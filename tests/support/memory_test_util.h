#pragma once

// Small helpers shared by the memory tests.

#include <mneme/core/error.h>
#include <mneme/memory/memory_options.h>

namespace mneme::test {

// Options with every field given, so a save needs no analysis.
inline RememberOptions fields(const QString &scope, double importance = 0.5, const QStringList &categories = {})
{
    RememberOptions o;
    o.scope = scope;
    o.importance = importance;
    o.categories = categories;
    return o;
}

// The mneme::Error `f` throws, or an Internal error saying none was raised.
template<typename F>
Error errorOf(F &&f)
{
    try {
        f();
    } catch (const Error &e) {
        return e;
    }
    return Error(ErrorKind::Internal, QStringLiteral("no error was raised"));
}

} // namespace mneme::test
