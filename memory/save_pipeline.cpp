// The save pipeline's analysis stages: similar records, save analysis, consolidation.

#include "memory/analysis_call_p.h"
#include "memory/llm_analysis_p.h"
#include "memory/memory_p.h"
#include "memory/offline_analyzer_p.h"
#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>
#include <mneme/core/vector_math.h>

#include <QHash>
#include <QSet>
#include <QtConcurrent/QtConcurrentMap>
#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

namespace mneme {

namespace {

bool fieldsMissing(const MemoryInput &in)
{
    const RememberOptions &o = in.options;
    return !o.scope || !o.categories || !o.importance;
}

// The scope an item's analysis stays inside: its per-call root, else the Memory's root, else "/".
QString rootOf(const MemoryConfig &config, const MemoryInput &in)
{
    if (in.options.rootScope && !in.options.rootScope->trimmed().isEmpty())
        return ScopePath::normalize(*in.options.rootScope);
    return config.rootScope.isEmpty() ? QStringLiteral("/") : config.rootScope;
}

// The cosine at which a stored record votes for its scope in the offline analysis. The builtin
// feature-hashing embedders score related sentences lower than neural ones (about 0.35-0.5 for two
// sentences on one subject, under 0.05 for unrelated ones), so they get a lower bar.
double scopeVoteSimilarity(const Embedder &embedder)
{
    return embedder.id().startsWith(QLatin1String("builtin/")) ? 0.3 : 0.55;
}

Json mergedMetadata(const Json &caller, const Json &extracted)
{
    Json m = extracted.is_object() ? extracted : Json::object();
    if (caller.is_object())
        for (auto it = caller.begin(); it != caller.end(); ++it)
            m[it.key()] = it.value(); // the caller's own keys win
    return m;
}

QStringList cleanCategories(const QStringList &in)
{
    QStringList out;
    for (QString c : in) {
        c = c.trimmed();
        bool printable = !c.isEmpty();
        for (const QChar ch : c)
            printable = printable && ch.category() != QChar::Other_Control;
        if (printable && !out.contains(c))
            out << c;
    }
    return out;
}

// The offline analysis compares a new record with this many of the newest records of each scope (its
// exemplars), fewer when the scopes are many, so that a batch compares each record with at most
// kMaxSamples stored ones.
constexpr int kSamplesPerScope = 16;
constexpr int kMinSamplesPerScope = 4;
constexpr std::size_t kMaxSamples = 2048;

// The exemplars of one group of a batch (one root, source, privacy and identity), their vectors
// normalised in one contiguous array.
struct Exemplars
{
    std::vector<MemoryRecord> records;
    std::vector<float> vectors;
    int dimension = 0;
};

Exemplars readExemplars(StorageBackend &storage, const RecordFilter &filter, const MemoryRecord &like)
{
    Exemplars e;
    std::vector<MemoryRecord> samples = storage.scopeSamples(filter, kSamplesPerScope);
    if (samples.size() > kMaxSamples)
        samples = storage.scopeSamples(filter, std::max(kMinSamplesPerScope, int(kMaxSamples * kSamplesPerScope / samples.size())));
    e.dimension = int(like.embedding.size());
    for (MemoryRecord &r : samples) {
        // The same source and privacy only (decision 6), and vectors of this embedder.
        if (r.source != like.source || r.isPrivate != like.isPrivate || int(r.embedding.size()) != e.dimension)
            continue;
        const float n = VectorMath::norm(r.embedding.data(), r.embedding.size());
        if (n <= 0)
            continue;
        for (float x : r.embedding)
            e.vectors.push_back(x / n);
        r.embedding.clear();
        e.records.push_back(std::move(r));
    }
    return e;
}

// The `limit` exemplars most similar to each of `vectors` (by cosine, best first; ties: the earlier
// exemplar). The vectors are compared with the exemplars a few at a time, each exemplar read once for
// all of them while it is in the processor's cache.
std::vector<std::vector<std::pair<double, std::size_t>>> nearestExemplars(const Exemplars &e, const std::vector<const Embedding *> &vectors,
                                                                          int limit)
{
    std::vector<std::vector<std::pair<double, std::size_t>>> out(vectors.size());
    std::vector<float> norms(vectors.size(), 0.0F);
    std::vector<std::size_t> comparable; // the vectors of the exemplars' dimension, not zero
    for (std::size_t v = 0; v < vectors.size(); ++v) {
        if (int(vectors[v]->size()) != e.dimension || e.dimension == 0 || limit <= 0)
            continue;
        norms[v] = VectorMath::norm(vectors[v]->data(), vectors[v]->size());
        if (norms[v] > 0)
            comparable.push_back(v);
    }
    const std::size_t n = e.records.size();
    std::vector<double> scores(comparable.size() * n);
    for (std::size_t k = 0; k < n; ++k) {
        const float *exemplar = e.vectors.data() + k * std::size_t(e.dimension);
        for (std::size_t c = 0; c < comparable.size(); ++c) {
            const std::size_t v = comparable[c];
            scores[c * n + k] = VectorMath::dot(vectors[v]->data(), exemplar, vectors[v]->size()) / norms[v];
        }
    }
    const auto worse = [](const std::pair<double, std::size_t> &a, const std::pair<double, std::size_t> &b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    for (std::size_t c = 0; c < comparable.size(); ++c) {
        std::vector<std::pair<double, std::size_t>> &best = out[comparable[c]];
        for (std::size_t k = 0; k < n; ++k) {
            const double score = scores[c * n + k];
            if (int(best.size()) == limit && score <= best.front().first)
                continue;
            best.emplace_back(score, k);
            std::push_heap(best.begin(), best.end(), worse);
            if (int(best.size()) > limit) {
                std::pop_heap(best.begin(), best.end(), worse);
                best.pop_back();
            }
        }
        std::sort_heap(best.begin(), best.end(), worse);
    }
    return out;
}

// Runs fn(k) for k in [0, n), on this thread and the pool's (the analysis of a batch's items is
// independent item by item), when there are at least `parallelFrom` of them.
template<typename Fn>
void forEachInParallel(std::size_t n, const Fn &fn, std::size_t parallelFrom = 64)
{
    if (n < parallelFrom) {
        for (std::size_t k = 0; k < n; ++k)
            fn(k);
        return;
    }
    std::vector<std::size_t> indices(n);
    std::iota(indices.begin(), indices.end(), std::size_t(0));
    QtConcurrent::blockingMap(indices, [&](std::size_t k) { fn(k); });
}

} // namespace

void MemoryPrivate::analyzeItems(std::vector<Item> &items, const std::vector<size_t> &active)
{
    const bool haveLlm = llmConfigured();

    std::vector<size_t> work;
    for (size_t i : active)
        if (!items[i].dropped && (haveLlm || fieldsMissing(items[i].input)))
            work.push_back(i);
    if (work.empty())
        return;

    // 1. Similar stored records: same source and privacy only (decision 6), within the item's scope
    //    when one was given, else within its root. A failing search treats the item as new.
    //    Without an LLM they serve only the offline scope vote: an item whose scope is given, or whose
    //    root has no scope below it to vote for, needs none (an identical record in its scope was
    //    found before the analysis), and skipping the search keeps inferred saves as fast as full ones.
    QHash<QString, bool> rootHasScopes;
    const auto needsNeighbours = [&](const Item &it) {
        if (haveLlm)
            return true;
        if (it.input.options.scope.has_value())
            return false;
        // The scopes the item's source may see (its neighbours are of its source, shared or its own).
        const QString root = rootOf(config, it.input);
        const QString key = root + QChar(0) + it.record.source;
        auto known = rootHasScopes.constFind(key);
        if (known == rootHasScopes.constEnd())
            known = rootHasScopes.insert(key, !storage->childScopes(root, readFilter({}, ReadContext::of(it.record.source))).isEmpty());
        return *known;
    };
    // Without an LLM the whole batch is analysed at once (analyzeOfflineBatch below): the votes are
    // taken among the newest records of each scope, and each item compared with those only.
    std::vector<size_t> voting;
    for (size_t i : work) {
        Item &it = items[i];
        if (!needsNeighbours(it))
            continue;
        if (!haveLlm) {
            voting.push_back(i);
            continue;
        }
        const MemoryRecord &r = it.record;
        const bool scopeGiven = it.input.options.scope.has_value();
        RecordFilter f;
        const QString prefix = scopeGiven ? r.scope : rootOf(config, it.input);
        if (prefix != QLatin1String("/"))
            f.scopes << prefix;
        f.metadata = sameIdentity(r.metadata); // another user's, agent's or run's record is not a candidate
        try {
            for (ScoredRecord &s : storage->search(r.embedding, f, config.consolidationLimit * 4)) {
                if (s.record.source != r.source || s.record.isPrivate != r.isPrivate)
                    continue;
                if (s.record.content == r.content && (!scopeGiven || s.record.scope == r.scope)) {
                    it.existingId = s.record.id; // re-remembering a stored fact changes nothing
                    it.record = s.record;
                    break;
                }
                if (int(it.similar.size()) < config.consolidationLimit) {
                    it.similarity.push_back(s.score);
                    it.similar.push_back(std::move(s.record));
                }
            }
        } catch (const std::exception &e) {
            qCWarning(lcMemory).noquote() << "similar-record search failed; the memory is saved as new:" << e.what();
            it.similar.clear();
            it.similarity.clear();
        }
    }

    // 2. Existing scopes and categories under each item's root, as the item's source may see them
    //    (shared ones and its own private ones: never names only another source's private records
    //    use), for the prompts and the offline analyzer. A batch usually has one root and one source.
    struct Existing
    {
        QStringList scopes;
        QStringList categories;
        OfflineCategories prepared{QStringList()}; // the categories read once for the offline analyzer
    };
    QHash<QString, Existing> existing;
    const auto existingFor = [&](const MemoryInput &in) -> const Existing & {
        const QString root = rootOf(config, in);
        const QString source = in.options.source.trimmed();
        const QString key = root + QChar(0) + source;
        auto it = existing.find(key);
        if (it == existing.end()) {
            Existing e;
            const RecordFilter visible = readFilter({}, ReadContext::of(source));
            RecordFilter f = visible;
            if (root != QLatin1String("/"))
                f.scopes << root;
            e.categories = storage->categories(f).keys();
            e.prepared = OfflineCategories(e.categories);
            if (haveLlm)
                e.scopes = LlmAnalysis::scopesForPrompt(*storage, root, storage->childScopes(root, visible), visible);
            it = existing.insert(key, e);
        }
        return *it;
    };

    // 3. The batch's LLM calls run concurrently (the saves' analyses first, in item order, then the
    //    consolidations: the order they are waited for).
    AnalysisBatch calls(q);
    std::vector<std::optional<size_t>> saveCall(items.size()), planCall(items.size());
    if (haveLlm) {
        for (size_t i : work) {
            if (!items[i].existingId.isEmpty() || !fieldsMissing(items[i].input))
                continue;
            const Existing &e = existingFor(items[i].input);
            saveCall[i] = calls.add(AnalysisStep::Save, LlmAnalysis::saveRequest(items[i].record.content, e.scopes, e.categories));
        }
        for (size_t i : work) {
            const Item &it = items[i];
            if (it.existingId.isEmpty() && !it.similarity.empty() && it.similarity.front() >= config.consolidationThreshold)
                planCall[i] = calls.add(AnalysisStep::Consolidation, LlmAnalysis::consolidationRequest(it.record.content, it.similar));
        }
    }

    // 4. Fields: from the LLM's analysis, else (no LLM, or its call failed) the offline analyzer.
    // Pure: runs on several threads at once for a batch (existingCategories read before).
    const double voteSimilarity = scopeVoteSimilarity(*embedder);
    const auto analyzeOffline = [&](Item &it, const OfflineCategories &existingCategories) {
        const RememberOptions &o = it.input.options;
        const QString root = rootOf(config, it.input);
        const OfflineAnalysis a = OfflineAnalyzer::analyze(it.record.content, config.defaultImportance, existingCategories);
        if (!o.scope) {
            QList<QPair<QString, double>> neighbours;
            for (size_t k = 0; k < it.similar.size(); ++k)
                neighbours << qMakePair(it.similar[k].scope, it.similarity[k]);
            const QString chosen = OfflineAnalyzer::chooseScope(neighbours, root, voteSimilarity);
            it.record.scope = LlmAnalysis::clampScope(root, LlmAnalysis::relativeScope(root, chosen));
        }
        if (!o.categories)
            it.record.categories = cleanCategories(a.categories);
        if (!o.importance)
            it.record.importance = a.importance;
        Json extracted = a.metadata;
        extracted["analysis"] = "offline";
        it.record.metadata = mergedMetadata(it.record.metadata, extracted);
    };
    if (!haveLlm) {
        analyzeOfflineBatch(items, voting);
        std::vector<size_t> toAnalyse;
        for (size_t i : work)
            if (items[i].existingId.isEmpty() && fieldsMissing(items[i].input)) {
                existingFor(items[i].input); // every read (and insert into `existing`) before a pointer is kept
                toAnalyse.push_back(i);
            }
        std::vector<std::pair<size_t, const OfflineCategories *>> analysed;
        for (size_t i : toAnalyse)
            analysed.emplace_back(i, &existingFor(items[i].input).prepared);
        forEachInParallel(analysed.size(), [&](size_t k) { analyzeOffline(items[analysed[k].first], *analysed[k].second); });
        for (size_t k = 0; k < analysed.size(); ++k)
            reportAnalysis(q, AnalysisStep::Save, AnalysisPath::Offline, QStringLiteral("no LLM is configured"), false);
        return;
    }
    for (size_t i : work) {
        Item &it = items[i];
        if (!it.existingId.isEmpty() || !fieldsMissing(it.input))
            continue;
        const RememberOptions &o = it.input.options;
        const QString root = rootOf(config, it.input);
        AnalysisCall &call = calls.at(*saveCall[i]);
        QString why;
        std::optional<SaveAnalysis> a = call.read(
            LlmAnalysis::readSave,
            QStringLiteral("the save analysis reply has no usable scope"), &why);
        if (!a) {
            // The same fields as without an LLM, rather than bare defaults.
            analyzeOffline(it, existingFor(it.input).prepared);
            reportAnalysis(q, AnalysisStep::Save, AnalysisPath::Offline, why, true);
            continue;
        }
        if (!o.scope)
            it.record.scope = LlmAnalysis::clampScope(root, a->suggestedScope);
        if (!o.categories)
            it.record.categories = cleanCategories(a->categories);
        if (!o.importance)
            it.record.importance = a->importance;
        it.record.metadata = mergedMetadata(it.record.metadata, a->metadata);
        reportAnalysis(q, AnalysisStep::Save, AnalysisPath::Llm);
    }

    // 5. Consolidation plans; a failed call inserts the memory and touches nothing.
    for (size_t i : work) {
        if (!planCall[i])
            continue;
        AnalysisCall &call = calls.at(*planCall[i]);
        Item &it = items[i];
        QString why;
        std::optional<ConsolidationPlan> plan = call.read(
            [&](const Json &j) { return LlmAnalysis::readConsolidation(j, it.similar); },
            QStringLiteral("the consolidation reply is not a plan"), &why);
        if (plan) {
            it.plan = std::move(plan);
            reportAnalysis(q, AnalysisStep::Consolidation, AnalysisPath::Llm);
        } else {
            it.plan = ConsolidationPlan();
            reportAnalysis(q, AnalysisStep::Consolidation, AnalysisPath::Defaults, why, true);
        }
    }
}

// The offline scope vote of a batch: the items (no scope given, a root with scopes below it) are grouped
// by root, source, privacy and identities. For each group, a stored record with an item's words under
// the root (of its source, privacy and identities) is that item's record, as the similar-record search
// finds it with an LLM; the others are compared with the newest records of each scope below the root
// (scopeSamples(): kSamplesPerScope of each, the same for the whole batch) instead of the whole store,
// and their best consolidation_limit matches vote. Where each scope holds at most kSamplesPerScope
// records, the votes are those of a search of the whole store.
void MemoryPrivate::analyzeOfflineBatch(std::vector<Item> &items, const std::vector<size_t> &voting)
{
    std::map<QString, std::vector<size_t>> groups; // ordered: the same reads in the same order every time
    for (size_t i : voting) {
        const MemoryRecord &r = items[i].record;
        const QString key = QStringList{rootOf(config, items[i].input), r.source, r.isPrivate ? QStringLiteral("1") : QStringLiteral("0"),
                                        QString::fromStdString(sameIdentity(r.metadata).dump(-1, ' ', false, Json::error_handler_t::replace))}
                                .join(QChar(0));
        groups[key].push_back(i);
    }
    for (const auto &[key, group] : groups) {
        const MemoryRecord &first = items[group.front()].record;
        const QString root = rootOf(config, items[group.front()].input);
        std::vector<MemoryRecord> wanted;
        wanted.reserve(group.size());
        for (size_t i : group) {
            const MemoryRecord &r = items[i].record;
            MemoryRecord w; // what the lookup reads
            w.content = r.content;
            w.source = r.source;
            w.isPrivate = r.isPrivate;
            w.metadata = r.metadata;
            wanted.push_back(std::move(w));
        }
        std::vector<size_t> toVote;
        try {
            const std::vector<std::optional<MemoryRecord>> identical = storage->findSameContent(wanted, root);
            for (size_t k = 0; k < group.size(); ++k) {
                Item &it = items[group[k]];
                if (k < identical.size() && identical[k]) {
                    it.existingId = identical[k]->id; // re-remembering a stored fact changes nothing
                    it.record = *identical[k];
                } else {
                    toVote.push_back(group[k]);
                }
            }
            RecordFilter f;
            if (root != QLatin1String("/"))
                f.scopes << root;
            f.metadata = sameIdentity(first.metadata); // another user's, agent's or run's record is not a candidate
            f.onlySource = first.source;
            const Exemplars exemplars = readExemplars(*storage, f, first);
            constexpr std::size_t kBlock = 8; // the items compared with the exemplars at once
            forEachInParallel((toVote.size() + kBlock - 1) / kBlock, [&](size_t b) {
                std::vector<const Embedding *> vectors;
                for (std::size_t k = b * kBlock; k < std::min(toVote.size(), (b + 1) * kBlock); ++k)
                    vectors.push_back(&items[toVote[k]].record.embedding);
                const auto nearest = nearestExemplars(exemplars, vectors, config.consolidationLimit);
                for (std::size_t j = 0; j < nearest.size(); ++j) {
                    Item &it = items[toVote[b * kBlock + j]];
                    for (const auto &[score, at] : nearest[j]) {
                        MemoryRecord vote; // what the vote reads of it
                        vote.id = exemplars.records[at].id;
                        vote.scope = exemplars.records[at].scope;
                        it.similar.push_back(std::move(vote));
                        it.similarity.push_back(score);
                    }
                }
            },
                              64 / kBlock);
        } catch (const std::exception &e) {
            qCWarning(lcMemory).noquote() << "reading the stored records to vote for scopes failed; the memories are saved in their root:"
                                          << e.what();
            for (size_t i : group) {
                items[i].similar.clear();
                items[i].similarity.clear();
            }
        }
    }
}

std::pair<int, int> MemoryPrivate::applyPlans(std::vector<Item> &items, const std::vector<size_t> &active)
{
    // Cross-item dedup: the first update or delete of a record wins; later ones are ignored, and the
    // item whose action was ignored is stored in its own right (its plan relied on that action).
    QSet<QString> claimed;
    QSet<QString> deleted;
    std::vector<MemoryRecord> updates;
    for (size_t i : active) {
        Item &it = items[i];
        if (!it.plan || it.dropped || !it.existingId.isEmpty())
            continue;
        bool skipped = false;
        for (const ConsolidationAction &a : std::as_const(it.plan->actions)) {
            if (a.kind == ConsolidationAction::Kind::Keep)
                continue;
            const auto found = std::find_if(it.similar.begin(), it.similar.end(),
                                            [&](const MemoryRecord &r) { return r.id == a.recordId; });
            if (found == it.similar.end())
                continue;
            if (claimed.contains(a.recordId)) {
                skipped = true;
                continue;
            }
            if (a.kind == ConsolidationAction::Kind::Delete) {
                claimed.insert(a.recordId);
                deleted.insert(a.recordId);
                continue;
            }
            const QString content = a.newContent.trimmed();
            if (content == found->content) { // the record already says it: as good as a keep that covers it
                if (it.mergedInto.isEmpty())
                    it.mergedInto = a.recordId;
                continue;
            }
            if (content.size() > config.maxContentChars) {
                skipped = true;
                continue;
            }
            claimed.insert(a.recordId);
            MemoryRecord r = *found; // same id, scope, source, privacy, created_at (decision 6)
            r.content = content;
            r.embedding.clear();
            updates.push_back(std::move(r));
            if (it.mergedInto.isEmpty())
                it.mergedInto = a.recordId;
        }
        if (skipped)
            it.plan->insertNew = true;
    }
    // Which items need no record of their own: those a surviving record covers, either one their plan
    // updated or one it keeps that is at least consolidation_threshold similar. Otherwise the new fact
    // is stored, whatever the plan says: it is never lost.
    for (size_t i : active) {
        Item &it = items[i];
        if (!it.plan || it.plan->insertNew)
            continue;
        if (deleted.contains(it.mergedInto))
            it.mergedInto.clear();
        for (size_t k = 0; it.mergedInto.isEmpty() && k < it.similar.size(); ++k) {
            if (it.similarity[k] >= config.consolidationThreshold && !deleted.contains(it.similar[k].id))
                it.mergedInto = it.similar[k].id;
        }
        if (it.mergedInto.isEmpty())
            it.plan->insertNew = true;
    }

    if (!updates.empty()) {
        QStringList texts;
        for (const MemoryRecord &r : updates)
            texts << r.content;
        std::vector<Embedding> vectors = embedAll(texts);
        for (size_t k = 0; k < updates.size(); ++k)
            updates[k].embedding = std::move(vectors[k]);
    }
    if (!deleted.isEmpty()) {
        RecordFilter f;
        f.ids = QStringList(deleted.begin(), deleted.end());
        storage->remove(f);
        if (graph)
            graph->remove(f.ids);
    }
    const QDateTime now = nowUtc();
    for (MemoryRecord &r : updates) {
        if (deleted.contains(r.id))
            continue;
        r.updatedAt = now;
        r.lastAccessed = now;
        ensureBound();
        storage->update(r);
    }
    if (graph) {
        std::vector<MemoryRecord> changed;
        for (const MemoryRecord &r : updates)
            if (!deleted.contains(r.id))
                changed.push_back(r);
        graph->replace(changed);
    }
    return {int(updates.size()), int(deleted.size())};
}

} // namespace mneme
