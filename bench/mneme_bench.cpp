// mneme-bench: throughput and latency of the memory on this machine.
//
// For each scale it builds a fresh store on disk with rememberMany (explicit scope, categories and
// importance, builtin embedder, durable commits), then measures shallow recall latency (query
// embedding included), and the time to open the store again. One JSON line per figure on stdout,
// a table for people on stderr.
//
//   mneme-bench                 # scales 10,000 and 100,000
//   mneme-bench --records 50000 # one scale
//   mneme-bench --queries 500 --dimension 384 --dir /tmp/bench

#include "memory/memory.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <algorithm>
#include <cstdio>
#include <vector>

using namespace mneme;

namespace {

const char *const kWords[] = {
    "database", "migration", "postgres", "latency", "budget", "customer", "invoice", "deploy", "staging",
    "server", "meeting", "sarah", "john", "alpha", "beta", "release", "feature", "flag", "api", "limit",
    "request", "minute", "quarter", "team", "decision", "architecture", "cache", "redis", "kafka", "queue",
    "python", "rust", "compiler", "benchmark", "memory", "agent", "research", "paper", "report", "email",
    "holiday", "paris", "tokyo", "birthday", "dog", "guitar", "painting", "marathon", "coffee", "garden",
    "contract", "renewal", "pricing", "enterprise", "seats", "support", "ticket", "bug", "crash", "fix",
    "security", "policy", "password", "rotation", "backup", "restore", "disk", "network", "proxy", "vpn"};
constexpr int kWordCount = int(sizeof(kWords) / sizeof(kWords[0]));

QString sentence(QRandomGenerator &rng, int index)
{
    const int n = 8 + int(rng.bounded(10));
    QStringList w;
    for (int i = 0; i < n; ++i)
        w << QLatin1String(kWords[rng.bounded(kWordCount)]);
    w << QString::number(index);
    return w.join(QLatin1Char(' ')) + QLatin1Char('.');
}

long rssBytes()
{
    QFile f(QStringLiteral("/proc/self/statm"));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    const QList<QByteArray> parts = f.readAll().split(' ');
    return parts.size() > 1 ? parts[1].toLong() * 4096 : 0;
}

void report(const char *metric, int records, double value, const char *unit)
{
    std::printf("{\"metric\": \"%s\", \"records\": %d, \"value\": %.4g, \"unit\": \"%s\"}\n", metric, records, value, unit);
    std::fflush(stdout);
    std::fprintf(stderr, "  %-24s %10d records  %12.4g %s\n", metric, records, value, unit);
}

double percentile(std::vector<double> v, double p)
{
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}

MemoryConfig configFor(const QString &path, int dimension)
{
    MemoryConfig c;
    c.storage = Json{{"provider", "sqlite"}, {"config", {{"path", path.toStdString()}}}};
    c.embedder = Json{{"provider", "builtin"}, {"config", {{"dimension", dimension}}}};
    return c;
}

void runScale(const QString &dir, int records, int queries, int dimension)
{
    const QString path = QDir(dir).filePath(QStringLiteral("bench-%1.db").arg(records));
    QFile::remove(path);
    QRandomGenerator rng(42);
    const long rssBefore = rssBytes();
    {
        Memory memory(configFor(path, dimension));
        const int batch = 500;
        QElapsedTimer t;
        t.start();
        for (int start = 0; start < records; start += batch) {
            QList<MemoryInput> items;
            for (int i = start; i < std::min(records, start + batch); ++i) {
                MemoryInput in;
                in.content = sentence(rng, i);
                in.options.scope = QStringLiteral("/bench/s%1").arg(i % 16);
                in.options.categories = QStringList{QStringLiteral("c%1").arg(i % 8)};
                in.options.importance = 0.5;
                items << in;
            }
            memory.rememberMany(items); // the writer queues batches; drainWrites() below waits for all
        }
        memory.drainWrites();
        report("remember_many_per_s", records, records / (t.nsecsElapsed() / 1e9), "records/s");
    }

    QElapsedTimer open;
    open.start();
    Memory memory(configFor(path, dimension));
    RecallOptions o;
    o.depth = RecallDepth::Shallow;
    o.limit = 10;
    memory.recall(QStringLiteral("warm up the vector cache"), o);
    report("open_ms", records, open.nsecsElapsed() / 1e6, "ms");

    std::vector<double> ms;
    QRandomGenerator qrng(7);
    for (int i = 0; i < queries; ++i) {
        const QString q = QStringLiteral("%1 %2 %3")
                              .arg(QLatin1String(kWords[qrng.bounded(kWordCount)]), QLatin1String(kWords[qrng.bounded(kWordCount)]),
                                   QLatin1String(kWords[qrng.bounded(kWordCount)]));
        QElapsedTimer t;
        t.start();
        memory.recall(q, o);
        ms.push_back(t.nsecsElapsed() / 1e6);
    }
    report("recall_p50_ms", records, percentile(ms, 0.5), "ms");
    report("recall_p95_ms", records, percentile(ms, 0.95), "ms");
    const double raw = double(records) * dimension * sizeof(float);
    report("rss_bytes_per_record", records, std::max(0.0, (rssBytes() - rssBefore - raw) / records), "bytes");
    memory.close();
    QFile::remove(path);
    QFile::remove(path + QStringLiteral("-wal"));
    QFile::remove(path + QStringLiteral("-shm"));
}

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
        else {
            std::fprintf(stderr, "mneme-bench: unknown option %s; options: --records N --queries N --dimension N --dir PATH\n",
                         qPrintable(a));
            return 2;
        }
        if (!ok || scales.first() < 1 || queries < 1 || dimension < 1) {
            std::fprintf(stderr, "mneme-bench: %s needs a positive whole number\n", qPrintable(a));
            return 2;
        }
    }
    QTemporaryDir tmp;
    if (dir.isEmpty())
        dir = tmp.path();
    std::fprintf(stderr, "mneme-bench: %d-dimensional builtin embedder, SQLite in %s\n", dimension, qPrintable(dir));
    try {
        for (int records : scales)
            runScale(dir, records, queries, dimension);
    } catch (const Error &e) {
        std::fprintf(stderr, "mneme-bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
