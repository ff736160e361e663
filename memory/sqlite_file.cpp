#include "memory/sqlite_file_p.h"

#include <mneme/core/error.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QThread>
#include <QUrl>

#include <sqlite3.h>

namespace mneme {

SqliteFile::SqliteFile(SqliteFileKind kind, int busyTimeoutMs) : m_kind(std::move(kind)), m_busyTimeoutMs(busyTimeoutMs) {}

SqliteFile::~SqliteFile()
{
    close();
}

void SqliteFile::close()
{
    if (m_db)
        sqlite3_close_v2(m_db);
    m_db = nullptr;
}

qint64 SqliteFile::changes() const
{
    return sqlite3_changes(m_db);
}

void SqliteFile::open(const QString &path)
{
    close();
    m_inMemory = path == QLatin1String(":memory:");
    QByteArray uri = ":memory:";
    if (m_inMemory) {
        m_location = path;
    } else {
        const QFileInfo fi(path);
        m_location = fi.absoluteFilePath();
        if (fi.exists() && fi.isDir())
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1 is a folder; give the %2 a file inside it, such as %1/%3")
                                                        .arg(m_location, m_kind.noun, m_kind.defaultFileName));
        if (!fi.exists() && !QDir().mkpath(fi.absolutePath()))
            throw Error(ErrorKind::ReadOnlyStore,
                        QStringLiteral("cannot create the folder %1 for the %2; check its permissions or choose another path")
                            .arg(fi.absolutePath(), m_kind.noun));
        if ((fi.exists() && !fi.isWritable()) || !QFileInfo(fi.absolutePath()).isWritable())
            throw Error(ErrorKind::ReadOnlyStore, QStringLiteral("the %1 %2 cannot be written by this user (the file or its folder); "
                                                                 "fix the permissions or choose another path")
                                                      .arg(m_kind.noun, m_location));
        // A file: URI, so that no character of the path is taken for a URI parameter.
        uri = "file:" + QUrl::toPercentEncoding(m_location, "/");
    }
    const int rc = sqlite3_open_v2(uri.constData(), &m_db,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        // sqlite3_open_v2 hands back a handle even when it fails; its message is read by fail().
        try {
            fail(rc, QStringLiteral("opening the file"));
        } catch (...) {
            close();
            throw;
        }
    }
    sqlite3_extended_result_codes(m_db, 1);
    sqlite3_busy_timeout(m_db, m_busyTimeoutMs);
}

void SqliteFile::useWal()
{
    if (m_inMemory)
        return;
    // Switching to WAL needs a moment alone with the file; another process opening it at the same
    // instant makes it busy, so retry within the busy timeout.
    QElapsedTimer timer;
    timer.start();
    for (;;) {
        char *err = nullptr;
        const int rc = sqlite3_exec(m_db, "PRAGMA journal_mode = WAL", nullptr, nullptr, &err);
        sqlite3_free(err);
        if (rc == SQLITE_OK)
            break;
        if (((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) || timer.elapsed() > m_busyTimeoutMs)
            fail(rc, QStringLiteral("switching to WAL mode"));
        QThread::msleep(10);
    }
    {
        SqliteStatement mode(*this, "PRAGMA journal_mode");
        if (mode.step(QStringLiteral("reading the journal mode")) && mode.text(0).toLower() != QLatin1String("wal"))
            throw Error(ErrorKind::Storage, QStringLiteral("cannot switch the %1 %2 to WAL mode (it stays in %3 mode); the file "
                                                           "system may not support it")
                                                .arg(m_kind.noun, m_location, mode.text(0)));
    }
    exec("PRAGMA synchronous = FULL", QStringLiteral("configuring durable writes"));
}

void SqliteFile::checkOpen() const
{
    if (!m_db)
        throw Error(ErrorKind::Storage, QStringLiteral("the %1 %2 is closed; open it again to use it").arg(m_kind.noun, m_location));
}

void SqliteFile::fail(int rc, const QString &doing) const
{
    const QString detail = m_db ? QString::fromUtf8(sqlite3_errmsg(m_db)) : QString::fromUtf8(sqlite3_errstr(rc));
    switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        throw Error(ErrorKind::Corrupt, QStringLiteral("%1 is not a %2 or is damaged (%3 while %4); Mneme did not change it. Move "
                                                       "it away or %5")
                                            .arg(m_location, m_kind.noun, detail, doing, m_kind.remedy));
    case SQLITE_READONLY:
        throw Error(ErrorKind::ReadOnlyStore, QStringLiteral("the %1 %2 cannot be written (%3 while %4); check the permissions of "
                                                             "the file and its folder")
                                                  .arg(m_kind.noun, m_location, detail, doing));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        throw Error(ErrorKind::Storage, QStringLiteral("the %1 %2 stayed locked by another connection for more than %3 ms while "
                                                       "%4; retry, or raise busyTimeoutMs")
                                            .arg(m_kind.noun, m_location)
                                            .arg(m_busyTimeoutMs)
                                            .arg(doing));
    case SQLITE_FULL:
        throw Error(ErrorKind::Storage,
                    QStringLiteral("the disk holding %1 is full (while %2); free some space and retry").arg(m_location, doing));
    default:
        throw Error(ErrorKind::Storage, QStringLiteral("SQLite failed on %1 while %2: %3").arg(m_location, doing, detail));
    }
}

void SqliteFile::exec(const char *sql, const QString &doing)
{
    char *err = nullptr;
    const int rc = sqlite3_exec(m_db, sql, nullptr, nullptr, &err);
    sqlite3_free(err);
    if (rc != SQLITE_OK)
        fail(rc, doing);
}

// ---------------------------------------------------------------------------------------------

SqliteStatement::SqliteStatement(const SqliteFile &file, const char *sql) : m_file(file)
{
    const int rc = sqlite3_prepare_v2(file.handle(), sql, -1, &m_st, nullptr);
    if (rc != SQLITE_OK)
        file.fail(rc, QStringLiteral("preparing a query"));
}

SqliteStatement::~SqliteStatement()
{
    sqlite3_finalize(m_st);
}

SqliteStatement &SqliteStatement::bind(int index, const QByteArray &bytes)
{
    check(sqlite3_bind_text(m_st, index, bytes.constData(), int(bytes.size()), SQLITE_TRANSIENT));
    return *this;
}

SqliteStatement &SqliteStatement::bind(int index, qint64 value)
{
    check(sqlite3_bind_int64(m_st, index, value));
    return *this;
}

SqliteStatement &SqliteStatement::bindNull(int index)
{
    check(sqlite3_bind_null(m_st, index));
    return *this;
}

bool SqliteStatement::step(const QString &doing)
{
    const int rc = sqlite3_step(m_st);
    if (rc == SQLITE_ROW)
        return true;
    if (rc != SQLITE_DONE)
        m_file.fail(rc, doing);
    return false;
}

QString SqliteStatement::text(int column) const
{
    const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(m_st, column));
    return p ? QString::fromUtf8(p, sqlite3_column_bytes(m_st, column)) : QString();
}

qint64 SqliteStatement::int64(int column) const
{
    return sqlite3_column_int64(m_st, column);
}

bool SqliteStatement::isNull(int column) const
{
    return sqlite3_column_type(m_st, column) == SQLITE_NULL;
}

void SqliteStatement::reset()
{
    sqlite3_reset(m_st);
    sqlite3_clear_bindings(m_st);
}

void SqliteStatement::check(int rc)
{
    if (rc != SQLITE_OK)
        m_file.fail(rc, QStringLiteral("binding a value"));
}

// ---------------------------------------------------------------------------------------------

SqliteTransaction::SqliteTransaction(SqliteFile &file, const QString &doing) : m_file(file), m_doing(doing)
{
    m_file.exec("BEGIN IMMEDIATE", m_doing);
}

SqliteTransaction::~SqliteTransaction()
{
    if (!m_committed && m_file.isOpen())
        sqlite3_exec(m_file.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void SqliteTransaction::commit()
{
    m_file.exec("COMMIT", m_doing);
    m_committed = true;
}

// ---------------------------------------------------------------------------------------------

void applySqliteMigrations(SqliteFile &file, std::span<const SqliteMigration> steps, int current, const char *metaTable,
                           const QString &what, const std::function<void()> &created)
{
    const QByteArray record = QByteArray("INSERT INTO ") + metaTable
                            + "(key, value) VALUES ('schema_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value";
    applySchemaMigrations(
        steps, current, [&](const SchemaMigration &m) { file.exec(m.sql, QStringLiteral("upgrading %1 to version %2").arg(what).arg(m.version)); },
        [&](int version) {
            SqliteStatement st(file, record.constData());
            st.bind(1, QString::number(version)).step(QStringLiteral("recording the version of %1").arg(what));
            if (version == 1 && created)
                created();
        });
}

} // namespace mneme
