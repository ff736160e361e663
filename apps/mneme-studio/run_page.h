#pragma once

#include <mneme/core/json.h>

#include <QFuture>
#include <QWidget>
#include <memory>

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSettings;
class QTemporaryDir;
class QTreeView;

namespace mneme {
class Crew;
class EventBus;
class Flow;
class EventLogModel;
class LlmRef;
struct CrewOutput;
} // namespace mneme

namespace mneme::studio {

class ProviderBox;

// Runs an example in the window: the research crew of examples/research_crew, or the flow of
// examples/crew_flow (a flow whose step kicks off a crew), offline on the example's replay cassette
// (built into the app) or on the provider of the ProviderBox, with the example's recorded inputs or
// others (JSON). It runs on the GUI thread's event loop (Crew::kickoff, Flow::kickoff) with a memory
// of its own in a temporary folder; its events fill a live timeline (EventLogModel, nested, filtered
// by family) and its answers the output pane, streamed chunks as they come.
class RunPage : public QWidget
{
    Q_OBJECT
public:
    explicit RunPage(QSettings &settings, QWidget *parent = nullptr);
    ~RunPage() override;

    void run();
    void cancel();
    bool isRunning() const;

    EventLogModel *eventModel() const;
    QTreeView *eventView() const;
    QPlainTextEdit *outputView() const;
    enum Example {
        ResearchCrew,
        LaunchFlow
    };
    ProviderBox *provider() const;
    QComboBox *exampleChoice() const;
    // The kickoff inputs, as JSON: the example's recorded ones offered, any other typed.
    QComboBox *inputsChoice() const;
    QString lastError() const;

Q_SIGNALS:
    void runningChanged(bool running);
    void finished(bool ok);

private:
    void chooseExample(int example);
    QFuture<CrewOutput> startCrew(const Json &inputs);
    QFuture<Json> startFlow(const Json &inputs);
    void crewFinished(QFuture<CrewOutput> future);
    void flowFinished(QFuture<Json> future);
    // Whether a finished future holds a result; otherwise the run failed or was cancelled, as said.
    template<typename T>
    bool succeeded(QFuture<T> future);
    void setRunning(bool running);

    QSettings &m_settings;
    EventBus *m_bus;
    EventLogModel *m_log;
    std::unique_ptr<QTemporaryDir> m_scratch;
    std::unique_ptr<Crew> m_crew;
    std::unique_ptr<Flow> m_flow;
    bool m_running = false;
    QString m_lastError;
    ProviderBox *m_provider;
    QComboBox *m_example;
    QComboBox *m_inputs;
    QPushButton *m_run;
    QPushButton *m_cancel;
    QComboBox *m_family;
    QTreeView *m_events;
    QPlainTextEdit *m_output;
    QLabel *m_status;
};

} // namespace mneme::studio
