#pragma once

#include <QElapsedTimer>
#include <QString>

namespace mneme::cli {

class Console;

// A one-line progress bar on standard error ("storing [#######-----] 700/1000  70%"), redrawn in
// place. Shown only when standard error is a terminal and --quiet is off; otherwise every call does
// nothing, so callers need not check.
class ProgressBar
{
public:
    ProgressBar(Console &console, const QString &label, qint64 total);
    ~ProgressBar();
    ProgressBar(const ProgressBar &) = delete;
    ProgressBar &operator=(const ProgressBar &) = delete;

    bool isShown() const { return m_shown; }
    void update(qint64 done);
    // Draws the final state and ends the line. Called by the destructor when needed.
    void finish();

private:
    void draw(qint64 done);

    Console &m_console;
    QString m_label;
    qint64 m_total;
    bool m_shown;
    bool m_finished = false;
    int m_lastPermille = -1;
    QElapsedTimer m_timer;
};

} // namespace mneme::cli
