#pragma once

#include <mneme/core/history_entry.h>
#include <mneme/memory/memory_options.h>
#include <mneme/models/export.h>

#include <QAbstractTableModel>
#include <memory>

namespace mneme {

class Memory;

// Every change of one record, oldest first (Memory::historyAsync): its event (ADD, UPDATE, DELETE),
// when, and the content before and after. Read again after each write while a record is shown.
class MNEME_MODELS_EXPORT HistoryModel : public QAbstractTableModel
{
    Q_OBJECT
    Q_PROPERTY(QString recordId READ recordId WRITE setRecordId NOTIFY recordIdChanged)
    Q_PROPERTY(bool loading READ isLoading NOTIFY loadingChanged)
    Q_PROPERTY(QString lastError READ lastError NOTIFY errorOccurred)
public:
    enum Column {
        EventColumn,
        AtColumn,
        OldContentColumn,
        NewContentColumn,
        ColumnCount
    };
    Q_ENUM(Column)
    enum Role {
        EventRole = Qt::UserRole + 1, // "event": "ADD", "UPDATE", "DELETE"
        AtRole,                       // "at": UTC QDateTime
        OldContentRole,               // "oldContent"
        NewContentRole,               // "newContent"
        SeqRole,                      // "seq"
        OldRecordRole,                // "oldRecord": QVariantMap (empty for an ADD)
        NewRecordRole,                // "newRecord": QVariantMap (empty for a DELETE)
    };
    Q_ENUM(Role)

    explicit HistoryModel(QObject *parent = nullptr);
    ~HistoryModel() override;

    void setMemory(Memory *memory);
    Memory *memory() const;
    void setReader(const ReadContext &reader);
    ReadContext reader() const;
    // The record shown (empty: none).
    QString recordId() const;
    void setRecordId(const QString &id);
    Q_INVOKABLE void refresh();

    bool isLoading() const;
    QString lastError() const;
    HistoryEntry entryAt(int row) const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

Q_SIGNALS:
    void recordIdChanged();
    void loadingChanged();
    void loaded();
    // The history could not be read (the record was deleted by another reader's view, or is not visible).
    void errorOccurred(const QString &message);

private:
    void load();
    struct State;
    std::unique_ptr<State> d;
};

} // namespace mneme
