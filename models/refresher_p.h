#pragma once

// Coalesced refreshes of a model. Private; not installed.

#include <QObject>
#include <QTimer>
#include <functional>

namespace mneme::models {

// Turns a stream of change notices (Memory::recordsChanged, once per write, thousands during a bulk
// import) into few refreshes: the first notice starts one after `delayMs`; notices that come while
// one is pending or running are folded into one more, started `delayMs` after the running one ends.
// So at most one refresh runs at a time and the model shows every change within about two delays.
class Refresher : public QObject
{
    Q_OBJECT
public:
    // `start` begins a refresh; the model calls finished() when its results are in.
    Refresher(QObject *parent, std::function<void()> start, int delayMs = 150);

    // Something changed: a refresh will run.
    void request();
    // The refresh `start` began is over (its results applied, or it failed).
    void finished();
    // Drops what is pending (the model reloads from scratch anyway).
    void cancel();
    bool isRunning() const { return m_running; }

private:
    void fire();

    std::function<void()> m_start;
    QTimer m_timer;
    bool m_running = false;
    bool m_again = false;
};

} // namespace mneme::models
