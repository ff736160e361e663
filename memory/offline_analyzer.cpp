#include "memory/offline_analyzer_p.h"

#include <QHash>
#include <QMap>
#include <QRegularExpression>
#include <QSet>
#include <algorithm>
#include <cmath>
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
struct Lexicon
{
    QRegularExpression decision, commitment, constraint, rule, deadline, preference, plan, problem, lesson, warning,
        security, person, event, email, phone, handle, url, smallTalk, hedge;
};

const Lexicon &lexicon()
{
    static const Lexicon l{
        .decision = re(QStringLiteral("\\b(?:decided|decides|decision|decisions|agreed|settled\\s+on|went\\s+with|going\\s+with"
                                      "|chose|chosen|opted|approved|signed\\s+off|final\\s+call|(?:we|i)\\s+will\\s+use|(?:we|i)'ll\\s+use)\\b")),
        .commitment = re(QStringLiteral("\\b(?:i|we|you|he|she|they)\\s+(?:will|shall)\\b|\\b(?:i|we|you|he|she|they)'ll\\b"
                                        "|\\bpromise[sd]?\\b|\\bcommit(?:ted)?\\s+to\\b|\\baction\\s+items?\\b|\\bto-?dos?\\b"
                                        "|\\bfollow[\\s-]?up\\b|\\bassigned\\s+to\\b|\\bresponsible\\s+for\\b|\\bin\\s+charge\\s+of\\b"
                                        "|\\bwill\\s+(?:send|deliver|finish|prepare|review|fix|write|call|book|handle|share|update|check|own)\\b")),
        .constraint = re(QStringLiteral("\\b(?:must|mustn't|never|always|required|requires?|requirements?|mandatory|ha(?:ve|s|d)\\s+to"
                                        "|needs?\\s+to|not\\s+allowed|forbidden|prohibited|polic(?:y|ies)|rules?"
                                        "|under\\s+no\\s+circumstances)\\b")),
        // Narrower than `constraint`: "I always drink tea" is a habit, "Always run the tests" a rule.
        .rule = re(QStringLiteral("\\b(?:must|mustn't|mandatory|required|requirements?|forbidden|prohibited|not\\s+allowed"
                                  "|polic(?:y|ies)|rules?)\\b|(?:^|[.!?;]\\s+)(?:always|never)\\b")),
        .deadline = re(QStringLiteral("\\b(?:deadlines?|overdue|due\\b(?!\\s+to\\b)|no\\s+later\\s+than"
                                      "|by\\s+(?:the\\s+)?(?:end\\s+of|eod|eow|tomorrow|tonight|next|noon|midnight|")
                       + kWeekdays + QLatin1Char('|') + kMonths + QStringLiteral("\\b|\\d))")),
        .preference = re(QStringLiteral("\\b(?:i|we|you|he|she|they)\\s+(?:really\\s+|also\\s+|don't\\s+|do\\s+not\\s+)?"
                                        "(?:like|love|hate|enjoy|prefer|dislike|adore)\\b"
                                        "|\\b(?:likes|loves|hates|enjoys|prefers|dislikes|prefer|preferred|preferences?"
                                        "|favou?rites?|can't\\s+stand)\\b|\\b(?:would|i'd|we'd|he'd|she'd|they'd)\\s+rather\\b")),
        .plan = re(QStringLiteral("\\b(?:plans?|planned|planning|roadmap|next\\s+steps?|intends?\\s+to|intending\\s+to"
                                  "|milestones?|scheduled?)\\b")),
        .problem = re(QStringLiteral("\\b(?:bugs?|errors?|fail|fails|failed|failing|failures?|crash|crashes|crashed|crashing|broken"
                                     "|outages?|problems?|exceptions?|regressions?|doesn't\\s+work|does\\s+not\\s+work"
                                     "|not\\s+working|timed\\s+out|timeouts?|incidents?|segfaults?|issues?)\\b")),
        .lesson = re(QStringLiteral("\\b(?:lessons?|learned|learnt|turns\\s+out|turned\\s+out|note\\s+to\\s+self|in\\s+hindsight"
                                    "|next\\s+time|realized|realised|takeaways?|mistakes?|should\\s+have)\\b")),
        .warning = re(QStringLiteral("\\b(?:warning|warn|warned|careful|caution|danger|dangerous|critical|urgent|urgently|important"
                                     "|asap|do\\s+not\\s+share|don't\\s+share|never\\s+share|leaked)\\b")),
        .security = re(QStringLiteral("\\b(?:security|secure|insecure|passwords?|passphrases?|credentials?|secrets?|api\\s+keys?"
                                      "|private\\s+keys?|ssh\\s+keys?|access\\s+tokens?|vulnerabilit(?:y|ies)|cve-\\d+-\\d+"
                                      "|breach(?:es)?|phishing|malware|encrypt(?:ed|ion)?|2fa|mfa|two-factor)\\b")),
        .person = re(QStringLiteral("\\b(?:my|our|his|her|their)\\s+(?:wife|husband|partner|son|daughter|mother|mom|mum|father|dad"
                                    "|brother|sister|friend|colleague|boss|manager|kid|child|children|girlfriend|boyfriend"
                                    "|fianc\\x{00E9}e?|fiancee?|cousin|aunt|uncle|grandmother|grandfather|grandma|grandpa"
                                    "|neighbou?r|coworker|co-worker)s?\\b|\\b(?:works\\s+(?:at|for|as)|lives\\s+in|was\\s+born"
                                    "|born\\s+in|grew\\s+up\\s+in|is\\s+married\\s+to)\\b")),
        .event = re(QStringLiteral("\\b(?:meetings?|conferences?|weddings?|(?<!third\\s)(?<!third-)part(?:y|ies)|appointments?"
                                   "|interviews?|webinars?|workshops?|concerts?|ceremon(?:y|ies)|summits?|trips?|vacations?"
                                   "|birthdays?|anniversar(?:y|ies)|funerals?|graduations?|meetups?|stand-?ups?|offsites?"
                                   "|hackathons?)\\b")),
        .email = re(QStringLiteral("[\\w.+-]+@[\\w-]+(?:\\.[\\w-]+)+")),
        .phone = re(QStringLiteral("(?<![\\w+])\\+\\d[\\d\\s().-]{6,}\\d(?!\\d)|(?<![\\w(])\\(?\\d{3}\\)?[\\s.-]\\d{3}[\\s.-]\\d{4}(?!\\d)")),
        .handle = re(QStringLiteral("(?<![\\w.@])@[A-Za-z0-9_]{2,}")),
        .url = re(QStringLiteral("\\bhttps?://\\S+|\\bwww\\.\\S+")),
        .smallTalk = re(QStringLiteral("^\\W*(?:hi|hello|hey|yo|howdy|good\\s+(?:morning|afternoon|evening|night)|thanks|thank\\s+you"
                                       "|thx|cheers|bye|goodbye|see\\s+you|see\\s+ya|take\\s+care|ok|okay|cool|nice|great|awesome"
                                       "|lol|haha|sure|no\\s+worries|you're\\s+welcome|sounds\\s+good|how\\s+are\\s+you"
                                       "|how's\\s+it\\s+going|what's\\s+up)\\b|\\b(?:how\\s+are\\s+you|nice\\s+weather"
                                       "|have\\s+a\\s+(?:nice|good|great)\\s+(?:day|weekend|evening|one))\\b")),
        .hedge = re(QStringLiteral("\\b(?:maybe|perhaps|probably|possibly|might|i\\s+think|i\\s+guess|i\\s+suppose|i\\s+believe"
                                   "|not\\s+sure|unsure|kind\\s+of|sort\\s+of|could\\s+be|i\\s+wonder|hopefully)\\b")),
    };
    return l;
}

// Date and time expressions as written. A named group "p" narrows what is kept ("in May" -> "May").
const std::vector<QRegularExpression> &datePatterns()
{
    static const std::vector<QRegularExpression> all = {
        re(QStringLiteral("(?<![\\d-])\\d{4}[-/]\\d{1,2}[-/]\\d{1,2}(?:[T ]\\d{1,2}:\\d{2}(?::\\d{2}(?:[.,]\\d+)?)?"
                          "(?:Z|[+-]\\d{2}:?\\d{2})?)?(?![\\d-])")),
        re(QStringLiteral("(?<![\\d/.])\\d{1,2}/\\d{1,2}/(?:\\d{4}|\\d{2})(?![\\d/])|(?<![\\d.])\\d{1,2}\\.\\d{1,2}\\.\\d{4}(?![\\d.])")),
        re(QStringLiteral("\\b") + kMonths + QStringLiteral("\\.?\\s+\\d{1,2}(?:st|nd|rd|th)?(?:,?\\s+\\d{4})?\\b(?!:)")),
        re(QStringLiteral("\\b\\d{1,2}(?:st|nd|rd|th)?\\s+(?:of\\s+)?") + kMonths + QStringLiteral("\\b(?:,?\\s+\\d{4}\\b)?")),
        re(QStringLiteral("\\b") + kMonths + QStringLiteral("\\.?,?\\s+\\d{4}\\b")),
        // A month name alone only where it cannot be the verb "may".
        re(QStringLiteral("\\b(?:last|this|next)\\s+") + kMonths + QStringLiteral("\\b")),
        re(QStringLiteral("\\b(?:in|since|before|after|during|until|till|by|early|late|mid|end\\s+of|beginning\\s+of)\\s+(?<p>")
           + kMonths + QStringLiteral(")\\b")),
        re(QStringLiteral("\\b(?:in|since|before|after|during|until|by)\\s+(?<p>(?:19|20)\\d{2})\\b")),
        re(QStringLiteral("\\b(?:the\\s+day\\s+(?:before\\s+yesterday|after\\s+tomorrow)|today|tonight|tomorrow|yesterday"
                          "|last\\s+night|this\\s+(?:morning|afternoon|evening)"
                          "|(?:this|next|last|past|previous|coming)\\s+(?:week|month|year|weekend|quarter))\\b")),
        re(QStringLiteral("\\b(?:(?:this|next|last|coming|every)\\s+)?") + kWeekdays + QStringLiteral("s?\\b")),
        re(QStringLiteral("\\b(?:(?:last|past|next)\\s+") + kCount + QStringLiteral("\\s+") + kUnit + QStringLiteral("|") + kCount
           + QStringLiteral("\\s+") + kUnit + QStringLiteral("\\s+(?:ago|from\\s+now)|in\\s+") + kCount + QStringLiteral("\\s+") + kUnit
           + QStringLiteral(")\\b")),
        re(QStringLiteral("\\b(?:[01]?\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d)?(?:\\s?(?:am|pm|a\\.m\\.|p\\.m\\.))?(?![\\w:])")),
        re(QStringLiteral("\\b(?:1[0-2]|0?[1-9])\\s?(?:am|pm|a\\.m\\.|p\\.m\\.)(?!\\w)")),
        re(QStringLiteral("\\b(?:noon|midday|midnight|eod|eow|end\\s+of\\s+(?:the\\s+)?(?:day|week|month|quarter|year)"
                          "|q[1-4](?:\\s+\\d{4})?)\\b")),
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

// Lower-case words of a text; '-', '_' and every other non-letter, non-digit separate words.
QStringList words(const QString &text)
{
    static const QRegularExpression word(QStringLiteral("[\\p{L}\\p{N}]+(?:'[\\p{L}]+)?"), kOptions);
    QStringList out;
    auto it = word.globalMatch(plain(text));
    while (it.hasNext())
        out << it.next().captured().toLower();
    return out;
}

// A crude stem, enough to match "plans" and "planning" to "plan" but not "planet".
struct Stem
{
    QString text;
    bool suffixRemoved = false; // "-ing" or "-ed" was cut, so a lost final 'e' may be missing ("saving")
};

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

QList<Stem> stems(const QString &text)
{
    QList<Stem> out;
    for (const QString &w : words(text))
        out << stem(w);
    return out;
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

QString categoryKey(const QString &name)
{
    QStringList parts;
    for (const Stem &s : stems(name))
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

QStringList datesIn(const QString &text)
{
    QList<Found> found;
    QList<qsizetype> lengths;
    for (const QRegularExpression &pattern : datePatterns()) {
        auto it = pattern.globalMatch(text);
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

QStringList entitiesIn(const QString &text)
{
    static const QRegularExpression token(QStringLiteral("[\\p{L}\\p{N}]+(?:['.][\\p{L}\\p{N}]+)*"), kOptions);
    static const QRegularExpression sentenceEnd(QStringLiteral("[.!?:;\\n\\x{2022}]"));
    const Lexicon &l = lexicon();

    QList<Found> found;
    // Addresses and handles are entities of their own; they are masked with '|' so their parts are not
    // read as words and the words around them do not join into one name.
    QString scan = text;
    for (const QRegularExpression *pattern : {&l.url, &l.email, &l.handle}) {
        auto it = pattern->globalMatch(scan);
        while (it.hasNext()) {
            const QRegularExpressionMatch m = it.next();
            if (pattern != &l.url)
                found << Found{m.capturedStart(), m.captured()};
            scan.replace(m.capturedStart(), m.capturedLength(), QString(m.capturedLength(), QLatin1Char('|')));
        }
    }

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

QStringList topicsIn(const QString &text)
{
    struct Topic
    {
        QString word;
        int count = 0;
        qsizetype firstSeen = 0;
    };
    // Addresses and handles are not topics, nor are the words inside them.
    const Lexicon &l = lexicon();
    QString scan = text;
    for (const QRegularExpression *pattern : {&l.url, &l.email, &l.handle})
        scan.replace(*pattern, QStringLiteral(" "));
    QHash<QString, Topic> byStem;
    const QStringList all = words(scan);
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

bool has(const QRegularExpression &pattern, const QString &text)
{
    return pattern.match(text).hasMatch();
}

} // namespace

double OfflineAnalyzer::importance(const QString &content, double base)
{
    const Lexicon &l = lexicon();
    const QString text = plain(content).trimmed();
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
        {has(l.decision, text), 0.2, true},
        {has(l.constraint, text), 0.2, true},
        {has(l.warning, text) || has(l.security, text), 0.2, true},
        {has(l.commitment, text), 0.15, true},
        {has(l.deadline, text), 0.15, true},
        {!has(l.deadline, text) && !datesIn(text).isEmpty(), 0.15, false},
        {has(l.preference, text), 0.15, true},
        {has(l.problem, text), 0.1, true},
        {has(l.lesson, text), 0.1, true},
        {has(l.email, text) || has(l.phone, text), 0.1, true},
        {!entitiesIn(text).isEmpty(), 0.05, false},
        {std::any_of(text.begin(), text.end(), [](QChar c) { return c.isDigit(); }), 0.05, false},
    };
    bool substantive = false;
    for (const auto &cue : cues) {
        if (cue.present) {
            score += cue.weight;
            substantive = substantive || cue.substantive;
        }
    }

    const qsizetype wordCount = words(text).size();
    if (!substantive && has(l.smallTalk, text))
        score -= 0.25;
    if (has(l.hedge, text))
        score -= 0.1;
    if (text.endsWith(QLatin1Char('?')))
        score -= 0.1;
    if (wordCount == 0)
        score -= 0.3;
    else if (wordCount < 4)
        score -= 0.15;
    return std::clamp(score, 0.05, 0.95);
}

QStringList OfflineAnalyzer::categories(const QString &content, const QStringList &existingCategories)
{
    constexpr qsizetype kMax = 4;
    const Lexicon &l = lexicon();
    const QString text = plain(content);
    const QList<Stem> contentWords = stems(text);

    struct Match
    {
        qsizetype position;
        qsizetype length;
        QString name;
    };
    QList<Match> matches;
    for (const QString &name : existingCategories) {
        const QList<Stem> nameWords = stems(name);
        if (nameWords.isEmpty())
            continue;
        const qsizetype at = findWords(contentWords, nameWords);
        if (at >= 0)
            matches << Match{at, nameWords.size(), name};
    }
    std::stable_sort(matches.begin(), matches.end(), [](const Match &a, const Match &b) {
        return a.position != b.position ? a.position < b.position : a.length > b.length;
    });

    QStringList out;
    QSet<QString> keys;
    const auto add = [&](const QString &name) {
        const QString key = categoryKey(name);
        if (out.size() >= kMax || keys.contains(key))
            return;
        keys.insert(key);
        out << name;
    };
    for (const Match &m : matches)
        add(m.name);

    const std::pair<const char *, bool> vocabulary[] = {
        {"decision", has(l.decision, text)},
        {"deadline", has(l.deadline, text)},
        {"rule", has(l.rule, text)},
        {"preference", has(l.preference, text)},
        {"plan", has(l.plan, text)},
        {"problem", has(l.problem, text)},
        {"security", has(l.security, text)},
        {"lesson", has(l.lesson, text)},
        {"person", has(l.person, text)},
        {"event", has(l.event, text)},
        {"contact", has(l.email, text) || has(l.phone, text)},
    };
    for (const auto &[label, present] : vocabulary) {
        if (!present)
            continue;
        // Prefer an existing spelling of the same category ("Decisions", "Plans").
        QString name = QString::fromLatin1(label);
        const QList<Stem> labelWords = stems(name);
        for (const QString &existing : existingCategories) {
            const QList<Stem> existingWords = stems(existing);
            if (existingWords.size() == labelWords.size() && findWords(existingWords, labelWords) == 0) {
                name = existing;
                break;
            }
        }
        add(name);
    }
    return out;
}

Json OfflineAnalyzer::metadata(const QString &content)
{
    const QString text = plain(content);
    return Json{{"entities", entitiesIn(text)}, {"dates", datesIn(text)}, {"topics", topicsIn(text)}};
}

OfflineAnalysis OfflineAnalyzer::analyze(const QString &content, double baseImportance, const QStringList &existingCategories)
{
    return OfflineAnalysis{importance(content, baseImportance), categories(content, existingCategories), metadata(content)};
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
