#pragma once

#include <QByteArray>
#include <QList>
#include <QString>

namespace mneme::cli {

// The lines of a UTF-8 text file (or of standard input), read whole and validated before anything
// is done with them, so that a bad line can stop a command before it stores anything.
class InputLines
{
public:
    struct Line
    {
        int number = 0; // 1-based
        QString text;   // without the line break
    };

    // Reads FILE, or standard input when `file` is "-". Throws Error(InvalidArgument) when the file
    // cannot be read or is not valid UTF-8 (naming the first bad line).
    static InputLines read(const QString &file);
    // The whole text of FILE (standard input for "-"), validated as UTF-8 but not split.
    static QString readText(const QString &file);
    // Splits and validates bytes; `name` is used in messages.
    static InputLines fromBytes(const QByteArray &bytes, const QString &name);

    // "notes.jsonl" or "standard input".
    const QString &name() const { return m_name; }
    const QList<Line> &lines() const { return m_lines; }
    // The lines that hold more than white space.
    QList<Line> nonBlankLines() const;
    // "notes.jsonl line 3: <what>", for messages about one line.
    QString where(const Line &line, const QString &what) const;

private:
    static QByteArray readBytes(const QString &file, QString *name);

    QString m_name;
    QList<Line> m_lines;
};

} // namespace mneme::cli
