#include "hash_embedder.h"

#include <mneme/core/error.h>
#include <mneme/core/stop_words.h>

#include <QChar>
#include <QMutex>
#include <QMutexLocker>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include <libstemmer.h>

// How a text becomes a vector (hash-v1). Everything below is part of the format: changing a seed,
// a weight, a normalisation rule or the hash changes every stored vector and needs a new model
// name (hash-v2), never an edit of hash-v1.
//
//  1. Normalise: NFKD, case fold, NFKD again, drop diacritic marks, unify apostrophe and hyphen
//     variants, delete format characters, a few letter foldings (ø->o, ł->l, ß->ss, ...), NFC.
//     A per-code-unit table (built lazily, 256 code points at a time, from the same pipeline)
//     does this without allocating for texts whose characters normalise independently of their
//     neighbours; anything else (surrogates, combining marks that are kept, Hangul jamo) takes
//     the QString pipeline for the whole text.
//  2. Tokenise the normalised code points into words. Letters, digits and kept marks form words;
//     an apostrophe between word characters is dropped ("don't" -> "dont"); a hyphen between word
//     characters splits the word into parts and the joined form is kept too ("e-mail" -> "e",
//     "mail", and "email"); '.' and ',' between digits stay inside numbers ("3.14"). Han, kana and
//     other-symbol characters (emoji) are one-character words. Sentence punctuation breaks the
//     chain of word pairs.
//  3. Features, each family with its own seed and weight: words, adjacent word pairs, character
//     3-grams and 4-grams of "<word>". A word's n-grams share one unit of weight (each n-gram gets
//     1/sqrt(count)), so long words do not drown short ones.
//  4. Term weights are sub-linear: mean occurrence weight * (1 + ln tf).
//  5. Signed hashing: 32 bits of the feature hash pick the bucket, one more bit the sign.
//  6. L2-normalise. No features (blank text, punctuation only) gives an empty vector.

// How hash-v2 differs (its own seeds; steps 1, 2, 5 and 6 are shared with hash-v1):
//
//  3'. Stop words (a short English list written here: articles, pronouns, auxiliaries,
//      prepositions, conjunctions, fillers, contractions without their apostrophe) give no
//      features; word pairs join the content words around them. A text of nothing but stop words
//      keeps them as ordinary words. Each content word is hashed in a canonical form: irregular
//      forms to their base ("went" -> "go", "children" -> "child"), number words to digits
//      ("three" -> "3"), "1,000" -> "1000", "7th" -> "7", and lower-case ASCII words stemmed with
//      Snowball's English stemmer ("meetings" -> "meet"). Character 3-/4-grams come from the word
//      as written, only for words of 5 bytes or more and not for numbers. Temporal words (weekdays, months,
//      "yesterday", "week", ..., and the question word "when") also add one shared feature.
//  4'. Weights: word 1.0, pair 0.5, 3-grams 0.7, 4-grams 0.7; same sub-linear tf.
//
// Both models' constants were chosen by retrieval measurements described in README.md.

namespace mneme {

namespace {

// ---------------------------------------------------------------------------------------------
// Hashing: a fixed 64-bit hash over bytes, independent of platform, compiler and Qt version.

constexpr uint64_t kMulA = 0x9E3779B97F4A7C15ULL;
constexpr uint64_t kMulB = 0xBF58476D1CE4E5B9ULL;
constexpr uint64_t kMulC = 0x94D049BB133111EBULL;
constexpr uint64_t kMulD = 0xD6E8FEB86659FD93ULL;

constexpr uint64_t kSeedWord = 0x2F6D6E656D652F77ULL;
constexpr uint64_t kSeedPair = 0x5A17C0DE0B5E55EDULL;
constexpr uint64_t kSeedGram3 = 0x3C3C3C6772616D33ULL;
constexpr uint64_t kSeedGram4 = 0x4C4C4C6772616D34ULL;

inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

// Final avalanche: every input bit affects every output bit.
inline uint64_t finish64(uint64_t x)
{
    x ^= x >> 31;
    x *= kMulB;
    x ^= x >> 29;
    x *= kMulC;
    x ^= x >> 32;
    return x;
}

// Little-endian load spelled out byte by byte, so the value does not depend on the host's byte
// order; compilers turn it into one load on little-endian machines.
inline uint64_t loadLe64(const unsigned char *p)
{
    return uint64_t(p[0]) | uint64_t(p[1]) << 8 | uint64_t(p[2]) << 16 | uint64_t(p[3]) << 24
         | uint64_t(p[4]) << 32 | uint64_t(p[5]) << 40 | uint64_t(p[6]) << 48 | uint64_t(p[7]) << 56;
}

inline uint64_t mixBlock(uint64_t k)
{
    k *= kMulD;
    k = rotl64(k, 31);
    k *= kMulA;
    return k;
}

uint64_t hashBytes(const char *data, size_t len, uint64_t seed)
{
    const auto *p = reinterpret_cast<const unsigned char *>(data);
    uint64_t h = seed ^ (uint64_t(len) * kMulA);
    size_t n = len;
    while (n >= 8) {
        h ^= mixBlock(loadLe64(p));
        h = rotl64(h, 27) * kMulC + kMulB;
        p += 8;
        n -= 8;
    }
    uint64_t tail = 0;
    for (size_t i = 0; i < n; ++i)
        tail |= uint64_t(p[i]) << (8 * i);
    h ^= mixBlock(tail ^ (uint64_t(n) << 56));
    return finish64(h);
}

inline uint64_t hashPair(uint64_t first, uint64_t second)
{
    return finish64((first ^ kSeedPair) * kMulD + rotl64(second, 23));
}

// ---------------------------------------------------------------------------------------------
// Normalisation.

enum CharClass : uint8_t {
    Separator = 0,
    WordChar = 1,   // letters, digits, kept marks
    Single = 2,     // Han, kana, other symbols (emoji): a word on its own
    Apostrophe = 3, // '
    Hyphen = 4,     // -
    NumberSep = 5,  // . and , (inside numbers; '.' also ends a sentence elsewhere)
    Break = 6,      // sentence punctuation and line breaks: no word pair across it
};

bool isStrippedMark(char32_t c)
{
    return (c >= 0x0300 && c <= 0x036F) // combining diacritical marks
        || (c >= 0x1AB0 && c <= 0x1AFF) // ... extended
        || (c >= 0x1DC0 && c <= 0x1DFF) // ... supplement
        || (c >= 0x20D0 && c <= 0x20FF) // ... for symbols
        || (c >= 0xFE20 && c <= 0xFE2F) // combining half marks
        || (c >= 0x0591 && c <= 0x05BD) || c == 0x05BF || c == 0x05C1 || c == 0x05C2
        || c == 0x05C4 || c == 0x05C5 || c == 0x05C7 // Hebrew points
        || (c >= 0x0610 && c <= 0x061A) || (c >= 0x064B && c <= 0x065F) || c == 0x0670
        || (c >= 0x06D6 && c <= 0x06DC) || (c >= 0x06DF && c <= 0x06E4) || c == 0x06E7
        || c == 0x06E8 || (c >= 0x06EA && c <= 0x06ED); // Arabic harakat
}

bool isDeleted(char32_t c)
{
    if (c == 0x200B) // zero width space separates words; mapped to a space instead
        return false;
    if ((c >= 0xFE00 && c <= 0xFE0F) || (c >= 0xE0100 && c <= 0xE01EF)) // variation selectors
        return true;
    return QChar::category(c) == QChar::Other_Format; // soft hyphen, ZWJ, bidi marks, tags, BOM
}

// Appends what one decomposed, case-folded code point becomes.
void appendMapped(QString &out, char32_t c)
{
    if (isStrippedMark(c) || isDeleted(c))
        return;
    switch (c) {
    case 0x2018:
    case 0x2019:
    case 0x201B:
    case 0x02BC:
        out += QLatin1Char('\'');
        return;
    case 0x2010:
        out += QLatin1Char('-');
        return;
    case 0x200B:
        out += QLatin1Char(' ');
        return;
    case 0x00F8: out += QLatin1Char('o'); return;    // ø
    case 0x0142: out += QLatin1Char('l'); return;    // ł
    case 0x0111: out += QLatin1Char('d'); return;    // đ
    case 0x0127: out += QLatin1Char('h'); return;    // ħ
    case 0x0167: out += QLatin1Char('t'); return;    // ŧ
    case 0x0131: out += QLatin1Char('i'); return;    // dotless i
    case 0x00DF: out += QLatin1String("ss"); return; // ß (Qt folds simply)
    case 0x00E6: out += QLatin1String("ae"); return; // æ
    case 0x0153: out += QLatin1String("oe"); return; // œ
    default:
        break;
    }
    if (QChar::requiresSurrogates(c)) {
        out += QChar(QChar::highSurrogate(c));
        out += QChar(QChar::lowSurrogate(c));
    } else {
        out += QChar(char16_t(c));
    }
}

QString normalizeSlow(const QString &text)
{
    const QString decomposed =
        text.normalized(QString::NormalizationForm_KD).toCaseFolded().normalized(QString::NormalizationForm_KD);
    QString out;
    out.reserve(decomposed.size());
    const char16_t *s = reinterpret_cast<const char16_t *>(decomposed.utf16());
    const qsizetype n = decomposed.size();
    for (qsizetype i = 0; i < n; ++i) {
        char32_t c = s[i];
        if (QChar::isHighSurrogate(c) && i + 1 < n && QChar::isLowSurrogate(s[i + 1])) {
            c = QChar::surrogateToUcs4(char16_t(c), s[i + 1]);
            ++i;
        }
        appendMapped(out, c); // a lone surrogate passes through and later counts as a separator
    }
    return out.normalized(QString::NormalizationForm_C);
}

bool isJamo(char32_t c)
{
    return (c >= 0x1100 && c <= 0x11FF) || (c >= 0xA960 && c <= 0xA97F) || (c >= 0xD7B0 && c <= 0xD7FF);
}

bool isBreak(char32_t c)
{
    switch (c) {
    case '!':
    case '?':
    case ';':
    case ':':
    case '\n':
    case '\r':
    case '\v':
    case '\f':
    case 0x0085:
    case 0x2028:
    case 0x2029:
    case 0x3002:
    case 0x0964:
    case 0x0965:
    case 0x061F:
    case 0x06D4:
    case 0x203C:
    case 0x2047:
    case 0x2048:
    case 0x2049:
        return true;
    default:
        return false;
    }
}

struct ClassInfo
{
    CharClass cls;
    bool digit;
};

ClassInfo classify(char32_t c)
{
    if (c == '\'')
        return {Apostrophe, false};
    if (c == '-')
        return {Hyphen, false};
    if (c == '.' || c == ',')
        return {NumberSep, false};
    if (isBreak(c))
        return {Break, false};
    switch (QChar::category(c)) {
    case QChar::Letter_Uppercase:
    case QChar::Letter_Lowercase:
    case QChar::Letter_Titlecase:
    case QChar::Letter_Modifier:
    case QChar::Letter_Other: {
        const QChar::Script script = QChar::script(c);
        if (script == QChar::Script_Han || script == QChar::Script_Hiragana || script == QChar::Script_Katakana
            || c == 0x30FC /* katakana prolonged sound mark */)
            return {Single, false};
        return {WordChar, false};
    }
    case QChar::Mark_NonSpacing:
    case QChar::Mark_SpacingCombining:
    case QChar::Mark_Enclosing:
        return {WordChar, false};
    case QChar::Number_DecimalDigit:
    case QChar::Number_Letter:
    case QChar::Number_Other:
        return {WordChar, true};
    case QChar::Symbol_Other:
        return {Single, false};
    default:
        return {Separator, false};
    }
}

// Table entry for one BMP code unit:
//   bits  0..47  up to three UTF-16 units it normalises to
//   bits 48..49  how many
//   bit  50      "complex": its normalisation depends on its neighbours; use the slow path
//   bits 52..54  its CharClass as a normalised character
//   bit  55      it is a digit
constexpr int kLenShift = 48;
constexpr uint64_t kComplex = uint64_t(1) << 50;
constexpr int kClassShift = 52;
constexpr uint64_t kDigit = uint64_t(1) << 55;

uint64_t g_entries[0x10000];
std::atomic<bool> g_blockReady[0x100];
QBasicMutex g_tableMutex;

uint64_t classBits(char32_t c)
{
    const ClassInfo info = classify(c);
    return (uint64_t(info.cls) << kClassShift) | (info.digit ? kDigit : 0);
}

uint64_t makeEntry(char16_t c, QStringView mapped)
{
    uint64_t e = classBits(c);
    if (mapped.size() > 3)
        return e | kComplex;
    for (qsizetype i = 0; i < mapped.size(); ++i) {
        const char16_t u = mapped[i].unicode();
        if (QChar::isSurrogate(u) || isJamo(u))
            return e | kComplex;
        const QChar::Category cat = QChar::category(char32_t(u));
        if (cat == QChar::Mark_NonSpacing || cat == QChar::Mark_SpacingCombining || cat == QChar::Mark_Enclosing)
            return e | kComplex;
        e |= uint64_t(u) << (16 * i);
    }
    return e | (uint64_t(mapped.size()) << kLenShift);
}

void buildBlock(unsigned block)
{
    const char16_t base = char16_t(block << 8);
    if (block >= 0xD8 && block <= 0xDF) { // surrogates: only meaningful in pairs
        for (unsigned i = 0; i < 0x100; ++i)
            g_entries[base + i] = classBits(base + i) | kComplex;
        return;
    }
    // Normalise the whole block at once, one code point per line: '\n' neither composes nor
    // reorders with anything, so each line normalises exactly as its character would alone.
    QString batch;
    batch.reserve(0x200);
    for (unsigned i = 0; i < 0x100; ++i) {
        const char16_t c = char16_t(base + i);
        if (c == u'\n')
            continue;
        batch += QChar(c);
        batch += QLatin1Char('\n');
    }
    const QString normalized = normalizeSlow(batch);
    const QList<QStringView> lines = QStringView(normalized).split(u'\n');
    qsizetype line = 0;
    const bool aligned = lines.size() == (block == 0 ? 0x100 : 0x101);
    for (unsigned i = 0; i < 0x100; ++i) {
        const char16_t c = char16_t(base + i);
        if (c == u'\n') {
            g_entries[c] = classBits(c) | (uint64_t(c)) | (uint64_t(1) << kLenShift);
            continue;
        }
        if (aligned) {
            g_entries[c] = makeEntry(c, lines[line++]);
        } else { // cannot happen with a conforming normaliser; stay correct anyway
            const QString one = normalizeSlow(QString(QChar(c)));
            g_entries[c] = makeEntry(c, one);
        }
    }
}

inline void ensureBlock(unsigned block)
{
    if (g_blockReady[block].load(std::memory_order_acquire))
        return;
    QMutexLocker lock(&g_tableMutex);
    if (!g_blockReady[block].load(std::memory_order_relaxed)) {
        buildBlock(block);
        g_blockReady[block].store(true, std::memory_order_release);
    }
}

constexpr char16_t asciiLower(char16_t c)
{
    return (c >= u'A' && c <= u'Z') ? char16_t(c + 32) : c;
}

// ---------------------------------------------------------------------------------------------
// Per-call working state (reused across the texts of one embed() call).

enum Family : uint8_t {
    FamWord = 0,
    FamPair = 1,
    FamGram3 = 2,
    FamGram4 = 3
};

// Weights of the feature families. Part of hash-v1.
constexpr double kFamilyWeight[4] = {
    1.0, // a word
    0.7, // an adjacent word pair
    0.8, // a word's character 3-grams, together
    0.8, // a word's character 4-grams, together
};
// A hyphenated compound's joined form ("email" from "e-mail"), relative to a word.
constexpr float kCompoundScale = 0.7f;

struct CodePoint
{
    char32_t cp;
    uint8_t cls;
    bool digit;
};

struct Token
{
    size_t begin;
    size_t end;
    bool single;
    bool breakBefore;
    bool compoundPart;
};

struct Span
{
    size_t begin;
    size_t end;
};

struct Slot
{
    uint64_t key; // 0 = empty; top two bits hold the family
    float sum;    // sum of occurrence weights
    uint32_t count;
};

struct StemmerDeleter
{
    void operator()(sb_stemmer *s) const { sb_stemmer_delete(s); }
};

struct Workspace
{
    std::unique_ptr<sb_stemmer, StemmerDeleter> stemmer; // hash-v2; made on first use, never shared
    std::string canon;                                   // hash-v2: a word's canonical form
    std::u16string text;
    std::vector<CodePoint> cps;
    std::string utf8;
    std::vector<Token> tokens;
    std::vector<Span> compounds;
    std::string gram;
    std::vector<uint32_t> gramOffsets;
    std::vector<Slot> slots = std::vector<Slot>(1024);
    std::vector<uint32_t> used;
    std::vector<double> acc;

    void add(Family fam, uint64_t hash, float weight)
    {
        uint64_t key = (hash & 0x3FFFFFFFFFFFFFFFULL) | (uint64_t(fam) << 62);
        if (key == 0)
            key = 1;
        if ((used.size() + 1) * 2 > slots.size())
            grow();
        const size_t mask = slots.size() - 1;
        size_t i = size_t(key ^ (key >> 29)) & mask;
        while (true) {
            Slot &s = slots[i];
            if (s.key == key) {
                s.sum += weight;
                ++s.count;
                return;
            }
            if (s.key == 0) {
                s.key = key;
                s.sum = weight;
                s.count = 1;
                used.push_back(uint32_t(i));
                return;
            }
            i = (i + 1) & mask;
        }
    }

    void grow()
    {
        std::vector<Slot> old(slots.size() * 2);
        old.swap(slots);
        const size_t mask = slots.size() - 1;
        std::vector<uint32_t> oldUsed;
        oldUsed.swap(used);
        used.reserve(oldUsed.size() * 2);
        for (uint32_t idx : oldUsed) { // keep first-insertion order: it fixes the summation order
            const Slot &s = old[idx];
            size_t i = size_t(s.key ^ (s.key >> 29)) & mask;
            while (slots[i].key != 0)
                i = (i + 1) & mask;
            slots[i] = s;
            used.push_back(uint32_t(i));
        }
    }

    void clearSlots()
    {
        for (uint32_t idx : used)
            slots[idx].key = 0;
        used.clear();
    }
};

// Step 1, fast path: table lookups. Returns false when the text needs the whole-text pipeline.
bool normalizeFast(const QString &in, std::u16string &out)
{
    out.clear();
    const char16_t *s = reinterpret_cast<const char16_t *>(in.utf16());
    const qsizetype n = in.size();
    unsigned readyBlock = 0;
    ensureBlock(0);
    for (qsizetype i = 0; i < n; ++i) {
        const char16_t u = s[i];
        if (u < 0x80) {
            out.push_back(asciiLower(u));
            continue;
        }
        const unsigned block = u >> 8;
        if (block != readyBlock) {
            ensureBlock(block);
            readyBlock = block;
        }
        const uint64_t e = g_entries[u];
        if (e & kComplex)
            return false;
        const unsigned len = unsigned(e >> kLenShift) & 3;
        for (unsigned k = 0; k < len; ++k)
            out.push_back(char16_t(e >> (16 * k)));
    }
    return true;
}

void appendUtf8(std::string &out, char32_t c)
{
    if (c < 0x80) {
        out.push_back(char(c));
    } else if (c < 0x800) {
        out.push_back(char(0xC0 | (c >> 6)));
        out.push_back(char(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(char(0xE0 | (c >> 12)));
        out.push_back(char(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(char(0x80 | (c & 0x3F)));
    } else {
        out.push_back(char(0xF0 | (c >> 18)));
        out.push_back(char(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(char(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(char(0x80 | (c & 0x3F)));
    }
}

// Decodes the normalised UTF-16 text into classified code points.
void decode(const std::u16string &text, std::vector<CodePoint> &cps)
{
    cps.clear();
    cps.reserve(text.size());
    const size_t n = text.size();
    unsigned readyBlock = 0; // block 0 was ensured by normalizeFast or is ensured below
    ensureBlock(0);
    for (size_t i = 0; i < n; ++i) {
        char32_t c = text[i];
        if (QChar::isHighSurrogate(c) && i + 1 < n && QChar::isLowSurrogate(text[i + 1])) {
            c = QChar::surrogateToUcs4(char16_t(c), text[i + 1]);
            ++i;
            const ClassInfo info = classify(c);
            cps.push_back({c, uint8_t(info.cls), info.digit});
            continue;
        }
        if (QChar::isSurrogate(c)) { // lone surrogate: a separator
            cps.push_back({c, uint8_t(Separator), false});
            continue;
        }
        const unsigned block = unsigned(c) >> 8;
        if (block != readyBlock) {
            ensureBlock(block);
            readyBlock = block;
        }
        const uint64_t e = g_entries[c];
        cps.push_back({c, uint8_t((e >> kClassShift) & 7), (e & kDigit) != 0});
    }
}

// Step 2: words.
void tokenize(Workspace &ws)
{
    ws.utf8.clear();
    ws.tokens.clear();
    ws.compounds.clear();
    const std::vector<CodePoint> &cps = ws.cps;
    const size_t n = cps.size();

    bool inWord = false;
    bool pendingBreak = true;
    bool lastDigit = false;
    size_t wordBegin = 0, partBegin = 0, firstPartToken = 0;
    int parts = 0;

    auto endPart = [&] {
        ws.tokens.push_back({partBegin, ws.utf8.size(), false, pendingBreak, false});
        pendingBreak = false;
        ++parts;
    };
    auto endWord = [&] {
        if (!inWord)
            return;
        endPart();
        if (parts > 1) {
            for (size_t t = firstPartToken; t < ws.tokens.size(); ++t)
                ws.tokens[t].compoundPart = true;
            ws.compounds.push_back({wordBegin, ws.utf8.size()});
        }
        inWord = false;
    };
    auto nextIsWord = [&](size_t i, bool needDigit) {
        return i + 1 < n && cps[i + 1].cls == WordChar && (!needDigit || cps[i + 1].digit);
    };

    for (size_t i = 0; i < n; ++i) {
        const CodePoint &c = cps[i];
        switch (c.cls) {
        case WordChar:
            if (!inWord) {
                inWord = true;
                wordBegin = partBegin = ws.utf8.size();
                parts = 0;
                firstPartToken = ws.tokens.size();
            }
            appendUtf8(ws.utf8, c.cp);
            lastDigit = c.digit;
            break;
        case Apostrophe:
            if (!(inWord && nextIsWord(i, false)))
                endWord();
            break;
        case Hyphen:
            if (inWord && nextIsWord(i, false)) {
                endPart();
                partBegin = ws.utf8.size();
            } else {
                endWord();
            }
            break;
        case NumberSep:
            if (inWord && lastDigit && nextIsWord(i, true)) {
                appendUtf8(ws.utf8, c.cp);
                lastDigit = false;
            } else {
                endWord();
                if (c.cp == '.')
                    pendingBreak = true;
            }
            break;
        case Break:
            endWord();
            pendingBreak = true;
            break;
        case Single: {
            endWord();
            const size_t begin = ws.utf8.size();
            appendUtf8(ws.utf8, c.cp);
            ws.tokens.push_back({begin, ws.utf8.size(), true, pendingBreak, false});
            pendingBreak = false;
            break;
        }
        default:
            endWord();
            break;
        }
    }
    endWord();
}

// Character 3- and 4-grams of "<word>" (the UTF-8 bytes data[0..len)); the word's n-grams of one
// size share `scale` units of weight.
void addGramsOf(Workspace &ws, const char *data, size_t len, uint64_t seed3, uint64_t seed4, float scale)
{
    std::string &g = ws.gram;
    std::vector<uint32_t> &off = ws.gramOffsets;
    g.clear();
    off.clear();
    g.push_back('<');
    off.push_back(0);
    for (size_t i = 0; i < len; ++i) {
        const char b = data[i];
        if ((static_cast<unsigned char>(b) & 0xC0) != 0x80)
            off.push_back(uint32_t(g.size()));
        g.push_back(b);
    }
    off.push_back(uint32_t(g.size()));
    g.push_back('>');
    off.push_back(uint32_t(g.size())); // end sentinel
    const size_t symbols = off.size() - 1;
    for (size_t k = 3; k <= 4; ++k) {
        if (symbols < k)
            continue;
        const size_t count = symbols - k + 1;
        const float w = float(1.0 / std::sqrt(double(count))) * scale;
        const uint64_t seed = k == 3 ? seed3 : seed4;
        const Family fam = k == 3 ? FamGram3 : FamGram4;
        for (size_t i = 0; i < count; ++i)
            ws.add(fam, hashBytes(g.data() + off[i], off[i + k] - off[i], seed), w);
    }
}

// hash-v1's n-grams of ws.utf8[begin..end).
void addGrams(Workspace &ws, size_t begin, size_t end)
{
    addGramsOf(ws, ws.utf8.data() + begin, end - begin, kSeedGram3, kSeedGram4, 1.0f);
}

// Steps 4-6 (both models): sub-linear term weights, signed buckets in first-occurrence order,
// unit length. Clears the workspace's feature table.
Embedding finishVector(Workspace &ws, int dimension, const double (&familyWeight)[4])
{
    // Steps 4-5: sub-linear term weights, signed buckets, in first-occurrence order.
    ws.acc.assign(size_t(dimension), 0.0);
    for (uint32_t idx : ws.used) {
        const Slot &s = ws.slots[idx];
        double value = familyWeight[s.key >> 62] * double(s.sum);
        if (s.count > 1) {
            const double tf = double(s.count);
            value = value / tf * (1.0 + std::log(tf));
        }
        const size_t bucket = size_t(((s.key & 0xFFFFFFFFULL) * uint64_t(dimension)) >> 32);
        ws.acc[bucket] += ((s.key >> 32) & 1) ? -value : value;
    }
    ws.clearSlots();

    // Step 6: unit length.
    double partial[4] = {0.0, 0.0, 0.0, 0.0};
    for (size_t i = 0; i < ws.acc.size(); ++i)
        partial[i & 3] += ws.acc[i] * ws.acc[i];
    const double norm = std::sqrt((partial[0] + partial[1]) + (partial[2] + partial[3]));
    if (!(norm > 0.0) || !std::isfinite(norm))
        return {}; // every feature cancelled out: nothing usable to compare
    Embedding out(static_cast<size_t>(dimension));
    const double scale = 1.0 / norm;
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = float(ws.acc[i] * scale);
    return out;
}


// Steps 1 and 2, shared by both models: normalise the text and split it into tokens (in ws).
// False when there is no token.
bool tokenizeText(Workspace &ws, const QString &text)
{
    if (!normalizeFast(text, ws.text)) {
        const QString n = normalizeSlow(text);
        ws.text.assign(reinterpret_cast<const char16_t *>(n.utf16()), size_t(n.size()));
    }
    decode(ws.text, ws.cps);
    tokenize(ws);
    return !ws.tokens.empty();
}

Embedding embedText(Workspace &ws, const QString &text, int dimension)
{
    if (!tokenizeText(ws, text))
        return {};

    // Step 3: features.
    uint64_t previous = 0;
    for (size_t t = 0; t < ws.tokens.size(); ++t) {
        const Token &tok = ws.tokens[t];
        const uint64_t h = hashBytes(ws.utf8.data() + tok.begin, tok.end - tok.begin, kSeedWord);
        ws.add(FamWord, h, 1.0f);
        if (t > 0 && !tok.breakBefore)
            ws.add(FamPair, hashPair(previous, h), 1.0f);
        previous = h;
        if (!tok.single && !tok.compoundPart)
            addGrams(ws, tok.begin, tok.end);
    }
    for (const Span &c : ws.compounds) {
        ws.add(FamWord, hashBytes(ws.utf8.data() + c.begin, c.end - c.begin, kSeedWord), kCompoundScale);
        addGrams(ws, c.begin, c.end);
    }

    return finishVector(ws, dimension, kFamilyWeight);
}


// ---------------------------------------------------------------------------------------------
// hash-v2. Same normalisation and tokenisation as hash-v1; then stop words, English stemming,
// number forms, and its own seeds and weights. Everything here is part of the hash-v2 format.

constexpr uint64_t kSeedWord2 = 0x7632776F72642F32ULL;
constexpr uint64_t kSeedPair2 = 0x7632706169722F32ULL;
constexpr uint64_t kSeedGram3v2 = 0x763267726D332F32ULL;
constexpr uint64_t kSeedGram4v2 = 0x763267726D342F32ULL;
constexpr uint64_t kSeedTime2 = 0x763274696D652F32ULL;

inline uint64_t hashPair2(uint64_t first, uint64_t second)
{
    return finish64((first ^ kSeedPair2) * kMulD + rotl64(second, 23));
}

// Weights of hash-v2's feature families: a word (its stem), a pair of adjacent content words, a
// word's character 3-grams together, its 4-grams together.
constexpr double kFamilyWeight2[4] = {1.0, 0.5, 0.7, 0.7};
// Words shorter than this (in UTF-8 bytes) get no character n-grams: stemming already joins their
// forms, and their few n-grams mostly collide with unrelated words.
constexpr size_t kGramMinBytes2 = 5;
// Weight of the feature shared by temporal words and "when".
constexpr float kTimeWeight2 = 0.5f;

enum WordFlag : uint8_t {
    Stop = 1,     // a function word: no word, pair or n-gram features
    Temporal = 2, // names a time: also the shared temporal feature
};

struct WordInfo
{
    uint8_t flags = 0;
    const char *number = nullptr; // the digits a number word stands for
    const char *base = nullptr;   // the word an irregular form stands for
};

// Words that name a time, sharing one feature with each other and with "when".
constexpr const char *kTemporalWords[] = {
    "when",
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "ago",
    "weekend",
    "weekends",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "recently",
    "lately",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
};

// Irregular forms the stemmer cannot join to their base word; the base is then stemmed like any
// word. Forms that are more often another word ("left" stays, but not "leaves", "bit", "born",
// "rose", "ground") are not here.
constexpr const char *kIrregular[][2] = {
    // nouns
    {"children", "child"},
    {"kids", "child"},
    {"kid", "child"},
    {"people", "person"},
    {"men", "man"},
    {"women", "woman"},
    {"feet", "foot"},
    {"teeth", "tooth"},
    {"mice", "mouse"},
    {"geese", "goose"},
    {"wives", "wife"},
    {"knives", "knife"},
    {"wolves", "wolf"},
    {"halves", "half"},
    {"shelves", "shelf"},
    // verbs: past tense and participles
    {"went", "go"},
    {"gone", "go"},
    {"got", "get"},
    {"gotten", "get"},
    {"made", "make"},
    {"saw", "see"},
    {"seen", "see"},
    {"took", "take"},
    {"taken", "take"},
    {"gave", "give"},
    {"given", "give"},
    {"came", "come"},
    {"ran", "run"},
    {"felt", "feel"},
    {"thought", "think"},
    {"bought", "buy"},
    {"brought", "bring"},
    {"taught", "teach"},
    {"caught", "catch"},
    {"fought", "fight"},
    {"found", "find"},
    {"told", "tell"},
    {"said", "say"},
    {"met", "meet"},
    {"left", "leave"},
    {"kept", "keep"},
    {"began", "begin"},
    {"begun", "begin"},
    {"wrote", "write"},
    {"written", "write"},
    {"drove", "drive"},
    {"driven", "drive"},
    {"ate", "eat"},
    {"eaten", "eat"},
    {"drank", "drink"},
    {"drunk", "drink"},
    {"sang", "sing"},
    {"sung", "sing"},
    {"swam", "swim"},
    {"swum", "swim"},
    {"won", "win"},
    {"lost", "lose"},
    {"spent", "spend"},
    {"sent", "send"},
    {"built", "build"},
    {"heard", "hear"},
    {"knew", "know"},
    {"known", "know"},
    {"grew", "grow"},
    {"grown", "grow"},
    {"threw", "throw"},
    {"thrown", "throw"},
    {"flew", "fly"},
    {"flown", "fly"},
    {"drew", "draw"},
    {"drawn", "draw"},
    {"fell", "fall"},
    {"fallen", "fall"},
    {"held", "hold"},
    {"sold", "sell"},
    {"paid", "pay"},
    {"slept", "sleep"},
    {"stood", "stand"},
    {"understood", "understand"},
    {"sat", "sit"},
    {"rode", "ride"},
    {"ridden", "ride"},
    {"broke", "break"},
    {"broken", "break"},
    {"chose", "choose"},
    {"chosen", "choose"},
    {"woke", "wake"},
    {"woken", "wake"},
    {"wore", "wear"},
    {"worn", "wear"},
    {"forgot", "forget"},
    {"forgotten", "forget"},
    {"became", "become"},
    {"meant", "mean"},
    {"led", "lead"},
    {"fed", "feed"},
    {"hid", "hide"},
    {"hidden", "hide"},
    {"shook", "shake"},
    {"shaken", "shake"},
    {"spoke", "speak"},
    {"spoken", "speak"},
    {"stole", "steal"},
    {"stolen", "steal"},
    {"struck", "strike"},
    {"swore", "swear"},
    {"tore", "tear"},
    {"torn", "tear"},
    {"froze", "freeze"},
    {"frozen", "freeze"},
    {"dug", "dig"},
    {"hung", "hang"},
    {"lent", "lend"},
    {"lit", "light"},
    {"rang", "ring"},
    {"rung", "ring"},
    {"risen", "rise"},
    {"sank", "sink"},
    {"shot", "shoot"},
    {"slid", "slide"},
    {"spun", "spin"},
    {"stuck", "stick"},
    {"stung", "sting"},
    {"swung", "swing"},
    {"wept", "weep"},
    {"dealt", "deal"},
    {"dreamt", "dream"},
    {"learnt", "learn"},
    {"burnt", "burn"},
    {"smelt", "smell"},
    {"spelt", "spell"},
    {"bent", "bend"},
    {"bitten", "bite"},
    {"blew", "blow"},
    {"blown", "blow"},
    {"clung", "cling"},
    {"crept", "creep"},
    {"fled", "flee"},
    {"flung", "fling"},
    {"forgave", "forgive"},
    {"forgiven", "forgive"},
    {"knelt", "kneel"},
    {"leapt", "leap"},
    {"overcame", "overcome"},
};

// Number words, hashed as their digits.
struct Alias
{
    const char *word;
    const char *as;
};
constexpr Alias kNumberWords[] = {
    {"zero", "0"},
    {"two", "2"},
    {"three", "3"},
    {"four", "4"},
    {"five", "5"},
    {"six", "6"},
    {"seven", "7"},
    {"eight", "8"},
    {"nine", "9"},
    {"ten", "10"},
    {"eleven", "11"},
    {"twelve", "12"},
    {"twenty", "20"},
    {"thirty", "30"},
    {"forty", "40"},
    {"fifty", "50"},
    {"hundred", "100"},
    {"thousand", "1000"},
};

struct WordTable
{
    std::unordered_map<std::string_view, WordInfo> words;

    WordTable()
    {
        for (const char *w : StopWords::english())
            words[w].flags |= Stop;
        for (const char *w : kTemporalWords)
            words[w].flags |= Temporal;
        for (const Alias &a : kNumberWords)
            words[a.word].number = a.as;
        for (const auto &form : kIrregular)
            words[form[0]].base = form[1];
    }

    const WordInfo *find(std::string_view w) const
    {
        const auto it = words.find(w);
        return it == words.end() ? nullptr : &it->second;
    }
};

const WordTable &wordTable()
{
    static const WordTable table; // built once; read-only afterwards
    return table;
}

bool isAsciiLetters(std::string_view w)
{
    if (w.empty())
        return false;
    for (const char c : w)
        if (c < 'a' || c > 'z')
            return false;
    return true;
}

// "1,000" or "12,345,678.9": every ',' followed by exactly three digits (not "3,5", a decimal comma).
bool isThousandsGrouped(std::string_view n)
{
    size_t i = n.find(',');
    if (i == 0)
        return false;
    while (i != std::string_view::npos) {
        size_t digits = 0;
        size_t j = i + 1;
        while (j < n.size() && n[j] >= '0' && n[j] <= '9') {
            ++digits;
            ++j;
        }
        if (digits != 3 || (j < n.size() && n[j] != ',' && n[j] != '.'))
            return false;
        if (j < n.size() && n[j] == '.' && n.find(',', j) != std::string_view::npos)
            return false;
        i = (j < n.size() && n[j] == ',') ? j : std::string_view::npos;
    }
    return true;
}

// Digits, with '.' or ',' between them.
bool isNumber(std::string_view w)
{
    if (w.empty())
        return false;
    for (const char c : w)
        if (!((c >= '0' && c <= '9') || c == '.' || c == ','))
            return false;
    return true;
}

// Longest word handed to the stemmer; longer "words" are not English words (hashes, URLs, runs of
// one letter) and are hashed as they are.
constexpr size_t kMaxStemmedBytes = 48;

// The form a word is hashed as: numbers without thousands separators or ordinal suffixes
// ("1,000" -> "1000", "7th" -> "7"), number words as digits, lower-case ASCII words stemmed
// (Snowball English), anything else as it is.
std::string_view canonicalForm(Workspace &ws, std::string_view w, const WordInfo *info)
{
    if (info && info->number)
        return info->number;
    if (info && info->base) {
        w = info->base;
    } else if (!info && w.size() > 3 && w.back() == 's') {
        // A possessive without its apostrophe ("children's" -> "childrens"): the base of the form
        // before it, if that is irregular.
        const WordInfo *before = wordTable().find(w.substr(0, w.size() - 1));
        if (before && before->base)
            w = before->base;
    }
    if (isAsciiLetters(w)) {
        if (w.size() > kMaxStemmedBytes)
            return w;
        if (!ws.stemmer) {
            ws.stemmer.reset(sb_stemmer_new("english", "UTF_8"));
            if (!ws.stemmer)
                throw Error(ErrorKind::Embedder, QStringLiteral("the builtin embedder could not create its English stemmer."));
        }
        const sb_symbol *stem =
            sb_stemmer_stem(ws.stemmer.get(), reinterpret_cast<const sb_symbol *>(w.data()), int(w.size()));
        if (!stem)
            throw Error(ErrorKind::Embedder, QStringLiteral("the builtin embedder's English stemmer ran out of memory."));
        ws.canon.assign(reinterpret_cast<const char *>(stem), size_t(sb_stemmer_length(ws.stemmer.get())));
        return ws.canon;
    }
    if (w.front() >= '0' && w.front() <= '9') {
        // Digits with ',' / '.' separators, or digits and an ordinal suffix.
        size_t digitsEnd = 0;
        while (digitsEnd < w.size() && ((w[digitsEnd] >= '0' && w[digitsEnd] <= '9') || w[digitsEnd] == ',' || w[digitsEnd] == '.'))
            ++digitsEnd;
        const std::string_view suffix = w.substr(digitsEnd);
        const bool ordinal = suffix == "st" || suffix == "nd" || suffix == "rd" || suffix == "th";
        if (digitsEnd < w.size() && !ordinal)
            return w; // "mp3"-like or "10am": keep as written
        const std::string_view number = w.substr(0, digitsEnd);
        if (number.find(',') == std::string_view::npos || !isThousandsGrouped(number))
            return number;
        ws.canon.clear();
        for (const char c : number)
            if (c != ',')
                ws.canon.push_back(c);
        return ws.canon;
    }
    return w;
}

Embedding embedTextV2(Workspace &ws, const QString &text, int dimension)
{
    if (!tokenizeText(ws, text))
        return {};

    const WordTable &table = wordTable();
    auto infoOf = [&](size_t begin, size_t end) -> const WordInfo * {
        return table.find(std::string_view(ws.utf8.data() + begin, end - begin));
    };

    // A text of nothing but stop words ("is it?") keeps them as ordinary words, so that it still
    // gets a vector and matches itself.
    bool anyContent = false;
    for (const Token &tok : ws.tokens) {
        const WordInfo *info = tok.single ? nullptr : infoOf(tok.begin, tok.end);
        if (!info || !(info->flags & Stop)) {
            anyContent = true;
            break;
        }
    }
    if (!anyContent)
        for (const Span &c : ws.compounds) {
            const WordInfo *info = infoOf(c.begin, c.end);
            if (!info || !(info->flags & Stop)) {
                anyContent = true;
                break;
            }
        }

    const uint64_t timeFeature = finish64(kSeedTime2);
    // A content word's features; returns the hash of its canonical form.
    auto addWord = [&](size_t begin, size_t end, const WordInfo *info, float scale) -> uint64_t {
        const std::string_view surface(ws.utf8.data() + begin, end - begin);
        const std::string_view canon = canonicalForm(ws, surface, info);
        const uint64_t h = hashBytes(canon.data(), canon.size(), kSeedWord2);
        ws.add(FamWord, h, scale);
        // N-grams of the word as written, not of its stem: they are there for what stemming does not
        // join (typos, derived forms such as "counselor" / "counseling"). None for numbers: "2023"
        // is not a misspelt "2022".
        if (surface.size() >= kGramMinBytes2 && !isNumber(canon))
            addGramsOf(ws, surface.data(), surface.size(), kSeedGram3v2, kSeedGram4v2, scale);
        if (info && (info->flags & Temporal))
            ws.add(FamWord, timeFeature, scale * kTimeWeight2);
        return h;
    };

    uint64_t previous = 0;
    bool havePrevious = false; // a content word earlier in the sentence to pair with
    for (size_t t = 0; t < ws.tokens.size(); ++t) {
        const Token &tok = ws.tokens[t];
        if (tok.breakBefore)
            havePrevious = false;
        uint64_t h = 0;
        if (tok.single) {
            h = hashBytes(ws.utf8.data() + tok.begin, tok.end - tok.begin, kSeedWord2);
            ws.add(FamWord, h, 1.0f);
        } else {
            const WordInfo *info = infoOf(tok.begin, tok.end);
            if (anyContent && info && (info->flags & Stop)) {
                // No features of its own, and pairs join the content words around it
                // ("support for the group" pairs "support" with "group"). "when" still marks a time.
                if (info->flags & Temporal)
                    ws.add(FamWord, timeFeature, kTimeWeight2);
                continue;
            }
            h = addWord(tok.begin, tok.end, info, 1.0f);
        }
        if (havePrevious)
            ws.add(FamPair, hashPair2(previous, h), 1.0f);
        previous = h;
        havePrevious = true;
    }
    for (const Span &c : ws.compounds) {
        const WordInfo *info = infoOf(c.begin, c.end);
        if (anyContent && info && (info->flags & Stop))
            continue;
        addWord(c.begin, c.end, info, kCompoundScale);
    }
    return finishVector(ws, dimension, kFamilyWeight2);
}

} // namespace

QString HashEmbedder::modelName(Model model)
{
    return model == Model::HashV1 ? QStringLiteral("hash-v1") : QStringLiteral("hash-v2");
}

QStringList HashEmbedder::modelNames()
{
    return {modelName(Model::HashV2), modelName(Model::HashV1)};
}

bool HashEmbedder::modelFromName(const QString &name, Model *model)
{
    for (const Model m : {Model::HashV2, Model::HashV1}) {
        if (name == modelName(m)) {
            if (model)
                *model = m;
            return true;
        }
    }
    return false;
}

HashEmbedder::HashEmbedder(int dimension, Model model)
    : m_dimension(dimension), m_model(model)
{
    if (dimension < MinDimension || dimension > MaxDimension)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the builtin embedder's dimension must be an integer from %1 to %2, not %3.")
                        .arg(MinDimension)
                        .arg(MaxDimension)
                        .arg(dimension));
}

HashEmbedder::Model HashEmbedder::model() const
{
    return m_model;
}

QString HashEmbedder::id() const
{
    return QStringLiteral("builtin/") + modelName(m_model);
}

int HashEmbedder::dimension() const
{
    return m_dimension;
}

std::vector<Embedding> HashEmbedder::embed(const QStringList &texts)
{
    std::vector<Embedding> out(size_t(texts.size()));
    const auto range = [&](qsizetype from, qsizetype to) {
        Workspace ws;
        for (qsizetype i = from; i < to; ++i)
            out[size_t(i)] = m_model == Model::HashV1 ? embedText(ws, texts[i], m_dimension)
                                                      : embedTextV2(ws, texts[i], m_dimension);
    };
    // A large batch (a bulk save) is split over the machine's cores; every text is embedded alone,
    // so the vectors are the same either way.
    const qsizetype n = texts.size();
    static const qsizetype cores = std::clamp<qsizetype>(qsizetype(std::thread::hardware_concurrency()), 1, 4);
    const qsizetype parts = n >= 256 ? cores : 1;
    std::vector<std::exception_ptr> failures{size_t(parts)};
    std::vector<std::thread> helpers;
    for (qsizetype p = 1; p < parts; ++p) {
        helpers.emplace_back([&, p] {
            try {
                range(n * p / parts, n * (p + 1) / parts);
            } catch (...) {
                failures[size_t(p)] = std::current_exception();
            }
        });
    }
    try {
        range(0, n / parts);
    } catch (...) {
        failures[0] = std::current_exception();
    }
    for (std::thread &t : helpers)
        t.join();
    for (const std::exception_ptr &f : failures) {
        if (f)
            std::rethrow_exception(f);
    }
    return out;
}

Embedding HashEmbedder::embedOne(const QString &text) const
{
    Workspace ws;
    return m_model == Model::HashV1 ? embedText(ws, text, m_dimension) : embedTextV2(ws, text, m_dimension);
}

QString HashEmbedder::normalize(const QString &text)
{
    return normalizeSlow(text);
}

} // namespace mneme
