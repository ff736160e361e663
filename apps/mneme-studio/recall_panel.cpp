#include "recall_panel.h"

#include "counted.h"
#include "signal_bar_delegate.h"
#include "store_session.h"

#include <mneme/memory/memory.h>
#include <mneme/models/recall_result_model.h>

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

namespace mneme::studio {

RecallPanel::RecallPanel(QWidget *parent)
    : QWidget(parent),
      m_results(new RecallResultModel(this)),
      m_query(new QLineEdit(this)),
      m_scope(new QLineEdit(this)),
      m_source(new QLineEdit(this)),
      m_limit(new QSpinBox(this)),
      m_depth(new QComboBox(this)),
      m_run(new QPushButton(tr("&Recall"), this)),
      m_table(new QTableView(this)),
      m_summary(new QLabel(this)),
      m_match(new QPlainTextEdit(this))
{
    m_query->setPlaceholderText(tr("What should the memory recall?"));
    m_query->setAccessibleName(tr("Recall query"));
    m_query->setClearButtonEnabled(true);
    m_scope->setPlaceholderText(tr("/ (the whole store)"));
    m_scope->setAccessibleName(tr("Recall in scope"));
    m_source->setPlaceholderText(tr("any source"));
    m_source->setAccessibleName(tr("Only records of source"));
    m_limit->setRange(1, 100);
    m_limit->setValue(10);
    m_limit->setAccessibleName(tr("Most matches"));
    m_depth->addItem(tr("Deep"), int(RecallDepth::Deep));
    m_depth->addItem(tr("Shallow"), int(RecallDepth::Shallow));
    m_depth->setAccessibleName(tr("Recall depth"));
    m_run->setAccessibleName(tr("Recall"));
    m_run->setDefault(true);

    m_table->setModel(m_results);
    m_table->setAccessibleName(tr("Matches"));
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setWordWrap(false);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
    auto *bars = new SignalBarDelegate(m_table);
    QHeaderView *header = m_table->horizontalHeader();
    for (int column : {RecallResultModel::ScoreColumn, RecallResultModel::SemanticColumn, RecallResultModel::KeywordColumn,
                       RecallResultModel::RecencyColumn, RecallResultModel::ImportanceColumn}) {
        m_table->setItemDelegateForColumn(column, bars);
        m_table->setColumnWidth(column, 110);
    }
    header->setSectionResizeMode(RecallResultModel::ContentColumn, QHeaderView::Stretch);
    header->setSectionResizeMode(RecallResultModel::ReasonsColumn, QHeaderView::ResizeToContents);
    m_summary->setAccessibleName(tr("Recall summary"));
    m_match->setReadOnly(true);
    m_match->setAccessibleName(tr("Chosen match"));
    m_match->setTabChangesFocus(true);
    m_match->setPlaceholderText(tr("Choose a match to read it whole, with why it matched."));

    auto *options = new QHBoxLayout;
    auto *queryLabel = new QLabel(tr("&Query:"), this);
    queryLabel->setBuddy(m_query);
    options->addWidget(queryLabel);
    options->addWidget(m_query, 3);
    auto *scopeLabel = new QLabel(tr("Sc&ope:"), this);
    scopeLabel->setBuddy(m_scope);
    options->addWidget(scopeLabel);
    options->addWidget(m_scope, 1);
    auto *sourceLabel = new QLabel(tr("So&urce:"), this);
    sourceLabel->setBuddy(m_source);
    options->addWidget(sourceLabel);
    options->addWidget(m_source, 1);
    auto *limitLabel = new QLabel(tr("&Matches:"), this);
    limitLabel->setBuddy(m_limit);
    options->addWidget(limitLabel);
    options->addWidget(m_limit);
    options->addWidget(m_depth);
    options->addWidget(m_run);

    auto *splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(m_table);
    splitter->addWidget(m_match);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(options);
    layout->addWidget(m_summary);
    layout->addWidget(splitter, 1);
    setTabOrder(m_query, m_scope);
    setTabOrder(m_scope, m_source);
    setTabOrder(m_source, m_limit);
    setTabOrder(m_limit, m_depth);
    setTabOrder(m_depth, m_run);
    setTabOrder(m_run, m_table);
    setTabOrder(m_table, m_match);

    connect(m_query, &QLineEdit::returnPressed, this, &RecallPanel::recall);
    connect(m_run, &QPushButton::clicked, this, &RecallPanel::recall);
    connect(m_results, &RecallResultModel::finished, this, &RecallPanel::showSummary);
    connect(m_results, &RecallResultModel::loadingChanged, this, &RecallPanel::showSummary);
    connect(m_results, &RecallResultModel::errorOccurred, this, &RecallPanel::failed);
    connect(m_results, &QAbstractItemModel::modelReset, this, &RecallPanel::showMatch);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &RecallPanel::showMatch);
    setMemory(nullptr);
}

void RecallPanel::setMemory(Memory *memory)
{
    m_memory = memory;
    m_results->setMemory(memory);
    m_results->clear();
    setEnabled(memory != nullptr);
    showSummary();
}

void RecallPanel::recall()
{
    if (!m_memory)
        return;
    const QString query = m_query->text().trimmed();
    if (query.isEmpty()) {
        m_summary->setText(tr("Type what to recall, then press Enter."));
        return;
    }
    RecallOptions options;
    options.reader = StoreSession::reader();
    options.limit = m_limit->value();
    options.depth = RecallDepth(m_depth->currentData().toInt());
    const QString scope = m_scope->text().trimmed();
    if (!scope.isEmpty() && scope != QLatin1String("/"))
        options.scopes = QStringList{scope};
    options.onlySource = m_source->text().trimmed();
    m_results->search(query, options);
}

void RecallPanel::showSummary()
{
    if (!m_memory)
        m_summary->setText(tr("Open a store to recall from it."));
    else if (m_results->isLoading())
        m_summary->setText(tr("Recalling…"));
    else if (!m_results->lastError().isEmpty())
        m_summary->setText(m_results->lastError());
    else if (m_results->query().isEmpty())
        m_summary->setText(tr("Type a query and press Enter: each match shows its score and each signal as a bar."));
    else
        m_summary->setText(tr("%1 for “%2” in %3 ms.")
                               .arg(counted(m_results->rowCount(), tr("match"), tr("matches")), m_results->query(), QLocale().toString(m_results->queryTimeMs(), 'f', 0)));
}

void RecallPanel::showMatch()
{
    const QModelIndex current = m_table->currentIndex();
    if (!current.isValid()) {
        m_match->clear();
        return;
    }
    const MemoryMatch m = m_results->matchAt(current.row());
    QString text = m.record.content + QStringLiteral("\n\n");
    text += tr("Scope: %1").arg(m.record.scope) + QLatin1Char('\n');
    if (!m.record.categories.isEmpty())
        text += tr("Categories: %1").arg(m.record.categories.join(QLatin1String(", "))) + QLatin1Char('\n');
    text += tr("Matched by: %1").arg(m.matchReasons.isEmpty() ? tr("nothing named") : m.matchReasons.join(QLatin1String(", "))) + QLatin1Char('\n');
    if (!m.evidenceGaps.isEmpty())
        text += tr("Evidence gaps: %1").arg(m.evidenceGaps.join(QLatin1String("; "))) + QLatin1Char('\n');
    const QLocale locale;
    text += tr("Score %1 · semantic %2 · keyword %3 (evidence %4) · recency %5 · importance %6 · relevance %7")
                .arg(locale.toString(m.score, 'f', 3), locale.toString(m.signalValues.semantic, 'f', 2),
                     locale.toString(m.signalValues.keyword, 'f', 2), locale.toString(m.signalValues.keywordEvidence, 'f', 2),
                     locale.toString(m.signalValues.recency, 'f', 2), locale.toString(m.signalValues.importance, 'f', 2),
                     locale.toString(m.signalValues.relevance, 'f', 2));
    m_match->setPlainText(text);
}

RecallResultModel *RecallPanel::resultModel() const
{
    return m_results;
}

QTableView *RecallPanel::resultView() const
{
    return m_table;
}

QLineEdit *RecallPanel::queryEdit() const
{
    return m_query;
}

QLineEdit *RecallPanel::scopeEdit() const
{
    return m_scope;
}

QLineEdit *RecallPanel::sourceEdit() const
{
    return m_source;
}

QPlainTextEdit *RecallPanel::matchView() const
{
    return m_match;
}

} // namespace mneme::studio
