// mneme-bench-gui: how long the GUI thread of a desktop host stalls while Mneme works.
//
// A 1 ms heartbeat timer runs on the main thread (the "GUI thread") and every gap between two beats
// is timed; a stall is a gap's excess over the 1 ms interval. On that thread live a Memory and the
// models a window shows (ScopeTreeModel, RecordListModel), each read as a view paints it (the first 50
// rows' display data at every change). Two phases:
//
//   save_100k    100,000 records submitted with rememberMany in batches of 1,000 from the GUI thread
//                (one batch per turn of the event loop), saved with the builtin embedder, and the
//                models following every write until they show all 100,000.
//   open_1m      a store of 1,000,000 records (built beforehand with the storage class, 32-dimensional
//                vectors) opened on the GUI thread, then the models' first page, count and scope tree.
//
// One JSON line per figure on stdout, a table on stderr. The *_gui_longest_stall_ms figures are the
// goal's (<= 50 ms). save_longest_call_ms is the longest rememberMany() call on the GUI thread (its
// validation of a batch of 1,000): the part of a stall that is Mneme's own work rather than the
// scheduler's (on a busy machine the GUI thread also waits for a core). open_memory_ms is the part of
// open_1m spent in the Memory constructor, which is blocking (an application that cannot afford it
// opens the Memory on a worker thread).
//
//   mneme-bench-gui                       # both phases
//   mneme-bench-gui --saves 20000 --store 200000 --dir /tmp/bench

#include "plugins/storage/sqlite/sqlite_storage.h"
#include <mneme/core/plugin_registry.h>
#include <mneme/memory/memory.h>
#include <mneme/models/record_list_model.h>
#include <mneme/models/scope_tree_model.h>

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTimer>
#include <cstdio>
#include <vector>

using namespace mneme;

namespace {

void report(const char *metric, int records, double value, const char *unit)
{
    std::printf("{\"metric\": \"%s\", \"records\": %d, \"value\": %.4g, \"unit\": \"%s\"}\n", metric, records, value, unit);
    std::fflush(stdout);
    std::fprintf(stderr, "  %-28s %10d records  %12.4g %s\n", metric, records, value, unit);
}

// Text of a few made-up words, different for each i.
QString sentence(QRandomGenerator &rng, int i)
{
    static const char *const syllables[] = {"ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "zi", "po", "da", "fe"};
    QStringList words;
    const int n = 6 + int(rng.bounded(12));
    for (int w = 0; w < n; ++w) {
        QString word;
        for (int s = 0, k = 2 + int(rng.bounded(2)); s < k; ++s)
            word += QLatin1String(syllables[rng.bounded(12)]);
        words << word;
    }
    return words.join(QLatin1Char(' ')) + QStringLiteral(" (%1).").arg(i);
}

// The gaps between beats of a 1 ms timer on this thread while it runs.
class Heartbeat
{
public:
    Heartbeat()
    {
        m_timer.setTimerType(Qt::PreciseTimer);
        m_timer.setInterval(1);
        QObject::connect(&m_timer, &QTimer::timeout, [this] {
            const qint64 now = m_clock.nsecsElapsed();
            m_gaps.push_back(double(now - m_last) / 1e6);
            m_last = now;
        });
    }
    void start()
    {
        m_gaps.clear();
        m_clock.start();
        m_last = 0;
        m_timer.start();
    }
    void stop()
    {
        // The gap in progress counts too (a stall at the very end).
        m_gaps.push_back(double(m_clock.nsecsElapsed() - m_last) / 1e6);
        m_timer.stop();
    }
    double longestStallMs() const
    {
        double worst = 0;
        for (double g : m_gaps)
            worst = std::max(worst, g - 1.0);
        return worst;
    }
    double stallPercentileMs(double p) const
    {
        std::vector<double> v = m_gaps;
        std::sort(v.begin(), v.end());
        return v.empty() ? 0 : std::max(0.0, v[std::min(v.size() - 1, size_t(p * double(v.size() - 1)))] - 1.0);
    }

private:
    QTimer m_timer;
    QElapsedTimer m_clock;
    qint64 m_last = 0;
    std::vector<double> m_gaps;
};

// What a view does on every change of its model: reads the visible rows' display data.
void paintLike(QAbstractItemModel &model)
{
    const auto paint = [&model] {
        const int rows = std::min(model.rowCount(), 50);
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < model.columnCount(); ++c)
                model.data(model.index(r, c));
    };
    QObject::connect(&model, &QAbstractItemModel::rowsInserted, paint);
    QObject::connect(&model, &QAbstractItemModel::dataChanged, paint);
    QObject::connect(&model, &QAbstractItemModel::modelReset, paint);
}

// Runs the event loop until `done` holds (checked every 5 ms) or `timeoutMs` passes.
bool spinUntil(const std::function<bool()> &done, int timeoutMs)
{
    QElapsedTimer t;
    t.start();
    while (!done()) {
        if (t.elapsed() > timeoutMs)
            return false;
        QEventLoop loop;
        QTimer::singleShot(5, &loop, &QEventLoop::quit);
        loop.exec();
    }
    return true;
}

MemoryConfig configFor(const QString &path, int dimension)
{
    MemoryConfig c;
    c.storage = Json{{"provider", "sqlite"}, {"config", {{"path", path.toStdString()}}}};
    c.embedder = Json{{"provider", "builtin"}, {"config", {{"dimension", dimension}}}};
    return c;
}

int topCount(const ScopeTreeModel &tree)
{
    return tree.rowCount() ? tree.index(0, 0).data(ScopeTreeModel::RecordCountRole).toInt() : -1;
}

void saveWhileShown(const QString &dir, int records)
{
    const QString path = QDir(dir).filePath(QStringLiteral("gui-saves.db"));
    Memory memory(configFor(path, 384));
    ScopeTreeModel tree;
    RecordListModel table;
    paintLike(tree);
    paintLike(table);
    tree.setMemory(&memory);
    table.setMemory(&memory);
    // The batches are made before the clock starts: what is timed is Mneme's part, not the text's.
    QRandomGenerator rng(7);
    std::vector<QList<MemoryInput>> batches;
    for (int from = 0; from < records; from += 1000) {
        QList<MemoryInput> batch;
        for (int i = from; i < std::min(records, from + 1000); ++i) {
            MemoryInput in;
            in.content = sentence(rng, i);
            in.options.scope = QStringLiteral("/bench/s%1").arg(i % 50);
            in.options.categories = QStringList{QStringLiteral("bench")};
            in.options.importance = 0.5;
            batch << in;
        }
        batches.push_back(std::move(batch));
    }
    Heartbeat beat;
    QElapsedTimer t;
    t.start();
    beat.start();
    // One batch per turn of the event loop, as a window importing a file would submit them.
    int submitted = 0;
    std::size_t next = 0;
    double longestCallMs = 0; // the longest rememberMany() call: Mneme's own work on the GUI thread
    QTimer feeder;
    QObject::connect(&feeder, &QTimer::timeout, [&] {
        if (next >= batches.size()) {
            feeder.stop();
            return;
        }
        QElapsedTimer call;
        call.start();
        memory.rememberMany(batches[next]);
        longestCallMs = std::max(longestCallMs, double(call.nsecsElapsed()) / 1e6);
        submitted += int(batches[next++].size());
    });
    feeder.start(0);
    const bool shown = spinUntil([&] { return submitted >= records && table.totalCount() == records && topCount(tree) == records; },
                                 30 * 60 * 1000);
    beat.stop();
    if (!shown)
        std::fprintf(stderr, "mneme-bench-gui: the models did not show all %d records in 30 minutes\n", records);
    report("save_gui_longest_stall_ms", records, beat.longestStallMs(), "ms");
    report("save_gui_stall_p99_ms", records, beat.stallPercentileMs(0.99), "ms");
    report("save_longest_call_ms", records, longestCallMs, "ms");
    report("save_until_shown_s", records, double(t.nsecsElapsed()) / 1e9, "s");
    memory.close();
    for (const char *suffix : {"", "-wal", "-shm", ".hnsw"})
        QFile::remove(path + QLatin1String(suffix));
}

// A store of `records` records written with the storage class directly (32-dimensional unit vectors
// bound to the builtin embedder), far faster than embedding them.
void buildStore(const QString &path, int records)
{
    const std::unique_ptr<Embedder> embedder = PluginRegistry::instance().createEmbedder(QStringLiteral("builtin"), Json{{"dimension", 32}});
    SqliteStorage::Options o;
    o.path = path;
    SqliteStorage storage(o);
    storage.bindEmbedder(EmbedderBinding{embedder->id(), 32});
    QRandomGenerator rng(11);
    const QDateTime start = QDateTime::currentDateTimeUtc().addDays(-400);
    for (int from = 0; from < records; from += 10000) {
        std::vector<MemoryRecord> batch;
        for (int i = from; i < std::min(records, from + 10000); ++i) {
            MemoryRecord r = MemoryRecord::create(sentence(rng, i));
            r.scope = QStringLiteral("/bench/s%1/t%2").arg(i % 50).arg(i % 7);
            r.categories = {QStringLiteral("bench")};
            r.importance = 0.5;
            r.createdAt = r.updatedAt = r.lastAccessed = start.addSecs(i);
            r.embedding.resize(32);
            double norm = 0;
            for (float &x : r.embedding) {
                x = float(rng.generateDouble() - 0.5);
                norm += double(x) * x;
            }
            for (float &x : r.embedding)
                x = float(x / std::sqrt(norm));
            batch.push_back(std::move(r));
        }
        storage.save(batch);
    }
    storage.close();
}

void openWhileShown(const QString &dir, int records)
{
    const QString path = QDir(dir).filePath(QStringLiteral("gui-open.db"));
    for (const char *suffix : {"", "-wal", "-shm", ".hnsw"})
        QFile::remove(path + QLatin1String(suffix));
    QElapsedTimer build;
    build.start();
    buildStore(path, records);
    std::fprintf(stderr, "  (store of %d records built in %.1f s)\n", records, double(build.nsecsElapsed()) / 1e9);

    ScopeTreeModel tree;
    RecordListModel table;
    paintLike(tree);
    paintLike(table);
    Heartbeat beat;
    beat.start();
    // Let the heartbeat settle, as in a window already showing.
    spinUntil([] { return false; }, 50);
    QElapsedTimer t;
    t.start();
    auto memory = std::make_unique<Memory>(configFor(path, 32));
    const double openMs = double(t.nsecsElapsed()) / 1e6;
    tree.setMemory(memory.get());
    table.setMemory(memory.get());
    double firstPageMs = -1;
    spinUntil([&] {
        if (firstPageMs < 0 && table.rowCount() > 0)
            firstPageMs = double(t.nsecsElapsed()) / 1e6;
        return table.rowCount() > 0 && table.totalCount() == records && topCount(tree) == records;
    },
              10 * 60 * 1000);
    const double shownMs = double(t.nsecsElapsed()) / 1e6;
    // And a scroll: five more pages fetched as a view would.
    for (int page = 0; page < 5; ++page) {
        const int before = table.rowCount();
        table.fetchMore(QModelIndex());
        spinUntil([&] { return table.rowCount() > before; }, 60 * 1000);
    }
    beat.stop();
    report("open_gui_longest_stall_ms", records, beat.longestStallMs(), "ms");
    report("open_memory_ms", records, openMs, "ms");
    report("open_first_page_ms", records, firstPageMs, "ms");
    report("open_until_counted_ms", records, shownMs, "ms");
    report("open_rows_read_after_scroll", records, table.rowCount(), "rows");
    memory.reset();
    for (const char *suffix : {"", "-wal", "-shm", ".hnsw"})
        QFile::remove(path + QLatin1String(suffix));
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    int saves = 100000;
    int store = 1000000;
    QString dir;
    const QStringList args = app.arguments().mid(1);
    for (qsizetype i = 0; i < args.size(); ++i) {
        const QString a = args[i];
        if (i + 1 >= args.size()) {
            std::fprintf(stderr, "mneme-bench-gui: %s needs a value; options: --saves N --store N --dir PATH\n", qPrintable(a));
            return 2;
        }
        const QString v = args[++i];
        bool ok = true;
        if (a == QLatin1String("--saves"))
            saves = v.toInt(&ok);
        else if (a == QLatin1String("--store"))
            store = v.toInt(&ok);
        else if (a == QLatin1String("--dir"))
            dir = v;
        else {
            std::fprintf(stderr, "mneme-bench-gui: unknown option %s; options: --saves N --store N --dir PATH\n", qPrintable(a));
            return 2;
        }
        if (!ok || saves < 0 || store < 0) {
            std::fprintf(stderr, "mneme-bench-gui: %s needs a whole number of 0 or more\n", qPrintable(a));
            return 2;
        }
    }
    QTemporaryDir tmp;
    if (dir.isEmpty())
        dir = tmp.path();
    std::fprintf(stderr, "mneme-bench-gui: the GUI thread's stalls, SQLite in %s\n", qPrintable(dir));
    try {
        if (saves > 0)
            saveWhileShown(dir, saves);
        if (store > 0)
            openWhileShown(dir, store);
    } catch (const Error &e) {
        std::fprintf(stderr, "mneme-bench-gui: %s\n", e.what());
        return 1;
    }
    return 0;
}
