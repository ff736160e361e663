#pragma once

#include <mneme/memory/memory_match.h>
#include <mneme/memory/memory_options.h>
#include <mneme/models/export.h>
#include <mneme/models/record_roles.h>

#include <QAbstractTableModel>
#include <QVariantMap>
#include <memory>

namespace mneme {

class Memory;

// The matches of one recall, best first: the record's fields (RecordRoles), the score, each signal
// (0..1) and the match reasons as roles, and as columns for a QTableView. search() runs the recall on
// the memory's reader threads (Memory::recallAsync); the rows are replaced when it finishes. A newer
// search supersedes one still running.
class MNEME_MODELS_EXPORT RecallResultModel : public QAbstractTableModel
{
    Q_OBJECT
    Q_PROPERTY(QString query READ query NOTIFY finished)
    Q_PROPERTY(bool loading READ isLoading NOTIFY loadingChanged)
    Q_PROPERTY(QString lastError READ lastError NOTIFY errorOccurred)
    Q_PROPERTY(double queryTimeMs READ queryTimeMs NOTIFY finished)
public:
    enum Column {
        ScoreColumn,
        ContentColumn,
        SemanticColumn,
        KeywordColumn,
        RecencyColumn,
        ImportanceColumn,
        ReasonsColumn,
        ColumnCount
    };
    Q_ENUM(Column)
    enum Role {
        ScoreRole = RecordRoles::FirstUnusedRole, // "score"
        SemanticRole,                             // "semantic"
        KeywordRole,                              // "keyword"
        RecencyRole,                              // "recency"
        ImportanceSignalRole,                     // "importanceSignal" (the signal, with any access boost)
        KeywordEvidenceRole,                      // "keywordEvidence"
        RelevanceRole,                            // "relevance"
        ReasonsRole,                              // "reasons": QStringList
        EvidenceGapsRole,                         // "evidenceGaps": QStringList
    };
    Q_ENUM(Role)

    explicit RecallResultModel(QObject *parent = nullptr);
    ~RecallResultModel() override;

    // The memory searched (null: none; the rows are cleared). It must outlive the model or be reset
    // here first.
    void setMemory(Memory *memory);
    Memory *memory() const;

    // Runs a recall; finished() or errorOccurred() follows. Bad options fail at once (errorOccurred).
    void search(const QString &query, const RecallOptions &options = {});
    // From QML: a shallow recall of at most `limit` matches in `scope` (relative to the root; empty:
    // everywhere) by `source` (empty: any), as the anonymous reader unless `asCurator`.
    Q_INVOKABLE void search(const QString &query, int limit, const QString &scope = {}, const QString &source = {},
                            bool asCurator = false);
    Q_INVOKABLE void clear();

    QString query() const;
    bool isLoading() const;
    QString lastError() const;
    double queryTimeMs() const;
    MemoryMatch matchAt(int row) const;
    // The match of a row as role name -> value, for QML.
    Q_INVOKABLE QVariantMap get(int row) const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

Q_SIGNALS:
    void loadingChanged();
    void finished();
    void errorOccurred(const QString &message);

private:
    void setLoading(bool loading);
    struct State;
    std::unique_ptr<State> d;
};

} // namespace mneme
