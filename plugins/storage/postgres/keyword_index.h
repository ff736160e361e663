#pragma once

#include <QHash>
#include <QString>
#include <QStringList>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mneme {

// The words of every record of a PostgreSQL store (the `words` and `context_words` tsvector columns,
// written by the saving process from TextWords since schema 5), held by one process so that a keyword search counts,
// selects and scores without the server: a posting list per word, and per record the frequency of
// each of its words and its lengths. PostgresStorage fills it from the records and keeps it up to date
// from the change log, as it does its vector index. Not thread-safe: its owner guards it.
//
// A search is the SQLite store's keyword search (KeywordEvidence, SqliteStorage::selectiveMatch and
// keywordGate): the same idf, BM25 (k1 = 1.2, b = 0.75) over a record's words and its context's (a
// context word counting `contextWeight` of one), the same normalisation, the same cap on common words
// and the same bound on the records scored.
class KeywordIndex
{
public:
    struct Match
    {
        qint64 rid = 0;
        double score = 0; // 0..1
    };

    // Forgets every record.
    void clear();
    // Adds the record, or replaces its words: `words` and `contextWords` are tsvectors' text form
    // ('word':1,4 'other':2); the texts' lengths are their words' positions.
    void upsert(qint64 rid, std::string_view words, std::string_view contextWords);
    void remove(qint64 rid);

    qint64 records() const { return qint64(m_docs.size()); }
    // Records whose content holds the word (the server's lexeme).
    qint64 holding(const QString &lexeme) const;

    // What a search's scores are computed from: the records of the whole store, the sum of their
    // lengths (words of the content and the context), and per query word the records whose content
    // holds it. statistics() gives this index's; the server gives the same numbers (PostgresStorage's
    // searches while the index loads).
    struct Statistics
    {
        qint64 records = 0;
        qint64 totalLength = 0;
        std::vector<qint64> holding; // by the query's words, in their order
    };
    Statistics statistics(const QStringList &lexemes) const;

    // Which records a search scores, decided from the statistics alone: those holding one of
    // `any`, and those holding two of `paired` (empty: none). A word of neither selects no records.
    struct Selection
    {
        QStringList any, paired;
    };
    static Selection selection(const QStringList &lexemes, const Statistics &statistics, int rowBudget);

    // The records matching the query's words (distinct lexemes), best first (ties: lower rid), each
    // scored 0..1. A word held by more than a tenth of the records (at least 50, at most 2,000) selects
    // none of its own unless about as common as the rarest one under that line; when the words left
    // select more than `rowBudget` records together (counted in the content; 0: no bound), only the
    // records holding one of the rarest words (as many as fit) or two of the next 8 are scored.
    std::vector<Match> search(const QStringList &lexemes, double contextWeight, int rowBudget) const
    {
        return search(lexemes, contextWeight, rowBudget, statistics(lexemes));
    }
    // The same search scored with these statistics, over the records this index holds: an index
    // holding at least the records selection() names, with the store's statistics, finds what an
    // index of the whole store finds, with the same scores.
    std::vector<Match> search(const QStringList &lexemes, double contextWeight, int rowBudget, const Statistics &statistics) const;

    // How often each lexeme occurs, from a tsvector's text form.
    static std::vector<std::pair<QString, int>> parse(std::string_view tsvector);

private:
    struct Doc
    {
        std::vector<std::pair<int, int>> content, context; // (word, frequency), by word
        int length = 0;                                    // words of the content and the context
    };
    int wordId(const QString &lexeme);
    static void sortAndMerge(std::vector<std::pair<int, int>> &words);
    static int frequency(const std::vector<std::pair<int, int>> &words, int word);
    void drop(const Doc &doc);
    void compact(std::vector<qint64> &postings, int word, bool context);

    QHash<QString, int> m_ids; // a word's number
    // Per word: the records holding it in the content (m_content) and in the context (m_context). A
    // removed or replaced record's old entries stay until the list is compacted (searches check the
    // record); m_holding and m_contextHolding (the records holding it there) are exact.
    std::vector<std::vector<qint64>> m_content, m_context;
    std::vector<qint64> m_holding, m_contextHolding;
    std::unordered_map<qint64, Doc> m_docs;
    qint64 m_totalLength = 0;
};

} // namespace mneme
