#include "wal_checkpointer.h"

#include <QLoggingCategory>
#include <sqlite3.h>
#include <system_error>

namespace mneme {

namespace {
Q_LOGGING_CATEGORY(lcCheckpoint, "mneme.storage.sqlite")
}

WalCheckpointer::WalCheckpointer(const QByteArray &uri, const QString &location, int pages)
    : m_uri(uri), m_location(location), m_pages(pages)
{
}

WalCheckpointer::~WalCheckpointer()
{
    stop();
}

void WalCheckpointer::attach(sqlite3 *db)
{
    sqlite3_wal_hook(db, &WalCheckpointer::onCommit, this); // replaces the automatic checkpoint
}

int WalCheckpointer::onCommit(void *self, sqlite3 *db, const char *name, int frames)
{
    auto *c = static_cast<WalCheckpointer *>(self);
    if (frames >= 4 * c->m_pages) {
        // The thread is not keeping up: checkpoint here, as SQLite would.
        if (sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) == SQLITE_OK)
            ++c->m_inline;
    } else if (frames >= c->m_pages) {
        c->request();
    }
    return SQLITE_OK;
}

void WalCheckpointer::request()
{
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_stop)
        return;
    m_requested = true;
    if (!m_thread.joinable()) {
        try {
            m_thread = std::thread([this] { run(); }); // at the first checkpoint a store needs
        } catch (const std::system_error &e) {
            // Called from inside SQLite's commit: nothing may be thrown through it.
            qCWarning(lcCheckpoint).noquote() << "background checkpoints of" << m_location
                                              << "are off: no thread could be started:" << e.what();
            m_stop = true;
            return;
        }
    }
    m_wake.notify_one();
}

void WalCheckpointer::stop()
{
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
        m_wake.notify_one();
    }
    if (m_thread.joinable())
        m_thread.join();
}

void WalCheckpointer::run()
{
    sqlite3 *db = nullptr;
    int rc = sqlite3_open_v2(m_uri.constData(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, nullptr);
    if (rc == SQLITE_OK)
        rc = sqlite3_busy_timeout(db, 5000); // for the schema read below, should another connection hold it
    // Reading the schema opens the connection's view of the log; without it a checkpoint copies nothing.
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "PRAGMA synchronous = FULL", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) {
        // The writing connection's own checkpoints (four times later) take over.
        qCWarning(lcCheckpoint).noquote() << "background checkpoints of" << m_location << "are off:" << sqlite3_errstr(rc);
        sqlite3_close_v2(db);
        return;
    }
    int lastError = SQLITE_OK; // a failure the next checkpoints repeat is reported once
    std::unique_lock<std::mutex> lock(m_mutex);
    for (;;) {
        m_wake.wait(lock, [this] { return m_requested || m_stop; });
        if (m_stop)
            break;
        m_requested = false;
        lock.unlock();
        // Busy (another checkpoint under way, a reader on an old snapshot) is no failure: the next
        // commit past the threshold asks again.
        rc = sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
        if (rc == SQLITE_OK)
            ++m_background;
        else if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED && rc != lastError) // the log stays whole: nothing is lost
            qCWarning(lcCheckpoint).noquote() << "a background checkpoint of" << m_location << "failed:" << sqlite3_errstr(rc);
        lastError = rc;
        lock.lock();
    }
    lock.unlock();
    sqlite3_close_v2(db);
}

} // namespace mneme
