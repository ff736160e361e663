#pragma once

#include <mneme/core/memory_record.h>
#include <mneme/core/record_filter.h>

#include <QMap>
#include <QString>
#include <QStringList>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace mneme {

// Answers of the aggregates a bulk load asks for once a batch (the categories of a filter, the child
// scopes of a scope, the newest records of each scope), kept for the next call with the same
// arguments: computing them costs a scan of the store, and a batch of saves changes them only by the
// records it inserted. The store that owns it decides when an answer no longer holds (clear(): another
// writer committed, or a write other than an insert) and adds the records it inserted itself (add()),
// which keeps the answers exact. At most kEntries answers of each kind (a batch asks with one or two
// filters); the oldest goes first. Not thread-safe: the owning store guards it.
class ReadCache
{
public:
    static constexpr std::size_t kEntries = 8;

    std::optional<QMap<QString, int>> categories(const RecordFilter &filter) const;
    void keepCategories(const RecordFilter &filter, const QMap<QString, int> &counts);

    std::optional<QStringList> childScopes(const QString &parent, const RecordFilter &visible) const;
    void keepChildScopes(const QString &parent, const RecordFilter &visible, const QStringList &names);

    // Up to perScope records of each scope, newest first; scopes sorted.
    std::optional<std::vector<MemoryRecord>> scopeSamples(const RecordFilter &filter, int perScope) const;
    // Keeps `samples` (each scope's newest first), returns them in the order scopeSamples() answers.
    std::vector<MemoryRecord> keepScopeSamples(const RecordFilter &filter, int perScope, std::vector<MemoryRecord> samples);

    // Adds records just inserted, newer than every record the answers were read from.
    void add(const std::vector<const MemoryRecord *> &inserted);
    void clear();
    bool empty() const { return m_categories.empty() && m_children.empty() && m_samples.empty(); }

private:
    struct Categories
    {
        RecordFilter filter;
        QMap<QString, int> counts;
    };
    struct Children
    {
        QString parent;
        RecordFilter visible;
        std::set<QString> names;
    };
    struct Samples
    {
        RecordFilter filter;
        int perScope = 0;
        std::map<QString, std::vector<MemoryRecord>> byScope; // newest first
        std::vector<MemoryRecord> flattened() const;
    };
    std::vector<Categories> m_categories;
    std::vector<Children> m_children;
    std::vector<Samples> m_samples;
};

} // namespace mneme
