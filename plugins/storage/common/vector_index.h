#pragma once

#include "float_array.h"

#include <mneme/core/record_filter.h>
#include <mneme/core/storage_backend.h>

#include <QHash>
#include <QSet>
#include <QString>
#include <QStringList>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace mneme {

// The in-process copy of every stored embedding of one store, with the record attributes that
// RecordFilter tests (scope, categories, source, privacy, creation time) and the importance, so a
// search scores, filters and ranks without touching the database. Vectors are stored L2-normalised, so
// a score is one dot product. Not thread-safe: the storage backend that owns it guards it with its own
// mutex (SqliteStorage's index mutex).
//
// Two layouts:
// - flat (small stores): vectors in one contiguous array, searched by an exact scan; a removal moves
//   the last slot into the hole.
// - approximate (large stores, after buildAnn() or load()): the vectors have an HNSW graph (hnswlib,
//   inner product on 8-bit codes of the normalised vectors: a quarter of the memory a walk reads)
//   whose labels are the rowids; slot = the graph's internal id, a removal marks the node deleted.
//   The float vectors stay beside the graph, and every score a search returns is computed on them. Searches without filters walk the graph; filtered ones walk
//   it with the filter applied to every candidate (a filtered-out record never enters the results),
//   or scan the filtered subset exactly when it is small (a scoped scan reads the lists of its scopes' slots,
//   not every slot). The graph, the attributes and the vectors
//   can be written to a file (save()) and read back (load()) without rebuilding.
//
// Records whose embedding is missing or of another length are tracked as "unvectored", so that the
// number of records the index accounts for can be checked against the table.
class VectorIndex
{
public:
    // The attributes of one record that filters look at.
    struct Item
    {
        qint64 rowid = 0;
        QString scope;
        QStringList categories;
        QString source;
        bool isPrivate = false;
        bool hasCreated = false;
        qint64 createdMs = 0; // milliseconds since the epoch, UTC
        double importance = 0;
        // The Mem0-style identity keys of the metadata (RecordFilter::identityKeys(): user_id, agent_id,
        // run_id): the string value, empty when the key is missing, identityOther() for another value.
        std::array<QString, 3> identity;
    };
    // The identity of a record whose metadata holds a non-string value at an identity key: never
    // equal to a filter's string, still present for $exists.
    static QString identityOther();
    // Reads the identity fields of an item from a record's metadata.
    static std::array<QString, 3> identityOf(const Json &metadata);
    // Whether the index judges every condition of a metadata filter by itself: equality with a string
    // and $exists on the identity keys. Other conditions must be checked on the records.
    static bool judges(const MetadataFilter &conditions);

    // What ranking needs of an indexed record besides its similarity.
    struct RankFields
    {
        double importance = 0;
        bool hasCreated = false;
        qint64 createdMs = 0;
    };

    struct Hit
    {
        qint64 rowid = 0;
        double score = 0; // cosine similarity
    };

    struct AnnParams
    {
        // More links and a shorter insert list than hnswlib's usual 16 and 100: on realistic text the
        // same recall for about a tenth less of a bulk load's processor time (docs/performance-notes.md).
        int m = 24;              // graph degree (HNSW M); 2 * m links a node at level 0
        int efConstruction = 72; // candidate list while inserting
        int efSearch = 240;      // candidate list while searching (at least the limit), up to 100,000
                                 // vectors; times (1 + log10(n / 100,000))^2 beyond
    };

    // How search() finds neighbours: Auto picks by layout and filter selectivity; Exact always scans;
    // Graph walks the HNSW graph (filter applied during the walk) whenever there is one.
    enum class Mode {
        Auto,
        Exact,
        Graph
    };

    // What the file written by save() says about the store it reflects.
    struct Stamp
    {
        QString storeId;
        qint64 generation = 0;
        qint64 seq = 0;
    };

    VectorIndex();
    ~VectorIndex();
    VectorIndex(const VectorIndex &) = delete;
    VectorIndex &operator=(const VectorIndex &) = delete;
    VectorIndex &operator=(VectorIndex &&other) noexcept;

    // Empties the index (flat layout) and fixes the vector length of what it will hold; marks it loaded.
    void reset(int dimension);
    // Forgets everything and marks it not loaded (the next search reloads it).
    void invalidate();
    bool isLoaded() const { return m_loaded; }
    int dimension() const { return m_dimension; }
    bool isAnn() const { return m_ann != nullptr; }
    void setParams(const AnnParams &params) { m_params = params; }
    const AnnParams &params() const { return m_params; }

    // Records with a vector.
    std::size_t size() const;
    // Records with a vector plus unvectored records: what `SELECT count(*) FROM records` should say.
    std::size_t trackedCount() const { return size() + std::size_t(m_unvectored.size()); }
    // Removed nodes still in the graph (approximate layout), and all nodes.
    std::size_t deletedNodes() const;
    std::size_t graphNodes() const;

    // Adds the item or replaces the one with the same rowid. `vector` has dimension() floats.
    void upsert(const Item &item, const float *vector);
    // Replaces the attributes of an indexed record, keeping its vector; no-op when it is not indexed.
    void updateAttributes(const Item &item);
    // Records a row without a usable vector (removing any vector it had).
    void markUnvectored(qint64 rowid);
    void remove(qint64 rowid);
    bool contains(qint64 rowid) const;
    // Every rowid the index accounts for (with or without a vector), in no particular order.
    std::vector<qint64> trackedRowids() const;
    // The importance and creation time of an indexed record; nothing when it has no vector here.
    std::optional<RankFields> rankFields(qint64 rowid) const;
    // The cosine similarity of `query` (dimension() floats, any length) to the record's vector;
    // nothing when it has no vector here.
    std::optional<double> similarity(const float *query, qint64 rowid) const;

    // Of these rowids, which the filter's scope, category, time, source, privacy and identity conditions
    // select (as search() does; id and other metadata conditions are not looked at), with their rank
    // fields: Unknown for a rowid without a vector here, which only its record can judge.
    enum class Verdict {
        Unknown,
        Rejected,
        Selected
    };
    struct Judged
    {
        Verdict verdict = Verdict::Unknown;
        RankFields fields; // when Selected
    };
    std::vector<Judged> judge(const RecordFilter &filter, const std::vector<qint64> &rowids) const;
private:
    struct Filter; // a RecordFilter's conditions on the index's attributes (vector_index.cpp)

public:
    // The same verdicts one rowid at a time, the filter read once (for a scan that asks about each of
    // many rows, such as a full-text match). Valid while the index is not changed.
    class Judge
    {
    public:
        // Whether some record with a vector here may be rejected (false: the filter has no condition
        // the index judges, and every verdict is Selected or Unknown).
        bool selective() const { return m_selective; }
        Verdict verdict(qint64 rowid) const;

    private:
        friend class VectorIndex;
        const VectorIndex *m_index = nullptr;
        std::shared_ptr<const Filter> m_filter; // null: the filter selects no record
        bool m_selective = false;
    };
    Judge judgeFor(const RecordFilter &filter) const;

    // One record's state, for making it the same in an index (apply()).
    struct Change
    {
        enum class Kind {
            Put,        // the vector and attributes of item.rowid
            Unvectored, // item.rowid has no usable vector
            Remove      // item.rowid is gone
        };
        Kind kind = Kind::Remove;
        Item item;
        const float *vector = nullptr; // Put: dimension() floats, any length; read during apply() only
    };
    // Applies the changes in order (as upsert(), markUnvectored() and remove() one by one would). In
    // the approximate layout of a graph of at least kParallelFrom nodes, each run of puts of records
    // new to the graph is inserted with `threads` threads: a batch of a bulk load enters the graph
    // with every core, on the writer's side. Smaller graphs are changed on one thread, so that they come
    // out the same on every run. With `background`, a last such run is left running when apply()
    // returns (the caller writes its next batch meanwhile); every later call but isLoaded(),
    // dimension(), isAnn(), params(), size() and trackedCount() waits for it first (settle()).
    void apply(const std::vector<Change> &changes, int threads, bool background = false);
    // Waits for the inserts apply() left running and files their attributes. Their failure (out of
    // memory) is rethrown, the index invalidated.
    void settle();
    static constexpr std::size_t kParallelFrom = 10000;

    // Converts the flat layout into the approximate one, inserting with `threads` threads. With
    // `cancel`, stops soon after it is set, returning false with the index as it was (flat).
    bool buildAnn(int threads, const std::atomic<bool> *cancel = nullptr);
    // A copy of the flat layout (for a graph built away from this index); null for the approximate one.
    std::unique_ptr<VectorIndex> flatCopy() const;
    // Makes the record `rowid` what it is in `other` (same dimension): its vector and attributes, or
    // unvectored, or absent.
    void copyRecord(const VectorIndex &other, qint64 rowid);

    // The records the filter's scope, category, time, source, privacy and identity conditions select, by
    // descending cosine similarity to `query` (ties: lower rowid first). Id conditions and metadata
    // conditions other than judges() accepts are not looked at: pass the rowids the ids select as
    // `onlyRows` (nullptr: no id condition), and check the others on the records.
    // At most `limit` hits; limit < 0 returns every selected record, ranked (exactly).
    // With `walked`, whether the hits came from the graph (else from an exact scan).
    std::vector<Hit> search(const float *query, const RecordFilter &filter, int limit,
                            const std::vector<qint64> *onlyRows = nullptr, Mode mode = Mode::Auto, bool *walked = nullptr) const;
    // How a search() answered, for SearchResult::answer: `walked` as search() said, `building` when a
    // graph of this index is being built elsewhere (searches scan exactly meanwhile).
    VectorSearchAnswer answerOf(bool walked, bool building) const;

    // Writes the approximate layout to `path`: a temporary file beside it, with a checksum of its
    // content, synced, renamed over it, and the folder synced. False with *error when it cannot
    // (the temporary file removed, the file at `path` as it was); the flat layout is never written.
    bool save(const QString &path, const Stamp &stamp, QString *error) const;
    // Replaces the content with the file's (approximate layout). False with *error, leaving the index
    // not loaded, when the file is missing, of an older format, damaged (its checksum, its structure or
    // a value such as a NaN importance) or for another dimension.
    bool load(const QString &path, int dimension, Stamp *stamp, QString *error);

    // The file operations save() makes, replaceable by tests that inject failures (a failed or
    // partial write, a failed sync or rename). The default is the operating system's.
    class FileOps
    {
    public:
        virtual ~FileOps() = default;
        // Writes `size` bytes at the file's position; returns how many were written, -1 on failure.
        virtual qint64 write(int fd, const char *data, qint64 size) = 0;
        virtual bool sync(int fd) = 0;
        virtual bool rename(const QByteArray &from, const QByteArray &to) = 0;
    };
    // Uses `ops` for every later save() in this process (null: the operating system's again).
    static void setFileOps(FileOps *ops);
    // The checksum a file's trailer holds of its first `size` bytes (everything before the trailer):
    // for tools and fuzzers that change a file and want it read past its checksum.
    static quint64 fileChecksum(const char *data, qint64 size);

private:
    struct Ann;
    struct ScopeSlots;

    Item itemAt(std::size_t slot) const;
    int intern(QHash<QString, int> &table, QStringList &names, const QString &value);
    int internCategories(const QStringList &categories);
    void fill(std::size_t slot, const Item &item);
    void growSlots(std::size_t slots);
    std::size_t slotCount() const;
    bool live(std::size_t slot) const;
    std::optional<std::size_t> slotOf(qint64 rowid) const;
    // Approximate layout: moves a filed slot from one scope's list to another's (fill()).
    void refile(std::size_t slot, std::int32_t from, std::int32_t to);
    // Approximate layout: the slots (live or not) of the scopes `scopeOk` marks, ascending, filing the
    // slots added since the last call first.
    std::vector<std::size_t> slotsOfScopes(const std::vector<std::uint8_t> &scopeOk) const;
    const float *vectorAt(std::size_t slot) const;
    // Makes room in m_vectors for `slots` slots.
    void growVectors(std::size_t slots);
    struct Pending;
    // Inserts the puts changes[first, last) (rowids new to the graph) with `threads` threads; with
    // `background`, leaves them running (m_pending).
    void insertNew(const std::vector<Change> &changes, std::size_t first, std::size_t last, int threads, bool background);
    void finish(const Pending &p);
    // settle() for the reading members: the content they read is the same after it.
    void settled() const;
    std::vector<Hit> exact(const float *query, const Filter &f, int limit, const std::vector<qint64> *onlyRows) const;
    std::vector<Hit> scored(const float *query, const std::vector<std::size_t> &slots, int limit) const;
    std::vector<Hit> screened(const float *query, const std::vector<std::size_t> &slots, int limit) const;
    // The filter's conditions on this index's attributes; nothing when it can select no record.
    std::optional<Filter> compile(const RecordFilter &filter) const;
    std::vector<Hit> graph(const float *query, const Filter &f, int limit, double selectivity) const;
    bool readFile(const QString &path, int dimension, Stamp *stamp, QString *error);

    // Threads: every member is the owner's (under its lock) except what a run of inserts left in the
    // background writes (m_pending's own fields, the graph, the new nodes' slots of m_vectors) until
    // settle() joins it; and the graph's lists of slots by scope (Ann::scopes), which const searches
    // running at once under an owner's shared lock file under their own mutex (taken alone). First of
    // the members: a move-assignment replaces it (joining it) before the graph it writes.
    std::unique_ptr<Pending> m_pending;
    bool m_loaded = false;
    int m_dimension = 0;
    AnnParams m_params;

    // Per slot. Flat layout: slots 0..size()-1 are all live. Approximate: slot = graph node.
    std::vector<qint64> m_rowids;
    std::vector<std::int32_t> m_scope;  // index into m_scopeNames; approximate layout: written by fill() only (the scope lists follow it)
    std::vector<std::int32_t> m_catSet; // index into m_catSets
    std::vector<std::int32_t> m_source; // index into m_sourceNames
    std::vector<std::uint8_t> m_private;
    std::vector<qint64> m_created; // INT64_MIN when unknown
    std::vector<double> m_importance;
    std::array<std::vector<std::int32_t>, 3> m_identity; // index into m_identityNames; 0 is "" (missing)

    // The normalised vectors, dimension() floats per slot: every score is computed on these. The graph
    // holds 8-bit codes of them (for finding candidates); the approximate layout may hold more slots
    // than nodes.
    FloatArray m_vectors;
    QHash<qint64, std::uint32_t> m_slotOfRow; // flat layout only (the graph has its own label map)
    std::unique_ptr<Ann> m_ann;
    QSet<qint64> m_unvectored;

    QHash<QString, int> m_scopeIds;
    QStringList m_scopeNames;
    QHash<QString, int> m_sourceIds;
    QStringList m_sourceNames;
    QHash<QString, int> m_categoryIds;
    QStringList m_categoryNames;
    QHash<QString, int> m_catSetIds; // sorted category ids joined by ','
    std::vector<std::vector<std::int32_t>> m_catSets;
    QHash<QString, int> m_identityIds;
    QStringList m_identityNames;
};

} // namespace mneme
