#include "transfer_commands.h"

#include "command_context.h"
#include "input_lines.h"
#include "memory_input_parser.h"
#include "progress_bar.h"
#include "record_commands.h"
#include "record_file_parser.h"

#include <mneme/core/error.h>
#include <mneme/core/record_filter.h>

#include <mneme/memory/record_file.h>

#include <QSaveFile>

namespace mneme::cli {

namespace {

// An error of a later batch, saying what earlier batches already did.
Error afterPartialWork(const Error &e, int done, const QString &what)
{
    if (done == 0)
        return e;
    return Error(e.kind(), QStringLiteral("%1 (%2 %3 before the failure)").arg(e.message(), QString::number(done), what));
}

} // namespace

TransferCommands::TransferCommands(CommandContext &context)
    : m_ctx(context)
{
}

void TransferCommands::rememberMany()
{
    const CliArguments &a = m_ctx.args();
    Console &console = m_ctx.console();
    const RememberOptions defaults = RecordCommands::rememberOptions(a);

    const QString file = a.positionals().isEmpty() ? QStringLiteral("-") : a.positional(0);
    if (file == QLatin1String("-") && Console::stdinIsTerminal())
        console.notice(QStringLiteral("reading memories from standard input, one per line; end with Ctrl-D"));
    const InputLines input = InputLines::read(file);
    const QList<MemoryInput> items = MemoryInputParser(defaults, m_ctx.config()).parse(input);

    Memory &memory = m_ctx.memory();
    ProgressBar bar(console, QStringLiteral("storing"), items.size());
    SaveResult total;
    for (qsizetype start = 0; start < items.size(); start += kBatchSize) {
        const QList<MemoryInput> batch = items.mid(start, kBatchSize);
        SaveResult r;
        try {
            r = memory.rememberMany(batch).result();
        } catch (const Error &e) {
            throw afterPartialWork(e, total.stored, QStringLiteral("new memories were stored"));
        }
        total.ids.append(r.ids);
        total.stored += r.stored;
        total.dropped += r.dropped + r.existing;
        bar.update(start + batch.size());
    }
    bar.finish();

    if (m_ctx.json()) {
        Json ids = Json::array();
        for (const QString &id : total.ids)
            ids.push_back(id);
        console.writeJson(Json{{"stored", total.stored}, {"dropped", total.dropped}, {"ids", ids}});
        return;
    }
    console.write(QStringLiteral("Stored %1 from %2 (%3 dropped: blank, duplicates or already stored).\n")
                      .arg(Console::counted(total.stored, QStringLiteral("new memory"), QStringLiteral("new memories")),
                           Console::counted(items.size(), QStringLiteral("item")), QString::number(total.dropped)));
}

void TransferCommands::exportRecords()
{
    const CliArguments &a = m_ctx.args();
    Console &console = m_ctx.console();
    // No FILE, or "-": standard output.
    const std::optional<QString> file = a.positionals().isEmpty() || a.positional(0) == QLatin1String("-")
                                          ? std::nullopt
                                          : std::optional(a.positional(0));
    if (!file && m_ctx.json())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("export without FILE writes the records to standard output, so --json cannot be "
                                   "used; give a FILE (mneme export records.jsonl --json) or drop --json"));

    std::unique_ptr<QSaveFile> out;
    if (file) {
        out = std::make_unique<QSaveFile>(*file);
        if (!out->open(QIODevice::WriteOnly))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("cannot write %1: %2; check the path").arg(*file, out->errorString()));
    }

    const ReadContext reader = a.reader();
    Memory &memory = m_ctx.memory();
    const QString embedderId = RecordFile::embedderIdOf(memory);
    const int total = memory.storage().count(RecordFilter());
    RecordFilter visible;
    reader.restrict(visible);
    const int readable = memory.storage().count(visible);
    ProgressBar bar(console, QStringLiteral("exporting"), file ? readable : 0);

    int exported = 0;
    for (;;) {
        const QList<MemoryRecord> batch = memory.exportRecords(exported, kBatchSize, reader);
        QByteArray chunk;
        for (const MemoryRecord &r : batch)
            chunk += RecordFile::line(r, embedderId);
        if (out) {
            if (out->write(chunk) != chunk.size())
                throw Error(ErrorKind::Storage, QStringLiteral("cannot write %1: %2").arg(*file, out->errorString()));
        } else {
            console.writeBytes(chunk);
        }
        exported += int(batch.size());
        bar.update(exported);
        if (batch.size() < kBatchSize)
            break;
    }
    // Damaged records, which reads leave out, are written with what can be read of them and their
    // damaged columns as stored (import reads the rest).
    const std::vector<DamagedRecord> damaged = memory.exportDamaged(reader);
    for (const DamagedRecord &d : damaged) {
        const QByteArray line = RecordFile::damagedLine(d, embedderId);
        if (out) {
            if (out->write(line) != line.size())
                throw Error(ErrorKind::Storage, QStringLiteral("cannot write %1: %2").arg(*file, out->errorString()));
        } else {
            console.writeBytes(line);
        }
        ++exported;
    }
    if (out && !out->commit())
        throw Error(ErrorKind::Storage, QStringLiteral("cannot write %1: %2").arg(*file, out->errorString()));
    bar.finish();
    if (!damaged.empty())
        console.notice(QStringLiteral("%1 written as stored (see `mneme check`)")
                           .arg(Console::counted(qint64(damaged.size()), QStringLiteral("damaged record"))));
    // An export that is meant as a backup must not silently miss the private records.
    if (total > readable)
        console.notice(QStringLiteral("%1 left out: export with --curator for every record, or with --source S for those of S")
                           .arg(Console::counted(total - readable, QStringLiteral("private record"))));

    if (!file) {
        console.notice(QStringLiteral("exported %1").arg(Console::counted(exported, QStringLiteral("record"))));
    } else if (m_ctx.json()) {
        console.writeJson(Json{{"exported", exported}, {"file", *file}});
    } else {
        console.write(QStringLiteral("Exported %1 to %2.\n").arg(Console::counted(exported, QStringLiteral("record")), *file));
    }
}

void TransferCommands::importRecords()
{
    const CliArguments &a = m_ctx.args();
    Console &console = m_ctx.console();
    const bool keepEmbeddings = a.has(QStringLiteral("keep-embeddings"));
    if (keepEmbeddings && a.has(QStringLiteral("reembed")))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("--keep-embeddings and --reembed exclude each other; give one of them"));
    const QString file = a.positional(0);
    const InputLines input = InputLines::read(file);

    Memory &memory = m_ctx.memory();
    const RecordFileReader::Options options = RecordFileReader::optionsFor(memory, keepEmbeddings);
    const QList<MemoryRecord> records =
        RecordFileParser(keepEmbeddings, options.embedderId, options.dimension, options.config).parse(input);

    ProgressBar bar(console, QStringLiteral("importing"), records.size());
    int imported = 0;
    int skipped = 0;
    for (qsizetype start = 0; start < records.size(); start += kBatchSize) {
        const QList<MemoryRecord> batch = records.mid(start, kBatchSize);
        SaveResult r;
        try {
            r = memory.importRecords(batch, keepEmbeddings);
        } catch (const Error &e) {
            throw afterPartialWork(e, imported, QStringLiteral("records were imported"));
        }
        imported += r.stored;
        skipped += r.existing + r.dropped;
        bar.update(start + batch.size());
    }
    bar.finish();

    if (m_ctx.json()) {
        console.writeJson(Json{{"imported", imported}, {"skipped", skipped}});
        return;
    }
    console.write(QStringLiteral("Imported %1 (%2 skipped: already in the store).\n")
                      .arg(Console::counted(imported, QStringLiteral("record")), QString::number(skipped)));
}

} // namespace mneme::cli
