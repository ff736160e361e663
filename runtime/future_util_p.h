#pragma once

// Internal to Mneme's runtime and flows: small helpers for QFutures whose work ends on the event loop.

#include <mneme/core/error.h>

#include <QFuture>
#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <exception>

namespace mneme {

// The exception `error` holds as an Error: a mneme::Error as it is, a std::exception's text in
// Error(Internal), anything else as an Internal error saying so.
inline Error errorFrom(std::exception_ptr error)
{
    try {
        std::rethrow_exception(error);
    } catch (const Error &e) {
        return e;
    } catch (const std::exception &e) {
        return Error(ErrorKind::Internal, QString::fromUtf8(e.what()));
    } catch (...) {
        return Error(ErrorKind::Internal, QStringLiteral("an exception that is not a std::exception"));
    }
}

// Why a finished future has no result: its exception as an Error, or Error(Cancelled, `cancelled`)
// when it was cancelled.
template<typename T>
Error failureOf(QFuture<T> future, const QString &cancelled = QStringLiteral("cancelled"))
{
    try {
        future.waitForFinished(); // finished already: rethrows the stored exception without waiting
    } catch (...) {
        return errorFrom(std::current_exception());
    }
    return Error(ErrorKind::Cancelled, cancelled);
}

// Calls fn(future) on `context`'s thread once the future has finished (or never, when `context` goes
// first).
template<typename T, typename F>
void whenFinished(QObject *context, const QFuture<T> &future, F fn)
{
    auto *watcher = new QFutureWatcher<T>(context);
    QObject::connect(watcher, &QFutureWatcherBase::finished, context, [watcher, fn]() mutable {
        watcher->deleteLater();
        fn(watcher->future());
    });
    watcher->setFuture(future);
}

} // namespace mneme
