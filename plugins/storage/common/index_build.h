#pragma once

#include "plugins/storage/common/vector_index.h"

#include <QSet>
#include <atomic>
#include <memory>
#include <thread>

namespace mneme {

// The threads that build a graph or insert a batch into it: every core (up to 8).
int indexBuildThreads();

// A graph of a store's flat vector index, built on background threads while the store goes on
// searching the flat index exactly, and its hand-over to the live index. The rows the store changes in
// its live index meanwhile are noted (noteChange()) and copied into the graph when it is taken
// (handOver()).
//
// Threads: the store calls every member under the lock that guards its live index. The build thread
// touches only its own copy of the index and the atomics, never takes a lock, and marks itself done
// last, so that waiting for it (wait()) under that lock cannot deadlock.
class IndexBuild
{
public:
    // Writes past this many rows during a build (seconds of inserts) cost more to copy into the graph,
    // under the lock searches wait for, than building again from the flat index (which has them).
    static constexpr qsizetype kMaxChanges = 5000;

    // Starts building a graph of a copy of `flat`; null when the index is not flat.
    static std::unique_ptr<IndexBuild> start(const VectorIndex &flat);
    // Cancels the build and waits for its thread.
    ~IndexBuild();
    IndexBuild(const IndexBuild &) = delete;
    IndexBuild &operator=(const IndexBuild &) = delete;

    bool done() const { return m_done; }
    // Waits for the build thread to finish.
    void wait();
    void noteChange(qint64 rowid) { m_changed.insert(rowid); }
    // Once done(): the graph, with the rows changed meanwhile copied from `live`, replaces `live`
    // (true). False, leaving `live` as it is, when the build failed (out of memory) or was cancelled,
    // or more than kMaxChanges rows changed meanwhile: the store builds again.
    bool handOver(VectorIndex &live);

private:
    IndexBuild() = default;

    std::unique_ptr<VectorIndex> m_index; // the thread's until m_done
    std::thread m_thread;
    std::atomic<bool> m_done{false};
    std::atomic<bool> m_cancel{false};
    bool m_built = false;   // written by the thread before m_done
    QSet<qint64> m_changed; // the store's (under its index lock)
};

} // namespace mneme
