// Test helper: pg_peer <dsn> <index_dir> <ann_threshold>
// A process ("host") with a postgres store of its own and its own vector index folder, driven by
// lines on standard input, one answer line each on standard output:
//   save <private 0|1> <source> <content...>   saves (saveUnlessIdentical) under /hosts  -> "saved <id>"
//   bulk <tag> <n>                             saves n records of its own, 50 at a time   -> "bulk done"
//   find <source> <content...>                 the 3 nearest records to the content's embedding,
//                                              privacy applied for that source            -> "found <c1>|<c2>|<c3>"
//   count                                      records in the store                       -> "count <n>"
//   stats                                      the vector index                           -> "stats <approximate 0|1> <file loads> <full loads>"
//   wait                                       waits for a graph build to finish          -> "waited"
// Errors: "error <message>" and exit 1. Embeddings: the builtin embedder (64 dimensions).

#include "plugins/storage/postgres/postgres_storage.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>

#include <QCoreApplication>
#include <QTextStream>
#include <cstdio>

using namespace mneme;

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    if (argc != 4) {
        std::fprintf(stderr, "usage: pg_peer <dsn> <index_dir> <ann_threshold>\n");
        return 2;
    }
    try {
        PostgresStorage::Options o;
        o.dsn = QString::fromUtf8(argv[1]);
        o.indexDir = QString::fromUtf8(argv[2]);
        o.annThreshold = QByteArray(argv[3]).toInt();
        PostgresStorage store(o);
        auto embedder = PluginRegistry::instance().createEmbedder(QStringLiteral("builtin"), Json{{"dimension", 64}});
        const auto embed = [&](const QString &text) { return embedder->embed({text}).front(); };
        QTextStream in(stdin);
        const auto answer = [](const QString &line) {
            std::printf("%s\n", line.toUtf8().constData());
            std::fflush(stdout);
        };
        for (QString line; in.readLineInto(&line);) {
            const QStringList w = line.split(QLatin1Char(' '));
            const QString command = w.value(0);
            if (command == QLatin1String("save")) {
                MemoryRecord r = MemoryRecord::create(w.mid(3).join(QLatin1Char(' ')));
                r.scope = QStringLiteral("/hosts");
                r.isPrivate = w.value(1) == QLatin1String("1");
                r.source = w.value(2);
                r.embedding = embed(r.content);
                answer(QStringLiteral("saved ") + store.saveUnlessIdentical({r}).front());
            } else if (command == QLatin1String("bulk")) {
                std::vector<MemoryRecord> batch;
                for (int i = 0; i < w.value(2).toInt(); ++i) {
                    MemoryRecord r = MemoryRecord::create(QStringLiteral("host %1 note %2 about item %3").arg(w.value(1)).arg(i).arg(i * 7 % 13));
                    r.scope = QStringLiteral("/hosts/") + w.value(1);
                    r.embedding = embed(r.content);
                    batch.push_back(std::move(r));
                    if (batch.size() == 50) {
                        store.saveUnlessIdentical(batch);
                        batch.clear();
                    }
                }
                store.saveUnlessIdentical(batch);
                answer(QStringLiteral("bulk done"));
            } else if (command == QLatin1String("find")) {
                RecordFilter f;
                f.applyPrivacy = true;
                f.source = w.value(1);
                QStringList found;
                for (const ScoredRecord &s : store.search(embed(w.mid(2).join(QLatin1Char(' '))), f, 3))
                    found << s.record.content;
                answer(QStringLiteral("found ") + found.join(QLatin1Char('|')));
            } else if (command == QLatin1String("count")) {
                answer(QStringLiteral("count %1").arg(store.count({})));
            } else if (command == QLatin1String("stats")) {
                const PostgresStorage::IndexStats s = store.indexStats();
                answer(QStringLiteral("stats %1 %2 %3").arg(s.approximate ? 1 : 0).arg(s.fileLoads).arg(s.fullLoads));
            } else if (command == QLatin1String("wait")) {
                store.waitForIndex();
                answer(QStringLiteral("waited"));
            } else {
                answer(QStringLiteral("error unknown command ") + command);
                return 1;
            }
        }
        store.close();
    } catch (const Error &e) {
        std::printf("error %s\n", e.what());
        return 1;
    }
    return 0;
}
