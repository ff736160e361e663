// Test helper: pg_writer <dsn> <tag> <count> <shared>
// Saves, through the postgres storage plugin, `count` records of its own ("writer <tag> record <i>")
// and `shared` records whose contents every writer saves too ("shared record <i>"), in batches of 10
// with saveUnlessIdentical, interleaved; prints "done" at the end, or the error and exits 1.

#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>

#include <QCoreApplication>
#include <cstdio>

using namespace mneme;

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    if (argc != 5) {
        std::fprintf(stderr, "usage: pg_writer <dsn> <tag> <count> <shared>\n");
        return 2;
    }
    const QString tag = QString::fromUtf8(argv[2]);
    const int count = QByteArray(argv[3]).toInt();
    const int shared = QByteArray(argv[4]).toInt();
    try {
        auto store = PluginRegistry::instance().createStorage(QStringLiteral("postgres"), Json{{"dsn", argv[1]}});
        std::vector<MemoryRecord> batch;
        const auto flush = [&] {
            store->saveUnlessIdentical(batch);
            batch.clear();
        };
        for (int i = 0; i < std::max(count, shared); ++i) {
            if (i < count) {
                MemoryRecord r = MemoryRecord::create(QStringLiteral("writer %1 record %2").arg(tag).arg(i));
                r.scope = QStringLiteral("/writers/") + tag;
                r.embedding = {float(i % 7) + 1, 1, 0.5f};
                batch.push_back(r);
            }
            if (i < shared) {
                MemoryRecord r = MemoryRecord::create(QStringLiteral("shared record %1").arg(i));
                r.scope = QStringLiteral("/shared");
                r.embedding = {1, float(i % 5) + 1, 0.5f};
                batch.push_back(r);
            }
            if (batch.size() >= 10)
                flush();
        }
        flush();
    } catch (const Error &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    std::printf("done\n");
    return 0;
}
