#pragma once

// Private to the memory library: deep recall.

#include "memory/memory_match.h"
#include "memory/memory_options.h"

#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>

namespace mneme {

class MemoryPrivate;

class RecallFlow
{
public:
    explicit RecallFlow(MemoryPrivate &d) : d(d) {}
    // `scopes`: resolved, normalised scopes to search (the root scope when none was asked for);
    // `categories`: validated. Throws only for storage and embedder failures.
    QList<MemoryMatch> run(const QString &query, const RecallOptions &options, const QStringList &scopes,
                           const QStringList &categories, const QDateTime &now);

private:
    MemoryPrivate &d;
};

} // namespace mneme
