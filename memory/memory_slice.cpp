#include <mneme/memory/memory_slice.h>

#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>
#include <mneme/memory/memory.h>

#include <algorithm>

namespace mneme {

MemorySlice::MemorySlice(Memory *memory, const QStringList &scopes, const QStringList &categories, bool readOnly)
    : m_memory(memory), m_categories(categories), m_readOnly(readOnly)
{
    if (scopes.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a memory slice needs at least one scope"));
    QStringList normalized;
    for (const QString &s : scopes)
        normalized << ScopePath::normalize(s);
    // A scope inside another of the slice adds nothing, and would count its records twice.
    for (const QString &n : std::as_const(normalized)) {
        const bool covered = std::any_of(normalized.begin(), normalized.end(), [&](const QString &other) {
            return other != n && ScopePath::contains(other, n);
        });
        if (!covered && !m_scopes.contains(n))
            m_scopes << n;
    }
}

Memory *MemorySlice::memory() const
{
    return m_memory.data();
}

Memory &MemorySlice::bound() const
{
    if (!m_memory)
        throw Error(ErrorKind::Internal, QStringLiteral("this MemorySlice's Memory no longer exists; keep the Memory alive while its views are used"));
    return *m_memory;
}

MemoryRecord MemorySlice::remember(const QString &content, const RememberOptions &options)
{
    if (m_readOnly || bound().isReadOnly())
        throw Error(ErrorKind::PermissionDenied,
                    QStringLiteral("this memory slice is read-only; write through a writable slice or the Memory itself"));
    if (!options.scope)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("a slice writes only with an explicit scope, one of: %1").arg(m_scopes.join(QStringLiteral(", "))));
    const QString target = ScopePath::normalize(*options.scope);
    const bool inside = std::any_of(m_scopes.begin(), m_scopes.end(),
                                    [&](const QString &s) { return ScopePath::contains(s, target); });
    if (!inside)
        throw Error(ErrorKind::PermissionDenied, QStringLiteral("scope %1 is outside this slice (%2); write inside one of its scopes")
                                                     .arg(target, m_scopes.join(QStringLiteral(", "))));
    return bound().remember(content, options);
}

QList<MemoryMatch> MemorySlice::recall(const QString &query, const RecallOptions &options)
{
    RecallOptions o = options;
    o.scopes = m_scopes;
    if (o.categories.isEmpty())
        o.categories = m_categories;
    return bound().recall(query, o);
}

QList<RelationMatch> MemorySlice::recallRelations(const QString &query, const RecallOptions &options)
{
    RecallOptions o = options;
    o.scopes = m_scopes;
    return bound().recallRelations(query, o);
}

QStringList MemorySlice::extractMemories(const QString &content)
{
    return bound().extractMemories(content);
}

QStringList MemorySlice::listScopes(const ReadContext &reader)
{
    QStringList out;
    for (const QString &s : m_scopes)
        out << bound().listScopes(s, reader);
    out.removeDuplicates();
    out.sort();
    return out;
}

ScopeInfo MemorySlice::info(const ReadContext &reader)
{
    ScopeInfo total;
    total.path = m_scopes.join(QStringLiteral(", "));
    for (const QString &s : m_scopes) {
        const ScopeInfo i = bound().info(s, reader);
        total.recordCount += i.recordCount;
        total.categories << i.categories;
        total.childScopes << i.childScopes;
        if (i.oldestRecord.isValid() && (!total.oldestRecord.isValid() || i.oldestRecord < total.oldestRecord))
            total.oldestRecord = i.oldestRecord;
        if (i.newestRecord.isValid() && (!total.newestRecord.isValid() || i.newestRecord > total.newestRecord))
            total.newestRecord = i.newestRecord;
    }
    total.categories.removeDuplicates();
    total.categories.sort();
    total.childScopes.removeDuplicates();
    total.childScopes.sort();
    return total;
}

QMap<QString, int> MemorySlice::listCategories(const ReadContext &reader)
{
    QMap<QString, int> out;
    for (const QString &s : m_scopes) {
        const QMap<QString, int> c = bound().listCategories(s, reader);
        for (auto it = c.begin(); it != c.end(); ++it)
            out[it.key()] += it.value();
    }
    return out;
}

QList<MemoryRecord> MemorySlice::listRecords(int limit, int offset, const ReadContext &reader)
{
    QList<MemoryRecord> all;
    for (const QString &s : m_scopes)
        all << bound().listRecords(s, limit + offset, 0, reader);
    std::sort(all.begin(), all.end(), [](const MemoryRecord &a, const MemoryRecord &b) {
        if (a.createdAt != b.createdAt)
            return a.createdAt > b.createdAt;
        return a.id < b.id;
    });
    all.erase(std::unique(all.begin(), all.end(), [](const MemoryRecord &a, const MemoryRecord &b) { return a.id == b.id; }),
              all.end());
    return all.mid(offset, limit);
}

} // namespace mneme
