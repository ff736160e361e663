#include "run_page.h"

#include "future_call.h"
#include "provider_box.h"

#include "crew_flow/crew_flow.h"
#include "research_crew/research_crew.h"

#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/flows/flow.h>
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
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QTemporaryDir>
#include <QTreeView>
#include <QVBoxLayout>

namespace mneme::studio {

namespace {

// The examples' cassettes, built into the app (qt_add_resources), so the offline run needs no file.
const QString kCrewCassette = QStringLiteral(":/examples/research_crew/research_crew.jsonl");
const QString kFlowCassette = QStringLiteral(":/examples/crew_flow/crew_flow.jsonl");

} // namespace

RunPage::RunPage(QSettings &settings, QWidget *parent)
    : QWidget(parent),
      m_settings(settings),
      m_bus(new EventBus(this)),
      m_log(new EventLogModel(this)),
      m_provider(new ProviderBox(settings, this)),
      m_example(new QComboBox(this)),
      m_inputs(new QComboBox(this)),
      m_run(new QPushButton(tr("&Run"), this)),
      m_cancel(new QPushButton(tr("Ca&ncel"), this)),
      m_family(new QComboBox(this)),
      m_events(new QTreeView(this)),
      m_output(new QPlainTextEdit(this)),
      m_status(new QLabel(this))
{
    m_log->setEventBus(m_bus);

    m_example->setAccessibleName(tr("Example"));
    m_example->addItem(tr("Research crew (examples/research_crew): a researcher with a calculator, then a writer"));
    m_example->addItem(tr("Launch flow (examples/crew_flow): plan, a crew's research, publish to the flow's memory"));
    m_inputs->setAccessibleName(tr("Kickoff inputs"));
    m_inputs->setEditable(true);
    m_inputs->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_run->setAccessibleName(tr("Run the example"));
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
    m_output->setPlaceholderText(tr("The answers appear here as they come."));
    m_status->setAccessibleName(tr("Run status"));
    m_status->setWordWrap(true);

    auto *example = new QGroupBox(tr("Example"), this);
    auto *exampleForm = new QFormLayout(example);
    exampleForm->addRow(tr("E&xample:"), m_example);
    exampleForm->addRow(tr("&Inputs:"), m_inputs);
    auto *buttons = new QHBoxLayout;
    buttons->addStretch();
    buttons->addWidget(m_run);
    buttons->addWidget(m_cancel);
    exampleForm->addRow(buttons);
    auto *filterRow = new QHBoxLayout;
    auto *familyLabel = new QLabel(tr("Even&ts:"), this);
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
    top->addWidget(example, 1);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(splitter, 1);
    setTabOrder(m_provider->modelEdit(), m_example);
    setTabOrder(m_example, m_inputs);
    setTabOrder(m_inputs, m_run);
    setTabOrder(m_run, m_cancel);
    setTabOrder(m_cancel, m_family);
    setTabOrder(m_family, m_events);
    setTabOrder(m_events, m_output);

    connect(m_example, &QComboBox::currentIndexChanged, this, &RunPage::chooseExample);
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
    chooseExample(ResearchCrew);
    setRunning(false);
    m_status->setText(tr("Choose an example and its inputs, then press Run."));
}

RunPage::~RunPage()
{
    m_log->setEventBus(nullptr);
}

void RunPage::chooseExample(int example)
{
    m_inputs->clear();
    if (example == LaunchFlow) {
        m_inputs->addItem(QString::fromStdString(example::launchInputs().dump()));
    } else {
        for (const QString &topic : example::researchTopics())
            m_inputs->addItem(QString::fromStdString(Json{{"topic", topic.toStdString()}}.dump()));
    }
}

void RunPage::run()
{
    if (m_running)
        return;
    Json inputs;
    const QString problem = readJson(m_inputs->currentText().trimmed().toStdString(), &inputs);
    if (!problem.isEmpty() || !inputs.is_object()) {
        m_lastError = tr("The inputs must be a JSON object, like {\"topic\": \"heat pumps\"}%1.")
                          .arg(problem.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(problem));
        m_status->setText(m_lastError);
        Q_EMIT finished(false);
        return;
    }
    m_lastError.clear();
    m_log->clear();
    m_output->clear();
    m_flow.reset();
    m_crew.reset();
    m_scratch = std::make_unique<QTemporaryDir>(QDir::temp().filePath(QStringLiteral("mneme-studio-run-XXXXXX")));
    try {
        if (m_example->currentIndex() == LaunchFlow)
            whenDone(this, startFlow(inputs), [this](QFuture<Json> f) { flowFinished(f); });
        else
            whenDone(this, startCrew(inputs), [this](QFuture<CrewOutput> f) { crewFinished(f); });
    } catch (const Error &e) {
        m_lastError = e.message();
        m_status->setText(e.message());
        Q_EMIT finished(false);
        return;
    }
    setRunning(true);
    m_status->setText(tr("Running…"));
}

QFuture<CrewOutput> RunPage::startCrew(const Json &inputs)
{
    m_crew = example::makeResearchCrew(m_provider->llm(kCrewCassette), m_scratch->filePath(QStringLiteral("memory.db")), m_bus);
    return m_crew->kickoff(inputs);
}

QFuture<Json> RunPage::startFlow(const Json &inputs)
{
    FlowOptions options;
    options.eventBus = m_bus;
    options.memoryConfig.storage = m_scratch->filePath(QStringLiteral("flow.db")).toStdString();
    m_flow = std::make_unique<FlowInstance<example::LaunchFlow>>(m_provider->llm(kFlowCassette), options);
    connect(m_flow.get(), &Flow::stepFinished, m_output, [this](const QString &step, const QJsonValue &, const QJsonValue &output, double ms) {
        const QString text = output.isString() ? output.toString() : QString::fromUtf8(QJsonDocument(output.toObject()).toJson(QJsonDocument::Compact));
        m_output->appendPlainText(tr("step %1 (%2 ms): %3\n").arg(step, QLocale().toString(ms, 'f', 0), text));
    });
    return m_flow->kickoff(inputs);
}

template<typename T>
bool RunPage::succeeded(QFuture<T> future)
{
    setRunning(false);
    if (future.resultCount() > 0)
        return true;
    const QString error = future.isCanceled() ? QString() : failureOf(future);
    m_lastError = error.isEmpty() ? tr("The run was cancelled.") : error;
    m_status->setText(m_lastError);
    Q_EMIT finished(false);
    return false;
}

void RunPage::crewFinished(QFuture<CrewOutput> future)
{
    if (!succeeded(future))
        return;
    const CrewOutput out = future.result();
    QString text;
    for (const TaskOutput &t : out.tasksOutput)
        text += QStringLiteral("[%1] %2\n\n").arg(t.agent, t.raw.trimmed());
    m_output->setPlainText(text.trimmed());
    m_status->setText(tr("Done: %1 LLM calls, %2 tokens.").arg(out.llmRequests).arg(out.tokenUsage.totalTokens()));
    Q_EMIT finished(true);
}

void RunPage::flowFinished(QFuture<Json> future)
{
    if (!succeeded(future))
        return;
    const Json result = future.result();
    m_output->appendPlainText(tr("Result: %1").arg(QString::fromStdString(result.is_string() ? result.get<std::string>() : result.dump())));
    m_status->setText(tr("Done: the flow completed."));
    Q_EMIT finished(true);
}

void RunPage::cancel()
{
    if (!m_running)
        return;
    if (m_flow)
        m_flow->cancel();
    if (m_crew)
        m_crew->cancel();
}

void RunPage::setRunning(bool running)
{
    m_running = running;
    m_run->setEnabled(!running);
    m_cancel->setEnabled(running);
    m_provider->setEnabled(!running);
    m_example->setEnabled(!running);
    m_inputs->setEnabled(!running);
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

QComboBox *RunPage::exampleChoice() const
{
    return m_example;
}

QComboBox *RunPage::inputsChoice() const
{
    return m_inputs;
}

QString RunPage::lastError() const
{
    return m_lastError;
}

} // namespace mneme::studio
