#include "keyword_evidence.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <new>
#include <vector>

namespace mneme {

namespace {

constexpr double kK1 = 1.2;
constexpr double kB = 0.75;

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
QueryStats *statsFor(const Fts5ExtensionApi *api, Fts5Context *fts, int gate, int *rc)
{
    if (auto *known = static_cast<QueryStats *>(api->xGetAuxdata(fts, 0)))
        return known;
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
    for (int i = s->gate; *rc == SQLITE_OK && i < phrases; ++i) {
        sqlite3_int64 hits = 0;
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

void keywordEvidence(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const double contextWeight = argc > 0 ? sqlite3_value_double(argv[0]) : 0.0;
    const double leftOut = argc > 1 ? std::max(0.0, sqlite3_value_double(argv[1])) : 0.0;
    const int gate = argc > 2 ? sqlite3_value_int(argv[2]) : 0;
    int rc = SQLITE_OK;
    QueryStats *s = statsFor(api, fts, gate, &rc);
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
        rc = api->xColumnSize(fts, -1, &length);
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

bool KeywordEvidence::registerOn(sqlite3 *db)
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
    return api->xCreateFunction(api, "mneme_keyword", nullptr, keywordEvidence, nullptr) == SQLITE_OK;
}

} // namespace mneme
