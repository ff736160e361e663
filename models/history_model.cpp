#include <mneme/models/history_model.h>

#include "models/future_watch_p.h"
#include "models/refresher_p.h"
#include <mneme/core/json.h>
#include <mneme/memory/memory.h>

#include <QLocale>
#include <QPointer>

namespace mneme {

struct HistoryModel::State
{
    QPointer<Memory> memory;
    ReadContext reader;
    QString recordId;
    QList<HistoryEntry> rows;
    bool loading = false;
    QString lastError;
    quint64 generation = 0;
    models::Refresher *refresher = nullptr;
    QMetaObject::Connection changed;
};

HistoryModel::HistoryModel(QObject *parent) : QAbstractTableModel(parent), d(std::make_unique<State>())
{
    d->refresher = new models::Refresher(this, [this] { load(); });
}

HistoryModel::~HistoryModel() = default;

void HistoryModel::setMemory(Memory *memory)
{
    if (d->memory == memory)
        return;
    QObject::disconnect(d->changed);
    d->memory = memory;
    if (memory)
        d->changed = connect(memory, &Memory::recordsChanged, d->refresher, &models::Refresher::request, Qt::QueuedConnection);
    refresh();
}

Memory *HistoryModel::memory() const { return d->memory; }
ReadContext HistoryModel::reader() const { return d->reader; }
QString HistoryModel::recordId() const { return d->recordId; }
bool HistoryModel::isLoading() const { return d->loading; }
QString HistoryModel::lastError() const { return d->lastError; }

void HistoryModel::setReader(const ReadContext &reader)
{
    if (d->reader == reader)
        return;
    d->reader = reader;
    refresh();
}

void HistoryModel::setRecordId(const QString &id)
{
    if (d->recordId == id)
        return;
    d->recordId = id;
    Q_EMIT recordIdChanged();
    refresh();
}

void HistoryModel::refresh()
{
    d->refresher->cancel();
    load();
}

void HistoryModel::load()
{
    const quint64 generation = ++d->generation;
    if (!d->memory || d->recordId.isEmpty()) {
        beginResetModel();
        d->rows.clear();
        endResetModel();
        d->refresher->finished();
        return;
    }
    QFuture<QList<HistoryEntry>> future;
    try {
        future = d->memory->historyAsync(d->recordId, d->reader);
    } catch (const Error &e) {
        d->lastError = e.message();
        Q_EMIT errorOccurred(d->lastError);
        d->refresher->finished();
        return;
    }
    if (!d->loading) {
        d->loading = true;
        Q_EMIT loadingChanged();
    }
    models::whenFinished(this, future, [this, generation](QFuture<QList<HistoryEntry>> f) {
        if (generation != d->generation)
            return;
        QString error;
        const std::optional<QList<HistoryEntry>> entries = models::resultOf(f, &error);
        beginResetModel();
        d->rows = entries.value_or(QList<HistoryEntry>());
        endResetModel();
        d->loading = false;
        Q_EMIT loadingChanged();
        d->refresher->finished();
        if (!entries && !error.isEmpty()) {
            d->lastError = error;
            Q_EMIT errorOccurred(error);
        } else {
            Q_EMIT loaded();
        }
    });
}

HistoryEntry HistoryModel::entryAt(int row) const
{
    return row >= 0 && row < d->rows.size() ? d->rows[row] : HistoryEntry();
}

int HistoryModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(d->rows.size());
}

int HistoryModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant HistoryModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const HistoryEntry &e = d->rows[index.row()];
    const auto map = [](const Json &j) { return j.is_object() ? toQJson(j).toVariantMap() : QVariantMap(); };
    switch (role) {
    case EventRole:
        return HistoryEntry::eventName(e.event);
    case AtRole:
        return e.at;
    case OldContentRole:
        return e.oldContent;
    case NewContentRole:
        return e.newContent;
    case SeqRole:
        return e.seq;
    case OldRecordRole:
        return map(e.oldRecord);
    case NewRecordRole:
        return map(e.newRecord);
    case Qt::DisplayRole:
    case Qt::AccessibleTextRole:
    case Qt::ToolTipRole:
        switch (index.column()) {
        case EventColumn:
            return HistoryEntry::eventName(e.event);
        case AtColumn:
            return QLocale().toString(e.at.toLocalTime(), QLocale::ShortFormat);
        case OldContentColumn:
            return e.oldContent;
        case NewContentColumn:
            return e.newContent;
        default:
            return {};
        }
    default:
        return {};
    }
}

QVariant HistoryModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || (role != Qt::DisplayRole && role != Qt::AccessibleTextRole))
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case EventColumn:
        return tr("Change");
    case AtColumn:
        return tr("When");
    case OldContentColumn:
        return tr("Before");
    case NewContentColumn:
        return tr("After");
    default:
        return {};
    }
}

QHash<int, QByteArray> HistoryModel::roleNames() const
{
    QHash<int, QByteArray> names = QAbstractTableModel::roleNames();
    names.insert(EventRole, "event");
    names.insert(AtRole, "at");
    names.insert(OldContentRole, "oldContent");
    names.insert(NewContentRole, "newContent");
    names.insert(SeqRole, "seq");
    names.insert(OldRecordRole, "oldRecord");
    names.insert(NewRecordRole, "newRecord");
    return names;
}

} // namespace mneme
