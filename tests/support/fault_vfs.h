#pragma once

#include <QByteArray>
#include <QString>
#include <atomic>
#include <memory>

namespace mneme::test {

// A SQLite VFS that wraps the operating system's and fails, tears or forgets I/O on request, in the
// manner of LevelDB's fault-injection Env. While it lives it is the process's default VFS, so every
// connection goes through it: those of the store, of its checkpointer, and of the sqlite plugin.
//
// Faults apply to files whose name ends with the given text ("-wal", "store.db"; empty: every file),
// to the operations counted from the moment they are armed:
//   failNth(Write, 3)        the third write from now fails (SQLITE_IOERR_WRITE, or `code`)
//   failNth(Sync, 1)         the next fsync fails
//   tearNth(2, 100)          the second write from now writes its first 100 bytes, then fails
//   diskFullAfter(4096)      writes fail with SQLITE_FULL once 4 KiB more have been written
//   loseUnsynced()           power loss: every file is put back as it was at its last fsync
// Every write is counted and every file remembers what its writes since its last fsync replaced,
// so loseUnsynced() can undo them (the page cache of a machine that lost power).
class FaultVfs
{
public:
    enum class Op {
        Write,
        Sync,
        Truncate,
        Read
    };

    FaultVfs();
    ~FaultVfs();
    FaultVfs(const FaultVfs &) = delete;
    FaultVfs &operator=(const FaultVfs &) = delete;

    void failNth(Op op, int n, int code = 0, const QString &fileMatch = {});
    // The n-th write from now reaches the file only up to `bytes`, then fails.
    void tearNth(int n, int bytes, const QString &fileMatch = {});
    void diskFullAfter(qint64 bytes, const QString &fileMatch = {});
    // No fault armed any more (counts go on).
    void clear();
    // Puts every file written since its last sync back as it was then.
    void loseUnsynced();
    // Power loss at the n-th write from now (before it): loseUnsynced(), then the process ends at
    // once with `exitCode`, running no destructor (for a helper process that a test watches).
    void powerLossAtWrite(int n, int exitCode);
    // Operations seen since construction.
    int count(Op op) const;

    struct State;

private:
    std::unique_ptr<State> m_state;
};

} // namespace mneme::test
