#pragma once

#include <mneme/core/export.h>
#include <mneme/core/json.h>
#include <mneme/core/metadata_filter.h>

#include <QDateTime>
#include <QString>
#include <QStringList>

namespace mneme {

struct MemoryRecord;

// Which records a storage operation applies to. Every set field narrows the selection; an empty
// filter selects everything. Filters are exact in every backend (never approximate).
struct MNEME_CORE_EXPORT RecordFilter
{
    // Scope prefixes, matched by whole path components; a record matches when it lies in any of
    // them. Empty = every scope. Paths must already be normalised.
    QStringList scopes;
    // A record matches when it has at least one of these categories. Empty = no restriction.
    QStringList categories;
    // Conditions on the record's metadata (MetadataFilter: {"key": value}, {"key": {"$gte": 2}}, ...);
    // every one must hold. An empty object: no condition.
    Json metadata = Json::object();
    // Only these ids. Empty = no restriction.
    QStringList ids;
    // created_at strictly before / at or after. Invalid = no restriction.
    QDateTime createdBefore;
    QDateTime createdAfter;

    // Privacy, applied when applyPrivacy is set, by every operation that takes a filter (searches,
    // list, count, categories, scopeInfo, childScopes, remove): a record is visible when it is not
    // private, or includePrivate is set, or its source equals `source` (a private record always has a
    // source, so an empty `source` sees no private record).
    bool applyPrivacy = false;
    bool includePrivate = false;
    QString source;
    // Only records whose source equals this (CLI `recall --source`). Empty = any source.
    QString onlySource;
    // Only records whose content contains this text, ignoring case (Unicode case folding, as
    // QString::contains with Qt::CaseInsensitive). Empty = any content.
    QString contentContains;

    // The metadata keys of the Mem0-style identities Memory writes from RememberOptions::userId,
    // agentId and runId: "user_id", "agent_id", "run_id". A backend may index them to filter fast.
    static QStringList identityKeys();

    bool isEmpty() const;
    // True when `r` passes the scope, category, metadata, id, time, source, content and privacy conditions. Throws
    // Error(InvalidArgument) for a metadata filter MetadataFilter::parse() refuses.
    bool matches(const MemoryRecord &r) const;
    // The same with the metadata conditions already read (for a caller testing many records).
    bool matches(const MemoryRecord &r, const MetadataFilter &metadataConditions) const;
};

} // namespace mneme
