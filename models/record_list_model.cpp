#include <mneme/models/record_list_model.h>

#include "models/future_watch_p.h"
#include "models/refresher_p.h"
#include <mneme/memory/memory.h>
#include <mneme/models/record_roles.h>

#include <QLocale>
#include <QPointer>

namespace mneme {

namespace {

constexpr int kMaxPage = 10000; // Memory::searchRecords' largest page

std::optional<RecordOrder::Field> fieldOf(int column)
{
    switch (column) {
    case RecordListModel::ContentColumn:
        return RecordOrder::Field::Content;
    case RecordListModel::ScopeColumn:
        return RecordOrder::Field::Scope;
    case RecordListModel::ImportanceColumn:
        return RecordOrder::Field::Importance;
    case RecordListModel::SourceColumn:
        return RecordOrder::Field::Source;
    case RecordListModel::CreatedColumn:
        return RecordOrder::Field::CreatedAt;
    case RecordListModel::UpdatedColumn:
        return RecordOrder::Field::UpdatedAt;
    default:
        return std::nullopt;
    }
}

} // namespace

struct RecordListModel::State
{
    QPointer<Memory> memory;
    ReadContext reader;
    QStringList scopes, categories;
    QString source, text;
    RecordOrder order;
    int pageSize = 200;
    QList<MemoryRecord> rows;
    int total = -1;
    bool exhausted = false; // the last page read was short: nothing more to fetch
    bool fetching = false;  // a page or a refresh is being read
    quint64 generation = 0; // bumped by every reload: reads of an older query are dropped
    models::Refresher *refresher = nullptr;
    QMetaObject::Connection changed;
    QString lastError;
};

RecordListModel::RecordListModel(QObject *parent) : QAbstractTableModel(parent), d(std::make_unique<State>())
{
    d->refresher = new models::Refresher(this, [this] { startRefresh(); });
}

RecordListModel::~RecordListModel() = default;

void RecordListModel::setMemory(Memory *memory)
{
    if (d->memory == memory && memory)
        return;
    QObject::disconnect(d->changed);
    d->memory = memory;
    if (memory)
        d->changed = connect(memory, &Memory::recordsChanged, d->refresher, &models::Refresher::request, Qt::QueuedConnection);
    reload();
}

Memory *RecordListModel::memory() const { return d->memory; }

void RecordListModel::setReader(const ReadContext &reader)
{
    if (d->reader == reader)
        return;
    d->reader = reader;
    reload();
}

ReadContext RecordListModel::reader() const { return d->reader; }
QStringList RecordListModel::scopes() const { return d->scopes; }
QStringList RecordListModel::categories() const { return d->categories; }
QString RecordListModel::source() const { return d->source; }
QString RecordListModel::text() const { return d->text; }
RecordOrder RecordListModel::order() const { return d->order; }
int RecordListModel::pageSize() const { return d->pageSize; }
int RecordListModel::totalCount() const { return d->total; }
bool RecordListModel::isLoading() const { return d->fetching; }
QString RecordListModel::lastError() const { return d->lastError; }

void RecordListModel::setScopes(const QStringList &scopes)
{
    if (d->scopes == scopes)
        return;
    d->scopes = scopes;
    Q_EMIT queryChanged();
    reload();
}

void RecordListModel::setCategories(const QStringList &categories)
{
    if (d->categories == categories)
        return;
    d->categories = categories;
    Q_EMIT queryChanged();
    reload();
}

void RecordListModel::setSource(const QString &source)
{
    if (d->source == source)
        return;
    d->source = source;
    Q_EMIT queryChanged();
    reload();
}

void RecordListModel::setText(const QString &text)
{
    if (d->text == text)
        return;
    d->text = text;
    Q_EMIT queryChanged();
    reload();
}

void RecordListModel::setPageSize(int rows)
{
    d->pageSize = std::clamp(rows, 1, kMaxPage);
}

RecordQuery RecordListModel::query(int limit, int offset) const
{
    RecordQuery q;
    q.scopes = d->scopes;
    q.categories = d->categories;
    q.source = d->source;
    q.text = d->text;
    q.order = d->order;
    q.limit = limit;
    q.offset = offset;
    return q;
}

void RecordListModel::setFetching(bool fetching)
{
    if (d->fetching == fetching)
        return;
    d->fetching = fetching;
    Q_EMIT loadingChanged();
}

void RecordListModel::fail(const QString &message)
{
    d->lastError = message;
    Q_EMIT errorOccurred(message);
}

void RecordListModel::reload()
{
    ++d->generation; // reads under way are dropped when they finish
    d->refresher->cancel();
    setFetching(false);
    beginResetModel();
    d->rows.clear();
    d->exhausted = !d->memory;
    endResetModel(); // a view (or QAbstractItemModelTester) may fetch the first page here
    if (d->total != -1) {
        d->total = -1;
        Q_EMIT totalCountChanged();
    }
    if (!d->memory)
        return;
    fetchMore(QModelIndex()); // the first page before the count, which reads every selected record
    count();
}

void RecordListModel::count()
{
    QFuture<int> future;
    try {
        future = d->memory->countRecordsAsync(query(1, 0), d->reader);
    } catch (const Error &e) {
        fail(e.message());
        return;
    }
    const quint64 generation = d->generation;
    models::whenFinished(this, future, [this, generation](QFuture<int> f) {
        if (generation != d->generation)
            return;
        QString error;
        if (const std::optional<int> n = models::resultOf(f, &error)) {
            if (*n != d->total) {
                d->total = *n;
                Q_EMIT totalCountChanged();
            }
        } else if (!error.isEmpty()) {
            fail(error);
        }
    });
}

bool RecordListModel::canFetchMore(const QModelIndex &parent) const
{
    return !parent.isValid() && d->memory && !d->exhausted && !d->fetching;
}

void RecordListModel::fetchMore(const QModelIndex &parent)
{
    if (!canFetchMore(parent))
        return;
    QFuture<QList<MemoryRecord>> future;
    try {
        future = d->memory->searchRecordsAsync(query(d->pageSize, int(d->rows.size())), d->reader);
    } catch (const Error &e) {
        d->exhausted = true;
        fail(e.message());
        return;
    }
    setFetching(true);
    const quint64 generation = d->generation;
    const int asked = d->pageSize;
    models::whenFinished(this, future, [this, generation, asked](QFuture<QList<MemoryRecord>> f) {
        if (generation != d->generation)
            return;
        QString error;
        const std::optional<QList<MemoryRecord>> page = models::resultOf(f, &error);
        if (page && !page->isEmpty()) {
            beginInsertRows(QModelIndex(), int(d->rows.size()), int(d->rows.size() + page->size()) - 1);
            d->rows.append(*page);
            endInsertRows();
        }
        d->exhausted = !page || page->size() < asked;
        if (!page && !error.isEmpty())
            fail(error);
        setFetching(false);
        Q_EMIT pageLoaded();
    });
}

void RecordListModel::refresh()
{
    d->refresher->request();
}

void RecordListModel::startRefresh()
{
    if (!d->memory) {
        d->refresher->finished();
        return;
    }
    // The rows read so far (one page at least, at most the largest page: beyond it the view fetches
    // again), read again in one query.
    const int asked = std::clamp(int(d->rows.size()), d->pageSize, kMaxPage);
    QFuture<QList<MemoryRecord>> future;
    try {
        future = d->memory->searchRecordsAsync(query(asked, 0), d->reader);
    } catch (const Error &e) {
        fail(e.message());
        d->refresher->finished();
        return;
    }
    count();
    setFetching(true);
    const quint64 generation = d->generation;
    models::whenFinished(this, future, [this, generation, asked](QFuture<QList<MemoryRecord>> f) {
        if (generation != d->generation)
            return; // a reload started meanwhile: it reads everything anew
        QString error;
        if (const std::optional<QList<MemoryRecord>> fresh = models::resultOf(f, &error))
            applyRefresh(*fresh, asked);
        else if (!error.isEmpty())
            fail(error);
        setFetching(false);
        d->refresher->finished();
        Q_EMIT pageLoaded();
    });
}

void RecordListModel::applyRefresh(const QList<MemoryRecord> &fresh, int asked)
{
    // The rows both lists begin and end with stay; what lies between is replaced (new records are
    // inserted, deleted ones removed), so a view keeps its selection on the rows that stay.
    const int oldSize = int(d->rows.size());
    const int newSize = int(fresh.size());
    int head = 0;
    while (head < oldSize && head < newSize && d->rows[head].id == fresh[head].id)
        ++head;
    int tail = 0;
    while (tail < oldSize - head && tail < newSize - head && d->rows[oldSize - 1 - tail].id == fresh[newSize - 1 - tail].id)
        ++tail;
    if (oldSize - tail > head) {
        beginRemoveRows(QModelIndex(), head, oldSize - tail - 1);
        d->rows.remove(head, oldSize - tail - head);
        endRemoveRows();
    }
    if (newSize - tail > head) {
        beginInsertRows(QModelIndex(), head, newSize - tail - 1);
        for (int i = head; i < newSize - tail; ++i)
            d->rows.insert(i, fresh[i]);
        endInsertRows();
    }
    // The rows that stayed may have been edited.
    for (int i = 0; i < newSize; ++i) {
        if (d->rows[i].updatedAt != fresh[i].updatedAt || d->rows[i].accessCount != fresh[i].accessCount
            || d->rows[i].content != fresh[i].content || d->rows[i].scope != fresh[i].scope) {
            d->rows[i] = fresh[i];
            Q_EMIT dataChanged(index(i, 0), index(i, ColumnCount - 1));
        }
    }
    d->exhausted = newSize < asked;
}

MemoryRecord RecordListModel::recordAt(int row) const
{
    return row >= 0 && row < d->rows.size() ? d->rows[row] : MemoryRecord();
}

int RecordListModel::rowOf(const QString &id) const
{
    for (int i = 0; i < d->rows.size(); ++i)
        if (d->rows[i].id == id)
            return i;
    return -1;
}

QVariantMap RecordListModel::get(int row) const
{
    QVariantMap out;
    if (row < 0 || row >= d->rows.size())
        return out;
    const QHash<int, QByteArray> names = RecordRoles::names();
    for (auto it = names.begin(); it != names.end(); ++it)
        out.insert(QString::fromLatin1(it.value()), RecordRoles::value(d->rows[row], it.key()));
    return out;
}

int RecordListModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(d->rows.size());
}

int RecordListModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RecordListModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const MemoryRecord &r = d->rows[index.row()];
    if (role >= RecordRoles::RecordIdRole && role < RecordRoles::FirstUnusedRole)
        return RecordRoles::value(r, role);
    const QLocale locale;
    if (role == Qt::DisplayRole || role == Qt::AccessibleTextRole) {
        switch (index.column()) {
        case ContentColumn:
            return r.content;
        case ScopeColumn:
            return r.scope;
        case CategoriesColumn:
            return r.categories.join(QLatin1String(", "));
        case ImportanceColumn:
            return locale.toString(r.importance, 'f', 2);
        case SourceColumn:
            return r.isPrivate ? tr("%1 (private)").arg(r.source) : r.source;
        case CreatedColumn:
            return locale.toString(r.createdAt.toLocalTime(), QLocale::ShortFormat);
        case UpdatedColumn:
            return locale.toString(r.updatedAt.toLocalTime(), QLocale::ShortFormat);
        default:
            return {};
        }
    }
    if (role == Qt::ToolTipRole && index.column() == ContentColumn)
        return r.content;
    if (role == Qt::TextAlignmentRole && index.column() == ImportanceColumn)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant RecordListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || (role != Qt::DisplayRole && role != Qt::AccessibleTextRole))
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case ContentColumn:
        return tr("Content");
    case ScopeColumn:
        return tr("Scope");
    case CategoriesColumn:
        return tr("Categories");
    case ImportanceColumn:
        return tr("Importance");
    case SourceColumn:
        return tr("Source");
    case CreatedColumn:
        return tr("Created");
    case UpdatedColumn:
        return tr("Updated");
    default:
        return {};
    }
}

QHash<int, QByteArray> RecordListModel::roleNames() const
{
    QHash<int, QByteArray> names = QAbstractTableModel::roleNames();
    names.insert(RecordRoles::names());
    return names;
}

void RecordListModel::sort(int column, Qt::SortOrder order)
{
    const std::optional<RecordOrder::Field> field = fieldOf(column);
    if (!field)
        return;
    RecordOrder wanted;
    wanted.field = *field;
    wanted.descending = order == Qt::DescendingOrder;
    if (wanted == d->order)
        return;
    d->order = wanted;
    Q_EMIT queryChanged();
    reload();
}

} // namespace mneme
