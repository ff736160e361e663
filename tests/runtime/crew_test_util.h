#pragma once

// Helpers shared by the crew tests: an event recorder, waiting on a future while the event loop
// runs, and the shape checks of an event stream.

#include "scripted_llm.h"
#include <mneme/core/error.h>
#include <mneme/runtime/event_bus.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFuture>
#include <QHash>
#include <QMutex>
#include <QThread>
#include <atomic>

namespace mneme::test {

// Every event a bus publishes, from any thread.
class EventRecorder
{
public:
    explicit EventRecorder(EventBus *bus)
    {
        m_connection = QObject::connect(
            bus, &EventBus::eventPublished, bus, [this](const Event &e) {
                QMutexLocker lock(&m_mutex);
                m_events << e;
            },
            Qt::DirectConnection);
    }
    ~EventRecorder() { QObject::disconnect(m_connection); }
    EventRecorder(const EventRecorder &) = delete;
    EventRecorder &operator=(const EventRecorder &) = delete;
    QList<Event> events() const
    {
        QMutexLocker lock(&m_mutex);
        return m_events;
    }
    QList<Event> ofType(const char *type) const
    {
        QList<Event> out;
        for (const Event &e : events())
            if (e.type == QLatin1String(type))
                out << e;
        return out;
    }
    QStringList types() const
    {
        QStringList out;
        for (const Event &e : events())
            out << e.type;
        return out;
    }
    // Problems with the stream's pairing: every end event's parent is an earlier start of the
    // matching type, every start is ended exactly once, and every other parent is an earlier event.
    QStringList pairingProblems() const
    {
        QStringList problems;
        QHash<QString, Event> seen;
        QHash<QString, int> ends;
        for (const Event &e : events()) {
            const QString startType = events::startTypeOf(e.type);
            if (!startType.isEmpty()) {
                if (!seen.contains(e.parentId) || seen[e.parentId].type != startType)
                    problems << QStringLiteral("%1 does not close an earlier %2").arg(e.type, startType);
                else
                    ++ends[e.parentId];
            } else if (!e.parentId.isEmpty() && !seen.contains(e.parentId)) {
                problems << QStringLiteral("%1 has a parent that was not published before it").arg(e.type);
            }
            seen.insert(e.id, e);
        }
        for (const Event &e : seen)
            if (events::isStartType(e.type) && ends.value(e.id) != 1)
                problems << QStringLiteral("%1 %2 is closed %3 times").arg(e.type, e.id).arg(ends.value(e.id));
        return problems;
    }

private:
    QMetaObject::Connection m_connection;
    mutable QMutex m_mutex;
    QList<Event> m_events;
};

// Runs the event loop until the future ends (or the time is up); true when it ended.
template<typename T>
bool finish(const QFuture<T> &future, int timeoutMs = 30000)
{
    QElapsedTimer clock;
    clock.start();
    while (!future.isFinished() && clock.elapsed() < timeoutMs) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QThread::msleep(2);
    }
    QCoreApplication::processEvents();
    return future.isFinished();
}

// The Error a finished future failed with (Internal "no error" when it did not).
template<typename T>
Error failureOf(QFuture<T> future)
{
    try {
        future.waitForFinished();
    } catch (const Error &e) {
        return e;
    }
    return Error(ErrorKind::Internal, future.isCanceled() ? QStringLiteral("cancelled") : QStringLiteral("no error"));
}

// Answers the n-th request with the n-th reply (the last one again after that).
inline ScriptedLlm::Responder sequence(QList<ScriptedReply> replies)
{
    auto next = std::make_shared<std::atomic_int>(0);
    return [replies, next](const Json &) { return replies[std::min<qsizetype>(next->fetch_add(1), replies.size() - 1)]; };
}

} // namespace mneme::test
