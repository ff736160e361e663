#pragma once

#include <mneme/core/memory_record.h>

#include <QWidget>

class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTableView;

namespace mneme {
class HistoryModel;
class Memory;
} // namespace mneme

namespace mneme::studio {

// The record chosen in the records table: its fields, editable (content, scope, categories,
// importance), Save, Forget and Undo Last Change, and its history (HistoryModel) below. Every write
// goes through the async Memory calls; the pane reports each one it made with `written` so the
// window can undo it later, and every failure with `failed`.
class RecordDetails : public QWidget
{
    Q_OBJECT
public:
    explicit RecordDetails(QWidget *parent = nullptr);

    void setMemory(Memory *memory);
    // Shows `record`; while its fields have unsaved edits, a newer version of the same record only
    // refreshes the read-only parts.
    void showRecord(const MemoryRecord &record);
    void clear();
    QString recordId() const;
    bool hasUnsavedEdits() const;

    void save();
    void forget();
    void undoLastChange();

Q_SIGNALS:
    // A write this pane made: "updated" or "forgotten", with the record as it was before.
    void written(const mneme::MemoryRecord &before, const QString &what);
    void failed(const QString &message);

private:
    void fill(const MemoryRecord &record);
    void updateButtons();
    void setBusy(bool busy);
    // Starts a write (start() returns its future; an Error it throws is reported), marks the panel
    // busy until it ends, then reports a failure or calls done(result) on the GUI thread.
    template<typename Start, typename Done>
    void runWrite(Start start, Done done);

    Memory *m_memory = nullptr;
    MemoryRecord m_record;
    bool m_busy = false;
    bool m_filling = false;
    bool m_dirty = false;
    QLabel *m_title;
    QLabel *m_facts;
    QPlainTextEdit *m_content;
    QLineEdit *m_scope;
    QLineEdit *m_categories;
    QDoubleSpinBox *m_importance;
    QPushButton *m_save;
    QPushButton *m_revert;
    QPushButton *m_forget;
    QPushButton *m_undo;
    HistoryModel *m_history;
    QTableView *m_historyView;
};

} // namespace mneme::studio
