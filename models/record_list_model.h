#pragma once

#include <mneme/core/memory_record.h>
#include <mneme/memory/memory_options.h>
#include <mneme/models/export.h>

#include <QAbstractTableModel>
#include <QStringList>
#include <QVariantMap>
#include <memory>

namespace mneme {

class Memory;

// The records of a Memory as a table, for a QTableView or a QML TableView / ListView (every field is
// also a role: RecordRoles). Rows are read a page at a time as a view scrolls (canFetchMore /
// fetchMore), so a store of a million records shows its first rows at once and never loads them all.
// Filters (scopes, categories, source, a text the content contains) and the sort order are applied by
// the store (Memory::searchRecords). Every read runs on the memory's reader threads.
//
// Live: after each write (Memory::recordsChanged) the rows read so far are read again, folded so that
// a bulk import refreshes a few times a second at most; rows that stay keep their place (new records
// are inserted, deleted ones removed), so a view keeps its selection and scroll position.
class MNEME_MODELS_EXPORT RecordListModel : public QAbstractTableModel
{
    Q_OBJECT
    Q_PROPERTY(QStringList scopes READ scopes WRITE setScopes NOTIFY queryChanged)
    Q_PROPERTY(QStringList categories READ categories WRITE setCategories NOTIFY queryChanged)
    Q_PROPERTY(QString source READ source WRITE setSource NOTIFY queryChanged)
    Q_PROPERTY(QString text READ text WRITE setText NOTIFY queryChanged)
    Q_PROPERTY(int totalCount READ totalCount NOTIFY totalCountChanged)
    Q_PROPERTY(bool loading READ isLoading NOTIFY loadingChanged)
    Q_PROPERTY(QString lastError READ lastError NOTIFY errorOccurred)
public:
    enum Column {
        ContentColumn,
        ScopeColumn,
        CategoriesColumn,
        ImportanceColumn,
        SourceColumn,
        CreatedColumn,
        UpdatedColumn,
        ColumnCount
    };
    Q_ENUM(Column)

    explicit RecordListModel(QObject *parent = nullptr);
    ~RecordListModel() override;

    // The memory shown (null: none). The memory must outlive the model or be reset here first.
    void setMemory(Memory *memory);
    Memory *memory() const;
    // Whose view of the store the table shows (default: the anonymous reader). Reloads.
    void setReader(const ReadContext &reader);
    ReadContext reader() const;

    // Filters, relative to the memory's root scope as Memory::searchRecords takes them; each reloads.
    QStringList scopes() const;
    void setScopes(const QStringList &scopes);
    QStringList categories() const;
    void setCategories(const QStringList &categories);
    QString source() const;
    void setSource(const QString &source);
    QString text() const;
    void setText(const QString &text);
    RecordOrder order() const;
    // Rows read by one fetchMore() (1..10,000; default 200).
    int pageSize() const;
    void setPageSize(int rows);

    // Records the filters select in the store (-1 until counted), of which rowCount() are read.
    int totalCount() const;
    bool isLoading() const;
    QString lastError() const;

    // The record of a row (an empty record for a row that does not exist).
    MemoryRecord recordAt(int row) const;
    // The row of the record with this id among those read, or -1.
    Q_INVOKABLE int rowOf(const QString &id) const;
    // The record of a row as role name -> value, for QML.
    Q_INVOKABLE QVariantMap get(int row) const;
    // Reads everything shown again (also done on every write).
    Q_INVOKABLE void refresh();

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;
    bool canFetchMore(const QModelIndex &parent) const override;
    void fetchMore(const QModelIndex &parent) override;
    // Every column but the categories sorts (by the store); sorting by another column does nothing.
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

Q_SIGNALS:
    void queryChanged();
    void totalCountChanged();
    void loadingChanged();
    // A read failed; the rows keep what they showed.
    void errorOccurred(const QString &message);
    // A page (or a refresh) was applied.
    void pageLoaded();

private:
    void reload();
    void count();
    void startRefresh();
    void applyRefresh(const QList<MemoryRecord> &fresh, int asked);
    void setFetching(bool fetching);
    void fail(const QString &message);
    RecordQuery query(int limit, int offset) const;

    struct State;
    std::unique_ptr<State> d;
};

} // namespace mneme
