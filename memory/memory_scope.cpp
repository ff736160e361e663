#include <mneme/memory/memory_scope.h>

#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>
#include <mneme/memory/memory.h>

namespace mneme {

MemoryScope::MemoryScope(Memory *memory, const QString &rootPath)
    : m_memory(memory), m_root(ScopePath::normalize(rootPath))
{
}

Memory &MemoryScope::bound() const
{
    if (!m_memory)
        throw Error(ErrorKind::Internal, QStringLiteral("this MemoryScope's Memory no longer exists; keep the Memory alive while its views are used"));
    return *m_memory;
}

bool MemoryScope::isReadOnly() const
{
    return bound().isReadOnly();
}

QString MemoryScope::absolute(const QString &relative) const
{
    return ScopePath::join(m_root, relative);
}

RememberOptions MemoryScope::inView(const RememberOptions &options) const
{
    RememberOptions o = options;
    if (o.scope) {
        o.scope = absolute(*o.scope);
    } else {
        // No scope: save analysis picks one, clamped inside this view (decision 4).
        o.rootScope = bound().resolveScope(m_root, options.rootScope);
    }
    return o;
}

MemoryRecord MemoryScope::remember(const QString &content, const RememberOptions &options)
{
    return bound().remember(content, inView(options));
}

QFuture<SaveResult> MemoryScope::rememberMany(const QStringList &contents, const RememberOptions &options)
{
    return bound().rememberMany(contents, inView(options));
}

RecallOptions MemoryScope::inView(const RecallOptions &options) const
{
    RecallOptions o = options;
    o.scopes.clear();
    for (const QString &s : options.scopes)
        o.scopes << absolute(s);
    if (o.scopes.isEmpty())
        o.scopes << m_root;
    return o;
}

QList<MemoryMatch> MemoryScope::recall(const QString &query, const RecallOptions &options)
{
    return bound().recall(query, inView(options));
}

QList<RelationMatch> MemoryScope::recallRelations(const QString &query, const RecallOptions &options)
{
    return bound().recallRelations(query, inView(options));
}

QStringList MemoryScope::extractMemories(const QString &content)
{
    return bound().extractMemories(content);
}

int MemoryScope::forget(const ForgetOptions &options, const ReadContext &caller)
{
    ForgetOptions o = options;
    o.scope = absolute(options.scope.value_or(QString()));
    return bound().forget(o, caller);
}

QStringList MemoryScope::listScopes(const QString &path, const ReadContext &reader)
{
    return bound().listScopes(absolute(path), reader);
}

ScopeInfo MemoryScope::info(const QString &path, const ReadContext &reader)
{
    return bound().info(absolute(path), reader);
}

QString MemoryScope::tree(const QString &path, int maxDepth, const ReadContext &reader)
{
    return bound().tree(absolute(path), maxDepth, reader);
}

QMap<QString, int> MemoryScope::listCategories(const QString &path, const ReadContext &reader)
{
    return bound().listCategories(absolute(path), reader);
}

QList<MemoryRecord> MemoryScope::listRecords(const QString &path, int limit, int offset, const ReadContext &reader)
{
    return bound().listRecords(absolute(path), limit, offset, reader);
}

int MemoryScope::reset(const QString &path)
{
    return bound().reset(absolute(path));
}

MemoryScope MemoryScope::subscope(const QString &path) const
{
    return MemoryScope(m_memory.data(), absolute(path));
}

} // namespace mneme
