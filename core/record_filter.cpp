#include <mneme/core/record_filter.h>

#include <mneme/core/memory_record.h>
#include <mneme/core/scope_path.h>

namespace mneme {

QStringList RecordFilter::identityKeys()
{
    return {QStringLiteral("user_id"), QStringLiteral("agent_id"), QStringLiteral("run_id")};
}

bool RecordFilter::isEmpty() const
{
    return scopes.isEmpty() && categories.isEmpty() && (metadata.is_null() || metadata.empty())
        && ids.isEmpty() && !createdBefore.isValid() && !createdAfter.isValid() && !applyPrivacy
        && onlySource.isEmpty() && contentContains.isEmpty();
}

bool RecordFilter::matches(const MemoryRecord &r) const
{
    return matches(r, MetadataFilter::parse(metadata));
}

bool RecordFilter::matches(const MemoryRecord &r, const MetadataFilter &metadataConditions) const
{
    if (!ids.isEmpty() && !ids.contains(r.id))
        return false;
    if (!scopes.isEmpty()) {
        bool in = false;
        for (const QString &s : scopes) {
            if (ScopePath::contains(s, r.scope)) {
                in = true;
                break;
            }
        }
        if (!in)
            return false;
    }
    if (!categories.isEmpty()) {
        bool any = false;
        for (const QString &c : categories) {
            if (r.categories.contains(c)) {
                any = true;
                break;
            }
        }
        if (!any)
            return false;
    }
    if (!metadataConditions.matches(r.metadata))
        return false;
    if (createdBefore.isValid() && !(r.createdAt < createdBefore))
        return false;
    if (createdAfter.isValid() && r.createdAt < createdAfter)
        return false;
    if (!onlySource.isEmpty() && r.source != onlySource)
        return false;
    if (!contentContains.isEmpty() && !r.content.contains(contentContains, Qt::CaseInsensitive))
        return false;
    if (applyPrivacy && r.isPrivate && !includePrivate && (source.isEmpty() || r.source != source))
        return false;
    return true;
}

} // namespace mneme
