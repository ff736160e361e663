#pragma once

#include <mneme/core/history_entry.h>
#include <mneme/core/memory_record.h>
#include <mneme/core/record_filter.h>
#include <mneme/core/scope_info.h>
#include <mneme/memory/memory.h>

#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>
#include <functional>
#include <optional>

namespace mneme::cli {

// The memory as one source sees it: the one place where the servers (`mneme mcp`, `mneme serve`)
// decide what a caller may read and change. A record that is private to another source never
// leaves through it, cannot be changed, forgotten or undone through it, and nothing it reports
// reveals it: counts, categories, dates and scope names are those of the records the source sees.
// Such a record's id is answered exactly like an id that does not exist.
//
// A source sees every record that is not private, and the private records whose source is its own;
// an empty source sees public records only and cannot store private ones. Records it stores carry
// its source.
//
// Everything goes through the memory as this source (reader()), which confines reads and writes to
// what the source sees, and each result is checked again where it matters most. scopeCounts() alone
// reads the records the source sees page by page (its cost grows with the subtree). Thread-safe as
// Memory is: one SourceView serves concurrent requests.
class SourceView
{
public:
    SourceView(Memory &memory, QString source);

    Memory &memory() const { return m_memory; }
    const QString &source() const { return m_source; }
    bool sees(const MemoryRecord &record) const;
    // The same test on a record's JSON (a history entry's old or new record).
    bool seesJson(const Json &record) const;
    // The reader the memory's own reads and writes are made as: this source.
    ReadContext reader() const;

    MemoryRecord remember(const QString &content, RememberOptions options);
    SaveResult rememberMany(QList<MemoryInput> items);
    QList<MemoryMatch> recall(const QString &query, RecallOptions options);
    std::optional<MemoryRecord> get(const QString &id);
    QList<HistoryEntry> history(const QString &id);
    MemoryRecord update(const QString &id, const UpdateOptions &options);
    MemoryRecord undo(const QString &id);
    int forget(const ForgetOptions &options);
    QList<MemoryRecord> list(const QString &scope, int limit, int offset);
    ScopeNode tree(const QString &path, int maxDepth);
    ScopeInfo info(const QString &path);
    QStringList scopes(const QString &path);
    QMap<QString, int> categories(const QString &scope);
    // Every scope of `path`'s subtree (itself included) that holds records this source sees, with how
    // many it holds, itself and below: what tree() is made of, and the list of scopes as resources.
    QMap<QString, int> scopeCounts(const QString &path);
    QStringList extract(const QString &text);

    // Error(NotFound) for an id that does not exist, or names a record this source does not see.
    [[noreturn]] static void unknownId(const QString &id);

private:
    // The storage filter for the records of `scope`'s subtree this source sees.
    RecordFilter filterFor(const QString &scope) const;
    // Calls fn for every record of the subtree the source sees, newest first.
    void forEachSeen(const QString &scope, const std::function<void(const MemoryRecord &)> &fn);
    std::optional<MemoryRecord> seenRecord(const QString &id);
    // The record with this id, seen by this source, else Error(NotFound) as for an unknown id.
    MemoryRecord requireSeen(const QString &id);

    Memory &m_memory;
    const QString m_source;
};

} // namespace mneme::cli
