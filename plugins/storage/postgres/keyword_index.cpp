#include "keyword_index.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace mneme {

namespace {

constexpr double kK1 = 1.2;
constexpr double kB = 0.75;
// SqliteStorage's bounds on a word's commonness and on the words paired by the gate.
constexpr qint64 kMinCap = 50;
constexpr qint64 kMaxCap = 2000;
constexpr int kPairedWords = 8;

// KeywordEvidence::idf: Lucene's idf, as if the store held 100 more records without the word.
double idf(qint64 rows, qint64 hits)
{
    const double v = std::log(1.0 + (double(rows) + 100 - double(hits) + 0.5) / (double(hits) + 0.5));
    return v > 0 && std::isfinite(v) ? v : 1e-6;
}

} // namespace

std::vector<std::pair<QString, int>> KeywordIndex::parse(std::string_view text)
{
    std::vector<std::pair<QString, int>> out;
    std::size_t i = 0;
    std::string lexeme;
    while (i < text.size()) {
        if (text[i] != '\'') {
            ++i;
            continue;
        }
        lexeme.clear();
        for (++i; i < text.size(); ++i) {
            if (text[i] == '\\' && i + 1 < text.size()) {
                lexeme += text[++i];
            } else if (text[i] == '\'') {
                if (i + 1 < text.size() && text[i + 1] == '\'') {
                    lexeme += text[++i];
                } else {
                    ++i;
                    break;
                }
            } else {
                lexeme += text[i];
            }
        }
        int positions = 1; // a lexeme without positions counts once
        if (i < text.size() && text[i] == ':')
            for (++i; i < text.size() && text[i] != ' '; ++i)
                positions += text[i] == ',';
        out.emplace_back(QString::fromStdString(lexeme), positions);
    }
    return out;
}

void KeywordIndex::clear()
{
    *this = KeywordIndex();
}

int KeywordIndex::wordId(const QString &lexeme)
{
    auto it = m_ids.constFind(lexeme);
    if (it != m_ids.constEnd())
        return *it;
    const int id = int(m_content.size());
    m_ids.insert(lexeme, id);
    m_content.emplace_back();
    m_context.emplace_back();
    m_holding.push_back(0);
    m_contextHolding.push_back(0);
    return id;
}

int KeywordIndex::frequency(const std::vector<std::pair<int, int>> &words, int word)
{
    const auto it = std::lower_bound(words.begin(), words.end(), std::pair{word, 0});
    return it != words.end() && it->first == word ? it->second : 0;
}

// By word, a word named twice (a server's tsvector never does; lexemes that differ only in bytes
// that are not UTF-8 read as the same text) once with the frequencies summed.
void KeywordIndex::sortAndMerge(std::vector<std::pair<int, int>> &words)
{
    std::sort(words.begin(), words.end());
    std::size_t kept = 0;
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (kept > 0 && words[kept - 1].first == words[i].first)
            words[kept - 1].second += words[i].second;
        else
            words[kept++] = words[i];
    }
    words.resize(kept);
    words.shrink_to_fit();
}

void KeywordIndex::upsert(qint64 rid, std::string_view words, std::string_view contextWords)
{
    if (const auto old = m_docs.find(rid); old != m_docs.end()) {
        const Doc doc = std::move(old->second);
        m_docs.erase(old);
        drop(doc);
    }
    Doc doc;
    for (const auto &[lexeme, n] : parse(words)) {
        doc.content.emplace_back(wordId(lexeme), n);
        doc.length += n;
    }
    for (const auto &[lexeme, n] : parse(contextWords)) {
        doc.context.emplace_back(wordId(lexeme), n);
        doc.length += n;
    }
    sortAndMerge(doc.content);
    sortAndMerge(doc.context);
    for (const auto &[word, n] : doc.content) {
        m_content[std::size_t(word)].push_back(rid);
        ++m_holding[std::size_t(word)];
    }
    for (const auto &[word, n] : doc.context) {
        m_context[std::size_t(word)].push_back(rid);
        ++m_contextHolding[std::size_t(word)];
    }
    m_totalLength += doc.length;
    m_docs.emplace(rid, std::move(doc));
}

void KeywordIndex::remove(qint64 rid)
{
    const auto it = m_docs.find(rid);
    if (it == m_docs.end())
        return;
    const Doc doc = std::move(it->second);
    m_docs.erase(it);
    drop(doc);
}

// Takes a record that left m_docs out of the counts; its postings are compacted once mostly stale.
void KeywordIndex::drop(const Doc &doc)
{
    m_totalLength -= doc.length;
    for (const auto &[word, n] : doc.content) {
        --m_holding[std::size_t(word)];
        std::vector<qint64> &postings = m_content[std::size_t(word)];
        if (postings.size() > 2 * std::size_t(m_holding[std::size_t(word)]) + 16)
            compact(postings, word, false);
    }
    for (const auto &[word, n] : doc.context) {
        --m_contextHolding[std::size_t(word)];
        std::vector<qint64> &postings = m_context[std::size_t(word)];
        if (postings.size() > 2 * std::size_t(m_contextHolding[std::size_t(word)]) + 16)
            compact(postings, word, true);
    }
}

void KeywordIndex::compact(std::vector<qint64> &postings, int word, bool context)
{
    std::sort(postings.begin(), postings.end());
    postings.erase(std::unique(postings.begin(), postings.end()), postings.end());
    std::erase_if(postings, [&](qint64 rid) {
        const auto it = m_docs.find(rid);
        return it == m_docs.end() || frequency(context ? it->second.context : it->second.content, word) == 0;
    });
    postings.shrink_to_fit();
}

qint64 KeywordIndex::holding(const QString &lexeme) const
{
    const auto it = m_ids.constFind(lexeme);
    return it == m_ids.constEnd() ? 0 : m_holding[std::size_t(*it)];
}

KeywordIndex::Statistics KeywordIndex::statistics(const QStringList &lexemes) const
{
    Statistics out{records(), m_totalLength, {}};
    for (const QString &lexeme : lexemes)
        out.holding.push_back(holding(lexeme));
    return out;
}

namespace {

// What the statistics decide of a search (SqliteStorage::selectiveMatch and keywordGate): the words
// that select records (by the query's order), their idfs and those of the words left out, and, past
// the row budget, the rarest words scored alone (`rare`) and the next ones scored in pairs (`paired`).
struct Gate
{
    std::vector<std::size_t> kept;
    std::vector<double> idfs; // by the query's words
    double ideal = 0;         // the sum of every query word's idf
    bool bounded = false;
    std::vector<std::size_t> rare, paired;
};

Gate gateOf(const KeywordIndex::Statistics &stats, int rowBudget)
{
    Gate g;
    const qint64 rows = stats.records;
    const qint64 cap = std::clamp<qint64>(rows / 10, kMinCap, kMaxCap);
    qint64 rarest = -1;
    for (const qint64 h : stats.holding)
        if (h <= cap && (rarest < 0 || h < rarest))
            rarest = h;
    qint64 total = 0;
    for (std::size_t i = 0; i < stats.holding.size(); ++i) {
        const qint64 h = stats.holding[i];
        g.idfs.push_back(idf(rows, h));
        g.ideal += g.idfs.back();
        if (h <= cap || (rarest >= 0 && h <= 2 * rarest && h <= kMaxCap)) {
            g.kept.push_back(i);
            total += h;
        }
    }
    g.bounded = rowBudget > 0 && total > rowBudget && g.kept.size() >= 2;
    if (!g.bounded)
        return g;
    std::vector<std::size_t> byCommonness = g.kept;
    std::stable_sort(byCommonness.begin(), byCommonness.end(),
                     [&](std::size_t a, std::size_t b) { return stats.holding[a] < stats.holding[b]; });
    std::size_t rare = 0;
    for (qint64 used = 0; rare < byCommonness.size() && (rare == 0 || used + stats.holding[byCommonness[rare]] <= rowBudget); ++rare) {
        used += stats.holding[byCommonness[rare]];
        g.rare.push_back(byCommonness[rare]);
    }
    const std::size_t last = std::min(byCommonness.size(), rare + kPairedWords);
    g.paired.assign(byCommonness.begin() + std::ptrdiff_t(rare), byCommonness.begin() + std::ptrdiff_t(last));
    return g;
}

} // namespace

KeywordIndex::Selection KeywordIndex::selection(const QStringList &lexemes, const Statistics &statistics, int rowBudget)
{
    const Gate g = gateOf(statistics, rowBudget);
    Selection out;
    for (const std::size_t i : g.bounded ? g.rare : g.kept)
        out.any << lexemes[qsizetype(i)];
    if (g.paired.size() >= 2)
        for (const std::size_t i : g.paired)
            out.paired << lexemes[qsizetype(i)];
    return out;
}

std::vector<KeywordIndex::Match> KeywordIndex::search(const QStringList &lexemes, double contextWeight, int rowBudget,
                                                      const Statistics &stats) const
{
    const qint64 rows = stats.records;
    if (rows == 0 || lexemes.isEmpty() || stats.holding.size() != std::size_t(lexemes.size()))
        return {};
    const Gate gate = gateOf(stats, rowBudget);
    if (gate.kept.empty())
        return {};
    // A query word's number in this index (-1: in none of its records).
    std::vector<int> ids;
    for (const QString &lexeme : lexemes) {
        const auto it = m_ids.constFind(lexeme);
        ids.push_back(it == m_ids.constEnd() ? -1 : *it);
    }
    const bool context = contextWeight > 0;
    const auto holds = [&](const Doc &doc, int word) {
        return frequency(doc.content, word) > 0 || (context && frequency(doc.context, word) > 0);
    };
    const auto postingsOf = [&](int word, auto &&each) {
        if (word < 0)
            return;
        for (const qint64 rid : m_content[std::size_t(word)])
            each(rid);
        if (context)
            for (const qint64 rid : m_context[std::size_t(word)])
                each(rid);
    };

    // The records scored: those holding a kept word, or, past the budget, those holding one of the
    // rarest words or two of the next ones.
    std::vector<qint64> candidates;
    for (const std::size_t i : gate.bounded ? gate.rare : gate.kept)
        postingsOf(ids[i], [&](qint64 rid) { candidates.push_back(rid); });
    for (std::size_t a = 0; a < gate.paired.size(); ++a)
        for (std::size_t b = a + 1; b < gate.paired.size(); ++b)
            postingsOf(ids[gate.paired[a]], [&](qint64 rid) {
                const auto doc = m_docs.find(rid);
                if (doc != m_docs.end() && ids[gate.paired[b]] >= 0 && holds(doc->second, ids[gate.paired[b]]))
                    candidates.push_back(rid);
            });
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

    // KeywordEvidence's score of each.
    const double averageLength = std::max(1.0, double(stats.totalLength) / double(rows));
    std::vector<Match> out;
    for (const qint64 rid : candidates) {
        const auto it = m_docs.find(rid);
        if (it == m_docs.end())
            continue; // a stale posting
        const Doc &doc = it->second;
        const double norm = kK1 * (1.0 - kB + kB * double(doc.length) / averageLength);
        double score = 0;
        for (const std::size_t i : gate.kept) {
            if (ids[i] < 0)
                continue;
            const double f = frequency(doc.content, ids[i]) + (context ? contextWeight * frequency(doc.context, ids[i]) : 0.0);
            if (f > 0)
                score += gate.idfs[i] * f * (kK1 + 1.0) / (f + norm);
        }
        if (score > 0)
            out.push_back(Match{rid, std::min(1.0, score / gate.ideal)});
    }
    std::sort(out.begin(), out.end(), [](const Match &a, const Match &b) { return a.score != b.score ? a.score > b.score : a.rid < b.rid; });
    return out;
}

} // namespace mneme
