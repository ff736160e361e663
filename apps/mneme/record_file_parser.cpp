#include "record_file_parser.h"

#include "cli_arguments.h"

#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <QHash>
#include <QUuid>
#include <cmath>

namespace mneme::cli {

RecordFileParser::RecordFileParser(bool keepEmbeddings, QString embedderId, int dimension, MemoryConfig config)
    : m_keepEmbeddings(keepEmbeddings),
      m_embedderId(std::move(embedderId)),
      m_dimension(dimension),
      m_config(std::move(config))
{
}

QList<MemoryRecord> RecordFileParser::parse(const InputLines &input) const
{
    QList<MemoryRecord> records;
    QHash<QString, int> lineOfId;
    for (const InputLines::Line &line : input.lines()) {
        if (line.text.trimmed().isEmpty())
            continue;
        MemoryRecord r = parseLine(input, line);
        const auto seen = lineOfId.constFind(r.id);
        if (seen != lineOfId.constEnd())
            throw Error(ErrorKind::InvalidArgument,
                        input.where(line, QStringLiteral("the id %1 was already used on line %2; ids must be unique "
                                                         "(nothing was imported)")
                                              .arg(r.id, QString::number(*seen))));
        lineOfId.insert(r.id, line.number);
        records.append(std::move(r));
    }
    return records;
}

MemoryRecord RecordFileParser::parseLine(const InputLines &input, const InputLines::Line &line) const
{
    auto fail = [&](const QString &what, ErrorKind kind = ErrorKind::InvalidArgument) -> void {
        throw Error(kind, input.where(line, what) + QStringLiteral(" (nothing was imported)"));
    };

    Json j;
    const QString problem = readJson(line.text.toStdString(), &j);
    if (!problem.isEmpty())
        fail(QStringLiteral("not valid JSON (%1); import reads the JSON Lines that mneme export writes").arg(problem));
    if (!j.is_object())
        fail(QStringLiteral("expected a JSON object (a record as mneme export writes it)"));

    MemoryRecord r;
    try {
        r = j.get<MemoryRecord>();
    } catch (const Error &e) {
        fail(e.message());
    }

    r.id = r.id.trimmed(); // as Memory::importRecords() normalises it, so that two spellings are one id
    if (r.id.isEmpty())
        r.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    try {
        Memory::checkRecord(r, m_config);
    } catch (const Error &e) {
        fail(e.message(), e.kind());
    }

    r.embedding.clear();
    if (!m_keepEmbeddings)
        return r;

    const QString hint = QStringLiteral("; drop --keep-embeddings to embed the contents again");
    if (!j.contains("embedder") || !j["embedder"].is_string())
        fail(QStringLiteral("no \"embedder\" id to check the embedding against") + hint);
    const QString embedder = QString::fromStdString(j["embedder"].get<std::string>());
    if (embedder != m_embedderId)
        fail(QStringLiteral("the embedding was computed by \"%1\" but this store uses \"%2\"").arg(embedder, m_embedderId)
             + hint);
    if (!j.contains("embedding") || !j["embedding"].is_array() || j["embedding"].empty())
        fail(QStringLiteral("no \"embedding\"") + hint);
    const Json &vector = j["embedding"];
    if (int(vector.size()) != m_dimension)
        fail(QStringLiteral("the embedding has %1 numbers but the embedder \"%2\" makes %3")
                 .arg(QString::number(vector.size()), m_embedderId, QString::number(m_dimension))
             + hint);
    r.embedding.reserve(vector.size());
    for (const Json &x : vector) {
        if (!x.is_number())
            fail(QStringLiteral("\"embedding\" must be an array of numbers") + hint);
        r.embedding.push_back(x.get<float>());
    }
    return r;
}

} // namespace mneme::cli
