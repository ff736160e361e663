// The vector index file loader: any bytes are a file it refuses (saying why) or an index it can
// search. Each input is loaded twice: as it is, and with the checksum in its trailer made to match
// its content, so that damage the checksum would catch also reaches the structure and value checks
// behind it (a file written by a faulty writer has a matching checksum).

#include "plugins/storage/common/vector_index.h"

#include <QByteArray>
#include <QFile>
#include <QTemporaryDir>
#include <cstdint>
#include <cstdlib>
#include <cstring>

using namespace mneme;

namespace {

// The trailer: 8 bytes of marker, the checksum, the length of what precedes it (vector_index.cpp).
constexpr qsizetype kTrailerSize = 8 + 2 * sizeof(quint64);

void loadAndSearch(const QString &path, const QByteArray &bytes)
{
    {
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
            std::abort();
        f.write(bytes);
    }
    VectorIndex index;
    VectorIndex::Stamp stamp;
    QString error;
    if (!index.load(path, 4, &stamp, &error)) {
        if (error.isEmpty())
            std::abort(); // a refusal says why
        if (index.isLoaded())
            std::abort(); // and leaves nothing half loaded
        return;
    }
    const float query[4] = {1.0f, 0.5f, -0.25f, 0.0f};
    RecordFilter filter;
    (void)index.search(query, filter, 5);
    filter.scopes = {QStringLiteral("/a")};
    filter.applyPrivacy = true;
    (void)index.search(query, filter, 5, nullptr, VectorIndex::Mode::Graph);
    (void)index.search(query, filter, 5, nullptr, VectorIndex::Mode::Exact);
    // The identity arrays, as a recall filtered by user, agent or run reads them.
    filter.metadata = Json{{"user_id", "alice"}, {"agent_id", Json{{"$exists", true}}}, {"run_id", Json{{"$exists", false}}}};
    (void)index.search(query, filter, 5, nullptr, VectorIndex::Mode::Graph);
    (void)index.search(query, filter, 5, nullptr, VectorIndex::Mode::Exact);
    for (qint64 rowid : index.trackedRowids())
        (void)index.rankFields(rowid);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("fuzz.hnsw"));
    QByteArray bytes(reinterpret_cast<const char *>(data), qsizetype(size));
    loadAndSearch(path, bytes);
    if (bytes.size() >= kTrailerSize) {
        const qsizetype body = bytes.size() - kTrailerSize;
        const quint64 sum = VectorIndex::fileChecksum(bytes.constData(), body);
        std::memcpy(bytes.data() + body + 8, &sum, sizeof(sum));
        loadAndSearch(path, bytes);
    }
    return 0;
}
