#pragma once

#include "memory/memory_options.h"
#include "memory/memory_match.h"

#include <QMap>
#include <QPointer>
#include <QString>

namespace mneme {

class Memory;

// A view of one subtree of a Memory: every path is relative to the view's root, and nothing outside
// it can be read or written. Cheap to copy. The Memory must outlive the view (calls on a view whose
// Memory is gone throw Error(Internal)).
class MemoryScope
{
public:
    MemoryScope(Memory *memory, const QString &rootPath);

    QString path() const { return m_root; }
    bool isReadOnly() const;
    Memory *memory() const { return m_memory.data(); }

    // The absolute scope of a path relative to this view ("/" or empty: the view's root).
    QString absolute(const QString &relative) const;

    MemoryRecord remember(const QString &content, const RememberOptions &options = {});
    QFuture<SaveResult> rememberMany(const QStringList &contents, const RememberOptions &options = {});
    QList<MemoryMatch> recall(const QString &query, const RecallOptions &options = {});
    QStringList extractMemories(const QString &content);
    int forget(const ForgetOptions &options = {});
    QStringList listScopes(const QString &path = {});
    ScopeInfo info(const QString &path = {});
    QString tree(const QString &path = {}, int maxDepth = 3);
    QMap<QString, int> listCategories(const QString &path = {});
    QList<MemoryRecord> listRecords(const QString &path = {}, int limit = 200, int offset = 0);
    int reset(const QString &path = {});
    MemoryScope subscope(const QString &path) const;

private:
    Memory &bound() const;
    QPointer<Memory> m_memory;
    QString m_root;
};

// A view across several scopes. Recall searches all of them at once and ranks the union; writes
// need an explicit scope inside one of them and are refused (Error(PermissionDenied)) when the
// slice is read-only.
class MemorySlice
{
public:
    MemorySlice(Memory *memory, const QStringList &scopes, const QStringList &categories = {}, bool readOnly = true);

    QStringList scopes() const { return m_scopes; }
    QStringList categories() const { return m_categories; }
    bool isReadOnly() const { return m_readOnly; }

    MemoryRecord remember(const QString &content, const RememberOptions &options);
    QList<MemoryMatch> recall(const QString &query, const RecallOptions &options = {});
    QStringList extractMemories(const QString &content);
    QStringList listScopes();
    // Aggregates info() over the slice's scopes; `path` is echoed back.
    ScopeInfo info();
    QMap<QString, int> listCategories();
    QList<MemoryRecord> listRecords(int limit = 200, int offset = 0);

private:
    Memory &bound() const;
    QPointer<Memory> m_memory;
    QStringList m_scopes;
    QStringList m_categories;
    bool m_readOnly = true;
};

} // namespace mneme
