#pragma once

#include <mneme/memory/memory_config.h>

#include "input_lines.h"

#include <mneme/core/memory_record.h>

#include <QList>
#include <QString>

namespace mneme::cli {

// Reads the JSON Lines `mneme export` writes: per line a record's JSON plus "embedding" (array of
// numbers) and "embedder" (the id of the embedder that computed it). The whole input is checked
// before anything is returned; the first bad line throws Error(InvalidArgument) naming it
// (Error(PermissionDenied) for a private record without a source).
class RecordFileParser
{
public:
    // With keepEmbeddings every line must carry an embedding of `dimension` numbers computed by
    // `embedderId`; otherwise embeddings are dropped so the contents are embedded again.
    // Every record is checked with Memory::checkRecord() under `config` before anything is imported.
    RecordFileParser(bool keepEmbeddings, QString embedderId, int dimension, MemoryConfig config);

    QList<MemoryRecord> parse(const InputLines &input) const;

private:
    MemoryRecord parseLine(const InputLines &input, const InputLines::Line &line) const;

    bool m_keepEmbeddings;
    QString m_embedderId;
    int m_dimension;
    MemoryConfig m_config;
};

} // namespace mneme::cli
