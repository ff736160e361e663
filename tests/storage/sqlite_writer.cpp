// Test helper: sqlite_writer <db path> <tag> <count> [batch size] [mode]
// Saves `count` records tagged `tag` into the store in batches (default 5), printing
// "committed <batch>" after each committed batch. Record i of the tag has content
// "writer <tag> record <i>", scope /writers/<tag>, source <tag> and metadata {tag, i, batch}.
// Modes:
//   add (default)  8-dimensional embeddings from a small pattern, embedder "test/writer".
//   ann            16-dimensional embeddings annVector(tag, i, 0), embedder "test/ann", the approximate
//                  index on from 50 records (ann_threshold), and a search after every batch, so that the
//                  process keeps its index loaded, in step and written to its file as it goes.
//   mutate         on a store of the ann mode: updates every record whose metadata i % 3 == 0 (vector
//                  annVector(its tag, i, 1), scope /moved), deletes those with i % 3 == 1, then adds
//                  `count` records as the ann mode does; prints "mutated" at the end.

#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>

#include <QCoreApplication>
#include <QHash>
#include <QRandomGenerator>
#include <QStringList>
#include <cstdio>

using namespace mneme;

namespace {

// Also in test_sqlite_storage.cpp: the same vectors for the same arguments.
Embedding annVector(const QString &tag, int i, int salt)
{
    quint32 h = 2166136261u; // FNV-1a: qHash is seeded per process
    for (char c : tag.toUtf8())
        h = (h ^ quint8(c)) * 16777619u;
    const quint32 seeds[] = {h, quint32(i), quint32(salt)};
    QRandomGenerator rng(seeds, 3);
    Embedding e(16);
    for (float &x : e)
        x = float(rng.generateDouble() * 2.0 - 1.0);
    return e;
}

MemoryRecord writerRecord(const QString &tag, int i, int batch, bool ann)
{
    MemoryRecord r = MemoryRecord::create(QStringLiteral("writer %1 record %2").arg(tag).arg(i));
    r.scope = QStringLiteral("/writers/") + tag;
    r.source = tag;
    r.metadata = Json{{"tag", tag.toStdString()}, {"i", i}, {"batch", batch}};
    if (ann) {
        r.embedding = annVector(tag, i, 0);
    } else {
        r.embedding.resize(8);
        for (int d = 0; d < 8; ++d)
            r.embedding[std::size_t(d)] = float((i * 7 + d * 3) % 11) + 0.5f;
    }
    return r;
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (args.size() < 4) {
        std::fprintf(stderr, "usage: sqlite_writer <db path> <tag> <count> [batch size] [add|ann|mutate]\n");
        return 2;
    }
    const QString path = args.at(1);
    const QString tag = args.at(2);
    const int count = args.at(3).toInt();
    const int batchSize = args.size() > 4 ? std::max(1, args.at(4).toInt()) : 5;
    const QString mode = args.size() > 5 ? args.at(5) : QStringLiteral("add");
    const bool ann = mode != QLatin1String("add");
    try {
        PluginRegistry registry(QStringList{QStringLiteral(MNEME_PLUGIN_BUILD_DIR)});
        // Checkpoints after every commit or two: the background checkpointer runs all the time.
        Json config{{"path", path.toStdString()}, {"wal_checkpoint_pages", 10}};
        if (ann)
            config["ann_threshold"] = 50;
        auto store = registry.createStorage(QStringLiteral("sqlite"), config);
        if (ann)
            store->bindEmbedder({QStringLiteral("test/ann"), 16});
        else
            store->bindEmbedder({QStringLiteral("test/writer"), 8});
        if (mode == QLatin1String("mutate")) {
            QStringList doomed;
            for (MemoryRecord r : store->list({}, -1, 0)) {
                if (!r.metadata.contains("i") || !r.metadata.contains("tag"))
                    continue;
                const int i = r.metadata["i"].get<int>();
                const QString owner = QString::fromStdString(r.metadata["tag"].get<std::string>());
                if (i % 3 == 0) {
                    r.embedding = annVector(owner, i, 1);
                    r.scope = QStringLiteral("/moved");
                    store->update(r);
                } else if (i % 3 == 1) {
                    doomed << r.id;
                }
            }
            RecordFilter f;
            f.ids = doomed;
            if (!doomed.isEmpty())
                store->remove(f);
        }
        int batch = 0;
        for (int start = 0; start < count; start += batchSize, ++batch) {
            std::vector<MemoryRecord> records;
            for (int i = start; i < std::min(count, start + batchSize); ++i)
                records.push_back(writerRecord(tag, i, batch, ann));
            store->save(records);
            if (mode == QLatin1String("ann"))
                store->search(records.front().embedding, {}, 5);
            std::printf("committed %d\n", batch);
            std::fflush(stdout);
        }
        if (mode == QLatin1String("mutate")) {
            std::printf("mutated\n");
            std::fflush(stdout);
        }
        store->close();
    } catch (const Error &e) {
        std::fprintf(stderr, "sqlite_writer %s: %s\n", qPrintable(tag), e.what());
        return 1;
    }
    return 0;
}
