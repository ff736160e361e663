#include <mneme/memory/token_counter.h>

#include <mneme/memory/session_message.h>

#include <QChar>
#include <algorithm>
#include <cmath>

namespace mneme {

namespace {

// Costs of the pieces, averaged over what OpenAI's tokenizers make of them (docs/chat-memory.md).
constexpr int kShortWord = 7;           // letters a word may have and still be one token
constexpr double kPerLongLetter = 0.07; // each letter beyond that
constexpr double kPerMoreMark = 0.5;    // each punctuation mark of a run beyond the first
constexpr double kOtherScriptLetter = 0.5;
constexpr double kAstralSymbol = 2.0; // an emoji, or another symbol outside the BMP

bool isNewline(char32_t c) { return c == U'\n' || c == U'\r'; }
bool isLetter(char32_t c) { return QChar::isLetter(c); }
bool isNumber(char32_t c) { return QChar::isNumber(c); }
bool isSpace(char32_t c) { return QChar::isSpace(c); }
bool isMark(char32_t c) { return !isLetter(c) && !isNumber(c) && !isSpace(c); } // [^\s\p{L}\p{N}]

bool isUnspacedScript(char32_t c)
{
    switch (QChar::script(c)) {
    case QChar::Script_Han:
    case QChar::Script_Hiragana:
    case QChar::Script_Katakana:
    case QChar::Script_Hangul:
    case QChar::Script_Thai:
        return true;
    default:
        return false;
    }
}

// A run of letters: a word of Latin (or common) letters costs by its length, letters of scripts
// written without spaces one each, other letters half each.
double letterRunCost(const std::u32string &s, size_t from, size_t to)
{
    int latin = 0;
    double other = 0;
    for (size_t i = from; i < to; ++i) {
        const char32_t c = s[i];
        const QChar::Script script = QChar::script(c);
        if (script == QChar::Script_Latin || script == QChar::Script_Common || script == QChar::Script_Inherited)
            ++latin;
        else if (isUnspacedScript(c))
            other += 1.0;
        else
            other += kOtherScriptLetter;
    }
    const double word = latin > 0 ? 1.0 + std::max(0, latin - kShortWord) * kPerLongLetter : 0.0;
    return std::max(1.0, word + other);
}

// A run of punctuation and symbols: one token, half a token per further mark, two per astral symbol.
double markRunCost(const std::u32string &s, size_t from, size_t to)
{
    double cost = 0;
    int marks = 0;
    for (size_t i = from; i < to; ++i) {
        if (s[i] > 0xFFFF)
            cost += kAstralSymbol;
        else
            ++marks;
    }
    if (marks > 0)
        cost += 1.0 + (marks - 1) * kPerMoreMark;
    return cost;
}

// "'s", "'t", "'re", "'ve", "'m", "'ll", "'d" (any case) at `i`: its length, else 0.
size_t contractionAt(const std::u32string &s, size_t i)
{
    if (s[i] != U'\'' || i + 1 >= s.size())
        return 0;
    const auto lower = [&](size_t k) { return k < s.size() ? char32_t(QChar::toLower(s[k])) : U'\0'; };
    const char32_t a = lower(i + 1), b = lower(i + 2);
    if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l'))
        return 3;
    if (a == U's' || a == U't' || a == U'm' || a == U'd')
        return 2;
    return 0;
}

} // namespace

TokenCounter::TokenCounter() : m_count(&TokenCounter::estimate) {}

TokenCounter::TokenCounter(Function count) : m_count(count ? std::move(count) : Function(&TokenCounter::estimate)) {}

int TokenCounter::count(const QString &text) const
{
    if (text.isEmpty())
        return 0;
    return std::max(0, m_count(text));
}

int TokenCounter::count(const ChatMessage &m) const
{
    int n = kMessageOverhead + count(m.content) + count(m.name) + count(m.toolCallId);
    for (const ToolCall &call : m.toolCalls)
        n += kToolCallOverhead + count(call.name) + count(QString::fromStdString(call.arguments.dump()));
    return n;
}

int TokenCounter::count(const SessionMessage &m) const
{
    return m.tokens ? std::max(0, *m.tokens) : count(m.message);
}

int TokenCounter::count(const std::vector<ChatMessage> &messages) const
{
    int n = 0;
    for (const ChatMessage &m : messages)
        n += count(m);
    return n;
}

int TokenCounter::estimate(const QString &text)
{
    const std::u32string s = text.toStdU32String();
    const size_t n = s.size();
    double cost = 0;
    size_t i = 0;
    while (i < n) {
        const char32_t c = s[i];
        if (const size_t len = contractionAt(s, i)) {
            cost += 1;
            i += len;
            continue;
        }
        // Letters, with one leading character that is not a letter, digit or line break (a space,
        // a quote, a bracket).
        const bool prefixed = !isLetter(c) && !isNumber(c) && !isNewline(c) && i + 1 < n && isLetter(s[i + 1]);
        if (isLetter(c) || prefixed) {
            const size_t from = prefixed ? i + 1 : i;
            size_t j = from;
            while (j < n && isLetter(s[j]))
                ++j;
            cost += letterRunCost(s, from, j);
            i = j;
            continue;
        }
        if (isNumber(c)) {
            size_t j = i;
            while (j < n && j - i < 3 && isNumber(s[j]))
                ++j;
            cost += 1;
            i = j;
            continue;
        }
        // Punctuation and symbols, with one leading space, and the line breaks right after them.
        if (isMark(c) || (c == U' ' && i + 1 < n && isMark(s[i + 1]))) {
            const size_t from = c == U' ' ? i + 1 : i;
            size_t j = from;
            while (j < n && isMark(s[j]))
                ++j;
            cost += markRunCost(s, from, j);
            while (j < n && isNewline(s[j]))
                ++j;
            i = j;
            continue;
        }
        // White space: up to the last line break of the run is one piece; a run followed by a word
        // leaves its last space to that word.
        size_t j = i;
        size_t lastBreak = n;
        while (j < n && isSpace(s[j])) {
            if (isNewline(s[j]))
                lastBreak = j;
            ++j;
        }
        cost += 1;
        if (lastBreak != n)
            i = lastBreak + 1;
        else if (j < n && j - i > 1)
            i = j - 1;
        else
            i = j;
    }
    return int(std::ceil(cost - 1e-9));
}

} // namespace mneme
