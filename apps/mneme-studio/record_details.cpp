#include "record_details.h"

#include "future_call.h"
#include "store_session.h"

#include <mneme/memory/memory.h>
#include <mneme/models/history_model.h>

#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

namespace mneme::studio {

namespace {

QStringList splitCategories(const QString &text)
{
    QStringList categories;
    for (const QString &part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const QString category = part.trimmed();
        if (!category.isEmpty() && !categories.contains(category))
            categories.append(category);
    }
    return categories;
}

QString when(const QDateTime &at)
{
    return at.isValid() ? QLocale().toString(at.toLocalTime(), QLocale::ShortFormat) : QString();
}

} // namespace

RecordDetails::RecordDetails(QWidget *parent)
    : QWidget(parent),
      m_title(new QLabel(this)),
      m_facts(new QLabel(this)),
      m_content(new QPlainTextEdit(this)),
      m_scope(new QLineEdit(this)),
      m_categories(new QLineEdit(this)),
      m_importance(new QDoubleSpinBox(this)),
      m_save(new QPushButton(tr("&Save"), this)),
      m_revert(new QPushButton(tr("Rever&t"), this)),
      m_forget(new QPushButton(tr("F&orget"), this)),
      m_undo(new QPushButton(tr("Undo &Last Change"), this)),
      m_history(new HistoryModel(this)),
      m_historyView(new QTableView(this))
{
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_title->setAccessibleName(tr("Record id"));
    m_facts->setWordWrap(true);
    m_facts->setAccessibleName(tr("Record facts"));
    m_content->setAccessibleName(tr("Content"));
    m_content->setTabChangesFocus(true);
    m_scope->setAccessibleName(tr("Scope"));
    m_categories->setAccessibleName(tr("Categories"));
    m_categories->setPlaceholderText(tr("comma separated"));
    m_importance->setAccessibleName(tr("Importance"));
    m_importance->setRange(0, 1);
    m_importance->setSingleStep(0.05);
    m_importance->setDecimals(2);
    m_save->setAccessibleName(tr("Save the edits"));
    m_save->setShortcut(QKeySequence::Save);
    m_revert->setAccessibleName(tr("Revert the edits"));
    m_forget->setAccessibleName(tr("Forget the record"));
    m_undo->setAccessibleName(tr("Undo the record's last change"));
    m_historyView->setModel(m_history);
    m_historyView->setAccessibleName(tr("History"));
    m_historyView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_historyView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_historyView->setWordWrap(false);
    m_historyView->verticalHeader()->hide();
    m_historyView->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
    m_historyView->horizontalHeader()->setStretchLastSection(true);
    m_historyView->horizontalHeader()->setSectionResizeMode(HistoryModel::EventColumn, QHeaderView::ResizeToContents);
    m_historyView->horizontalHeader()->setSectionResizeMode(HistoryModel::AtColumn, QHeaderView::ResizeToContents);

    auto *form = new QFormLayout;
    form->addRow(tr("Co&ntent:"), m_content);
    form->addRow(tr("S&cope:"), m_scope);
    form->addRow(tr("Cate&gories:"), m_categories);
    form->addRow(tr("I&mportance:"), m_importance);
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_save);
    buttons->addWidget(m_revert);
    buttons->addStretch();
    buttons->addWidget(m_undo);
    buttons->addWidget(m_forget);
    auto *historyLabel = new QLabel(tr("&History:"), this);
    historyLabel->setBuddy(m_historyView);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_title);
    layout->addWidget(m_facts);
    layout->addLayout(form, 2);
    layout->addLayout(buttons);
    layout->addWidget(historyLabel);
    layout->addWidget(m_historyView, 1);
    setTabOrder(m_content, m_scope);
    setTabOrder(m_scope, m_categories);
    setTabOrder(m_categories, m_importance);
    setTabOrder(m_importance, m_save);
    setTabOrder(m_save, m_revert);
    setTabOrder(m_revert, m_undo);
    setTabOrder(m_undo, m_forget);
    setTabOrder(m_forget, m_historyView);

    const auto edited = [this] {
        if (m_filling)
            return;
        m_dirty = true;
        updateButtons();
    };
    connect(m_content, &QPlainTextEdit::textChanged, this, edited);
    connect(m_scope, &QLineEdit::textEdited, this, edited);
    connect(m_categories, &QLineEdit::textEdited, this, edited);
    connect(m_importance, &QDoubleSpinBox::valueChanged, this, edited);
    connect(m_save, &QPushButton::clicked, this, &RecordDetails::save);
    connect(m_revert, &QPushButton::clicked, this, [this] { fill(m_record); });
    connect(m_forget, &QPushButton::clicked, this, &RecordDetails::forget);
    connect(m_undo, &QPushButton::clicked, this, &RecordDetails::undoLastChange);
    connect(m_history, &HistoryModel::errorOccurred, this, &RecordDetails::failed);
    clear();
}

void RecordDetails::setMemory(Memory *memory)
{
    m_memory = memory;
    m_history->setRecordId({});
    m_history->setMemory(memory);
    m_history->setReader(StoreSession::reader());
    clear();
}

void RecordDetails::showRecord(const MemoryRecord &record)
{
    if (record.id == m_record.id && m_dirty) {
        m_record = record;
        m_facts->setText(tr("Source: %1 · %2 · created %3 · updated %4")
                             .arg(record.source.isEmpty() ? tr("none") : record.source,
                                  record.isPrivate ? tr("private") : tr("shared"), when(record.createdAt),
                                  when(record.updatedAt)));
        return;
    }
    fill(record);
}

void RecordDetails::fill(const MemoryRecord &record)
{
    const bool another = record.id != m_record.id;
    m_record = record;
    m_filling = true;
    m_content->setPlainText(record.content);
    m_scope->setText(record.scope);
    m_categories->setText(record.categories.join(QLatin1String(", ")));
    m_importance->setValue(record.importance);
    m_filling = false;
    m_dirty = false;
    m_title->setText(record.id.isEmpty() ? tr("No record chosen") : tr("Record %1").arg(record.id));
    m_facts->setText(record.id.isEmpty()
                         ? tr("Choose a record in the table to see and edit it.")
                         : tr("Source: %1 · %2 · created %3 · updated %4")
                               .arg(record.source.isEmpty() ? tr("none") : record.source,
                                    record.isPrivate ? tr("private") : tr("shared"), when(record.createdAt),
                                    when(record.updatedAt)));
    if (another)
        m_history->setRecordId(record.id);
    updateButtons();
}

void RecordDetails::clear()
{
    fill(MemoryRecord());
}

QString RecordDetails::recordId() const
{
    return m_record.id;
}

bool RecordDetails::hasUnsavedEdits() const
{
    return m_dirty;
}

void RecordDetails::updateButtons()
{
    const bool shown = m_memory && !m_record.id.isEmpty();
    const bool writable = shown && !m_busy && !m_memory->isReadOnly();
    for (QWidget *field : {static_cast<QWidget *>(m_content), static_cast<QWidget *>(m_scope),
                           static_cast<QWidget *>(m_categories), static_cast<QWidget *>(m_importance)})
        field->setEnabled(shown);
    m_save->setEnabled(writable && m_dirty);
    m_revert->setEnabled(shown && m_dirty);
    m_forget->setEnabled(writable);
    m_undo->setEnabled(writable);
}

void RecordDetails::setBusy(bool busy)
{
    m_busy = busy;
    updateButtons();
}

template<typename Start, typename Done>
void RecordDetails::runWrite(Start start, Done done)
{
    decltype(start()) future;
    try {
        future = start();
    } catch (const Error &e) {
        Q_EMIT failed(e.message());
        return;
    }
    setBusy(true);
    whenDone(this, future, [this, done](decltype(future) finished) {
        setBusy(false);
        const QString error = failureOf(finished);
        if (!error.isEmpty()) {
            Q_EMIT failed(error);
            return;
        }
        done(finished.result());
    });
}

void RecordDetails::save()
{
    if (!m_memory || m_record.id.isEmpty() || !m_dirty || m_busy)
        return;
    UpdateOptions changes;
    if (m_content->toPlainText() != m_record.content)
        changes.content = m_content->toPlainText();
    if (m_scope->text().trimmed() != m_record.scope)
        changes.scope = m_scope->text().trimmed();
    const QStringList categories = splitCategories(m_categories->text());
    if (categories != m_record.categories)
        changes.categories = categories;
    if (!qFuzzyCompare(1 + m_importance->value(), 1 + m_record.importance))
        changes.importance = m_importance->value();
    if (!changes.content && !changes.scope && !changes.categories && !changes.importance) {
        fill(m_record);
        return;
    }
    runWrite([&] { return m_memory->updateAsync(m_record.id, changes, StoreSession::reader()); },
             [this, before = m_record](const MemoryRecord &updated) {
                 if (m_record.id == before.id)
                     fill(updated);
                 Q_EMIT written(before, QStringLiteral("updated"));
             });
}

void RecordDetails::forget()
{
    if (!m_memory || m_record.id.isEmpty() || m_busy)
        return;
    ForgetOptions options;
    options.ids = QStringList{m_record.id};
    runWrite([&] { return m_memory->forgetAsync(options, StoreSession::reader()); },
             [this, before = m_record](int forgotten) {
                 if (m_record.id == before.id)
                     clear();
                 if (forgotten > 0)
                     Q_EMIT written(before, QStringLiteral("forgotten"));
             });
}

void RecordDetails::undoLastChange()
{
    if (!m_memory || m_record.id.isEmpty() || m_busy)
        return;
    runWrite([&] { return m_memory->undoAsync(m_record.id, StoreSession::reader()); },
             [this, id = m_record.id](const MemoryRecord &restored) {
                 if (m_record.id == id)
                     fill(restored);
                 m_history->refresh();
             });
}

} // namespace mneme::studio
