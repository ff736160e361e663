#include <mneme/runtime/agent.h>

#include "runtime/agent_kickoff_p.h"
#include "runtime/agent_run_p.h"
#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <QCoreApplication>
#include <QEventLoop>
#include <QFutureWatcher>
#include <QSet>
#include <QUuid>

namespace mneme {

namespace {

void require(const QString &value, const char *field, const QString &role)
{
    if (value.trimmed().isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    role.trimmed().isEmpty()
                        ? QStringLiteral("An agent needs a %1: set AgentConfig::%1.").arg(QLatin1String(field))
                        : QStringLiteral("Agent \"%1\" needs a %2: set AgentConfig::%2.").arg(role, QLatin1String(field)));
}

} // namespace

Agent::Agent(AgentConfig config) : m_config(std::move(config)), m_id(QUuid::createUuid().toString(QUuid::WithoutBraces))
{
    const QString &role = m_config.role;
    require(role, "role", role);
    require(m_config.goal, "goal", role);
    require(m_config.backstory, "backstory", role);
    if (!m_config.llm.isSet())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("Agent \"%1\" needs an LLM: set AgentConfig::llm to a provider or a model string such "
                                   "as \"gpt-4o-mini\" or \"ollama/llama3.2\".")
                        .arg(role));
    if (m_config.maxIter < 1)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("Agent \"%1\": maxIter must be at least 1 (got %2).").arg(role).arg(m_config.maxIter));
    if (m_config.maxExecutionTime < 0)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("Agent \"%1\": maxExecutionTime is in seconds and must not be negative (got %2); 0 means no "
                                   "limit.")
                        .arg(role)
                        .arg(m_config.maxExecutionTime));
    if (m_config.maxRetryLimit < 0)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("Agent \"%1\": maxRetryLimit must not be negative (got %2).").arg(role).arg(m_config.maxRetryLimit));
    QSet<QString> names;
    for (const auto &tool : m_config.tools) {
        if (!tool)
            throw Error(ErrorKind::InvalidArgument, QStringLiteral("Agent \"%1\" has a null tool.").arg(role));
        if (names.contains(tool->name()))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("Agent \"%1\" has two tools named \"%2\"; give each tool a unique name.").arg(role, tool->name()));
        names.insert(tool->name());
    }
    QSet<QString> servers;
    for (const McpServerConfig &server : m_config.mcpServers) {
        try {
            server.validate();
        } catch (const Error &e) {
            throw Error(e.kind(), QStringLiteral("Agent \"%1\": %2").arg(role, e.message()));
        }
        if (servers.contains(server.name))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("Agent \"%1\" has two MCP servers named \"%2\"; give each a unique name.").arg(role, server.name));
        servers.insert(server.name);
    }
    m_llm = m_config.llm.resolve();

    m_memory = m_config.memory;
    if (m_memory.kind() == MemoryRef::Kind::Own) {
        m_own = std::make_unique<mneme::Memory>(m_memory.ownConfig());
        m_own->setLlm(m_llm);
        m_memory = MemoryRef(m_own.get());
    }
}

Agent::~Agent() = default;

QString Agent::systemPrompt(const QString &role, const QString &goal, const QString &backstory)
{
    return QStringLiteral("You are %1.\n%2\n\nYour goal: %3\n\nWork on the task you are given until you can give its "
                          "complete final answer.")
        .arg(role.trimmed(), backstory.trimmed(), goal.trimmed());
}

QFuture<AgentOutput> Agent::kickoff(const QString &prompt, const AgentKickoffOptions &options)
{
    if (prompt.trimmed().isEmpty())
        return QtFuture::makeExceptionalFuture<AgentOutput>(
            Error(ErrorKind::InvalidArgument, QStringLiteral("Agent \"%1\": kickoff needs a prompt, the request to work on.").arg(role())));
    if (!m_config.mcpServers.empty())
        return QtFuture::makeExceptionalFuture<AgentOutput>(mcpServersNeedACrew(*this, QStringLiteral("Agent::kickoff")));
    // Held by a shared_ptr, the agent stays alive for the kickoff; otherwise its owner keeps it alive.
    std::shared_ptr<Agent> self = weak_from_this().lock();
    if (!self)
        self = std::shared_ptr<Agent>(std::shared_ptr<Agent>(), this);
    return AgentKickoff::start(std::move(self), prompt, options);
}

AgentOutput Agent::kickoffAndWait(const QString &prompt, const AgentKickoffOptions &options)
{
    if (!QCoreApplication::instance())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("Agent::kickoffAndWait needs a QCoreApplication (or QApplication): create one first."));
    QFuture<AgentOutput> future = kickoff(prompt, options);
    QEventLoop loop;
    QFutureWatcher<AgentOutput> watcher;
    QObject::connect(&watcher, &QFutureWatcherBase::finished, &loop, &QEventLoop::quit);
    watcher.setFuture(future);
    if (!future.isFinished())
        loop.exec();
    future.waitForFinished(); // rethrows the kickoff's Error
    if (future.isCanceled() || future.resultCount() == 0)
        throw Error(ErrorKind::Cancelled, QStringLiteral("Agent \"%1\": the kickoff was cancelled.").arg(role()));
    return future.result();
}

Json AgentOutput::toJson() const
{
    Json calls = Json::array();
    for (const AgentToolCall &c : toolCalls)
        calls.push_back({{"name", c.name}, {"arguments", c.arguments}, {"output", c.output}, {"is_error", c.isError}});
    return Json{{"raw", raw},
                {"agent_role", agentRole},
                {"tool_calls", calls},
                {"token_usage",
                 {{"prompt_tokens", usage.promptTokens}, {"completion_tokens", usage.completionTokens}, {"total_tokens", usage.totalTokens()}}},
                {"llm_requests", llmRequests},
                {"iterations", iterations}};
}

} // namespace mneme
