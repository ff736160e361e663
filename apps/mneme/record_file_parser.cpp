#include "record_file_parser.h"

#include <mneme/core/error.h>

namespace mneme::cli {

RecordFileParser::RecordFileParser(bool keepEmbeddings, QString embedderId, int dimension, MemoryConfig config)
    : m_options{keepEmbeddings, std::move(embedderId), dimension, std::move(config)}
{
}

QList<MemoryRecord> RecordFileParser::parse(const InputLines &input) const
{
    RecordFileReader reader(m_options);
    QList<MemoryRecord> records;
    for (const InputLines::Line &line : input.lines()) {
        if (line.text.trimmed().isEmpty())
            continue;
        try {
            records.append(reader.read(line.number, line.text));
        } catch (const Error &e) {
            throw Error(e.kind(), input.where(line, e.message()) + QStringLiteral(" (nothing was imported)"));
        }
    }
    return records;
}

} // namespace mneme::cli
