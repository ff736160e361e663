// Test helper: sqlite_writer <db path> <tag> <count> [batch size]
// Saves `count` records tagged `tag` into the store in batches (default 5), printing
// "committed <batch>" after each committed batch. Record i of the tag has content
// "writer <tag> record <i>", scope /writers/<tag>, source <tag> and metadata {tag, i, batch}.

#include "core/error.h"
#include "core/plugin_registry.h"

#include <QCoreApplication>
#include <QStringList>
#include <cstdio>

using namespace mneme;

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (args.size() < 4) {
        std::fprintf(stderr, "usage: sqlite_writer <db path> <tag> <count> [batch size]\n");
        return 2;
    }
    const QString path = args.at(1);
    const QString tag = args.at(2);
    const int count = args.at(3).toInt();
    const int batchSize = args.size() > 4 ? std::max(1, args.at(4).toInt()) : 5;
    try {
        PluginRegistry registry(QStringList{QStringLiteral(MNEME_PLUGIN_BUILD_DIR)});
        auto store = registry.createStorage(QStringLiteral("sqlite"), Json{{"path", path.toStdString()}});
        store->bindEmbedder({QStringLiteral("test/writer"), 8});
        int batch = 0;
        for (int start = 0; start < count; start += batchSize, ++batch) {
            std::vector<MemoryRecord> records;
            for (int i = start; i < std::min(count, start + batchSize); ++i) {
                MemoryRecord r = MemoryRecord::create(QStringLiteral("writer %1 record %2").arg(tag).arg(i));
                r.scope = QStringLiteral("/writers/") + tag;
                r.source = tag;
                r.metadata = Json{{"tag", tag.toStdString()}, {"i", i}, {"batch", batch}};
                r.embedding.resize(8);
                for (int d = 0; d < 8; ++d)
                    r.embedding[std::size_t(d)] = float((i * 7 + d * 3) % 11) + 0.5f;
                records.push_back(std::move(r));
            }
            store->save(records);
            std::printf("committed %d\n", batch);
            std::fflush(stdout);
        }
        store->close();
    } catch (const Error &e) {
        std::fprintf(stderr, "sqlite_writer %s: %s\n", qPrintable(tag), e.what());
        return 1;
    }
    return 0;
}
