#include "memory/memory_locks_p.h"

#include <QtGlobal>
#include <algorithm>
#include <vector>

// The order checks are on in builds with assertions; test_memory_locks compiles this file with them
// on in every build.
#ifndef MNEME_CHECK_LOCKS
#ifdef NDEBUG
#define MNEME_CHECK_LOCKS 0
#else
#define MNEME_CHECK_LOCKS 1
#endif
#endif

namespace mneme {

namespace {

#if MNEME_CHECK_LOCKS
const char *nameOf(MemoryLocks::Rank rank)
{
    switch (rank) {
    case MemoryLocks::Rank::Submit: return "submit";
    case MemoryLocks::Rank::Ahead: return "ahead";
    case MemoryLocks::Rank::Pending: return "pending";
    case MemoryLocks::Rank::Touches: return "touches";
    case MemoryLocks::Rank::Llm: return "llm";
    }
    return "?";
}

// The locks this thread holds, of every Memory, in the order taken.
struct Held
{
    const MemoryLocks *locks;
    MemoryLocks::Rank rank;
};
thread_local std::vector<Held> t_held;
#endif

} // namespace

MemoryLocks::Guard::Guard(MemoryLocks &locks, Rank rank)
    : m_locks(locks), m_rank(rank)
{
    m_locks.lock(rank);
}

MemoryLocks::Guard::~Guard()
{
    m_locks.unlock(m_rank);
}

void MemoryLocks::lock(Rank rank)
{
#if MNEME_CHECK_LOCKS
    for (const Held &h : t_held) {
        if (h.locks == this && (h.rank > rank || (h.rank == rank && rank != Rank::Submit)))
            qFatal("mneme: the lock order of Memory is broken: \"%s\" taken while \"%s\" is held (memory/memory_locks_p.h)",
                   nameOf(rank), nameOf(h.rank));
    }
#endif
    switch (rank) {
    case Rank::Submit: m_submit.lock(); break;
    case Rank::Ahead: m_ahead.lock(); break;
    case Rank::Pending: m_pending.lock(); break;
    case Rank::Touches: m_touches.lock(); break;
    case Rank::Llm: m_llm.lock(); break;
    }
#if MNEME_CHECK_LOCKS
    t_held.push_back(Held{this, rank});
#endif
}

void MemoryLocks::unlock(Rank rank)
{
#if MNEME_CHECK_LOCKS
    const auto it = std::find_if(t_held.rbegin(), t_held.rend(), [&](const Held &h) { return h.locks == this && h.rank == rank; });
    if (it != t_held.rend())
        t_held.erase(std::next(it).base());
#endif
    switch (rank) {
    case Rank::Submit: m_submit.unlock(); break;
    case Rank::Ahead: m_ahead.unlock(); break;
    case Rank::Pending: m_pending.unlock(); break;
    case Rank::Touches: m_touches.unlock(); break;
    case Rank::Llm: m_llm.unlock(); break;
    }
}

void MemoryLocks::assertHeld(Rank rank) const
{
#if MNEME_CHECK_LOCKS
    const bool held = std::any_of(t_held.begin(), t_held.end(), [&](const Held &h) { return h.locks == this && h.rank == rank; });
    if (!held)
        qFatal("mneme: the Memory lock \"%s\" must be held here (memory/memory_locks_p.h)", nameOf(rank));
#else
    Q_UNUSED(rank)
#endif
}

} // namespace mneme
