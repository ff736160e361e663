#include "memory/blocking_wait_guard_p.h"

#include <QFutureWatcher>
#include <QRunnable>
#include <QSemaphore>
#include <QThreadPool>

namespace mneme {

namespace {

// A pool whose one thread is parked for good, so every task queued in it stays queued until a
// waiting thread takes it (QThreadPool::tryTake). Created on first use and never destroyed: its
// parked thread would keep a destructor waiting.
QThreadPool &parkingPool()
{
    static QThreadPool *pool = [] {
        auto *p = new QThreadPool;
        p->setMaxThreadCount(1);
        p->setExpiryTimeout(-1);
        auto *parked = QRunnable::create([] {
            QSemaphore never;
            never.acquire();
        });
        p->start(parked);
        return p;
    }();
    return *pool;
}

class Trap : public QRunnable
{
public:
    Trap(QThread *owner, std::function<void()> onBlocked)
        : m_owner(owner), m_onBlocked(std::move(onBlocked))
    {
        setAutoDelete(true);
    }
    void run() override
    {
        if (QThread::currentThread() == m_owner && m_onBlocked)
            m_onBlocked();
    }

private:
    QThread *m_owner;
    std::function<void()> m_onBlocked;
};

} // namespace

void BlockingWaitGuard::arm(const QFuture<void> &future, QThread *owner, std::function<void()> onBlocked)
{
    QThreadPool &pool = parkingPool();
    auto *trap = new Trap(owner, std::move(onBlocked));
    QFutureInterfaceBase state = QFutureInterfaceBase::get(future);
    state.setThreadPool(&pool);
    state.setRunnable(trap);
    pool.start(trap);
    // Once the future is finished no wait takes the task: it leaves the queue (and is deleted) then.
    auto *watcher = new QFutureWatcher<void>;
    QObject::connect(watcher, &QFutureWatcherBase::finished, watcher, [watcher, trap] {
        if (parkingPool().tryTake(trap))
            delete trap;
        watcher->deleteLater();
    });
    watcher->setFuture(future);
}

} // namespace mneme
