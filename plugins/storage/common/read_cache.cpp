#include "plugins/storage/common/read_cache.h"

#include <mneme/core/metadata_filter.h>
#include <mneme/core/scope_path.h>

#include <map>

namespace mneme {

namespace {

bool sameFilter(const RecordFilter &a, const RecordFilter &b)
{
    return a.scopes == b.scopes && a.categories == b.categories && a.metadata == b.metadata && a.ids == b.ids
        && a.createdBefore == b.createdBefore && a.createdAfter == b.createdAfter && a.applyPrivacy == b.applyPrivacy
        && a.includePrivate == b.includePrivate && a.source == b.source && a.onlySource == b.onlySource;
}

template<typename Entries>
void keepAnswer(Entries &entries, typename Entries::value_type entry)
{
    if (entries.size() >= ReadCache::kEntries)
        entries.erase(entries.begin());
    entries.push_back(std::move(entry));
}

} // namespace

std::optional<QMap<QString, int>> ReadCache::categories(const RecordFilter &filter) const
{
    for (const Categories &c : m_categories)
        if (sameFilter(c.filter, filter))
            return c.counts;
    return std::nullopt;
}

void ReadCache::keepCategories(const RecordFilter &filter, const QMap<QString, int> &counts)
{
    keepAnswer(m_categories, Categories{filter, counts});
}

std::optional<QStringList> ReadCache::childScopes(const QString &parent, const RecordFilter &visible) const
{
    for (const Children &c : m_children)
        if (c.parent == parent && sameFilter(c.visible, visible))
            return QStringList(c.names.begin(), c.names.end());
    return std::nullopt;
}

void ReadCache::keepChildScopes(const QString &parent, const RecordFilter &visible, const QStringList &names)
{
    keepAnswer(m_children, Children{parent, visible, std::set<QString>(names.begin(), names.end())});
}

std::vector<MemoryRecord> ReadCache::Samples::flattened() const
{
    std::vector<MemoryRecord> out;
    for (const auto &[scope, records] : byScope)
        out.insert(out.end(), records.begin(), records.end());
    return out;
}

std::optional<std::vector<MemoryRecord>> ReadCache::scopeSamples(const RecordFilter &filter, int perScope) const
{
    for (const Samples &s : m_samples)
        if (s.perScope == perScope && sameFilter(s.filter, filter))
            return s.flattened();
    return std::nullopt;
}

std::vector<MemoryRecord> ReadCache::keepScopeSamples(const RecordFilter &filter, int perScope, std::vector<MemoryRecord> samples)
{
    Samples s;
    s.filter = filter;
    s.perScope = perScope;
    for (MemoryRecord &r : samples)
        s.byScope[r.scope].push_back(std::move(r));
    std::vector<MemoryRecord> out = s.flattened();
    keepAnswer(m_samples, std::move(s));
    return out;
}

void ReadCache::clear()
{
    m_categories.clear();
    m_children.clear();
    m_samples.clear();
}

void ReadCache::add(const std::vector<const MemoryRecord *> &inserted)
{
    for (Categories &c : m_categories) {
        const MetadataFilter conditions = MetadataFilter::parse(c.filter.metadata);
        for (const MemoryRecord *r : inserted) {
            if (!c.filter.matches(*r, conditions))
                continue;
            QStringList cats = r->categories;
            cats.removeDuplicates();
            for (const QString &name : std::as_const(cats))
                ++c.counts[name];
        }
    }
    for (Children &c : m_children) {
        const MetadataFilter conditions = MetadataFilter::parse(c.visible.metadata);
        for (const MemoryRecord *r : inserted) {
            const QString child = ScopePath::childToward(c.parent, r->scope);
            if (!child.isEmpty() && c.visible.matches(*r, conditions))
                c.names.insert(child);
        }
    }
    for (Samples &s : m_samples) {
        // The newest perScope of the batch's records of each scope (the last inserted first), before the
        // ones kept: only those are copied.
        const MetadataFilter conditions = MetadataFilter::parse(s.filter.metadata);
        std::map<QString, std::vector<const MemoryRecord *>> newest;
        for (auto it = inserted.rbegin(); it != inserted.rend(); ++it) {
            const MemoryRecord *r = *it;
            if (r->embedding.empty())
                continue;
            std::vector<const MemoryRecord *> &fresh = newest[r->scope];
            if (int(fresh.size()) < s.perScope && s.filter.matches(*r, conditions))
                fresh.push_back(r);
        }
        for (const auto &[scope, fresh] : newest) {
            if (fresh.empty())
                continue;
            std::vector<MemoryRecord> &kept = s.byScope[scope];
            std::vector<MemoryRecord> merged;
            merged.reserve(std::size_t(s.perScope));
            for (const MemoryRecord *r : fresh)
                merged.push_back(*r);
            for (MemoryRecord &r : kept) {
                if (int(merged.size()) >= s.perScope)
                    break;
                merged.push_back(std::move(r));
            }
            kept = std::move(merged);
        }
    }
}

} // namespace mneme
