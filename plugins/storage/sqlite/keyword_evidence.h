#pragma once

#include <QtGlobal>

#include <optional>
#include <vector>

struct sqlite3;

namespace mneme {

// How strongly a record matches the words of a query, in absolute terms: an FTS5 auxiliary function
// registered on each connection of the store,
//
//   mneme_keyword(records_fts, context_weight, left_out_idf[, gate])
//
// It computes BM25 as FTS5's own bm25() does (k1 = 1.2, b = 0.75, a word in the context column counting
// context_weight of one in the content), with the idf of Lucene's BM25, which stays positive when a
// word is in half the records or more (so a word matters in a store of a few records too), and
// divides it by the BM25 of a record of average length that holds each query word once: the sum of
// the words' idfs, plus left_out_idf for the words the caller left out of the query (too common to be
// worth searching, but part of what was asked). 1: the record matches the whole query about that
// well; a half: it holds about half of the query's information; above 1 when it matches better (the
// words repeated, or a short record). A query word no record holds counts in full (the idf of a word
// found nowhere), so a query of unknown words matched by one common word scores low.
//
// gate (default 0): the number of phrases at the start of the MATCH expression that only choose which
// rows are scored, as in "(a OR (b AND c)) AND (a OR b OR c)": they are not counted, and the evidence is
// that of the phrases after them.
//
// hits (optional): a blob of one native 64-bit integer per counted phrase, in order, the number of
// rows each phrase is found in (as the query's own column filter sees it), which the caller keeps
// between queries; without it (or of the wrong size) each query counts them itself, a walk over every
// row of each phrase.
//
// A row's length in tokens comes from the Lengths the function was registered with: read once per row
// from FTS5's docsize table (or all at once by Lengths::load()), not once per query that scores it.
class KeywordEvidence
{
public:
    // Each record's length in tokens (all columns), as FTS5's docsize table holds it, by rowid. Owned
    // by the storage beside its connection and used under its lock (the function runs inside the
    // storage's statements). Whoever writes records_fts forgets what it writes.
    class Lengths
    {
    public:
        std::optional<int> find(qint64 rowid) const;
        void remember(qint64 rowid, int tokens);
        void forget(qint64 rowid);
        void forgetAll();
        // Every row's length from the docsize table of records_fts, in one read, the first time it is
        // asked on a connection (forgetAll() does not ask again: rows are then read one at a time).
        void loadOnce(sqlite3 *db);
        void reset(); // a new connection: nothing known, loadOnce() reads again

    private:
        std::vector<quint16> m_tokens; // by rowid: tokens + 1; 0 when not known
        bool m_loaded = false;
    };

    // Registers mneme_keyword() on `db`, with `lengths` (which must outlive the connection); false when
    // the FTS5 API cannot be reached.
    static bool registerOn(sqlite3 *db, Lengths *lengths);
    // The idf of a word found in `hits` of `rows` records, counted as if the store held 100 more
    // records without it (so that in a store of a few records a word weighs about what it would in a
    // larger one): ln(1 + (rows + 100 - hits + 0.5) / (hits + 0.5)).
    static double idf(qint64 rows, qint64 hits);
};

} // namespace mneme
