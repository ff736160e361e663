// The vector index file loader: any bytes are a file it refuses or an index it can search.

#include "plugins/storage/sqlite/vector_index.h"

#include <QFile>
#include <QTemporaryDir>
#include <cstdint>
#include <cstdlib>

using namespace mneme;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("fuzz.hnsw"));
    {
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
            std::abort();
        f.write(reinterpret_cast<const char *>(data), qint64(size));
    }
    VectorIndex index;
    VectorIndex::Stamp stamp;
    QString error;
    if (index.load(path, 4, &stamp, &error)) {
        const float query[4] = {1.0f, 0.5f, -0.25f, 0.0f};
        RecordFilter filter;
        (void)index.search(query, filter, 5);
        filter.scopes = {QStringLiteral("/a")};
        filter.applyPrivacy = true;
        (void)index.search(query, filter, 5, nullptr, VectorIndex::Mode::Graph);
        (void)index.search(query, filter, 5, nullptr, VectorIndex::Mode::Exact);
        for (qint64 rowid : index.trackedRowids())
            (void)index.rankFields(rowid);
    } else if (error.isEmpty()) {
        std::abort(); // a refusal says why
    }
    return 0;
}
