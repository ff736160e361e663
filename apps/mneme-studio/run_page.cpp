#include "run_page.h"

#include "future_call.h"
#include "provider_box.h"

#include "research_crew/research_crew.h"

#include <mneme/core/plugin_registry.h>
#include <mneme/models/event_log_model.h>
#include <mneme/runtime/crew.h>
#include <mneme/runtime/event_bus.h>
#include <mneme/runtime/llm_ref.h>

#include <QComboBox>
#include <QDir>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QTemporaryDir>
#include <QTreeView>
#include <QVBoxLayout>

namespace mneme::studio {

namespace {

// The example's cassette, built into the app (qt_add_resources), so the offline run needs no file.
const QString kCassette = QStringLiteral(":/examples/research_crew/research_crew.jsonl");

} // namespace

RunPage::RunPage(QSettings &settings, QWidget *parent)
    : QWidget(parent),
      m_settings(settings),
      m_bus(new EventBus(this)),
      m_log(new EventLogModel(this)),
      m_provider(new ProviderBox(settings, this)),
      m_topic(new QComboBox(this)),
      m_run(new QPushButton(tr("&Run"), this)),
      m_cancel(new QPushButton(tr("Ca&ncel"), this)),
      m_family(new QComboBox(this)),
      m_events(new QTreeView(this)),
      m_output(new QPlainTextEdit(this)),
      m_status(new QLabel(this))
{
    m_log->setEventBus(m_bus);

    m_topic->setAccessibleName(tr("Topic"));
    m_topic->setEditable(true);
    m_topic->addItems(example::researchTopics());
    m_run->setAccessibleName(tr("Run the crew"));
    m_cancel->setAccessibleName(tr("Cancel the run"));
    m_family->setAccessibleName(tr("Show events of"));
    m_family->addItem(tr("All events"), QString());
    for (const QString &family : EventLogModel::allFamilies())
        m_family->addItem(family, family);

    m_events->setModel(m_log);
    m_events->setAccessibleName(tr("Event timeline"));
    m_events->setUniformRowHeights(true);
    m_events->header()->setSectionResizeMode(EventLogModel::EventColumn, QHeaderView::ResizeToContents);
    m_events->header()->setSectionResizeMode(EventLogModel::SummaryColumn, QHeaderView::Stretch);
    m_events->header()->setStretchLastSection(false);
    m_output->setReadOnly(true);
    m_output->setAccessibleName(tr("Crew output"));
    m_output->setTabChangesFocus(true);
    m_output->setPlaceholderText(tr("The crew's answers appear here as they come."));
    m_status->setAccessibleName(tr("Run status"));
    m_status->setWordWrap(true);

    auto *crew = new QGroupBox(tr("Research crew (examples/research_crew): a researcher with a calculator, then a writer"), this);
    auto *crewRow = new QHBoxLayout(crew);
    auto *topicLabel = new QLabel(tr("&Topic:"), crew);
    topicLabel->setBuddy(m_topic);
    crewRow->addWidget(topicLabel);
    crewRow->addWidget(m_topic, 1);
    crewRow->addWidget(m_run);
    crewRow->addWidget(m_cancel);
    auto *filterRow = new QHBoxLayout;
    auto *familyLabel = new QLabel(tr("&Events:"), this);
    familyLabel->setBuddy(m_family);
    filterRow->addWidget(familyLabel);
    filterRow->addWidget(m_family);
    filterRow->addWidget(m_status, 1);
    auto *eventsPane = new QWidget(this);
    auto *eventsLayout = new QVBoxLayout(eventsPane);
    eventsLayout->setContentsMargins(0, 0, 0, 0);
    eventsLayout->addLayout(filterRow);
    eventsLayout->addWidget(m_events, 1);
    auto *splitter = new QSplitter(this);
    splitter->addWidget(eventsPane);
    splitter->addWidget(m_output);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);
    auto *top = new QHBoxLayout;
    top->addWidget(m_provider, 1);
    top->addWidget(crew, 1);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(splitter, 1);
    setTabOrder(m_provider->modelEdit(), m_topic);
    setTabOrder(m_topic, m_run);
    setTabOrder(m_run, m_cancel);
    setTabOrder(m_cancel, m_family);
    setTabOrder(m_family, m_events);
    setTabOrder(m_events, m_output);

    connect(m_run, &QPushButton::clicked, this, &RunPage::run);
    connect(m_cancel, &QPushButton::clicked, this, &RunPage::cancel);
    connect(m_family, &QComboBox::currentIndexChanged, this, [this] {
        const QString family = m_family->currentData().toString();
        m_log->setFamilies(family.isEmpty() ? QStringList() : QStringList{family});
    });
    connect(m_log, &QAbstractItemModel::rowsInserted, m_events, [this](const QModelIndex &parent) {
        if (!parent.isValid())
            m_events->expandAll();
        else
            m_events->expand(parent);
    });
    connect(m_log, &EventLogModel::textStreamed, m_output, [this](const QString &text) {
        m_output->moveCursor(QTextCursor::End);
        m_output->insertPlainText(text);
    });
    setRunning(false);
    m_status->setText(tr("Choose a topic and press Run."));
}

RunPage::~RunPage()
{
    m_log->setEventBus(nullptr);
}

void RunPage::run()
{
    if (m_running)
        return;
    const QString topic = m_topic->currentText().trimmed();
    if (topic.isEmpty()) {
        m_status->setText(tr("Type a topic first."));
        return;
    }
    m_lastError.clear();
    m_log->clear();
    m_output->clear();
    m_crew.reset();
    m_scratch = std::make_unique<QTemporaryDir>(QDir::temp().filePath(QStringLiteral("mneme-studio-run-XXXXXX")));
    QFuture<CrewOutput> future;
    try {
        m_crew = example::makeResearchCrew(m_provider->llm(kCassette), m_scratch->filePath(QStringLiteral("memory.db")), m_bus);
        future = m_crew->kickoff(Json{{"topic", topic.toStdString()}});
    } catch (const Error &e) {
        m_lastError = e.message();
        m_status->setText(e.message());
        Q_EMIT finished(false);
        return;
    }
    setRunning(true);
    m_status->setText(tr("Running the crew on “%1”…").arg(topic));
    whenDone(this, future, [this](QFuture<CrewOutput> f) { onFinished(f); });
}

void RunPage::onFinished(QFuture<CrewOutput> future)
{
    setRunning(false);
    const QString error = future.isCanceled() && future.resultCount() == 0 ? QString() : failureOf(future);
    if (future.resultCount() == 0) {
        m_lastError = error.isEmpty() ? tr("The run was cancelled.") : error;
        m_status->setText(m_lastError);
        Q_EMIT finished(false);
        return;
    }
    const CrewOutput out = future.result();
    QString text;
    for (const TaskOutput &t : out.tasksOutput)
        text += QStringLiteral("[%1] %2\n\n").arg(t.agent, t.raw.trimmed());
    m_output->setPlainText(text.trimmed());
    m_status->setText(tr("Done: %1 LLM calls, %2 tokens.").arg(out.llmRequests).arg(out.tokenUsage.totalTokens()));
    Q_EMIT finished(true);
}

void RunPage::cancel()
{
    if (m_crew && m_running)
        m_crew->cancel();
}

void RunPage::setRunning(bool running)
{
    m_running = running;
    m_run->setEnabled(!running);
    m_cancel->setEnabled(running);
    m_provider->setEnabled(!running);
    m_topic->setEnabled(!running);
    Q_EMIT runningChanged(running);
}

bool RunPage::isRunning() const
{
    return m_running;
}

EventLogModel *RunPage::eventModel() const
{
    return m_log;
}

QTreeView *RunPage::eventView() const
{
    return m_events;
}

QPlainTextEdit *RunPage::outputView() const
{
    return m_output;
}

ProviderBox *RunPage::provider() const
{
    return m_provider;
}

QComboBox *RunPage::topicChoice() const
{
    return m_topic;
}

QString RunPage::lastError() const
{
    return m_lastError;
}

} // namespace mneme::studio
