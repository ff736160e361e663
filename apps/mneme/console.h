#pragma once

#include <QStringList>

#include <mneme/core/json.h>

#include <QByteArray>
#include <QMutex>
#include <QString>

namespace mneme::cli {

// Standard output and standard error of the CLI. Standard output carries the result (one JSON
// document in --json mode, tables otherwise); standard error carries errors, notices (unless
// --quiet) and events (with --verbose). Thread-safe: Memory's signals arrive from its worker threads.
class Console
{
public:
    Console() = default;

    void setQuiet(bool quiet) { m_quiet = quiet; }
    void setVerbose(bool verbose) { m_verbose = verbose; }
    bool isQuiet() const { return m_quiet; }
    bool isVerbose() const { return m_verbose; }

    // Standard output.
    void write(const QString &text);
    void writeBytes(const QByteArray &bytes);
    // One JSON document, pretty-printed, with a final newline.
    void writeJson(const Json &document);

    // Standard error: "mneme: <message>" on one line, always.
    void error(const QString &message);
    // Raw text on standard error, always (usage after a usage error).
    void writeError(const QString &text);
    // A line for people, unless --quiet.
    void notice(const QString &message);
    // A line of events and timings, with --verbose only.
    void event(const QString &message);
    // A warning of the libraries (a fallback, a damaged record): with --verbose at once, else kept
    // (once each) until the command ends: shown after it succeeded (unless --quiet), dropped when it
    // failed, whose one error line is then all of standard error.
    void warning(const QString &message);
    void showWarnings();
    void dropWarnings();
    // Routes Qt's log messages (qWarning, qCWarning, ...) of the whole process to this console while
    // it lives: warnings and criticals to warning(), the rest to event().
    void captureLogMessages();
    ~Console();
    // Raw text on standard error (the progress bar), unless --quiet.
    void progress(const QString &text);

    // Whether standard error / standard input is a terminal.
    static bool stderrIsTerminal();
    static bool stdinIsTerminal();
    // The text made safe for one line of a terminal: control characters escaped, newlines as spaces.
    static QString oneLine(const QString &text);
    // "1 record", "2 records": a count with its noun (plural `plural`, else the noun and an "s").
    static QString counted(qint64 n, const QString &noun, const QString &plural = {});

private:
    QMutex m_mutex;
    bool m_quiet = false;
    bool m_verbose = false;
    QStringList m_warnings;
    bool m_capturing = false;
};

} // namespace mneme::cli
