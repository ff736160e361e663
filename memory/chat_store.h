#pragma once

#include <mneme/core/json.h>
#include <mneme/memory/export.h>
#include <mneme/memory/session_message.h>

#include <QDateTime>
#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>
#include <optional>

namespace mneme {

// A chat session as a ChatStore lists it.
struct MNEME_MEMORY_EXPORT SessionInfo
{
    QString id;
    // The session's incarnation: a random id made when the session is created and again when it is
    // cleared, so what blocks stored elsewhere for an earlier incarnation is never taken for this one.
    QString uid;
    QDateTime createdAt;
    QDateTime updatedAt; // the last put, flush or clear
    int activeMessages = 0;
    int archivedMessages = 0;
    qint64 flushes = 0;      // flushes begun so far
    qint64 pendingFlush = 0; // a flush begun and not yet applied by every block; 0: none

    Json toJson() const;
};

// A flush: the oldest messages of a session, moved out of its active history in one transaction and
// handed to the memory blocks, each of which records that it applied them.
struct MNEME_MEMORY_EXPORT FlushRecord
{
    qint64 flush = 0; // 1, 2, 3, ... per session; never reused
    QString sessionUid;
    qint64 firstSeq = 0;
    qint64 lastSeq = 0;
    int tokens = 0;
    QStringList pendingBlocks; // the blocks that have not applied it yet, in the order they get it
    QString owner;             // the ChatMemory applying it ("host/pid/instance"); empty: nobody
    QDateTime claimedAt;       // when the owner claimed it or last reported progress
    QList<SessionMessage> messages;
};

// Where chat sessions are kept: ChatMemory's persistence, on its own beside the long-term memory's
// StorageBackend. SqliteChatStore is the embedded implementation; another implementation (a shared
// database) provides these operations with the same guarantees:
//
// - Every operation is atomic: it happens whole or not at all, and a failure leaves the store as it
//   was (and throws mneme::Error).
// - Implementations are thread-safe, and the store may be shared by several processes: the compare
//   steps of beginFlush() and claimFlush() are what keeps two writers of one session from flushing
//   the same messages.
// - Session ids are non-empty, at most 200 characters, without control characters; another id is
//   Error(InvalidArgument).
class MNEME_MEMORY_EXPORT ChatStore
{
public:
    virtual ~ChatStore() = default;

    // Where the sessions live, for messages ("/home/me/.mneme/memory.db", ":memory:").
    virtual QString location() const = 0;

    // Every session, the most recently updated first.
    virtual QList<SessionInfo> sessions() = 0;
    virtual std::optional<SessionInfo> session(const QString &id) = 0;
    // The session, created (with a new uid) when missing.
    virtual SessionInfo openSession(const QString &id) = 0;

    // Appends messages to the session's active history in one transaction, in order, creating the
    // session when missing. Each is given the next seq and, when it has none, the current time.
    // Returns them as stored. The messages must have been checked (SessionMessage::check).
    virtual QList<SessionMessage> append(const QString &session, const QList<SessionMessage> &messages) = 0;
    // The session's messages, oldest first: the active history, or also the archived ones.
    virtual QList<SessionMessage> messages(const QString &session, bool includeArchived) = 0;

    // Begins a flush of the active messages firstSeq..lastSeq, provided that firstSeq is the session's
    // oldest active message and no flush is pending: archives them, and records the flush with every
    // block of `blocks` pending and `owner` as its owner, in one transaction. Returns nothing (and
    // changes nothing) when the condition does not hold: another writer flushed first.
    virtual std::optional<FlushRecord> beginFlush(const QString &session, qint64 firstSeq, qint64 lastSeq, int tokens,
                                                  const QStringList &blocks, const QString &owner) = 0;
    // The session's pending flush with its messages, if any.
    virtual std::optional<FlushRecord> pendingFlush(const QString &session) = 0;
    // Makes `owner` the owner of the pending flush, provided its owner is still `expectedOwner`; false
    // when it changed or the flush is no longer pending.
    virtual bool claimFlush(const QString &session, qint64 flush, const QString &expectedOwner, const QString &owner) = 0;
    // Records that `block` applied the flush, with the block's state after it, in one transaction;
    // the last block completes the flush. A block that is not pending there is ignored (its state
    // is not written).
    virtual void completeBlock(const QString &session, qint64 flush, const QString &block, const Json &state) = 0;
    // Drops blocks from a pending flush without a state (blocks the session no longer has).
    virtual void abandonBlocks(const QString &session, qint64 flush, const QStringList &blocks) = 0;
    // The state each block of the session recorded last, by block name.
    virtual QMap<QString, Json> blockStates(const QString &session) = 0;

    // Deletes the session's messages, flushes and block states and gives it a new uid; the session
    // stays, empty. Returns how many messages were deleted.
    virtual int clearSession(const QString &session) = 0;
    // Deletes the session with everything it holds; false when there was none.
    virtual bool deleteSession(const QString &session) = 0;

    // Releases the store; later calls throw Error(Storage).
    virtual void close() = 0;
};

} // namespace mneme
