#include "memory/offline_analyzer_p.h"

#include <QHash>
#include <QMap>
#include <QRegularExpression>
#include <QSet>
#include <algorithm>
#include <array>
#include <bitset>
#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

namespace mneme {

namespace {

constexpr auto kOptions = QRegularExpression::CaseInsensitiveOption | QRegularExpression::UseUnicodePropertiesOption;

QRegularExpression re(const QString &pattern)
{
    return QRegularExpression(pattern, kOptions);
}

const QString kMonths = QStringLiteral("(?:january|february|march|april|may|june|july|august|september|october|november|december"
                                       "|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)");
const QString kWeekdays = QStringLiteral("(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)");
const QString kCount = QStringLiteral("(?:\\d{1,4}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
                                      "|(?:a\\s+)?few|(?:a\\s+)?couple(?:\\s+of)?)");
const QString kUnit = QStringLiteral("(?:minute|hour|day|week|month|year)s?");

// The word cues, each a whole-word, case-insensitive pattern over text with typographic apostrophes
// made plain. Shared by importance() and categories() so both read a text the same way.
enum Cue {
    Decision,
    Commitment,
    Constraint,
    Rule,
    Deadline,
    Preference,
    Plan,
    Problem,
    Lesson,
    Warning,
    Security,
    Person,
    Event,
    Email,
    Phone,
    Handle,
    Url,
    SmallTalk,
    Hedge,
    CueCount
};

// A pattern with what any match of it must contain: a digit (`digit`), or one of `words` (lower-case
// strings, found anywhere in the lower-cased text). A text with neither is not searched: the
// regular expressions are most of an analysis, and most texts hold few of the cues. An empty
// `words` without `digit` means: always searched.
struct Pattern
{
    QRegularExpression re;
    bool digit = false;
    std::vector<std::string_view> words;
};

Pattern pattern(const QString &re, std::initializer_list<const char *> words, bool digit = false)
{
    Pattern p{mneme::re(re), digit, {}};
    for (const char *w : words)
        p.words.emplace_back(w);
    return p;
}

const std::array<Pattern, CueCount> &lexicon()
{
    static const std::array<Pattern, CueCount> l{
        pattern(QStringLiteral("\\b(?:decided|decides|decision|decisions|agreed|settled\\s+on|went\\s+with|going\\s+with"
                               "|chose|chosen|opted|approved|signed\\s+off|final\\s+call|(?:we|i)\\s+will\\s+use|(?:we|i)'ll\\s+use)\\b"),
                {"decide", "decision", "agreed", "settled", "went", "going", "chose", "opted", "approved", "signed", "final", "use"}),
        pattern(QStringLiteral("\\b(?:i|we|you|he|she|they)\\s+(?:will|shall)\\b|\\b(?:i|we|you|he|she|they)'ll\\b"
                               "|\\bpromise[sd]?\\b|\\bcommit(?:ted)?\\s+to\\b|\\baction\\s+items?\\b|\\bto-?dos?\\b"
                               "|\\bfollow[\\s-]?up\\b|\\bassigned\\s+to\\b|\\bresponsible\\s+for\\b|\\bin\\s+charge\\s+of\\b"
                               "|\\bwill\\s+(?:send|deliver|finish|prepare|review|fix|write|call|book|handle|share|update|check|own)\\b"),
                {"will", "shall", "'ll", "promise", "commit", "action", "todo", "to-do", "follow", "assigned", "responsible", "charge"}),
        pattern(QStringLiteral("\\b(?:must|mustn't|never|always|required|requires?|requirements?|mandatory|ha(?:ve|s|d)\\s+to"
                               "|needs?\\s+to|not\\s+allowed|forbidden|prohibited|polic(?:y|ies)|rules?"
                               "|under\\s+no\\s+circumstances)\\b"),
                {"must", "never", "always", "require", "mandatory", "have", "has", "had", "need", "allowed", "forbidden", "prohibited",
                 "polic", "rule", "circumstances"}),
        // Narrower than the constraint: "I always drink tea" is a habit, "Always run the tests" a rule.
        pattern(QStringLiteral("\\b(?:must|mustn't|mandatory|required|requirements?|forbidden|prohibited|not\\s+allowed"
                               "|polic(?:y|ies)|rules?)\\b|(?:^|[.!?;]\\s+)(?:always|never)\\b"),
                {"must", "mandatory", "require", "forbidden", "prohibited", "allowed", "polic", "rule", "always", "never"}),
        pattern(QStringLiteral("\\b(?:deadlines?|overdue|due\\b(?!\\s+to\\b)|no\\s+later\\s+than"
                               "|by\\s+(?:the\\s+)?(?:end\\s+of|eod|eow|tomorrow|tonight|next|noon|midnight|")
                    + kWeekdays + QLatin1Char('|') + kMonths + QStringLiteral("\\b|\\d))"),
                {"deadline", "overdue", "due", "later", "by"}),
        pattern(QStringLiteral("\\b(?:i|we|you|he|she|they)\\s+(?:really\\s+|also\\s+|don't\\s+|do\\s+not\\s+)?"
                               "(?:like|love|hate|enjoy|prefer|dislike|adore)\\b"
                               "|\\b(?:likes|loves|hates|enjoys|prefers|dislikes|prefer|preferred|preferences?"
                               "|favou?rites?|can't\\s+stand)\\b|\\b(?:would|i'd|we'd|he'd|she'd|they'd)\\s+rather\\b"),
                {"like", "love", "hate", "enjoy", "prefer", "adore", "favo", "stand", "rather"}),
        pattern(QStringLiteral("\\b(?:plans?|planned|planning|roadmap|next\\s+steps?|intends?\\s+to|intending\\s+to"
                               "|milestones?|scheduled?)\\b"),
                {"plan", "roadmap", "next", "intend", "milestone", "schedule"}),
        pattern(QStringLiteral("\\b(?:bugs?|errors?|fail|fails|failed|failing|failures?|crash|crashes|crashed|crashing|broken"
                               "|outages?|problems?|exceptions?|regressions?|doesn't\\s+work|does\\s+not\\s+work"
                               "|not\\s+working|timed\\s+out|timeouts?|incidents?|segfaults?|issues?)\\b"),
                {"bug", "error", "fail", "crash", "broken", "outage", "problem", "exception", "regression", "work", "timed", "timeout",
                 "incident", "segfault", "issue"}),
        pattern(QStringLiteral("\\b(?:lessons?|learned|learnt|turns\\s+out|turned\\s+out|note\\s+to\\s+self|in\\s+hindsight"
                               "|next\\s+time|realized|realised|takeaways?|mistakes?|should\\s+have)\\b"),
                {"lesson", "learn", "turn", "note", "hindsight", "next", "realiz", "realis", "takeaway", "mistake", "should"}),
        pattern(QStringLiteral("\\b(?:warning|warn|warned|careful|caution|danger|dangerous|critical|urgent|urgently|important"
                               "|asap|do\\s+not\\s+share|don't\\s+share|never\\s+share|leaked)\\b"),
                {"warn", "careful", "caution", "danger", "critical", "urgent", "important", "asap", "share", "leaked"}),
        pattern(QStringLiteral("\\b(?:security|secure|insecure|passwords?|passphrases?|credentials?|secrets?|api\\s+keys?"
                               "|private\\s+keys?|ssh\\s+keys?|access\\s+tokens?|vulnerabilit(?:y|ies)|cve-\\d+-\\d+"
                               "|breach(?:es)?|phishing|malware|encrypt(?:ed|ion)?|2fa|mfa|two-factor)\\b"),
                {"secur", "password", "passphrase", "credential", "secret", "api", "private", "ssh", "access", "vulnerabilit", "cve-",
                 "breach", "phishing", "malware", "encrypt", "2fa", "mfa", "two-factor"}),
        pattern(QStringLiteral("\\b(?:my|our|his|her|their)\\s+(?:wife|husband|partner|son|daughter|mother|mom|mum|father|dad"
                               "|brother|sister|friend|colleague|boss|manager|kid|child|children|girlfriend|boyfriend"
                               "|fianc\\x{00E9}e?|fiancee?|cousin|aunt|uncle|grandmother|grandfather|grandma|grandpa"
                               "|neighbou?r|coworker|co-worker)s?\\b|\\b(?:works\\s+(?:at|for|as)|lives\\s+in|was\\s+born"
                               "|born\\s+in|grew\\s+up\\s+in|is\\s+married\\s+to)\\b"),
                {"my", "our", "his", "her", "their", "works", "lives", "born", "grew", "married"}),
        pattern(QStringLiteral("\\b(?:meetings?|conferences?|weddings?|(?<!third\\s)(?<!third-)part(?:y|ies)|appointments?"
                               "|interviews?|webinars?|workshops?|concerts?|ceremon(?:y|ies)|summits?|trips?|vacations?"
                               "|birthdays?|anniversar(?:y|ies)|funerals?|graduations?|meetups?|stand-?ups?|offsites?"
                               "|hackathons?)\\b"),
                {"meeting", "conference", "wedding", "party", "parties", "appointment", "interview", "webinar", "workshop", "concert",
                 "ceremon", "summit", "trip", "vacation", "birthday", "anniversar", "funeral", "graduation", "meetup", "stand", "offsite",
                 "hackathon"}),
        pattern(QStringLiteral("[\\w.+-]+@[\\w-]+(?:\\.[\\w-]+)+"), {"@"}),
        pattern(QStringLiteral("(?<![\\w+])\\+\\d[\\d\\s().-]{6,}\\d(?!\\d)|(?<![\\w(])\\(?\\d{3}\\)?[\\s.-]\\d{3}[\\s.-]\\d{4}(?!\\d)"), {},
                true),
        pattern(QStringLiteral("(?<![\\w.@])@[A-Za-z0-9_]{2,}"), {"@"}),
        pattern(QStringLiteral("\\bhttps?://\\S+|\\bwww\\.\\S+"), {"http", "www."}),
        pattern(QStringLiteral("^\\W*(?:hi|hello|hey|yo|howdy|good\\s+(?:morning|afternoon|evening|night)|thanks|thank\\s+you"
                               "|thx|cheers|bye|goodbye|see\\s+you|see\\s+ya|take\\s+care|ok|okay|cool|nice|great|awesome"
                               "|lol|haha|sure|no\\s+worries|you're\\s+welcome|sounds\\s+good|how\\s+are\\s+you"
                               "|how's\\s+it\\s+going|what's\\s+up)\\b|\\b(?:how\\s+are\\s+you|nice\\s+weather"
                               "|have\\s+a\\s+(?:nice|good|great)\\s+(?:day|weekend|evening|one))\\b"),
                {}),
        pattern(QStringLiteral("\\b(?:maybe|perhaps|probably|possibly|might|i\\s+think|i\\s+guess|i\\s+suppose|i\\s+believe"
                               "|not\\s+sure|unsure|kind\\s+of|sort\\s+of|could\\s+be|i\\s+wonder|hopefully)\\b"),
                {"maybe", "perhaps", "probably", "possibly", "might", "think", "guess", "suppose", "believe", "sure", "kind", "sort", "could",
                 "wonder", "hopefully"}),
    };
    return l;
}

// Date and time expressions as written. A named group "p" narrows what is kept ("in May" -> "May").
const std::vector<Pattern> &datePatterns()
{
    const auto months = {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"};
    static const std::vector<Pattern> all = {
        pattern(QStringLiteral("(?<![\\d-])\\d{4}[-/]\\d{1,2}[-/]\\d{1,2}(?:[T ]\\d{1,2}:\\d{2}(?::\\d{2}(?:[.,]\\d+)?)?"
                               "(?:Z|[+-]\\d{2}:?\\d{2})?)?(?![\\d-])"),
                {}, true),
        pattern(QStringLiteral("(?<![\\d/.])\\d{1,2}/\\d{1,2}/(?:\\d{4}|\\d{2})(?![\\d/])|(?<![\\d.])\\d{1,2}\\.\\d{1,2}\\.\\d{4}(?![\\d.])"), {},
                true),
        pattern(QStringLiteral("\\b") + kMonths + QStringLiteral("\\.?\\s+\\d{1,2}(?:st|nd|rd|th)?(?:,?\\s+\\d{4})?\\b(?!:)"), {}, true),
        pattern(QStringLiteral("\\b\\d{1,2}(?:st|nd|rd|th)?\\s+(?:of\\s+)?") + kMonths + QStringLiteral("\\b(?:,?\\s+\\d{4}\\b)?"), {}, true),
        pattern(QStringLiteral("\\b") + kMonths + QStringLiteral("\\.?,?\\s+\\d{4}\\b"), {}, true),
        // A month name alone only where it cannot be the verb "may".
        pattern(QStringLiteral("\\b(?:last|this|next)\\s+") + kMonths + QStringLiteral("\\b"), months),
        pattern(QStringLiteral("\\b(?:in|since|before|after|during|until|till|by|early|late|mid|end\\s+of|beginning\\s+of)\\s+(?<p>")
                    + kMonths + QStringLiteral(")\\b"),
                months),
        pattern(QStringLiteral("\\b(?:in|since|before|after|during|until|by)\\s+(?<p>(?:19|20)\\d{2})\\b"), {}, true),
        pattern(QStringLiteral("\\b(?:the\\s+day\\s+(?:before\\s+yesterday|after\\s+tomorrow)|today|tonight|tomorrow|yesterday"
                               "|last\\s+night|this\\s+(?:morning|afternoon|evening)"
                               "|(?:this|next|last|past|previous|coming)\\s+(?:week|month|year|weekend|quarter))\\b"),
                {"day", "tonight", "tomorrow", "yesterday", "last", "this", "next", "past", "previous", "coming"}),
        pattern(QStringLiteral("\\b(?:(?:this|next|last|coming|every)\\s+)?") + kWeekdays + QStringLiteral("s?\\b"), {"day"}),
        pattern(QStringLiteral("\\b(?:(?:last|past|next)\\s+") + kCount + QStringLiteral("\\s+") + kUnit + QStringLiteral("|") + kCount
                    + QStringLiteral("\\s+") + kUnit + QStringLiteral("\\s+(?:ago|from\\s+now)|in\\s+") + kCount + QStringLiteral("\\s+")
                    + kUnit + QStringLiteral(")\\b"),
                {"minute", "hour", "day", "week", "month", "year"}),
        pattern(QStringLiteral("\\b(?:[01]?\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d)?(?:\\s?(?:am|pm|a\\.m\\.|p\\.m\\.))?(?![\\w:])"), {}, true),
        pattern(QStringLiteral("\\b(?:1[0-2]|0?[1-9])\\s?(?:am|pm|a\\.m\\.|p\\.m\\.)(?!\\w)"), {}, true),
        pattern(QStringLiteral("\\b(?:noon|midday|midnight|eod|eow|end\\s+of\\s+(?:the\\s+)?(?:day|week|month|quarter|year)"
                               "|q[1-4](?:\\s+\\d{4})?)\\b"),
                {"noon", "midday", "midnight", "eod", "eow", "end"}, true),
    };
    return all;
}

// Function words, pronouns, very common verbs and calendar words: never an entity or a topic.
bool isStopWord(const QString &lower)
{
    static const QSet<QString> words = [] {
        const QStringList list = QStringLiteral(
                                     "a about above after again against all also am an and any are aren't as at be because been before being below "
                                     "between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each "
                                     "few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself "
                                     "him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't "
                                     "my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd "
                                     "she'll she's should shouldn't so some such than that that's the their theirs them themselves then there "
                                     "there's these they they'd they'll they're they've this those through to too under until up very was wasn't we "
                                     "we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why "
                                     "why's will with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves "
                                     "yes ok okay hi hello hey hmm lol haha sure dear thanks thank please sorry yeah also just still even really maybe perhaps "
                                     "probably however though although already yet now soon later ever never always again every must might may "
                                     "shall get gets got getting go goes going went gone make makes made making take takes took use used using "
                                     "say says said tell told ask asked want wants wanted need needs needed think thought know knew like likes "
                                     "see saw look let put keep come came give gave try tried decided agreed thing things stuff lot lots way "
                                     "much many one two three four five six seven eight nine ten next last "
                                     "today tonight tomorrow yesterday day days week weeks month months year years morning afternoon evening "
                                     "night weekend time times ago since btw fyi note re fwd mr mrs ms dr prof sir "
                                     "january february march april june july august september october november december jan feb mar apr jun "
                                     "jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday")
                                     .split(QLatin1Char(' '), Qt::SkipEmptyParts);
        return QSet<QString>(list.begin(), list.end());
    }();
    return words.contains(lower);
}

// Words that start names ("New York", "Great Britain") but say too little to be a topic.
bool isVagueWord(const QString &lower)
{
    static const QSet<QString> words = {QStringLiteral("new"), QStringLiteral("old"), QStringLiteral("good"),
                                        QStringLiteral("great"), QStringLiteral("first"), QStringLiteral("second")};
    return words.contains(lower);
}

bool isTitle(const QString &lower)
{
    static const QSet<QString> titles = {QStringLiteral("mr"), QStringLiteral("mrs"), QStringLiteral("ms"), QStringLiteral("dr"),
                                         QStringLiteral("prof"), QStringLiteral("st"), QStringLiteral("sir")};
    return titles.contains(lower);
}

QString plain(const QString &text)
{
    QString s = text;
    s.replace(QChar(0x2019), QLatin1Char('\'')).replace(QChar(0x2018), QLatin1Char('\''));
    return s;
}

// The code point at `i` of `text` and its length in UTF-16 units (a surrogate pair is one).
char32_t codePointAt(const QString &text, qsizetype i, qsizetype *length)
{
    const QChar c = text.at(i);
    if (c.isHighSurrogate() && i + 1 < text.size() && text.at(i + 1).isLowSurrogate()) {
        *length = 2;
        return QChar::surrogateToUcs4(c, text.at(i + 1));
    }
    *length = 1;
    return c.unicode();
}

// Where the run of code points satisfying `in` that starts at `i` ends.
template<typename In>
qsizetype runEnd(const QString &text, qsizetype i, const In &in)
{
    qsizetype length = 0;
    while (i < text.size() && in(codePointAt(text, i, &length)))
        i += length;
    return i;
}

// Lower-case words of a text (letters and digits, and an apostrophe with letters after it: "don't");
// '-', '_' and every other character separate words. One pass, as the pattern
// [\p{L}\p{N}]+(?:'\p{L}+)? would find them.
QStringList words(const QString &text)
{
    const auto wordChar = [](char32_t c) { return QChar::isLetter(c) || QChar::isNumber(c); };
    const auto letter = [](char32_t c) { return QChar::isLetter(c); };
    QStringList out;
    qsizetype i = 0;
    while (i < text.size()) {
        qsizetype length = 0;
        if (!wordChar(codePointAt(text, i, &length))) {
            i += length;
            continue;
        }
        qsizetype end = runEnd(text, i, wordChar);
        if (end + 1 < text.size() && text.at(end) == QLatin1Char('\'')) {
            const qsizetype tail = runEnd(text, end + 1, letter);
            if (tail > end + 1)
                end = tail;
        }
        out << text.mid(i, end - i).toLower();
        i = end;
    }
    return out;
}

using Stem = OfflineStem;

Stem stem(QString w)
{
    if (w.endsWith(QLatin1String("'s")))
        w.chop(2);
    if (w.size() > 4 && w.endsWith(QLatin1String("ies"))) {
        w.chop(3);
        w += QLatin1Char('y');
    } else if (w.endsWith(QLatin1String("sses"))) {
        w.chop(2);
    } else if (w.size() > 4
               && (w.endsWith(QLatin1String("ches")) || w.endsWith(QLatin1String("shes")) || w.endsWith(QLatin1String("xes"))
                   || w.endsWith(QLatin1String("zes")))) {
        w.chop(2);
    } else if (w.size() > 3 && w.endsWith(QLatin1Char('s')) && !w.endsWith(QLatin1String("ss")) && !w.endsWith(QLatin1String("us"))
               && !w.endsWith(QLatin1String("is"))) {
        w.chop(1);
    }
    bool removed = false;
    if (w.size() >= 6 && w.endsWith(QLatin1String("ing"))) {
        w.chop(3);
        removed = true;
    } else if (w.size() >= 5 && w.endsWith(QLatin1String("ed"))) {
        w.chop(2);
        removed = true;
    }
    if (removed && w.size() >= 3 && w.back() == w.at(w.size() - 2) && !QStringLiteral("lsz").contains(w.back()))
        w.chop(1); // planned -> plan
    return {w, removed};
}

bool sameStem(const Stem &a, const Stem &b)
{
    const QLatin1Char e('e');
    return a.text == b.text || (a.suffixRemoved && !b.suffixRemoved && a.text + e == b.text)
        || (b.suffixRemoved && !a.suffixRemoved && b.text + e == a.text);
}

QList<Stem> stemsOf(const QStringList &words)
{
    QList<Stem> out;
    out.reserve(words.size());
    for (const QString &w : words)
        out << stem(w);
    return out;
}

QList<Stem> stems(const QString &text)
{
    return stemsOf(words(plain(text)));
}

// Where `needle` occurs as consecutive words of `haystack`, or -1.
qsizetype findWords(const QList<Stem> &haystack, const QList<Stem> &needle)
{
    for (qsizetype i = 0; i + needle.size() <= haystack.size(); ++i) {
        bool all = true;
        for (qsizetype j = 0; j < needle.size() && all; ++j)
            all = sameStem(haystack.at(i + j), needle.at(j));
        if (all)
            return i;
    }
    return -1;
}

QString keyOf(const QList<Stem> &words)
{
    QStringList parts;
    for (const Stem &s : words)
        parts << s.text;
    return parts.join(QLatin1Char(' '));
}

struct Found
{
    qsizetype position;
    QString text;
};

// Keeps the first of overlapping finds (earliest start, then longest) and drops case-insensitive repeats.
QStringList inOrder(QList<Found> found, QList<qsizetype> lengths = {})
{
    QList<qsizetype> order(found.size());
    for (qsizetype i = 0; i < order.size(); ++i)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](qsizetype a, qsizetype b) {
        if (found[a].position != found[b].position)
            return found[a].position < found[b].position;
        return lengths.isEmpty() ? false : lengths[a] > lengths[b];
    });
    QStringList out;
    QSet<QString> seen;
    qsizetype coveredTo = -1;
    for (const qsizetype i : order) {
        if (!lengths.isEmpty()) {
            if (found[i].position < coveredTo)
                continue;
            coveredTo = found[i].position + lengths[i];
        }
        const QString text = found[i].text.simplified();
        if (text.isEmpty() || seen.contains(text.toLower()))
            continue;
        seen.insert(text.toLower());
        out << text;
    }
    return out;
}

// One text as the analysis reads it (typographic apostrophes made plain), each part read at most
// once and only when asked for: its words, the cues it holds, its dates and names. Not shared between
// threads.
class Reading
{
public:
    explicit Reading(const QString &content)
        : m_text(plain(content))
    {
        // What a case-insensitive pattern matches, the lower-cased text contains: the long s is the
        // one letter that matches an ASCII letter ('s') and is lower case already.
        QString lower = m_text.toLower();
        lower.replace(QChar(0x017F), QLatin1Char('s'));
        m_lower = lower.toLatin1(); // the cue words are ASCII: other letters may turn into '?'
        for (qsizetype i = 0; i + 1 < m_lower.size(); ++i)
            m_pairs.set(pair(m_lower.at(i), m_lower.at(i + 1)));

        for (const QChar c : std::as_const(m_text)) {
            // A digit outside the Basic Multilingual Plane is a surrogate pair here.
            m_digit = m_digit || c.isDigit() || c.isSurrogate();
            m_upper = m_upper || c.isUpper();
        }
    }

    const QString &text() const { return m_text; }

    // Whether a match of `p` is possible: the text holds a digit or one of the words any match contains.
    bool mayMatch(const Pattern &p) const
    {
        if (p.digit && m_digit)
            return true;
        if (p.words.empty())
            return !p.digit;
        const std::string_view lower(m_lower.constData(), size_t(m_lower.size()));
        return std::any_of(p.words.begin(), p.words.end(), [&](std::string_view w) {
            // The pairs of letters that begin and end the word first: most words fail there.
            if (w.size() >= 2 && (!m_pairs.test(pair(w[0], w[1])) || !m_pairs.test(pair(w[w.size() - 2], w[w.size() - 1]))))
                return false;
            return lower.find(w) != std::string_view::npos;
        });
    }

    bool has(Cue cue)
    {
        std::optional<bool> &known = m_cues[cue];
        if (!known) {
            const Pattern &p = lexicon()[cue];
            known = mayMatch(p) && p.re.match(m_text).hasMatch();
        }
        return *known;
    }

    const QStringList &words()
    {
        if (!m_words)
            m_words = mneme::words(m_text);
        return *m_words;
    }

    const QList<Stem> &stems()
    {
        if (!m_stems)
            m_stems = stemsOf(words());
        return *m_stems;
    }

    const QStringList &dates()
    {
        if (!m_dates)
            m_dates = datesIn();
        return *m_dates;
    }

    const QStringList &entities()
    {
        if (!m_entities)
            m_entities = entitiesIn();
        return *m_entities;
    }

    QStringList topics();

    // Whether an address or handle may be in the text (each needs an '@' or "http" / "www.").
    bool mayHoldAddresses() const
    {
        return mayMatch(lexicon()[Email]) || mayMatch(lexicon()[Url]);
    }

    QStringList missedByShortcut() const;

private:
    QStringList datesIn() const;
    QStringList entitiesIn() const;
    static std::size_t pair(char a, char b) { return std::size_t(uchar(a)) << 8 | uchar(b); }

    QString m_text;
    QByteArray m_lower;         // lower-cased, as Latin-1
    std::bitset<65536> m_pairs; // the pairs of adjacent characters in m_lower
    bool m_digit = false;
    bool m_upper = false;
    std::array<std::optional<bool>, CueCount> m_cues;
    std::optional<QStringList> m_words;
    std::optional<QList<Stem>> m_stems;
    std::optional<QStringList> m_dates;
    std::optional<QStringList> m_entities;
};

QStringList Reading::datesIn() const
{
    QList<Found> found;
    QList<qsizetype> lengths;
    for (const Pattern &pattern : datePatterns()) {
        if (!mayMatch(pattern))
            continue;
        auto it = pattern.re.globalMatch(m_text);
        while (it.hasNext()) {
            const QRegularExpressionMatch m = it.next();
            const bool narrowed = m.capturedStart(QStringLiteral("p")) >= 0;
            // Overlaps are judged on the whole match, so "in May 2024" is not also "May".
            found << Found{m.capturedStart(), narrowed ? m.captured(QStringLiteral("p")) : m.captured()};
            lengths << m.capturedLength();
        }
    }
    return inOrder(found, lengths);
}

QStringList Reading::entitiesIn() const
{
    // Without an '@' there is no address or handle, and without a capital letter no name.
    if (!m_upper && !mayMatch(lexicon()[Email]))
        return {};
    static const QRegularExpression token(QStringLiteral("[\\p{L}\\p{N}]+(?:['.][\\p{L}\\p{N}]+)*"), kOptions);
    static const QRegularExpression sentenceEnd(QStringLiteral("[.!?:;\\n\\x{2022}]"));
    const QString &text = m_text;

    QList<Found> found;
    // Addresses and handles are entities of their own; they are masked with '|' so their parts are not
    // read as words and the words around them do not join into one name.
    QString scan = text;
    for (const Cue cue : {Url, Email, Handle}) {
        if (!mayMatch(lexicon()[cue]))
            continue;
        auto it = lexicon()[cue].re.globalMatch(scan);
        while (it.hasNext()) {
            const QRegularExpressionMatch m = it.next();
            if (cue != Url)
                found << Found{m.capturedStart(), m.captured()};
            scan.replace(m.capturedStart(), m.capturedLength(), QString(m.capturedLength(), QLatin1Char('|')));
        }
    }
    if (!m_upper)
        return inOrder(found);

    qsizetype runStart = -1;
    qsizetype runEnd = -1;
    int runWords = 0;
    bool runAtSentenceStart = false;
    const auto flush = [&] {
        // A lone capitalised word opening a sentence says nothing; "New York" at the start still does.
        if (runWords > 0 && (runWords >= 2 || !runAtSentenceStart))
            found << Found{runStart, text.mid(runStart, runEnd - runStart)};
        runWords = 0;
    };
    qsizetype previousEnd = 0;
    QString previous;
    bool first = true;
    auto it = token.globalMatch(scan);
    while (it.hasNext()) {
        const QRegularExpressionMatch m = it.next();
        const QString word = m.captured();
        const QString gap = scan.mid(previousEnd, m.capturedStart() - previousEnd);
        const bool sentenceStart = first || (gap.contains(sentenceEnd) && !(isTitle(previous.toLower()) && gap.trimmed() == QLatin1String(".")));
        const QString lower = word.toLower();
        const bool nameLike = word.front().isUpper() && !isStopWord(lower) && !isTitle(lower);
        if (!nameLike) {
            flush();
        } else if (runWords > 0 && !sentenceStart && gap.trimmed().isEmpty() && !gap.contains(QLatin1Char('\n'))) {
            runEnd = m.capturedEnd();
            ++runWords;
        } else {
            flush();
            runStart = m.capturedStart();
            runEnd = m.capturedEnd();
            runWords = 1;
            runAtSentenceStart = sentenceStart;
        }
        previousEnd = m.capturedEnd();
        previous = word;
        first = false;
    }
    flush();
    return inOrder(found);
}

QStringList Reading::topics()
{
    struct Topic
    {
        QString word;
        int count = 0;
        qsizetype firstSeen = 0;
    };
    // Addresses and handles are not topics, nor are the words inside them.
    QStringList masked;
    if (mayHoldAddresses()) {
        QString scan = m_text;
        for (const Cue cue : {Url, Email, Handle})
            scan.replace(lexicon()[cue].re, QStringLiteral(" "));
        masked = mneme::words(scan);
    }
    const QStringList &all = mayHoldAddresses() ? masked : words();
    QHash<QString, Topic> byStem;
    for (qsizetype i = 0; i < all.size(); ++i) {
        QString w = all.at(i);
        if (w.endsWith(QLatin1String("'s")))
            w.chop(2);
        if (w.size() < 3 || isStopWord(w) || isVagueWord(w) || w.contains(QLatin1Char('\'')))
            continue;
        bool letters = true;
        for (const QChar c : w)
            letters = letters && c.isLetter();
        if (!letters)
            continue;
        Topic &t = byStem[stem(w).text];
        if (t.count++ == 0) {
            t.word = w;
            t.firstSeen = i;
        }
    }
    QList<Topic> ranked = byStem.values();
    std::sort(ranked.begin(), ranked.end(), [](const Topic &a, const Topic &b) {
        if (a.count != b.count)
            return a.count > b.count;
        if (a.word.size() != b.word.size())
            return a.word.size() > b.word.size();
        return a.firstSeen < b.firstSeen;
    });
    QStringList out;
    for (const Topic &t : ranked) {
        if (out.size() == 5)
            break;
        out << t.word;
    }
    return out;
}

QStringList Reading::missedByShortcut() const
{
    static const char *const names[CueCount] = {"decision", "commitment", "constraint", "rule", "deadline", "preference", "plan",
                                                "problem", "lesson", "warning", "security", "person", "event", "email",
                                                "phone", "handle", "url", "small talk", "hedge"};
    QStringList out;
    for (int cue = 0; cue < CueCount; ++cue)
        if (!mayMatch(lexicon()[cue]) && lexicon()[cue].re.match(m_text).hasMatch())
            out << QString::fromLatin1(names[cue]);
    for (size_t k = 0; k < datePatterns().size(); ++k)
        if (!mayMatch(datePatterns()[k]) && datePatterns()[k].re.match(m_text).hasMatch())
            out << QStringLiteral("date pattern %1").arg(k);
    return out;
}

double importanceOf(Reading &r, double base)
{
    const QString &text = r.text();
    double score = std::isfinite(base) ? base : 0.5;

    // Cues that make a statement worth keeping; each counts once however often it appears. Only the
    // substantive ones keep a greeting from counting as small talk: "how are you today?" names a day
    // and is still small talk.
    const struct
    {
        bool present;
        double weight;
        bool substantive;
    } cues[] = {
        {r.has(Decision), 0.2, true},
        {r.has(Constraint), 0.2, true},
        {r.has(Warning) || r.has(Security), 0.2, true},
        {r.has(Commitment), 0.15, true},
        {r.has(Deadline), 0.15, true},
        {!r.has(Deadline) && !r.dates().isEmpty(), 0.15, false},
        {r.has(Preference), 0.15, true},
        {r.has(Problem), 0.1, true},
        {r.has(Lesson), 0.1, true},
        {r.has(Email) || r.has(Phone), 0.1, true},
        {!r.entities().isEmpty(), 0.05, false},
        {std::any_of(text.begin(), text.end(), [](QChar c) { return c.isDigit(); }), 0.05, false},
    };
    bool substantive = false;
    for (const auto &cue : cues) {
        if (cue.present) {
            score += cue.weight;
            substantive = substantive || cue.substantive;
        }
    }

    const qsizetype wordCount = r.words().size();
    if (!substantive && r.has(SmallTalk))
        score -= 0.25;
    if (r.has(Hedge))
        score -= 0.1;
    if (text.endsWith(QLatin1Char('?')))
        score -= 0.1;
    if (wordCount == 0)
        score -= 0.3;
    else if (wordCount < 4)
        score -= 0.15;
    return std::clamp(score, 0.05, 0.95);
}

// The importance reads the text trimmed; the rest reads it as given. `full` serves both when the
// text has no space at either end.
double trimmedImportance(Reading &full, double base)
{
    const QString trimmed = full.text().trimmed();
    if (trimmed.size() == full.text().size())
        return importanceOf(full, base);
    Reading t(trimmed);
    return importanceOf(t, base);
}

QStringList categoriesOf(Reading &r, const OfflineCategories &existing)
{
    constexpr qsizetype kMax = 4;
    const QList<Stem> &contentWords = r.stems();

    struct Match
    {
        qsizetype position;
        qsizetype length;
        const OfflineCategories::Name *name;
    };
    QList<Match> matches;
    for (const OfflineCategories::Name &name : existing.names) {
        if (name.words.isEmpty())
            continue;
        const qsizetype at = findWords(contentWords, name.words);
        if (at >= 0)
            matches << Match{at, name.words.size(), &name};
    }
    std::stable_sort(matches.begin(), matches.end(), [](const Match &a, const Match &b) {
        return a.position != b.position ? a.position < b.position : a.length > b.length;
    });

    QStringList out;
    QSet<QString> keys;
    const auto add = [&](const QString &name, const QString &key) {
        if (out.size() >= kMax || keys.contains(key))
            return;
        keys.insert(key);
        out << name;
    };
    for (const Match &m : matches)
        add(m.name->name, m.name->key);

    const std::pair<const char *, Cue> vocabulary[] = {
        {"decision", Decision},
        {"deadline", Deadline},
        {"rule", Rule},
        {"preference", Preference},
        {"plan", Plan},
        {"problem", Problem},
        {"security", Security},
        {"lesson", Lesson},
        {"person", Person},
        {"event", Event},
        {"contact", Email},
    };
    for (const auto &[label, cue] : vocabulary) {
        const bool present = cue == Email ? r.has(Email) || r.has(Phone) : r.has(cue);
        if (!present)
            continue;
        // Prefer an existing spelling of the same category ("Decisions", "Plans").
        const QString labelText = QString::fromLatin1(label);
        const QList<Stem> labelWords = stems(labelText);
        const OfflineCategories::Name *spelling = nullptr;
        for (const OfflineCategories::Name &e : existing.names) {
            if (e.words.size() == labelWords.size() && findWords(e.words, labelWords) == 0) {
                spelling = &e;
                break;
            }
        }
        if (spelling)
            add(spelling->name, spelling->key);
        else
            add(labelText, keyOf(labelWords));
    }
    return out;
}

Json metadataOf(Reading &r)
{
    return Json{{"entities", r.entities()}, {"dates", r.dates()}, {"topics", r.topics()}};
}

} // namespace

OfflineCategories::OfflineCategories(const QStringList &names)
{
    for (const QString &name : names) {
        QList<OfflineStem> words = stems(name);
        const QString key = keyOf(words);
        this->names << Name{name, std::move(words), key};
    }
}

double OfflineAnalyzer::importance(const QString &content, double base)
{
    Reading r(plain(content).trimmed());
    return importanceOf(r, base);
}

QStringList OfflineAnalyzer::categories(const QString &content, const QStringList &existingCategories)
{
    return categories(content, OfflineCategories(existingCategories));
}

QStringList OfflineAnalyzer::categories(const QString &content, const OfflineCategories &existingCategories)
{
    Reading r(content);
    return categoriesOf(r, existingCategories);
}

Json OfflineAnalyzer::metadata(const QString &content)
{
    Reading r(content);
    return metadataOf(r);
}

OfflineAnalysis OfflineAnalyzer::analyze(const QString &content, double baseImportance, const QStringList &existingCategories)
{
    return analyze(content, baseImportance, OfflineCategories(existingCategories));
}

OfflineAnalysis OfflineAnalyzer::analyze(const QString &content, double baseImportance, const OfflineCategories &existingCategories)
{
    Reading r(content);
    const double importance = trimmedImportance(r, baseImportance);
    return OfflineAnalysis{importance, categoriesOf(r, existingCategories), metadataOf(r)};
}

QStringList OfflineAnalyzer::missedByShortcut(const QString &content)
{
    return Reading(content).missedByShortcut();
}

QString OfflineAnalyzer::chooseScope(const QList<QPair<QString, double>> &neighbours, const QString &fallback, double minSimilarity)
{
    constexpr double kTie = 1e-9;
    QMap<QString, double> totals;
    for (const auto &[scope, similarity] : neighbours) {
        if (!scope.trimmed().isEmpty() && similarity >= minSimilarity)
            totals[scope] += similarity;
    }
    const auto depth = [](const QString &scope) { return scope.split(QLatin1Char('/'), Qt::SkipEmptyParts).size(); };
    QString best;
    double bestTotal = 0;
    for (auto it = totals.cbegin(); it != totals.cend(); ++it) {
        // QMap iterates alphabetically, so at equal total and depth the first one seen stays.
        const bool better = best.isEmpty() || it.value() > bestTotal + kTie
                         || (std::abs(it.value() - bestTotal) <= kTie && depth(it.key()) > depth(best));
        if (better) {
            best = it.key();
            bestTotal = it.value();
        }
    }
    return best.isEmpty() ? fallback : best;
}

} // namespace mneme
