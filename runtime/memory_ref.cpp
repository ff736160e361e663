#include <mneme/runtime/memory_ref.h>

#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>
#include <mneme/memory/memory.h>

namespace mneme {

MemoryRef::MemoryRef(bool on) : m_kind(on ? Kind::Own : Kind::Off) {}

MemoryRef::MemoryRef(mneme::Memory *memory) : m_kind(memory ? Kind::Memory : Kind::Off), m_memory(memory) {}

MemoryRef::MemoryRef(const MemoryScope &scope) : m_kind(Kind::Scope), m_memory(scope.memory()), m_scope(scope)
{
    if (!m_memory)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("The memory scope %1 has no Memory behind it.").arg(scope.path()));
}

MemoryRef::MemoryRef(const MemorySlice &slice) : m_kind(Kind::Slice), m_memory(slice.memory()), m_slice(slice)
{
    if (!m_memory)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("The memory slice %1 has no Memory behind it.").arg(slice.scopes().join(QStringLiteral(", "))));
}

MemoryRef MemoryRef::own(const MemoryConfig &config)
{
    MemoryRef ref(true);
    ref.m_config = config;
    return ref;
}

bool MemoryRef::isUsable() const
{
    return m_kind == Kind::Memory || m_kind == Kind::Scope || m_kind == Kind::Slice;
}

mneme::Memory *MemoryRef::memory() const
{
    return m_memory;
}

bool MemoryRef::isReadOnly() const
{
    switch (m_kind) {
    case Kind::Memory:
        return m_memory->isReadOnly();
    case Kind::Scope:
        return m_scope->isReadOnly();
    case Kind::Slice:
        return m_slice->isReadOnly();
    default:
        return true;
    }
}

QString MemoryRef::describe() const
{
    switch (m_kind) {
    case Kind::Default:
        return QStringLiteral("default");
    case Kind::Off:
        return QStringLiteral("off");
    case Kind::Own:
        return QStringLiteral("own memory");
    case Kind::Memory:
        return m_memory->rootScope().isEmpty() ? QStringLiteral("memory")
                                               : QStringLiteral("memory rooted at %1").arg(m_memory->rootScope());
    case Kind::Scope:
        return QStringLiteral("scope %1").arg(m_scope->path());
    case Kind::Slice:
        return QStringLiteral("slice %1%2").arg(m_slice->scopes().join(QStringLiteral(", ")), m_slice->isReadOnly() ? QStringLiteral(" (read-only)") : QString());
    }
    return {};
}

namespace {
[[noreturn]] void unusable(const MemoryRef &ref)
{
    throw Error(ErrorKind::Internal, QStringLiteral("This memory reference (%1) cannot be read or written.").arg(ref.describe()));
}
} // namespace

QList<MemoryMatch> MemoryRef::recall(const QString &query, const RecallOptions &options) const
{
    switch (m_kind) {
    case Kind::Memory:
        return m_memory->recall(query, options);
    case Kind::Scope:
        return MemoryScope(*m_scope).recall(query, options);
    case Kind::Slice:
        return MemorySlice(*m_slice).recall(query, options);
    default:
        unusable(*this);
    }
}

QList<RelationMatch> MemoryRef::recallRelations(const QString &query, const RecallOptions &options) const
{
    const mneme::Memory *owner = memory();
    if (!owner || !owner->config().graphMemory)
        return {};
    switch (m_kind) {
    case Kind::Memory:
        return m_memory->recallRelations(query, options);
    case Kind::Scope:
        return MemoryScope(*m_scope).recallRelations(query, options);
    case Kind::Slice:
        return MemorySlice(*m_slice).recallRelations(query, options);
    default:
        unusable(*this);
    }
}

QStringList MemoryRef::extractMemories(const QString &content) const
{
    switch (m_kind) {
    case Kind::Memory:
        return m_memory->extractMemories(content);
    case Kind::Scope:
        return MemoryScope(*m_scope).extractMemories(content);
    case Kind::Slice:
        return MemorySlice(*m_slice).extractMemories(content);
    default:
        unusable(*this);
    }
}

QString MemoryRef::agentRoot(const QString &role) const
{
    QString root;
    switch (m_kind) {
    case Kind::Memory:
        root = m_memory->rootScope();
        break;
    case Kind::Scope:
        root = m_scope->path();
        break;
    case Kind::Slice:
        root = m_slice->scopes().value(0);
        break;
    default:
        unusable(*this);
    }
    if (root.isEmpty())
        return {};
    return ScopePath::join(root, QStringLiteral("/agent/") + ScopePath::sanitizeName(role));
}

namespace {
void refuseReadOnly(const MemoryRef &ref)
{
    if (ref.isReadOnly())
        throw Error(ErrorKind::PermissionDenied,
                    QStringLiteral("The %1 is read-only: nothing can be saved to it.").arg(ref.describe()));
}
} // namespace

QFuture<SaveResult> MemoryRef::rememberFacts(const QStringList &facts, const QString &role) const
{
    refuseReadOnly(*this);
    RememberOptions options;
    options.agentRole = role;
    const QString root = agentRoot(role);
    if (!root.isEmpty())
        options.rootScope = root;
    if (m_kind == Kind::Slice) {
        // A writable slice writes through remember(); its facts go to its first scope's agent subtree.
        for (const QString &fact : facts) {
            RememberOptions one = options;
            one.rootScope.reset();
            one.scope = root;
            MemorySlice(*m_slice).remember(fact, one);
        }
        SaveResult result;
        result.stored = int(facts.size());
        return QtFuture::makeReadyFuture(result);
    }
    return m_memory->rememberMany(facts, options);
}

MemoryRecord MemoryRef::remember(const QString &content, const QString &role) const
{
    refuseReadOnly(*this);
    RememberOptions options;
    options.agentRole = role;
    switch (m_kind) {
    case Kind::Memory:
        return m_memory->remember(content, options);
    case Kind::Scope:
        return MemoryScope(*m_scope).remember(content, options);
    case Kind::Slice:
        options.scope = m_slice->scopes().value(0);
        return MemorySlice(*m_slice).remember(content, options);
    default:
        unusable(*this);
    }
}

QFuture<SaveResult> MemoryRef::rememberMany(const QStringList &contents, const QString &role) const
{
    refuseReadOnly(*this);
    RememberOptions options;
    options.agentRole = role;
    switch (m_kind) {
    case Kind::Memory:
        return m_memory->rememberMany(contents, options);
    case Kind::Scope:
        return MemoryScope(*m_scope).rememberMany(contents, options);
    case Kind::Slice: {
        SaveResult result;
        for (const QString &c : contents) {
            result.ids << remember(c, role).id;
            ++result.stored;
        }
        return QtFuture::makeReadyFuture(result);
    }
    default:
        unusable(*this);
    }
}

int MemoryRef::reset() const
{
    switch (m_kind) {
    case Kind::Memory:
        return m_memory->rootScope().isEmpty() ? m_memory->resetAll() : m_memory->reset();
    case Kind::Scope:
        return MemoryScope(*m_scope).reset();
    case Kind::Slice:
        throw Error(ErrorKind::PermissionDenied,
                    QStringLiteral("A %1 cannot be reset; reset its scopes through the Memory itself.").arg(describe()));
    default:
        unusable(*this);
    }
}

} // namespace mneme
