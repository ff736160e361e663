#pragma once

// Private implementation of ChatMemory. Not installed; not part of the API.

#include "memory/serial_executor_p.h"
#include <mneme/memory/chat_memory.h>

#include <QHash>
#include <QLoggingCategory>
#include <QMutex>
#include <atomic>

namespace mneme {

Q_DECLARE_LOGGING_CATEGORY(lcChat)

// Threads and ownership. Everything below `worker` is used on the worker thread only (every job of a
// ChatMemory runs there, one at a time), except the fields marked otherwise. The store is shared and
// thread-safe; the blocks belong to this ChatMemory and are called on the worker only. Lock order:
// uidMutex alone (never held while calling out).
class ChatMemoryPrivate
{
public:
    ChatMemoryPrivate(ChatMemory *q, const QString &session, const ChatMemoryConfig &config, std::shared_ptr<ChatStore> store,
                      std::vector<std::shared_ptr<MemoryBlock>> blocks);

    // Submits a job to the worker; refuses (Error(Internal)) on the worker itself for blocking callers.
    template<typename T, typename F>
    QFuture<T> submit(F &&work)
    {
        checkOpen();
        return worker.template submit<T>(std::forward<F>(work));
    }
    void checkOpen() const;
    void checkNotOnWorker(const char *call) const;

    // Worker-side work. store() checks and appends (the flush is the caller's next step).
    QList<SessionMessage> store(const QList<SessionMessage> &messages);
    // Finishes a flush left pending (by a crash, a failure, or a writer gone), then flushes while the
    // history exceeds its budget. Never throws: failures are reported by flushFailed().
    void manageQueue();
    // False when a pending flush remains that another live writer is applying.
    bool recoverPending();
    // Applies a recorded flush to its pending blocks; false when a block failed.
    bool applyFlush(const FlushRecord &flush);
    ChatContext assemble(const std::vector<ChatMessage> &extra);
    int clearSession();
    void restoreStates();
    int tokensOf(const SessionMessage &m);
    // Throws Error(InvalidArgument) when `incoming` would leave a tool result without its call, or a
    // call without its result before the next message.
    static void checkToolPairs(const QList<SessionMessage> &tail, const QList<SessionMessage> &incoming);
    // Whether the writer that owns a flush is gone (dead process, destroyed ChatMemory, or a claim
    // older than the lease of a writer on another host).
    bool ownerGone(const QString &owner, const QDateTime &claimedAt) const;
    QStringList blockNames() const;

    ChatMemory *q;
    const QString session;
    const ChatMemoryConfig config;
    const std::shared_ptr<ChatStore> chatStore;
    const std::vector<std::shared_ptr<MemoryBlock>> blocks;
    const QString owner; // "host/pid/instance" in the flushes this ChatMemory claims

    mutable QMutex uidMutex; // guards uid (read from any thread)
    QString uid;

    QHash<qint64, int> tokenCache; // seq -> tokens (worker)
    std::atomic<bool> closed{false};
    SerialExecutor worker{"mneme-chat"};
};

} // namespace mneme
