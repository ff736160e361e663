#pragma once

// One SQLite file of Mneme's own small stores (the chat store, the flow-state store): opening it
// with the memory store's conventions, errors that say what to do, prepared statements,
// transactions and ordered schema migrations. Private; not installed. The memory store itself lives
// in the SQLite storage plugin, which keeps its own plumbing (plugins depend on core only).

#include "core/schema_migration_p.h"

#include <QByteArray>
#include <QString>

#include <functional>
#include <span>

struct sqlite3;
struct sqlite3_stmt;

namespace mneme {

// How a file is named in messages.
struct SqliteFileKind
{
    QString noun;            // "chat store"
    QString remedy;          // what to do with a damaged file: "give the chat memory another file"
    QString defaultFileName; // offered for a folder given as the path: "memory.db"
};

// One connection, opened by open() and closed by close() or the destructor. Not thread-safe: its
// owner serialises the calls (both stores hold a mutex around every use).
class SqliteFile
{
public:
    SqliteFile(SqliteFileKind kind, int busyTimeoutMs);
    ~SqliteFile();
    SqliteFile(const SqliteFile &) = delete;
    SqliteFile &operator=(const SqliteFile &) = delete;

    // Opens `path`, creating the file and its folder when missing; ":memory:" opens a private
    // in-memory database. Throws Error: InvalidArgument for a folder, ReadOnlyStore when the file or
    // its folder cannot be written, and what fail() throws for SQLite's refusals.
    void open(const QString &path);
    // Switches a file to WAL mode with synchronous=FULL, retrying a busy file within the busy
    // timeout; a file system without WAL support is refused. Nothing to do for ":memory:".
    void useWal();
    void close();

    bool isOpen() const { return m_db != nullptr; }
    bool inMemory() const { return m_inMemory; }
    // The absolute path (or ":memory:"), as messages name the file.
    const QString &location() const { return m_location; }
    sqlite3 *handle() const { return m_db; }
    // Rows changed by the last statement.
    qint64 changes() const;

    // Throws Error(Storage) when the file was closed.
    void checkOpen() const;
    // Throws the Error for SQLite result `rc` met while `doing` (a phrase: "reading the schema").
    [[noreturn]] void fail(int rc, const QString &doing) const;
    // Runs SQL without results; fail() on an error.
    void exec(const char *sql, const QString &doing);

private:
    SqliteFileKind m_kind;
    int m_busyTimeoutMs;
    QString m_location;
    bool m_inMemory = false;
    sqlite3 *m_db = nullptr;
};

// A prepared statement, finalized when it goes out of scope. Errors go through the file's fail().
class SqliteStatement
{
public:
    SqliteStatement(const SqliteFile &file, const char *sql);
    ~SqliteStatement();
    SqliteStatement(const SqliteStatement &) = delete;
    SqliteStatement &operator=(const SqliteStatement &) = delete;

    SqliteStatement &bind(int index, const QString &text) { return bind(index, text.toUtf8()); }
    SqliteStatement &bind(int index, const QByteArray &bytes);
    SqliteStatement &bind(int index, qint64 value);
    SqliteStatement &bindNull(int index);
    // True when a row is ready; false when the statement is done.
    bool step(const QString &doing);
    QString text(int column) const;
    qint64 int64(int column) const;
    bool isNull(int column) const;
    // Ready to run again with new values.
    void reset();

private:
    void check(int rc);

    const SqliteFile &m_file;
    sqlite3_stmt *m_st = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when left without commit() (by an exception).
class SqliteTransaction
{
public:
    SqliteTransaction(SqliteFile &file, const QString &doing);
    ~SqliteTransaction();
    SqliteTransaction(const SqliteTransaction &) = delete;
    SqliteTransaction &operator=(const SqliteTransaction &) = delete;
    void commit();

private:
    SqliteFile &m_file;
    QString m_doing;
    bool m_committed = false;
};

// One step of a schema (core/schema_migration_p.h).
using SqliteMigration = SchemaMigration;

// Applies the steps after version `current` in the caller's transaction, recording each version as
// key 'schema_version' of the key/value table `metaTable`; `created` runs after step 1 (to record
// who created the store). `what` names the schema in messages ("the chat schema").
void applySqliteMigrations(SqliteFile &file, std::span<const SqliteMigration> steps, int current, const char *metaTable,
                           const QString &what, const std::function<void()> &created);

} // namespace mneme
