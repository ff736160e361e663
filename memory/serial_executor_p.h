#pragma once

#include <QException>
#include <QFuture>
#include <QPromise>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace mneme {

// One worker thread running jobs strictly in submission order. Unlike a QThreadPool task, a queued
// job is never taken over by a thread that waits on its future, so order and one-at-a-time hold.
class SerialExecutor
{
public:
    explicit SerialExecutor(const char *threadName);
    ~SerialExecutor(); // runs what is queued, then stops
    SerialExecutor(const SerialExecutor &) = delete;
    SerialExecutor &operator=(const SerialExecutor &) = delete;

    // Queues a job whose result (or exception) the future carries.
    template<typename T, typename F>
    QFuture<T> submit(F &&work)
    {
        auto promise = std::make_shared<QPromise<T>>();
        QFuture<T> future = promise->future();
        promise->start();
        post([promise, work = std::forward<F>(work)]() mutable {
            try {
                if constexpr (std::is_void_v<T>)
                    work();
                else
                    promise->addResult(work());
            } catch (const QException &e) {
                promise->setException(e);
            } catch (...) {
                promise->setException(std::current_exception());
            }
            promise->finish();
        });
        return future;
    }

    // Queues a job nobody waits for; its exceptions are swallowed.
    void post(std::function<void()> job);
    // Queues `job` once `delayMs` have passed, behind whatever is queued by then; meanwhile other jobs
    // run as they come. One deferred job at a time: while one is waiting this returns false and drops
    // `job`. A deferred job still waiting when the executor stops is dropped.
    bool postLater(std::function<void()> job, int delayMs);
    // Waits until every job queued so far has run.
    void waitForIdle();
    // True on the executor's own thread.
    bool isCurrentThread() const;

private:
    void loop();

    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_idle;
    std::deque<std::function<void()>> m_jobs;
    std::function<void()> m_deferred;
    std::chrono::steady_clock::time_point m_deferredAt;
    bool m_running = false;
    bool m_stop = false;
    std::thread m_thread;
};

} // namespace mneme
