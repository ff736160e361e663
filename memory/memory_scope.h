#pragma once

#include <mneme/core/scope_info.h>
#include <mneme/memory/export.h>
#include <mneme/memory/memory_match.h>
#include <mneme/memory/memory_options.h>

#include <QFuture>

#include <QMap>
#include <QPointer>
#include <QString>

namespace mneme {

class Memory;

// A view of one subtree of a Memory: every path is relative to the view's root, and nothing outside
// it can be read or written. Cheap to copy. The Memory must outlive the view (calls on a view whose
// Memory is gone throw Error(Internal)).
class MNEME_MEMORY_EXPORT MemoryScope
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
    // Memory::recallRelations() inside this view.
    QList<RelationMatch> recallRelations(const QString &query, const RecallOptions &options = {});
    QStringList extractMemories(const QString &content);
    // Reads and forget() take the caller's ReadContext, as Memory's do (default: shared records only).
    int forget(const ForgetOptions &options = {}, const ReadContext &caller = {});
    QStringList listScopes(const QString &path = {}, const ReadContext &reader = {});
    ScopeInfo info(const QString &path = {}, const ReadContext &reader = {});
    QString tree(const QString &path = {}, int maxDepth = 3, const ReadContext &reader = {});
    QMap<QString, int> listCategories(const QString &path = {}, const ReadContext &reader = {});
    QList<MemoryRecord> listRecords(const QString &path = {}, int limit = 200, int offset = 0, const ReadContext &reader = {});
    int reset(const QString &path = {});
    MemoryScope subscope(const QString &path) const;

private:
    Memory &bound() const;
    // Recall options inside this view: the given scopes joined under it, else the view's root.
    RecallOptions inView(const RecallOptions &options) const;
    // Save options inside this view: a given scope is joined under it; without one, the view is the
    // root that save analysis stays inside.
    RememberOptions inView(const RememberOptions &options) const;
    QPointer<Memory> m_memory;
    QString m_root;
};

} // namespace mneme
