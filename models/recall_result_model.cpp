#include <mneme/models/recall_result_model.h>

#include "models/future_watch_p.h"
#include <mneme/memory/memory.h>

#include <QElapsedTimer>
#include <QLocale>
#include <QPointer>

namespace mneme {

struct RecallResultModel::State
{
    QPointer<Memory> memory;
    QList<MemoryMatch> rows;
    QString query;
    QString lastError;
    bool loading = false;
    double queryTimeMs = 0;
    quint64 generation = 0;
};

RecallResultModel::RecallResultModel(QObject *parent) : QAbstractTableModel(parent), d(std::make_unique<State>()) {}

RecallResultModel::~RecallResultModel() = default;

void RecallResultModel::setMemory(Memory *memory)
{
    if (d->memory == memory)
        return;
    d->memory = memory;
    clear();
}

Memory *RecallResultModel::memory() const { return d->memory; }
QString RecallResultModel::query() const { return d->query; }
bool RecallResultModel::isLoading() const { return d->loading; }
QString RecallResultModel::lastError() const { return d->lastError; }
double RecallResultModel::queryTimeMs() const { return d->queryTimeMs; }

void RecallResultModel::setLoading(bool loading)
{
    if (d->loading == loading)
        return;
    d->loading = loading;
    Q_EMIT loadingChanged();
}

void RecallResultModel::clear()
{
    ++d->generation;
    beginResetModel();
    d->rows.clear();
    d->query.clear();
    endResetModel();
    setLoading(false);
}

void RecallResultModel::search(const QString &query, const RecallOptions &options)
{
    ++d->generation;
    if (!d->memory) {
        d->lastError = tr("no memory is open; open a store first");
        Q_EMIT errorOccurred(d->lastError);
        return;
    }
    QFuture<QList<MemoryMatch>> future;
    try {
        future = d->memory->recallAsync(query, options);
    } catch (const Error &e) {
        d->lastError = e.message();
        Q_EMIT errorOccurred(d->lastError);
        return;
    }
    setLoading(true);
    const quint64 generation = d->generation;
    auto clock = std::make_shared<QElapsedTimer>();
    clock->start();
    models::whenFinished(this, future, [this, generation, query, clock](QFuture<QList<MemoryMatch>> f) {
        if (generation != d->generation)
            return;
        QString error;
        const std::optional<QList<MemoryMatch>> matches = models::resultOf(f, &error);
        setLoading(false);
        if (!matches) {
            d->lastError = error.isEmpty() ? tr("the recall was cancelled") : error;
            Q_EMIT errorOccurred(d->lastError);
            return;
        }
        beginResetModel();
        d->rows = *matches;
        d->query = query;
        endResetModel();
        d->queryTimeMs = double(clock->nsecsElapsed()) / 1e6;
        Q_EMIT finished();
    });
}

void RecallResultModel::search(const QString &query, int limit, const QString &scope, const QString &source, bool asCurator)
{
    RecallOptions o;
    o.limit = limit;
    o.depth = RecallDepth::Shallow;
    if (!scope.trimmed().isEmpty())
        o.scopes = {scope.trimmed()};
    if (!source.trimmed().isEmpty())
        o.onlySource = source.trimmed();
    if (asCurator)
        o.reader = ReadContext::asCurator();
    search(query, o);
}

MemoryMatch RecallResultModel::matchAt(int row) const
{
    return row >= 0 && row < d->rows.size() ? d->rows[row] : MemoryMatch();
}

QVariantMap RecallResultModel::get(int row) const
{
    QVariantMap out;
    if (row < 0 || row >= d->rows.size())
        return out;
    const QHash<int, QByteArray> names = roleNames();
    for (auto it = names.begin(); it != names.end(); ++it)
        if (it.key() >= Qt::UserRole)
            out.insert(QString::fromLatin1(it.value()), data(index(row, 0), it.key()));
    return out;
}

int RecallResultModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(d->rows.size());
}

int RecallResultModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RecallResultModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const MemoryMatch &m = d->rows[index.row()];
    const MatchSignals &s = m.signalValues;
    if (role >= RecordRoles::RecordIdRole && role < RecordRoles::FirstUnusedRole)
        return RecordRoles::value(m.record, role);
    switch (role) {
    case ScoreRole:
        return m.score;
    case SemanticRole:
        return s.semantic;
    case KeywordRole:
        return s.keyword;
    case RecencyRole:
        return s.recency;
    case ImportanceSignalRole:
        return s.importance;
    case KeywordEvidenceRole:
        return s.keywordEvidence;
    case RelevanceRole:
        return s.relevance;
    case ReasonsRole:
        return m.matchReasons;
    case EvidenceGapsRole:
        return m.evidenceGaps;
    default:
        break;
    }
    const QLocale locale;
    const auto number = [&](double v) { return locale.toString(v, 'f', 2); };
    if (role == Qt::DisplayRole || role == Qt::AccessibleTextRole) {
        switch (index.column()) {
        case ScoreColumn:
            return number(m.score);
        case ContentColumn:
            return m.record.content;
        case SemanticColumn:
            return number(s.semantic);
        case KeywordColumn:
            return number(s.keyword);
        case RecencyColumn:
            return number(s.recency);
        case ImportanceColumn:
            return number(s.importance);
        case ReasonsColumn:
            return m.matchReasons.join(QLatin1String(", "));
        default:
            return {};
        }
    }
    // The value a bar of a signal column shows (0..1), for a delegate that draws one.
    if (role == Qt::UserRole) {
        switch (index.column()) {
        case ScoreColumn:
            return m.score;
        case SemanticColumn:
            return s.semantic;
        case KeywordColumn:
            return s.keyword;
        case RecencyColumn:
            return s.recency;
        case ImportanceColumn:
            return s.importance;
        default:
            return {};
        }
    }
    if (role == Qt::ToolTipRole && index.column() == ContentColumn)
        return m.record.content;
    return {};
}

QVariant RecallResultModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || (role != Qt::DisplayRole && role != Qt::AccessibleTextRole))
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case ScoreColumn:
        return tr("Score");
    case ContentColumn:
        return tr("Content");
    case SemanticColumn:
        return tr("Semantic");
    case KeywordColumn:
        return tr("Keyword");
    case RecencyColumn:
        return tr("Recency");
    case ImportanceColumn:
        return tr("Importance");
    case ReasonsColumn:
        return tr("Reasons");
    default:
        return {};
    }
}

QHash<int, QByteArray> RecallResultModel::roleNames() const
{
    QHash<int, QByteArray> names = QAbstractTableModel::roleNames();
    names.insert(RecordRoles::names());
    names.insert(ScoreRole, "score");
    names.insert(SemanticRole, "semantic");
    names.insert(KeywordRole, "keyword");
    names.insert(RecencyRole, "recency");
    names.insert(ImportanceSignalRole, "importanceSignal");
    names.insert(KeywordEvidenceRole, "keywordEvidence");
    names.insert(RelevanceRole, "relevance");
    names.insert(ReasonsRole, "reasons");
    names.insert(EvidenceGapsRole, "evidenceGaps");
    return names;
}

} // namespace mneme
