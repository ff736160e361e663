#include "transfer_job.h"

#include "counted.h"
#include "future_call.h"
#include "store_session.h"

#include <mneme/core/error.h>
#include <mneme/core/storage_backend.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/record_file.h>

#include <QFile>
#include <QFileInfo>
#include <QPromise>
#include <QSaveFile>
#include <QStringDecoder>
#include <QtConcurrent/QtConcurrentRun>

namespace mneme::studio {

namespace {

using Outcome = TransferJob::Outcome;
using Cancel = std::shared_ptr<std::atomic<bool>>;

void report(QPromise<Outcome> &promise, int done, const QString &step)
{
    promise.setProgressValueAndText(done, step);
}

// An error of a later batch, saying what earlier batches already did.
Error afterPartialWork(const Error &e, int done)
{
    if (done == 0)
        return e;
    return Error(e.kind(), QObject::tr("%1 (%2 imported before the failure)").arg(e.message(), records(done)));
}

QStringList readLines(const QString &file)
{
    QFile in(file);
    if (!in.open(QIODevice::ReadOnly))
        throw Error(ErrorKind::InvalidArgument, QObject::tr("Cannot read %1: %2. Check the path.").arg(file, in.errorString()));
    const QByteArray bytes = in.readAll();
    QStringDecoder utf8(QStringDecoder::Utf8);
    const QString text = utf8(bytes);
    if (utf8.hasError())
        throw Error(ErrorKind::InvalidArgument, QObject::tr("%1 is not valid UTF-8; convert it to UTF-8.").arg(file));
    QStringList lines = text.split(QLatin1Char('\n'));
    for (QString &line : lines)
        if (line.endsWith(QLatin1Char('\r')))
            line.chop(1);
    return lines;
}

void runImport(QPromise<Outcome> &promise, Memory *memory, const QString &file, const Cancel &cancel)
{
    Outcome outcome;
    const QString name = QFileInfo(file).fileName();
    const QStringList lines = readLines(file);
    report(promise, 0, QObject::tr("Checking %1…").arg(counted(lines.size(), QObject::tr("line"), QObject::tr("lines"))));
    RecordFileReader reader(RecordFileReader::optionsFor(*memory, false));
    QList<MemoryRecord> records;
    for (int i = 0; i < lines.size(); ++i) {
        if (cancel->load()) {
            outcome.cancelled = true;
            promise.addResult(outcome);
            return;
        }
        if (lines[i].trimmed().isEmpty())
            continue;
        try {
            records.append(reader.read(i + 1, lines[i]));
        } catch (const Error &e) {
            throw Error(e.kind(), QObject::tr("%1 line %2: %3 (nothing was imported)").arg(name).arg(i + 1).arg(e.message()));
        }
    }
    promise.setProgressRange(0, int(records.size()));
    for (qsizetype start = 0; start < records.size(); start += RecordFile::kBatchSize) {
        if (cancel->load()) {
            outcome.cancelled = true;
            break;
        }
        report(promise, int(start), QObject::tr("Importing %1 of %2 records…").arg(start).arg(records.size()));
        SaveResult r;
        try {
            r = memory->importRecords(records.mid(start, RecordFile::kBatchSize), false);
        } catch (const Error &e) {
            throw afterPartialWork(e, outcome.done);
        }
        outcome.done += r.stored;
        outcome.skipped += r.existing + r.dropped;
    }
    report(promise, int(records.size()), QObject::tr("Imported."));
    promise.addResult(outcome);
}

void runExport(QPromise<Outcome> &promise, Memory *memory, const QString &file, const Cancel &cancel)
{
    Outcome outcome;
    QSaveFile out(file);
    if (!out.open(QIODevice::WriteOnly))
        throw Error(ErrorKind::InvalidArgument, QObject::tr("Cannot write %1: %2. Choose another file.").arg(file, out.errorString()));
    const auto write = [&](const QByteArray &bytes) {
        if (out.write(bytes) != bytes.size())
            throw Error(ErrorKind::Storage, QObject::tr("Cannot write %1: %2.").arg(file, out.errorString()));
    };
    const ReadContext reader = StoreSession::reader();
    const QString embedderId = RecordFile::embedderIdOf(*memory);
    const int total = memory->countRecords(RecordQuery(), reader);
    promise.setProgressRange(0, total);
    for (;;) {
        if (cancel->load()) {
            out.cancelWriting();
            outcome.cancelled = true;
            promise.addResult(outcome);
            return;
        }
        report(promise, outcome.done, QObject::tr("Exporting %1 of %2 records…").arg(outcome.done).arg(total));
        const QList<MemoryRecord> batch = memory->exportRecords(outcome.done, RecordFile::kBatchSize, reader);
        QByteArray chunk;
        for (const MemoryRecord &r : batch)
            chunk += RecordFile::line(r, embedderId);
        write(chunk);
        outcome.done += int(batch.size());
        if (batch.size() < RecordFile::kBatchSize)
            break;
    }
    for (const DamagedRecord &d : memory->exportDamaged(reader)) {
        write(RecordFile::damagedLine(d, embedderId));
        ++outcome.done;
    }
    if (!out.commit())
        throw Error(ErrorKind::Storage, QObject::tr("Cannot write %1: %2.").arg(file, out.errorString()));
    report(promise, total, QObject::tr("Exported."));
    promise.addResult(outcome);
}

} // namespace

TransferJob::TransferJob(bool import, const QString &file, QObject *parent)
    : QObject(parent),
      m_import(import),
      m_file(file),
      m_cancel(std::make_shared<std::atomic<bool>>(false))
{
    connect(&m_watcher, &QFutureWatcherBase::progressRangeChanged, this, [this] {
        Q_EMIT progress(m_watcher.progressValue(), m_watcher.progressMaximum(), m_watcher.progressText());
    });
    connect(&m_watcher, &QFutureWatcherBase::progressValueChanged, this, [this] {
        Q_EMIT progress(m_watcher.progressValue(), m_watcher.progressMaximum(), m_watcher.progressText());
    });
    connect(&m_watcher, &QFutureWatcherBase::finished, this, [this] {
        const QString error = failureOf(m_watcher.future());
        Q_EMIT finished(error.isEmpty() && m_watcher.future().resultCount() > 0 ? m_watcher.result() : Outcome(), error);
    });
}

void TransferJob::watch(const QFuture<Outcome> &future)
{
    m_watcher.setFuture(future);
}

TransferJob *TransferJob::startImport(Memory *memory, const QString &file, QObject *parent)
{
    auto *job = new TransferJob(true, file, parent);
    job->watch(QtConcurrent::run(runImport, memory, file, job->m_cancel));
    return job;
}

TransferJob *TransferJob::startExport(Memory *memory, const QString &file, QObject *parent)
{
    auto *job = new TransferJob(false, file, parent);
    job->watch(QtConcurrent::run(runExport, memory, file, job->m_cancel));
    return job;
}

bool TransferJob::isImport() const
{
    return m_import;
}

QString TransferJob::file() const
{
    return m_file;
}

bool TransferJob::isRunning() const
{
    return m_watcher.isRunning();
}

void TransferJob::cancel()
{
    m_cancel->store(true);
}

void TransferJob::waitForFinished()
{
    m_watcher.waitForFinished();
}

} // namespace mneme::studio
