// Test helper: fault_writer <db path> <records> <batch> <power loss at write N, 0: none> [ann threshold] [ann background from]
// Saves `records` records into the store through the fault-injecting VFS, in batches, and prints
// "acked <first> <last>" after each save returned (the records a caller was told are stored). Record
// i has id "00000000-0000-7000-8000-<i as 12 digits>", content "fault record <i> ...", a 16-dimensional
// vector, and every 7th batch is followed by a search (which loads the vector index and writes its
// file once the store is past the threshold). At the N-th write from the start the machine "loses
// power": every write not yet synced is undone and the process ends at once with status 86.

#include "fault_vfs.h"
#include "plugins/storage/sqlite/sqlite_storage.h"

#include <mneme/core/error.h>

#include <QCoreApplication>
#include <QRandomGenerator>
#include <cstdio>

using namespace mneme;

namespace {

MemoryRecord faultRecord(int i)
{
    MemoryRecord r = MemoryRecord::create(QStringLiteral("fault record %1 of the power loss test, written in a batch").arg(i));
    r.id = QStringLiteral("00000000-0000-7000-8000-%1").arg(i, 12, 10, QLatin1Char('0'));
    r.scope = QStringLiteral("/fault/%1").arg(i % 5);
    r.categories = QStringList{QStringLiteral("c%1").arg(i % 3)};
    const quint32 seed = quint32(i) * 2654435761u;
    QRandomGenerator rng(seed);
    r.embedding.resize(16);
    for (float &x : r.embedding)
        x = float(rng.generateDouble() * 2.0 - 1.0);
    return r;
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (args.size() < 5) {
        std::fprintf(stderr, "usage: fault_writer <db> <records> <batch> <power loss at write N> [ann threshold]\n");
        return 2;
    }
    test::FaultVfs vfs;
    const int records = args.at(2).toInt();
    const int batch = std::max(1, args.at(3).toInt());
    const int lossAt = args.at(4).toInt();
    Json config{{"path", args.at(1).toStdString()}};
    if (args.size() > 5)
        config["ann_threshold"] = args.at(5).toInt();
    if (args.size() > 6)
        config["ann_background_from"] = args.at(6).toInt(); // the graph built on background threads
    try {
        SqliteStorage store(SqliteStorage::Options::fromJson(config));
        if (lossAt > 0)
            vfs.powerLossAtWrite(lossAt, 86);
        for (int first = 0, n = 0; first < records; first += batch, ++n) {
            std::vector<MemoryRecord> rs;
            for (int i = first; i < std::min(records, first + batch); ++i)
                rs.push_back(faultRecord(i));
            store.save(rs);
            std::printf("acked %d %d\n", first, first + int(rs.size()) - 1);
            std::fflush(stdout);
            if (n % 7 == 6)
                store.search(rs.front().embedding, {}, 3);
        }
        store.close();
    } catch (const Error &e) {
        std::fprintf(stderr, "fault_writer: %s\n", e.what());
        return 1;
    }
    return 0;
}
