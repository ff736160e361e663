#include "plugins/storage/common/index_build.h"

#include <algorithm>

namespace mneme {

int indexBuildThreads()
{
    return int(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

std::unique_ptr<IndexBuild> IndexBuild::start(const VectorIndex &flat)
{
    std::unique_ptr<IndexBuild> build(new IndexBuild);
    build->m_index = flat.flatCopy();
    if (!build->m_index)
        return nullptr;
    IndexBuild *b = build.get();
    const int threads = indexBuildThreads();
    b->m_thread = std::thread([b, threads] {
        try {
            b->m_built = b->m_index->buildAnn(threads, &b->m_cancel);
        } catch (...) {
            b->m_built = false; // out of memory: the store's index stays flat and exact
        }
        b->m_done = true;
    });
    return build;
}

IndexBuild::~IndexBuild()
{
    m_cancel = true;
    wait();
}

void IndexBuild::wait()
{
    if (m_thread.joinable())
        m_thread.join();
}

bool IndexBuild::handOver(VectorIndex &live)
{
    wait();
    if (!m_built || m_changed.size() > kMaxChanges)
        return false;
    for (const qint64 rowid : std::as_const(m_changed))
        m_index->copyRecord(live, rowid);
    live = std::move(*m_index);
    return true;
}

} // namespace mneme
