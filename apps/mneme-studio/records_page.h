#pragma once

#include <mneme/core/memory_record.h>

#include <QFuture>
#include <QList>
#include <QStringList>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QSplitter;
class QTableView;
class QTimer;
class QTreeView;

namespace mneme {
class Memory;
class RecordListModel;
class ScopeTreeModel;
} // namespace mneme

namespace mneme::studio {

class RecordDetails;

// The store browsed: the scope tree (ScopeTreeModel) on the left, the records of the chosen scope
// (RecordListModel: sorted by a click on a column, filtered by category, source and text) in the
// middle, the chosen record's details and history on the right. Keeps the window's undo stack: the
// writes this page made, newest last, undone one at a time (a forget by Memory::undoAsync, which
// brings the record back with its id and times; an update by writing back the fields it had).
class RecordsPage : public QWidget
{
    Q_OBJECT
public:
    explicit RecordsPage(QWidget *parent = nullptr);

    void setMemory(Memory *memory);

    bool canUndo() const;
    // Reverts the newest write still on the undo stack (Memory::undoAsync).
    void undoLastWrite();

    ScopeTreeModel *scopeModel() const;
    RecordListModel *recordModel() const;
    QTreeView *scopeView() const;
    QTableView *recordView() const;
    RecordDetails *details() const;
    QLineEdit *textFilter() const;
    QComboBox *categoryFilter() const;
    QLineEdit *sourceFilter() const;

Q_SIGNALS:
    void canUndoChanged(bool canUndo);
    void status(const QString &message);
    void failed(const QString &message);

private:
    struct Write
    {
        MemoryRecord before;
        bool forgotten = false;
    };
    void onWritten(const MemoryRecord &before, const QString &what);
    QFuture<MemoryRecord> revert(const Write &write);
    void chooseScope(const QModelIndex &index);
    void showCurrent();
    void syncDetails();
    void loadCategories();
    void updateCount();

    Memory *m_memory = nullptr;
    QList<Write> m_undo;
    QString m_pendingSelection; // a restored record to choose once the table shows it
    ScopeTreeModel *m_scopes;
    RecordListModel *m_records;
    QTreeView *m_scopeView;
    QLineEdit *m_text;
    QComboBox *m_category;
    QLineEdit *m_source;
    QLabel *m_count;
    QTableView *m_table;
    RecordDetails *m_details;
    QTimer *m_textDelay;
    QTimer *m_categoriesDelay;
};

} // namespace mneme::studio
