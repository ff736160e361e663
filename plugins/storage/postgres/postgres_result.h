#pragma once

#include <mneme/core/memory_record.h>

#include <QByteArray>
#include <QString>
#include <QtEndian>
#include <cstring>
#include <libpq-fe.h>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

// What the PostgreSQL plugin's records and graph code share of libpq's results: the statement result
// (owning its pg_result), the byte form of an embedding, and array literals for parameters.
namespace mneme::pg {

// An embedding as the stores keep it: float32, little-endian (a bytea column).
inline QByteArray embeddingBytes(const Embedding &e)
{
    QByteArray out(qsizetype(e.size() * sizeof(float)), Qt::Uninitialized);
    for (std::size_t i = 0; i < e.size(); ++i)
        qToLittleEndian(e[i], out.data() + i * sizeof(float));
    return out;
}

inline Embedding embeddingOf(const QByteArray &bytes)
{
    Embedding e(std::size_t(bytes.size()) / sizeof(float));
    for (std::size_t i = 0; i < e.size(); ++i)
        e[i] = qFromLittleEndian<float>(bytes.constData() + i * sizeof(float));
    return e;
}

// A bigint[] literal of these numbers, for a parameter cast to bigint[].
inline QByteArray bigintArray(const std::vector<qint64> &numbers)
{
    QByteArray out = "{";
    for (std::size_t i = 0; i < numbers.size(); ++i) {
        if (i)
            out += ',';
        out += QByteArray::number(numbers[i]);
    }
    return out + "}";
}

// An array literal of these texts (null: NULL), for a parameter cast to text[] or another array type.
inline QByteArray arrayLiteral(const std::vector<std::optional<QByteArray>> &values)
{
    QByteArray out = "{";
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i)
            out += ',';
        if (!values[i]) {
            out += "NULL";
            continue;
        }
        out += '"';
        for (const char c : *values[i]) {
            if (c == '"' || c == '\\')
                out += '\\';
            out += c;
        }
        out += '"';
    }
    return out + "}";
}

// A statement's result, its columns read in the text format (or the binary one where named so).
class Result
{
public:
    explicit Result(pg_result *r) : m_r(r) {}
    Result(Result &&o) noexcept : m_r(std::exchange(o.m_r, nullptr)) {}
    Result(const Result &) = delete;
    Result &operator=(const Result &) = delete;
    ~Result() { PQclear(m_r); }
    ExecStatusType status() const { return PQresultStatus(m_r); }
    int rows() const { return PQntuples(m_r); }
    bool isNull(int row, int col) const { return PQgetisnull(m_r, row, col); }
    QString text(int row, int col) const { return QString::fromUtf8(PQgetvalue(m_r, row, col), PQgetlength(m_r, row, col)); }
    QByteArray bytes(int row, int col) const { return QByteArray(PQgetvalue(m_r, row, col), PQgetlength(m_r, row, col)); }
    qint64 int64(int row, int col) const { return QByteArray(PQgetvalue(m_r, row, col)).toLongLong(); }
    double number(int row, int col) const { return QByteArray(PQgetvalue(m_r, row, col)).toDouble(); }
    bool boolean(int row, int col) const { return PQgetvalue(m_r, row, col)[0] == 't'; }
    QByteArray errorMessage() const { return PQresultErrorMessage(m_r); }
    // A bytea column in the text format ("\x0a1b...").
    QByteArray bytea(int row, int col) const { return QByteArray::fromHex(bytes(row, col).mid(2)); }
    Embedding embedding(int row, int col) const { return embeddingOf(bytea(row, col)); }
    // Columns of a result in the binary format: int8, float8, bool, and text or bytea as they are.
    qint64 binaryInt64(int row, int col) const { return qFromBigEndian<qint64>(PQgetvalue(m_r, row, col)); }
    double binaryDouble(int row, int col) const
    {
        const quint64 bits = qFromBigEndian<quint64>(PQgetvalue(m_r, row, col));
        double d;
        std::memcpy(&d, &bits, sizeof d);
        return d;
    }
    bool binaryBool(int row, int col) const { return PQgetvalue(m_r, row, col)[0] != 0; }
    std::string_view view(int row, int col) const
    {
        return std::string_view(PQgetvalue(m_r, row, col), std::size_t(PQgetlength(m_r, row, col)));
    }

private:
    pg_result *m_r;
};

} // namespace mneme::pg
