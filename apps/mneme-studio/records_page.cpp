#include "records_page.h"

#include "counted.h"
#include "future_call.h"
#include "record_details.h"
#include "store_session.h"

#include <mneme/memory/memory.h>
#include <mneme/models/record_list_model.h>
#include <mneme/models/scope_tree_model.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>

namespace mneme::studio {

RecordsPage::RecordsPage(QWidget *parent)
    : QWidget(parent),
      m_scopes(new ScopeTreeModel(this)),
      m_records(new RecordListModel(this)),
      m_scopeView(new QTreeView(this)),
      m_text(new QLineEdit(this)),
      m_category(new QComboBox(this)),
      m_source(new QLineEdit(this)),
      m_count(new QLabel(this)),
      m_table(new QTableView(this)),
      m_details(new RecordDetails(this)),
      m_textDelay(new QTimer(this)),
      m_categoriesDelay(new QTimer(this))
{
    m_scopes->setReader(StoreSession::reader());
    m_records->setReader(StoreSession::reader());

    m_scopeView->setModel(m_scopes);
    m_scopeView->setAccessibleName(tr("Scopes"));
    m_scopeView->setUniformRowHeights(true);
    m_scopeView->header()->setStretchLastSection(false);
    m_scopeView->header()->setSectionResizeMode(ScopeTreeModel::NameColumn, QHeaderView::Stretch);
    m_scopeView->header()->setSectionResizeMode(ScopeTreeModel::CountColumn, QHeaderView::ResizeToContents);

    m_text->setPlaceholderText(tr("Filter by text"));
    m_text->setAccessibleName(tr("Filter by text"));
    m_text->setClearButtonEnabled(true);
    m_category->setAccessibleName(tr("Filter by category"));
    m_category->setMinimumContentsLength(12);
    m_category->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_source->setPlaceholderText(tr("Filter by source"));
    m_source->setAccessibleName(tr("Filter by source"));
    m_source->setClearButtonEnabled(true);
    m_count->setAccessibleName(tr("Records shown"));

    m_table->setModel(m_records);
    m_table->setAccessibleName(tr("Records"));
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(RecordListModel::CreatedColumn, Qt::DescendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setWordWrap(false);
    m_table->setAlternatingRowColors(true);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
    QHeaderView *columns = m_table->horizontalHeader();
    columns->setSectionResizeMode(RecordListModel::ContentColumn, QHeaderView::Stretch);
    columns->setSectionResizeMode(RecordListModel::CreatedColumn, QHeaderView::ResizeToContents);
    m_table->setColumnWidth(RecordListModel::ScopeColumn, fontMetrics().horizontalAdvance(QStringLiteral("/project/alpha/infra___")));
    m_table->setColumnWidth(RecordListModel::CategoriesColumn, fontMetrics().horizontalAdvance(QStringLiteral("Categories____")));
    m_table->setColumnWidth(RecordListModel::ImportanceColumn, fontMetrics().horizontalAdvance(QStringLiteral("Importance__")));
    m_table->setColumnWidth(RecordListModel::SourceColumn, fontMetrics().horizontalAdvance(QStringLiteral("user:alice__")));
    m_table->setColumnHidden(RecordListModel::UpdatedColumn, true);

    auto *filterLabel = new QLabel(tr("F&ilter:"), this);
    filterLabel->setBuddy(m_text);
    auto *filters = new QHBoxLayout;
    filters->addWidget(filterLabel);
    filters->addWidget(m_text, 2);
    filters->addWidget(m_category, 1);
    filters->addWidget(m_source, 1);
    auto *middle = new QWidget(this);
    auto *middleLayout = new QVBoxLayout(middle);
    middleLayout->setContentsMargins(0, 0, 0, 0);
    middleLayout->addLayout(filters);
    middleLayout->addWidget(m_table, 1);
    middleLayout->addWidget(m_count);

    auto *splitter = new QSplitter(this);
    splitter->addWidget(m_scopeView);
    splitter->addWidget(middle);
    splitter->addWidget(m_details);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 3);
    splitter->setStretchFactor(2, 2);
    splitter->setSizes({190, 760, 380});
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(splitter);
    setTabOrder(m_scopeView, m_text);
    setTabOrder(m_text, m_category);
    setTabOrder(m_category, m_source);
    setTabOrder(m_source, m_table);
    setTabOrder(m_table, m_details);

    m_textDelay->setSingleShot(true);
    m_textDelay->setInterval(250);
    m_categoriesDelay->setSingleShot(true);
    m_categoriesDelay->setInterval(500);
    connect(m_text, &QLineEdit::textChanged, m_textDelay, qOverload<>(&QTimer::start));
    connect(m_textDelay, &QTimer::timeout, this, [this] { m_records->setText(m_text->text()); });
    connect(m_source, &QLineEdit::textChanged, this, [this](const QString &text) { m_records->setSource(text.trimmed()); });
    connect(m_category, &QComboBox::currentIndexChanged, this, [this](int row) {
        const QString category = m_category->itemData(row).toString();
        m_records->setCategories(category.isEmpty() ? QStringList() : QStringList{category});
    });
    connect(m_categoriesDelay, &QTimer::timeout, this, &RecordsPage::loadCategories);

    connect(m_scopeView->selectionModel(), &QItemSelectionModel::currentChanged, this, &RecordsPage::chooseScope);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &RecordsPage::showCurrent);
    connect(m_records, &QAbstractItemModel::dataChanged, this, &RecordsPage::syncDetails);
    connect(m_records, &QAbstractItemModel::modelReset, this, &RecordsPage::syncDetails);
    connect(m_records, &QAbstractItemModel::rowsInserted, this, &RecordsPage::syncDetails);
    connect(m_records, &QAbstractItemModel::rowsRemoved, this, &RecordsPage::syncDetails);
    connect(m_records, &RecordListModel::totalCountChanged, this, &RecordsPage::updateCount);
    connect(m_records, &RecordListModel::loadingChanged, this, &RecordsPage::updateCount);
    connect(m_records, &RecordListModel::errorOccurred, this, &RecordsPage::failed);
    connect(m_scopes, &ScopeTreeModel::errorOccurred, this, &RecordsPage::failed);
    connect(m_scopes, &ScopeTreeModel::childrenLoaded, this, [this](const QModelIndex &parent) {
        if (parent.isValid() && !parent.parent().isValid()) // the top row: open it, so the first level shows
            m_scopeView->expand(parent);
    });
    connect(m_details, &RecordDetails::written, this, &RecordsPage::onWritten);
    connect(m_details, &RecordDetails::failed, this, &RecordsPage::failed);
    setMemory(nullptr);
}

void RecordsPage::setMemory(Memory *memory)
{
    if (m_memory)
        disconnect(m_memory, nullptr, this, nullptr);
    m_memory = memory;
    m_undo.clear();
    m_pendingSelection.clear();
    Q_EMIT canUndoChanged(false);
    m_details->setMemory(memory);
    m_scopes->setMemory(memory);
    m_records->setMemory(memory);
    m_category->blockSignals(true);
    m_category->clear();
    m_category->addItem(tr("All categories"), QString());
    m_category->blockSignals(false);
    m_records->setCategories({});
    setEnabled(memory != nullptr);
    if (memory) {
        connect(memory, &Memory::recordsChanged, m_categoriesDelay, qOverload<>(&QTimer::start));
        loadCategories();
    }
    updateCount();
}

void RecordsPage::chooseScope(const QModelIndex &index)
{
    const QString path = m_scopes->pathAt(index);
    m_records->setScopes(path.isEmpty() || path == QLatin1String("/") ? QStringList() : QStringList{path});
}

void RecordsPage::showCurrent()
{
    const QModelIndex current = m_table->currentIndex();
    if (current.isValid())
        m_details->showRecord(m_records->recordAt(current.row()));
}

// After the table changed (a page read, a refresh after a write): the details follow the record they
// show, and a record brought back by an undo is chosen once it is there.
void RecordsPage::syncDetails()
{
    if (!m_pendingSelection.isEmpty()) {
        const int row = m_records->rowOf(m_pendingSelection);
        if (row >= 0) {
            m_pendingSelection.clear();
            m_table->setCurrentIndex(m_records->index(row, RecordListModel::ContentColumn));
            return;
        }
    }
    const QString shown = m_details->recordId();
    if (shown.isEmpty())
        return;
    const int row = m_records->rowOf(shown);
    if (row >= 0)
        m_details->showRecord(m_records->recordAt(row));
}

void RecordsPage::loadCategories()
{
    if (!m_memory)
        return;
    whenDone(this, m_memory->listCategoriesAsync({}, StoreSession::reader()), [this, memory = m_memory](QFuture<QMap<QString, int>> f) {
        if (memory != m_memory || !failureOf(f).isEmpty())
            return;
        const QString chosen = m_category->currentData().toString();
        const QMap<QString, int> counts = f.result();
        m_category->blockSignals(true);
        m_category->clear();
        m_category->addItem(tr("All categories"), QString());
        for (auto it = counts.constBegin(); it != counts.constEnd(); ++it)
            m_category->addItem(tr("%1 (%2)").arg(it.key()).arg(it.value()), it.key());
        const int row = m_category->findData(chosen);
        m_category->setCurrentIndex(row >= 0 ? row : 0);
        m_category->blockSignals(false);
        if (row < 0 && !chosen.isEmpty()) // the category is gone
            m_records->setCategories({});
    });
}

void RecordsPage::updateCount()
{
    if (!m_memory)
        m_count->setText(tr("No store open."));
    else if (m_records->isLoading() && m_records->rowCount() == 0)
        m_count->setText(tr("Reading…"));
    else
        m_count->setText(records(m_records->totalCount()));
}

void RecordsPage::onWritten(const MemoryRecord &before, const QString &what)
{
    const bool forgotten = what == QLatin1String("forgotten");
    m_undo.append(Write{before, forgotten});
    Q_EMIT canUndoChanged(true);
    Q_EMIT status(forgotten ? tr("Record forgotten. Edit > Undo brings it back.") : tr("Record saved. Edit > Undo reverts it."));
}

QFuture<MemoryRecord> RecordsPage::revert(const Write &write)
{
    if (write.forgotten)
        return m_memory->undoAsync(write.before.id, StoreSession::reader());
    UpdateOptions fields;
    fields.content = write.before.content;
    fields.scope = write.before.scope;
    fields.categories = write.before.categories;
    fields.importance = write.before.importance;
    fields.metadata = write.before.metadata;
    return m_memory->updateAsync(write.before.id, fields, StoreSession::reader());
}

bool RecordsPage::canUndo() const
{
    return !m_undo.isEmpty();
}

void RecordsPage::undoLastWrite()
{
    if (!m_memory || m_undo.isEmpty())
        return;
    const Write write = m_undo.takeLast();
    const QString id = write.before.id;
    Q_EMIT canUndoChanged(!m_undo.isEmpty());
    QFuture<MemoryRecord> future;
    try {
        future = revert(write);
    } catch (const Error &e) {
        Q_EMIT failed(e.message());
        return;
    }
    whenDone(this, future, [this, id, memory = m_memory](QFuture<MemoryRecord> f) {
        const QString error = failureOf(f);
        if (memory != m_memory)
            return;
        if (!error.isEmpty()) {
            Q_EMIT failed(error);
            return;
        }
        m_details->showRecord(f.result());
        m_pendingSelection = id;
        syncDetails();
        Q_EMIT status(tr("Undone."));
    });
}

ScopeTreeModel *RecordsPage::scopeModel() const
{
    return m_scopes;
}

RecordListModel *RecordsPage::recordModel() const
{
    return m_records;
}

QTreeView *RecordsPage::scopeView() const
{
    return m_scopeView;
}

QTableView *RecordsPage::recordView() const
{
    return m_table;
}

RecordDetails *RecordsPage::details() const
{
    return m_details;
}

QLineEdit *RecordsPage::textFilter() const
{
    return m_text;
}

QComboBox *RecordsPage::categoryFilter() const
{
    return m_category;
}

QLineEdit *RecordsPage::sourceFilter() const
{
    return m_source;
}

} // namespace mneme::studio
