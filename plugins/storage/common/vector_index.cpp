#include "vector_index.h"

#include <mneme/core/scope_path.h>
#include <mneme/core/vector_math.h>

#include <hnswlib/hnswlib.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLocale>
#include <QScopeGuard>
#include <queue>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

// How a walk of the graph reads its nodes' codes, shared by the insert's candidate search below and
// the query's walk (VectorIndex::graph): the unvisited neighbours of a node first, then their
// distances with the codes fetched ahead.
namespace mneme::graph_walk {

// Codes whose fetch into the cache runs ahead of the distance that reads them.
constexpr std::size_t kAhead = 8;

// Starts fetching a node's code (it spans several cache lines; hnswlib's own walk fetched one).
inline void prefetchCode(const hnswlib::HierarchicalNSW<float> &g, hnswlib::tableint id)
{
    const char *code = g.getDataByInternalId(id);
    for (std::size_t offset = 0; offset < g.data_size_; offset += 64)
        __builtin_prefetch(code + offset);
    __builtin_prefetch(code + g.data_size_ - 1);
}

// Whether a node is removed. Its mark is in its link list, a cache line of its own that a walk reads
// (fetched ahead) only when it expands the node: a graph without removals (a bulk load's) is not asked.
inline bool removed(const hnswlib::HierarchicalNSW<float> &g, hnswlib::tableint id)
{
    return g.num_deleted_ > 0 && g.isMarkedDeleted(id);
}

// The nodes of a link list not visited yet, marked visited now, into `out` (room for the list's
// count); their count. Collected before any distance, so that their codes can be fetched together.
inline std::size_t unvisited(const hnswlib::HierarchicalNSW<float> &g, const unsigned int *list, hnswlib::vl_type *visited,
                             hnswlib::vl_type tag, hnswlib::tableint *out)
{
    const std::size_t size = g.getListCount(const_cast<unsigned int *>(list));
    const hnswlib::tableint *ids = list + 1;
    for (std::size_t j = 0; j < size; ++j)
        __builtin_prefetch(visited + ids[j]);
    std::size_t count = 0;
    for (std::size_t j = 0; j < size; ++j) {
        if (visited[ids[j]] == tag)
            continue;
        visited[ids[j]] = tag;
        out[count++] = ids[j];
    }
    return count;
}

// Calls visit(id) for each of `count` nodes in order, their codes fetched kAhead nodes ahead.
template<typename Visit>
void visitFetchingAhead(const hnswlib::HierarchicalNSW<float> &g, const hnswlib::tableint *ids, std::size_t count, Visit visit)
{
    for (std::size_t k = 0; k < std::min(kAhead, count); ++k)
        prefetchCode(g, ids[k]);
    for (std::size_t k = 0; k < count; ++k) {
        if (k + kAhead < count)
            prefetchCode(g, ids[k + kAhead]);
        visit(ids[k]);
    }
}

} // namespace mneme::graph_walk

// The candidate search of a graph insert (hnswlib's searchBaseLayer, used by addPoint), written
// again for 8-bit codes that live far apart in memory: the same candidates, the same order and the
// same results, but an expanded node's unvisited neighbours are collected first (their list copied
// under the node's lock, which is then released) and the codes are fetched a few neighbours ahead of
// the distance that reads them, so that several cache misses overlap instead of one at a time (a
// code spans seven cache lines; the library fetched one line of the next neighbour). This file is
// the only one that includes hnswlib, so every use of the function in the program is this one.
template<>
std::priority_queue<std::pair<float, hnswlib::tableint>, std::vector<std::pair<float, hnswlib::tableint>>,
                    hnswlib::HierarchicalNSW<float>::CompareByFirst>
hnswlib::HierarchicalNSW<float>::searchBaseLayer(tableint ep_id, const void *data_point, int layer)
{
    using Queue = std::priority_queue<std::pair<float, tableint>, std::vector<std::pair<float, tableint>>, CompareByFirst>;
    VisitedList *vl = visited_list_pool_->getFreeVisitedList();
    vl_type *visited = vl->mass;
    const vl_type tag = vl->curV;
    Queue top_candidates;
    Queue candidateSet; // negated distances: nearest on top
    float lowerBound;
    if (!isMarkedDeleted(ep_id)) {
        const float dist = fstdistfunc_(data_point, getDataByInternalId(ep_id), dist_func_param_);
        top_candidates.emplace(dist, ep_id);
        lowerBound = dist;
        candidateSet.emplace(-dist, ep_id);
    } else {
        lowerBound = std::numeric_limits<float>::max();
        candidateSet.emplace(-lowerBound, ep_id);
    }
    visited[ep_id] = tag;
    std::vector<tableint> fresh(std::max(maxM0_, maxM_));
    while (!candidateSet.empty()) {
        const std::pair<float, tableint> current = candidateSet.top();
        if (-current.first > lowerBound && top_candidates.size() == ef_construction_)
            break;
        candidateSet.pop();
        std::size_t count = 0;
        {
            std::unique_lock<std::mutex> lock(link_list_locks_[current.second]);
            const linklistsizeint *list = layer == 0 ? get_linklist0(current.second) : get_linklist(current.second, layer);
            count = mneme::graph_walk::unvisited(*this, list, visited, tag, fresh.data());
        }
        mneme::graph_walk::visitFetchingAhead(*this, fresh.data(), count, [&](tableint id) {
            const float dist = fstdistfunc_(data_point, getDataByInternalId(id), dist_func_param_);
            if (top_candidates.size() < ef_construction_ || lowerBound > dist) {
                candidateSet.emplace(-dist, id);
                if (!mneme::graph_walk::removed(*this, id))
                    top_candidates.emplace(dist, id);
                if (top_candidates.size() > ef_construction_)
                    top_candidates.pop();
                if (!top_candidates.empty())
                    lowerBound = top_candidates.top().first;
            }
        });
        if (!candidateSet.empty()) { // the node expanded next: its lock and its list
            const tableint next = candidateSet.top().second;
            __builtin_prefetch(&link_list_locks_[next]);
            const char *list = reinterpret_cast<const char *>(layer == 0 ? get_linklist0(next) : get_linklist(next, layer));
            for (std::size_t offset = 0; offset < (layer == 0 ? size_links_level0_ : size_links_per_element_); offset += 64)
                __builtin_prefetch(list + offset);
        }
    }
    visited_list_pool_->releaseVisitedList(vl);
    return top_candidates;
}

namespace mneme {

namespace {

constexpr qint64 kUnknownTime = std::numeric_limits<qint64>::min();
constexpr char kMagic[8] = {'M', 'N', 'E', 'M', 'E', 'A', 'N', 'N'};
constexpr char kTrailer[8] = {'M', 'N', 'E', 'M', 'E', 'E', 'N', 'D'};
// 1: without the importance array; 2: with it; 3: with the identity arrays and a checksum of
// everything before the trailer; 4: the graph holds 8-bit codes of the vectors (codeBytes()), the
// float vectors follow it. Files of formats 1 and 2 are refused (their content cannot be checked)
// and the index is rebuilt from the records; a file of format 3 is read, its vectors quantised as
// they are read (and written as format 4 the next time the file is written).
constexpr quint32 kFormat = 4;
constexpr quint32 kFloatGraphFormat = 3;
constexpr quint32 kByteOrder = 0x01020304;

// How many slots ahead a screened scan asks for the codes it will read.
constexpr std::size_t kScreenAhead = 8;

bool better(const VectorIndex::Hit &a, const VectorIndex::Hit &b)
{
    if (a.score != b.score)
        return a.score > b.score;
    return a.rowid < b.rowid;
}

// The graph's copy of a normalised vector, its code: the quantisation scale (a float), the length of
// the rounding error (a float: |x - scale * codes|) and `dim` 8-bit codes (VectorMath::quantise). A
// code is about a quarter of the vector's bytes, so building and walking the graph reads a quarter of
// the memory; every score a search returns is computed again on the float vectors
// (VectorIndex::m_vectors).
constexpr std::size_t kCodeHeader = 2 * sizeof(float);

std::size_t codeBytes(std::size_t dim)
{
    return kCodeHeader + dim;
}

const std::int8_t *codeValues(const char *code)
{
    return reinterpret_cast<const std::int8_t *>(code + kCodeHeader);
}

float codeField(const char *code, int field)
{
    float v;
    std::memcpy(&v, code + field * sizeof(float), sizeof(float));
    return v;
}
float codeScale(const char *code)
{
    return codeField(code, 0);
}
float codeError(const char *code)
{
    return codeField(code, 1);
}

void encode(const float *unit, char *code, std::size_t dim)
{
    auto *values = reinterpret_cast<std::int8_t *>(code + kCodeHeader);
    const float scale = VectorMath::quantise(unit, values, dim);
    double error = 0;
    for (std::size_t i = 0; i < dim; ++i) {
        const double e = double(unit[i]) - double(scale) * double(values[i]);
        error += e * e;
    }
    const float length = float(std::sqrt(error));
    std::memcpy(code, &scale, sizeof(float));
    std::memcpy(code + sizeof(float), &length, sizeof(float));
}

// Whether n floats are all finite, without a branch per value (a million vectors are checked when an
// index file is read): an exponent of all ones is an infinity or a NaN. Sixteen independent lanes, so
// that the compiler keeps them in one vector register (a single accumulator was a loop through memory).
bool allFinite(const float *values, std::size_t n)
{
    constexpr std::size_t kLanes = 16;
    std::uint32_t special[kLanes] = {};
    const auto fold = [&](std::size_t lane, std::size_t i) {
        std::uint32_t bits;
        std::memcpy(&bits, values + i, sizeof bits);
        special[lane] |= (bits & 0x7f800000u) + 0x00800000u; // carries into the top bit when the exponent is all ones
    };
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (std::size_t lane = 0; lane < kLanes; ++lane)
            fold(lane, i + lane);
    for (std::size_t lane = 0; i < n; ++i, ++lane)
        fold(lane, i);
    std::uint32_t all = 0;
    for (std::uint32_t lane : special)
        all |= lane;
    return (all & 0x80000000u) == 0;
}

// Inner-product "distance" (1 - dot) of two codes, about that of their normalised vectors.
float codeDistance(const char *a, const char *b, std::size_t dim)
{
    return 1.0f - codeScale(a) * codeScale(b) * float(VectorMath::dotInt8(codeValues(a), codeValues(b), dim));
}

// The graph's space: codes, compared by codeDistance().
class CodeSpace : public hnswlib::SpaceInterface<float>
{
public:
    explicit CodeSpace(std::size_t dim)
        : m_dim(dim)
    {
    }
    std::size_t get_data_size() override { return codeBytes(m_dim); }
    hnswlib::DISTFUNC<float> get_dist_func() override { return &distance; }
    void *get_dist_func_param() override { return &m_dim; }

private:
    static float distance(const void *a, const void *b, const void *param)
    {
        return codeDistance(static_cast<const char *>(a), static_cast<const char *>(b), *static_cast<const std::size_t *>(param));
    }
    std::size_t m_dim;
};

using Graph = hnswlib::HierarchicalNSW<float>;

void normalise(const float *in, float *out, int dim)
{
    const float n = VectorMath::norm(in, std::size_t(dim));
    if (n > 0 && std::isfinite(n)) {
        const float inv = 1.0f / n;
        for (int i = 0; i < dim; ++i)
            out[i] = in[i] * inv;
    } else {
        std::fill(out, out + dim, 0.0f);
    }
}

// Makes room for `capacity` nodes in the graph: hnswlib reallocates its level-0 block, which glibc
// grows in place (mremap) as long as the whole block was advised, not part of it.
void growGraph(Graph &g, std::size_t capacity)
{
    g.resizeIndex(capacity);
    adviseHugePagesOfAllocation(g.data_level0_memory_);
}

// Adds `count` points to the graph with `threads` threads: point(i, scratch) gives the i-th vector,
// normalised (scratch: `dim` floats of the calling thread's own), label(i) its rowid; the graph gets
// its code, and placed(i, node, unit) is called with the node it became (a distinct node per thread:
// placed() may write that node's slot of an array sized beforehand). False when *cancel was set
// (some points may be in the graph then).
template<typename Point, typename Label, typename Placed>
bool addPoints(Graph &g, std::size_t count, int dim, int threads, const std::atomic<bool> *cancel, Point point, Label label,
               Placed placed)
{
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;
    std::mutex failureLock;
    auto work = [&] {
        std::vector<float> scratch(std::size_t(std::max(dim, 1)));
        std::vector<char> code(codeBytes(std::size_t(std::max(dim, 1))));
        try {
            for (std::size_t i = next++; i < count; i = next++) {
                if (cancel && cancel->load(std::memory_order_relaxed)) {
                    next = count;
                    break;
                }
                const float *unit = point(i, scratch.data());
                encode(unit, code.data(), std::size_t(dim));
                placed(i, g.addPoint(code.data(), hnswlib::labeltype(label(i)), -1), unit);
            }
        } catch (...) {
            std::lock_guard<std::mutex> lock(failureLock);
            failure = std::current_exception();
            next = count;
        }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
        pool.emplace_back(work);
    work();
    for (std::thread &t : pool)
        t.join();
    if (failure)
        std::rethrow_exception(failure);
    return !(cancel && cancel->load());
}

// A 64-bit checksum of a byte stream fed in pieces of any size: four lanes, each folding in one
// 8-byte word of every 32-byte stripe with a multiplication and a rotation, mixed at the end with the
// bytes left over and the length. It catches torn, cut and flipped files; it is not a cryptographic
// hash (the file is a cache that anyone who can write it can also delete).
class Checksum
{
public:
    void add(const void *data, std::size_t n)
    {
        const auto *p = static_cast<const unsigned char *>(data);
        m_length += n;
        if (m_pending > 0) {
            const std::size_t take = std::min(n, kStripe - m_pending);
            std::memcpy(m_stripe + m_pending, p, take);
            m_pending += take;
            p += take;
            n -= take;
            if (m_pending < kStripe)
                return;
            fold(m_stripe);
            m_pending = 0;
        }
        for (; n >= kStripe; p += kStripe, n -= kStripe)
            fold(p);
        std::memcpy(m_stripe, p, n);
        m_pending = n;
    }
    quint64 value() const
    {
        quint64 h = rotl(m_lane[0], 1) + rotl(m_lane[1], 7) + rotl(m_lane[2], 12) + rotl(m_lane[3], 18);
        for (std::size_t i = 0; i < m_pending; ++i)
            h = rotl(h ^ (quint64(m_stripe[i]) * kOdd3), 11) * kOdd1;
        h ^= m_length * kOdd2;
        h ^= h >> 33;
        h *= kOdd2;
        h ^= h >> 29;
        h *= kOdd3;
        h ^= h >> 32;
        return h;
    }

private:
    static constexpr std::size_t kStripe = 32;
    static constexpr quint64 kOdd1 = 0x9E3779B97F4A7C15ULL; // 2^64 / golden ratio, odd
    static constexpr quint64 kOdd2 = 0xBF58476D1CE4E5B9ULL;
    static constexpr quint64 kOdd3 = 0x94D049BB133111EBULL;
    static quint64 rotl(quint64 x, int r) { return (x << r) | (x >> (64 - r)); }
    void fold(const unsigned char *p)
    {
        for (int i = 0; i < 4; ++i) {
            quint64 word;
            std::memcpy(&word, p + 8 * i, 8);
            m_lane[i] = rotl(m_lane[i] + word * kOdd2, 31) * kOdd1;
        }
    }
    quint64 m_lane[4] = {kOdd1, kOdd2, kOdd3, ~kOdd1};
    unsigned char m_stripe[kStripe] = {};
    std::size_t m_pending = 0;
    quint64 m_length = 0;
};

// The index file is written and read around the page cache where the file system allows it
// (O_DIRECT): at a million nodes it is two gigabytes, which copied through the cache kept one core
// busy for seconds on each side (the kernel's copy and its fresh pages), where a direct transfer is
// the disk's own (several times faster here). Direct transfers move whole blocks between a block
// boundary of the file and an aligned buffer.
constexpr std::size_t kDiskBlock = 4096; // a multiple of every disk's logical block
struct FreeAligned
{
    void operator()(char *p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<char, FreeAligned>;

// Null when the memory cannot be had.
AlignedBuffer alignedBuffer(std::size_t bytes)
{
    return AlignedBuffer(static_cast<char *>(std::aligned_alloc(kDiskBlock, bytes)));
}

// Files from this size on are transferred directly; smaller ones (a small store's, a test's, a
// fuzzer's) gain nothing from it and stay in the page cache for the next reader.
constexpr quint64 kDirectFrom = quint64(16) << 20;

// Makes an open file of `bytes` (its size, or the size it will have) transfer directly when that is
// worth it and the file system allows it; whether it does.
bool beginDirect(int fd, quint64 bytes)
{
    if (bytes < kDirectFrom)
        return false;
    const int flags = ::fcntl(fd, F_GETFL);
    return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_DIRECT) == 0;
}

// Makes a file that transfers directly go through the page cache from here on; whether it was direct.
bool endDirect(int fd)
{
    const int flags = ::fcntl(fd, F_GETFL);
    return flags >= 0 && (flags & O_DIRECT) && ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) == 0;
}

// The POSIX calls save() makes, for VectorIndex::FileOps' default.
class PosixFileOps : public VectorIndex::FileOps
{
public:
    qint64 write(int fd, const char *data, qint64 size) override
    {
        qint64 done = 0;
        while (done < size) {
            const ssize_t n = ::write(fd, data + done, std::size_t(size - done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EINVAL && endDirect(fd))
                continue; // a file system that opens files for direct writes but refuses them
            if (n <= 0)
                return -1;
            done += n;
        }
        return done;
    }
    bool sync(int fd) override { return ::fsync(fd) == 0; }
    bool rename(const QByteArray &from, const QByteArray &to) override { return ::rename(from.constData(), to.constData()) == 0; }
};

PosixFileOps g_posixOps;
std::atomic<VectorIndex::FileOps *> g_fileOps{&g_posixOps};

// Sequential binary writer over a file descriptor that remembers the first failure, with a
// checksum of every byte written and a buffer of its own (the file operations see large writes).
// With `direct` (the file made direct, beginDirect()) the writes go around the page cache, the last
// partial block through it.
class Writer
{
public:
    Writer(int fd, bool direct)
        : m_fd(fd)
        , m_direct(direct)
        , m_buffer(alignedBuffer(kBufferSize))
        , m_ok(m_buffer != nullptr)
    {
    }
    void raw(const void *p, qint64 n)
    {
        if (n <= 0 || !m_buffer)
            return;
        m_sum.add(p, std::size_t(n));
        m_total += quint64(n);
        const char *bytes = static_cast<const char *>(p);
        while (n > 0) {
            const qint64 take = std::min(n, kBufferSize - m_fill);
            std::memcpy(m_buffer.get() + m_fill, bytes, std::size_t(take));
            m_fill += take;
            bytes += take;
            n -= take;
            if (m_fill == kBufferSize) {
                put(m_buffer.get(), m_fill);
                m_fill = 0;
            }
        }
    }
    // Writes what the buffer holds (it ends the file: a direct write takes whole blocks only, so the
    // rest goes through the page cache); false after any failure.
    bool flush()
    {
        const qint64 whole = m_direct ? m_fill / qint64(kDiskBlock) * qint64(kDiskBlock) : m_fill;
        put(m_buffer.get(), whole);
        if (whole < m_fill) {
            endDirect(m_fd);
            put(m_buffer.get() + whole, m_fill - whole);
        }
        m_fill = 0;
        return m_ok;
    }
    quint64 checksum() const { return m_sum.value(); }
    template<typename T>
    void pod(T v)
    {
        raw(&v, sizeof(T));
    }
    void string(const QString &s)
    {
        const QByteArray b = s.toUtf8();
        pod<quint32>(quint32(b.size()));
        raw(b.constData(), b.size());
    }
    void strings(const QStringList &l)
    {
        pod<quint32>(quint32(l.size()));
        for (const QString &s : l)
            string(s);
    }
    template<typename T>
    void array(const std::vector<T> &v, std::size_t n)
    {
        raw(v.data(), qint64(n * sizeof(T)));
    }
    bool ok() const { return m_ok; }
    quint64 total() const { return m_total; }

private:
    static constexpr qint64 kBufferSize = qint64(4) << 20;
    void put(const char *data, qint64 n)
    {
        if (m_ok && n > 0 && g_fileOps.load()->write(m_fd, data, n) != n)
            m_ok = false;
    }
    int m_fd;
    bool m_direct;
    AlignedBuffer m_buffer;
    bool m_ok;
    qint64 m_fill = 0;
    Checksum m_sum;
    quint64 m_total = 0;
};

// A file read from its start in large aligned pieces by a thread of its own, one piece ahead of the
// reader: the disk's transfer overlaps the reader's copying (around the page cache when the file was
// made direct, beginDirect()). A file that fits in one piece (a small store's, a test's, a fuzzer's)
// is read at once, without the thread, into a piece of its own size.
//
// Threads: a piece belongs to the reading thread while it is not `ready`, and to the owner's thread
// while it is; `m_mutex` guards the flags and `m_stop`.
class FileAhead
{
public:
    // `bytes`: how much of the file the reader wants (more is read when the file has more).
    FileAhead(int fd, quint64 bytes)
        : m_fd(fd)
        , m_pieceSize(std::min<quint64>(kPieceSize, (bytes + kDiskBlock) / kDiskBlock * kDiskBlock))
    {
        // A piece larger than the `bytes` the reader wants holds them all; the second piece then only
        // stands for the end, without a buffer.
        const bool whole = m_pieceSize < kPieceSize;
        m_pieces[0].data = alignedBuffer(m_pieceSize);
        if (!whole)
            m_pieces[1].data = alignedBuffer(m_pieceSize);
        if (!m_pieces[0].data || (!whole && !m_pieces[1].data))
            throw std::bad_alloc();
        if (whole) {
            read(0, 0);
            m_pieces[1].ready = true;
        } else {
            m_thread = std::thread([this] { readAhead(); });
        }
    }
    ~FileAhead()
    {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_stop = true;
        }
        m_changed.notify_all();
        if (m_thread.joinable())
            m_thread.join();
    }
    FileAhead(const FileAhead &) = delete;
    FileAhead &operator=(const FileAhead &) = delete;

    // The next piece of the file (the one handed out before goes back to the reading thread), its
    // size in *size; null at the end of the file or after a failure.
    const char *next(std::size_t *size)
    {
        std::unique_lock<std::mutex> lock(m_mutex);
        if (m_ended)
            return nullptr; // the reading thread has stopped
        if (m_handedOut) {
            m_pieces[m_current].ready = false;
            m_current ^= 1;
            m_changed.notify_all();
        }
        m_changed.wait(lock, [this] { return m_pieces[m_current].ready; });
        m_handedOut = true;
        const Piece &p = m_pieces[m_current];
        if (p.size <= 0) {
            m_ended = true;
            return nullptr;
        }
        *size = std::size_t(p.size);
        return p.data.get();
    }

private:
    static constexpr std::size_t kPieceSize = std::size_t(8) << 20;
    struct Piece
    {
        AlignedBuffer data;
        ssize_t size = 0; // 0: the end of the file; -1: a failed read
        bool ready = false;
    };
    // Reads piece k from `offset` (a block boundary, as a direct read needs) and hands it over; its size.
    ssize_t read(int k, off_t offset)
    {
        ssize_t n;
        do {
            n = ::pread(m_fd, m_pieces[k].data.get(), m_pieceSize, offset);
        } while ((n < 0 && errno == EINTR) || (n < 0 && errno == EINVAL && endDirect(m_fd)));
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_pieces[k].size = n < 0 ? -1 : n;
            m_pieces[k].ready = true;
        }
        m_changed.notify_all();
        return n;
    }
    // The reading thread: whole pieces, each once the reader has given it back; the last ends the file.
    void readAhead()
    {
        off_t offset = 0;
        for (int k = 0;; k ^= 1) {
            {
                std::unique_lock<std::mutex> lock(m_mutex);
                m_changed.wait(lock, [&] { return m_stop || !m_pieces[k].ready; });
                if (m_stop)
                    return;
            }
            const ssize_t n = read(k, offset);
            if (n <= 0)
                return;
            offset += n;
        }
    }
    int m_fd;
    std::size_t m_pieceSize;
    Piece m_pieces[2];
    int m_current = 0;        // the piece handed out last (or next)
    bool m_handedOut = false; // whether m_current was handed out
    bool m_ended = false;     // the end of the file or a failure was handed out
    std::mutex m_mutex;
    std::condition_variable m_changed;
    bool m_stop = false;
    std::thread m_thread;
};

// Sequential binary reader of a file's first `end` bytes (from FileAhead), with a checksum of every
// byte read.
class Reader
{
public:
    Reader(int fd, quint64 end)
        : m_ahead(fd, end)
        , m_end(end)
    {
    }
    bool raw(void *p, quint64 n)
    {
        if (!m_ok || m_position + n > m_end) {
            m_ok = false;
            return false;
        }
        char *out = static_cast<char *>(p);
        while (n > 0) {
            if (m_at == m_filled) {
                m_piece = m_ahead.next(&m_filled);
                m_at = 0;
                if (!m_piece) {
                    m_ok = false;
                    return false;
                }
            }
            const std::size_t take = std::size_t(std::min<quint64>(n, quint64(m_filled - m_at)));
            std::memcpy(out, m_piece + m_at, take);
            m_sum.add(m_piece + m_at, take);
            m_at += take;
            out += take;
            n -= take;
            m_position += take;
        }
        return true;
    }
    // How many bytes were read.
    quint64 position() const { return m_position; }
    template<typename T>
    T pod()
    {
        T v{};
        raw(&v, sizeof(T));
        return v;
    }
    QString string()
    {
        const quint32 n = pod<quint32>();
        if (!m_ok || n > (1u << 24)) {
            m_ok = false;
            return QString();
        }
        QByteArray b(qsizetype(n), Qt::Uninitialized);
        raw(b.data(), n);
        return QString::fromUtf8(b);
    }
    QStringList strings()
    {
        const quint32 n = pod<quint32>();
        QStringList l;
        if (!m_ok || n > (1u << 26)) {
            m_ok = false;
            return l;
        }
        l.reserve(qsizetype(n));
        for (quint32 i = 0; i < n && m_ok; ++i)
            l.append(string());
        return l;
    }
    template<typename T>
    bool array(std::vector<T> &v, std::size_t n)
    {
        if (!m_ok || quint64(n) * sizeof(T) > m_end) {
            m_ok = false;
            return false;
        }
        v.resize(n);
        return raw(v.data(), quint64(n) * sizeof(T));
    }
    bool ok() const { return m_ok; }
    void fail() { m_ok = false; }
    // The checksum of everything read so far.
    quint64 checksum() const { return m_sum.value(); }

private:
    FileAhead m_ahead;
    quint64 m_end;
    bool m_ok = true;
    const char *m_piece = nullptr; // the piece being read
    std::size_t m_at = 0;          // the next byte of it to hand out
    std::size_t m_filled = 0;      // its size
    quint64 m_position = 0;        // the bytes handed out
    Checksum m_sum;
};

} // namespace

// The graph's nodes of each scope, ascending, so that a scoped exact scan reads the slots of its scopes
// instead of testing the filter on every slot. Filed by the searches that need them: a scoped scan
// first files the slots added since the last one ([covered, slotCount())); a filed slot whose scope
// changes (an upsert of its record, updateAttributes()) is moved by fill(). Removed nodes stay listed
// (their scope stays too) and are left out by the scan's live() test, as in the scan of every slot.
// Threads: searches may run at once (PostgresStorage reads under a shared lock), so the filing and the
// reading of the lists take `mutex`; fill() runs under the owner's exclusive lock, and takes it too.
struct VectorIndex::ScopeSlots
{
    std::mutex mutex;
    std::vector<std::vector<std::uint32_t>> byScope; // by scope id (m_scopeNames)
    std::size_t covered = 0;                         // slots [0, covered) are filed
};

struct VectorIndex::Ann
{
    std::unique_ptr<CodeSpace> space;
    std::unique_ptr<Graph> graph; // destroyed before the space it points to
    ScopeSlots scopes;            // of the graph's nodes; a new graph starts with none filed
};

// A run of puts being inserted into the graph (insertNew()). Its thread touches only the graph, the
// new nodes' slots of the vectors (sized beforehand) and this object, never the index itself (which
// may be moved meanwhile); the index files the attributes once it has joined it (finish()).
struct VectorIndex::Pending
{
    std::vector<Item> items;
    std::vector<float> units; // the normalised vectors, dimension() floats each
    std::vector<hnswlib::tableint> nodes;
    std::size_t sizeBefore = 0; // size() before the run
    std::thread runner;
    std::exception_ptr failure; // written by the runner before it ends
    Pending() = default;
    Pending(const Pending &) = delete;
    Pending &operator=(const Pending &) = delete;
    ~Pending()
    {
        if (runner.joinable())
            runner.join();
    }
};

// A RecordFilter's conditions resolved against the interned attribute tables.
struct VectorIndex::Filter
{
    bool nothing = false; // selects no record at all
    bool trivial = true;  // selects every record
    std::vector<std::uint8_t> scopeOk;
    std::vector<std::uint8_t> catSetOk;
    int onlySource = -1;
    bool hidePrivate = false;
    int visibleSource = -2; // matches no record
    bool hasBefore = false, hasAfter = false;
    qint64 before = 0, after = 0;
    // Per identity key: -1 any; otherwise the interned value required (0: missing), or, with
    // identityPresent, any value but missing.
    std::array<int, 3> identity{-1, -1, -1};
    std::array<bool, 3> identityPresent{false, false, false};

    bool selects(const VectorIndex &ix, std::size_t s) const
    {
        if (trivial)
            return true;
        if (!scopeOk.empty() && !scopeOk[std::size_t(ix.m_scope[s])])
            return false;
        return selectsBeyondScopes(ix, s);
    }
    // Whether it has conditions besides the scopes.
    bool beyondScopes() const
    {
        return !catSetOk.empty() || onlySource >= 0 || hidePrivate || hasBefore || hasAfter
            || identity != std::array<int, 3>{-1, -1, -1} || identityPresent != std::array<bool, 3>{false, false, false};
    }
    // Its conditions besides the scopes (for a slot of a selected scope).
    bool selectsBeyondScopes(const VectorIndex &ix, std::size_t s) const
    {
        if (!catSetOk.empty() && !catSetOk[std::size_t(ix.m_catSet[s])])
            return false;
        if (onlySource >= 0 && ix.m_source[s] != onlySource)
            return false;
        if (hidePrivate && ix.m_private[s] && ix.m_source[s] != visibleSource)
            return false;
        if (hasBefore && !(ix.m_created[s] < before))
            return false;
        if (hasAfter && ix.m_created[s] < after)
            return false;
        for (std::size_t k = 0; k < 3; ++k) {
            if (identityPresent[k] && ix.m_identity[k][s] == 0)
                return false;
            if (identity[k] >= 0 && ix.m_identity[k][s] != identity[k])
                return false;
        }
        return true;
    }
};

QString VectorIndex::identityOther()
{
    return QStringLiteral("\u0001(not a string)");
}

std::array<QString, 3> VectorIndex::identityOf(const Json &metadata)
{
    std::array<QString, 3> out;
    if (!metadata.is_object())
        return out;
    const QStringList keys = RecordFilter::identityKeys();
    for (std::size_t k = 0; k < 3; ++k) {
        const auto it = metadata.find(keys[qsizetype(k)].toStdString());
        if (it == metadata.end())
            continue;
        out[k] = it->is_string() && !it->get_ref<const std::string &>().empty()
                   ? QString::fromStdString(it->get<std::string>())
                   : identityOther();
    }
    return out;
}

bool VectorIndex::judges(const MetadataFilter &conditions)
{
    const QStringList keys = RecordFilter::identityKeys();
    for (const MetadataFilter::Condition &c : conditions.conditions()) {
        if (!keys.contains(QString::fromStdString(c.key)))
            return false;
        const bool eq = c.op == MetadataFilter::Op::Eq && c.value.is_string() && !c.value.get_ref<const std::string &>().empty();
        if (!eq && c.op != MetadataFilter::Op::Exists)
            return false;
    }
    return true;
}

VectorIndex::VectorIndex()
{
    invalidate(); // interns "" (a missing identity) as 0
}
// The inserts left running end before the graph they write is destroyed.
VectorIndex::~VectorIndex()
{
    m_pending.reset();
}
// Members are moved in their order: m_pending first, so that a run left going here ends before the
// graph it writes is replaced (its inserts are dropped with the content they belonged to).
VectorIndex &VectorIndex::operator=(VectorIndex &&other) noexcept = default;

void VectorIndex::settled() const
{
    const_cast<VectorIndex *>(this)->settle();
}

void VectorIndex::settle()
{
    if (!m_pending)
        return;
    const std::unique_ptr<Pending> p = std::move(m_pending);
    p->runner.join();
    if (p->failure) {
        invalidate(); // nodes without attributes: the owner loads the index again
        std::rethrow_exception(p->failure);
    }
    finish(*p);
}

void VectorIndex::finish(const Pending &p)
{
    growSlots(m_ann->graph->cur_element_count);
    for (std::size_t k = 0; k < p.items.size(); ++k)
        fill(p.nodes[k], p.items[k]);
}

std::unique_ptr<VectorIndex> VectorIndex::flatCopy() const
{
    settled();
    if (m_ann)
        return nullptr;
    auto c = std::make_unique<VectorIndex>();
    c->m_loaded = m_loaded;
    c->m_dimension = m_dimension;
    c->m_params = m_params;
    c->m_rowids = m_rowids;
    c->m_scope = m_scope;
    c->m_catSet = m_catSet;
    c->m_source = m_source;
    c->m_private = m_private;
    c->m_created = m_created;
    c->m_importance = m_importance;
    c->m_identity = m_identity;
    c->m_vectors = m_vectors;
    c->m_slotOfRow = m_slotOfRow;
    c->m_unvectored = m_unvectored;
    c->m_scopeIds = m_scopeIds;
    c->m_scopeNames = m_scopeNames;
    c->m_sourceIds = m_sourceIds;
    c->m_sourceNames = m_sourceNames;
    c->m_categoryIds = m_categoryIds;
    c->m_categoryNames = m_categoryNames;
    c->m_catSetIds = m_catSetIds;
    c->m_catSets = m_catSets;
    c->m_identityIds = m_identityIds;
    c->m_identityNames = m_identityNames;
    return c;
}

VectorIndex::Item VectorIndex::itemAt(std::size_t slot) const
{
    Item item;
    item.rowid = m_rowids[slot];
    item.scope = m_scopeNames.value(m_scope[slot]);
    for (std::int32_t c : m_catSets[std::size_t(m_catSet[slot])])
        item.categories << m_categoryNames.value(c);
    item.source = m_sourceNames.value(m_source[slot]);
    item.isPrivate = m_private[slot] != 0;
    item.hasCreated = m_created[slot] != kUnknownTime;
    item.createdMs = item.hasCreated ? m_created[slot] : 0;
    item.importance = m_importance[slot];
    for (std::size_t k = 0; k < 3; ++k)
        item.identity[k] = m_identityNames.value(m_identity[k][slot]);
    return item;
}

void VectorIndex::copyRecord(const VectorIndex &other, qint64 rowid)
{
    settle();
    other.settled();
    if (const std::optional<std::size_t> slot = other.slotOf(rowid))
        upsert(other.itemAt(*slot), other.vectorAt(*slot));
    else if (other.m_unvectored.contains(rowid))
        markUnvectored(rowid);
    else
        remove(rowid);
}

void VectorIndex::reset(int dimension)
{
    invalidate();
    m_dimension = dimension;
    m_loaded = true;
}

void VectorIndex::invalidate()
{
    m_pending.reset(); // its inserts dropped with everything else
    m_loaded = false;
    m_dimension = 0;
    m_rowids = {};
    m_scope = {};
    m_catSet = {};
    m_source = {};
    m_private = {};
    m_created = {};
    m_importance = {};
    for (auto &v : m_identity)
        v = {};
    m_identityIds.clear();
    m_identityNames = QStringList{QString()};
    m_identityIds.insert(QString(), 0);
    m_vectors = {};
    m_slotOfRow = {};
    m_ann.reset();
    m_unvectored.clear();
    m_scopeIds.clear();
    m_scopeNames.clear();
    m_sourceIds.clear();
    m_sourceNames.clear();
    m_categoryIds.clear();
    m_categoryNames.clear();
    m_catSetIds.clear();
    m_catSets.clear();
}

std::size_t VectorIndex::size() const
{
    if (m_pending) // every put of a run is a record new to the graph
        return m_pending->sizeBefore + m_pending->items.size();
    if (m_ann)
        return m_ann->graph->cur_element_count - m_ann->graph->num_deleted_;
    return m_rowids.size();
}

std::size_t VectorIndex::deletedNodes() const
{
    settled();
    return m_ann ? m_ann->graph->num_deleted_ : 0;
}

std::size_t VectorIndex::graphNodes() const
{
    settled();
    return m_ann ? m_ann->graph->cur_element_count : 0;
}

std::size_t VectorIndex::slotCount() const
{
    return m_ann ? m_ann->graph->cur_element_count : m_rowids.size();
}

bool VectorIndex::live(std::size_t slot) const
{
    return !m_ann || !graph_walk::removed(*m_ann->graph, hnswlib::tableint(slot));
}

const float *VectorIndex::vectorAt(std::size_t slot) const
{
    return m_vectors.data() + slot * std::size_t(m_dimension);
}

void VectorIndex::growVectors(std::size_t slots)
{
    const std::size_t want = slots * std::size_t(m_dimension);
    if (m_vectors.size() < want)
        m_vectors.resize(want); // grows in place, by half at least
}

int VectorIndex::intern(QHash<QString, int> &table, QStringList &names, const QString &value)
{
    auto it = table.constFind(value);
    if (it != table.constEnd())
        return it.value();
    const int id = int(names.size());
    names.append(value);
    table.insert(value, id);
    return id;
}

int VectorIndex::internCategories(const QStringList &categories)
{
    std::vector<std::int32_t> ids;
    ids.reserve(std::size_t(categories.size()));
    for (const QString &c : categories)
        ids.push_back(intern(m_categoryIds, m_categoryNames, c));
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    QString key;
    for (std::int32_t id : ids)
        key += QString::number(id) + QLatin1Char(',');
    auto it = m_catSetIds.constFind(key);
    if (it != m_catSetIds.constEnd())
        return it.value();
    const int id = int(m_catSets.size());
    m_catSets.push_back(std::move(ids));
    m_catSetIds.insert(key, id);
    return id;
}

void VectorIndex::growSlots(std::size_t slots)
{
    if (m_rowids.size() >= slots)
        return;
    m_rowids.resize(slots, 0);
    m_scope.resize(slots, 0);
    m_catSet.resize(slots, 0);
    m_source.resize(slots, 0);
    m_private.resize(slots, 0);
    m_created.resize(slots, kUnknownTime);
    m_importance.resize(slots, 0.0);
    for (auto &v : m_identity)
        v.resize(slots, 0);
}

void VectorIndex::fill(std::size_t slot, const Item &item)
{
    m_rowids[slot] = item.rowid;
    const std::int32_t scope = intern(m_scopeIds, m_scopeNames, item.scope);
    if (m_ann)
        refile(slot, m_scope[slot], scope);
    m_scope[slot] = scope;
    m_catSet[slot] = internCategories(item.categories);
    m_source[slot] = intern(m_sourceIds, m_sourceNames, item.source);
    m_private[slot] = item.isPrivate ? 1 : 0;
    m_created[slot] = item.hasCreated ? item.createdMs : kUnknownTime;
    m_importance[slot] = item.importance;
    for (std::size_t k = 0; k < 3; ++k)
        m_identity[k][slot] = intern(m_identityIds, m_identityNames, item.identity[k]);
}

void VectorIndex::upsert(const Item &item, const float *vector)
{
    settle();
    const std::size_t dim = std::size_t(m_dimension);
    m_unvectored.remove(item.rowid);
    if (m_ann) {
        Graph &g = *m_ann->graph;
        std::vector<float> unit(dim);
        normalise(vector, unit.data(), m_dimension);
        std::vector<char> code(codeBytes(dim));
        encode(unit.data(), code.data(), dim);
        if (g.label_lookup_.find(hnswlib::labeltype(item.rowid)) == g.label_lookup_.end()
            && g.cur_element_count >= g.max_elements_)
            growGraph(g, std::max<std::size_t>(1024, g.max_elements_ + g.max_elements_ / 2));
        const hnswlib::tableint slot = g.addPoint(code.data(), hnswlib::labeltype(item.rowid), -1);
        growSlots(std::size_t(slot) + 1);
        growVectors(std::size_t(slot) + 1);
        std::copy(unit.begin(), unit.end(), m_vectors.begin() + std::ptrdiff_t(std::size_t(slot) * dim));
        fill(slot, item);
        return;
    }
    std::size_t slot;
    auto it = m_slotOfRow.constFind(item.rowid);
    if (it != m_slotOfRow.constEnd()) {
        slot = it.value();
    } else {
        slot = m_rowids.size();
        growSlots(slot + 1);
        m_vectors.resize(m_vectors.size() + dim);
        m_slotOfRow.insert(item.rowid, std::uint32_t(slot));
    }
    normalise(vector, m_vectors.data() + slot * dim, m_dimension);
    fill(slot, item);
}

void VectorIndex::updateAttributes(const Item &item)
{
    settle();
    if (m_ann) {
        const Graph &g = *m_ann->graph;
        auto it = g.label_lookup_.find(hnswlib::labeltype(item.rowid));
        if (it != g.label_lookup_.end() && !g.isMarkedDeleted(it->second))
            fill(it->second, item);
        return;
    }
    auto it = m_slotOfRow.constFind(item.rowid);
    if (it != m_slotOfRow.constEnd())
        fill(it.value(), item);
}

void VectorIndex::markUnvectored(qint64 rowid)
{
    remove(rowid);
    m_unvectored.insert(rowid);
}

void VectorIndex::remove(qint64 rowid)
{
    settle();
    m_unvectored.remove(rowid);
    if (m_ann) {
        Graph &g = *m_ann->graph;
        auto it = g.label_lookup_.find(hnswlib::labeltype(rowid));
        if (it != g.label_lookup_.end() && !g.isMarkedDeleted(it->second))
            g.markDeletedInternal(it->second);
        return;
    }
    auto it = m_slotOfRow.constFind(rowid);
    if (it == m_slotOfRow.constEnd())
        return;
    const std::size_t slot = it.value();
    const std::size_t last = m_rowids.size() - 1;
    const std::size_t dim = std::size_t(m_dimension);
    m_slotOfRow.remove(rowid);
    if (slot != last) {
        std::copy(m_vectors.begin() + std::ptrdiff_t(last * dim), m_vectors.begin() + std::ptrdiff_t((last + 1) * dim),
                  m_vectors.begin() + std::ptrdiff_t(slot * dim));
        m_rowids[slot] = m_rowids[last];
        m_scope[slot] = m_scope[last];
        m_catSet[slot] = m_catSet[last];
        m_source[slot] = m_source[last];
        m_private[slot] = m_private[last];
        m_created[slot] = m_created[last];
        m_importance[slot] = m_importance[last];
        for (auto &v : m_identity)
            v[slot] = v[last];
        m_slotOfRow.insert(m_rowids[slot], std::uint32_t(slot));
    }
    m_vectors.resize(last * dim);
    m_rowids.pop_back();
    m_scope.pop_back();
    m_catSet.pop_back();
    m_source.pop_back();
    m_private.pop_back();
    m_created.pop_back();
    m_importance.pop_back();
    for (auto &v : m_identity)
        v.pop_back();
}

void VectorIndex::refile(std::size_t slot, std::int32_t from, std::int32_t to)
{
    ScopeSlots &filed = m_ann->scopes;
    const std::lock_guard<std::mutex> lock(filed.mutex);
    if (slot >= filed.covered || from == to)
        return; // filed when a scan next needs it, or where it belongs
    std::vector<std::uint32_t> &old = filed.byScope[std::size_t(from)];
    const auto at = std::lower_bound(old.begin(), old.end(), std::uint32_t(slot));
    if (at != old.end() && *at == std::uint32_t(slot))
        old.erase(at);
    if (std::size_t(to) >= filed.byScope.size())
        filed.byScope.resize(std::size_t(to) + 1);
    std::vector<std::uint32_t> &now = filed.byScope[std::size_t(to)];
    now.insert(std::lower_bound(now.begin(), now.end(), std::uint32_t(slot)), std::uint32_t(slot));
}

std::vector<std::size_t> VectorIndex::slotsOfScopes(const std::vector<std::uint8_t> &scopeOk) const
{
    ScopeSlots &filed = m_ann->scopes;
    const std::lock_guard<std::mutex> lock(filed.mutex);
    for (std::size_t s = filed.covered, n = slotCount(); s < n; ++s) {
        const std::size_t scope = std::size_t(m_scope[s]);
        if (scope >= filed.byScope.size())
            filed.byScope.resize(scope + 1);
        filed.byScope[scope].push_back(std::uint32_t(s));
    }
    filed.covered = slotCount();
    std::vector<std::size_t> out;
    std::size_t lists = 0;
    for (std::size_t i = 0, n = std::min(scopeOk.size(), filed.byScope.size()); i < n; ++i) {
        if (!scopeOk[i] || filed.byScope[i].empty())
            continue;
        out.insert(out.end(), filed.byScope[i].begin(), filed.byScope[i].end());
        ++lists;
    }
    if (lists > 1)
        std::sort(out.begin(), out.end());
    return out;
}

std::optional<std::size_t> VectorIndex::slotOf(qint64 rowid) const
{
    if (m_ann) {
        const Graph &g = *m_ann->graph;
        auto it = g.label_lookup_.find(hnswlib::labeltype(rowid));
        if (it == g.label_lookup_.end() || !live(it->second))
            return std::nullopt;
        return std::size_t(it->second);
    }
    auto it = m_slotOfRow.constFind(rowid);
    if (it == m_slotOfRow.constEnd())
        return std::nullopt;
    return std::size_t(it.value());
}

bool VectorIndex::contains(qint64 rowid) const
{
    settled();
    return slotOf(rowid).has_value();
}

std::optional<VectorIndex::RankFields> VectorIndex::rankFields(qint64 rowid) const
{
    settled();
    const std::optional<std::size_t> s = slotOf(rowid);
    if (!s)
        return std::nullopt;
    RankFields f;
    f.importance = m_importance[*s];
    f.hasCreated = m_created[*s] != kUnknownTime;
    f.createdMs = f.hasCreated ? m_created[*s] : 0;
    return f;
}

std::optional<double> VectorIndex::similarity(const float *query, qint64 rowid) const
{
    settled();
    const std::optional<std::size_t> s = slotOf(rowid);
    if (!s || m_dimension <= 0)
        return std::nullopt;
    std::vector<float> unit(static_cast<std::size_t>(m_dimension));
    normalise(query, unit.data(), m_dimension);
    return double(VectorMath::dot(unit.data(), vectorAt(*s), std::size_t(m_dimension)));
}

std::vector<qint64> VectorIndex::trackedRowids() const
{
    settled();
    std::vector<qint64> out;
    out.reserve(trackedCount());
    for (std::size_t s = 0, n = slotCount(); s < n; ++s)
        if (live(s))
            out.push_back(m_rowids[s]);
    for (qint64 r : m_unvectored)
        out.push_back(r);
    return out;
}

bool VectorIndex::buildAnn(int threads, const std::atomic<bool> *cancel)
{
    settle();
    if (m_ann || !m_loaded || m_dimension <= 0)
        return true;
    const std::size_t n = m_rowids.size();
    auto ann = std::make_unique<Ann>();
    ann->space = std::make_unique<CodeSpace>(std::size_t(m_dimension));
    const std::size_t capacity = std::max<std::size_t>(1024, n + n / 4);
    ann->graph = std::make_unique<Graph>(ann->space.get(), capacity, std::size_t(m_params.m),
                                         std::size_t(m_params.efConstruction), 100);
    Graph &g = *ann->graph;
    adviseHugePagesOfAllocation(g.data_level0_memory_);
    std::vector<hnswlib::tableint> nodeOf(n);
    const std::size_t dim = std::size_t(m_dimension);
    FloatArray vectors; // in the order of the graph's nodes
    vectors.resize(n * dim);
    // Small graphs are built on one thread, so that they come out the same on every run.
    const int workers = n < kParallelFrom ? 1 : std::max(1, threads);
    const bool whole = addPoints(
        g, n, m_dimension, workers, cancel, [&](std::size_t i, float *) { return m_vectors.data() + i * dim; },
        [&](std::size_t i) { return m_rowids[i]; },
        [&](std::size_t i, hnswlib::tableint node, const float *unit) {
            nodeOf[i] = node;
            std::copy(unit, unit + dim, vectors.begin() + std::ptrdiff_t(std::size_t(node) * dim));
        });
    if (!whole)
        return false;

    // Attributes move to the slots the graph gave their vectors.
    auto permute = [&](auto &v) {
        std::remove_reference_t<decltype(v)> out(v.size());
        for (std::size_t i = 0; i < n; ++i)
            out[nodeOf[i]] = v[i];
        v = std::move(out);
    };
    permute(m_rowids);
    permute(m_scope);
    permute(m_catSet);
    permute(m_source);
    permute(m_private);
    permute(m_created);
    permute(m_importance);
    for (auto &v : m_identity)
        permute(v);
    m_vectors = std::move(vectors);
    m_slotOfRow = {};
    m_ann = std::move(ann);
    return true;
}

void VectorIndex::apply(const std::vector<Change> &changes, int threads, bool background)
{
    settle();
    for (std::size_t i = 0; i < changes.size();) {
        if (m_ann && threads > 1 && graphNodes() >= kParallelFrom) {
            // The run of puts of records new to the graph from here, each rowid once.
            const Graph &g = *m_ann->graph;
            QSet<qint64> run;
            std::size_t end = i;
            for (; end < changes.size() && changes[end].kind == Change::Kind::Put; ++end) {
                const qint64 rowid = changes[end].item.rowid;
                if (run.contains(rowid) || g.label_lookup_.find(hnswlib::labeltype(rowid)) != g.label_lookup_.end())
                    break;
                run.insert(rowid);
            }
            if (end - i > 1) {
                // Only the last run of the changes may be left running: anything after it would wait.
                insertNew(changes, i, end, threads, background && end == changes.size());
                i = end;
                continue;
            }
        }
        const Change &c = changes[i++];
        switch (c.kind) {
        case Change::Kind::Put:
            upsert(c.item, c.vector);
            break;
        case Change::Kind::Unvectored:
            markUnvectored(c.item.rowid);
            break;
        case Change::Kind::Remove:
            remove(c.item.rowid);
            break;
        }
    }
}

// An exception (out of memory) leaves nodes in the graph without their attributes: the index is then
// unusable, and its owner invalidates it (as SqliteStorage does after any failed index change; a
// run left in the background invalidates the index itself, in settle()).
void VectorIndex::insertNew(const std::vector<Change> &changes, std::size_t first, std::size_t last, int threads, bool background)
{
    Graph &g = *m_ann->graph;
    const std::size_t n = last - first;
    const std::size_t dim = std::size_t(m_dimension);
    if (g.cur_element_count + n > g.max_elements_)
        growGraph(g, std::max(g.cur_element_count + n, g.max_elements_ + g.max_elements_ / 2));
    growVectors(g.cur_element_count + n); // the new nodes are the next n
    auto p = std::make_unique<Pending>();
    p->sizeBefore = size();
    p->items.reserve(n);
    p->units.resize(n * dim);
    p->nodes.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
        const Change &c = changes[first + k];
        p->items.push_back(c.item);
        normalise(c.vector, p->units.data() + k * dim, m_dimension);
        m_unvectored.remove(c.item.rowid);
    }
    auto run = [p = p.get(), &g, vectors = m_vectors.data(), dim, threads] {
        try {
            addPoints(
                g, p->items.size(), int(dim), threads, nullptr, [&](std::size_t k, float *) { return p->units.data() + k * dim; },
                [&](std::size_t k) { return p->items[k].rowid; },
                [&](std::size_t k, hnswlib::tableint node, const float *unit) {
                    p->nodes[k] = node;
                    std::copy(unit, unit + dim, vectors + std::size_t(node) * dim);
                });
        } catch (...) {
            p->failure = std::current_exception();
        }
    };
    if (background) {
        p->runner = std::thread(run);
        m_pending = std::move(p);
        return;
    }
    run();
    if (p->failure)
        std::rethrow_exception(p->failure);
    finish(*p);
}

std::optional<VectorIndex::Filter> VectorIndex::compile(const RecordFilter &filter) const
{
    Filter f;
    if (!filter.scopes.isEmpty()) {
        f.scopeOk.assign(std::size_t(m_scopeNames.size()), 0);
        for (qsizetype i = 0; i < m_scopeNames.size(); ++i) {
            for (const QString &prefix : filter.scopes) {
                if (ScopePath::contains(prefix, m_scopeNames.at(i))) {
                    f.scopeOk[std::size_t(i)] = 1;
                    break;
                }
            }
        }
        f.trivial = false;
    }
    if (!filter.categories.isEmpty()) {
        std::vector<std::uint8_t> wanted(std::size_t(m_categoryNames.size()), 0);
        bool any = false;
        for (const QString &c : filter.categories) {
            auto it = m_categoryIds.constFind(c);
            if (it != m_categoryIds.constEnd()) {
                wanted[std::size_t(it.value())] = 1;
                any = true;
            }
        }
        if (!any)
            return std::nullopt;
        f.catSetOk.assign(m_catSets.size(), 0);
        for (std::size_t i = 0; i < m_catSets.size(); ++i)
            for (std::int32_t c : m_catSets[i])
                if (wanted[std::size_t(c)])
                    f.catSetOk[i] = 1;
        f.trivial = false;
    }
    if (!filter.onlySource.isEmpty()) {
        auto it = m_sourceIds.constFind(filter.onlySource);
        if (it == m_sourceIds.constEnd())
            return std::nullopt;
        f.onlySource = it.value();
        f.trivial = false;
    }
    // Privacy hides nothing in an index without private records: such a filter stays trivial (a plain
    // graph walk, no selectivity estimate).
    f.hidePrivate = filter.applyPrivacy && !filter.includePrivate && !m_private.empty()
                 && std::memchr(m_private.data(), 1, m_private.size()) != nullptr;
    if (f.hidePrivate) {
        f.trivial = false;
        if (!filter.source.isEmpty()) {
            auto it = m_sourceIds.constFind(filter.source);
            if (it != m_sourceIds.constEnd())
                f.visibleSource = it.value();
        }
    }
    const QStringList identityKeys = RecordFilter::identityKeys();
    const MetadataFilter metadataConditions = MetadataFilter::parse(filter.metadata);
    for (const MetadataFilter::Condition &c : metadataConditions.conditions()) {
        const qsizetype k = identityKeys.indexOf(QString::fromStdString(c.key));
        if (k < 0)
            continue; // judged on the records
        if (c.op == MetadataFilter::Op::Exists) {
            if (c.value.get<bool>())
                f.identityPresent[std::size_t(k)] = true;
            else if (f.identity[std::size_t(k)] > 0)
                return std::nullopt;
            else
                f.identity[std::size_t(k)] = 0;
        } else if (c.op == MetadataFilter::Op::Eq && c.value.is_string() && !c.value.get_ref<const std::string &>().empty()) {
            const auto it = m_identityIds.constFind(QString::fromStdString(c.value.get<std::string>()));
            const int wanted = it == m_identityIds.constEnd() ? -2 : it.value();
            if (wanted < 0 || (f.identity[std::size_t(k)] >= 0 && f.identity[std::size_t(k)] != wanted))
                return std::nullopt; // a value no record has, or two values at once
            f.identity[std::size_t(k)] = wanted;
        } else {
            continue;
        }
        f.trivial = false;
    }
    f.hasBefore = filter.createdBefore.isValid();
    f.hasAfter = filter.createdAfter.isValid();
    f.before = f.hasBefore ? filter.createdBefore.toMSecsSinceEpoch() : 0;
    f.after = f.hasAfter ? filter.createdAfter.toMSecsSinceEpoch() : 0;
    if (f.hasBefore || f.hasAfter)
        f.trivial = false;

    return f;
}

VectorIndex::Judge VectorIndex::judgeFor(const RecordFilter &filter) const
{
    settled();
    Judge j;
    j.m_index = this;
    if (std::optional<Filter> f = compile(filter)) {
        j.m_selective = !f->trivial;
        j.m_filter = std::make_shared<const Filter>(std::move(*f));
    } else {
        j.m_selective = true;
    }
    return j;
}

VectorIndex::Verdict VectorIndex::Judge::verdict(qint64 rowid) const
{
    const std::optional<std::size_t> s = m_index->slotOf(rowid);
    if (!s)
        return Verdict::Unknown;
    return m_filter && m_filter->selects(*m_index, *s) ? Verdict::Selected : Verdict::Rejected;
}

std::vector<VectorIndex::Judged> VectorIndex::judge(const RecordFilter &filter, const std::vector<qint64> &rowids) const
{
    settled();
    std::vector<Judged> out(rowids.size());
    const std::optional<Filter> f = compile(filter);
    for (std::size_t i = 0; i < rowids.size(); ++i) {
        const std::optional<std::size_t> s = slotOf(rowids[i]);
        if (!s)
            continue; // Unknown
        if (!f || !f->selects(*this, *s)) {
            out[i].verdict = Verdict::Rejected;
            continue;
        }
        out[i].verdict = Verdict::Selected;
        out[i].fields = *rankFields(rowids[i]);
    }
    return out;
}

std::vector<VectorIndex::Hit> VectorIndex::search(const float *query, const RecordFilter &filter, int limit,
                                                  const std::vector<qint64> *onlyRows, Mode mode, bool *walked) const
{
    settled();
    bool unused = false;
    bool &fromGraph = walked ? *walked : unused;
    fromGraph = false;
    if (limit == 0 || size() == 0 || m_dimension <= 0)
        return {};

    const std::optional<Filter> compiled = compile(filter);
    if (!compiled)
        return {};
    const Filter &f = *compiled;

    std::vector<float> unit(static_cast<std::size_t>(m_dimension));
    normalise(query, unit.data(), m_dimension);
    const float *q = unit.data();

    if (!m_ann || onlyRows || limit < 0 || mode == Mode::Exact)
        return exact(q, f, limit, onlyRows);
    if (f.trivial) {
        fromGraph = true;
        return graph(q, f, limit, 1.0);
    }

    // Selectivity, from an evenly spread sample of the graph's nodes.
    const std::size_t nodes = slotCount();
    const std::size_t samples = std::min<std::size_t>(nodes, 2048);
    std::size_t seen = 0, chosen = 0;
    for (std::size_t k = 0; k < samples; ++k) {
        const std::size_t s = k * nodes / samples;
        if (!live(s))
            continue;
        ++seen;
        if (f.selects(*this, s))
            ++chosen;
    }
    const double p = seen ? double(chosen) / double(seen) : 0.0;
    if (mode == Mode::Graph) {
        fromGraph = true;
        return graph(q, f, limit, std::max(p, 1.0 / 64));
    }
    // A small subset costs less to scan exactly than to find in the graph, and is exact.
    if (p < 0.05 || p * double(size()) < 4000)
        return exact(q, f, limit, nullptr);
    std::vector<Hit> hits = graph(q, f, limit, p);
    if (int(hits.size()) < limit)
        return exact(q, f, limit, nullptr); // the walk found too few: never return less than exists
    fromGraph = true;
    return hits;
}

std::vector<VectorIndex::Hit> VectorIndex::exact(const float *q, const Filter &f, int limit,
                                                 const std::vector<qint64> *onlyRows) const
{
    std::vector<std::size_t> slots; // the selected live slots, ascending
    if (onlyRows) {
        for (qint64 rowid : *onlyRows)
            if (const std::optional<std::size_t> s = slotOf(rowid))
                slots.push_back(*s);
        std::sort(slots.begin(), slots.end());
        slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
        slots.erase(std::remove_if(slots.begin(), slots.end(), [&](std::size_t s) { return !f.selects(*this, s); }), slots.end());
    } else if (m_ann && !f.scopeOk.empty()) {
        // The slots of the selected scopes only: the scan costs what the scope holds, not the store.
        slots = slotsOfScopes(f.scopeOk);
        const bool beyond = f.beyondScopes();
        slots.erase(std::remove_if(slots.begin(), slots.end(),
                                   [&](std::size_t s) { return (beyond && !f.selectsBeyondScopes(*this, s)) || !live(s); }),
                    slots.end());
    } else {
        // The filter first: it reads the attribute arrays, live() the graph's node (a cache miss each).
        for (std::size_t s = 0, n = slotCount(); s < n; ++s)
            if (f.selects(*this, s) && live(s))
                slots.push_back(s);
    }
    if (m_ann && limit > 0 && slots.size() > std::size_t(limit) * 8 + 256)
        return screened(q, slots, limit);
    return scored(q, slots, limit);
}

// Every slot scored on its float vector, the best `limit` kept (limit < 0: all, ranked).
std::vector<VectorIndex::Hit> VectorIndex::scored(const float *q, const std::vector<std::size_t> &slots, int limit) const
{
    const std::size_t dim = std::size_t(m_dimension);
    std::vector<Hit> hits;
    // A bounded heap with the worst kept hit on top when there is a limit.
    auto worseOnTop = [](const Hit &a, const Hit &b) { return better(a, b); };
    for (const std::size_t s : slots) {
        const Hit h{m_rowids[s], double(VectorMath::dot(q, vectorAt(s), dim))};
        if (limit < 0) {
            hits.push_back(h);
        } else if (hits.size() < std::size_t(limit)) {
            hits.push_back(h);
            std::push_heap(hits.begin(), hits.end(), worseOnTop);
        } else if (better(h, hits.front())) {
            std::pop_heap(hits.begin(), hits.end(), worseOnTop);
            hits.back() = h;
            std::push_heap(hits.begin(), hits.end(), worseOnTop);
        }
    }
    std::sort(hits.begin(), hits.end(), better);
    return hits;
}

// The same best `limit` as scored(), reading the graph's codes of every slot (a quarter of the bytes)
// and the float vectors of few: each code's score is within a bound of the exact one (Cauchy-Schwarz
// on the rounding: |q.x - q'.x'| <= |q - q'| |x| + |q'| |x - x'|, with |x| <= 1, |q'| <= 1 + |q - q'|
// and |x - x'| the error length the code holds), so once `limit` exact scores are known, a slot whose
// code score plus its bound is below the lowest of them cannot be among the best; every other slot is
// scored exactly.
std::vector<VectorIndex::Hit> VectorIndex::screened(const float *q, const std::vector<std::size_t> &slots, int limit) const
{
    const Graph &g = *m_ann->graph;
    const std::size_t dim = std::size_t(m_dimension);
    std::vector<char> code(codeBytes(dim));
    encode(q, code.data(), dim);
    const double queryError = codeError(code.data()); // |q - q'|
    // Float rounding of both scores (a 32-bit sum of dim products each side) and of the error lengths.
    const double slack = 1e-5;

    struct Screen
    {
        float score;         // from the codes
        float bound;         // the most the exact score can exceed it by
        std::uint32_t index; // into slots
    };
    std::vector<Screen> screen(slots.size());
    for (std::size_t i = 0; i < slots.size(); ++i) {
        // The codes are scattered over the graph's nodes: the one a few slots ahead is asked for now,
        // so that several are on their way from memory at once.
        if (i + kScreenAhead < slots.size())
            graph_walk::prefetchCode(g, hnswlib::tableint(slots[i + kScreenAhead]));
        const char *x = g.getDataByInternalId(hnswlib::tableint(slots[i]));
        screen[i] = {1.0f - codeDistance(code.data(), x, dim), float(queryError + (1 + queryError) * codeError(x) + slack),
                     std::uint32_t(i)};
    }
    // The best `limit` by code score, scored exactly: the lowest of those scores is a floor.
    const auto byCode = [](const Screen &a, const Screen &b) { return a.score > b.score; };
    std::nth_element(screen.begin(), screen.begin() + (limit - 1), screen.end(), byCode);
    std::vector<std::size_t> chosen;
    double floor = std::numeric_limits<double>::max();
    for (int k = 0; k < limit; ++k) {
        const std::size_t s = slots[screen[std::size_t(k)].index];
        floor = std::min(floor, double(VectorMath::dot(q, vectorAt(s), dim)));
        chosen.push_back(s);
    }
    for (std::size_t i = std::size_t(limit); i < screen.size(); ++i)
        if (double(screen[i].score) + double(screen[i].bound) >= floor)
            chosen.push_back(slots[screen[i].index]);
    return scored(q, chosen, limit);
}

std::vector<VectorIndex::Hit> VectorIndex::graph(const float *q, const Filter &f, int limit, double selectivity) const
{
    const Graph &g = *m_ann->graph;
    if (g.cur_element_count == 0)
        return {};
    using Pair = std::pair<float, hnswlib::tableint>;
    // The walk compares codes; the candidates it keeps are scored on the float vectors at the end.
    const std::size_t dim = std::size_t(m_dimension);
    std::vector<char> code(codeBytes(dim));
    encode(q, code.data(), dim);
    auto dist = [&](hnswlib::tableint id) { return codeDistance(code.data(), g.getDataByInternalId(id), dim); };

    // Greedy descent through the upper layers (filters do not apply there: they only route).
    hnswlib::tableint current = g.enterpoint_node_;
    float currentDist = dist(current);
    for (int level = g.maxlevel_; level > 0; --level) {
        bool changed = true;
        while (changed) {
            changed = false;
            const unsigned int *links = g.get_linklist(current, level);
            const int count = g.getListCount(const_cast<unsigned int *>(links));
            const hnswlib::tableint *ids = links + 1;
            for (int i = 0; i < count; ++i) {
                const float d = dist(ids[i]);
                if (d < currentDist) {
                    currentDist = d;
                    current = ids[i];
                    changed = true;
                }
            }
        }
    }

    // The base layer: every node routes, only selected live nodes enter the results. A selective
    // filter widens the candidate list so that enough selected nodes are met.
    // A larger graph needs a longer candidate list for the same recall: efSearch serves up to 100,000
    // nodes and grows with the square of one plus the decimal logarithm beyond (four times at
    // 1,000,000: twice gave an approximate top 10 that agreed with the exact one 0.89 of the time).
    const double nodes = double(size());
    const double growth = nodes > 1e5 ? std::pow(1.0 + std::log10(nodes / 1e5), 2.0) : 1.0;
    std::size_t ef = std::size_t(std::max(int(std::lround(m_params.efSearch * growth)), limit));
    if (!f.trivial && selectivity < 1.0)
        ef = std::size_t(double(ef) * std::min(4.0, 1.0 / std::sqrt(std::max(selectivity, 1e-6))));
    auto allowed = [&](hnswlib::tableint id) { return f.selects(*this, id) && live(id); };

    hnswlib::VisitedList *visitedList = g.visited_list_pool_->getFreeVisitedList();
    hnswlib::vl_type *visited = visitedList->mass;
    const hnswlib::vl_type tag = visitedList->curV;
    std::priority_queue<Pair> top;        // the best allowed so far, worst on top
    std::priority_queue<Pair> candidates; // negated distances: nearest on top
    float lowerBound;
    if (allowed(current)) {
        lowerBound = currentDist;
        top.emplace(currentDist, current);
    } else {
        lowerBound = std::numeric_limits<float>::max();
    }
    candidates.emplace(-currentDist, current);
    visited[current] = tag;
    std::vector<hnswlib::tableint> fresh(g.maxM0_);
    while (!candidates.empty()) {
        const Pair c = candidates.top();
        if (-c.first > lowerBound && top.size() >= ef)
            break;
        candidates.pop();
        const std::size_t count = graph_walk::unvisited(g, g.get_linklist0(c.second), visited, tag, fresh.data());
        graph_walk::visitFetchingAhead(g, fresh.data(), count, [&](hnswlib::tableint id) {
            const float d = dist(id);
            if (top.size() < ef || d < lowerBound) {
                candidates.emplace(-d, id);
                if (allowed(id)) {
                    top.emplace(d, id);
                    if (top.size() > ef)
                        top.pop();
                    lowerBound = top.top().first;
                }
            }
        });
    }
    g.visited_list_pool_->releaseVisitedList(visitedList);

    // The candidates are ranked by their exact scores, computed as in the exact scan, so both paths
    // rank ties alike.
    std::vector<Hit> hits;
    hits.reserve(top.size());
    for (; !top.empty(); top.pop())
        hits.push_back({m_rowids[top.top().second], double(VectorMath::dot(q, vectorAt(top.top().second), dim))});
    std::sort(hits.begin(), hits.end(), better);
    if (hits.size() > std::size_t(limit))
        hits.resize(std::size_t(limit));
    return hits;
}

// ---------------------------------------------------------------------------------------------
// The file: header, attribute tables, per-node attributes, unvectored rowids, the graph (hnswlib's
// own fields, level-0 block and upper-layer link lists), and a trailer with the length before it.

bool VectorIndex::save(const QString &path, const Stamp &stamp, QString *error) const
{
    settled();
    if (!m_ann) {
        *error = QStringLiteral("only an approximate index is written to a file");
        return false;
    }
    const Graph &g = *m_ann->graph;
    const std::size_t nodes = g.cur_element_count;
    // A temporary file of this process beside the index, synced and renamed over it: a reader sees
    // the old file or the new one, whole, and a crash leaves at most a temporary file behind.
    static std::atomic<int> serial{0};
    const QString temporary = QStringLiteral("%1.%2-%3.tmp").arg(path).arg(::getpid()).arg(serial++);
    const QByteArray tmpName = QFile::encodeName(temporary);
    const int fd = ::open(tmpName.constData(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        *error = QStringLiteral("cannot create %1: %2").arg(temporary, QString::fromLocal8Bit(std::strerror(errno)));
        return false;
    }
    FileOps &ops = *g_fileOps.load();
    const auto abandon = [&](const QString &why) {
        *error = why;
        ::close(fd);
        ::unlink(tmpName.constData());
        return false;
    };
    const quint64 expected = quint64(nodes) * (g.size_data_per_element_ + std::size_t(m_dimension) * sizeof(float));
    Writer w(fd, beginDirect(fd, expected));
    if (!w.ok())
        return abandon(QStringLiteral("cannot write %1: no memory for its buffer").arg(temporary));
    w.raw(kMagic, sizeof(kMagic));
    w.pod<quint32>(kFormat);
    w.pod<quint32>(kByteOrder);
    w.pod<qint32>(m_dimension);
    w.pod<qint64>(stamp.generation);
    w.pod<qint64>(stamp.seq);
    w.string(stamp.storeId);
    w.strings(m_scopeNames);
    w.strings(m_sourceNames);
    w.strings(m_categoryNames);
    w.pod<quint32>(quint32(m_catSets.size()));
    for (const auto &set : m_catSets) {
        w.pod<quint32>(quint32(set.size()));
        w.array(set, set.size());
    }
    w.pod<quint64>(nodes);
    w.array(m_rowids, nodes);
    w.array(m_scope, nodes);
    w.array(m_catSet, nodes);
    w.array(m_source, nodes);
    w.array(m_private, nodes);
    w.array(m_created, nodes);
    w.array(m_importance, nodes);
    w.strings(m_identityNames);
    for (const auto &v : m_identity)
        w.array(v, nodes);
    w.pod<quint64>(quint64(m_unvectored.size()));
    for (qint64 r : m_unvectored)
        w.pod<qint64>(r);
    w.pod<quint64>(g.size_data_per_element_);
    w.pod<quint64>(g.label_offset_);
    w.pod<quint64>(g.offsetData_);
    w.pod<qint32>(g.maxlevel_);
    w.pod<quint32>(g.enterpoint_node_);
    w.pod<quint64>(g.maxM_);
    w.pod<quint64>(g.maxM0_);
    w.pod<quint64>(g.M_);
    w.pod<double>(g.mult_);
    w.pod<quint64>(g.ef_construction_);
    w.raw(g.data_level0_memory_, qint64(nodes * g.size_data_per_element_));
    for (std::size_t i = 0; i < nodes; ++i) {
        const quint32 bytes = g.element_levels_[i] > 0 ? quint32(g.size_links_per_element_ * std::size_t(g.element_levels_[i])) : 0;
        w.pod<quint32>(bytes);
        if (bytes)
            w.raw(g.linkLists_[i], bytes);
    }
    w.raw(m_vectors.data(), qint64(nodes * std::size_t(m_dimension) * sizeof(float)));
    const quint64 length = w.total();
    const quint64 sum = w.checksum();
    w.raw(kTrailer, sizeof(kTrailer));
    w.pod<quint64>(sum);
    w.pod<quint64>(length);
    if (!w.flush())
        return abandon(QStringLiteral("cannot write %1 (the disk may be full)").arg(temporary));
    if (!ops.sync(fd))
        return abandon(QStringLiteral("cannot sync %1 to the disk").arg(temporary));
    ::close(fd);
    if (!ops.rename(tmpName, QFile::encodeName(path))) {
        *error = QStringLiteral("cannot rename %1 to %2").arg(temporary, path);
        ::unlink(tmpName.constData());
        return false;
    }
    // The rename itself is durable once the folder is synced (a failure here loses nothing: the file
    // is a cache, rebuilt when it is missing).
    const int dir = ::open(QFile::encodeName(QFileInfo(path).absolutePath()).constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        ops.sync(dir);
        ::close(dir);
    }
    return true;
}

void VectorIndex::setFileOps(FileOps *ops)
{
    g_fileOps.store(ops ? ops : &g_posixOps);
}

quint64 VectorIndex::fileChecksum(const char *data, qint64 size)
{
    Checksum sum;
    sum.add(data, std::size_t(size));
    return sum.value();
}

bool VectorIndex::load(const QString &path, int dimension, Stamp *stamp, QString *error)
{
    invalidate();
    bool ok = false;
    try {
        ok = readFile(path, dimension, stamp, error);
    } catch (const std::exception &e) {
        *error = QString::fromUtf8(e.what());
        ok = false;
    }
    if (!ok) {
        invalidate();
        return false;
    }
    m_loaded = true;
    return true;
}

bool VectorIndex::readFile(const QString &path, int dimension, Stamp *stamp, QString *error)
{
    // One descriptor for the header, the trailer and the body: a file renamed over this one by
    // another process's save meanwhile is not read half from each.
    const int fd = ::open(QFile::encodeName(path).constData(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *error = QString::fromLocal8Bit(std::strerror(errno));
        return false;
    }
    const auto closeFd = qScopeGuard([fd] { ::close(fd); });
    QFile file;
    if (!file.open(fd, QIODevice::ReadOnly, QFileDevice::DontCloseHandle)) {
        *error = file.errorString();
        return false;
    }
    const qint64 fileSize = file.size();
    const qint64 trailerSize = qint64(sizeof(kTrailer) + 2 * sizeof(quint64));
    if (fileSize < qint64(sizeof(kMagic) + 2 * sizeof(quint32)) + trailerSize) {
        *error = QStringLiteral("the file is too short");
        return false;
    }
    // The header and the trailer first: a file of another format, or cut short, is refused before
    // anything is allocated.
    char head[sizeof(kMagic) + 2 * sizeof(quint32)];
    if (file.read(head, sizeof(head)) != qint64(sizeof(head)) || std::memcmp(head, kMagic, sizeof(kMagic)) != 0) {
        *error = QStringLiteral("not a Mneme vector index");
        return false;
    }
    quint32 headFormat = 0, headOrder = 0;
    std::memcpy(&headFormat, head + sizeof(kMagic), sizeof(quint32));
    std::memcpy(&headOrder, head + sizeof(kMagic) + sizeof(quint32), sizeof(quint32));
    if ((headFormat != kFormat && headFormat != kFloatGraphFormat) || headOrder != kByteOrder) {
        *error = headFormat < kFloatGraphFormat
                   ? QStringLiteral("written by an older Mneme (format %1, without a checksum)").arg(headFormat)
                   : QStringLiteral("not a Mneme vector index of this format");
        return false;
    }
    // Format 3 held the float vectors in the graph, format 4 holds codes there (made again from the
    // vectors after them).
    const bool floatGraph = headFormat == kFloatGraphFormat;
    char trailer[sizeof(kTrailer)];
    quint64 checksum = 0;
    quint64 length = 0;
    if (!file.seek(fileSize - trailerSize) || file.read(trailer, sizeof(trailer)) != qint64(sizeof(trailer))
        || file.read(reinterpret_cast<char *>(&checksum), sizeof(checksum)) != qint64(sizeof(checksum))
        || file.read(reinterpret_cast<char *>(&length), sizeof(length)) != qint64(sizeof(length))
        || std::memcmp(trailer, kTrailer, sizeof(kTrailer)) != 0 || length != quint64(fileSize - trailerSize)) {
        *error = QStringLiteral("the file is incomplete");
        return false;
    }
    // The body is read from the start again (the reader's own positioned reads), around the page cache
    // where that is worth it and the file system allows it.
    beginDirect(fd, quint64(fileSize));
    Reader r(fd, length);
    char magic[sizeof(kMagic)];
    r.raw(magic, sizeof(magic));
    r.pod<quint32>(); // the format and the byte order, checked above
    r.pod<quint32>();
    if (r.pod<qint32>() != dimension || dimension <= 0) {
        *error = QStringLiteral("the file holds vectors of another dimension");
        return false;
    }
    stamp->generation = r.pod<qint64>();
    stamp->seq = r.pod<qint64>();
    stamp->storeId = r.string();
    m_dimension = dimension;
    m_scopeNames = r.strings();
    m_sourceNames = r.strings();
    m_categoryNames = r.strings();
    for (qsizetype i = 0; i < m_scopeNames.size(); ++i)
        m_scopeIds.insert(m_scopeNames.at(i), int(i));
    for (qsizetype i = 0; i < m_sourceNames.size(); ++i)
        m_sourceIds.insert(m_sourceNames.at(i), int(i));
    for (qsizetype i = 0; i < m_categoryNames.size(); ++i)
        m_categoryIds.insert(m_categoryNames.at(i), int(i));
    const quint32 sets = r.pod<quint32>();
    if (!r.ok() || sets > (1u << 26))
        r.fail();
    for (quint32 i = 0; i < sets && r.ok(); ++i) {
        std::vector<std::int32_t> set;
        const quint32 n = r.pod<quint32>();
        r.array(set, n);
        QString key;
        for (std::int32_t c : set) {
            if (c < 0 || c >= m_categoryNames.size())
                r.fail();
            key += QString::number(c) + QLatin1Char(',');
        }
        m_catSetIds.insert(key, int(m_catSets.size()));
        m_catSets.push_back(std::move(set));
    }
    const quint64 nodes = r.pod<quint64>();
    if (!r.ok() || nodes > length / std::max<quint64>(1, quint64(dimension) * sizeof(float))) {
        *error = QStringLiteral("the file is damaged (attribute tables)");
        return false;
    }
    r.array(m_rowids, nodes);
    r.array(m_scope, nodes);
    r.array(m_catSet, nodes);
    r.array(m_source, nodes);
    r.array(m_private, nodes);
    r.array(m_created, nodes);
    r.array(m_importance, nodes);
    m_identityNames = r.strings();
    m_identityIds.clear();
    for (qsizetype i = 0; i < m_identityNames.size(); ++i)
        m_identityIds.insert(m_identityNames.at(i), int(i));
    for (auto &v : m_identity)
        r.array(v, nodes);
    if (m_identityNames.isEmpty() || !m_identityNames.first().isEmpty())
        r.fail();
    const quint64 unvectored = r.pod<quint64>();
    if (!r.ok() || unvectored > length / sizeof(qint64)) {
        *error = QStringLiteral("the file is damaged (attributes)");
        return false;
    }
    m_unvectored.reserve(qsizetype(unvectored));
    for (quint64 i = 0; i < unvectored && r.ok(); ++i)
        m_unvectored.insert(r.pod<qint64>());
    for (std::size_t s = 0; s < nodes; ++s) {
        bool identityOk = true;
        for (const auto &v : m_identity)
            identityOk = identityOk && v[s] >= 0 && v[s] < m_identityNames.size();
        if (m_scope[s] < 0 || m_scope[s] >= m_scopeNames.size() || m_source[s] < 0 || m_source[s] >= m_sourceNames.size()
            || m_catSet[s] < 0 || std::size_t(m_catSet[s]) >= m_catSets.size() || !identityOk) {
            *error = QStringLiteral("the file is damaged (attribute indexes)");
            return false;
        }
    }

    auto ann = std::make_unique<Ann>();
    ann->space = std::make_unique<CodeSpace>(std::size_t(dimension));
    ann->graph = std::make_unique<Graph>(ann->space.get());
    Graph &g = *ann->graph;
    // The bare constructor initialises nothing; what the destructor frees must be valid first.
    g.data_level0_memory_ = nullptr;
    g.linkLists_ = nullptr;
    g.visited_list_pool_ = nullptr;
    g.cur_element_count = 0;
    g.num_deleted_ = 0;
    g.metric_distance_computations = 0;
    g.metric_hops = 0;

    g.offsetLevel0_ = 0;
    g.size_data_per_element_ = r.pod<quint64>();
    g.label_offset_ = r.pod<quint64>();
    g.offsetData_ = r.pod<quint64>();
    g.maxlevel_ = r.pod<qint32>();
    g.enterpoint_node_ = r.pod<quint32>();
    g.maxM_ = r.pod<quint64>();
    g.maxM0_ = r.pod<quint64>();
    g.M_ = r.pod<quint64>();
    g.mult_ = r.pod<double>();
    g.ef_construction_ = r.pod<quint64>();
    const std::size_t dim = std::size_t(dimension);
    // What one node's vector takes in the file's level-0 block, and in memory.
    const std::size_t fileData = floatGraph ? dim * sizeof(float) : codeBytes(dim);
    const std::size_t fileElement = g.size_data_per_element_;
    g.data_size_ = ann->space->get_data_size();
    g.fstdistfunc_ = ann->space->get_dist_func();
    g.dist_func_param_ = ann->space->get_dist_func_param();
    g.size_links_per_element_ = g.maxM_ * sizeof(hnswlib::tableint) + sizeof(hnswlib::linklistsizeint);
    g.size_links_level0_ = g.maxM0_ * sizeof(hnswlib::tableint) + sizeof(hnswlib::linklistsizeint);
    if (!r.ok() || g.maxM_ == 0 || g.maxM_ > 10000 || g.maxM0_ < g.maxM_ || g.maxM0_ > 20000 || g.offsetData_ != g.size_links_level0_
        || g.label_offset_ != g.offsetData_ + fileData || g.size_data_per_element_ != g.label_offset_ + sizeof(hnswlib::labeltype)
        || g.maxlevel_ < (nodes ? 0 : -1) || g.maxlevel_ > 64 || (nodes && g.enterpoint_node_ >= nodes) || !(g.mult_ > 0)) {
        *error = QStringLiteral("the file is damaged (graph parameters)");
        return false;
    }
    g.revSize_ = 1.0 / g.mult_;
    g.ef_ = 10;
    g.label_offset_ = g.offsetData_ + g.data_size_;
    g.size_data_per_element_ = g.label_offset_ + sizeof(hnswlib::labeltype);
    const std::size_t capacity = std::size_t(nodes) + std::max<std::size_t>(1024, std::size_t(nodes) / 8);
    g.max_elements_ = capacity;
    g.data_level0_memory_ = static_cast<char *>(std::malloc(capacity * g.size_data_per_element_));
    adviseHugePagesOfAllocation(g.data_level0_memory_);
    g.linkLists_ = static_cast<char **>(std::calloc(capacity, sizeof(char *)));
    if (!g.data_level0_memory_ || !g.linkLists_)
        throw std::bad_alloc();
    g.element_levels_ = std::vector<int>(capacity, 0);
    std::vector<std::mutex>(capacity).swap(g.link_list_locks_);
    std::vector<std::mutex>(Graph::max_update_element_locks).swap(g.link_list_update_locks_);
    g.visited_list_pool_ = new hnswlib::VisitedListPool(1, int(capacity));
    m_vectors.resize(std::size_t(nodes) * dim);
    if (floatGraph) {
        for (std::size_t i = 0; i < nodes && r.ok(); ++i) {
            char *element = g.data_level0_memory_ + i * g.size_data_per_element_;
            float *vector = m_vectors.data() + i * dim;
            r.raw(element, g.offsetData_); // the links
            r.raw(vector, fileData);
            r.raw(element + g.label_offset_, sizeof(hnswlib::labeltype));
        }
    } else {
        r.raw(g.data_level0_memory_, nodes * fileElement);
    }
    g.cur_element_count = nodes;
    for (std::size_t i = 0; i < nodes && r.ok(); ++i) {
        const quint32 bytes = r.pod<quint32>();
        if (bytes == 0)
            continue;
        if (bytes % g.size_links_per_element_ != 0 || bytes / g.size_links_per_element_ > std::size_t(g.maxlevel_)) {
            r.fail();
            break;
        }
        g.linkLists_[i] = static_cast<char *>(std::malloc(bytes));
        if (!g.linkLists_[i])
            throw std::bad_alloc();
        g.element_levels_[i] = int(bytes / g.size_links_per_element_);
        r.raw(g.linkLists_[i], bytes);
    }
    if (!floatGraph)
        r.raw(m_vectors.data(), quint64(nodes) * dim * sizeof(float));
    if (!r.ok() || r.position() != length) {
        *error = QStringLiteral("the file is damaged (graph)");
        return false;
    }
    if (r.checksum() != checksum) {
        *error = QStringLiteral("the file is damaged (its checksum does not match)");
        return false;
    }
    // Values a search relies on, whatever wrote them: a NaN importance or vector component would
    // order a record out of every result, a privacy flag other than 0 or 1 is not one of ours.
    // A format-4 file's codes are read as they are: the checksum covers them as it covers the float
    // vectors they were made from, and a file that lied about either would mislead an exact scan
    // alike; a code's scale and error length must still be numbers a distance can use.
    const bool vectorsFinite = allFinite(m_vectors.data(), m_vectors.size()); // else the node is looked for
    for (std::size_t s = 0; s < nodes; ++s) {
        const float *v = vectorAt(s);
        char *code = g.data_level0_memory_ + s * g.size_data_per_element_ + g.offsetData_;
        if (floatGraph)
            encode(v, code, dim);
        const bool usable = std::isfinite(m_importance[s]) && m_private[s] <= 1 && (vectorsFinite || allFinite(v, dim))
                         && std::isfinite(codeScale(code)) && codeScale(code) >= 0 && std::isfinite(codeError(code))
                         && codeError(code) >= 0;
        if (!usable) {
            *error = QStringLiteral("the file is damaged (values of node %1)").arg(s);
            return false;
        }
    }
    // The entry point sits on the top level; every link must name a node that has the link's level;
    // every label must be the rowid recorded for its node.
    if (nodes && g.element_levels_[g.enterpoint_node_] != g.maxlevel_) {
        *error = QStringLiteral("the file is damaged (entry point)");
        return false;
    }
    g.label_lookup_.reserve(nodes);
    for (std::size_t i = 0; i < nodes; ++i) {
        for (int level = 0; level <= g.element_levels_[i]; ++level) {
            const unsigned int *links = g.get_linklist_at_level(hnswlib::tableint(i), level);
            const std::size_t count = g.getListCount(const_cast<unsigned int *>(links));
            if (count > (level == 0 ? g.maxM0_ : g.maxM_)) {
                *error = QStringLiteral("the file is damaged (links)");
                return false;
            }
            for (std::size_t k = 1; k <= count; ++k) {
                // A neighbour at this level must exist at this level, or a search would follow a link
                // list that is not there.
                if (links[k] >= nodes || g.element_levels_[links[k]] < level) {
                    *error = QStringLiteral("the file is damaged (links)");
                    return false;
                }
            }
        }
        const hnswlib::labeltype label = g.getExternalLabel(hnswlib::tableint(i));
        if (label != hnswlib::labeltype(m_rowids[i])) {
            *error = QStringLiteral("the file is damaged (labels)");
            return false;
        }
        if (!g.label_lookup_.emplace(label, hnswlib::tableint(i)).second) {
            *error = QStringLiteral("the file is damaged (a record is in it twice)");
            return false;
        }
        if (g.isMarkedDeleted(hnswlib::tableint(i)))
            ++g.num_deleted_;
    }
    m_ann = std::move(ann);
    return true;
}

VectorSearchAnswer VectorIndex::answerOf(bool walked, bool building) const
{
    static const QLocale english(QLocale::English);
    const QString n = english.toString(qulonglong(size()));
    VectorSearchAnswer a;
    a.method = walked ? VectorSearchAnswer::Method::Index : VectorSearchAnswer::Method::Exact;
    a.indexBuilding = building;
    if (walked)
        a.detail = QStringLiteral("HNSW graph of %1 records").arg(n);
    else if (building)
        a.detail = QStringLiteral("exact scan of %1 records: the HNSW graph is being built").arg(n);
    else if (isAnn())
        a.detail = QStringLiteral("exact scan of the records the filter selects (HNSW graph of %1 records)").arg(n);
    else
        a.detail = QStringLiteral("exact scan of %1 records").arg(n);
    return a;
}

} // namespace mneme
