#include "keyword_evidence.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <vector>

namespace mneme {

namespace {

constexpr double kK1 = 1.2;
constexpr double kB = 0.75;
// Rowids above this are not cached (their lengths are read from FTS5 each time): the cache is an
// array by rowid, two bytes a row.
constexpr qint64 kMaxCachedRowid = qint64(1) << 26;

// What one query needs of every row it scores, computed on its first row: the idf of each phrase,
// the average row length in tokens and the ideal score. The first `gate` phrases only choose the rows
// (KeywordEvidence's gate): they have no idf and are not counted.
struct QueryStats
{
    int gate = 0;
    std::vector<double> idf;
    double averageLength = 1;
    double ideal = 0;              // the idfs' sum, without the left-out words
    std::vector<double> frequency; // per phrase, reused from row to row
};

int countRow(const Fts5ExtensionApi *, Fts5Context *, void *counter)
{
    ++*static_cast<sqlite3_int64 *>(counter);
    return SQLITE_OK;
}

void freeStats(void *p)
{
    delete static_cast<QueryStats *>(p);
}

// The statistics of the current query, computed once and kept as the function's aux data.
QueryStats *statsFor(const Fts5ExtensionApi *api, Fts5Context *fts, int gate, sqlite3_value *known, int *rc)
{
    if (auto *cached = static_cast<QueryStats *>(api->xGetAuxdata(fts, 0)))
        return cached;
    auto *s = new (std::nothrow) QueryStats;
    if (!s) {
        *rc = SQLITE_NOMEM;
        return nullptr;
    }
    sqlite3_int64 rows = 0, tokens = 0;
    *rc = api->xRowCount(fts, &rows);
    if (*rc == SQLITE_OK)
        *rc = api->xColumnTotalSize(fts, -1, &tokens);
    const int phrases = api->xPhraseCount(fts);
    s->idf.assign(std::size_t(std::max(phrases, 0)), 0.0);
    s->frequency.assign(s->idf.size(), 0.0);
    s->averageLength = rows > 0 ? std::max(1.0, double(tokens) / double(rows)) : 1.0;
    s->gate = std::clamp(gate, 0, std::max(phrases, 0));
    // The caller's counts when it gave one per counted phrase, else a walk over each phrase's rows.
    const int counted = phrases - s->gate;
    const bool given = known && sqlite3_value_type(known) == SQLITE_BLOB
                    && sqlite3_value_bytes(known) == int(sizeof(sqlite3_int64)) * counted;
    const auto *givenHits = given ? static_cast<const unsigned char *>(sqlite3_value_blob(known)) : nullptr;
    for (int i = s->gate; *rc == SQLITE_OK && i < phrases; ++i) {
        sqlite3_int64 hits = 0;
        if (givenHits)
            std::memcpy(&hits, givenHits + sizeof(sqlite3_int64) * std::size_t(i - s->gate), sizeof hits);
        else
            *rc = api->xQueryPhrase(fts, i, &hits, countRow);
        s->idf[std::size_t(i)] = KeywordEvidence::idf(rows, hits);
        s->ideal += s->idf[std::size_t(i)];
    }
    if (*rc == SQLITE_OK)
        *rc = api->xSetAuxdata(fts, s, freeStats); // frees s itself when it fails
    else
        delete s;
    return *rc == SQLITE_OK ? s : nullptr;
}

// The current row's length in tokens, from the function's Lengths when it knows it.
int rowLength(const Fts5ExtensionApi *api, Fts5Context *fts, int *length)
{
    auto *lengths = static_cast<KeywordEvidence::Lengths *>(api->xUserData(fts));
    const sqlite3_int64 rowid = api->xRowid(fts);
    if (lengths)
        if (const std::optional<int> known = lengths->find(rowid)) {
            *length = *known;
            return SQLITE_OK;
        }
    const int rc = api->xColumnSize(fts, -1, length);
    if (rc == SQLITE_OK && lengths)
        lengths->remember(rowid, *length);
    return rc;
}

void keywordEvidence(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const double contextWeight = argc > 0 ? sqlite3_value_double(argv[0]) : 0.0;
    const double leftOut = argc > 1 ? std::max(0.0, sqlite3_value_double(argv[1])) : 0.0;
    const int gate = argc > 2 ? sqlite3_value_int(argv[2]) : 0;
    int rc = SQLITE_OK;
    QueryStats *s = statsFor(api, fts, gate, argc > 3 ? argv[3] : nullptr, &rc);
    if (!s) {
        sqlite3_result_error_code(ctx, rc);
        return;
    }
    std::fill(s->frequency.begin(), s->frequency.end(), 0.0);
    int instances = 0;
    rc = api->xInstCount(fts, &instances);
    for (int i = 0; rc == SQLITE_OK && i < instances; ++i) {
        int phrase = 0, column = 0, offset = 0;
        rc = api->xInst(fts, i, &phrase, &column, &offset);
        if (rc == SQLITE_OK && phrase >= s->gate && std::size_t(phrase) < s->frequency.size())
            s->frequency[std::size_t(phrase)] += column == 0 ? 1.0 : contextWeight;
    }
    int length = 0;
    if (rc == SQLITE_OK)
        rc = rowLength(api, fts, &length);
    if (rc != SQLITE_OK) {
        sqlite3_result_error_code(ctx, rc);
        return;
    }
    const double norm = kK1 * (1.0 - kB + kB * double(length) / s->averageLength);
    double score = 0;
    for (std::size_t p = 0; p < s->frequency.size(); ++p) {
        const double f = s->frequency[p];
        if (f > 0)
            score += s->idf[p] * f * (kK1 + 1.0) / (f + norm);
    }
    const double ideal = s->ideal + leftOut;
    sqlite3_result_double(ctx, ideal > 0 ? score / ideal : 0.0);
}

} // namespace

double KeywordEvidence::idf(qint64 rows, qint64 hits)
{
    const double v = std::log(1.0 + (double(rows) + 100 - double(hits) + 0.5) / (double(hits) + 0.5));
    return v > 0 && std::isfinite(v) ? v : 1e-6;
}

std::optional<int> KeywordEvidence::Lengths::find(qint64 rowid) const
{
    if (rowid < 0 || rowid >= qint64(m_tokens.size()) || m_tokens[std::size_t(rowid)] == 0)
        return std::nullopt;
    return int(m_tokens[std::size_t(rowid)]) - 1;
}

void KeywordEvidence::Lengths::remember(qint64 rowid, int tokens)
{
    if (rowid < 0 || rowid > kMaxCachedRowid || tokens < 0 || tokens >= 0xffff)
        return; // read from FTS5 each time
    if (rowid >= qint64(m_tokens.size()))
        m_tokens.resize(std::size_t(std::max<qint64>(rowid + 1, qint64(m_tokens.size()) * 3 / 2)), 0);
    m_tokens[std::size_t(rowid)] = quint16(tokens + 1);
}

void KeywordEvidence::Lengths::forget(qint64 rowid)
{
    if (rowid >= 0 && rowid < qint64(m_tokens.size()))
        m_tokens[std::size_t(rowid)] = 0;
}

void KeywordEvidence::Lengths::forgetAll()
{
    std::fill(m_tokens.begin(), m_tokens.end(), quint16(0));
}

void KeywordEvidence::Lengths::reset()
{
    m_tokens = {};
    m_loaded = false;
}

void KeywordEvidence::Lengths::loadOnce(sqlite3 *db)
{
    if (m_loaded)
        return;
    m_loaded = true;
    // The docsize table holds, per row, each column's length as a varint (SQLite's encoding: seven
    // bits a byte, most significant first). A row it cannot read is left unknown.
    sqlite3_stmt *st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT id, sz FROM records_fts_docsize", -1, &st, nullptr) != SQLITE_OK) {
        sqlite3_finalize(st);
        return;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        const auto *p = static_cast<const unsigned char *>(sqlite3_column_blob(st, 1));
        const int n = sqlite3_column_bytes(st, 1);
        qint64 total = 0;
        bool whole = true;
        for (int i = 0; i < n && whole;) {
            quint32 v = 0;
            int k = 0;
            for (; k < 5 && i < n; ++k) {
                const unsigned char b = p[i++];
                v = (v << 7) | (b & 0x7f);
                if (!(b & 0x80))
                    break;
            }
            whole = k < 5 && !(p[i - 1] & 0x80);
            total += v;
        }
        if (whole)
            remember(sqlite3_column_int64(st, 0), int(std::min<qint64>(total, 0xffff)));
    }
    sqlite3_finalize(st);
}

bool KeywordEvidence::registerOn(sqlite3 *db, Lengths *lengths)
{
    fts5_api *api = nullptr;
    sqlite3_stmt *st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, nullptr) != SQLITE_OK)
        return false;
    sqlite3_bind_pointer(st, 1, &api, "fts5_api_ptr", nullptr);
    sqlite3_step(st);
    sqlite3_finalize(st);
    if (!api || api->iVersion < 2)
        return false;
    return api->xCreateFunction(api, "mneme_keyword", lengths, keywordEvidence, nullptr) == SQLITE_OK;
}

} // namespace mneme
