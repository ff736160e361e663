#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <atomic>
#include <memory>

namespace mneme {
class Memory;
}

namespace mneme::studio {

// An import or an export of a store's records in the file format of `mneme import` / `mneme export`
// (RecordFile, docs/storage-format.md#export-format), run on a worker thread with the blocking
// Memory calls made for that (importRecords, exportRecords). It reports progress as it goes and
// stops at the next batch when cancelled: an import keeps the batches stored before (it says how
// many), an export writes nothing (the file is written to a temporary file, renamed when complete).
// The Memory must stay open until `finished`.
class TransferJob : public QObject
{
    Q_OBJECT
public:
    struct Outcome
    {
        int done = 0;    // records imported or exported
        int skipped = 0; // imported records already in the store
        bool cancelled = false;
    };

    // Reads every line first (the whole file is checked before anything is stored), then stores the
    // records in batches of RecordFile::kBatchSize, embedding their contents again.
    static TransferJob *startImport(Memory *memory, const QString &file, QObject *parent);
    // Every record of the store, the private ones too (the curator's backup), then the damaged ones.
    static TransferJob *startExport(Memory *memory, const QString &file, QObject *parent);

    bool isImport() const;
    QString file() const;
    bool isRunning() const;
    void cancel();
    // Blocks until the worker has stopped: for shutting down only.
    void waitForFinished();

Q_SIGNALS:
    // `total` is 0 while it is not known yet.
    void progress(int done, int total, const QString &step);
    // The outcome, or the failure's message (what was done before it included).
    void finished(const mneme::studio::TransferJob::Outcome &outcome, const QString &error);

private:
    TransferJob(bool import, const QString &file, QObject *parent);
    void watch(const QFuture<Outcome> &future);

    bool m_import;
    QString m_file;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    QFutureWatcher<Outcome> m_watcher;
};

} // namespace mneme::studio
