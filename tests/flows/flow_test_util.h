#pragma once

// Helpers shared by the flow tests.

#include <mneme/core/error.h>
#include <mneme/core/json.h>
#include <mneme/flows/flow_options.h>
#include <mneme/flows/flow_persistence.h>

#include <QFuture>
#include <QHash>
#include <QMutex>
#include <QPromise>
#include <QStringList>
#include <QTimer>
#include <memory>
#include <optional>

namespace mneme::test {

// Options for a flow that needs no memory: nothing is opened on disk.
inline FlowOptions offline()
{
    FlowOptions o;
    o.memory = false;
    return o;
}

// What the steps did, in order; steps run on the pool, so it is thread-safe.
class Trace
{
public:
    void add(const QString &entry)
    {
        QMutexLocker lock(&m_mutex);
        m_entries << entry;
    }
    QStringList list() const
    {
        QMutexLocker lock(&m_mutex);
        return m_entries;
    }
    int count(const QString &entry) const { return int(list().count(entry)); }
    int indexOf(const QString &entry) const { return int(list().indexOf(entry)); }

private:
    mutable QMutex m_mutex;
    QStringList m_entries;
};

// A persistence in memory that lists the steps it saved after, and fails the saves after the step
// named `failAfter`.
class RecordingPersistence : public FlowPersistence
{
public:
    explicit RecordingPersistence(const QString &failAfter = {}) : m_failAfter(failAfter) {}
    void saveState(const QString &flowId, const QString &stepName, const Json &state) override
    {
        if (stepName == m_failAfter)
            throw Error(ErrorKind::Storage, QStringLiteral("the disk is full"));
        QMutexLocker lock(&m_mutex);
        m_steps << stepName;
        m_states[flowId] = state;
    }
    std::optional<Json> loadState(const QString &flowId) override
    {
        QMutexLocker lock(&m_mutex);
        return m_states.contains(flowId) ? std::optional<Json>(m_states.value(flowId)) : std::nullopt;
    }
    QString location() const override { return QStringLiteral("memory"); }
    QStringList savedSteps() const
    {
        QMutexLocker lock(&m_mutex);
        return m_steps;
    }

private:
    const QString m_failAfter;
    mutable QMutex m_mutex;
    QStringList m_steps;
    QHash<QString, Json> m_states;
};

// A future that gives `value` after `ms` milliseconds, from a timer of the calling thread: a real
// asynchronous source that needs the event loop running. Cancelling it before then drops the value.
template<typename T>
QFuture<T> later(int ms, T value)
{
    auto promise = std::make_shared<QPromise<T>>();
    promise->start();
    QTimer::singleShot(ms, [promise, value]() {
        if (!promise->isCanceled())
            promise->addResult(value);
        promise->finish();
    });
    return promise->future();
}

} // namespace mneme::test
