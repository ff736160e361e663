#pragma once

#include <cstddef>

namespace mneme {

// Asks for 2 MB pages for the memory pages that [block, block + bytes) touches: memory that searches
// read at random (the graph's nodes, the float vectors) would otherwise lie on 4 KB pages of their
// own, and each miss of the processor's address cache walks the page tables (two levels of them in a
// virtual machine). The kernel gives 2 MB pages to the whole 2 MB pages inside. Pass a mapping's
// whole extent (a malloc() block's: adviseHugePagesOfAllocation()): advice on part of a mapping
// splits it, and a split mapping can no longer grow in place (mremap fails, and glibc's
// realloc() of a large block falls back to copying it). Advice only: where transparent huge pages
// are off, nothing changes.
void adviseHugePages(void *block, std::size_t bytes);

// The same for a block from malloc() or realloc(), to the end of its allocation (a large block is a
// mapping of its own, a little longer than asked for).
void adviseHugePagesOfAllocation(void *block);

// A growable array of floats in memory of its own (an anonymous mapping, 2 MB pages advised) that
// grows in place: the kernel moves or extends the mapping (mremap), so what it holds is never copied
// and new room is not written until it is used (fresh pages read as zero). std::vector copies its
// whole content and writes every new element each time it outgrows its capacity: for the float
// vectors of a large index, a gigabyte copied and another written on one thread while the graph's
// inserts wait. Elements added by resize() read as zero, as with std::vector.
//
// Not thread-safe: the owner's rules apply (VectorIndex: one thread at a time; the background
// inserts write only slots sized before they start, and nothing resizes the array meanwhile).
class FloatArray
{
public:
    FloatArray() = default;
    FloatArray(const FloatArray &other);
    FloatArray(FloatArray &&other) noexcept;
    FloatArray &operator=(const FloatArray &other);
    FloatArray &operator=(FloatArray &&other) noexcept;
    ~FloatArray();

    float *data() { return m_data; }
    const float *data() const { return m_data; }
    std::size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    float *begin() { return m_data; }
    float *end() { return m_data + m_size; }
    const float *begin() const { return m_data; }
    const float *end() const { return m_data + m_size; }

    // Grows (the new elements zero) or shrinks to `count` elements; throws std::bad_alloc when the
    // memory cannot be had, the content unchanged.
    void resize(std::size_t count);

private:
    void release();
    void reserveBytes(std::size_t bytes);

    float *m_data = nullptr;
    std::size_t m_size = 0;
    std::size_t m_used = 0;  // elements ever written through resize(): beyond them the pages are fresh (zero)
    std::size_t m_bytes = 0; // the mapping's length
};

} // namespace mneme
