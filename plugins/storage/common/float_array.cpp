#include "float_array.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

namespace mneme {

namespace {

constexpr std::size_t kGranule = std::size_t(2) << 20; // the mapping grows by whole 2 MB pages

std::size_t roundUp(std::size_t bytes)
{
    return (bytes + kGranule - 1) / kGranule * kGranule;
}

} // namespace

void adviseHugePages(void *block, std::size_t bytes)
{
#ifdef MADV_HUGEPAGE
    const std::uintptr_t page = std::uintptr_t(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(block) & ~(page - 1);
    const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(block) + bytes + page - 1) & ~(page - 1);
    if (block && bytes >= kGranule)
        ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_HUGEPAGE);
#else
    (void)block;
    (void)bytes;
#endif
}

void adviseHugePagesOfAllocation(void *block)
{
    if (block)
        adviseHugePages(block, ::malloc_usable_size(block));
}

FloatArray::FloatArray(const FloatArray &other)
{
    *this = other;
}

FloatArray::FloatArray(FloatArray &&other) noexcept
{
    *this = std::move(other);
}

FloatArray &FloatArray::operator=(const FloatArray &other)
{
    if (this == &other)
        return *this;
    if (m_bytes < other.m_size * sizeof(float)) {
        FloatArray fresh;
        fresh.reserveBytes(other.m_size * sizeof(float)); // may throw: this array is left as it was
        *this = std::move(fresh);
    }
    if (other.m_size > 0)
        std::memcpy(m_data, other.m_data, other.m_size * sizeof(float));
    m_size = other.m_size;
    m_used = std::max(m_used, m_size);
    return *this;
}

FloatArray &FloatArray::operator=(FloatArray &&other) noexcept
{
    if (this == &other)
        return *this;
    release();
    m_data = other.m_data;
    m_size = other.m_size;
    m_used = other.m_used;
    m_bytes = other.m_bytes;
    other.m_data = nullptr;
    other.m_size = other.m_used = other.m_bytes = 0;
    return *this;
}

FloatArray::~FloatArray()
{
    release();
}

void FloatArray::release()
{
    if (m_data)
        ::munmap(m_data, m_bytes);
    m_data = nullptr;
    m_size = m_used = m_bytes = 0;
}

void FloatArray::reserveBytes(std::size_t bytes)
{
    if (bytes <= m_bytes)
        return;
    // Half as much again as now at least, so that growing one element at a time stays amortised.
    const std::size_t want = roundUp(std::max(bytes, m_bytes + m_bytes / 2));
    void *block = m_data ? ::mremap(m_data, m_bytes, want, MREMAP_MAYMOVE)
                         : ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED)
        throw std::bad_alloc();
    adviseHugePages(block, want);
    m_data = static_cast<float *>(block);
    m_bytes = want;
}

void FloatArray::resize(std::size_t count)
{
    if (count > (std::size_t(-1) - kGranule) / (2 * sizeof(float)))
        throw std::bad_alloc();
    if (count > m_bytes / sizeof(float))
        reserveBytes(count * sizeof(float));
    // Elements once written and given up by a shrink read as zero again; those never written are.
    if (count > m_size && m_used > m_size)
        std::fill(m_data + m_size, m_data + std::min(count, m_used), 0.0f);
    m_size = count;
    m_used = std::max(m_used, count);
}

} // namespace mneme
