#include "memory/serial_executor_p.h"

#include <pthread.h>
#include <utility>

namespace mneme {

SerialExecutor::SerialExecutor(const char *threadName)
{
    m_thread = std::thread([this] { loop(); });
    pthread_setname_np(m_thread.native_handle(), threadName);
}

SerialExecutor::~SerialExecutor()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    m_thread.join();
}

void SerialExecutor::post(std::function<void()> job)
{
    {
        std::lock_guard lock(m_mutex);
        m_jobs.push_back(std::move(job));
    }
    m_wake.notify_one();
}

bool SerialExecutor::postLater(std::function<void()> job, int delayMs)
{
    {
        std::lock_guard lock(m_mutex);
        if (m_deferred)
            return false;
        m_deferred = std::move(job);
        m_deferredAt = std::chrono::steady_clock::now() + std::chrono::milliseconds(delayMs);
    }
    m_wake.notify_one();
    return true;
}

void SerialExecutor::waitForIdle()
{
    if (isCurrentThread())
        return; // a job waiting for its own queue would wait forever
    std::unique_lock lock(m_mutex);
    m_idle.wait(lock, [this] { return m_jobs.empty() && !m_running; });
}

bool SerialExecutor::isCurrentThread() const
{
    return std::this_thread::get_id() == m_thread.get_id();
}

void SerialExecutor::loop()
{
    std::unique_lock lock(m_mutex);
    for (;;) {
        const auto ready = [this] { return m_stop || !m_jobs.empty(); };
        if (m_deferred)
            m_wake.wait_until(lock, m_deferredAt, ready);
        else // a deferred job arriving wakes it too, to wait for its time
            m_wake.wait(lock, [&] { return ready() || m_deferred; });
        if (m_deferred && !m_stop && std::chrono::steady_clock::now() >= m_deferredAt)
            m_jobs.push_back(std::exchange(m_deferred, nullptr));
        if (m_jobs.empty()) {
            if (m_stop)
                return; // stopping, and everything queued has run
            continue;   // woken for the deferred job, not yet due
        }
        std::function<void()> job = std::move(m_jobs.front());
        m_jobs.pop_front();
        m_running = true;
        lock.unlock();
        try {
            job();
        } catch (...) {
            // post() jobs report their own failures; submit() jobs carry them in their future.
        }
        job = nullptr;
        lock.lock();
        m_running = false;
        if (m_jobs.empty())
            m_idle.notify_all();
    }
}

} // namespace mneme
