#pragma once

#include <mneme/memory/memory.h>
#include <mneme/memory/memory_config.h>
#include <mneme/memory/memory_match.h>
#include <mneme/memory/memory_options.h>
#include <mneme/memory/memory_scope.h>
#include <mneme/memory/memory_slice.h>
#include <mneme/runtime/export.h>

#include <QFuture>
#include <QString>
#include <QStringList>
#include <optional>

namespace mneme {

// Which memory a crew or an agent uses, as written in its configuration:
//
//   .memory = true                  a Memory built for it (a crew's is rooted at /crew/<name>)
//   .memory = false                 none
//   .memory = &myMemory             that Memory, as it is (its own root scope, if any)
//   .memory = memory.scope("/alice")                 a private subtree
//   .memory = memory.slice({"/team", "/docs"})       several scopes; read-only unless made writable
//   (not set)                       an agent uses its crew's memory; a crew has none
//
// Once resolved (a Memory, a scope or a slice) it is also the uniform way the runtime reads and
// writes any of the three. The Memory behind a reference must outlive the crews that use it.
class MNEME_RUNTIME_EXPORT MemoryRef
{
public:
    enum class Kind {
        Default,
        Off,
        Own,
        Memory,
        Scope,
        Slice
    };

    MemoryRef() = default;
    MemoryRef(bool on);
    MemoryRef(mneme::Memory *memory);
    MemoryRef(const MemoryScope &scope);
    MemoryRef(const MemorySlice &slice);
    // A Memory built for its owner from this configuration (root scope and LLM are set by the owner).
    static MemoryRef own(const MemoryConfig &config);

    Kind kind() const { return m_kind; }
    bool isDefault() const { return m_kind == Kind::Default; }
    bool isOff() const { return m_kind == Kind::Off; }
    // A Memory, a scope or a slice: something to read and write.
    bool isUsable() const;
    const MemoryConfig &ownConfig() const { return m_config; }

    // The Memory behind a usable reference (the one a scope or slice views), else null.
    mneme::Memory *memory() const;
    // A read-only Memory or slice: recall only, no saves, no "save to memory" tool.
    bool isReadOnly() const;
    // "memory", "scope /alice", "slice /a, /b (read-only)".
    QString describe() const;

    // Ranked recall inside what the reference can see. Blocking.
    QList<MemoryMatch> recall(const QString &query, const RecallOptions &options = {}) const;
    // Graph recall inside what the reference can see; nothing when its Memory's graph_memory is off.
    QList<RelationMatch> recallRelations(const QString &query, const RecallOptions &options = {}) const;
    QStringList extractMemories(const QString &content) const;

    // Where an agent's extracted facts go: "<root>/agent/<sanitised role>" when the reference has a
    // root (a Memory's root_scope, a scope's path, a writable slice's first scope); empty when a plain
    // Memory has no root scope (the facts then go wherever save analysis puts them).
    QString agentRoot(const QString &role) const;
    // Saves an agent's facts in the background, under agentRoot(role). Throws Error(PermissionDenied)
    // for a read-only reference.
    QFuture<SaveResult> rememberFacts(const QStringList &facts, const QString &role) const;
    // The "save to memory" tool's saves: one item synchronously, where save analysis puts it inside
    // the reference; several in the background.
    MemoryRecord remember(const QString &content, const QString &role) const;
    QFuture<SaveResult> rememberMany(const QStringList &contents, const QString &role) const;

    // Deletes what the reference holds and returns how many records: a Memory without a root scope is
    // reset entirely (Memory::resetAll(), history and embedder binding included); a Memory with one,
    // and a scope, lose their subtree (reset()). A slice is refused with Error(PermissionDenied).
    int reset() const;

private:
    Kind m_kind = Kind::Default;
    mneme::Memory *m_memory = nullptr;
    std::optional<MemoryScope> m_scope;
    std::optional<MemorySlice> m_slice;
    MemoryConfig m_config;
};

} // namespace mneme
