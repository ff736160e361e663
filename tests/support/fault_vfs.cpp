#include "fault_vfs.h"

#include <QFileInfo>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sqlite3.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace mneme::test {

struct FaultVfs::State
{
    struct Fault
    {
        Op op;
        int remaining;
        int code;
        std::string match;
        int tearBytes; // -1: no tear
    };
    // What the writes to one file since its last sync replaced (shared by its handles).
    struct Undo
    {
        sqlite3_int64 offset;
        std::string old;
    };
    struct FileLog
    {
        sqlite3_int64 syncedSize = -1;
        std::vector<Undo> undo;
    };

    sqlite3_vfs vfs{};
    sqlite3_vfs *real = nullptr;
    std::mutex mutex;
    std::vector<Fault> faults;
    sqlite3_int64 fullBudget = -1;
    std::string fullMatch;
    int powerLossIn = -1; // writes left before a power loss; -1: none
    int powerLossExit = 0;
    int counts[4] = {};
    std::map<std::string, FileLog> logs;

    // Puts every file back as it was at its last sync. The caller holds `mutex`.
    void revertUnsynced()
    {
        for (auto &[path, log] : logs) {
            if (log.undo.empty() || log.syncedSize < 0)
                continue;
            const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd < 0)
                continue; // deleted since
            for (auto it = log.undo.rbegin(); it != log.undo.rend(); ++it)
                if (!it->old.empty() && ::pwrite(fd, it->old.data(), it->old.size(), off_t(it->offset)) < 0)
                    break;
            if (::ftruncate(fd, off_t(log.syncedSize)) != 0) {
                // a file that cannot be cut keeps its tail: a test sees more, never less
            }
            ::close(fd);
            log.undo.clear();
        }
    }

    // Whether a fault for `match` (the end of a file name; empty: any file) applies to `path`.
    static bool matches(const std::string &match, const std::string &path)
    {
        return match.empty() || (path.size() >= match.size() && path.compare(path.size() - match.size(), match.size(), match) == 0);
    }
    // The code the next operation `op` on `path` fails with (0: none) and, for a torn write, how
    // much of it reaches the file. The caller holds `mutex`.
    int fault(Op op, const std::string &path, int *tear)
    {
        ++counts[int(op)];
        *tear = -1;
        for (auto it = faults.begin(); it != faults.end(); ++it) {
            if (it->op != op || !matches(it->match, path))
                continue;
            if (--it->remaining > 0)
                continue;
            const int code = it->code;
            *tear = it->tearBytes;
            faults.erase(it);
            return code;
        }
        return 0;
    }
};

namespace {

using State = FaultVfs::State;
using Op = FaultVfs::Op;

struct File
{
    sqlite3_file base;
    State *state;
    std::string *path;
    sqlite3_file *real() { return reinterpret_cast<sqlite3_file *>(reinterpret_cast<char *>(this) + kRealOffset); }
    static constexpr std::size_t kRealOffset = (sizeof(sqlite3_file) + sizeof(State *) + sizeof(std::string *) + 15) & ~std::size_t(15);
};

File *fileOf(sqlite3_file *f)
{
    return reinterpret_cast<File *>(f);
}

const sqlite3_io_methods *realMethods(File *f)
{
    return f->real()->pMethods;
}

sqlite3_int64 sizeOf(File *f)
{
    sqlite3_int64 size = 0;
    if (realMethods(f)->xFileSize(f->real(), &size) != SQLITE_OK)
        return 0;
    return size;
}

// Keeps what [offset, offset + amount) holds now, so that a power loss can put it back.
void remember(File *f, sqlite3_int64 offset, sqlite3_int64 amount)
{
    State::FileLog &log = f->state->logs[*f->path];
    const sqlite3_int64 size = sizeOf(f);
    if (log.syncedSize < 0)
        log.syncedSize = size;
    const sqlite3_int64 end = std::min(size, offset + amount);
    std::string old;
    if (end > offset) {
        old.resize(std::size_t(end - offset));
        realMethods(f)->xRead(f->real(), old.data(), int(old.size()), offset);
    }
    log.undo.push_back(State::Undo{offset, std::move(old)});
}

int xClose(sqlite3_file *file)
{
    File *f = fileOf(file);
    const int rc = realMethods(f)->xClose(f->real());
    delete f->path;
    f->path = nullptr;
    return rc;
}

int xRead(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset)
{
    File *f = fileOf(file);
    int tear = -1;
    int code = 0;
    {
        std::lock_guard<std::mutex> lock(f->state->mutex);
        code = f->state->fault(Op::Read, *f->path, &tear);
    }
    if (code)
        return code;
    return realMethods(f)->xRead(f->real(), buffer, amount, offset);
}

int xWrite(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset)
{
    File *f = fileOf(file);
    State *s = f->state;
    std::lock_guard<std::mutex> lock(s->mutex);
    if (s->powerLossIn > 0 && --s->powerLossIn == 0) {
        s->revertUnsynced();
        std::fflush(stdout);
        ::_exit(s->powerLossExit);
    }
    int tear = -1;
    const int code = s->fault(Op::Write, *f->path, &tear);
    if (code && tear < 0)
        return code;
    if (s->fullBudget >= 0 && State::matches(s->fullMatch, *f->path)) {
        if (amount > s->fullBudget)
            return SQLITE_FULL;
        s->fullBudget -= amount;
    }
    remember(f, offset, amount);
    if (code) { // a torn write: its start reaches the file
        realMethods(f)->xWrite(f->real(), buffer, std::min(amount, tear), offset);
        return code;
    }
    return realMethods(f)->xWrite(f->real(), buffer, amount, offset);
}

int xTruncate(sqlite3_file *file, sqlite3_int64 size)
{
    File *f = fileOf(file);
    State *s = f->state;
    std::lock_guard<std::mutex> lock(s->mutex);
    int tear = -1;
    if (const int code = s->fault(Op::Truncate, *f->path, &tear))
        return code;
    const sqlite3_int64 before = sizeOf(f);
    if (before > size)
        remember(f, size, before - size);
    return realMethods(f)->xTruncate(f->real(), size);
}

int xSync(sqlite3_file *file, int flags)
{
    File *f = fileOf(file);
    State *s = f->state;
    std::lock_guard<std::mutex> lock(s->mutex);
    int tear = -1;
    if (const int code = s->fault(Op::Sync, *f->path, &tear))
        return code;
    const int rc = realMethods(f)->xSync(f->real(), flags);
    if (rc == SQLITE_OK) {
        State::FileLog &log = s->logs[*f->path];
        log.undo.clear();
        log.syncedSize = sizeOf(f);
    }
    return rc;
}

int xFileSize(sqlite3_file *file, sqlite3_int64 *size)
{
    return realMethods(fileOf(file))->xFileSize(fileOf(file)->real(), size);
}
int xLock(sqlite3_file *file, int level)
{
    return realMethods(fileOf(file))->xLock(fileOf(file)->real(), level);
}
int xUnlock(sqlite3_file *file, int level)
{
    return realMethods(fileOf(file))->xUnlock(fileOf(file)->real(), level);
}
int xCheckReservedLock(sqlite3_file *file, int *out)
{
    return realMethods(fileOf(file))->xCheckReservedLock(fileOf(file)->real(), out);
}
int xFileControl(sqlite3_file *file, int op, void *arg)
{
    return realMethods(fileOf(file))->xFileControl(fileOf(file)->real(), op, arg);
}
int xSectorSize(sqlite3_file *file)
{
    return realMethods(fileOf(file))->xSectorSize(fileOf(file)->real());
}
int xDeviceCharacteristics(sqlite3_file *file)
{
    return realMethods(fileOf(file))->xDeviceCharacteristics(fileOf(file)->real());
}
int xShmMap(sqlite3_file *file, int page, int size, int extend, void volatile **out)
{
    return realMethods(fileOf(file))->xShmMap(fileOf(file)->real(), page, size, extend, out);
}
int xShmLock(sqlite3_file *file, int offset, int n, int flags)
{
    return realMethods(fileOf(file))->xShmLock(fileOf(file)->real(), offset, n, flags);
}
void xShmBarrier(sqlite3_file *file)
{
    realMethods(fileOf(file))->xShmBarrier(fileOf(file)->real());
}
int xShmUnmap(sqlite3_file *file, int deleteFlag)
{
    return realMethods(fileOf(file))->xShmUnmap(fileOf(file)->real(), deleteFlag);
}
int xFetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **out)
{
    return realMethods(fileOf(file))->xFetch(fileOf(file)->real(), offset, amount, out);
}
int xUnfetch(sqlite3_file *file, sqlite3_int64 offset, void *p)
{
    return realMethods(fileOf(file))->xUnfetch(fileOf(file)->real(), offset, p);
}

const sqlite3_io_methods kMethods = {
    3,
    xClose,
    xRead,
    xWrite,
    xTruncate,
    xSync,
    xFileSize,
    xLock,
    xUnlock,
    xCheckReservedLock,
    xFileControl,
    xSectorSize,
    xDeviceCharacteristics,
    xShmMap,
    xShmLock,
    xShmBarrier,
    xShmUnmap,
    xFetch,
    xUnfetch,
};

State *stateOf(sqlite3_vfs *vfs)
{
    return static_cast<State *>(vfs->pAppData);
}

int vfsOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *outFlags)
{
    State *s = stateOf(vfs);
    File *f = fileOf(file);
    f->base.pMethods = nullptr;
    f->state = s;
    const int rc = s->real->xOpen(s->real, name, f->real(), flags, outFlags);
    if (rc != SQLITE_OK)
        return rc;
    f->path = new std::string(name ? name : "");
    f->base.pMethods = &kMethods;
    return SQLITE_OK;
}

int vfsDelete(sqlite3_vfs *vfs, const char *name, int syncDir)
{
    State *s = stateOf(vfs);
    {
        std::lock_guard<std::mutex> lock(s->mutex);
        s->logs.erase(name ? name : "");
    }
    return s->real->xDelete(s->real, name, syncDir);
}

int vfsAccess(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    return stateOf(vfs)->real->xAccess(stateOf(vfs)->real, name, flags, out);
}
int vfsFullPathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    return stateOf(vfs)->real->xFullPathname(stateOf(vfs)->real, name, n, out);
}
void *vfsDlOpen(sqlite3_vfs *vfs, const char *name)
{
    return stateOf(vfs)->real->xDlOpen(stateOf(vfs)->real, name);
}
void vfsDlError(sqlite3_vfs *vfs, int n, char *out)
{
    stateOf(vfs)->real->xDlError(stateOf(vfs)->real, n, out);
}
void (*vfsDlSym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void)
{
    return stateOf(vfs)->real->xDlSym(stateOf(vfs)->real, handle, symbol);
}
void vfsDlClose(sqlite3_vfs *vfs, void *handle)
{
    stateOf(vfs)->real->xDlClose(stateOf(vfs)->real, handle);
}
int vfsRandomness(sqlite3_vfs *vfs, int n, char *out)
{
    return stateOf(vfs)->real->xRandomness(stateOf(vfs)->real, n, out);
}
int vfsSleep(sqlite3_vfs *vfs, int microseconds)
{
    return stateOf(vfs)->real->xSleep(stateOf(vfs)->real, microseconds);
}
int vfsCurrentTime(sqlite3_vfs *vfs, double *out)
{
    return stateOf(vfs)->real->xCurrentTime(stateOf(vfs)->real, out);
}
int vfsGetLastError(sqlite3_vfs *vfs, int n, char *out)
{
    return stateOf(vfs)->real->xGetLastError(stateOf(vfs)->real, n, out);
}
int vfsCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    return stateOf(vfs)->real->xCurrentTimeInt64(stateOf(vfs)->real, out);
}
int vfsSetSystemCall(sqlite3_vfs *vfs, const char *name, sqlite3_syscall_ptr call)
{
    return stateOf(vfs)->real->xSetSystemCall(stateOf(vfs)->real, name, call);
}
sqlite3_syscall_ptr vfsGetSystemCall(sqlite3_vfs *vfs, const char *name)
{
    return stateOf(vfs)->real->xGetSystemCall(stateOf(vfs)->real, name);
}
const char *vfsNextSystemCall(sqlite3_vfs *vfs, const char *name)
{
    return stateOf(vfs)->real->xNextSystemCall(stateOf(vfs)->real, name);
}

} // namespace

FaultVfs::FaultVfs()
    : m_state(std::make_unique<State>())
{
    State &s = *m_state;
    s.real = sqlite3_vfs_find(nullptr);
    sqlite3_vfs &v = s.vfs;
    v.iVersion = 3;
    v.szOsFile = int(File::kRealOffset) + s.real->szOsFile;
    v.mxPathname = s.real->mxPathname;
    v.zName = "mneme-fault";
    v.pAppData = &s;
    v.xOpen = vfsOpen;
    v.xDelete = vfsDelete;
    v.xAccess = vfsAccess;
    v.xFullPathname = vfsFullPathname;
    v.xDlOpen = vfsDlOpen;
    v.xDlError = vfsDlError;
    v.xDlSym = vfsDlSym;
    v.xDlClose = vfsDlClose;
    v.xRandomness = vfsRandomness;
    v.xSleep = vfsSleep;
    v.xCurrentTime = vfsCurrentTime;
    v.xGetLastError = vfsGetLastError;
    v.xCurrentTimeInt64 = vfsCurrentTimeInt64;
    v.xSetSystemCall = vfsSetSystemCall;
    v.xGetSystemCall = vfsGetSystemCall;
    v.xNextSystemCall = vfsNextSystemCall;
    sqlite3_vfs_register(&v, 1);
}

FaultVfs::~FaultVfs()
{
    sqlite3_vfs_unregister(&m_state->vfs);
    sqlite3_vfs_register(m_state->real, 1);
}

void FaultVfs::failNth(Op op, int n, int code, const QString &fileMatch)
{
    if (code == 0)
        code = op == Op::Sync ? SQLITE_IOERR_FSYNC : op == Op::Read ? SQLITE_IOERR_READ
                                               : op == Op::Truncate ? SQLITE_IOERR_TRUNCATE
                                                                    : SQLITE_IOERR_WRITE;
    std::lock_guard<std::mutex> lock(m_state->mutex);
    m_state->faults.push_back(State::Fault{op, n, code, fileMatch.toStdString(), -1});
}

void FaultVfs::tearNth(int n, int bytes, const QString &fileMatch)
{
    std::lock_guard<std::mutex> lock(m_state->mutex);
    m_state->faults.push_back(State::Fault{Op::Write, n, SQLITE_IOERR_WRITE, fileMatch.toStdString(), bytes});
}

void FaultVfs::diskFullAfter(qint64 bytes, const QString &fileMatch)
{
    std::lock_guard<std::mutex> lock(m_state->mutex);
    m_state->fullBudget = bytes;
    m_state->fullMatch = fileMatch.toStdString();
}

void FaultVfs::clear()
{
    std::lock_guard<std::mutex> lock(m_state->mutex);
    m_state->faults.clear();
    m_state->fullBudget = -1;
}

void FaultVfs::loseUnsynced()
{
    std::lock_guard<std::mutex> lock(m_state->mutex);
    m_state->revertUnsynced();
}

void FaultVfs::powerLossAtWrite(int n, int exitCode)
{
    std::lock_guard<std::mutex> lock(m_state->mutex);
    m_state->powerLossIn = n;
    m_state->powerLossExit = exitCode;
}

int FaultVfs::count(Op op) const
{
    std::lock_guard<std::mutex> lock(m_state->mutex);
    return m_state->counts[int(op)];
}

} // namespace mneme::test
