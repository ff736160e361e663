#include "models/refresher_p.h"

namespace mneme::models {

Refresher::Refresher(QObject *parent, std::function<void()> start, int delayMs)
    : QObject(parent), m_start(std::move(start))
{
    m_timer.setSingleShot(true);
    m_timer.setInterval(delayMs);
    connect(&m_timer, &QTimer::timeout, this, &Refresher::fire);
}

void Refresher::request()
{
    if (m_running) {
        m_again = true;
        return;
    }
    if (!m_timer.isActive())
        m_timer.start();
}

void Refresher::finished()
{
    m_running = false;
    if (m_again) {
        m_again = false;
        m_timer.start();
    }
}

void Refresher::cancel()
{
    m_timer.stop();
    m_again = false;
    m_running = false;
}

void Refresher::fire()
{
    m_running = true;
    m_start();
}

} // namespace mneme::models
