#pragma once

#include <QFuture>
#include <QThread>
#include <functional>

namespace mneme {

// Turns a wait that could never end into an error. The run behind a crew's or a flow's future
// advances on its owner's event loop; a thread that blocks on that future (future.result(),
// waitForFinished()) while being the owner stops the loop the run needs, and would wait for ever.
//
// How: Qt lets a thread that waits on a future run the future's queued task itself before it blocks
// (QFutureInterfaceBase::setRunnable / setThreadPool, the mechanism QtConcurrent::run uses). arm()
// queues a task for the future in a pool that never runs it, so only a waiting thread ever does:
// on the owner's thread it calls `onBlocked`, which must finish the future (fail it) before it
// returns, and the wait returns with that failure at once; on any other thread it does nothing
// (that thread may wait: the owner's loop advances the run). The task is taken out of the queue when
// the future finishes.
class BlockingWaitGuard
{
public:
    // Call on the owner's thread (it must run an event loop), when the future is made.
    static void arm(const QFuture<void> &future, QThread *owner, std::function<void()> onBlocked);
};

} // namespace mneme
