#include "console.h"

#include <QMutexLocker>
#include <cstdio>
#include <unistd.h>

namespace mneme::cli {

namespace {

// The longest error line: a message quotes what it was given (bounded at the source), and this is
// the last guard against one that does not.
constexpr qsizetype kMaxErrorChars = 2000;

void put(std::FILE *stream, const QByteArray &bytes)
{
    std::fwrite(bytes.constData(), 1, size_t(bytes.size()), stream);
    std::fflush(stream);
}

Console *g_capturing = nullptr;
QtMessageHandler g_previousHandler = nullptr;

void routeMessage(QtMsgType type, const QMessageLogContext &, const QString &message)
{
    Console *console = g_capturing;
    if (!console)
        return;
    if (type == QtWarningMsg || type == QtCriticalMsg)
        console->warning(message);
    else if (type == QtFatalMsg)
        console->error(message);
    else
        console->event(message);
}

} // namespace

Console::~Console()
{
    if (m_capturing) {
        qInstallMessageHandler(g_previousHandler);
        g_capturing = nullptr;
    }
}

void Console::captureLogMessages()
{
    if (m_capturing)
        return;
    m_capturing = true;
    g_capturing = this;
    g_previousHandler = qInstallMessageHandler(routeMessage);
}

void Console::warning(const QString &message)
{
    const QString line = QStringLiteral("mneme: warning: ") + oneLine(message);
    if (m_verbose) {
        QMutexLocker lock(&m_mutex);
        put(stderr, (line + QLatin1Char('\n')).toUtf8());
        return;
    }
    QMutexLocker lock(&m_mutex);
    if (!m_warnings.contains(line))
        m_warnings << line;
}

void Console::showWarnings()
{
    QMutexLocker lock(&m_mutex);
    if (!m_quiet)
        for (const QString &line : std::as_const(m_warnings))
            put(stderr, (line + QLatin1Char('\n')).toUtf8());
    m_warnings.clear();
}

void Console::dropWarnings()
{
    QMutexLocker lock(&m_mutex);
    m_warnings.clear();
}

void Console::write(const QString &text)
{
    writeBytes(text.toUtf8());
}

void Console::writeBytes(const QByteArray &bytes)
{
    QMutexLocker lock(&m_mutex);
    put(stdout, bytes);
}

void Console::writeJson(const Json &document)
{
    const std::string text = document.dump(2, ' ', false, Json::error_handler_t::replace) + '\n';
    writeBytes(QByteArray::fromStdString(text));
}

void Console::error(const QString &message)
{
    QMutexLocker lock(&m_mutex);
    QString line = oneLine(message);
    if (line.size() > kMaxErrorChars)
        line = line.left(kMaxErrorChars) + QStringLiteral("...");
    put(stderr, (QStringLiteral("mneme: ") + line + QLatin1Char('\n')).toUtf8());
}

void Console::writeError(const QString &text)
{
    QMutexLocker lock(&m_mutex);
    put(stderr, text.toUtf8());
}

QString Console::counted(qint64 n, const QString &noun, const QString &plural)
{
    const QString word = n == 1 ? noun : (plural.isEmpty() ? noun + QLatin1Char('s') : plural);
    return QStringLiteral("%1 %2").arg(n).arg(word);
}

void Console::notice(const QString &message)
{
    if (m_quiet)
        return;
    QMutexLocker lock(&m_mutex);
    put(stderr, (message + QLatin1Char('\n')).toUtf8());
}

void Console::event(const QString &message)
{
    if (!m_verbose)
        return;
    QMutexLocker lock(&m_mutex);
    put(stderr, (QStringLiteral("mneme: ") + oneLine(message) + QLatin1Char('\n')).toUtf8());
}

void Console::progress(const QString &text)
{
    if (m_quiet)
        return;
    QMutexLocker lock(&m_mutex);
    put(stderr, text.toUtf8());
}

bool Console::stderrIsTerminal()
{
    return ::isatty(STDERR_FILENO) == 1;
}

bool Console::stdinIsTerminal()
{
    return ::isatty(STDIN_FILENO) == 1;
}

QString Console::oneLine(const QString &text)
{
    QString out;
    out.reserve(text.size());
    const QString trimmed = text.trimmed();
    for (const QChar c : trimmed) {
        if (c == QLatin1Char('\n') || c == QLatin1Char('\r') || c == QLatin1Char('\t'))
            out += QLatin1Char(' ');
        else if (c.category() == QChar::Other_Control || c.unicode() == 0x7f)
            out += QStringLiteral("\\u%1").arg(c.unicode(), 4, 16, QLatin1Char('0'));
        else
            out += c;
    }
    return out;
}

} // namespace mneme::cli
