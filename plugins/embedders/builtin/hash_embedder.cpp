#include "hash_embedder.h"

#include "core/error.h"

#include <QChar>
#include <QMutex>
#include <QMutexLocker>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

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
    return (c >= 0x0300 && c <= 0x036F)     // combining diacritical marks
        || (c >= 0x1AB0 && c <= 0x1AFF)     // ... extended
        || (c >= 0x1DC0 && c <= 0x1DFF)     // ... supplement
        || (c >= 0x20D0 && c <= 0x20FF)     // ... for symbols
        || (c >= 0xFE20 && c <= 0xFE2F)     // combining half marks
        || (c >= 0x0591 && c <= 0x05BD) || c == 0x05BF || c == 0x05C1 || c == 0x05C2
        || c == 0x05C4 || c == 0x05C5 || c == 0x05C7                    // Hebrew points
        || (c >= 0x0610 && c <= 0x061A) || (c >= 0x064B && c <= 0x065F) || c == 0x0670
        || (c >= 0x06D6 && c <= 0x06DC) || (c >= 0x06DF && c <= 0x06E4) || c == 0x06E7
        || c == 0x06E8 || (c >= 0x06EA && c <= 0x06ED);                // Arabic harakat
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
    case 0x2018: case 0x2019: case 0x201B: case 0x02BC:
        out += QLatin1Char('\'');
        return;
    case 0x2010:
        out += QLatin1Char('-');
        return;
    case 0x200B:
        out += QLatin1Char(' ');
        return;
    case 0x00F8: out += QLatin1Char('o'); return;               // ø
    case 0x0142: out += QLatin1Char('l'); return;               // ł
    case 0x0111: out += QLatin1Char('d'); return;               // đ
    case 0x0127: out += QLatin1Char('h'); return;               // ħ
    case 0x0167: out += QLatin1Char('t'); return;               // ŧ
    case 0x0131: out += QLatin1Char('i'); return;               // dotless i
    case 0x00DF: out += QLatin1String("ss"); return;            // ß (Qt folds simply)
    case 0x00E6: out += QLatin1String("ae"); return;            // æ
    case 0x0153: out += QLatin1String("oe"); return;            // œ
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
    case '!': case '?': case ';': case ':': case '\n': case '\r': case '\v': case '\f':
    case 0x0085: case 0x2028: case 0x2029: case 0x3002: case 0x0964: case 0x0965:
    case 0x061F: case 0x06D4: case 0x203C: case 0x2047: case 0x2048: case 0x2049:
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

enum Family : uint8_t { FamWord = 0, FamPair = 1, FamGram3 = 2, FamGram4 = 3 };

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

struct Workspace
{
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

// Character 3- and 4-grams of "<word>"; the word's n-grams of one size share one unit of weight.
void addGrams(Workspace &ws, size_t begin, size_t end)
{
    std::string &g = ws.gram;
    std::vector<uint32_t> &off = ws.gramOffsets;
    g.clear();
    off.clear();
    g.push_back('<');
    off.push_back(0);
    for (size_t i = begin; i < end; ++i) {
        const char b = ws.utf8[i];
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
        const float w = float(1.0 / std::sqrt(double(count)));
        const uint64_t seed = k == 3 ? kSeedGram3 : kSeedGram4;
        const Family fam = k == 3 ? FamGram3 : FamGram4;
        for (size_t i = 0; i < count; ++i)
            ws.add(fam, hashBytes(g.data() + off[i], off[i + k] - off[i], seed), w);
    }
}

Embedding embedText(Workspace &ws, const QString &text, int dimension)
{
    if (!normalizeFast(text, ws.text)) {
        const QString n = normalizeSlow(text);
        ws.text.assign(reinterpret_cast<const char16_t *>(n.utf16()), size_t(n.size()));
    }
    decode(ws.text, ws.cps);
    tokenize(ws);
    if (ws.tokens.empty())
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

    // Steps 4-5: sub-linear term weights, signed buckets, in first-occurrence order.
    ws.acc.assign(size_t(dimension), 0.0);
    for (uint32_t idx : ws.used) {
        const Slot &s = ws.slots[idx];
        double value = kFamilyWeight[s.key >> 62] * double(s.sum);
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

} // namespace

QString HashEmbedder::modelName()
{
    return QStringLiteral("hash-v1");
}

HashEmbedder::HashEmbedder(int dimension)
    : m_dimension(dimension)
{
    if (dimension < MinDimension || dimension > MaxDimension)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the builtin embedder's dimension must be an integer from %1 to %2, not %3.")
                        .arg(MinDimension)
                        .arg(MaxDimension)
                        .arg(dimension));
}

QString HashEmbedder::id() const
{
    return QStringLiteral("builtin/") + modelName();
}

int HashEmbedder::dimension() const
{
    return m_dimension;
}

std::vector<Embedding> HashEmbedder::embed(const QStringList &texts)
{
    std::vector<Embedding> out;
    out.reserve(size_t(texts.size()));
    Workspace ws;
    for (const QString &t : texts)
        out.push_back(embedText(ws, t, m_dimension));
    return out;
}

Embedding HashEmbedder::embedOne(const QString &text) const
{
    Workspace ws;
    return embedText(ws, text, m_dimension);
}

QString HashEmbedder::normalize(const QString &text)
{
    return normalizeSlow(text);
}

} // namespace mneme
