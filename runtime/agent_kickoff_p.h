#pragma once

// Internal to mneme_runtime: one Agent::kickoff(), an agent's run without a crew.

#include "runtime/agent_run_p.h"
#include <mneme/runtime/agent.h>

#include <QFuture>
#include <QList>
#include <QObject>
#include <QPromise>
#include <memory>

namespace mneme {

class ConsoleListener;

// Runs the agent's execution (AgentRun: recall, tools, retries, events), then stores the exchange in
// its chat memory and the answer's facts in its memory, and reports once those writes are done.
// Lives on the calling thread and deletes itself when done; cancelling the future stops it.
class AgentKickoff : public QObject
{
    Q_OBJECT
public:
    static QFuture<AgentOutput> start(std::shared_ptr<Agent> agent, const QString &prompt, const AgentKickoffOptions &options);
    // The agent's own thread waits on the kickoff's future, so the run cannot advance: the future
    // fails now (the wait returns with an error that names kickoffAndWait), the run is cancelled when
    // the thread's event loop runs again.
    void refuseBlockingWait();

private:
    AgentKickoff(std::shared_ptr<Agent> agent, const QString &prompt, const AgentKickoffOptions &options);
    ~AgentKickoff() override;
    void begin();
    void onExecuted(QFuture<AgentResult> f);
    // Waits (off this thread) for the background memory work, then settles the future.
    void settle(std::optional<AgentOutput> output, std::optional<Error> error);

    std::shared_ptr<Agent> m_agent;
    QString m_prompt;
    EventBus *m_bus = nullptr;
    MemoryRef m_memory;
    QPromise<AgentOutput> m_promise;
    QFuture<AgentResult> m_run;
    std::shared_ptr<UsageTally> m_tally = std::make_shared<UsageTally>();
    QList<QFuture<void>> m_background; // memory tool jobs, fact saves: waited for before settling
    bool m_settling = false;
    std::unique_ptr<ConsoleListener> m_console; // AgentConfig::verbose
};

} // namespace mneme
