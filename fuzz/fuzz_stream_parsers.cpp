// The SSE and NDJSON stream parsers: whatever the chunking of the same bytes, the same events.

#include <mneme/core/stream_parsers.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

using namespace mneme;

namespace {

template<typename Parser, typename Out>
Out parseIn(const QByteArray &bytes, const std::vector<qsizetype> &cuts)
{
    Parser parser;
    Out out;
    qsizetype at = 0;
    for (qsizetype cut : cuts) {
        if (cut <= at || cut >= bytes.size())
            continue;
        parser.feed(bytes.mid(at, cut - at));
        for (auto &e : parser.take())
            out.push_back(std::move(e));
        at = cut;
    }
    parser.feed(bytes.mid(at));
    parser.finish();
    for (auto &e : parser.take())
        out.push_back(std::move(e));
    return out;
}

bool same(const std::vector<SseParser::Event> &a, const std::vector<SseParser::Event> &b)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].event != b[i].event || a[i].data != b[i].data || a[i].id != b[i].id)
            return false;
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    // The first two bytes choose where the stream is cut into chunks.
    std::vector<qsizetype> cuts;
    for (qsizetype c = 1 + data[0] % 7; c < qsizetype(size); c += 1 + (data[1] + c) % 23)
        cuts.push_back(c);
    const QByteArray bytes(reinterpret_cast<const char *>(data + 2), qsizetype(size - 2));
    const auto whole = parseIn<SseParser, std::vector<SseParser::Event>>(bytes, {});
    const auto chunked = parseIn<SseParser, std::vector<SseParser::Event>>(bytes, cuts);
    if (!same(whole, chunked))
        std::abort();
    const auto lines = parseIn<NdjsonParser, std::vector<QByteArray>>(bytes, {});
    const auto chunkedLines = parseIn<NdjsonParser, std::vector<QByteArray>>(bytes, cuts);
    if (lines != chunkedLines)
        std::abort();
    for (const QByteArray &l : lines)
        if (l.trimmed().isEmpty())
            std::abort(); // blank lines are skipped
    return 0;
}
