#pragma once

#include <QByteArray>
#include <QStringList>
#include <QStringView>

namespace mneme {

// The words a PostgreSQL store's keyword search knows a text by, computed in the process: the same
// analysis for the texts saved (the `words` and `context_words` columns, schema 5 on) and for the
// queries, so that the two always agree. Before schema 5 the server computed both
// (to_tsvector('english', ...)); computing them here takes the text search off the server's share of
// a save.
//
// A word is a run of letters, digits and combining marks (an apostrophe between two letters joins
// them: "don't" is "dont"), folded to lower case with its diacritics removed (as the SQLite store's
// unicode61 tokenizer with remove_diacritics 2); the English stop words of StopWords::english() are
// left out (they still take a position); the others are stemmed with Snowball's English stemmer (the
// server's `english` configuration uses the same algorithm). Thread-safe (a stemmer per thread).
namespace TextWords {

// What a tsvector holds at most (the server refuses more): positions up to 16,383 (a later word is
// counted at 16,383, as the server's own parser does), 256 positions a word, words of 2,047 bytes
// (a longer word is not indexed) and about 1 MB in all (the words past it are not indexed).
constexpr int kMaxPosition = 16383;
constexpr int kMaxPositions = 256;
constexpr int kMaxWordBytes = 2047;
constexpr int kMaxBytes = 1000000;

// The text's words with their positions, in a tsvector's text form ('word':1,4 'other':2), which
// KeywordIndex reads and the server stores.
QByteArray tsvector(QStringView text);

// The text's distinct words, sorted: a query's words.
QStringList distinct(QStringView text);

} // namespace TextWords

} // namespace mneme
