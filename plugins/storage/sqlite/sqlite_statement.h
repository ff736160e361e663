#pragma once

// Private to the SQLite plugin: the statement helper SqliteStorage and SqliteGraphStore share.

#include "sqlite_storage.h"

#include <QByteArray>
#include <QDateTime>
#include <QString>
#include <cstring>
#include <sqlite3.h>
#include <variant>
#include <vector>

namespace mneme {

// A cached prepared statement of the storage's connection in use (SqliteStorage::prepare()): reset
// and unbound when it goes out of scope; a statement the cache did not take is finalised. Used under
// the storage's mutex, like the connection.
class SqliteStorage::Statement
{
public:
    Statement(SqliteStorage &storage, const QByteArray &sql)
        : m_storage(storage), m_st(storage.prepare(sql, &m_owned))
    {
    }
    ~Statement()
    {
        if (m_owned) {
            sqlite3_finalize(m_st);
        } else {
            sqlite3_reset(m_st);
            sqlite3_clear_bindings(m_st);
        }
    }
    Statement(const Statement &) = delete;
    Statement &operator=(const Statement &) = delete;

    sqlite3_stmt *get() const { return m_st; }

    Statement &bind(int i, qint64 v)
    {
        check(sqlite3_bind_int64(m_st, i, v));
        return *this;
    }
    Statement &bindDouble(int i, double v)
    {
        check(sqlite3_bind_double(m_st, i, v));
        return *this;
    }
    Statement &bindNull(int i)
    {
        check(sqlite3_bind_null(m_st, i));
        return *this;
    }
    Statement &bindBytes(int i, const QByteArray &utf8)
    {
        check(sqlite3_bind_text64(m_st, i, utf8.constData(), sqlite3_uint64(utf8.size()), SQLITE_TRANSIENT, SQLITE_UTF8));
        return *this;
    }
    Statement &bindBlob(int i, const QByteArray &bytes)
    {
        check(sqlite3_bind_blob64(m_st, i, bytes.constData(), sqlite3_uint64(bytes.size()), SQLITE_TRANSIENT));
        return *this;
    }
    // A null QString binds SQL NULL when `nullable`, else the empty text.
    Statement &bindText(int i, const QString &s, bool nullable = false)
    {
        if (s.isNull() && nullable)
            return bindNull(i);
        return bindBytes(i, s.toUtf8());
    }
    Statement &bindTime(int i, const QDateTime &t)
    {
        return t.isValid() ? bind(i, t.toMSecsSinceEpoch()) : bindNull(i);
    }
    Statement &bindEmbedding(int i, const Embedding &e)
    {
        if (e.empty())
            return bindNull(i);
        check(sqlite3_bind_blob64(m_st, i, e.data(), sqlite3_uint64(e.size() * sizeof(float)), SQLITE_TRANSIENT));
        return *this;
    }
    // Binds `args` as texts from position `first`; returns the position after them.
    int bindAll(const std::vector<QByteArray> &args, int first = 1)
    {
        for (const QByteArray &a : args)
            bindBytes(first++, a);
        return first;
    }
    void bindAll(const std::vector<std::variant<qint64, QByteArray, double>> &args, int first = 1)
    {
        int i = first;
        for (const auto &a : args) {
            if (std::holds_alternative<qint64>(a))
                bind(i++, std::get<qint64>(a));
            else if (std::holds_alternative<double>(a))
                bindDouble(i++, std::get<double>(a));
            else
                bindBytes(i++, std::get<QByteArray>(a));
        }
    }

    // True when a row is ready, false when done; throws on failure.
    bool step(const QString &doing)
    {
        const int rc = sqlite3_step(m_st);
        if (rc == SQLITE_ROW)
            return true;
        if (rc == SQLITE_DONE)
            return false;
        m_storage.fail(rc, doing);
    }
    // Runs a statement that returns no rows.
    void run(const QString &doing)
    {
        while (step(doing)) {
        }
    }

    qint64 int64(int col) const { return sqlite3_column_int64(m_st, col); }
    bool isNull(int col) const { return sqlite3_column_type(m_st, col) == SQLITE_NULL; }
    QString text(int col) const { return columnText(m_st, col); }
    // A BLOB of float32 values; empty when NULL or not a whole number of floats.
    Embedding embedding(int col) const
    {
        const int bytes = sqlite3_column_bytes(m_st, col);
        const void *data = sqlite3_column_blob(m_st, col);
        Embedding e;
        if (data && bytes > 0 && bytes % int(sizeof(float)) == 0) {
            e.resize(std::size_t(bytes) / sizeof(float));
            std::memcpy(e.data(), data, std::size_t(bytes));
        }
        return e;
    }

    static QString columnText(sqlite3_stmt *st, int col)
    {
        const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(st, col));
        if (!p)
            return QString();
        const int bytes = sqlite3_column_bytes(st, col);
        return bytes == 0 ? QStringLiteral("") : QString::fromUtf8(p, bytes);
    }

private:
    void check(int rc)
    {
        if (rc != SQLITE_OK)
            m_storage.fail(rc, QStringLiteral("binding a value"));
    }

    SqliteStorage &m_storage;
    bool m_owned = false;
    sqlite3_stmt *m_st;
};

} // namespace mneme
