#include <mneme/core/record_order.h>

#include <mneme/core/memory_record.h>

#include <algorithm>

namespace mneme {

namespace {

// -1, 0 or 1 as `a` sorts before, with or after `b` in ascending order.
template<typename T>
int compareValues(const T &a, const T &b)
{
    return a < b ? -1 : (b < a ? 1 : 0);
}

int compareTexts(const QString &a, const QString &b)
{
    // Code point order: UTF-16 code units compare like code points except across surrogates, which
    // the UTF-8 bytes of a backend compare like code points; ucs4 keeps the two in step.
    if (a == b)
        return 0;
    const QList<uint> x = a.toUcs4();
    const QList<uint> y = b.toUcs4();
    return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end()) ? -1 : 1;
}

int compareField(RecordOrder::Field field, const MemoryRecord &a, const MemoryRecord &b)
{
    switch (field) {
    case RecordOrder::Field::CreatedAt:
        return compareValues(a.createdAt, b.createdAt);
    case RecordOrder::Field::UpdatedAt:
        return compareValues(a.updatedAt, b.updatedAt);
    case RecordOrder::Field::LastAccessed:
        return compareValues(a.lastAccessed, b.lastAccessed);
    case RecordOrder::Field::Importance:
        return compareValues(a.importance, b.importance);
    case RecordOrder::Field::AccessCount:
        return compareValues(a.accessCount, b.accessCount);
    case RecordOrder::Field::Scope:
        return compareTexts(a.scope, b.scope);
    case RecordOrder::Field::Source:
        return compareTexts(a.source, b.source);
    case RecordOrder::Field::Content:
        return compareTexts(a.content, b.content);
    }
    return 0;
}

} // namespace

bool RecordOrder::before(const MemoryRecord &a, const MemoryRecord &b) const
{
    const int c = compareField(field, a, b);
    if (c != 0)
        return descending ? c > 0 : c < 0;
    return a.id < b.id;
}

} // namespace mneme
