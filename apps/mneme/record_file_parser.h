#pragma once

#include <mneme/memory/record_file.h>

#include "input_lines.h"

#include <mneme/core/memory_record.h>

#include <QList>
#include <QString>

namespace mneme::cli {

// Reads the JSON Lines `mneme export` writes (RecordFileReader, docs/storage-format.md): the whole
// input is checked before anything is returned; the first bad line throws Error(InvalidArgument)
// naming the file and the line (Error(PermissionDenied) for a private record without a source).
class RecordFileParser
{
public:
    // With keepEmbeddings every line must carry an embedding of `dimension` numbers computed by
    // `embedderId`; otherwise embeddings are dropped so the contents are embedded again.
    // Every record is checked with Memory::checkRecord() under `config` before anything is imported.
    RecordFileParser(bool keepEmbeddings, QString embedderId, int dimension, MemoryConfig config);

    QList<MemoryRecord> parse(const InputLines &input) const;

private:
    RecordFileReader::Options m_options;
};

} // namespace mneme::cli
