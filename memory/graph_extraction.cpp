#include "memory/graph_extraction_p.h"

#include "memory/statement_splitter_p.h"
#include "memory/time_expression_p.h"
#include <mneme/core/stop_words.h>

#include <QRegularExpression>
#include <QSet>

namespace mneme::OfflineGraphExtractor {

namespace {

// One word of a sentence: its text without the punctuation around it, and whether a clause ends
// after it (a comma, a colon, a dash, a closing bracket).
struct Word
{
    QString text;
    bool clauseEnd = false;
    bool capitalised() const { return !text.isEmpty() && text.at(0).isUpper(); }
    QString lower() const { return text.toLower(); }
};

const QSet<QString> &firstPerson()
{
    static const QSet<QString> w{"i", "me", "we", "us", "i'm", "i've", "i'd", "i'll", "im", "ive"};
    return w;
}

const QSet<QString> &possessiveFirstPerson()
{
    static const QSet<QString> w{"my", "our"};
    return w;
}

// Words a verb phrase passes over: auxiliaries and adverbs that do not change its meaning.
const QSet<QString> &skippedInVerb()
{
    static const QSet<QString> w{"am", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "will",
                                 "would", "shall", "should", "can", "could", "do", "does", "did", "just", "really",
                                 "also", "recently", "finally", "actually", "always", "still", "already", "currently",
                                 "usually", "often", "sometimes", "even", "totally", "absolutely", "definitely"};
    return w;
}

const QSet<QString> &negations()
{
    static const QSet<QString> w{"not", "never", "don't", "doesn't", "didn't", "won't", "can't", "isn't", "wasn't",
                                 "haven't", "hasn't", "dont", "didnt", "cant"};
    return w;
}

const QSet<QString> &prepositions()
{
    static const QSet<QString> w{"in", "at", "to", "from", "with", "for", "on", "about", "into", "near", "by", "of", "as"};
    return w;
}

const QSet<QString> &placePrepositions()
{
    static const QSet<QString> w{"in", "at", "to", "from", "near", "into"};
    return w;
}

const QSet<QString> &determiners()
{
    static const QSet<QString> w{"a", "an", "the", "my", "his", "her", "their", "our", "your", "its", "this", "that",
                                 "these", "those", "some", "any", "another"};
    return w;
}

// Words that end a noun phrase (besides punctuation): conjunctions, relative words, prepositions.
const QSet<QString> &phraseEnds()
{
    static const QSet<QString> w{"and", "or", "but", "because", "since", "so", "when", "while", "which", "who", "that",
                                 "where", "if", "than", "then", "after", "before", "until", "though", "although"};
    return w;
}

// Sentence openers that look like names (capitalised) but are not.
const QSet<QString> &notNames()
{
    static const QSet<QString> w{"the", "a", "an", "it", "this", "that", "there", "here", "he", "she", "they", "we",
                                 "you", "i", "my", "our", "his", "her", "their", "yes", "no", "oh", "wow", "hey", "hi",
                                 "thanks", "thank", "well", "so", "and", "but", "also", "what", "when", "where",
                                 "why", "how", "who", "which", "today", "yesterday", "tomorrow", "last", "next"};
    return w;
}

// Capitalised words that name times, not places: "in May", "on Monday".
const QSet<QString> &calendarWords()
{
    static const QSet<QString> w{"january", "february", "march", "april", "may", "june", "july", "august", "september",
                                 "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
                                 "saturday", "sunday", "christmas", "easter"};
    return w;
}

const QSet<QString> &exclusiveLabels()
{
    static const QSet<QString> w{"lives_in", "lives_at", "live_in", "works_at", "works_for", "work_at", "work_for",
                                 "married_to", "is_married_to", "age", "birthday", "name", "job", "boss", "husband",
                                 "wife", "partner", "address", "hometown", "employer", "is_engaged_to", "is_dating"};
    return w;
}

// Third-person subjects, resolved to the last person the record named.
const QSet<QString> &thirdPerson()
{
    static const QSet<QString> w{"he", "she", "they"};
    return w;
}

// Where someone lives now: labels that all mean the residence, written as kResidence.
const QSet<QString> &residenceLabels()
{
    static const QSet<QString> w{"lives_in", "live_in", "living_in", "lives_at", "live_at", "living_at", "resides_in",
                                 "reside_in", "resides_at", "is_based_in", "based_in", "stays_in", "lived_in_now"};
    return w;
}

// A completed move: the destination is the new residence.
const QSet<QString> &moveLabels()
{
    static const QSet<QString> w{"moved_to", "moved_into", "relocated_to", "settled_in", "moved_back_to", "moved_in_to"};
    return w;
}

QList<Word> wordsOf(const QString &sentence)
{
    QList<Word> out;
    static const QRegularExpression space(QStringLiteral("\\s+"));
    for (QString raw : sentence.split(space, Qt::SkipEmptyParts)) {
        Word w;
        while (!raw.isEmpty() && !raw.front().isLetterOrNumber())
            raw.remove(0, 1);
        while (!raw.isEmpty() && !raw.back().isLetterOrNumber()) {
            const QChar c = raw.back();
            if (c == QLatin1Char(',') || c == QLatin1Char(':') || c == QLatin1Char(';') || c == QLatin1Char(')')
                || c == QLatin1Char('-') || c == QLatin1Char('.') || c == QLatin1Char('!') || c == QLatin1Char('?'))
                w.clauseEnd = true;
            raw.chop(1);
        }
        raw.replace(QChar(0x2019), QLatin1Char('\''));
        if (raw.isEmpty()) {
            if (!out.isEmpty())
                out.back().clauseEnd = true;
            continue;
        }
        w.text = raw;
        out << w;
    }
    return out;
}

// "Tom's" -> "Tom" (and *possessive true).
QString withoutPossessive(const QString &word, bool *possessive)
{
    *possessive = word.endsWith(QLatin1String("'s")) || word.endsWith(QLatin1String("s'"));
    if (word.endsWith(QLatin1String("'s")))
        return word.chopped(2);
    if (word.endsWith(QLatin1String("s'")))
        return word.chopped(1);
    return word;
}

// A run of capitalised words from `i` (names may join with "of", "de", "van": "Bank of America").
int nameEnd(const QList<Word> &w, int i)
{
    int j = i;
    while (j < w.size() && w[j].capitalised() && !(j > i && notNames().contains(w[j].lower()))) {
        ++j;
        if (w[j - 1].clauseEnd || w[j - 1].text.contains(QLatin1Char('\'')))
            break;
        if (j + 1 < w.size() && (w[j].text == QLatin1String("of") || w[j].text == QLatin1String("de")) && w[j + 1].capitalised())
            ++j;
    }
    return j;
}

QString joined(const QList<Word> &w, int from, int to)
{
    QStringList parts;
    for (int i = from; i < to; ++i)
        parts << w[i].text;
    return parts.join(QLatin1Char(' '));
}

// The noun phrase starting at `i`: a name, or an optional determiner and up to three words before a
// phrase end; *end is where it stops. Empty when there is none.
ExtractedEntity nounPhrase(const QList<Word> &w, int i, int *end, const QString &speaker, bool afterPlacePreposition)
{
    *end = i;
    if (i >= w.size())
        return {};
    const QString first = w[i].lower();
    if (firstPerson().contains(first)) {
        *end = i + 1;
        return {speaker, QStringLiteral("person")};
    }
    if (w[i].capitalised() && !notNames().contains(first)) {
        const int j = nameEnd(w, i);
        bool possessive = false;
        QString name = joined(w, i, j);
        name = withoutPossessive(name, &possessive);
        *end = j;
        return {name, afterPlacePreposition ? QStringLiteral("place") : QStringLiteral("entity")};
    }
    int j = i;
    if (determiners().contains(first) || possessiveFirstPerson().contains(first))
        ++j;
    const int start = j;
    while (j < w.size() && j - start < 3) {
        const QString l = w[j].lower();
        if (phraseEnds().contains(l) || prepositions().contains(l) || skippedInVerb().contains(l) || negations().contains(l))
            break;
        ++j;
        if (w[j - 1].clauseEnd)
            break;
    }
    if (j == start)
        return {};
    *end = j;
    QString name = joined(w, start, j);
    // "my sister" -> the speaker's sister.
    if (possessiveFirstPerson().contains(first))
        name = speaker + QStringLiteral("'s ") + name;
    bool onlyStop = true;
    for (int k = start; k < j; ++k)
        onlyStop = onlyStop && StopWords::isEnglish(w[k].lower().toStdString());
    if (onlyStop)
        return {};
    return {name, QStringLiteral("thing")};
}

// The date entity of a period: a day, a month, a year, or the phrase.
ExtractedEntity dateEntity(const TimeRange &range)
{
    if (!range.from.isValid() || !range.to.isValid())
        return {};
    const qint64 days = range.from.daysTo(range.to);
    const QDate d = range.from.date();
    QString name;
    if (days <= 1)
        name = d.toString(QStringLiteral("d MMMM yyyy"));
    else if (days >= 28 && days <= 31 && d.day() == 1)
        name = d.toString(QStringLiteral("MMMM yyyy"));
    else if (days >= 365 && days <= 366 && d.dayOfYear() == 1)
        name = d.toString(QStringLiteral("yyyy"));
    else
        name = QStringLiteral("week of %1").arg(d.toString(QStringLiteral("d MMMM yyyy")));
    return {name, QStringLiteral("date")};
}

void addTriplet(ExtractedGraph &g, const ExtractedEntity &s, const QString &label, const ExtractedEntity &d)
{
    const QString l = normalizedLabel(label);
    if (s.name.isEmpty() || d.name.isEmpty() || l.isEmpty() || s.name.compare(d.name, Qt::CaseInsensitive) == 0)
        return;
    ExtractedTriplet t{s, l, d, isExclusiveLabel(l), {}};
    for (const ExtractedTriplet &o : std::as_const(g.triplets))
        if (o.source == t.source && o.label == t.label && o.destination == t.destination)
            return;
    g.triplets << t;
    for (const ExtractedEntity &e : {s, d})
        if (!g.entities.contains(e))
            g.entities << e;
}

// "X is Y's Z" / "Y's Z is X" / "my Z is X": Y -Z-> X. True when the sentence was one of them.
bool possessives(const QList<Word> &w, const QString &speaker, ExtractedGraph &g)
{
    // Find "is"/"was"/"are".
    for (int k = 1; k + 1 < w.size(); ++k) {
        const QString l = w[k].lower();
        if (l != QLatin1String("is") && l != QLatin1String("was") && l != QLatin1String("are"))
            continue;
        // Left side "Y's Z" (or "my Z").
        int possessor = -1;
        for (int i = 0; i < k; ++i) {
            bool p = false;
            withoutPossessive(w[i].text, &p);
            if (p || (i == 0 && possessiveFirstPerson().contains(w[i].lower())))
                possessor = i;
        }
        if (possessor >= 0 && possessor + 1 < k) {
            ExtractedEntity owner;
            if (possessiveFirstPerson().contains(w[possessor].lower())) {
                owner = {speaker, QStringLiteral("person")};
            } else {
                bool p = false;
                owner = {withoutPossessive(joined(w, 0, possessor + 1), &p), QStringLiteral("entity")};
                if (!w[0].capitalised())
                    continue;
            }
            int end = 0;
            const ExtractedEntity value = nounPhrase(w, k + 1, &end, speaker, false);
            addTriplet(g, owner, joined(w, possessor + 1, k), value);
            return !value.name.isEmpty();
        }
        // Right side "Y's Z": "Maria is Tom's sister".
        bool p = false;
        const QString owner = withoutPossessive(w[k + 1].text, &p);
        if (p && k + 2 < w.size() && w[k + 1].capitalised()) {
            int end = 0;
            const ExtractedEntity subject = nounPhrase(w, 0, &end, speaker, false);
            if (end != k)
                return false;
            int relEnd = k + 2;
            while (relEnd < w.size() && relEnd - (k + 2) < 2 && !w[relEnd - 1].clauseEnd && !phraseEnds().contains(w[relEnd].lower()))
                ++relEnd;
            addTriplet(g, {owner, QStringLiteral("entity")}, joined(w, k + 2, relEnd), subject);
            return true;
        }
        return false;
    }
    return false;
}

// The event of a dated sentence, named by what happened: "Alice moved to Porto".
ExtractedEntity eventEntity(const ExtractedEntity &subject, const QString &label, const ExtractedEntity &object)
{
    QString name = subject.name + QLatin1Char(' ') + QString(label).replace(QLatin1Char('_'), QLatin1Char(' '));
    if (!object.name.isEmpty())
        name += QLatin1Char(' ') + object.name;
    return {name, QStringLiteral("event")};
}

// `lastNamed`: the last person the record named (he, she and they as a subject mean them); updated.
void sentenceGraph(const QString &sentence, const QString &speaker, const QDateTime &at, QString &lastNamed, ExtractedGraph &g)
{
    const QList<Word> w = wordsOf(sentence);
    if (w.size() < 2)
        return;
    const qsizetype before = g.triplets.size();
    const auto noteNamed = [&] {
        for (qsizetype k = before; k < g.triplets.size(); ++k)
            for (const ExtractedEntity &e : {g.triplets[k].source, g.triplets[k].destination})
                if (e.type == QLatin1String("entity") || (e.type == QLatin1String("person") && e.name != speaker))
                    lastNamed = e.name;
    };
    if (possessives(w, speaker, g)) {
        noteNamed();
        return;
    }
    int i = 0;
    // An opening clause ("Last week, I went ...") is passed over up to its comma.
    for (int k = 0; k < std::min<int>(w.size() - 1, 5); ++k)
        if (w[k].clauseEnd) {
            i = k + 1;
            break;
        }
    int end = i;
    ExtractedEntity subject;
    if (i < w.size() && thirdPerson().contains(w[i].lower())) {
        if (lastNamed.isEmpty())
            return; // nobody to resolve it to
        subject = {lastNamed, QStringLiteral("entity")};
        end = i + 1;
    } else {
        subject = nounPhrase(w, i, &end, speaker, false);
    }
    if (subject.name.isEmpty() || subject.type == QLatin1String("thing"))
        return;
    // The verb phrase.
    QStringList verb;
    int j = end;
    while (j < w.size() && verb.size() < 4) {
        const QString l = w[j].lower();
        if (negations().contains(l)) {
            verb << QStringLiteral("not");
        } else if (skippedInVerb().contains(l)) {
            if (l == QLatin1String("is") || l == QLatin1String("am") || l == QLatin1String("are") || l == QLatin1String("was")
                || l == QLatin1String("were"))
                verb << QStringLiteral("is");
        } else if (w[j].capitalised() || determiners().contains(l) || possessiveFirstPerson().contains(l)
                   || l.front().isDigit() || phraseEnds().contains(l)) {
            break;
        } else if (prepositions().contains(l)) {
            if (!verb.isEmpty())
                verb << l;
            ++j;
            break;
        } else {
            if (verb.size() == 1 && verb[0] == QLatin1String("is"))
                verb.clear(); // "is going" -> "going"
            verb << l;
            if (w[j].clauseEnd) {
                ++j;
                break;
            }
            // A second content word is the object ("I love painting"), unless the first is a verb
            // that takes a particle ("gave up", "went back").
            if (j + 1 < w.size() && !prepositions().contains(w[j + 1].lower()) && !skippedInVerb().contains(w[j + 1].lower())
                && !negations().contains(w[j + 1].lower())) {
                ++j;
                break;
            }
        }
        ++j;
    }
    while (!verb.isEmpty() && verb.back() == QLatin1String("not"))
        verb.removeLast();
    if (verb.isEmpty())
        return;
    const QString label = verb.join(QLatin1Char('_'));
    const bool placeVerb = placePrepositions().contains(verb.back());
    int objectEnd = j;
    const ExtractedEntity object = nounPhrase(w, j, &objectEnd, speaker, placeVerb);
    addTriplet(g, subject, label, object);

    // Places later in the sentence: "... in Paris".
    const QString action = verb.size() > 1 && prepositions().contains(verb.back()) ? verb.mid(0, verb.size() - 1).join(QLatin1Char('_'))
                                                                                   : label;
    for (int k = std::max(objectEnd, j); k + 1 < w.size(); ++k) {
        const QString l = w[k].lower();
        if (!placePrepositions().contains(l) || !w[k + 1].capitalised() || notNames().contains(w[k + 1].lower())
            || calendarWords().contains(w[k + 1].lower()))
            continue;
        int placeEnd = 0;
        const ExtractedEntity place = nounPhrase(w, k + 1, &placeEnd, speaker, true);
        addTriplet(g, subject, action + QLatin1Char('_') + l, place);
        k = placeEnd - 1;
    }
    // A date: the event (what the subject did) -happened_on-> the day.
    if (at.isValid())
        if (const std::optional<TimeRange> range = TimeExpression::parse(sentence, at))
            addTriplet(g, eventEntity(subject, label, object), QStringLiteral("happened_on"), dateEntity(*range));
    noteNamed();
}

} // namespace

QString normalizedLabel(const QString &label)
{
    QString out;
    for (const QChar c : label.toCaseFolded()) {
        if (c.isLetterOrNumber())
            out += c;
        else if (c != QLatin1Char('\'') && !out.isEmpty() && !out.endsWith(QLatin1Char('_')))
            out += QLatin1Char('_');
    }
    while (out.endsWith(QLatin1Char('_')))
        out.chop(1);
    return out;
}

void withResidences(ExtractedGraph &g)
{
    QList<ExtractedTriplet> moves;
    for (ExtractedTriplet &t : g.triplets) {
        if (residenceLabels().contains(t.label)) {
            t.label = kResidence;
            t.exclusive = true;
        } else if (moveLabels().contains(t.label)) {
            moves << ExtractedTriplet{t.source, kResidence, t.destination, true, {}};
        }
    }
    for (const ExtractedTriplet &m : std::as_const(moves)) {
        bool known = false;
        for (const ExtractedTriplet &t : std::as_const(g.triplets))
            known = known || (t.source == m.source && t.label == m.label && t.destination == m.destination);
        if (!known)
            g.triplets << m;
    }
}

bool isExclusiveLabel(const QString &label)
{
    return exclusiveLabels().contains(label);
}

ExtractedGraph extract(const QString &text, const QDateTime &at)
{
    ExtractedGraph g;
    QString body = text;
    QString speaker = QStringLiteral("user");
    static const QRegularExpression prefix(QStringLiteral("^\\s*([A-Z][\\w.'-]*(?: [A-Z][\\w.'-]*)?):\\s+"));
    const QRegularExpressionMatch m = prefix.match(body);
    if (m.hasMatch()) {
        speaker = m.captured(1);
        body = body.mid(m.capturedEnd());
    }
    QString lastNamed;
    for (const QString &sentence : StatementSplitter::split(body))
        sentenceGraph(sentence, speaker, at, lastNamed, g);
    withResidences(g);
    return g;
}

QStringList queryNames(const QString &query)
{
    QStringList out;
    const QList<Word> w = wordsOf(query);
    QStringList content;
    for (int i = 0; i < w.size(); ++i) {
        bool p = false;
        const QString word = withoutPossessive(w[i].text, &p);
        if (w[i].capitalised() && !notNames().contains(w[i].lower())) {
            const int j = nameEnd(w, i);
            bool q = false;
            out << withoutPossessive(joined(w, i, j), &q);
        }
        if (!StopWords::isEnglish(word.toLower().toStdString()))
            content << word;
        else
            content << QString();
    }
    for (int i = 0; i < content.size(); ++i) {
        if (content[i].isEmpty())
            continue;
        out << content[i];
        if (i + 1 < content.size() && !content[i + 1].isEmpty())
            out << content[i] + QLatin1Char(' ') + content[i + 1];
    }
    out.removeDuplicates();
    return out;
}

} // namespace mneme::OfflineGraphExtractor
