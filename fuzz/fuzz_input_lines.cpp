// The command line's input readers: bytes split into UTF-8 lines (InputLines), then read as
// remember-many items (MemoryInputParser) and as export records (RecordFileParser). Bad input is an
// Error with a line number; nothing else escapes, and what is accepted passes Memory's own checks.

#include "apps/mneme/input_lines.h"
#include "apps/mneme/memory_input_parser.h"
#include "apps/mneme/record_file_parser.h"

#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <cstdint>
#include <cstdlib>

using namespace mneme;
using namespace mneme::cli;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray bytes(reinterpret_cast<const char *>(data), qsizetype(size));
    InputLines input;
    try {
        input = InputLines::fromBytes(bytes, QStringLiteral("fuzz.jsonl"));
    } catch (const Error &e) {
        if (!e.message().startsWith(QLatin1String("fuzz.jsonl line ")))
            std::abort();
        return 0;
    }
    const MemoryConfig config;
    try {
        for (const MemoryInput &item : MemoryInputParser(RememberOptions(), config).parse(input))
            Memory::checkInput(item, config); // accepted items are items a save accepts
    } catch (const Error &e) {
        if (!e.message().contains(QLatin1String(" line ")))
            std::abort();
    }
    for (bool keep : {false, true}) {
        try {
            for (const MemoryRecord &r : RecordFileParser(keep, QStringLiteral("builtin/hash-v2"), 4, config).parse(input))
                Memory::checkRecord(r, config);
        } catch (const Error &e) {
            if (!e.message().contains(QLatin1String(" line ")))
                std::abort();
        }
    }
    return 0;
}
