// The PostgreSQL store's keyword index reading tsvectors' text form (what the server sends for the
// `words` and `context_words` columns): any bytes are words it indexes and searches. The input is cut
// at its first newline into a record's content and context words; two records are indexed (the second
// with the halves swapped), replaced, searched with every lexeme the input holds, and removed.
// The input is also read as a text whose words are written by TextWords (as a record's are) and
// searched with the words TextWords finds in it as a query.
// Checks: scores within 0..1 and best first, counts that match what was indexed, nothing left once
// every record is removed; a text's written words are the query's words, each with 1 to 256
// positions, and find the text's record.

#include "plugins/storage/postgres/keyword_index.h"
#include "plugins/storage/postgres/text_words.h"

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

    const QString text = QString::fromUtf8(input.data(), qsizetype(input.size()));
    const QByteArray written = TextWords::tsvector(text);
    const QStringList queried = TextWords::distinct(text);
    QStringList read;
    for (const auto &[lexeme, count] : KeywordIndex::parse(std::string_view(written.constData(), std::size_t(written.size())))) {
        check(!lexeme.isEmpty() && count >= 1 && count <= TextWords::kMaxPositions);
        read << lexeme;
    }
    read.sort();
    check(read == queried); // (an input is far below the size past which words are left out)
    index.upsert(3, std::string_view(written.constData(), std::size_t(written.size())), "");
    check(index.records() == 3);
    if (!queried.isEmpty()) {
        bool found = false;
        for (const KeywordIndex::Match &m : index.search(queried, 0, 0))
            found = found || m.rid == 3;
        check(found);
    }
    searchAndCheck(index, queried);

    index.remove(1);
    index.remove(2);
    index.remove(3);
    index.remove(4); // never indexed
    check(index.records() == 0);
    for (const QString &lexeme : lexemes)
        check(index.holding(lexeme) == 0);
    check(index.search(lexemes, 0.3, 0).empty());
    return 0;
}
