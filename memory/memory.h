#pragma once

#include <mneme/core/embedder.h>
#include <mneme/core/error.h>
#include <mneme/core/history_entry.h>
#include <mneme/core/llm_provider.h>
#include <mneme/core/memory_record.h>
#include <mneme/core/scope_info.h>
#include <mneme/core/storage_backend.h>
#include <mneme/memory/export.h>
#include <mneme/memory/memory_config.h>
#include <mneme/memory/memory_match.h>
#include <mneme/memory/memory_options.h>
#include <mneme/memory/memory_scope.h>
#include <mneme/memory/memory_slice.h>

#include <QFuture>
#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <optional>

namespace mneme {

class MemoryPrivate;

// Long-term memory: records with scopes, categories, importance, source and privacy, recalled by a
// composite of semantic similarity, keyword match, recency and importance.
//
// Threads. Saves run on one background writer per Memory, in submission order. remember() waits
// for its save; rememberMany() returns at once. Every read first waits for the saves submitted
// before it (the read barrier). Blocking calls (remember, recall, get, list, forget, ...) are for
// scripts, tests and worker threads; a GUI uses the *Async forms, which never wait on the calling
// thread: reads run on the memory's reader threads (which wait for the barrier), writes (forget,
// update, undo, reset) on its writer after the saves submitted before them. Signals are emitted
// from the thread that did the work; connect with Qt::AutoConnection to receive them on yours.
// docs/gui.md has the threading rules for GUI code.
//
// Errors. Bad input, storage and embedder failures throw mneme::Error: at the call for bad input to
// a write (rememberAsync, rememberMany, forgetAsync, updateAsync, undoAsync, resetAsync), through the
// QFuture for everything else the async calls find. Nothing is written when a call fails.
//
// Privacy. Every read takes the reader's ReadContext (recall: RecallOptions::reader), and so do
// update(), undo() and forget(), which act on what their caller may see. The default, an anonymous
// reader, sees shared records only; ReadContext::of(source) adds that source's private records and
// ReadContext::asCurator() is for the person who owns the store. A record the reader may not see is
// answered as one that does not exist (get() finds nothing, history() throws Error(NotFound)).
class MNEME_MEMORY_EXPORT Memory : public QObject
{
    Q_OBJECT
public:
    // Opens the storage and the embedder the configuration names (SQLite and the builtin embedder
    // by default), through the PluginRegistry. Throws mneme::Error when the configuration is invalid
    // or the store cannot be opened.
    explicit Memory(const MemoryConfig &config = {}, QObject *parent = nullptr);
    // Uses the given parts instead of building them from the configuration's storage / embedder.
    Memory(const MemoryConfig &config, std::shared_ptr<StorageBackend> storage,
           std::shared_ptr<Embedder> embedder, QObject *parent = nullptr);
    ~Memory() override;

    const MemoryConfig &config() const;
    bool isReadOnly() const;
    QString rootScope() const;
    StorageBackend &storage() const;
    Embedder &embedder() const;
    // The LLM the configuration's `llm` names, created on first use (so a Memory never fails to
    // open for a missing API key); null when none is configured. Throws Error(Plugin) for an
    // unknown provider and Error(InvalidArgument) for a bad provider config.
    std::shared_ptr<LlmProvider> llm() const;
    // Uses this provider instead of building one from the configuration (a test double, a provider
    // shared with a crew); null returns to the configuration's.
    void setLlm(std::shared_ptr<LlmProvider> llm);

    // Saves one memory and returns the stored record (or the identical record already stored).
    // Blocking. Throws Error(PermissionDenied) on a read-only memory.
    MemoryRecord remember(const QString &content, const RememberOptions &options = {});
    QFuture<MemoryRecord> rememberAsync(const QString &content, const RememberOptions &options = {});
    // Saves many memories in the background with one embedding call and intra-batch dedup; returns at
    // once. The future reports what was stored; failures are also reported by saveFailed().
    QFuture<SaveResult> rememberMany(const QStringList &contents, const RememberOptions &options = {});
    QFuture<SaveResult> rememberMany(const QList<MemoryInput> &items);

    // Saves a conversation's turns in the background, one record per turn, each indexed with its
    // neighbouring turns (see ConversationOptions). Same checks, dedup and events as rememberMany().
    QFuture<SaveResult> rememberConversation(const QList<ConversationTurn> &turns, const ConversationOptions &options = {});

    // Mem0-style ingestion (unlike rememberConversation, which logs every turn): extracts candidate
    // facts from the new messages (a message pair, or any list), with the conversation's rolling
    // summary and its last m messages as context; compares each fact with the s most similar
    // memories of the same source and privacy; and lets the LLM ADD a record, UPDATE one (same id and
    // created_at, history kept), DELETE one or do nothing. Without an LLM, or when it fails, the user
    // messages' statements are added unless identical records exist (path "offline"). The summary is
    // refreshed by a later writer task (drainWrites() waits for it). Runs on the writer thread after
    // earlier saves. Throws Error(InvalidArgument) for an empty conversation id, no messages, an
    // unknown role or a blank message, Error(PermissionDenied) on a read-only memory; the future fails
    // only for storage and embedder failures.
    QFuture<ConversationResult> addConversation(const QList<ConversationMessage> &messages,
                                                const AddConversationOptions &options);

    // Ranked recall. Blocking; waits for pending saves first. The matches' last_accessed and
    // access_count are updated in the background afterwards.
    QList<MemoryMatch> recall(const QString &query, const RecallOptions &options = {});
    QFuture<QList<MemoryMatch>> recallAsync(const QString &query, const RecallOptions &options = {});

    // Graph recall (graph_memory on; docs/concepts.md, "Graph memory"): the relations the query's
    // entities take part in (1-2 hops) and those whose text is like the query, merged and ranked, at
    // most options.limit, with the records each came from. Sees what recall() would (scopes, privacy);
    // options.asOf: the relations valid then. Throws Error(InvalidArgument) when graph memory is off.
    QList<RelationMatch> recallRelations(const QString &query, const RecallOptions &options = {});
    // The graph filter of a read: the resolved scopes (relative to the root scope; empty: the root
    // scope) and the privacy of `reader`, at `asOf` (invalid: now), optionally with invalid relations.
    GraphFilter graphFilter(const QStringList &scopes = {}, const ReadContext &reader = {}, const QDateTime &asOf = {},
                            bool includeInvalid = false) const;
    // The store's graph (drained of pending saves), or null when the storage backend keeps none.
    // Writes to it belong to Memory; read it with graphFilter().
    GraphStore *graph();

    // Splits a text into atomic, self-contained memory statements (stores nothing). With an LLM, one
    // extraction call; without one, or when it fails, the offline splitter (sentence ends,
    // semicolons, list items, blank lines: see StatementSplitter), so nothing is lost. A blank text
    // gives none without any call. Blocking; never throws for LLM failures.
    QStringList extractMemories(const QString &content);

    // Deletes what the options select among the records `caller` may see (history keeps what was
    // deleted) and returns how many. At least one condition is required (Error(InvalidArgument)
    // otherwise): use reset() to delete everything.
    // Runs on the writer after the saves submitted before it; forget() waits for it.
    int forget(const ForgetOptions &options, const ReadContext &caller = {});
    QFuture<int> forgetAsync(const ForgetOptions &options, const ReadContext &caller = {});
    // Edits one record; new content is re-embedded. Throws Error(NotFound) for an unknown id or one
    // `caller` may not see. Runs on the writer after the saves submitted before it.
    MemoryRecord update(const QString &id, const UpdateOptions &options, const ReadContext &caller = {});
    QFuture<MemoryRecord> updateAsync(const QString &id, const UpdateOptions &options, const ReadContext &caller = {});
    // One record, or nothing when there is none with this id that `reader` may see.
    std::optional<MemoryRecord> get(const QString &id, const ReadContext &reader = {});
    QFuture<std::optional<MemoryRecord>> getAsync(const QString &id, const ReadContext &reader = {});
    // Every change of one record, oldest first. Throws Error(NotFound) for an unknown id or a record
    // `reader` may not see.
    QList<HistoryEntry> history(const QString &id, const ReadContext &reader = {});
    QFuture<QList<HistoryEntry>> historyAsync(const QString &id, const ReadContext &reader = {});
    // Reverts the record's last change: an update is rolled back to the previous content and fields,
    // a delete brings the record back with its id and times. The undo is itself recorded in the
    // history: undoing an update twice re-applies it; a record brought back stays (forget() deletes
    // it again). Returns the record as restored. Throws
    // Error(NotFound) for an unknown id and Error(InvalidArgument) when the last change is the
    // record's creation (nothing to undo: forget() deletes it). A record `caller` may not see is not found.
    // Runs on the writer after the saves submitted before it.
    MemoryRecord undo(const QString &id, const ReadContext &caller = {});
    QFuture<MemoryRecord> undoAsync(const QString &id, const ReadContext &caller = {});

    // A view restricted to one subtree (relative to the root scope).
    MemoryScope scope(const QString &path);
    // A view over several scopes, read-only unless asked otherwise.
    MemorySlice slice(const QStringList &scopes, const QStringList &categories = {}, bool readOnly = true);

    // The scopes, counts and categories below describe the records `reader` may see: a scope that
    // holds only others' private records does not appear, and a category used only by them neither.
    // "/ (15 records)\n  /project (8 records)\n..." down to maxDepth levels, at most 20 children a node.
    QString tree(const QString &path = {}, int maxDepth = 3, const ReadContext &reader = {});
    // scopeTree() keeps the first maxChildren children of each node, in path order (negative: all).
    ScopeNode scopeTree(const QString &path = {}, int maxDepth = 3, const ReadContext &reader = {}, int maxChildren = 20);
    ScopeInfo info(const QString &path = {}, const ReadContext &reader = {});
    QStringList listScopes(const QString &path = {}, const ReadContext &reader = {});
    QMap<QString, int> listCategories(const QString &path = {}, const ReadContext &reader = {});
    // Records of a scope, newest first.
    QList<MemoryRecord> listRecords(const QString &scope = {}, int limit = 200, int offset = 0, const ReadContext &reader = {});
    // The records `query` selects among those `reader` may see (scopes, categories, source, text), in
    // its order: a page of at most `query.limit` from `query.offset`, without embeddings. Throws
    // Error(InvalidArgument) for a limit outside 1..10,000, a negative offset or a bad scope.
    QList<MemoryRecord> searchRecords(const RecordQuery &query, const ReadContext &reader = {});
    // How many records `query` selects (its limit and offset aside).
    int countRecords(const RecordQuery &query, const ReadContext &reader = {});

    // The reads above, run on the memory's reader threads: the future gives what the blocking form
    // returns, or fails with what it throws. The calling thread never waits, not even for pending
    // saves (the reader thread does). Cancelling a future before its read has started skips it.
    QFuture<QString> treeAsync(const QString &path = {}, int maxDepth = 3, const ReadContext &reader = {});
    QFuture<ScopeNode> scopeTreeAsync(const QString &path = {}, int maxDepth = 3, const ReadContext &reader = {},
                                      int maxChildren = 20);
    QFuture<ScopeInfo> infoAsync(const QString &path = {}, const ReadContext &reader = {});
    QFuture<QStringList> listScopesAsync(const QString &path = {}, const ReadContext &reader = {});
    QFuture<QMap<QString, int>> listCategoriesAsync(const QString &path = {}, const ReadContext &reader = {});
    QFuture<QList<MemoryRecord>> listRecordsAsync(const QString &scope = {}, int limit = 200, int offset = 0,
                                                  const ReadContext &reader = {});
    QFuture<QList<MemoryRecord>> searchRecordsAsync(const RecordQuery &query, const ReadContext &reader = {});
    QFuture<int> countRecordsAsync(const RecordQuery &query, const ReadContext &reader = {});

    // Records of the whole store (ignoring the root scope) that `reader` may see, with their
    // embeddings, newest first, for export: `batch` records from `offset`. A full backup reads as
    // the curator.
    QList<MemoryRecord> exportRecords(int offset, int batch, const ReadContext &reader = {});
    // Stores records as given (ids, times, fields). With keepEmbeddings their embeddings are used
    // (each must have this embedder's dimension), otherwise contents are embedded again. Records
    // whose id is already stored are skipped (counted in `existing`). Blocking.
    SaveResult importRecords(const QList<MemoryRecord> &records, bool keepEmbeddings);

    // Deletes the root scope's records (or a subtree of it) after draining saves, with the state of
    // the conversations (addConversation) whose records go there; returns how many records.
    // Runs on the writer; reset() waits for it.
    int reset(const QString &scope = {});
    QFuture<int> resetAsync(const QString &scope = {});
    // Deletes everything in the store, ignoring the root scope, with the history and the embedder
    // binding, so the store can be rebuilt with another embedder.
    int resetAll();

    // Checks the store (after draining saves): its file, its derived data (keyword index, lookup
    // tables, vector index) and every record. With `repair`, rebuilds the derived data from the
    // records (Error(PermissionDenied) on a read-only memory). A damaged record, which reads leave out,
    // is reported, never changed: exportDamaged() gives what is left of it, forget() deletes it.
    StoreCheck check(bool repair = false);
    // The damaged records `reader` may see (by their readable source and privacy), for an export.
    std::vector<DamagedRecord> exportDamaged(const ReadContext &reader = {});

    // Waits for every submitted save. Never throws: failures were reported by saveFailed().
    void drainWrites();
    // Drains, then closes the store. Later calls throw Error(Storage).
    void close();

    // Throw exactly the Error that remember() / importRecords() would throw for this input, without
    // opening or touching any store: for checking a whole input file before saving any of it.
    static void checkInput(const MemoryInput &input, const MemoryConfig &config = {});
    static void checkRecord(const MemoryRecord &record, const MemoryConfig &config = {});

    // The scope a call with `scope` resolves to: joined under `root` (or the Memory's root scope).
    QString resolveScope(const std::optional<QString> &scope, const std::optional<QString> &root = std::nullopt) const;

Q_SIGNALS:
    void queryStarted(const QString &query, int limit);
    void queryCompleted(const QString &query, const QList<mneme::MemoryMatch> &results, double queryTimeMs);
    void queryFailed(const QString &query, const QString &error);
    void saveStarted(const QString &value, const QJsonObject &metadata);
    void saveCompleted(const QString &value, const QJsonObject &metadata, double saveTimeMs);
    void saveFailed(const QString &value, const QString &error);
    // Around every LLM call memory analysis makes. `step`: save_analysis, consolidation, extraction,
    // query_analysis, exploration, conversation_facts, conversation_update, conversation_summary,
    // graph_entities, graph_relations.
    void llmCallStarted(const QString &step, const QString &model);
    void llmCallCompleted(const QString &step, const QString &model, double durationMs, int promptTokens,
                          int completionTokens);
    void llmCallFailed(const QString &step, const QString &model, const QString &error, double durationMs);
    // Which path produced an analysis step's result: "llm", "offline" (the offline analyzer),
    // "defaults" (the documented fallback values) or "skipped" (nothing to analyse); `reason` says why
    // the LLM was not used (no LLM configured, the call failed, the reply was unusable).
    void analysisCompleted(const QString &step, const QString &path, const QString &reason);
    // After every write that may have changed records (a save or batch, forget, update, undo, reset,
    // an import, a conversation's ingestion), on the writer thread, before the write's future
    // finishes: a view of the store refreshes on it (queued to its own thread).
    void recordsChanged();

private:
    friend class MemoryPrivate;
    std::unique_ptr<MemoryPrivate> d;
};

} // namespace mneme
