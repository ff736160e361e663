#pragma once

#include <QByteArray>
#include <QString>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

struct sqlite3;

namespace mneme {

// Copies a store's write-ahead log into its database file on a thread and a connection of its own,
// so that the writing connection's commits do not wait for checkpoints (SQLite runs them inside the
// commit that crosses the threshold). After a commit leaves `pages` frames or more in the log, the
// thread runs a passive checkpoint: it copies what no reader still needs, never waits, never blocks a
// writer. The log starts over only when a transaction begins with all of it copied, which the thread
// cannot achieve while commits keep coming (each adds frames during the copy): under a continuous
// bulk save, or readers holding old snapshots, the log grows to four times `pages`, and then the
// committing connection checkpoints itself, as without this class, and the log starts over. Durability
// is the log's: a commit is on disk when it returns, checkpointed or not.
class WalCheckpointer
{
public:
    // `uri`: the file: URI the writing connection opened; `location`: the path, for messages.
    WalCheckpointer(const QByteArray &uri, const QString &location, int pages);
    ~WalCheckpointer(); // stop()
    WalCheckpointer(const WalCheckpointer &) = delete;
    WalCheckpointer &operator=(const WalCheckpointer &) = delete;

    // Takes over the checkpoints of `db` (a connection to the same file in WAL mode).
    void attach(sqlite3 *db);
    // Waits for a running checkpoint, ends the thread and closes its connection. Call before the
    // writing connection closes, so that it is the last one and removes the log.
    void stop();
    // Checkpoints the thread has run, and those the committing connection ran itself.
    qint64 background() const { return m_background.load(); }
    qint64 inlined() const { return m_inline.load(); }

private:
    static int onCommit(void *self, sqlite3 *db, const char *name, int frames);
    void request();
    void run();

    const QByteArray m_uri;
    const QString m_location;
    const int m_pages;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    bool m_requested = false;
    bool m_stop = false;
    std::thread m_thread;
    std::atomic<qint64> m_background{0};
    std::atomic<qint64> m_inline{0};
};

} // namespace mneme
