#include <mneme/memory/memory.h>

#include "memory/analysis_call_p.h"
#include "memory/batch_dedup_p.h"
#include "memory/conversation_ingest_p.h"
#include "memory/llm_analysis_p.h"
#include "memory/memory_p.h"
#include "memory/recall_flow_p.h"
#include "memory/scoring_p.h"
#include "memory/statement_splitter_p.h"
#include <mneme/core/error.h>
#include <mneme/core/metadata_filter.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/provider_settings.h>
#include <mneme/core/scope_path.h>
#include <mneme/core/vector_math.h>
#include <mneme/memory/memory_scope.h>
#include <mneme/memory/memory_slice.h>

#include <QDir>
#include <QElapsedTimer>
#include <QThread>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <system_error>
#include <tuple>
#include <unordered_map>

namespace mneme {

namespace {

const char *const kBackgroundSave = "background save";
constexpr int kMaxRecallLimit = 10000;
// How long recalls' access statistics may wait to be written together.
constexpr int kTouchIntervalMs = 250;
// How many accesses one of their transactions writes.
constexpr int kTouchChunk = 32;
// How deep and how large a record's metadata may be (docs/concepts.md#records).
constexpr int kMaxMetadataDepth = 32;
constexpr int kMaxMetadataBytes = 65536;

// One line, once a process, when the default store is used while the default of earlier versions
// (./.mneme/memory.db) exists: the caller may be looking for the memories it holds.
void noteLegacyStore()
{
    static std::once_flag once;
    std::call_once(once, [] {
        const QString legacy = MemoryConfig::legacyStoragePath();
        if (!legacy.isEmpty())
            qCWarning(lcMemory).noquote()
                << QStringLiteral("note: the default store is %1; %2, the default of earlier versions, is not "
                                  "read (pass its path as the store, such as mneme --db .mneme/memory.db, to use it)")
                       .arg(MemoryConfig::defaultStoragePath(), QDir::cleanPath(legacy));
    });
}

std::shared_ptr<StorageBackend> buildStorage(const Json &spec)
{
    QString key = QStringLiteral("sqlite");
    Json cfg = Json::object();
    if (spec.is_string()) {
        cfg["path"] = spec.get<std::string>();
    } else if (spec.is_object()) {
        if (spec.contains("provider"))
            key = QString::fromStdString(spec["provider"].get<std::string>());
        if (spec.contains("config"))
            cfg = spec["config"];
    }
    if (key == QLatin1String("sqlite") && !cfg.contains("path"))
        cfg["path"] = MemoryConfig::defaultStoragePath();
    if (key == QLatin1String("sqlite") && cfg["path"].is_string()
        && QDir::cleanPath(QString::fromStdString(cfg["path"].get<std::string>())) == QDir::cleanPath(MemoryConfig::defaultStoragePath()))
        noteLegacyStore();
    return PluginRegistry::instance().createStorage(key, cfg);
}

std::shared_ptr<Embedder> buildEmbedder(const Json &spec)
{
    const ProviderSpec p = ProviderSpec::embedder(spec);
    return PluginRegistry::instance().createEmbedder(p.key, p.config);
}

QJsonObject metadataObject(const Json &metadata)
{
    return toQJson(metadata.is_object() ? metadata : Json::object());
}

double elapsedMs(const QElapsedTimer &t)
{
    return t.nsecsElapsed() / 1e6;
}

QString validContent(const QString &content, const MemoryConfig &config)
{
    const QString c = content.trimmed();
    if (c.isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("the content is empty; give the text to remember"));
    if (c.size() > config.maxContentChars)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the content is %1 characters long, over the limit of %2 (max_content_chars); "
                                   "split it into separate facts, for example with extractMemories()")
                        .arg(c.size())
                        .arg(config.maxContentChars));
    return c;
}

double validImportance(double importance)
{
    if (!std::isfinite(importance) || importance < 0 || importance > 1)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("importance must be a number between 0 and 1 (got %1)").arg(importance));
    return importance;
}

// A time a record keeps, in UTC: invalid stays invalid (unknown); outside the years 1 to 9999 it
// is refused, as it has no ISO 8601 form an export could carry.
QDateTime validTime(const QDateTime &t, const QString &what)
{
    if (!t.isValid())
        return t;
    const QDateTime utc = t.toUTC();
    if (utc.date().year() < 1 || utc.date().year() > 9999)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1 is outside the years 1 to 9999 (in UTC); give a time within them").arg(what));
    return utc;
}

QStringList validCategories(const QStringList &categories)
{
    QStringList out;
    for (const QString &c : categories) {
        const QString t = c.trimmed();
        if (t.isEmpty())
            continue;
        for (const QChar ch : t) {
            if (ch.category() == QChar::Other_Control)
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("category %1 contains a control character; use printable characters").arg(Error::quoted(c)));
        }
        if (!out.contains(t))
            out << t;
    }
    return out;
}

// Refuses metadata that is not an object (null stands for none), nests deeper than kMaxMetadataDepth
// or is larger than kMaxMetadataBytes as JSON. Checked before the value is copied anywhere: copying and
// writing JSON recurse once per level.
void checkMetadata(const Json &metadata, const QString &whose = QString())
{
    const QString of = whose.isEmpty() ? QStringLiteral("metadata") : QStringLiteral("the metadata of %1").arg(whose);
    if (metadata.is_null())
        return;
    if (!metadata.is_object())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1 must be a JSON object").arg(of));
    const int depth = jsonDepth(metadata);
    if (depth > kMaxMetadataDepth)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1 nests %2 levels deep; at most %3 levels of objects and arrays are "
                                                               "kept with a record")
                                                    .arg(of)
                                                    .arg(depth)
                                                    .arg(kMaxMetadataDepth));
    const std::size_t bytes = metadata.dump(-1, ' ', false, Json::error_handler_t::replace).size();
    if (bytes > std::size_t(kMaxMetadataBytes))
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("%1 is %2 bytes of JSON; at most %3 are kept with a record")
                                                    .arg(of)
                                                    .arg(bytes)
                                                    .arg(kMaxMetadataBytes));
}

QString scopeUnder(const QString &root, const std::optional<QString> &scope)
{
    if (root.isEmpty())
        return ScopePath::normalize(scope.value_or(QString()));
    return ScopePath::join(root, scope.value_or(QString()));
}

// An identity value (user, agent or run id): trimmed, printable; empty for none.
QString validIdentity(const QString &value, const char *what)
{
    const QString v = value.trimmed();
    for (const QChar ch : v)
        if (ch.category() == QChar::Other_Control)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("the %1 contains a control character; use printable characters").arg(QLatin1String(what)));
    return v;
}

// The identity values of options, in RecordFilter::identityKeys() order.
template<typename Options>
std::array<QString, 3> identityOf(const Options &o)
{
    return {validIdentity(o.userId, "user id"), validIdentity(o.agentId, "agent id"), validIdentity(o.runId, "run id")};
}

// The metadata conditions that select the records of these identities (an empty value: any).
Json identityConditions(const std::array<QString, 3> &identity)
{
    Json conditions = Json::object();
    const QStringList keys = RecordFilter::identityKeys();
    for (std::size_t k = 0; k < 3; ++k)
        if (!identity[k].isEmpty())
            conditions[keys[qsizetype(k)].toStdString()] = identity[k].toStdString();
    return conditions;
}

// A filter document as a recall or forget takes it: checked now, so that a bad one fails before any work.
Json validMetadataFilter(const Json &document)
{
    if (!document.is_null() && !document.is_object())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the metadata filter must be a JSON object such as {\"status\": \"done\"}"));
    (void)MetadataFilter::parse(document);
    return document.is_object() ? document : Json::object();
}

// The record a save of `input` would store (no id, no embedding yet); throws for bad input.
MemoryRecord resolvedInput(const MemoryInput &input, const MemoryConfig &config)
{
    const RememberOptions &o = input.options;
    MemoryRecord r;
    r.content = validContent(input.content, config);
    r.scope = scopeUnder(o.rootScope ? *o.rootScope : config.rootScope, o.scope);
    r.categories = o.categories ? validCategories(*o.categories) : QStringList();
    r.importance = o.importance ? validImportance(*o.importance) : config.defaultImportance;
    checkMetadata(o.metadata);
    r.metadata = o.metadata.is_object() ? o.metadata : Json::object();
    const std::array<QString, 3> identity = identityOf(o);
    const QStringList identityKeys = RecordFilter::identityKeys();
    for (std::size_t k = 0; k < 3; ++k) {
        if (identity[k].isEmpty())
            continue;
        const std::string key = identityKeys[qsizetype(k)].toStdString();
        if (r.metadata.contains(key) && r.metadata[key] != identity[k].toStdString())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("the metadata says %1 is %2, but the memory is saved for %1 %3; give one of them")
                            .arg(identityKeys[qsizetype(k)],
                                 Error::quoted(QString::fromStdString(r.metadata[key].dump(-1, ' ', false, Json::error_handler_t::replace))),
                                 Error::quoted(identity[k])));
        r.metadata[key] = identity[k].toStdString();
    }
    checkMetadata(r.metadata); // the identities count towards its size
    r.source = o.source.trimmed();
    r.isPrivate = o.isPrivate;
    if (r.isPrivate && r.source.isEmpty())
        throw Error(ErrorKind::PermissionDenied,
                    QStringLiteral("a private memory needs a source (whose memory it is), or nobody could ever "
                                   "recall it; pass a source such as \"user:alice\""));
    r.createdAt = validTime(o.createdAt, QStringLiteral("the creation time"));
    return r;
}

// A record to import, checked, normalised as a save's fields are (id, source and scope trimmed and
// normalised) and completed (times, id); throws for bad input.
MemoryRecord importedRecord(const MemoryRecord &in, const MemoryConfig &config)
{
    MemoryRecord r = in;
    r.id = r.id.trimmed();
    for (const QChar c : std::as_const(r.id))
        if (c.category() == QChar::Other_Control || c.isSpace())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("the id %1 holds white space or a control character; give ids without them").arg(Error::quoted(r.id)));
    r.source = r.source.trimmed();
    if (r.accessCount < 0)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("record %1 has a negative access count (%2); it counts recalls, 0 or more").arg(r.id).arg(r.accessCount));
    r.content = validContent(r.content, config);
    r.scope = ScopePath::normalize(r.scope);
    r.importance = validImportance(r.importance);
    r.categories = validCategories(r.categories);
    if (!r.metadata.is_object())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("the metadata of record %1 must be a JSON object").arg(r.id));
    checkMetadata(r.metadata, QStringLiteral("record %1").arg(r.id));
    if (r.isPrivate && r.source.isEmpty())
        throw Error(ErrorKind::PermissionDenied,
                    QStringLiteral("record %1 is private but has no source; give it a source").arg(r.id));
    r.createdAt = validTime(r.createdAt, QStringLiteral("created_at of record %1").arg(r.id));
    r.updatedAt = validTime(r.updatedAt, QStringLiteral("updated_at of record %1").arg(r.id));
    r.lastAccessed = validTime(r.lastAccessed, QStringLiteral("last_accessed of record %1").arg(r.id));
    if (r.id.isEmpty())
        r.id = MemoryRecord::create(QString()).id;
    if (!r.createdAt.isValid())
        r.createdAt = nowUtc();
    if (!r.updatedAt.isValid())
        r.updatedAt = r.createdAt;
    if (!r.lastAccessed.isValid())
        r.lastAccessed = r.updatedAt;
    return r;
}


} // namespace

// ---------------------------------------------------------------------------------------------
// MemoryPrivate

MemoryPrivate::MemoryPrivate(Memory *qq, const MemoryConfig &cfg)
    : q(qq), config(cfg)
{
    config.validate();
    if (!config.rootScope.isEmpty())
        config.rootScope = ScopePath::normalize(config.rootScope);
    qRegisterMetaType<mneme::MemoryMatch>();
    qRegisterMetaType<QList<mneme::MemoryMatch>>();
    readers.setMaxThreadCount(std::max(2, QThread::idealThreadCount()));
    readers.setObjectName(QStringLiteral("mneme-readers"));
}

void MemoryPrivate::openParts(std::shared_ptr<StorageBackend> s, std::shared_ptr<Embedder> e)
{
    storage = s ? std::move(s) : buildStorage(config.storage);
    const StorageInfo info = storage->info();
    searchHits = info.has(StorageInfo::SearchHits);
    Json embedderSpec = config.embedder;
    const std::optional<EmbedderBinding> &binding = info.binding;
    if (embedderSpec.is_null() && binding && binding->embedderId.startsWith(QLatin1String("builtin/"))) {
        // No embedder asked for: a store written by an earlier builtin model keeps being read with it.
        embedderSpec = Json{{"provider", "builtin"},
                            {"config", {{"model", binding->embedderId.mid(8).toStdString()}, {"dimension", binding->dimension}}}};
    }
    embedder = e ? std::move(e) : buildEmbedder(embedderSpec);
    if (binding)
        ensureBound(); // refuses a store written with another embedder (decision 10)
    if (config.graphMemory) {
        GraphStore *g = storage->graph();
        if (!g)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("graph_memory is on, but the storage backend of %1 keeps no graph; use the sqlite or postgres "
                                       "storage or set graph_memory to false")
                            .arg(storage->location()));
        graph = std::make_unique<GraphMemory>(*this, *g);
    }
}

void MemoryPrivate::ensureBound()
{
    // Every time, not once: another process may have reset the store (and its binding) meanwhile.
    storage->bindEmbedder(EmbedderBinding{embedder->id(), embedder->dimension()});
}

void MemoryPrivate::checkNotOnWriter(const char *what) const
{
    if (writer.isCurrentThread())
        throw Error(ErrorKind::Internal,
                    QStringLiteral("%1 was called from a handler running on the memory's writer thread, where it would "
                                   "wait for itself; connect to Memory's signals with Qt::QueuedConnection")
                        .arg(QLatin1String(what)));
}

void MemoryPrivate::checkOpen() const
{
    if (closed)
        throw Error(ErrorKind::Storage, QStringLiteral("this Memory was closed; create a new Memory to use the store again"));
}

void MemoryPrivate::checkWritable(const char *what) const
{
    checkOpen();
    if (config.readOnly)
        throw Error(ErrorKind::PermissionDenied,
                    QStringLiteral("this memory is read-only; %1 is refused (open it without read_only to write)")
                        .arg(QLatin1String(what)));
}

MemoryPrivate::Item MemoryPrivate::resolve(const MemoryInput &input) const
{
    Item item;
    item.input = input;
    item.record = resolvedInput(input, config);
    return item;
}

MemoryPrivate::Item MemoryPrivate::batchItem(const MemoryInput &input) const
{
    checkMetadata(input.options.metadata); // before the item is copied
    if (!input.content.trimmed().isEmpty())
        return resolve(input);
    Item blank; // a blank item of a batch is dropped, not refused
    blank.input = input;
    blank.dropped = true;
    return blank;
}


struct EncodeOutcome
{
    SaveResult result;
    std::vector<MemoryRecord> records; // per input item: the stored or existing record; empty id if dropped
};

namespace {

// The save pipeline. Runs on the writer thread.
EncodeOutcome runEncode(MemoryPrivate &d, std::vector<MemoryPrivate::Item> &items, MemoryPrivate::TurnContext context,
                        const std::shared_ptr<MemoryPrivate::EmbedAhead> &ahead = nullptr)
{
    EncodeOutcome out;
    out.records.resize(items.size());
    const QDateTime now = nowUtc();

    // 1. Identical records already stored are not stored again (one lookup for the batch). A
    //    conversation is a log: a turn that repeats earlier words is still its own event.
    std::vector<size_t> active;
    for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].dropped)
            active.push_back(i);
    }
    if (!context.conversation && !active.empty()) {
        std::vector<MemoryRecord> wanted;
        wanted.reserve(active.size());
        for (size_t i : active)
            wanted.push_back(items[i].record);
        const std::vector<std::optional<MemoryRecord>> existing = d.storage->findExact(wanted);
        std::vector<size_t> fresh;
        for (size_t k = 0; k < active.size(); ++k) {
            const size_t i = active[k];
            // The same words saved for another user, agent or run are not this item's record.
            if (k < existing.size() && existing[k]
                && MetadataFilter::parse(MemoryPrivate::sameIdentity(items[i].record.metadata)).matches(existing[k]->metadata)) {
                items[i].existingId = existing[k]->id;
                out.records[i] = *existing[k];
            } else {
                fresh.push_back(i);
            }
        }
        active = std::move(fresh);
    }

    // 2. One embedding call for the whole batch. With a context window (a conversation), every
    //    turn is embedded, each stored vector blends the turn with its neighbours, and the
    //    neighbours' text is the turn's keyword context. A turn that follows a question is its reply:
    //    the question weighs Scoring::kAnsweredQuestionWeight times a neighbour in both.
    if (context.window > 0) {
        std::vector<size_t> turns;
        QStringList texts;
        for (size_t i = 0; i < items.size(); ++i) {
            if (items[i].dropped)
                continue;
            turns.push_back(i);
            texts << items[i].record.content;
        }
        const std::vector<Embedding> own = d.embedAll(texts);
        for (size_t k = 0; k < turns.size(); ++k) {
            Embedding v = own[k];
            const size_t from = k >= size_t(context.window) ? k - size_t(context.window) : 0;
            const size_t to = std::min(turns.size() - 1, k + size_t(context.window));
            QStringList around;
            for (size_t n = from; n <= to; ++n) {
                if (n == k)
                    continue;
                // The question this turn replies to counts kAnsweredQuestionWeight times.
                const int times = n + 1 == k && Scoring::asks(texts[qsizetype(n)]) ? Scoring::kAnsweredQuestionWeight : 1;
                for (int r = 0; r < times; ++r)
                    around << texts[qsizetype(n)];
                if (own[n].size() != v.size())
                    continue;
                const float weight = float(context.weight * times);
                for (size_t x = 0; x < v.size(); ++x)
                    v[x] += weight * own[n][x];
            }
            items[turns[k]].record.context = around.join(QLatin1Char('\n'));
            const float len = VectorMath::norm(v.data(), v.size());
            if (len > 0)
                for (float &x : v)
                    x /= len;
            items[turns[k]].record.embedding = std::move(v);
        }
    } else if (ahead && !active.empty()) {
        // Every item not dropped was embedded (or is being embedded) ahead: the active ones take theirs.
        std::vector<Embedding> vectors = ahead->vectors.valid() ? ahead->vectors.get() : d.embedAll(ahead->texts);
        std::vector<size_t> at(items.size());
        for (size_t i = 0, k = 0; i < items.size(); ++i)
            if (!items[i].dropped)
                at[i] = k++;
        for (size_t i : active)
            items[i].record.embedding = std::move(vectors[at[i]]);
    } else if (!active.empty()) {
        QStringList texts;
        texts.reserve(qsizetype(active.size()));
        for (size_t i : active)
            texts << items[i].record.content;
        std::vector<Embedding> vectors = d.embedAll(texts);
        for (size_t k = 0; k < active.size(); ++k)
            items[active[k]].record.embedding = std::move(vectors[k]);
    }

    // 3. Intra-batch dedup: a later item nearly identical to an earlier kept one is dropped (not in a
    //    conversation, whose turns are events even when their words repeat).
    //    Only items of the same source, privacy and identities are compared (decision 6): one source's
    //    (or user's, agent's, run's) record never drops another's, nor a private record a shared one.
    std::vector<size_t> kept;
    std::vector<const Embedding *> vectors;
    std::vector<int> groups;
    QHash<QString, int> groupOf;
    vectors.reserve(active.size());
    groups.reserve(active.size());
    for (size_t i : active) {
        const MemoryRecord &r = items[i].record;
        vectors.push_back(context.conversation ? nullptr : &r.embedding);
        const QString key = (r.isPrivate ? QStringLiteral("p:") : QStringLiteral("s:")) + r.source + QChar(0)
                          + QString::fromStdString(MemoryPrivate::sameIdentity(r.metadata).dump(-1, ' ', false, Json::error_handler_t::replace));
        groups.push_back(groupOf.contains(key) ? groupOf.value(key) : groupOf.insert(key, int(groupOf.size())).value());
    }
    const std::vector<bool> duplicate = BatchDedup::duplicates(vectors, d.config.batchDedupThreshold, groups);
    for (size_t k = 0; k < active.size(); ++k) {
        if (duplicate[k])
            items[active[k]].dropped = true;
        else
            kept.push_back(active[k]);
    }

    // 4. Save analysis for missing fields and consolidation with similar stored records; then the
    //    plans' updates and deletes (not for conversation turns, which are a log).
    if (!context.conversation) {
        d.analyzeItems(items, kept);
        std::tie(out.result.updated, out.result.deleted) = d.applyPlans(items, kept);
    }

    // 5. Insert in one transaction; outside a conversation, the lookup of identical records is made
    //    again within it (another process may have stored the same content since step 1).
    std::vector<MemoryRecord> toSave;
    std::vector<size_t> savedItem; // the item of each record of toSave
    toSave.reserve(kept.size());
    for (size_t i : kept) {
        MemoryPrivate::Item &it = items[i];
        if (!it.existingId.isEmpty()) {
            out.records[i] = it.record;
            continue;
        }
        if (!it.mergedInto.isEmpty() && it.plan && !it.plan->insertNew) {
            it.existingId = it.mergedInto;
            if (auto merged = d.storage->get(it.mergedInto))
                out.records[i] = *merged;
            continue;
        }
        MemoryRecord r = it.record;
        r.id = MemoryRecord::create(QString()).id;
        if (!r.createdAt.isValid())
            r.createdAt = now;
        r.updatedAt = now;
        r.lastAccessed = now;
        out.records[i] = r;
        toSave.push_back(std::move(r));
        savedItem.push_back(i);
    }
    int stored = int(toSave.size());
    if (!toSave.empty()) {
        d.ensureBound();
        if (context.conversation) {
            d.storage->save(toSave);
        } else {
            const std::vector<QString> ids = d.storage->saveUnlessIdentical(toSave);
            for (size_t k = 0; k < toSave.size(); ++k) {
                if (ids[k] == toSave[k].id)
                    continue;
                const size_t i = savedItem[k];
                --stored;
                items[i].existingId = ids[k];
                std::optional<MemoryRecord> existing = d.storage->get(ids[k]);
                out.records[i] = existing ? *existing : out.records[i];
                out.records[i].id = ids[k];
            }
        }
    }

    if (d.graph && stored > 0) {
        std::vector<MemoryRecord> added;
        for (const MemoryRecord &r : toSave)
            if (items[savedItem[&r - toSave.data()]].existingId.isEmpty())
                added.push_back(r);
        d.graph->add(added);
    }

    for (size_t i = 0; i < items.size(); ++i) {
        if (!out.records[i].id.isEmpty()) {
            out.result.ids << out.records[i].id;
            out.records[i].embedding.clear();
        }
        if (!items[i].existingId.isEmpty())
            ++out.result.existing;
        else if (items[i].dropped)
            ++out.result.dropped;
    }
    out.result.stored = stored;
    return out;
}

// The stats of the recall running on this thread (RecallOptions::stats), or null. A recall runs on
// one thread from start to end (recallNow()), so each thread notes into its own.
thread_local RecallStats *t_recallStats = nullptr;

// Sets the thread's recall stats for the scope of one recall, cleared first.
class RecallStatsScope
{
public:
    explicit RecallStatsScope(RecallStats *stats) : m_previous(t_recallStats)
    {
        if (stats)
            *stats = RecallStats();
        t_recallStats = stats;
    }
    ~RecallStatsScope() { t_recallStats = m_previous; }
    RecallStatsScope(const RecallStatsScope &) = delete;
    RecallStatsScope &operator=(const RecallStatsScope &) = delete;

private:
    RecallStats *m_previous;
};

// Notes how one of the recall's vector searches was answered.
void noteAnswer(const VectorSearchAnswer &a)
{
    RecallStats *stats = t_recallStats;
    if (!stats)
        return;
    ++stats->vectorSearches;
    if (a.method == VectorSearchAnswer::Method::Index)
        stats->exact = false;
    stats->indexBuilding = stats->indexBuilding || a.indexBuilding;
    if (!a.detail.isEmpty() && !stats->answers.contains(a.detail))
        stats->answers << a.detail;
}

// Notes how one of the recall's keyword searches was answered (the backend's detail, when it gives one).
void noteKeywordAnswer(const VectorSearchAnswer &a)
{
    RecallStats *stats = t_recallStats;
    if (stats && !a.detail.isEmpty() && !stats->answers.contains(a.detail))
        stats->answers << a.detail;
}

} // namespace

QFuture<SaveResult> MemoryPrivate::submitBatch(std::vector<Item> items, const QString &startedValue, TurnContext context)
{
    // Before the lock: a close() or reset() holding it waits for the writer, so a save's handler on
    // the writer thread must be refused here, not wait for the lock.
    checkNotOnWriter("a save");
    // A plain batch for a local embedder joins the queue of batches embedded ahead (a conversation's
    // vectors blend neighbouring turns and are made in its turn).
    std::shared_ptr<EmbedAhead> own;
    if (!context.conversation && context.window == 0 && embedder->isLocal()) {
        own = std::make_shared<EmbedAhead>();
        for (const Item &it : items)
            if (!it.dropped)
                own->texts << it.record.content;
    }
    const MemoryLocks::Guard order = locks.submit(); // the queue's order is the writer's
    if (own)
        queueAhead(own);
    auto job = [this, items = std::move(items), startedValue, context, own]() mutable {
        if (own)
            embedNextAhead(own);
        QElapsedTimer timer;
        timer.start();
        Q_EMIT q->saveStarted(startedValue, QJsonObject());
        try {
            EncodeOutcome out = runEncode(*this, items, context, own);
            Q_EMIT q->saveCompleted(QStringLiteral("%1 memories saved").arg(out.result.stored), QJsonObject(),
                                    elapsedMs(timer));
            return out.result;
        } catch (const std::exception &e) {
            Q_EMIT q->saveFailed(QLatin1String(kBackgroundSave), QString::fromUtf8(e.what()));
            throw;
        }
    };
    try {
        return submit<SaveResult>(std::move(job));
    } catch (...) {
        const MemoryLocks::Guard lock = locks.ahead(); // refused (closed, or called on the writer)
        ahead.erase(std::remove(ahead.begin(), ahead.end(), own), ahead.end());
        throw;
    }
}

void MemoryPrivate::queueAhead(const std::shared_ptr<EmbedAhead> &batch)
{
    locks.assertHeld(MemoryLocks::Rank::Submit);
    const MemoryLocks::Guard lock = locks.ahead();
    ahead.push_back(batch);
}

void MemoryPrivate::embedNextAhead(const std::shared_ptr<EmbedAhead> &own)
{
    const MemoryLocks::Guard lock = locks.ahead();
    ahead.erase(std::remove(ahead.begin(), ahead.end(), own), ahead.end());
    if (ahead.empty() || ahead.front()->vectors.valid())
        return;
    const std::shared_ptr<EmbedAhead> next = ahead.front();
    // An exception (the embedder failed) is kept in the future and thrown in that batch's turn.
    try {
        next->vectors = std::async(std::launch::async, [this, texts = next->texts] { return embedAll(texts); });
    } catch (const std::system_error &) {
        // No thread to be had: that batch embeds in its turn, as if nothing had been started.
    }
}

// The conditions that select exactly the records with the same identities as `metadata` (a missing key
// must be missing): the records a save may treat as its own.
Json MemoryPrivate::sameIdentity(const Json &metadata)
{
    Json conditions = Json::object();
    for (const QString &key : RecordFilter::identityKeys()) {
        const std::string k = key.toStdString();
        if (metadata.is_object() && metadata.contains(k))
            conditions[k] = metadata[k];
        else
            conditions[k] = Json{{"$exists", false}};
    }
    return conditions;
}

RecordFilter MemoryPrivate::readFilter(const QStringList &scopes, const ReadContext &reader) const
{
    RecordFilter f;
    reader.restrict(f);
    for (const QString &s : scopes) {
        if (s == QLatin1String("/")) {
            f.scopes.clear();
            return f;
        }
        f.scopes << s;
    }
    return f;
}

std::optional<MemoryRecord> MemoryPrivate::visibleRecord(const QString &id, const ReadContext &reader, bool withEmbedding)
{
    std::optional<MemoryRecord> r = storage->get(id.trimmed(), withEmbedding);
    if (!r || !reader.sees(*r))
        return std::nullopt;
    if (!config.rootScope.isEmpty() && !ScopePath::contains(config.rootScope, r->scope))
        return std::nullopt; // outside this memory's root: invisible
    return r;
}

QString MemoryPrivate::readScope(const QString &path) const
{
    return q->resolveScope(path.isEmpty() ? std::nullopt : std::optional<QString>(path));
}

QList<MemoryMatch> MemoryPrivate::rank(const QString &text, const Embedding &queryVector, const RecordFilter &filter,
                                       int limit, const QDateTime &now, double floor)
{
    // Oversample so recency and importance can lift a record the vectors rank a little lower.
    const int candidates = std::max(limit * 3, 30);
    // A text with nothing an embedder can read (punctuation only) has no vector: keywords alone.
    const bool vectors = !queryVector.empty();

    // Most candidates are not kept: when the backend can rank them without their records (and the
    // ranking does not weigh access counts, which its hits do not carry), only the kept ones are read.
    if (config.accessBoost <= 0 && searchHits) {
        VectorSearchAnswer answer;
        std::optional<std::vector<SearchHit>> hits =
            vectors ? storage->searchHits(queryVector, filter, candidates, &answer) : std::optional(std::vector<SearchHit>());
        if (hits) {
            if (vectors)
                noteAnswer(answer);
            std::optional<std::vector<SearchHit>> words;
            VectorSearchAnswer keywordAnswer;
            if (config.keywordWeight > 0) {
                words = storage->keywordHits(text, queryVector, filter, candidates, config.keywordContextWeight, &keywordAnswer);
                noteKeywordAnswer(keywordAnswer);
            }
            if (config.keywordWeight <= 0 || words)
                return rankHits(text, *hits, words ? *words : std::vector<SearchHit>(), filter, limit, now, floor);
        }
    }

    struct Candidate
    {
        MemoryRecord record;
        double cosine = 0;
        double keyword = 0;
    };
    QHash<QString, Candidate> pool;
    pool.reserve(2 * candidates);
    if (vectors) {
        VectorSearchAnswer answer;
        for (ScoredRecord &s : storage->search(queryVector, filter, candidates, &answer)) {
            const QString id = s.record.id;
            pool.insert(id, Candidate{std::move(s.record), s.score, 0});
        }
        noteAnswer(answer);
    }
    if (config.keywordWeight > 0) {
        VectorSearchAnswer keywordAnswer;
        const std::vector<ScoredRecord> words = storage->keywordSearch(text, filter, candidates, config.keywordContextWeight, &keywordAnswer);
        noteKeywordAnswer(keywordAnswer);
        for (const ScoredRecord &h : words) {
            auto it = pool.find(h.record.id);
            if (it != pool.end()) {
                it->keyword = h.score;
                continue;
            }
            Candidate c{h.record, 0, h.score};
            if (vectors)
                if (auto full = storage->get(h.record.id, true))
                    c.cosine = Scoring::cosine(queryVector, full->embedding);
            pool.insert(h.record.id, std::move(c));
        }
    }
    QList<MemoryMatch> matches;
    matches.reserve(pool.size());
    for (Candidate &c : pool) {
        c.record.embedding.clear();
        matches << Scoring::match(std::move(c.record), c.cosine, c.keyword, now, config);
    }
    // Recency and importance rank relevant records; they never make an unrelated one relevant.
    std::vector<const MatchSignals *> all;
    for (const MemoryMatch &m : std::as_const(matches))
        all.push_back(&m.signalValues);
    if (!Scoring::anyRelevantEnough(all, floor))
        return {};
    matches.removeIf([floor](const MemoryMatch &m) { return !Scoring::relevantEnough(m.signalValues, floor); });
    std::vector<MatchSignals *> keptSignals;
    for (MemoryMatch &m : matches)
        keptSignals.push_back(&m.signalValues);
    Scoring::relativeKeywords(keptSignals);
    Scoring::weighByRelevance(matches, config);
    Scoring::weighTurns(matches, text);
    const auto kept = matches.begin() + std::min<qsizetype>(limit, matches.size());
    std::partial_sort(matches.begin(), kept, matches.end(), ranksBefore);
    matches.erase(kept, matches.end());
    return matches;
}

QList<MemoryMatch> MemoryPrivate::rankHits(const QString &text, const std::vector<SearchHit> &vectorHits,
                                           const std::vector<SearchHit> &keywordHits,
                                           const RecordFilter &filter, int limit, const QDateTime &now, double floor)
{
    // The same pool, signals and scores as rank() computes from records.
    struct Candidate
    {
        SearchHit hit;
        double keyword = 0;
        MatchSignals signals;
        double score = 0;
    };
    std::vector<Candidate> pool;
    pool.reserve(vectorHits.size() + keywordHits.size());
    std::unordered_map<qint64, std::size_t> at;
    for (const SearchHit &h : vectorHits) {
        at.emplace(h.key, pool.size());
        pool.push_back(Candidate{h, 0, {}, 0});
    }
    for (const SearchHit &h : keywordHits) {
        auto [it, fresh] = at.emplace(h.key, pool.size());
        if (fresh)
            pool.push_back(Candidate{h, h.score, {}, 0});
        else
            pool[it->second].keyword = h.score;
    }
    std::vector<const MatchSignals *> all;
    for (Candidate &c : pool) {
        c.signals = Scoring::signals(c.hit.cosine, c.keyword, c.hit.createdAt, c.hit.importance, 0, now, config);
        all.push_back(&c.signals);
    }
    // Recency and importance rank relevant records; they never make an unrelated one relevant.
    if (!Scoring::anyRelevantEnough(all, floor))
        return {};
    std::vector<Candidate *> kept;
    std::vector<MatchSignals *> keptSignals;
    for (Candidate &c : pool) {
        if (Scoring::relevantEnough(c.signals, floor)) {
            kept.push_back(&c);
            keptSignals.push_back(&c.signals);
        }
    }
    Scoring::relativeKeywords(keptSignals);
    double best = 0;
    for (const Candidate *c : kept)
        best = std::max(best, Scoring::relevance(c->signals.semantic, c->signals.keyword, config));
    for (Candidate *c : kept)
        c->score = Scoring::score(c->signals, best, config);
    const auto before = [](const Candidate *a, const Candidate *b) {
        if (a->score != b->score)
            return a->score > b->score;
        if (a->signals.semantic != b->signals.semantic)
            return a->signals.semantic > b->signals.semantic;
        return a->hit.key < b->hit.key;
    };
    std::sort(kept.begin(), kept.end(), before);

    // The records of the best, with every candidate tied with the last of them (ties are ordered by id,
    // which only the records tell); more when some were deleted, or changed out of the filter, since
    // the search (the record is the final judge, as in search()); and more while a candidate not read
    // yet could still enter the best with its record's turn factor (Scoring::turnFactor): one that
    // outranks a turn lowered for asking, or, once a conversation turn was read, one that the named
    // speaker's lift would raise above the last of the best. (A store without conversation turns
    // reads no more than before; in one that mixes them with other records, a turn below best ones
    // that are all other records is not read for a lift it might get.)
    QList<MemoryMatch> out;
    const MetadataFilter conditions = MetadataFilter::parse(filter.metadata);
    double lift = 1.0;
    std::size_t next = 0;
    const auto settled = [&] {
        if (next >= kept.size())
            return true;
        if (out.size() < limit)
            return false;
        std::nth_element(out.begin(), out.begin() + (limit - 1), out.end(), ranksBefore);
        return std::min(1.0, kept[next]->score * lift) < out[limit - 1].score;
    };
    while (!settled()) {
        std::size_t end = std::min(kept.size(), next + std::size_t(std::max<qsizetype>(limit - out.size(), limit)));
        while (end < kept.size() && kept[end]->score == kept[end - 1]->score
               && kept[end]->signals.semantic == kept[end - 1]->signals.semantic)
            ++end;
        std::vector<qint64> keys;
        for (std::size_t i = next; i < end; ++i)
            keys.push_back(kept[i]->hit.key);
        std::vector<std::optional<MemoryRecord>> records = storage->hitRecords(keys);
        for (std::size_t i = next; i < end; ++i) {
            std::optional<MemoryRecord> &r = records[i - next];
            if (!r || !filter.matches(*r, conditions))
                continue;
            MemoryMatch m;
            m.record = std::move(*r);
            m.signalValues = kept[i]->signals;
            if (Scoring::isTurn(m.record))
                lift = 1.0 + Scoring::kNamedSpeakerBoost;
            m.score = std::min(1.0, kept[i]->score * Scoring::turnFactor(m.record, text));
            m.matchReasons = Scoring::reasons(m.signalValues);
            out << std::move(m);
        }
        next = end;
    }
    sortMatches(out);
    if (out.size() > limit)
        out.resize(limit);
    return out;
}

bool MemoryPrivate::ranksBefore(const MemoryMatch &a, const MemoryMatch &b)
{
    if (a.score != b.score)
        return a.score > b.score;
    if (a.signalValues.semantic != b.signalValues.semantic)
        return a.signalValues.semantic > b.signalValues.semantic;
    return a.record.id < b.record.id;
}

void MemoryPrivate::sortMatches(QList<MemoryMatch> &matches)
{
    std::sort(matches.begin(), matches.end(), ranksBefore);
}

void MemoryPrivate::touchLater(const QList<MemoryMatch> &matches)
{
    if (matches.isEmpty() || config.readOnly)
        return;
    // Access statistics are written by the writer thread, off the recall's path, and in batches:
    // back-to-back recalls would otherwise each commit a write that holds the store while the next
    // recall reads it.
    const QDateTime at = nowUtc();
    const MemoryLocks::Guard lock = locks.touches();
    for (const MemoryMatch &m : matches) {
        Touch &t = touches[m.record.id];
        t.at = at;
        ++t.count;
    }
    if (!touchScheduled)
        touchScheduled = writer.postLater([this] { flushTouches(); }, kTouchIntervalMs);
}

void MemoryPrivate::flushTouches()
{
    QHash<QString, Touch> noted;
    {
        const MemoryLocks::Guard lock = locks.touches();
        noted.swap(touches);
        touchScheduled = false;
    }
    if (noted.isEmpty())
        return;
    // A record recalled n times is listed n times (+1 each), and every record of the batch takes the
    // batch's latest access time (last_accessed is exact to the interval). Written in small
    // transactions, so a recall waits for one of them at most, never for the whole batch.
    QStringList ids;
    QDateTime latest;
    for (auto it = noted.cbegin(); it != noted.cend(); ++it) {
        for (int i = 0; i < it->count; ++i)
            ids << it.key();
        if (!latest.isValid() || it->at > latest)
            latest = it->at;
    }
    try {
        for (qsizetype first = 0; first < ids.size(); first += kTouchChunk)
            storage->touch(ids.mid(first, kTouchChunk), latest);
    } catch (const std::exception &) {
        // A read-only file still answers recalls; access times are a convenience.
    }
}

std::vector<Embedding> MemoryPrivate::embedAll(const QStringList &texts)
{
    std::vector<Embedding> vectors = embedder->embed(texts);
    if (qsizetype(vectors.size()) != texts.size())
        throw Error(ErrorKind::Embedder, QStringLiteral("the embedder %1 returned %2 vectors for %3 texts")
                                             .arg(embedder->id())
                                             .arg(vectors.size())
                                             .arg(texts.size()));
    return vectors;
}

bool MemoryPrivate::llmConfigured() const
{
    try {
        return q->llm() != nullptr;
    } catch (const std::exception &) {
        return true; // configured but unusable: its calls fail and fall back
    }
}

Embedding MemoryPrivate::embedQuery(const QString &text)
{
    return std::move(embedAll({text}).front());
}

RecordFilter MemoryPrivate::recallFilter(const QStringList &scopes, const QStringList &categories, const RecallOptions &o) const
{
    RecordFilter filter = readFilter(scopes, o.effectiveReader());
    filter.categories = categories;
    filter.onlySource = o.onlySource;
    filter.metadata = MetadataFilter::both(o.metadata, identityConditions(identityOf(o)));
    if (o.asOf.isValid())
        filter.createdBefore = o.asOf.toUTC();
    return filter;
}

void MemoryPrivate::addGraphEvidence(QList<MemoryMatch> &matches, const QString &text, const Embedding &queryVector,
                                     const RecordFilter &filter, int limit, const QDateTime &now, const QDateTime &asOf)
{
    // Nothing relevant enough (the relevance floor turned every candidate away): the graph adds nothing
    // either, so that a query about nothing stored still finds nothing.
    if (!graph || matches.isEmpty())
        return;
    QHash<QString, double> evidence; // record id -> its best relation's score
    for (const RelationMatch &m : graph->recall(text, queryVector, GraphMemory::filterOf(filter, asOf), limit))
        for (const QString &id : m.relation.recordIds)
            evidence[id] = std::max(evidence.value(id), m.score);
    if (evidence.isEmpty())
        return;
    QSet<QString> present;
    for (const MemoryMatch &m : std::as_const(matches))
        present.insert(m.record.id);
    RecordFilter records = filter;
    for (auto it = evidence.cbegin(); it != evidence.cend(); ++it)
        if (!present.contains(it.key()))
            records.ids << it.key();
    if (!records.ids.isEmpty()) {
        // The graph's records were ranked among themselves: score every match again against all of
        // them (the relative keyword signal and the relevance scaling), so that scores compare.
        matches += rank(text, queryVector, records, int(records.ids.size()), now, 0);
        std::vector<MatchSignals *> signals;
        for (MemoryMatch &m : matches)
            signals.push_back(&m.signalValues);
        Scoring::relativeKeywords(signals);
        Scoring::weighByRelevance(matches, config);
        Scoring::weighTurns(matches, text);
    }
    for (MemoryMatch &m : matches) {
        const auto it = evidence.constFind(m.record.id);
        if (it == evidence.constEnd())
            continue;
        m.score = std::min(1.0, m.score + config.graphWeight * it.value());
        m.matchReasons << QStringLiteral("graph");
    }
    sortMatches(matches);
}

double MemoryPrivate::relevanceFloor(const RecallOptions &o) const
{
    return o.minRelevance.value_or(config.minRelevance);
}

QList<MemoryMatch> MemoryPrivate::recallNow(const QString &query, const RecallOptions &o)
{
    checkOpen();
    if (o.limit < 1 || o.limit > kMaxRecallLimit)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("limit must be between 1 and %1 (got %2)").arg(kMaxRecallLimit).arg(o.limit));
    const auto unitInterval = [](const std::optional<double> &v) { return !v || (*v >= 0 && *v <= 1); };
    if (!unitInterval(o.minRelevance) || !unitInterval(o.threshold))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the relevance floor and the score threshold of a recall must be between 0 and 1 "
                                   "(got %1 and %2)")
                        .arg(o.minRelevance ? QString::number(*o.minRelevance) : QStringLiteral("none"),
                             o.threshold ? QString::number(*o.threshold) : QStringLiteral("none")));
    QStringList scopes;
    for (const QString &s : o.scopes)
        scopes << q->resolveScope(s);
    if (scopes.isEmpty())
        scopes << q->resolveScope(std::nullopt);
    const QStringList categories = validCategories(o.categories);
    validMetadataFilter(o.metadata);
    identityOf(o);

    drainSaves(); // read barrier
    const RecallStatsScope statsScope(o.stats);
    QElapsedTimer timer;
    timer.start();
    Q_EMIT q->queryStarted(query, o.limit);
    try {
        QList<MemoryMatch> matches;
        const QString text = query.trimmed();
        if (!text.isEmpty()) {
            const QDateTime now = o.now.isValid() ? o.now.toUTC() : nowUtc();
            if (o.depth == RecallDepth::Deep)
                matches = RecallFlow(*this).run(text, o, scopes, categories, now);
            else
                matches = shallowRecall(text, o, scopes, categories, now);
            if (o.threshold) {
                const double threshold = *o.threshold;
                matches.erase(std::remove_if(matches.begin(), matches.end(),
                                             [threshold](const MemoryMatch &m) { return m.score < threshold; }),
                              matches.end());
            }
            touchLater(matches);
        }
        const double ms = elapsedMs(timer);
        if (o.stats)
            o.stats->elapsedMs = ms;
        Q_EMIT q->queryCompleted(query, matches, ms);
        return matches;
    } catch (const std::exception &e) {
        Q_EMIT q->queryFailed(query, QString::fromUtf8(e.what()));
        throw;
    }
}

ScopeNode MemoryPrivate::node(const QString &path, int depth, int maxDepth, int maxChildren, const RecordFilter &visible)
{
    ScopeNode n;
    n.path = path;
    RecordFilter here = visible;
    here.scopes = path == QLatin1String("/") ? QStringList() : QStringList{path};
    n.recordCount = storage->count(here);
    if (depth < maxDepth) {
        QStringList children = storage->childScopes(path, visible);
        if (maxChildren >= 0 && children.size() > maxChildren)
            children = children.mid(0, maxChildren);
        for (const QString &c : std::as_const(children))
            n.children << node(c, depth + 1, maxDepth, maxChildren, visible);
    }
    return n;
}

// ---------------------------------------------------------------------------------------------
// Memory

Memory::Memory(const MemoryConfig &config, QObject *parent)
    : Memory(config, nullptr, nullptr, parent)
{
}

Memory::Memory(const MemoryConfig &config, std::shared_ptr<StorageBackend> storage, std::shared_ptr<Embedder> embedder,
               QObject *parent)
    : QObject(parent), d(std::make_unique<MemoryPrivate>(this, config))
{
    d->openParts(std::move(storage), std::move(embedder));
}

Memory::~Memory()
{
    close();
}

const MemoryConfig &Memory::config() const { return d->config; }
bool Memory::isReadOnly() const { return d->config.readOnly; }
QString Memory::rootScope() const { return d->config.rootScope; }
StorageBackend &Memory::storage() const { return *d->storage; }
std::shared_ptr<LlmProvider> Memory::llm() const
{
    const MemoryLocks::Guard lock = d->locks.llm();
    if (!d->llm && !d->config.llm.is_null()) {
        PluginRegistry &registry = PluginRegistry::instance();
        const ProviderSpec p = ProviderSpec::llm(d->config.llm, registry.keys(PluginRegistry::Kind::Llm));
        d->llm = registry.createLlm(p.key, p.config);
    }
    return d->llm;
}

void Memory::setLlm(std::shared_ptr<LlmProvider> llm)
{
    {
        const MemoryLocks::Guard lock = d->locks.llm();
        d->llm.swap(llm);
    }
    // The previous provider (now in `llm`) is released here, outside the lock.
}

Embedder &Memory::embedder() const { return *d->embedder; }

void Memory::checkInput(const MemoryInput &input, const MemoryConfig &config)
{
    (void)resolvedInput(input, config);
}

void Memory::checkRecord(const MemoryRecord &record, const MemoryConfig &config)
{
    (void)importedRecord(record, config);
}

QString Memory::resolveScope(const std::optional<QString> &scope, const std::optional<QString> &root) const
{
    return scopeUnder(root ? *root : d->config.rootScope, scope);
}

MemoryRecord Memory::remember(const QString &content, const RememberOptions &options)
{
    return rememberAsync(content, options).result();
}

QFuture<MemoryRecord> Memory::rememberAsync(const QString &content, const RememberOptions &options)
{
    d->checkWritable("remember");
    checkMetadata(options.metadata); // before the options are copied
    std::vector<MemoryPrivate::Item> items{d->resolve(MemoryInput{content, options})};
    const QString value = items.front().record.content;
    const QJsonObject meta = metadataObject(options.metadata);
    return d->submit<MemoryRecord>([this, items = std::move(items), value, meta]() mutable {
        QElapsedTimer timer;
        timer.start();
        Q_EMIT saveStarted(value, meta);
        try {
            EncodeOutcome out = runEncode(*d, items, MemoryPrivate::TurnContext());
            MemoryRecord r = out.records.front();
            if (r.id.isEmpty())
                throw Error(ErrorKind::Internal, QStringLiteral("the memory was not stored"));
            Q_EMIT saveCompleted(value, meta, elapsedMs(timer));
            return r;
        } catch (const std::exception &e) {
            Q_EMIT saveFailed(value, QString::fromUtf8(e.what()));
            throw;
        }
    });
}

QFuture<SaveResult> Memory::rememberMany(const QStringList &contents, const RememberOptions &options)
{
    checkMetadata(options.metadata); // before the options are copied for every item
    QList<MemoryInput> items;
    items.reserve(contents.size());
    for (const QString &c : contents)
        items << MemoryInput{c, options};
    return rememberMany(items);
}

QFuture<SaveResult> Memory::rememberMany(const QList<MemoryInput> &inputs)
{
    d->checkWritable("rememberMany");
    std::vector<MemoryPrivate::Item> items;
    items.reserve(size_t(inputs.size()));
    for (const MemoryInput &in : inputs)
        items.push_back(d->batchItem(in));
    return d->submitBatch(std::move(items), QStringLiteral("%1 memories (background)").arg(inputs.size()),
                          MemoryPrivate::TurnContext());
}

QFuture<SaveResult> Memory::rememberConversation(const QList<ConversationTurn> &turns, const ConversationOptions &options)
{
    d->checkWritable("rememberConversation");
    const int window = options.contextWindow.value_or(d->config.conversationContextWindow);
    const double weight = options.contextWeight.value_or(d->config.conversationContextWeight);
    if (window < 0 || !(weight >= 0 && weight <= 1))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the context window must be 0 or more and the context weight between 0 and 1 "
                                   "(got %1 and %2)")
                        .arg(window)
                        .arg(weight));
    std::vector<MemoryPrivate::Item> items;
    items.reserve(size_t(turns.size()));
    for (const ConversationTurn &t : turns) {
        MemoryInput in;
        const QString text = t.text.trimmed();
        in.content = text.isEmpty() || t.speaker.trimmed().isEmpty() ? text : t.speaker.trimmed() + QStringLiteral(": ") + text;
        in.options = options.defaults;
        if (t.at.isValid())
            in.options.createdAt = t.at;
        Json merged = in.options.metadata.is_object() ? in.options.metadata : Json::object();
        if (t.metadata.is_object())
            merged.update(t.metadata);
        // The speaker, for filters and for recall (a turn whose speaker the query names ranks higher),
        // unless the turn's metadata names one itself.
        if (!t.speaker.trimmed().isEmpty() && !merged.contains("speaker"))
            merged["speaker"] = t.speaker.trimmed().toStdString();
        in.options.metadata = std::move(merged);
        items.push_back(d->batchItem(in));
    }
    return d->submitBatch(std::move(items), QStringLiteral("%1 conversation turns (background)").arg(turns.size()),
                          MemoryPrivate::TurnContext{window, weight, true});
}

QList<MemoryMatch> MemoryPrivate::shallowRecall(const QString &text, const RecallOptions &o, const QStringList &scopes,
                                                const QStringList &categories, const QDateTime &now)
{
    const Embedding queryVector = embedQuery(text);
    const RecordFilter filter = recallFilter(scopes, categories, o);
    QList<MemoryMatch> matches = rank(text, queryVector, filter, o.limit, now, relevanceFloor(o));
    if (graph) {
        addGraphEvidence(matches, text, queryVector, filter, o.limit, now, o.asOf.isValid() ? o.asOf.toUTC() : QDateTime());
        if (matches.size() > o.limit)
            matches.resize(o.limit);
    }
    return matches;
}

QList<RelationMatch> Memory::recallRelations(const QString &query, const RecallOptions &o)
{
    d->checkOpen();
    if (!d->graph)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("graph memory is off; set graph_memory to true in the memory configuration to keep and "
                                   "recall relations"));
    if (o.limit < 1 || o.limit > kMaxRecallLimit)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("limit must be between 1 and %1 (got %2)").arg(kMaxRecallLimit).arg(o.limit));
    QStringList scopes;
    for (const QString &s : o.scopes)
        scopes << resolveScope(s);
    if (scopes.isEmpty())
        scopes << resolveScope(std::nullopt);
    d->drainSaves(); // read barrier
    const QString text = query.trimmed();
    if (text.isEmpty())
        return {};
    const RecordFilter records = d->readFilter(scopes, o.effectiveReader());
    return d->graph->recall(text, d->embedQuery(text), GraphMemory::filterOf(records, o.asOf.toUTC()), o.limit);
}

GraphFilter Memory::graphFilter(const QStringList &scopes, const ReadContext &reader, const QDateTime &asOf, bool includeInvalid) const
{
    QStringList resolved;
    for (const QString &s : scopes)
        resolved << resolveScope(s);
    if (resolved.isEmpty())
        resolved << resolveScope(std::nullopt);
    return GraphMemory::filterOf(d->readFilter(resolved, reader), asOf.isValid() ? asOf.toUTC() : QDateTime(), includeInvalid);
}

GraphStore *Memory::graph()
{
    d->checkOpen();
    drainWrites();
    return d->storage->graph();
}

QList<MemoryMatch> Memory::recall(const QString &query, const RecallOptions &options)
{
    return d->recallNow(query, options);
}

QFuture<QList<MemoryMatch>> Memory::recallAsync(const QString &query, const RecallOptions &options)
{
    return d->readLater([this, query, options]() { return d->recallNow(query, options); });
}

QStringList Memory::extractMemories(const QString &content)
{
    if (content.trimmed().isEmpty())
        return {};
    AnalysisCall call(this, AnalysisStep::Extraction);
    call.start(LlmAnalysis::extractionRequest(content.trimmed()));
    QString why;
    if (const std::optional<QStringList> memories =
            call.read(
                LlmAnalysis::readExtraction,
                QStringLiteral("the extraction reply has no list of memories"), &why)) {
        reportAnalysis(this, AnalysisStep::Extraction, AnalysisPath::Llm);
        return *memories;
    }
    // Nothing is dropped: the offline splitter keeps every sentence of the text.
    reportAnalysis(this, AnalysisStep::Extraction, AnalysisPath::Offline, why, call.hadLlm());
    return StatementSplitter::split(content);
}

int Memory::forget(const ForgetOptions &o, const ReadContext &caller)
{
    return forgetAsync(o, caller).result();
}

QFuture<int> Memory::forgetAsync(const ForgetOptions &o, const ReadContext &caller)
{
    d->checkWritable("forget");
    const Json conditions = MetadataFilter::both(validMetadataFilter(o.metadata), identityConditions(identityOf(o)));
    if (!o.scope && o.ids.isEmpty() && o.categories.isEmpty() && !o.olderThan.isValid() && conditions.empty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("forget needs a scope, ids, categories, a time, a metadata filter or an identity; "
                                   "to delete everything use reset() or resetAll()"));
    RecordFilter f = d->readFilter({o.scope || !d->config.rootScope.isEmpty() ? resolveScope(o.scope) : QStringLiteral("/")}, caller);
    f.ids = o.ids;
    f.categories = validCategories(o.categories);
    f.createdBefore = o.olderThan.isValid() ? o.olderThan.toUTC() : QDateTime();
    f.metadata = conditions;
    d->checkNotOnWriter("forget()");
    return d->submit<int>([this, f] {
        if (!d->graph)
            return d->storage->remove(f);
        // Graph memory: the deleted records' graph changes are reverted (the undo of their save).
        QStringList ids;
        for (const MemoryRecord &r : d->storage->list(f, -1, 0))
            ids << r.id;
        const int n = d->storage->remove(f);
        d->graph->remove(ids);
        return n;
    });
}

std::optional<MemoryRecord> Memory::get(const QString &id, const ReadContext &reader)
{
    d->checkOpen();
    drainWrites();
    return d->visibleRecord(id, reader);
}

QFuture<std::optional<MemoryRecord>> Memory::getAsync(const QString &id, const ReadContext &reader)
{
    return d->readLater([this, id, reader] { return get(id, reader); });
}

MemoryRecord Memory::update(const QString &id, const UpdateOptions &o, const ReadContext &caller)
{
    return updateAsync(id, o, caller).result();
}

QFuture<MemoryRecord> Memory::updateAsync(const QString &id, const UpdateOptions &o, const ReadContext &caller)
{
    d->checkWritable("update");
    // The new values are checked here, at the call; the record is read and written on the writer.
    UpdateOptions checked;
    if (o.content)
        checked.content = validContent(*o.content, d->config);
    if (o.scope)
        checked.scope = resolveScope(o.scope);
    if (o.categories)
        checked.categories = validCategories(*o.categories);
    if (o.importance)
        checked.importance = validImportance(*o.importance);
    if (o.metadata) {
        if (o.metadata->is_null())
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("metadata must be a JSON object"));
        checkMetadata(*o.metadata);
        checked.metadata = o.metadata;
        checked.mergeMetadata = o.mergeMetadata;
    }
    d->checkNotOnWriter("update()");
    return d->submit<MemoryRecord>([this, id, checked = std::move(checked), caller] { return d->updateNow(id, checked, caller); });
}

MemoryRecord MemoryPrivate::updateNow(const QString &id, const UpdateOptions &o, const ReadContext &caller)
{
    std::optional<MemoryRecord> found = visibleRecord(id, caller);
    if (!found)
        throw Error(ErrorKind::NotFound, QStringLiteral("no memory has the id %1; use an id that remember, recall or list gave").arg(Error::quoted(id)));
    MemoryRecord r = *found;
    r.embedding.clear();
    if (o.content && *o.content != r.content) {
        r.embedding = std::move(embedAll({*o.content}).front());
        r.content = *o.content;
    }
    if (o.scope)
        r.scope = *o.scope;
    if (o.categories)
        r.categories = *o.categories;
    if (o.importance)
        r.importance = *o.importance;
    if (o.metadata) {
        if (o.mergeMetadata)
            r.metadata.merge_patch(*o.metadata);
        else
            r.metadata = *o.metadata;
        if (!r.metadata.is_object())
            r.metadata = Json::object();
        checkMetadata(r.metadata); // a patch can make it larger
    }
    r.updatedAt = nowUtc();
    r.lastAccessed = r.updatedAt;
    if (!r.embedding.empty())
        ensureBound();
    storage->update(r);
    MemoryRecord stored = storage->get(r.id, false).value_or(r);
    if (graph) // the graph follows the record's content and scope
        graph->replace({stored});
    return stored;
}

QList<HistoryEntry> Memory::history(const QString &id, const ReadContext &reader)
{
    d->checkOpen();
    drainWrites();
    const std::vector<HistoryEntry> entries = d->storage->history(id.trimmed());
    // Every version of the record must be one the reader may see, under the root (a record's source
    // and privacy never change; its scope may).
    const auto hidden = [&](const Json &record) {
        if (!record.is_object())
            return false;
        const bool isPrivate = record.contains("private") && record["private"].is_boolean() && record["private"].get<bool>();
        const QString source = record.contains("source") && record["source"].is_string()
                                 ? QString::fromStdString(record["source"].get<std::string>())
                                 : QString();
        MemoryRecord shape;
        shape.isPrivate = isPrivate;
        shape.source = source;
        if (!reader.sees(shape))
            return true;
        return !d->config.rootScope.isEmpty() && record.contains("scope") && record["scope"].is_string()
            && !ScopePath::contains(d->config.rootScope, QString::fromStdString(record["scope"].get<std::string>()));
    };
    const auto notFound = [&] {
        return Error(ErrorKind::NotFound, QStringLiteral("no memory has the id %1; use an id that remember, recall or list gave").arg(Error::quoted(id.trimmed())));
    };
    for (const HistoryEntry &e : entries)
        if (hidden(e.oldRecord) || hidden(e.newRecord))
            throw notFound();
    if (entries.empty() && !d->visibleRecord(id, reader))
        throw notFound();
    return QList<HistoryEntry>(entries.begin(), entries.end());
}

QFuture<QList<HistoryEntry>> Memory::historyAsync(const QString &id, const ReadContext &reader)
{
    return d->readLater([this, id, reader] { return history(id, reader); });
}

MemoryRecord Memory::undo(const QString &id, const ReadContext &caller)
{
    return undoAsync(id, caller).result();
}

QFuture<MemoryRecord> Memory::undoAsync(const QString &id, const ReadContext &caller)
{
    d->checkWritable("undo");
    d->checkNotOnWriter("undo()");
    // On the writer, so that the history is read with saves excluded: a save consolidating this
    // record in between would otherwise be reverted along with the change meant.
    return d->submit<MemoryRecord>([this, id, caller] { return d->undoNow(id, caller); });
}

MemoryRecord MemoryPrivate::undoNow(const QString &id, const ReadContext &caller)
{
    Q_ASSERT(writer.isCurrentThread());
    const QList<HistoryEntry> entries = q->history(id, caller); // NotFound, root confinement, privacy
    if (entries.isEmpty() || entries.back().oldRecord.is_null() || !entries.back().oldRecord.is_object())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("memory \"%1\" has not changed since it was stored, so there is nothing to undo; "
                                   "use forget to delete it")
                        .arg(id.trimmed()));
    const HistoryEntry &last = entries.back();
    MemoryRecord previous;
    try {
        from_json(last.oldRecord, previous);
    } catch (const std::exception &e) {
        throw Error(ErrorKind::Corrupt, QStringLiteral("the history of memory \"%1\" cannot be read (%2); the record is unchanged")
                                            .arg(id.trimmed(), QString::fromUtf8(e.what())));
    }
    std::optional<MemoryRecord> current = storage->get(previous.id, true);
    const bool needVector = !current || current->content != previous.content;
    if (needVector) {
        previous.embedding = std::move(embedAll({previous.content}).front());
        ensureBound();
    }
    if (last.event == HistoryEntry::Event::Delete) {
        if (current)
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("memory \"%1\" exists again, so its deletion cannot be undone").arg(previous.id));
        storage->restore(previous);
    } else {
        if (!current)
            throw Error(ErrorKind::NotFound, QStringLiteral("memory \"%1\" was deleted after its last update; undo the "
                                                            "deletion first")
                                                 .arg(previous.id));
        previous.lastAccessed = current->lastAccessed;
        previous.accessCount = current->accessCount;
        previous.updatedAt = nowUtc();
        if (!needVector)
            previous.embedding.clear(); // keep the stored vector
        storage->update(previous);
    }
    MemoryRecord restored = storage->get(previous.id, false).value_or(previous);
    restored.embedding.clear();
    if (graph)
        graph->replace({restored}); // a record brought back, or its earlier content and scope: the graph follows
    return restored;
}

MemoryScope Memory::scope(const QString &path)
{
    return MemoryScope(this, path);
}

MemorySlice Memory::slice(const QStringList &scopes, const QStringList &categories, bool readOnly)
{
    return MemorySlice(this, scopes, categories, readOnly);
}

ScopeNode Memory::scopeTree(const QString &path, int maxDepth, const ReadContext &reader, int maxChildren)
{
    d->checkOpen();
    if (maxDepth < 0)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("max depth must be 0 or more (got %1)").arg(maxDepth));
    drainWrites();
    return d->node(d->readScope(path), 0, maxDepth, maxChildren, d->readFilter({}, reader));
}

QString Memory::tree(const QString &path, int maxDepth, const ReadContext &reader)
{
    const ScopeNode root = scopeTree(path, maxDepth, reader);
    QStringList lines;
    std::function<void(const ScopeNode &, int)> walk = [&](const ScopeNode &n, int depth) {
        if (n.recordCount == 0 && depth > 0)
            return;
        lines << QStringLiteral("%1%2 (%3 records)").arg(QString(depth * 2, QLatin1Char(' ')), n.path).arg(n.recordCount);
        for (const ScopeNode &c : n.children)
            walk(c, depth + 1);
    };
    walk(root, 0);
    return lines.join(QLatin1Char('\n'));
}

ScopeInfo Memory::info(const QString &path, const ReadContext &reader)
{
    d->checkOpen();
    drainWrites();
    return d->storage->scopeInfo(d->readScope(path), d->readFilter({}, reader));
}

QStringList Memory::listScopes(const QString &path, const ReadContext &reader)
{
    d->checkOpen();
    drainWrites();
    return d->storage->childScopes(d->readScope(path), d->readFilter({}, reader));
}

QMap<QString, int> Memory::listCategories(const QString &path, const ReadContext &reader)
{
    d->checkOpen();
    drainWrites();
    return d->storage->categories(d->readFilter({d->readScope(path)}, reader));
}

QList<MemoryRecord> Memory::listRecords(const QString &scope, int limit, int offset, const ReadContext &reader)
{
    d->checkOpen();
    if (limit < 1 || offset < 0)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("limit must be at least 1 and offset 0 or more (got %1 and %2)").arg(limit).arg(offset));
    drainWrites();
    const auto records = d->storage->list(d->readFilter({d->readScope(scope)}, reader), limit, offset);
    return QList<MemoryRecord>(records.begin(), records.end());
}

RecordFilter MemoryPrivate::queryFilter(const RecordQuery &query, const ReadContext &reader) const
{
    QStringList scopes;
    for (const QString &s : query.scopes)
        scopes << readScope(s);
    if (scopes.isEmpty())
        scopes << readScope(QString());
    RecordFilter f = readFilter(scopes, reader);
    f.categories = validCategories(query.categories);
    f.onlySource = query.source.trimmed();
    f.contentContains = query.text.trimmed();
    return f;
}

QList<MemoryRecord> Memory::searchRecords(const RecordQuery &query, const ReadContext &reader)
{
    d->checkOpen();
    if (query.limit < 1 || query.limit > kMaxRecallLimit || query.offset < 0)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("a page of records needs a limit between 1 and %1 and an offset "
                                                               "of 0 or more (got %2 and %3)")
                                                    .arg(kMaxRecallLimit)
                                                    .arg(query.limit)
                                                    .arg(query.offset));
    const RecordFilter filter = d->queryFilter(query, reader);
    drainWrites();
    const auto records = d->storage->listOrdered(filter, query.order, query.limit, query.offset);
    return QList<MemoryRecord>(records.begin(), records.end());
}

int Memory::countRecords(const RecordQuery &query, const ReadContext &reader)
{
    d->checkOpen();
    const RecordFilter filter = d->queryFilter(query, reader);
    drainWrites();
    return d->storage->count(filter);
}

QFuture<QString> Memory::treeAsync(const QString &path, int maxDepth, const ReadContext &reader)
{
    return d->readLater([this, path, maxDepth, reader] { return tree(path, maxDepth, reader); });
}

QFuture<ScopeNode> Memory::scopeTreeAsync(const QString &path, int maxDepth, const ReadContext &reader, int maxChildren)
{
    return d->readLater([this, path, maxDepth, reader, maxChildren] { return scopeTree(path, maxDepth, reader, maxChildren); });
}

QFuture<ScopeInfo> Memory::infoAsync(const QString &path, const ReadContext &reader)
{
    return d->readLater([this, path, reader] { return info(path, reader); });
}

QFuture<QStringList> Memory::listScopesAsync(const QString &path, const ReadContext &reader)
{
    return d->readLater([this, path, reader] { return listScopes(path, reader); });
}

QFuture<QMap<QString, int>> Memory::listCategoriesAsync(const QString &path, const ReadContext &reader)
{
    return d->readLater([this, path, reader] { return listCategories(path, reader); });
}

QFuture<QList<MemoryRecord>> Memory::listRecordsAsync(const QString &scope, int limit, int offset, const ReadContext &reader)
{
    return d->readLater([this, scope, limit, offset, reader] { return listRecords(scope, limit, offset, reader); });
}

QFuture<QList<MemoryRecord>> Memory::searchRecordsAsync(const RecordQuery &query, const ReadContext &reader)
{
    return d->readLater([this, query, reader] { return searchRecords(query, reader); });
}

QFuture<int> Memory::countRecordsAsync(const RecordQuery &query, const ReadContext &reader)
{
    return d->readLater([this, query, reader] { return countRecords(query, reader); });
}

QList<MemoryRecord> Memory::exportRecords(int offset, int batch, const ReadContext &reader)
{
    d->checkOpen();
    drainWrites();
    QList<MemoryRecord> out;
    for (const MemoryRecord &r : d->storage->list(d->readFilter({}, reader), batch, offset)) {
        if (auto full = d->storage->get(r.id, true))
            out << *full;
    }
    return out;
}

SaveResult Memory::importRecords(const QList<MemoryRecord> &records, bool keepEmbeddings)
{
    d->checkWritable("import");
    std::vector<MemoryRecord> toSave;
    for (const MemoryRecord &in : records) {
        MemoryRecord r = importedRecord(in, d->config);
        if (!d->config.rootScope.isEmpty() && !ScopePath::contains(d->config.rootScope, r.scope))
            throw Error(ErrorKind::PermissionDenied,
                        QStringLiteral("record %1 is in %2, outside this memory's root scope %3; nothing was imported")
                            .arg(r.id, r.scope, d->config.rootScope));
        if (keepEmbeddings && int(r.embedding.size()) != d->embedder->dimension())
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("record %1 has a %2-dimensional embedding but the embedder %3 makes %4-dimensional "
                                       "ones; import without --keep-embeddings to embed again")
                            .arg(r.id)
                            .arg(r.embedding.size())
                            .arg(d->embedder->id())
                            .arg(d->embedder->dimension()));
        if (!keepEmbeddings)
            r.embedding.clear();
        toSave.push_back(std::move(r));
    }
    QFuture<SaveResult> f = d->submit<SaveResult>([this, toSave = std::move(toSave)]() mutable {
        SaveResult res;
        std::vector<MemoryRecord> fresh;
        for (MemoryRecord &r : toSave) {
            if (d->storage->get(r.id)) {
                ++res.existing;
                continue;
            }
            fresh.push_back(std::move(r));
        }
        QStringList texts;
        std::vector<size_t> need;
        for (size_t i = 0; i < fresh.size(); ++i) {
            if (fresh[i].embedding.empty()) {
                texts << fresh[i].content;
                need.push_back(i);
            }
        }
        if (!texts.isEmpty()) {
            std::vector<Embedding> v = d->embedAll(texts);
            for (size_t k = 0; k < need.size(); ++k)
                fresh[need[k]].embedding = std::move(v[k]);
        }
        if (!fresh.empty()) {
            d->ensureBound();
            d->storage->save(fresh);
            if (d->graph)
                d->graph->add(fresh);
        }
        for (const MemoryRecord &r : fresh)
            res.ids << r.id;
        res.stored = int(fresh.size());
        return res;
    });
    return f.result();
}

int Memory::reset(const QString &scope)
{
    return resetAsync(scope).result();
}

QFuture<int> Memory::resetAsync(const QString &scope)
{
    d->checkWritable("reset");
    const QString target = d->readScope(scope);
    d->checkNotOnWriter("reset()");
    return d->submit<int>([this, target] {
        const int n = d->storage->reset(target);
        if (GraphStore *g = d->storage->graph())
            g->reset(target);
        if (target != QLatin1String("/")) // a reset of everything cleared the state with the records
            ConversationIngest::removeStates(*d->storage, target);
        return n;
    });
}

int Memory::resetAll()
{
    d->checkWritable("reset");
    return d->exclusively("reset()", [&] {
        const int n = d->storage->reset(QStringLiteral("/"));
        if (GraphStore *g = d->storage->graph())
            g->reset(QStringLiteral("/"));
        Q_EMIT recordsChanged();
        return n;
    });
}

StoreCheck Memory::check(bool repair)
{
    if (repair)
        d->checkWritable("check --repair");
    else
        d->checkOpen();
    // No save runs while derived data is rebuilt.
    return d->exclusively("check()", [&] { return d->storage->check(repair); });
}

std::vector<DamagedRecord> Memory::exportDamaged(const ReadContext &reader)
{
    d->checkOpen();
    drainWrites();
    std::vector<DamagedRecord> out;
    for (DamagedRecord &r : d->storage->damagedRecords())
        if (reader.sees(r.record))
            out.push_back(std::move(r));
    return out;
}

void Memory::drainWrites()
{
    if (d->writer.isCurrentThread())
        return; // a save's own signal handler: everything before it has run
    // The accesses noted so far are written too.
    bool noted = false;
    {
        const MemoryLocks::Guard lock = d->locks.touches();
        noted = !d->touches.isEmpty();
    }
    if (noted)
        d->submit<void>([this] { d->flushTouches(); }, false);
    d->drainSaves();
}

void MemoryPrivate::drainSaves()
{
    if (writer.isCurrentThread())
        return;
    QList<QFuture<void>> snapshot;
    {
        const MemoryLocks::Guard lock = locks.pending();
        snapshot = pending;
    }
    for (QFuture<void> &f : snapshot) {
        try {
            f.waitForFinished();
        } catch (...) {
            // Reported through saveFailed() and the caller's own future.
        }
    }
    const MemoryLocks::Guard lock = locks.pending();
    pending.erase(std::remove_if(pending.begin(), pending.end(),
                                 [](const QFuture<void> &f) { return f.isFinished(); }),
                  pending.end());
}

void Memory::close()
{
    if (d->closed)
        return;
    d->checkNotOnWriter("close()");
    // Recalls started with recallAsync() finish first: they use the store.
    QList<QFuture<void>> reads;
    {
        const MemoryLocks::Guard lock = d->locks.pending();
        reads = d->reads;
    }
    for (QFuture<void> &r : reads) {
        try {
            r.waitForFinished();
        } catch (...) {
            // The caller's own future carries it.
        }
    }
    d->exclusively("close()", [&] { d->closed = true; });
    d->writer.waitForIdle();
    try {
        d->storage->close();
    } catch (...) {
    }
}

} // namespace mneme
