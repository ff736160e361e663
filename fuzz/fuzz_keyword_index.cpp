// The PostgreSQL store's keyword index reading tsvectors' text form (what the server sends for the
// `words` and `context_words` columns): any bytes are words it indexes and searches. The input is cut
// at its first newline into a record's content and context words; two records are indexed (the second
// with the halves swapped), replaced, searched with every lexeme the input holds, and removed.
// Checks: scores within 0..1 and best first, counts that match what was indexed, and nothing left once
// every record is removed.

#include "plugins/storage/postgres/keyword_index.h"

#include <QSet>
#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace mneme;

namespace {

void check(bool ok)
{
    if (!ok)
        std::abort();
}

void searchAndCheck(const KeywordIndex &index, const QStringList &lexemes)
{
    for (const int budget : {0, 1, 1000}) {
        const std::vector<KeywordIndex::Match> found = index.search(lexemes, 0.3, budget);
        check(qint64(found.size()) <= index.records());
        for (std::size_t i = 0; i < found.size(); ++i) {
            check(found[i].score > 0 && found[i].score <= 1);
            if (i > 0)
                check(found[i - 1].score > found[i].score
                      || (found[i - 1].score == found[i].score && found[i - 1].rid < found[i].rid));
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    const std::string_view input(reinterpret_cast<const char *>(data), size);
    const std::size_t cut = input.find('\n');
    const std::string_view words = input.substr(0, cut);
    const std::string_view context = cut == std::string_view::npos ? std::string_view() : input.substr(cut + 1);

    QSet<QString> distinct;
    for (const auto &[lexeme, count] : KeywordIndex::parse(input)) {
        check(count >= 1);
        distinct.insert(lexeme);
    }
    const QStringList lexemes(distinct.begin(), distinct.end());

    KeywordIndex index;
    index.upsert(1, words, context);
    index.upsert(2, context, words);
    check(index.records() == 2);
    searchAndCheck(index, lexemes);
    for (const QString &lexeme : lexemes)
        check(index.holding(lexeme) >= 0 && index.holding(lexeme) <= 2);

    index.upsert(1, context, words); // a replacement: still two records
    check(index.records() == 2);
    searchAndCheck(index, lexemes);

    index.remove(1);
    index.remove(2);
    index.remove(3); // never indexed
    check(index.records() == 0);
    for (const QString &lexeme : lexemes)
        check(index.holding(lexeme) == 0);
    check(index.search(lexemes, 0.3, 0).empty());
    return 0;
}
