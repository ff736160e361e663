#pragma once

#include <mneme/core/memory_record.h>
#include <mneme/memory/export.h>
#include <mneme/memory/memory_config.h>

#include <QByteArray>
#include <QHash>
#include <QString>

namespace mneme {

class Memory;
struct DamagedRecord;

// The JSON Lines file of records that `mneme export` writes and `mneme import` reads
// (docs/storage-format.md#export-format): one record a line, its JSON plus "embedding" (the vector,
// each float as the shortest decimal that reads back as the same float) and "embedder" (the id of
// the embedder that computed it). A program that moves records in and out of a store (a backup, a
// desktop app) writes and reads exactly what the command line does through these.
class MNEME_MEMORY_EXPORT RecordFile
{
public:
    // Records read per Memory::exportRecords() call and stored per Memory::importRecords() call.
    static constexpr int kBatchSize = 1000;

    // The id written with each line: the embedder the store is bound to, else `memory`'s embedder.
    static QString embedderIdOf(Memory &memory);
    // One line, with its line break.
    static QByteArray line(const MemoryRecord &record, const QString &embedderId);
    // A damaged record's line: what could be read of it, plus "damaged": {"problem", "columns"}.
    static QByteArray damagedLine(const DamagedRecord &damaged, const QString &embedderId);
};

// Reads the lines of a record file one at a time, checking each completely (Memory::checkRecord
// under `config`, the embedding against the store's embedder) and the ids across lines, so a caller
// can check a whole file before it imports any of it.
class MNEME_MEMORY_EXPORT RecordFileReader
{
public:
    struct Options
    {
        // Keep the file's vectors: every line must carry an embedding of `dimension` numbers made by
        // `embedderId`. Otherwise embeddings are dropped, so the contents are embedded again.
        bool keepEmbeddings = false;
        QString embedderId;
        int dimension = 0;
        MemoryConfig config;
    };
    // The options for importing into `memory`: its embedder and configuration.
    static Options optionsFor(Memory &memory, bool keepEmbeddings);

    explicit RecordFileReader(Options options);

    // The record of the line numbered `number` (1-based; its text without the line break). A record
    // without an id gets a new one. Throws Error(InvalidArgument) (Error(PermissionDenied) for a
    // private record without a source) whose message says what is wrong with the line, and ends
    // with what to do; the caller adds which file and line. An id already read on an earlier line is
    // refused naming that line.
    MemoryRecord read(int number, const QString &text);

private:
    Embedding embeddingOf(const Json &line) const;

    Options m_options;
    QHash<QString, int> m_lineOfId;
};

} // namespace mneme
