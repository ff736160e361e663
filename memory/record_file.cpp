#include <mneme/memory/record_file.h>

#include <mneme/core/embedder.h>
#include <mneme/core/error.h>
#include <mneme/core/storage_backend.h>
#include <mneme/memory/memory.h>

#include <QUuid>
#include <charconv>

namespace mneme {

namespace {

// The float as the shortest decimal that reads back as the same float, so exported vectors stay
// compact ("0.1", not "0.10000000149011612") and an import restores them bit for bit.
double shortestDecimal(float x)
{
    char buffer[64];
    const auto written = std::to_chars(buffer, buffer + sizeof buffer, x);
    double value = double(x);
    if (written.ec == std::errc())
        std::from_chars(buffer, written.ptr, value);
    return value;
}

Json withEmbedding(const MemoryRecord &record, const QString &embedderId)
{
    Json j = record;
    Json vector = Json::array();
    for (float x : record.embedding)
        vector.push_back(shortestDecimal(x));
    j["embedding"] = std::move(vector);
    j["embedder"] = embedderId.toStdString();
    return j;
}

QByteArray lineOf(const Json &j)
{
    return QByteArray::fromStdString(j.dump(-1, ' ', false, Json::error_handler_t::replace)) + '\n';
}

} // namespace

QString RecordFile::embedderIdOf(Memory &memory)
{
    const std::optional<EmbedderBinding> binding = memory.storage().embedderBinding();
    return binding ? binding->embedderId : memory.embedder().id();
}

QByteArray RecordFile::line(const MemoryRecord &record, const QString &embedderId)
{
    return lineOf(withEmbedding(record, embedderId));
}

QByteArray RecordFile::damagedLine(const DamagedRecord &damaged, const QString &embedderId)
{
    Json j = withEmbedding(damaged.record, embedderId);
    j["damaged"] = Json{{"problem", damaged.problem}, {"columns", damaged.raw}};
    return lineOf(j);
}

RecordFileReader::Options RecordFileReader::optionsFor(Memory &memory, bool keepEmbeddings)
{
    return Options{keepEmbeddings, memory.embedder().id(), memory.embedder().dimension(), memory.config()};
}

RecordFileReader::RecordFileReader(Options options)
    : m_options(std::move(options))
{
}

MemoryRecord RecordFileReader::read(int number, const QString &text)
{
    auto fail = [](const QString &what, ErrorKind kind = ErrorKind::InvalidArgument) -> void { throw Error(kind, what); };

    Json j;
    const QString problem = readJson(text.toStdString(), &j);
    if (!problem.isEmpty())
        fail(QStringLiteral("not valid JSON (%1); import reads the JSON Lines that mneme export writes").arg(problem));
    if (!j.is_object())
        fail(QStringLiteral("expected a JSON object (a record as mneme export writes it)"));

    MemoryRecord r = j.get<MemoryRecord>(); // throws Error(InvalidArgument) naming a bad field
    r.id = r.id.trimmed();                  // as Memory::importRecords() normalises it, so that two spellings are one id
    if (r.id.isEmpty())
        r.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    Memory::checkRecord(r, m_options.config);
    r.embedding.clear();
    if (m_options.keepEmbeddings)
        r.embedding = embeddingOf(j);

    const auto seen = m_lineOfId.constFind(r.id);
    if (seen != m_lineOfId.constEnd())
        fail(QStringLiteral("the id %1 was already used on line %2; ids must be unique").arg(r.id, QString::number(*seen)));
    m_lineOfId.insert(r.id, number);
    return r;
}

Embedding RecordFileReader::embeddingOf(const Json &j) const
{
    auto fail = [](const QString &what) -> void { throw Error(ErrorKind::InvalidArgument, what); };
    const QString hint = QStringLiteral("; import without keeping the file's embeddings (drop --keep-embeddings) to embed the contents again");
    if (!j.contains("embedder") || !j["embedder"].is_string())
        fail(QStringLiteral("no \"embedder\" id to check the embedding against") + hint);
    const QString embedder = QString::fromStdString(j["embedder"].get<std::string>());
    if (embedder != m_options.embedderId)
        fail(QStringLiteral("the embedding was computed by \"%1\" but this store uses \"%2\"").arg(embedder, m_options.embedderId) + hint);
    if (!j.contains("embedding") || !j["embedding"].is_array() || j["embedding"].empty())
        fail(QStringLiteral("no \"embedding\"") + hint);
    const Json &vector = j["embedding"];
    if (int(vector.size()) != m_options.dimension)
        fail(QStringLiteral("the embedding has %1 numbers but the embedder \"%2\" makes %3")
                 .arg(QString::number(vector.size()), m_options.embedderId, QString::number(m_options.dimension))
             + hint);
    Embedding embedding;
    embedding.reserve(vector.size());
    for (const Json &x : vector) {
        if (!x.is_number())
            fail(QStringLiteral("\"embedding\" must be an array of numbers") + hint);
        embedding.push_back(x.get<float>());
    }
    return embedding;
}

} // namespace mneme
