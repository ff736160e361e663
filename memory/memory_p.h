#pragma once

// Private implementation of Memory. Not installed; not part of the API.

#include "memory/graph_memory_p.h"
#include "memory/llm_analysis_p.h"
#include "memory/memory_locks_p.h"
#include "memory/serial_executor_p.h"
#include <mneme/memory/memory.h>

#include <QFuture>
#include <QHash>
#include <QThreadPool>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <atomic>
#include <deque>
#include <future>
#include <type_traits>

namespace mneme {

class MemoryPrivate
{
public:
    MemoryPrivate(Memory *q, const MemoryConfig &config);

    // One resolved save item.
    struct Item
    {
        MemoryInput input;
        MemoryRecord record; // resolved fields; id empty until inserted
        bool dropped = false;
        QString existingId; // identical record already stored
        // Save analysis and consolidation (not for conversation turns).
        std::vector<MemoryRecord> similar;     // stored records of the same source and privacy, best first
        std::vector<double> similarity;        // their cosine similarities
        std::optional<ConsolidationPlan> plan; // set when consolidation ran (LLM or fallback)
        QString mergedInto;                    // not inserted: the stored record that now holds it
    };

    // How a conversation's turns borrow meaning from their neighbours (window 0: not at all).
    struct TurnContext
    {
        int window = 0;
        double weight = 0;
        bool conversation = false; // every item is stored: no exact-duplicate lookup, no intra-batch dedup
    };

    void openParts(std::shared_ptr<StorageBackend> storage, std::shared_ptr<Embedder> embedder);
    void checkOpen() const;
    // Throws Error(Internal) on the writer thread, where a blocking call would wait for itself.
    void checkNotOnWriter(const char *what) const;
    void checkWritable(const char *what) const;

    // Validates and resolves the fields of one item (throws Error for bad input).
    Item resolve(const MemoryInput &input) const;
    // resolve(), except that a blank item is kept as dropped (a batch skips blanks, remember refuses them).
    Item batchItem(const MemoryInput &input) const;
    // The vectors of a queued batch's items, computed ahead of its turn (a local embedder only).
    struct EmbedAhead
    {
        QStringList texts;                           // the contents of the batch's items not dropped
        std::future<std::vector<Embedding>> vectors; // valid once started
    };
    // Runs the save pipeline on a batch in the background, with the save signals.
    QFuture<SaveResult> submitBatch(std::vector<Item> items, const QString &startedValue, TurnContext context);
    // On the writer, as a batch's job starts: takes `own` off the queue of batches to embed ahead and
    // starts embedding the next one, so that its vectors are ready when the writer gets to it.
    void embedNextAhead(const std::shared_ptr<EmbedAhead> &own);
    // Submits work to the writer and tracks it for drainWrites(). A job that may write records emits
    // recordsChanged() when it succeeds; `changesRecords` false is for jobs that write nothing a view
    // shows (access statistics, a conversation's summary).
    template<typename T, typename F>
    QFuture<T> submit(F &&work, bool changesRecords = true);
    // Runs a read on the reader pool (where it waits for the read barrier, not the caller) and tracks
    // it for close(): the *Async reads.
    template<typename F>
    QFuture<std::invoke_result_t<F>> readLater(F &&work);
    // Runs `work` with no save queued or running meanwhile: refused on the writer thread (`what`
    // names the call), then under the submit lock, after every earlier save.
    template<typename F>
    auto exclusively(const char *what, F &&work);
    // Adds a batch to the queue of batches embedded ahead; the caller holds the submit lock, so the
    // queue's order is the writer's.
    void queueAhead(const std::shared_ptr<EmbedAhead> &batch);

    // Save pipeline stages between dedup and insert (save_pipeline.cpp): finds similar stored records,
    // fills missing fields (LLM save analysis, or the offline analyzer without an LLM, or defaults when
    // the LLM fails) and asks the LLM for a consolidation plan when a stored record is close enough.
    // Marks identical items as existing. Throws only for storage and embedder failures.
    void analyzeItems(std::vector<Item> &items, const std::vector<size_t> &active);
    // Without an LLM: the similar records that vote for the scopes of `voting`, for the whole batch.
    void analyzeOfflineBatch(std::vector<Item> &items, const std::vector<size_t> &voting);
    // Carries out the consolidation plans (deletes, then updates re-embedded in one call) and marks the
    // items a stored record now covers (mergedInto). Returns {updated, deleted}.
    std::pair<int, int> applyPlans(std::vector<Item> &items, const std::vector<size_t> &active);

    QList<MemoryMatch> recallNow(const QString &query, const RecallOptions &options);
    // Memory::undo()'s work, on the writer thread (so no save runs between its read of the history
    // and its write).
    MemoryRecord undoNow(const QString &id, const ReadContext &caller);
    // Memory::update()'s work on the writer: `checked` holds values already validated.
    MemoryRecord updateNow(const QString &id, const UpdateOptions &checked, const ReadContext &caller);
    // The filter of a RecordQuery for `reader` (scopes resolved under the root); throws for bad input.
    RecordFilter queryFilter(const RecordQuery &query, const ReadContext &reader) const;
    // One hybrid search (vectors + keywords) over what `filter` selects, scored and sorted, at most
    // `limit` matches. The shallow recall is exactly this; deep recall runs it per query and scope.
    // Only candidates whose relevance is at least `floor` (and positive) are ranked and returned.
    QList<MemoryMatch> rank(const QString &text, const Embedding &queryVector, const RecordFilter &filter, int limit,
                            const QDateTime &now, double floor);
    // rank() on the backend's two-phase search: hits scored from their ranking fields, and only the
    // records of the `limit` best read.
    QList<MemoryMatch> rankHits(const QString &text, const std::vector<SearchHit> &vectorHits, const std::vector<SearchHit> &keywordHits,
                                const RecordFilter &filter, int limit, const QDateTime &now, double floor);
    // Graph memory's evidence for deep recall: the records the query's relations came from (graph
    // recall over what `filter` sees, relations valid at `asOf`) join `matches` (ranked like rank()),
    // and each of them is raised by graph_weight times its best relation's score and gains the reason
    // "graph"; then `matches` is sorted again. Nothing when graph memory is off or `matches` is empty
    // (the relevance floor found nothing relevant).
    void addGraphEvidence(QList<MemoryMatch> &matches, const QString &text, const Embedding &queryVector,
                          const RecordFilter &filter, int limit, const QDateTime &now, const QDateTime &asOf);
    // The shallow recall: rank() over the recall's filter, with graph memory's evidence when it is on.
    QList<MemoryMatch> shallowRecall(const QString &text, const RecallOptions &o, const QStringList &scopes,
                                     const QStringList &categories, const QDateTime &now);
    // The relevance floor of a recall: its own, else min_relevance.
    double relevanceFloor(const RecallOptions &options) const;
    // Best first: score, then semantic similarity, then id (a total order).
    static bool ranksBefore(const MemoryMatch &a, const MemoryMatch &b);
    static void sortMatches(QList<MemoryMatch> &matches);
    // Notes the recalled records' access; the writer records the accesses noted so far at most
    // kTouchIntervalMs later (one transaction for many recalls), or at drainWrites() / close().
    void touchLater(const QList<MemoryMatch> &matches);
    // Writes the noted accesses (on the writer thread).
    void flushTouches();
    // Waits for every submitted save (the read barrier), without flushing noted accesses.
    void drainSaves();
    // The query's embedding (one embedder call); throws Error(Embedder).
    Embedding embedQuery(const QString &text);
    // One embedder call for all texts; throws Error(Embedder) when it fails or returns another count.
    std::vector<Embedding> embedAll(const QStringList &texts);
    // Whether an LLM is configured. One that cannot be built (unknown provider, no API key) counts:
    // its calls fail, and the analysis falls back as documented.
    bool llmConfigured() const;
    // The filter of a recall over resolved scopes: categories and the privacy rules of the options.
    RecordFilter recallFilter(const QStringList &scopes, const QStringList &categories, const RecallOptions &o) const;
    // What `reader` may see in these (resolved) scopes.
    RecordFilter readFilter(const QStringList &scopes, const ReadContext &reader) const;
    // The metadata conditions that select exactly the records with the identities (user, agent, run)
    // of `metadata`, a missing one missing: the records a save may treat as its own.
    static Json sameIdentity(const Json &metadata);
    QString readScope(const QString &path) const;
    ScopeNode node(const QString &path, int depth, int maxDepth, int maxChildren, const RecordFilter &visible);
    // The record with this id when it lies under the root scope and `reader` may see it.
    std::optional<MemoryRecord> visibleRecord(const QString &id, const ReadContext &reader, bool withEmbedding = false);
    void ensureBound();

    Memory *q;
    MemoryConfig config;
    std::shared_ptr<StorageBackend> storage;
    bool searchHits = false; // the storage's SearchHits capability, read at open
    std::shared_ptr<Embedder> embedder;
    // Graph memory, when config.graphMemory is on (made by openParts()); null otherwise.
    std::unique_ptr<GraphMemory> graph;
    // Every lock below, its order and what it guards: memory/memory_locks_p.h.
    mutable MemoryLocks locks;
    std::shared_ptr<LlmProvider> llm; // locks.llm(): built from config.llm on first use
    struct Touch
    {
        QDateTime at;  // the latest access
        int count = 0; // accesses since the last flush
    };
    QHash<QString, Touch> touches; // locks.touches(): noted, not yet written
    bool touchScheduled = false;   // locks.touches()
    // locks.ahead(): plain batches queued on the writer, oldest first, whose vectors may be computed
    // ahead; before `writer`, so that it outlives the writer's last job.
    std::deque<std::shared_ptr<EmbedAhead>> ahead;
    SerialExecutor writer{"mneme-writer"};
    QList<QFuture<void>> pending; // locks.pending(): saves, waited for by drainWrites()
    QList<QFuture<void>> reads;   // locks.pending(): *Async reads, waited for by close()
    // Runs the *Async reads: a few threads of the memory's own, so that a burst of reads waiting for
    // the read barrier does not take Qt's global pool from the rest of the program.
    QThreadPool readers;
    std::atomic<bool> closed{false};
};

template<typename T, typename F>
QFuture<T> MemoryPrivate::submit(F &&work, bool changesRecords)
{
    checkNotOnWriter("a save");
    const MemoryLocks::Guard order = locks.submit();
    checkOpen();
    auto job = [this, work = std::forward<F>(work), changesRecords]() mutable {
        if constexpr (std::is_void_v<T>) {
            work();
            if (changesRecords)
                Q_EMIT q->recordsChanged();
        } else {
            T result = work();
            if (changesRecords)
                Q_EMIT q->recordsChanged();
            return result;
        }
    };
    QFuture<T> future = writer.template submit<T>(std::move(job));
    const MemoryLocks::Guard tracked = locks.pending();
    pending.erase(std::remove_if(pending.begin(), pending.end(), [](const QFuture<void> &f) { return f.isFinished(); }),
                  pending.end());
    pending.append(QFuture<void>(future));
    return future;
}

template<typename F>
QFuture<std::invoke_result_t<F>> MemoryPrivate::readLater(F &&work)
{
    checkOpen();
    QFuture<std::invoke_result_t<F>> future = QtConcurrent::run(&readers, std::forward<F>(work));
    const MemoryLocks::Guard tracked = locks.pending();
    reads.erase(std::remove_if(reads.begin(), reads.end(), [](const QFuture<void> &r) { return r.isFinished(); }), reads.end());
    reads.append(QFuture<void>(future));
    return future;
}

template<typename F>
auto MemoryPrivate::exclusively(const char *what, F &&work)
{
    checkNotOnWriter(what);
    const MemoryLocks::Guard order = locks.submit();
    q->drainWrites();
    return work();
}

} // namespace mneme
