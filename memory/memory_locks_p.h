#pragma once

// The locks of one Memory. Private; not installed.

#include <mutex>

namespace mneme {

// Every lock of a Memory, with what each guards and the one order in which a thread may hold
// several: a thread holding a lock takes only locks further down this list (submit may be taken
// again by the thread that holds it). None is held while waiting for a future, for the writer
// thread or for the network, except `submit`, which exists to be held across a drain.
//
//   1. submit   The order of the writer's queue and the exclusion of saves: held while a job is
//               queued (submit(), submitBatch()), and by the calls that must see no save between
//               their drain and their own work (resetAll, check, close, and addConversation across
//               its two jobs; forget, update, undo and reset are writer jobs instead). Recursive: those calls drain, and
//               draining queues the noted accesses. Never taken on the writer thread (the calls that
//               would take it there are refused first: they would wait for themselves).
//   2. ahead    MemoryPrivate::ahead, the batches queued for embedding ahead of their turn.
//   3. pending  MemoryPrivate::pending and reads, the futures drainWrites() and close() wait for.
//   4. touches  MemoryPrivate::touches and touchScheduled, the accesses noted by recalls.
//   5. llm      MemoryPrivate::llm, the provider built on first use.
//
// In a build with assertions (make test-asan builds one), every lock taken is checked against the
// order, and assertHeld() checks that the caller holds a lock it needs.
class MemoryLocks
{
public:
    enum class Rank {
        Submit = 1,
        Ahead,
        Pending,
        Touches,
        Llm
    };

    // Holds one lock while it lives.
    class Guard
    {
    public:
        Guard(MemoryLocks &locks, Rank rank);
        ~Guard();
        Guard(const Guard &) = delete;
        Guard &operator=(const Guard &) = delete;

    private:
        MemoryLocks &m_locks;
        Rank m_rank;
    };

    Guard submit() { return Guard(*this, Rank::Submit); }
    Guard ahead() { return Guard(*this, Rank::Ahead); }
    Guard pending() { return Guard(*this, Rank::Pending); }
    Guard touches() { return Guard(*this, Rank::Touches); }
    Guard llm() { return Guard(*this, Rank::Llm); }

    // Aborts (in a build with assertions) unless this thread holds `rank`.
    void assertHeld(Rank rank) const;

private:
    void lock(Rank rank);
    void unlock(Rank rank);

    std::recursive_mutex m_submit;
    std::mutex m_ahead;
    std::mutex m_pending;
    std::mutex m_touches;
    std::mutex m_llm;
};

} // namespace mneme
