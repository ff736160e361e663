#pragma once

// Ordered schema migrations, for every store with a schema (the SQLite chat store, the PostgreSQL
// storage plugin): a schema is a list of steps, each bringing a store from one version to the next;
// later versions append steps, and a released step is never edited. Private; not installed; header
// only, so that a plugin (which links the core library's exported symbols alone) uses it too.

#include <functional>
#include <span>

namespace mneme {

// One step of a schema: applying `sql` to a store at version `version - 1` brings it to `version`.
struct SchemaMigration
{
    int version;
    const char *sql;
};

// Applies, in order, the steps after version `current`, calling `run` with each step and then
// `record` with its version (both inside the caller's transaction, so a failed step leaves the store
// at `current`). Returns the version reached.
inline int applySchemaMigrations(std::span<const SchemaMigration> steps, int current,
                                 const std::function<void(const SchemaMigration &)> &run,
                                 const std::function<void(int version)> &record)
{
    for (const SchemaMigration &m : steps) {
        if (m.version <= current)
            continue;
        run(m);
        record(m.version);
        current = m.version;
    }
    return current;
}

} // namespace mneme
