#include "text_words.h"

#include <mneme/core/stop_words.h>

#include <QString>
#include <algorithm>
#include <libstemmer.h>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

namespace mneme::TextWords {

namespace {

struct StemmerDeleter
{
    void operator()(sb_stemmer *s) const { sb_stemmer_delete(s); }
};

// One thread's stemmer (libstemmer's are not thread-safe) and the buffers of the text at hand.
struct Workspace
{
    std::unique_ptr<sb_stemmer, StemmerDeleter> stemmer;
    std::string word;                               // the word at hand, folded
    std::vector<std::pair<std::string, int>> found; // (stem, position); the first `used` are this text's
    std::size_t used = 0;
};

Workspace &workspace()
{
    thread_local Workspace ws;
    if (!ws.stemmer) {
        ws.stemmer.reset(sb_stemmer_new("english", "UTF_8"));
        if (!ws.stemmer)
            throw std::bad_alloc();
    }
    return ws;
}

bool isAsciiWordChar(char16_t c)
{
    return (c >= u'a' && c <= u'z') || (c >= u'A' && c <= u'Z') || (c >= u'0' && c <= u'9');
}

bool isWordChar(char32_t c)
{
    return c < 0x80 ? isAsciiWordChar(char16_t(c)) : QChar::isLetterOrNumber(c) || QChar::isMark(c);
}

bool isApostrophe(char32_t c)
{
    return c == U'\'' || c == U'\u2019';
}

// The code point at i (a surrogate pair read as one), and how many UTF-16 units it takes.
char32_t codePointAt(QStringView text, qsizetype i, int *units)
{
    const char16_t c = text[i].unicode();
    if (QChar::isHighSurrogate(c) && i + 1 < text.size() && text[i + 1].isLowSurrogate()) {
        *units = 2;
        return QChar::surrogateToUcs4(c, text[i + 1].unicode());
    }
    *units = 1;
    return c;
}

// A word written in ASCII (apostrophes dropped), in lower case; whether it holds a letter.
bool foldAscii(QStringView word, std::string &out)
{
    out.clear();
    bool letter = false;
    for (const QChar ch : word) {
        const char16_t c = ch.unicode();
        if (isApostrophe(c))
            continue;
        const bool upper = c >= u'A' && c <= u'Z';
        letter = letter || upper || (c >= u'a' && c <= u'z');
        out += char(upper ? c + (u'a' - u'A') : c);
    }
    return letter;
}

// A word with characters beyond ASCII: compatibility-decomposed, case-folded, its marks (and
// apostrophes) removed.
void foldWide(QStringView word, std::string &out)
{
    const QString folded = word.toString().normalized(QString::NormalizationForm_KD).toCaseFolded();
    QString kept;
    kept.reserve(folded.size());
    for (const char32_t c : QStringView(folded).toUcs4())
        if (QChar::isLetterOrNumber(c))
            kept += QChar::fromUcs4(c);
    const QByteArray utf8 = kept.toUtf8();
    out.assign(utf8.constData(), std::size_t(utf8.size()));
}

// Calls each(stem, position) for every word of the text that is indexed, in order.
template<typename Each>
void eachWord(QStringView text, Workspace &ws, Each &&each)
{
    int position = 0;
    const auto word = [&](QStringView written, bool wide) {
        bool stem = true;
        if (wide)
            foldWide(written, ws.word);
        else
            stem = foldAscii(written, ws.word); // digits alone are not stemmed
        if (ws.word.empty())
            return; // marks alone
        position = std::min(position + 1, kMaxPosition);
        if (ws.word.size() > std::size_t(kMaxWordBytes) || StopWords::isEnglish(ws.word))
            return;
        if (!stem) {
            each(std::string_view(ws.word), position);
            return;
        }
        const sb_symbol *stemmed = sb_stemmer_stem(ws.stemmer.get(), reinterpret_cast<const sb_symbol *>(ws.word.data()), int(ws.word.size()));
        if (!stemmed)
            throw std::bad_alloc();
        each(std::string_view(reinterpret_cast<const char *>(stemmed), std::size_t(sb_stemmer_length(ws.stemmer.get()))), position);
    };
    qsizetype start = -1; // the word at hand's first unit, or -1
    bool wide = false;
    for (qsizetype i = 0; i < text.size();) {
        int units = 1;
        const char32_t c = codePointAt(text, i, &units);
        if (isWordChar(c)) {
            if (start < 0) {
                start = i;
                wide = false;
            }
            wide = wide || c >= 0x80;
        } else if (start >= 0 && isApostrophe(c) && i + 1 < text.size()) {
            int nextUnits = 1;
            const char32_t next = codePointAt(text, i + 1, &nextUnits);
            if (!QChar::isLetter(next)) {
                word(text.mid(start, i - start), wide);
                start = -1;
            }
        } else if (start >= 0) {
            word(text.mid(start, i - start), wide);
            start = -1;
        }
        i += units;
    }
    if (start >= 0)
        word(text.mid(start), wide);
}

void appendEscaped(QByteArray &out, std::string_view lexeme)
{
    for (const char c : lexeme) {
        if (c == '\'' || c == '\\')
            out += c;
        out += c;
    }
}

} // namespace

QByteArray tsvector(QStringView text)
{
    Workspace &ws = workspace();
    ws.used = 0;
    eachWord(text, ws, [&](std::string_view stem, int position) {
        if (ws.used == ws.found.size())
            ws.found.emplace_back();
        ws.found[ws.used].first.assign(stem);
        ws.found[ws.used].second = position;
        ++ws.used;
    });
    const auto found = ws.found.begin();
    std::sort(found, found + std::ptrdiff_t(ws.used));
    QByteArray out;
    std::size_t bytes = 0; // about what the server's tsvector takes for these words
    for (std::size_t i = 0; i < ws.used;) {
        const std::string &stem = ws.found[i].first;
        std::size_t end = i;
        while (end < ws.used && ws.found[end].first == stem)
            ++end;
        const std::size_t positions = std::min(end - i, std::size_t(kMaxPositions));
        bytes += stem.size() + 2 * positions + 4;
        if (bytes > std::size_t(kMaxBytes))
            break;
        out += out.isEmpty() ? "'" : " '";
        appendEscaped(out, stem);
        out += "':";
        int last = -1, kept = 0;
        for (std::size_t k = i; k < end && kept < kMaxPositions; ++k) {
            const int position = ws.found[k].second;
            if (position == last)
                continue; // words past the last position share it
            if (kept++)
                out += ',';
            out += QByteArray::number(position);
            last = position;
        }
        i = end;
    }
    return out;
}

QStringList distinct(QStringView text)
{
    std::vector<std::string> stems;
    eachWord(text, workspace(), [&](std::string_view stem, int) { stems.emplace_back(stem); });
    std::sort(stems.begin(), stems.end());
    stems.erase(std::unique(stems.begin(), stems.end()), stems.end());
    QStringList out;
    out.reserve(qsizetype(stems.size()));
    for (const std::string &s : stems)
        out << QString::fromUtf8(s.data(), qsizetype(s.size()));
    return out;
}

} // namespace mneme::TextWords
