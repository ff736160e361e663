#include "memory/statement_splitter_p.h"

#include <QRegularExpression>
#include <QSet>

namespace mneme::StatementSplitter {

namespace {

// Lower-cased words that end with a period without ending a sentence.
bool isAbbreviation(const QString &word)
{
    static const QSet<QString> known = {
        QStringLiteral("mr"),
        QStringLiteral("mrs"),
        QStringLiteral("ms"),
        QStringLiteral("dr"),
        QStringLiteral("prof"),
        QStringLiteral("sr"),
        QStringLiteral("jr"),
        QStringLiteral("st"),
        QStringLiteral("vs"),
        QStringLiteral("etc"),
        QStringLiteral("e.g"),
        QStringLiteral("i.e"),
        QStringLiteral("approx"),
        QStringLiteral("inc"),
        QStringLiteral("ltd"),
        QStringLiteral("co"),
        QStringLiteral("corp"),
        QStringLiteral("jan"),
        QStringLiteral("feb"),
        QStringLiteral("mar"),
        QStringLiteral("apr"),
        QStringLiteral("jun"),
        QStringLiteral("jul"),
        QStringLiteral("aug"),
        QStringLiteral("sep"),
        QStringLiteral("sept"),
        QStringLiteral("oct"),
        QStringLiteral("nov"),
        QStringLiteral("dec"),
        QStringLiteral("fig"),
        QStringLiteral("dept"),
        QStringLiteral("est"),
        QStringLiteral("min"),
        QStringLiteral("max"),
    };
    QString w = word.toLower();
    while (!w.isEmpty() && !w.front().isLetterOrNumber())
        w.remove(0, 1);
    // Initials and dotted abbreviations: "J.", "U.S", "a.m".
    if (w.size() == 1 && w.front().isLetter())
        return true;
    if (w.contains(QLatin1Char('.')) && w.size() <= 5)
        return true;
    return known.contains(w);
}

// The word that ends just before position `end` (exclusive) in `s`.
QString wordBefore(const QString &s, qsizetype end)
{
    qsizetype start = end;
    while (start > 0 && !s.at(start - 1).isSpace())
        --start;
    return s.mid(start, end - start);
}

bool opensSentence(QChar c)
{
    return c.isUpper() || c.isDigit() || c == QLatin1Char('"') || c == QLatin1Char('\'') || c == QChar(0x201C)
        || c == QChar(0x2018) || c == QLatin1Char('(');
}

// Splits one block (a paragraph or a list item) into sentences and clauses.
QStringList sentences(const QString &block)
{
    QStringList out;
    const QString s = block.simplified();
    qsizetype start = 0;
    for (qsizetype i = 0; i < s.size(); ++i) {
        const QChar c = s.at(i);
        bool cut = false;
        if (c == QLatin1Char(';')) {
            cut = true;
        } else if (c == QLatin1Char('.') || c == QLatin1Char('!') || c == QLatin1Char('?')) {
            // Take closing quotes and brackets with the sentence; a run of marks ("?!", "...") counts once.
            qsizetype end = i + 1;
            while (end < s.size() && (s.at(end) == QLatin1Char('.') || s.at(end) == QLatin1Char('!') || s.at(end) == QLatin1Char('?')))
                ++end;
            const bool ellipsis = end - i >= 3 && c == QLatin1Char('.');
            while (end < s.size() && (s.at(end) == QLatin1Char('"') || s.at(end) == QLatin1Char('\'') || s.at(end) == QChar(0x201D) || s.at(end) == QChar(0x2019) || s.at(end) == QLatin1Char(')')))
                ++end;
            const bool followedBySentence = end + 1 < s.size() && s.at(end) == QLatin1Char(' ') && opensSentence(s.at(end + 1));
            if (followedBySentence && !ellipsis && !(c == QLatin1Char('.') && end == i + 1 && isAbbreviation(wordBefore(s, i)))) {
                out << s.mid(start, end - start).trimmed();
                start = end;
            }
            i = end - 1;
            continue;
        }
        if (cut) {
            out << s.mid(start, i - start).trimmed();
            start = i + 1;
        }
    }
    out << s.mid(start).trimmed();
    return out;
}

} // namespace

QStringList split(const QString &text)
{
    static const QRegularExpression listMarker(QStringLiteral("^\\s*(?:[-*\\x{2022}\\x{2023}\\x{25E6}+]|\\d{1,3}[.)]|[a-z][.)])\\s+"));
    static const QRegularExpression heading(QStringLiteral("^[^.!?;]{1,60}:$"));

    // Blocks: paragraphs (blank-line separated, lines joined) and list items (one each).
    QStringList blocks;
    QString paragraph;
    const auto flush = [&] {
        if (!paragraph.trimmed().isEmpty())
            blocks << paragraph;
        paragraph.clear();
    };
    const QStringList lines = text.split(QRegularExpression(QStringLiteral("\\r\\n|\\r|\\n")));
    for (const QString &rawLine : lines) {
        const QString line = rawLine.trimmed();
        if (line.isEmpty()) {
            flush();
            continue;
        }
        const auto marker = listMarker.match(rawLine);
        if (marker.hasMatch()) {
            flush();
            blocks << rawLine.mid(marker.capturedLength());
            continue;
        }
        if (heading.match(line).hasMatch() && line.split(QLatin1Char(' '), Qt::SkipEmptyParts).size() <= 6) {
            flush();
            continue; // "Action items:" introduces what follows; it states nothing itself
        }
        paragraph += (paragraph.isEmpty() ? QString() : QStringLiteral(" ")) + line;
    }
    flush();

    QStringList out;
    QSet<QString> seen;
    for (const QString &block : blocks) {
        for (QString statement : sentences(block)) {
            statement = statement.trimmed();
            bool meaningful = false;
            for (const QChar c : statement) {
                if (c.isLetterOrNumber()) {
                    meaningful = true;
                    break;
                }
            }
            if (!meaningful)
                continue;
            const QString key = statement.toLower();
            if (seen.contains(key))
                continue;
            seen.insert(key);
            out << statement;
        }
    }
    return out;
}

} // namespace mneme::StatementSplitter
