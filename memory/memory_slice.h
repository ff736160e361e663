#pragma once

#include <mneme/core/scope_info.h>
#include <mneme/memory/export.h>
#include <mneme/memory/memory_match.h>
#include <mneme/memory/memory_options.h>

#include <QMap>
#include <QPointer>
#include <QString>
#include <QStringList>

namespace mneme {

class Memory;

// A view across several scopes (a scope inside another of them is folded into it). Recall searches
// all of them at once and ranks the union; writes
// need an explicit scope inside one of them and are refused (Error(PermissionDenied)) when the
// slice is read-only.
class MNEME_MEMORY_EXPORT MemorySlice
{
public:
    MemorySlice(Memory *memory, const QStringList &scopes, const QStringList &categories = {}, bool readOnly = true);

    QStringList scopes() const { return m_scopes; }
    QStringList categories() const { return m_categories; }
    bool isReadOnly() const { return m_readOnly; }
    Memory *memory() const;

    MemoryRecord remember(const QString &content, const RememberOptions &options);
    QList<MemoryMatch> recall(const QString &query, const RecallOptions &options = {});
    // Memory::recallRelations() over the slice's scopes (its categories do not apply to relations).
    QList<RelationMatch> recallRelations(const QString &query, const RecallOptions &options = {});
    QStringList extractMemories(const QString &content);
    // Reads take the reader's ReadContext, as Memory's do (default: shared records only).
    QStringList listScopes(const ReadContext &reader = {});
    // Aggregates info() over the slice's scopes; `path` is echoed back.
    ScopeInfo info(const ReadContext &reader = {});
    QMap<QString, int> listCategories(const ReadContext &reader = {});
    QList<MemoryRecord> listRecords(int limit = 200, int offset = 0, const ReadContext &reader = {});

private:
    Memory &bound() const;
    QPointer<Memory> m_memory;
    QStringList m_scopes;
    QStringList m_categories;
    bool m_readOnly = true;
};

} // namespace mneme
