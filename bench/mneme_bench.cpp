// mneme-bench: throughput and latency of the memory on this machine.
//
// For each scale it builds a fresh store on disk with rememberMany (realistic text, Corpus below; 50
// scopes of 2 % each; explicit scope, categories and importance; builtin embedder; durable commits),
// measures the first recall after the load, by a new connection, and the time from the start of the
// load until it is answered (time_to_queryable_ms; the load builds the HNSW graph as it writes and
// writes it beside the store when it ends, so the first recall reads the graph; how it was answered is
// printed), makes sure the index is built (index_build_ms: reading its file), then measures the time to open
// it again (index read from its file; with PostgreSQL, the first keyword search of a process just
// opened too, first_keyword_search_ms, and the time until its keyword index is loaded and answers,
// keyword_index_ready_ms), shallow recall latency on questions about stored sentences
// (query embedding included; with PostgreSQL, once the keyword index is loaded), over the whole store and within the asked sentence's scope, how often
// the asked sentence is in the top 10, resident memory and disk per record, and the bare index search on the same query vectors: approximate top-10 against the exact
// top-10 (ann_recall_at_10) and median recall time over median index time (recall_to_index_ratio; and
// recall_to_index_ratio_paired, the two timed alternately query by query), and last the saves whose
// fields the offline analyzer infers (remember_many_inferred_per_s, remember_many_plain_per_s; and per
// second of the process's CPU time, remember_many_inferred_per_cpu_s, remember_many_plain_per_cpu_s).
// One JSON line per figure on stdout, a table for people on stderr.
//
//   mneme-bench                 # scales 10,000 and 100,000
//   mneme-bench --records 50000 # one scale
//   mneme-bench --queries 500 --dimension 384 --dir /tmp/bench
//   mneme-bench --keyword-weight 0   # recall without the keyword (FTS5) search: vectors only
//   mneme-bench --keyword-row-budget 0   # the keyword search unbounded (the storage's keyword_row_budget)
//   mneme-bench --graph          # graph_memory on (offline extractor): the cost of graph memory
//   mneme-bench --storage-option ann_ef_construction=64   # a key of the SQLite storage's config
//   mneme-bench --records 100000 --dir /tmp/bench --keep   # keeps the store; a later run with the same
//                               # options measures its recalls again without loading it (no save figures)
//   mneme-bench --records 100000 --dir /tmp/bench --keep --recall-only   # the recall figures alone

#include "plugins/storage/sqlite/sqlite_storage.h"
#ifdef MNEME_BENCH_POSTGRES
#include "plugins/storage/postgres/postgres_storage.h"
#endif
#include <mneme/core/plugin_registry.h>
#include <mneme/memory/memory.h>

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRandomGenerator>
#include <QSet>
#include <QTemporaryDir>
#include <QThread>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sys/resource.h>
#include <vector>

using namespace mneme;

namespace {

// Realistic text. A vocabulary of 5,000 words whose frequencies follow Zipf's law (the word of rank r
// is drawn in proportion to 1 / r^1.07, about as in English), the 40 most frequent of them English
// function words and the rest made of syllables; sentences of 5 to 24 words. A query is a question
// about a stored sentence: a question word and 2 to 4 of the sentence's other words.
class Corpus
{
public:
    explicit Corpus(quint32 seed)
    {
        static const char *const function[] = {"the", "i", "to", "and", "a", "you", "it", "of", "that", "in",
                                               "is", "my", "was", "for", "me", "so", "on", "we", "have", "with",
                                               "but", "this", "be", "just", "at", "are", "what", "do", "your", "not",
                                               "all", "they", "he", "she", "about", "like", "get", "really", "one", "can"};
        static const char consonants[] = "bcdfghklmnprstvwz";
        static const char vowels[] = "aeiou";
        for (const char *w : function)
            m_words << QString::fromLatin1(w);
        m_firstContent = m_words.size();
        QRandomGenerator rng(seed);
        QSet<QString> seen(m_words.begin(), m_words.end());
        while (m_words.size() < kVocabulary) {
            QString w;
            const int syllables = 2 + int(rng.bounded(2));
            for (int k = 0; k < syllables; ++k)
                w += QLatin1Char(consonants[rng.bounded(17)]) + QString(QLatin1Char(vowels[rng.bounded(5)]));
            if (!seen.contains(w)) {
                seen.insert(w);
                m_words << w;
            }
        }
        double total = 0;
        for (int r = 1; r <= kVocabulary; ++r) {
            total += 1.0 / std::pow(double(r), 1.07);
            m_cumulative.push_back(total);
        }
    }
    QString sentence(QRandomGenerator &rng) const
    {
        const int n = 5 + int(rng.bounded(20));
        QStringList w;
        for (int i = 0; i < n; ++i)
            w << word(rng);
        return w.join(QLatin1Char(' ')) + QLatin1Char('.');
    }
    QString question(QRandomGenerator &rng, const QString &sentence) const
    {
        static const char *const asks[] = {"what", "when", "who", "where", "why", "how", "did", "which"};
        QStringList content;
        for (const QString &w : QString(sentence).remove(QLatin1Char('.')).split(QLatin1Char(' ')))
            if (m_words.indexOf(w) >= m_firstContent && !content.contains(w))
                content << w;
        QStringList q{QString::fromLatin1(asks[rng.bounded(8)])};
        const int n = std::min(int(content.size()), 2 + int(rng.bounded(3)));
        for (int i = 0; i < n; ++i)
            q << content.takeAt(rng.bounded(int(content.size())));
        return q.join(QLatin1Char(' ')) + QLatin1Char('?');
    }

private:
    static constexpr int kVocabulary = 5000;
    QString word(QRandomGenerator &rng) const
    {
        const double x = rng.generateDouble() * m_cumulative.back();
        const auto at = std::lower_bound(m_cumulative.begin(), m_cumulative.end(), x);
        return m_words.at(std::min<qsizetype>(at - m_cumulative.begin(), m_words.size() - 1));
    }
    QStringList m_words;
    qsizetype m_firstContent = 0;
    std::vector<double> m_cumulative;
};

const Corpus &corpus()
{
    static const Corpus c(1234);
    return c;
}

// The stored records: scope "/bench/s<i % kScopes>", so that each scope holds 2 % of the store.
constexpr int kScopes = 50;

QString scopeOf(int i)
{
    return QStringLiteral("/bench/s%1").arg(i % kScopes);
}

long rssBytes()
{
    QFile f(QStringLiteral("/proc/self/statm"));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    const QList<QByteArray> parts = f.readAll().split(' ');
    return parts.size() > 1 ? parts[1].toLong() * 4096 : 0;
}

// The CPU time of the whole process (every thread), user and system, in seconds.
double processCpuSeconds()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    const auto seconds = [](const timeval &t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
    return seconds(u.ru_utime) + seconds(u.ru_stime);
}

// The processor time of the calling thread, in milliseconds: what a recall costs on a shared machine,
// where the wall time also counts the waits for a core.
double threadCpuMs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

void report(const char *metric, int records, double value, const char *unit)
{
    std::printf("{\"metric\": \"%s\", \"records\": %d, \"value\": %.4g, \"unit\": \"%s\"}\n", metric, records, value, unit);
    std::fflush(stdout);
    std::fprintf(stderr, "  %-33s %10d records  %12.4g %s\n", metric, records, value, unit);
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double percentile(std::vector<double> v, double p)
{
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}

double gKeywordWeight = -1;            // < 0: the configuration's default
int gKeywordRowBudget = -1;            // < 0: the storage's default
Json gStorageOptions = Json::object(); // --storage-option key=value: more keys of the SQLite storage's config

// The SQLite storage's config of the bench's store: its path and the options given.
Json sqliteConfig(const QString &path)
{
    Json storage = gStorageOptions;
    storage["path"] = path.toStdString();
    if (gKeywordRowBudget >= 0)
        storage["keyword_row_budget"] = gKeywordRowBudget;
    return storage;
}
bool gGraph = false;      // --graph: graph_memory on (the offline extractor): saves extract and recalls use the graph
bool gKeep = false;       // --keep: the store stays in --dir, and one found there is measured again
bool gRecallOnly = false; // --recall-only: the recall figures alone (no bare index, ANN or inferred-save figures)
bool gPostgres = false;   // --storage postgres: the records on a PostgreSQL server (gDsn)
QString gDsn;             // --dsn, or the throwaway cluster's (scripts/pg-cluster.sh) with a schema per scale
QString gVectorSearch;    // --vector-search auto|pgvector|local: the postgres store's "vector_search" (empty: its default)

MemoryConfig configFor(const QString &path, int dimension)
{
    MemoryConfig c;
    if (gKeywordWeight >= 0)
        c.keywordWeight = gKeywordWeight;
    c.graphMemory = gGraph;
    if (gPostgres) {
        // The vector index file beside where the SQLite store would be.
        Json config{{"dsn", gDsn.toStdString()}, {"index_dir", QFileInfo(path).absolutePath().toStdString()}};
        if (!gVectorSearch.isEmpty())
            config["vector_search"] = gVectorSearch.toStdString();
        c.storage = Json{{"provider", "postgres"}, {"config", config}};
    } else {
        c.storage = Json{{"provider", "sqlite"}, {"config", sqliteConfig(path)}};
    }
    c.embedder = Json{{"provider", "builtin"}, {"config", {{"dimension", dimension}}}};
    return c;
}

// Saves whose fields the offline analyzer infers, into the loaded store (after the other figures,
// which they would change): items with a scope but no categories or importance
// (remember_many_inferred_per_s), then plain text with no field at all, whose scope is voted among the
// store's scopes by the most similar records (remember_many_plain_per_s). 10,000 items each (fewer
// for a small store), in batches of 1,000 as mneme remember-many sends them.
void measureInferredSaves(const QString &path, int records, int dimension, QRandomGenerator &rng)
{
    const int count = std::min(records, 10000);
    // Opened afresh, as by `mneme remember-many`: the vector index is not loaded (it catches up on the
    // next recall), as during the bulk load remember_many_per_s measures.
    Memory memory(configFor(path, dimension));
    for (const bool plain : {false, true}) {
        QElapsedTimer t;
        t.start();
        const double cpuBefore = processCpuSeconds();
        for (int start = 0; start < count; start += 1000) {
            QList<MemoryInput> items;
            for (int i = start; i < std::min(count, start + 1000); ++i) {
                MemoryInput in;
                in.content = corpus().sentence(rng);
                if (!plain)
                    in.options.scope = scopeOf(i);
                items << in;
            }
            memory.rememberMany(items);
        }
        memory.drainWrites();
        report(plain ? "remember_many_plain_per_s" : "remember_many_inferred_per_s", records,
               count / (t.nsecsElapsed() / 1e9), "records/s");
        // Per second of the process's CPU time (all its threads): what a machine shared with other
        // work shows better than the wall time.
        report(plain ? "remember_many_plain_per_cpu_s" : "remember_many_inferred_per_cpu_s", records,
               count / std::max(1e-9, processCpuSeconds() - cpuBefore), "records/cpu-s");
    }
}

void runScale(const QString &dir, int records, int queries, int dimension)
{
    const QString path = QDir(dir).filePath(QStringLiteral("bench-%1.db").arg(records));
    // A kept store of an earlier run is the same records (the same seeds): only its reads are measured.
    const bool reuse = !gPostgres && gKeep && QFile::exists(path) && QFile::exists(path + QLatin1String(".hnsw"));
    if (!reuse)
        QFile::remove(path);
    QRandomGenerator rng(42);
    const long rssBefore = rssBytes();
    // Every (records / queries)-th sentence is asked about, in its own scope too.
    const int every = std::max(1, records / queries);
    QList<QPair<QString, int>> asked; // the sentence and its index
    QElapsedTimer sinceLoad;          // from the start of the bulk load
    sinceLoad.start();
    const double cpuBefore = processCpuSeconds();
    if (reuse) {
        for (int i = 0; i < records; ++i) {
            const QString sentence = corpus().sentence(rng);
            if (i % every == 0 && asked.size() < queries)
                asked << qMakePair(sentence, i);
        }
    } else {
        Memory memory(configFor(path, dimension));
        const int batch = 500;
        QElapsedTimer t;
        t.start();
        for (int start = 0; start < records; start += batch) {
            QList<MemoryInput> items;
            for (int i = start; i < std::min(records, start + batch); ++i) {
                MemoryInput in;
                in.content = corpus().sentence(rng);
                if (i % every == 0 && asked.size() < queries)
                    asked << qMakePair(in.content, i);
                in.options.scope = scopeOf(i);
                in.options.categories = QStringList{QStringLiteral("c%1").arg(i % 8)};
                in.options.importance = 0.5;
                items << in;
            }
            memory.rememberMany(items); // the writer queues batches; drainWrites() below waits for all
        }
        memory.drainWrites();
        memory.close(); // writes the graph the load built
        report("remember_many_per_s", records, records / (t.nsecsElapsed() / 1e9), "records/s");
        report("remember_many_cpu_s", records, processCpuSeconds() - cpuBefore, "s");
    }

    RecallOptions o;
    o.depth = RecallDepth::Shallow;
    o.limit = 10;
    if (!reuse) {
        // The first recall after the bulk load, by a new connection: it reads the graph the load wrote
        // (with the PostgreSQL backend, which does not build during a load: every vector, then an
        // exact scan while the graph is built in the background, which closing the memory stops).
        const bool graphFile = QFile::exists(path + QLatin1String(".hnsw"));
        QElapsedTimer first;
        first.start();
        Memory memory(configFor(path, dimension));
        memory.recall(QStringLiteral("the first question after the load"), o);
        report("first_recall_ms", records, first.nsecsElapsed() / 1e6, "ms");
        report("time_to_queryable_ms", records, sinceLoad.nsecsElapsed() / 1e6, "ms");
        report("time_to_queryable_cpu_s", records, processCpuSeconds() - cpuBefore, "s");
        std::fprintf(stderr, "  (the first recall %s)\n",
                     graphFile ? "read the graph the load wrote" : "found no graph file: it read every vector");
        memory.close();
    }
#ifdef MNEME_BENCH_POSTGRES
    if (gPostgres && gVectorSearch != QLatin1String("pgvector")) { // (pgvector's graph grows with the saves)
        // Every vector read from the server, the graph built and written to the index folder; later
        // opens read that file and catch up from the change log.
        QElapsedTimer build;
        build.start();
        PostgresStorage::Options po;
        po.dsn = gDsn;
        po.indexDir = QFileInfo(path).absolutePath();
        po.vectorSearch = gVectorSearch == QLatin1String("local") ? PostgresStorage::Options::VectorSearch::Local
                                                                  : PostgresStorage::Options::VectorSearch::Auto;
        PostgresStorage storage(po);
        storage.syncIndex();
        storage.waitForIndex();
        storage.close();
        report("index_build_ms", records, build.nsecsElapsed() / 1e6, "ms");
    }
    if (gPostgres && !asked.isEmpty()) {
        // The first keyword search of a process just opened: its keyword index is not loaded yet.
        PostgresStorage::Options po;
        po.dsn = gDsn;
        po.indexDir = QFileInfo(path).absolutePath();
        PostgresStorage storage(po);
        QElapsedTimer first;
        first.start();
        static_cast<StorageBackend &>(storage).keywordSearch(asked.front().first, RecordFilter(), 30, 0.3);
        report("first_keyword_search_ms", records, first.nsecsElapsed() / 1e6, "ms");
    }
#endif
    if (!reuse && !gPostgres) {
        // The graph, built by a connection of its own from the table and written beside the store;
        // later opens read that file.
        QElapsedTimer build;
        build.start();
        SqliteStorage storage(SqliteStorage::Options::fromJson(sqliteConfig(path)));
        auto embedder = PluginRegistry::instance().createEmbedder(QStringLiteral("builtin"), Json{{"dimension", dimension}});
        RecordFilter everything;
        storage.nearest(embedder->embed({QStringLiteral("build the vector index")}).front(), everything, 10);
        storage.waitForIndex();
        storage.close();
        report("index_build_ms", records, build.nsecsElapsed() / 1e6, "ms");
    }

    QElapsedTimer open;
    open.start();
    Memory memory(configFor(path, dimension));
    memory.recall(QStringLiteral("warm up the vector cache"), o);
    report("open_ms", records, open.nsecsElapsed() / 1e6, "ms");
    if (gPostgres) {
        // The recalls timed below are those of a process whose keyword index is loaded: until then the
        // server answers the keyword searches (first_keyword_search_ms times one of those).
        RecallStats stats;
        RecallOptions probe = o;
        probe.stats = &stats;
        const auto local = [&] {
            memory.recall(QStringLiteral("warm up the keyword index"), probe);
            return std::any_of(stats.answers.cbegin(), stats.answers.cend(),
                               [](const QString &a) { return a.startsWith(QLatin1String("keyword index of")); });
        };
        while (!local() && open.elapsed() < 120000)
            QThread::msleep(20);
        report("keyword_index_ready_ms", records, open.nsecsElapsed() / 1e6, "ms");
    }

    QStringList texts;
    QRandomGenerator qrng(7);
    for (const auto &[sentence, index] : std::as_const(asked))
        texts << corpus().question(qrng, sentence);
    std::vector<double> ms, scopedMs, cpuMs, scopedCpuMs;
    double found = 0;
    for (qsizetype i = 0; i < texts.size(); ++i) {
        QElapsedTimer t;
        t.start();
        const double cpu = threadCpuMs();
        const QList<MemoryMatch> matches = memory.recall(texts[i], o);
        cpuMs.push_back(threadCpuMs() - cpu);
        ms.push_back(t.nsecsElapsed() / 1e6);
        for (const MemoryMatch &m : matches)
            if (m.record.content == asked[i].first) {
                ++found;
                break;
            }
    }
    RecallOptions scoped = o;
    for (qsizetype i = 0; i < texts.size(); ++i) {
        scoped.scopes = QStringList{scopeOf(asked[i].second)};
        QElapsedTimer t;
        t.start();
        const double cpu = threadCpuMs();
        memory.recall(texts[i], scoped);
        scopedCpuMs.push_back(threadCpuMs() - cpu);
        scopedMs.push_back(t.nsecsElapsed() / 1e6);
    }
    report("recall_p50_ms", records, percentile(ms, 0.5), "ms");
    report("recall_p95_ms", records, percentile(ms, 0.95), "ms");
    report("recall_cpu_p50_ms", records, percentile(cpuMs, 0.5), "ms");
    report("recall_scoped_p50_ms", records, percentile(scopedMs, 0.5), "ms");
    report("recall_scoped_p95_ms", records, percentile(scopedMs, 0.95), "ms");
    report("recall_scoped_cpu_p50_ms", records, percentile(scopedCpuMs, 0.5), "ms");
    report("question_found_at_10", records, texts.isEmpty() ? 0.0 : found / double(texts.size()), "ratio");
    // The slowest twentieth of the questions asked again at once: a question slow again is slow in
    // itself, one fast now was slowed by the machine (another process on the core, a page fault).
    std::vector<qsizetype> order(std::size_t(texts.size()));
    for (qsizetype i = 0; i < texts.size(); ++i)
        order[std::size_t(i)] = i;
    std::sort(order.begin(), order.end(), [&](qsizetype a, qsizetype b) { return ms[std::size_t(a)] > ms[std::size_t(b)]; });
    std::vector<double> slowFirst, slowAgain;
    for (std::size_t k = 0; k < std::max<std::size_t>(1, order.size() / 20) && k < order.size(); ++k) {
        QElapsedTimer t;
        t.start();
        memory.recall(texts[order[k]], o);
        slowAgain.push_back(t.nsecsElapsed() / 1e6);
        slowFirst.push_back(ms[std::size_t(order[k])]);
    }
    if (!slowAgain.empty()) {
        report("recall_slowest_p50_ms", records, median(slowFirst), "ms");
        report("recall_slowest_again_p50_ms", records, median(slowAgain), "ms");
    }
    const double raw = double(records) * dimension * sizeof(float);
    if (!reuse) // the growth since the load began: a reused store was not loaded by this process
        report("rss_bytes_per_record", records, std::max(0.0, (rssBytes() - rssBefore - raw) / records), "bytes");
    if (gRecallOnly)
        return;
    if (gPostgres) { // the SQLite store's bare index figures have no counterpart here
        memory.close();
        measureInferredSaves(path, records, dimension, rng);
        return;
    }
    qint64 disk = 0;
    for (const char *suffix : {"", "-wal", ".hnsw"})
        disk += QFileInfo(path + QLatin1String(suffix)).size();
    report("disk_bytes_per_record", records, double(disk) / records, "bytes");

    // The bare index on the same query vectors, through the storage class itself (a second connection
    // to the same file), timed two ways: alternately with recall, query by query (a change in the
    // machine's speed weighs on both sides alike, and each search finds the processor's caches as a
    // recall leaves them), and back to back once the memory is closed (the index's best case, which
    // recall_to_index_ratio divides by).
    auto embedder = PluginRegistry::instance().createEmbedder(QStringLiteral("builtin"), Json{{"dimension", dimension}});
    const std::vector<Embedding> vectors = embedder->embed(texts);
    SqliteStorage storage(SqliteStorage::Options::fromJson(sqliteConfig(path)));
    RecordFilter filter; // what a shallow recall asks for: every scope, privacy applied
    filter.applyPrivacy = true;
    const int candidates = std::max(o.limit * 3, 30);
    storage.nearest(vectors.front(), filter, candidates); // loads the index
    std::vector<double> pairedRecallMs, pairedIndexMs;
    for (qsizetype i = 0; i < texts.size(); ++i) {
        QElapsedTimer t;
        t.start();
        memory.recall(texts[i], o);
        pairedRecallMs.push_back(t.nsecsElapsed() / 1e6);
        t.start();
        storage.nearest(vectors[size_t(i)], filter, candidates);
        pairedIndexMs.push_back(t.nsecsElapsed() / 1e6);
    }
    memory.close();
    std::vector<double> indexMs;
    for (const Embedding &v : vectors) {
        QElapsedTimer t;
        t.start();
        storage.nearest(v, filter, candidates);
        indexMs.push_back(t.nsecsElapsed() / 1e6);
    }
    double annFound = 0, wanted = 0;
    for (const Embedding &v : vectors) {
        const auto approx = storage.nearest(v, filter, 10, VectorIndex::Mode::Auto);
        const auto exact = storage.nearest(v, filter, 10, VectorIndex::Mode::Exact);
        if (exact.empty())
            continue;
        // Ties at the tenth score count as found: any of them is a correct tenth neighbour.
        const double tenth = exact.back().score;
        double hits = 0;
        for (const auto &h : approx)
            if (h.score >= tenth - 1e-6)
                ++hits;
        annFound += std::min(hits, double(exact.size()));
        wanted += double(exact.size());
    }
    report("ann_recall_at_10", records, wanted > 0 ? annFound / wanted : 1.0, "ratio");
    report("index_search_p50_ms", records, median(indexMs), "ms");
    report("recall_to_index_ratio", records, median(ms) / median(indexMs), "ratio");
    report("recall_to_index_ratio_paired", records, median(pairedRecallMs) / median(pairedIndexMs), "ratio");
    const auto stats = storage.indexStats();
    std::fprintf(stderr, "  (index: %s, %zu vectors, read from file: %s, %lld builds)\n",
                 stats.approximate ? "HNSW graph" : "exact scan", stats.vectors, stats.fromFile ? "yes" : "no",
                 static_cast<long long>(stats.builds));
    storage.close();
    if (gKeep)
        return;
    measureInferredSaves(path, records, dimension, rng);
    for (const char *suffix : {"", "-wal", "-shm", ".hnsw"})
        QFile::remove(path + QLatin1String(suffix));
}

// A throwaway PostgreSQL cluster (scripts/pg-cluster.sh, beside this source) for --storage postgres
// without --dsn: started in `dir`, a fresh schema per scale, stopped and removed at the end.
class ThrowawayCluster
{
public:
    explicit ThrowawayCluster(const QString &dir) : m_dir(dir) {}
    ~ThrowawayCluster()
    {
        if (m_started)
            QProcess::execute(QStringLiteral("bash"), {script(), QStringLiteral("stop"), m_dir});
    }
    // With pgvector: the server of the private installation scripts/pgvector.sh builds beside the
    // bench's binary folder (build/pgvector, as the tests' fixture "pgvector").
    bool start(bool pgvector)
    {
        QStringList args{script(), QStringLiteral("start"), m_dir};
        if (pgvector)
            args << QStringLiteral("--with-pgvector") << QCoreApplication::applicationDirPath() + QStringLiteral("/../pgvector");
        if (QProcess::execute(QStringLiteral("bash"), args) != 0) {
            std::fprintf(stderr, "mneme-bench: could not start a PostgreSQL cluster with %s; pass --dsn\n", qPrintable(script()));
            return false;
        }
        m_started = true;
        QFile f(m_dir + QStringLiteral("/env"));
        if (!f.open(QIODevice::ReadOnly))
            return false;
        for (const QByteArray &line : f.readAll().split('\n')) {
            const qsizetype eq = line.indexOf('=');
            if (eq > 0 && line.startsWith("PG"))
                qputenv(line.left(eq).constData(), line.mid(eq + 1));
        }
        return true;
    }
    // A dsn whose search_path is a new, empty schema.
    QString freshDsn()
    {
        const QString schema = QStringLiteral("bench_%1").arg(++m_schemas);
        QProcess::execute(QStringLiteral("psql"), {QStringLiteral("-qc"), QStringLiteral("CREATE SCHEMA %1").arg(schema)});
        return QStringLiteral("host=%1 port=%2 dbname=%3 user=%4 options='-c search_path=%5'")
            .arg(qEnvironmentVariable("PGHOST"), qEnvironmentVariable("PGPORT"), qEnvironmentVariable("PGDATABASE"),
                 qEnvironmentVariable("PGUSER"), schema);
    }

private:
    static QString script() { return QStringLiteral(MNEME_SOURCE_DIR "/scripts/pg-cluster.sh"); }
    QString m_dir;
    bool m_started = false;
    int m_schemas = 0;
};

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QList<int> scales{10000, 100000};
    int queries = 300;
    int dimension = 384;
    QString dir;
    const QStringList args = app.arguments().mid(1);
    for (qsizetype i = 0; i < args.size(); ++i) {
        const QString a = args[i];
        auto value = [&]() -> QString {
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "mneme-bench: %s needs a value\n", qPrintable(a));
                std::exit(2);
            }
            return args[++i];
        };
        bool ok = true;
        if (a == QLatin1String("--records"))
            scales = {value().toInt(&ok)};
        else if (a == QLatin1String("--queries"))
            queries = value().toInt(&ok);
        else if (a == QLatin1String("--dimension"))
            dimension = value().toInt(&ok);
        else if (a == QLatin1String("--dir"))
            dir = value();
        else if (a == QLatin1String("--keyword-weight"))
            gKeywordWeight = value().toDouble(&ok);
        else if (a == QLatin1String("--keyword-row-budget"))
            gKeywordRowBudget = value().toInt(&ok);
        else if (a == QLatin1String("--keep"))
            gKeep = true;
        else if (a == QLatin1String("--recall-only"))
            gRecallOnly = true;
        else if (a == QLatin1String("--graph"))
            gGraph = true;
        else if (a == QLatin1String("--storage-option")) {
            // key=value, the value a number when it reads as one (ann_ef_construction=64)
            const QString option = value();
            const qsizetype eq = option.indexOf(QLatin1Char('='));
            if (eq <= 0) {
                std::fprintf(stderr, "mneme-bench: --storage-option is key=value, e.g. ann_ef_search=128\n");
                return 2;
            }
            const QString text = option.mid(eq + 1);
            bool number = false;
            const double n = text.toDouble(&number);
            const std::string key = option.left(eq).toStdString();
            if (number && n == std::floor(n))
                gStorageOptions[key] = qint64(n);
            else if (number)
                gStorageOptions[key] = n;
            else
                gStorageOptions[key] = text.toStdString();
        } else if (a == QLatin1String("--storage")) {
            const QString storage = value();
            if (storage != QLatin1String("sqlite") && storage != QLatin1String("postgres")) {
                std::fprintf(stderr, "mneme-bench: --storage is sqlite or postgres\n");
                return 2;
            }
            gPostgres = storage == QLatin1String("postgres");
        } else if (a == QLatin1String("--dsn"))
            gDsn = value();
        else if (a == QLatin1String("--vector-search")) {
            gVectorSearch = value();
            if (gVectorSearch != QLatin1String("auto") && gVectorSearch != QLatin1String("pgvector") && gVectorSearch != QLatin1String("local")) {
                std::fprintf(stderr, "mneme-bench: --vector-search is auto, pgvector or local\n");
                return 2;
            }
        } else {
            std::fprintf(stderr, "mneme-bench: unknown option %s; options: --records N --queries N --dimension N --dir PATH --keyword-weight W --keyword-row-budget N --keep --recall-only --graph --storage-option KEY=VALUE --storage sqlite|postgres --dsn DSN --vector-search auto|pgvector|local\n",
                         qPrintable(a));
            return 2;
        }
        if (!ok || scales.first() < 1 || queries < 1 || dimension < 1 || (a == QLatin1String("--keyword-weight") && gKeywordWeight < 0)
            || (a == QLatin1String("--keyword-row-budget") && gKeywordRowBudget < 0)) {
            std::fprintf(stderr, "mneme-bench: %s needs a positive whole number\n", qPrintable(a));
            return 2;
        }
    }
    QTemporaryDir tmp;
    if (dir.isEmpty())
        dir = tmp.path();
#ifndef MNEME_BENCH_POSTGRES
    if (gPostgres) {
        std::fprintf(stderr, "mneme-bench: built without the postgres storage (libpq was not found)\n");
        return 2;
    }
#endif
    std::unique_ptr<ThrowawayCluster> cluster;
    if (gPostgres && gDsn.isEmpty()) {
        cluster = std::make_unique<ThrowawayCluster>(QDir(dir).filePath(QStringLiteral("pg-cluster")));
        if (!cluster->start(!gVectorSearch.isEmpty()))
            return 1;
    }
    std::fprintf(stderr, "mneme-bench: %d-dimensional builtin embedder, %s in %s\n", dimension,
                 !gPostgres                                   ? "SQLite"
                 : gVectorSearch == QLatin1String("pgvector") ? "PostgreSQL (pgvector)"
                                                              : "PostgreSQL (index files)",
                 qPrintable(dir));
    try {
        for (int records : scales) {
            if (cluster)
                gDsn = cluster->freshDsn();
            runScale(dir, records, queries, dimension);
        }
    } catch (const Error &e) {
        std::fprintf(stderr, "mneme-bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
