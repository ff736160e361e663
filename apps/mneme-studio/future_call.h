#pragma once

#include <mneme/core/error.h>

#include <QFuture>
#include <QFutureWatcher>
#include <QObject>
#include <exception>

namespace mneme::studio {

// Calls done(future) on `context`'s thread once `future` has finished, with a result or a failure;
// never waits. Nothing is called when `context` is destroyed first.
template<typename T, typename F>
void whenDone(QObject *context, const QFuture<T> &future, F done)
{
    auto *watcher = new QFutureWatcher<T>(context);
    QObject::connect(watcher, &QFutureWatcherBase::finished, context, [watcher, done]() {
        watcher->deleteLater();
        done(watcher->future());
    });
    watcher->setFuture(future);
}

// The message of the failure a finished future carries; empty when it succeeded.
template<typename T>
QString failureOf(QFuture<T> future)
{
    try {
        future.waitForFinished(); // finished already: rethrows what the work threw
    } catch (const Error &e) {
        return e.message();
    } catch (const std::exception &e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

} // namespace mneme::studio
