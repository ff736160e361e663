#pragma once

#include <mneme/memory/chat_store.h>
#include <mneme/memory/export.h>

#include <QMutex>
#include <QString>

#include <memory>

namespace mneme {

class SqliteFile;

// Chat sessions in SQLite, by default in the long-term memory's own store file, beside its records:
// tables chat_meta, chat_sessions, chat_messages, chat_flushes and chat_block_states (the memory
// store ignores tables named chat_*, and this store ignores the memory's). The memory store's
// conventions: WAL mode, synchronous=FULL (a write that returned is on disk), a busy timeout, every
// write one BEGIN IMMEDIATE transaction (several processes may share the file), a versioned schema
// in chat_meta migrated on open. ":memory:" keeps the sessions in this object only.
//
// A file that is neither empty, nor a memory store, nor a chat store (a flow-state store, another
// SQLite database, anything else), one written by a newer Mneme, or a damaged one is refused with a
// clear error and left untouched. Thread-safe: one mutex guards the connection.
class MNEME_MEMORY_EXPORT SqliteChatStore : public ChatStore
{
public:
    struct Options
    {
        QString path;
        int busyTimeoutMs = 10000;
    };

    // Opens the file, creating it (and its folder) when missing. Throws Error: InvalidArgument for an
    // empty path or a folder, Corrupt for a file that is not a store or is damaged, SchemaTooNew,
    // ReadOnlyStore when the file or its folder cannot be written, Storage otherwise.
    explicit SqliteChatStore(const QString &path);
    explicit SqliteChatStore(const Options &options);
    ~SqliteChatStore() override;
    SqliteChatStore(const SqliteChatStore &) = delete;
    SqliteChatStore &operator=(const SqliteChatStore &) = delete;

    // The schema version this build writes and the newest it reads.
    static int latestSchemaVersion();

    // What copySessionsFrom() found.
    struct Copied
    {
        int copied = 0;  // sessions copied
        int already = 0; // sessions this store held already (left as they are)
    };
    // Copies the chat sessions of another file (a chat store, or the chat tables of a memory store's
    // file) that this store lacks, each with its messages, flushes and block states exactly as
    // stored (uids, seqs, times), in one transaction; a session this store holds already is left as
    // it is, so that a copy run again after an interruption copies the rest. The other file is
    // attached read-only: a file without chat tables has no sessions. Throws Error(InvalidArgument)
    // for chat tables of another chat schema version (open them once with this Mneme first).
    Copied copySessionsFrom(const QString &path);
    // How many chat sessions the file holds, read without changing it (0: no file, or no chat tables).
    static int countSessions(const QString &path);

    QString location() const override;
    QList<SessionInfo> sessions() override;
    std::optional<SessionInfo> session(const QString &id) override;
    SessionInfo openSession(const QString &id) override;
    QList<SessionMessage> append(const QString &session, const QList<SessionMessage> &messages) override;
    QList<SessionMessage> messages(const QString &session, bool includeArchived) override;
    std::optional<FlushRecord> beginFlush(const QString &session, qint64 firstSeq, qint64 lastSeq, int tokens,
                                          const QStringList &blocks, const QString &owner) override;
    std::optional<FlushRecord> pendingFlush(const QString &session) override;
    bool claimFlush(const QString &session, qint64 flush, const QString &expectedOwner, const QString &owner) override;
    void completeBlock(const QString &session, qint64 flush, const QString &block, const Json &state) override;
    void abandonBlocks(const QString &session, qint64 flush, const QStringList &blocks) override;
    QMap<QString, Json> blockStates(const QString &session) override;
    int clearSession(const QString &session) override;
    bool deleteSession(const QString &session) override;
    void close() override;

private:
    void open();
    void migrate();
    int storedVersion();
    // Lookups inside a transaction (the mutex held).
    std::optional<SessionInfo> sessionLocked(const QString &id);
    SessionInfo ensureSessionLocked(const QString &id);
    std::optional<FlushRecord> pendingLocked(const QString &session, bool withMessages);
    QList<SessionMessage> messagesLocked(const QString &session, const char *where, qint64 a, qint64 b);
    void touchLocked(const QString &session);

    Options m_options;
    std::unique_ptr<SqliteFile> m_file;
    QMutex m_mutex;
};

} // namespace mneme
