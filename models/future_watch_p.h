#pragma once

// Delivery of QFuture results to a QObject's thread. Private; not installed.

#include <mneme/core/error.h>

#include <QFuture>
#include <QFutureWatcher>
#include <QObject>
#include <exception>
#include <optional>
#include <utility>

namespace mneme::models {

// Calls `done(future)` on `context`'s thread once `future` has finished (or was cancelled), unless
// `context` is destroyed first: the watcher is its child.
template<typename T, typename F>
void whenFinished(QObject *context, const QFuture<T> &future, F &&done)
{
    auto *watcher = new QFutureWatcher<T>(context);
    QObject::connect(watcher, &QFutureWatcherBase::finished, context, [watcher, done = std::forward<F>(done)]() mutable {
        watcher->deleteLater();
        done(watcher->future());
    });
    watcher->setFuture(future);
}

// The result of a finished future, or nothing with `error` set to what it failed with (empty when it
// was cancelled).
template<typename T>
std::optional<T> resultOf(QFuture<T> future, QString *error)
{
    error->clear();
    try {
        if (future.isCanceled() && future.resultCount() == 0) {
            future.waitForFinished(); // rethrows a failure reported with the cancellation
            return std::nullopt;
        }
        return future.result();
    } catch (const Error &e) {
        *error = e.message();
    } catch (const std::exception &e) {
        *error = QString::fromUtf8(e.what());
    }
    return std::nullopt;
}

} // namespace mneme::models
