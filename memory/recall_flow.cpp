#include "memory/recall_flow.h"

#include "memory/memory_p.h"

namespace mneme {

QList<MemoryMatch> RecallFlow::run(const QString &query, const RecallOptions &o, const QStringList &scopes,
                                   const QStringList &categories, const QDateTime &now)
{
    // Placeholder until deep recall lands: the shallow search.
    return d.rank(query, d.embedQuery(query), d.recallFilter(scopes, categories, o), o.limit, now);
}

} // namespace mneme
