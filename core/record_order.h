#pragma once

#include <mneme/core/export.h>

namespace mneme {

struct MemoryRecord;

// The order of a listing for browsing (StorageBackend::listOrdered, Memory::searchRecords): one field,
// ascending or descending, ties broken by id, ascending. Texts (scope, source, content) compare by
// their characters' code points, case included.
struct MNEME_CORE_EXPORT RecordOrder
{
    enum class Field {
        CreatedAt,
        UpdatedAt,
        LastAccessed,
        Importance,
        AccessCount,
        Scope,
        Source,
        Content,
    };
    Field field = Field::CreatedAt;
    bool descending = true;

    // The order StorageBackend::list() uses: created_at descending, then id.
    bool isNewestFirst() const { return field == Field::CreatedAt && descending; }
    // Whether `a` comes before `b`.
    bool before(const MemoryRecord &a, const MemoryRecord &b) const;
    bool operator==(const RecordOrder &other) const { return field == other.field && descending == other.descending; }
};

} // namespace mneme
