#include "vector_index.h"

#include "core/vector_math.h"

#include "core/scope_path.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mneme {

namespace {

constexpr qint64 kUnknownTime = std::numeric_limits<qint64>::min();

bool better(const VectorIndex::Hit &a, const VectorIndex::Hit &b)
{
    if (a.score != b.score)
        return a.score > b.score;
    return a.rowid < b.rowid;
}

} // namespace

void VectorIndex::reset(int dimension)
{
    invalidate();
    m_dimension = dimension;
    m_loaded = true;
}

void VectorIndex::invalidate()
{
    m_loaded = false;
    m_dimension = 0;
    m_vectors.clear();
    m_norms.clear();
    m_rowids.clear();
    m_ids.clear();
    m_scope.clear();
    m_cats.clear();
    m_source.clear();
    m_private.clear();
    m_created.clear();
    m_slotOfRow.clear();
    m_slotOfId.clear();
    m_scopeIds.clear();
    m_scopeNames.clear();
    m_categoryIds.clear();
    m_categoryNames.clear();
    m_sourceIds.clear();
    m_sourceNames.clear();
}

int VectorIndex::intern(QHash<QString, int> &table, QStringList &names, const QString &value)
{
    auto it = table.constFind(value);
    if (it != table.constEnd())
        return it.value();
    const int id = int(names.size());
    names.append(value);
    table.insert(value, id);
    return id;
}

void VectorIndex::fill(std::size_t slot, const Item &item)
{
    if (m_ids[slot] != item.id) {
        m_slotOfId.remove(m_ids[slot]);
        m_ids[slot] = item.id;
        m_slotOfId.insert(item.id, slot);
    }
    m_scope[slot] = intern(m_scopeIds, m_scopeNames, item.scope);
    std::vector<int> cats;
    cats.reserve(std::size_t(item.categories.size()));
    for (const QString &c : item.categories)
        cats.push_back(intern(m_categoryIds, m_categoryNames, c));
    m_cats[slot] = std::move(cats);
    m_source[slot] = intern(m_sourceIds, m_sourceNames, item.source);
    m_private[slot] = item.isPrivate ? 1 : 0;
    m_created[slot] = item.hasCreated ? item.createdMs : kUnknownTime;
}

void VectorIndex::upsert(const Item &item, const float *vector)
{
    const std::size_t dim = std::size_t(m_dimension);
    std::size_t slot;
    auto it = m_slotOfRow.constFind(item.rowid);
    if (it != m_slotOfRow.constEnd()) {
        slot = it.value();
    } else {
        slot = m_rowids.size();
        m_rowids.push_back(item.rowid);
        m_ids.emplace_back();
        m_scope.push_back(0);
        m_cats.emplace_back();
        m_source.push_back(0);
        m_private.push_back(0);
        m_created.push_back(kUnknownTime);
        m_norms.push_back(0);
        m_vectors.resize(m_vectors.size() + dim);
        m_slotOfRow.insert(item.rowid, slot);
    }
    std::copy(vector, vector + dim, m_vectors.begin() + std::ptrdiff_t(slot * dim));
    m_norms[slot] = std::sqrt(VectorMath::dot(vector, vector, m_dimension));
    fill(slot, item);
}

void VectorIndex::updateAttributes(const Item &item)
{
    auto it = m_slotOfRow.constFind(item.rowid);
    if (it != m_slotOfRow.constEnd())
        fill(it.value(), item);
}

void VectorIndex::remove(qint64 rowid)
{
    auto it = m_slotOfRow.constFind(rowid);
    if (it == m_slotOfRow.constEnd())
        return;
    const std::size_t slot = it.value();
    const std::size_t last = m_rowids.size() - 1;
    const std::size_t dim = std::size_t(m_dimension);
    m_slotOfRow.remove(rowid);
    m_slotOfId.remove(m_ids[slot]);
    if (slot != last) {
        std::copy(m_vectors.begin() + std::ptrdiff_t(last * dim), m_vectors.begin() + std::ptrdiff_t((last + 1) * dim),
                  m_vectors.begin() + std::ptrdiff_t(slot * dim));
        m_norms[slot] = m_norms[last];
        m_rowids[slot] = m_rowids[last];
        m_ids[slot] = std::move(m_ids[last]);
        m_scope[slot] = m_scope[last];
        m_cats[slot] = std::move(m_cats[last]);
        m_source[slot] = m_source[last];
        m_private[slot] = m_private[last];
        m_created[slot] = m_created[last];
        m_slotOfRow.insert(m_rowids[slot], slot);
        m_slotOfId.insert(m_ids[slot], slot);
    }
    m_vectors.resize(last * dim);
    m_norms.pop_back();
    m_rowids.pop_back();
    m_ids.pop_back();
    m_scope.pop_back();
    m_cats.pop_back();
    m_source.pop_back();
    m_private.pop_back();
    m_created.pop_back();
}

const float *VectorIndex::vector(qint64 rowid) const
{
    auto it = m_slotOfRow.constFind(rowid);
    if (it == m_slotOfRow.constEnd())
        return nullptr;
    return m_vectors.data() + it.value() * std::size_t(m_dimension);
}

std::vector<VectorIndex::Hit> VectorIndex::search(const float *query, const RecordFilter &filter, int limit) const
{
    std::vector<Hit> hits;
    if (limit == 0 || m_rowids.empty())
        return hits;
    const int dim = m_dimension;

    // Scope conditions, decided once per distinct scope.
    std::vector<std::uint8_t> scopeOk;
    if (!filter.scopes.isEmpty()) {
        scopeOk.assign(std::size_t(m_scopeNames.size()), 0);
        for (qsizetype i = 0; i < m_scopeNames.size(); ++i) {
            for (const QString &prefix : filter.scopes) {
                if (ScopePath::contains(prefix, m_scopeNames.at(i))) {
                    scopeOk[std::size_t(i)] = 1;
                    break;
                }
            }
        }
    }
    // Categories: any of them.
    std::vector<std::uint8_t> categoryWanted;
    if (!filter.categories.isEmpty()) {
        categoryWanted.assign(std::size_t(m_categoryNames.size()), 0);
        bool any = false;
        for (const QString &c : filter.categories) {
            auto it = m_categoryIds.constFind(c);
            if (it != m_categoryIds.constEnd()) {
                categoryWanted[std::size_t(it.value())] = 1;
                any = true;
            }
        }
        if (!any)
            return hits;
    }
    int onlySource = -1;
    if (!filter.onlySource.isEmpty()) {
        auto it = m_sourceIds.constFind(filter.onlySource);
        if (it == m_sourceIds.constEnd())
            return hits;
        onlySource = it.value();
    }
    const bool hidePrivate = filter.applyPrivacy && !filter.includePrivate;
    int visibleSource = -2; // matches no record
    if (hidePrivate && !filter.source.isEmpty()) {
        auto it = m_sourceIds.constFind(filter.source);
        if (it != m_sourceIds.constEnd())
            visibleSource = it.value();
    }
    const bool hasBefore = filter.createdBefore.isValid();
    const bool hasAfter = filter.createdAfter.isValid();
    const qint64 before = hasBefore ? filter.createdBefore.toMSecsSinceEpoch() : 0;
    const qint64 after = hasAfter ? filter.createdAfter.toMSecsSinceEpoch() : 0;

    auto selected = [&](std::size_t s) {
        if (!scopeOk.empty() && !scopeOk[std::size_t(m_scope[s])])
            return false;
        if (!categoryWanted.empty()) {
            bool any = false;
            for (int c : m_cats[s]) {
                if (categoryWanted[std::size_t(c)]) {
                    any = true;
                    break;
                }
            }
            if (!any)
                return false;
        }
        if (onlySource >= 0 && m_source[s] != onlySource)
            return false;
        if (hidePrivate && m_private[s] && m_source[s] != visibleSource)
            return false;
        if (hasBefore && !(m_created[s] < before))
            return false;
        if (hasAfter && m_created[s] < after)
            return false;
        return true;
    };

    const float queryNorm = std::sqrt(VectorMath::dot(query, query, dim));
    auto score = [&](std::size_t s) {
        const float denominator = queryNorm * m_norms[s];
        if (denominator <= 0)
            return 0.0;
        return double(VectorMath::dot(query, m_vectors.data() + s * std::size_t(dim), dim) / denominator);
    };

    if (!filter.ids.isEmpty()) {
        std::vector<std::size_t> slots;
        for (const QString &id : filter.ids) {
            auto it = m_slotOfId.constFind(id);
            if (it != m_slotOfId.constEnd())
                slots.push_back(it.value());
        }
        std::sort(slots.begin(), slots.end());
        slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
        for (std::size_t s : slots)
            if (selected(s))
                hits.push_back({m_rowids[s], score(s)});
    } else {
        hits.reserve(m_rowids.size());
        for (std::size_t s = 0, n = m_rowids.size(); s < n; ++s)
            if (selected(s))
                hits.push_back({m_rowids[s], score(s)});
    }

    if (limit > 0 && std::size_t(limit) < hits.size()) {
        std::nth_element(hits.begin(), hits.begin() + limit, hits.end(), better);
        hits.resize(std::size_t(limit));
    }
    std::sort(hits.begin(), hits.end(), better);
    return hits;
}

} // namespace mneme
