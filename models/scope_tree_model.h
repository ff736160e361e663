#pragma once

#include <mneme/memory/memory_options.h>
#include <mneme/models/export.h>

#include <QAbstractItemModel>
#include <QPointer>
#include <memory>

namespace mneme {

class Memory;
struct ScopeNode;

// The scope tree of a Memory with record counts, for a QTreeView or a QML TreeView: one top-level
// row, the memory's root scope ("/" unless a root scope is configured), and below it the scopes that
// hold records. Children are read when first asked for (canFetchMore / fetchMore: a view asks when a
// row is expanded), with one level ahead so that a row knows whether it can be expanded. Every read
// runs on the memory's reader threads; nothing waits on the model's thread.
//
// Live: after each write (Memory::recordsChanged) the counts and children of every row read so far
// are read again, folded so that a bulk import refreshes a few times a second at most; rows are
// updated, inserted and removed in place, so expansion and selection survive.
//
// Columns: 0 the scope's name (its last path segment; the full path for the top row), 1 its record
// count (including sub-scopes).
class MNEME_MODELS_EXPORT ScopeTreeModel : public QAbstractItemModel
{
    Q_OBJECT
    Q_PROPERTY(bool loading READ isLoading NOTIFY loadingChanged)
    Q_PROPERTY(QString lastError READ lastError NOTIFY errorOccurred)
public:
    enum Column {
        NameColumn,
        CountColumn,
        ColumnCount
    };
    enum Role {
        PathRole = Qt::UserRole + 1, // "path": the full scope path
        NameRole,                    // "name": the last segment ("/" for the root)
        RecordCountRole,             // "recordCount": records in the scope and below
    };
    Q_ENUM(Role)

    explicit ScopeTreeModel(QObject *parent = nullptr);
    ~ScopeTreeModel() override;

    // The memory shown (null: none). The memory must outlive the model or be reset here first.
    void setMemory(Memory *memory);
    Memory *memory() const;
    // Whose view of the store the tree shows (counts and scopes of the records `reader` may see;
    // default: the anonymous reader, shared records only). Reloads.
    void setReader(const ReadContext &reader);
    ReadContext reader() const;

    // The index of `path` when its row has been read; invalid otherwise.
    Q_INVOKABLE QModelIndex indexOfPath(const QString &path) const;
    Q_INVOKABLE QString pathAt(const QModelIndex &index) const;
    // Reads everything shown again now (also done on every write).
    Q_INVOKABLE void refresh();

    bool isLoading() const;
    QString lastError() const;

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    bool hasChildren(const QModelIndex &parent = {}) const override;
    bool canFetchMore(const QModelIndex &parent) const override;
    void fetchMore(const QModelIndex &parent) override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

Q_SIGNALS:
    void loadingChanged();
    // A read failed; the rows keep what they showed.
    void errorOccurred(const QString &message);
    // A row's children were read for the first time (after fetchMore, or the top row after setMemory).
    void childrenLoaded(const QModelIndex &parent);

private:
    struct Node;
    Node *nodeOf(const QModelIndex &index) const;
    QModelIndex indexOf(const Node *node, int column = 0) const;
    Node *find(const QString &path) const;
    void load(const QString &path);
    void apply(const ScopeNode &tree);
    void setChildren(Node *node, const ScopeNode &tree);
    void startRefresh();
    void readDone();
    void fail(const QString &message);

    struct State;
    std::unique_ptr<State> d;
};

} // namespace mneme
