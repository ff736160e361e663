#include "progress_bar.h"

#include "console.h"

namespace mneme::cli {

namespace {
constexpr int kBarWidth = 30;
}

ProgressBar::ProgressBar(Console &console, const QString &label, qint64 total)
    : m_console(console),
      m_label(label),
      m_total(std::max<qint64>(total, 0)),
      m_shown(total > 0 && !console.isQuiet() && Console::stderrIsTerminal())
{
    m_timer.start();
    if (m_shown)
        draw(0);
}

ProgressBar::~ProgressBar()
{
    // A bar left unfinished (an error stopped the work) still ends its line, so the error message
    // that follows starts on a fresh one.
    if (m_shown && !m_finished)
        m_console.progress(QStringLiteral("\n"));
}

void ProgressBar::update(qint64 done)
{
    if (!m_shown || m_finished)
        return;
    const int permille = int(std::clamp<qint64>(done, 0, m_total) * 1000 / m_total);
    if (permille == m_lastPermille)
        return;
    draw(done);
}

void ProgressBar::finish()
{
    if (!m_shown || m_finished)
        return;
    if (m_lastPermille != 1000)
        draw(m_total);
    m_finished = true;
    m_console.progress(QStringLiteral("\n"));
}

void ProgressBar::draw(qint64 done)
{
    done = std::clamp<qint64>(done, 0, m_total);
    m_lastPermille = int(done * 1000 / m_total);
    const int filled = int(done * kBarWidth / m_total);
    const QString bar = QString(filled, QLatin1Char('#')) + QString(kBarWidth - filled, QLatin1Char('-'));
    const double seconds = double(m_timer.elapsed()) / 1000.0;
    m_console.progress(QStringLiteral("\r%1 [%2] %3/%4 %5% %6s")
                           .arg(m_label, bar, QString::number(done), QString::number(m_total),
                                QString::number(m_lastPermille / 10).rightJustified(3),
                                QString::number(seconds, 'f', 1)));
}

} // namespace mneme::cli
