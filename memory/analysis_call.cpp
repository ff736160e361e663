#include "memory/analysis_call_p.h"

#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <algorithm>

namespace mneme {

Q_LOGGING_CATEGORY(lcMemory, "mneme.memory", QtWarningMsg)

AnalysisCall::AnalysisCall(Memory *memory, const char *step)
    : m_memory(memory), m_step(step)
{
}

AnalysisCall::~AnalysisCall()
{
    // A call started and never waited for (an exception on the way) is abandoned, not leaked.
    if (m_started && !m_done && m_future.isValid() && !m_future.isFinished())
        m_future.cancel();
}

void AnalysisCall::start(ChatRequest request)
{
    m_started = true;
    try {
        m_llm = m_memory->llm();
    } catch (const std::exception &e) {
        m_failure = QStringLiteral("the configured LLM cannot be used: %1").arg(QString::fromUtf8(e.what()));
        m_done = true;
        Q_EMIT m_memory->llmCallFailed(QLatin1String(m_step), QString(), m_failure, 0);
        return;
    }
    if (!m_llm) {
        m_hadLlm = false;
        m_failure = QStringLiteral("no LLM is configured");
        m_done = true;
        return;
    }
    m_model = m_llm->id();
    Q_EMIT m_memory->llmCallStarted(QLatin1String(m_step), m_model);
    m_timer.start();
    try {
        m_future = m_llm->chat(request);
        m_waiting = true;
    } catch (const std::exception &e) {
        m_failure = QString::fromUtf8(e.what());
        m_done = true;
        Q_EMIT m_memory->llmCallFailed(QLatin1String(m_step), m_model, m_failure, m_timer.nsecsElapsed() / 1e6);
    }
}

bool AnalysisCall::wait()
{
    if (!m_started)
        return false;
    if (m_done)
        return m_failure.isEmpty();
    m_done = true;
    try {
        m_future.waitForFinished();
        if (m_future.isCanceled() || m_future.resultCount() < 1)
            throw Error(ErrorKind::Cancelled, QStringLiteral("the request was cancelled"));
        m_response = m_future.result();
    } catch (const std::exception &e) {
        m_failure = QString::fromUtf8(e.what());
        if (m_failure.isEmpty())
            m_failure = QStringLiteral("the LLM call failed");
    } catch (...) {
        m_failure = QStringLiteral("the LLM call failed with an unknown error");
    }
    const double ms = m_timer.nsecsElapsed() / 1e6;
    if (!m_failure.isEmpty()) {
        Q_EMIT m_memory->llmCallFailed(QLatin1String(m_step), m_model, m_failure, ms);
        return false;
    }
    Q_EMIT m_memory->llmCallCompleted(QLatin1String(m_step), m_model.isEmpty() ? m_response.model : m_model, ms,
                                      m_response.usage.promptTokens, m_response.usage.completionTokens);
    return true;
}

size_t AnalysisBatch::add(const char *step, ChatRequest request)
{
    m_calls.push_back(std::make_unique<AnalysisCall>(m_memory, step));
    m_requests.push_back(std::move(request));
    return m_calls.size() - 1;
}

AnalysisCall &AnalysisBatch::at(size_t index)
{
    const size_t end = std::min(m_calls.size(), index + size_t(std::max(1, m_limit)));
    for (; m_next < end; ++m_next)
        m_calls[m_next]->start(std::move(m_requests[m_next]));
    return *m_calls[index];
}

ChatRequest structuredRequest(const QString &system, const QString &user, const Json &schema, const QString &schemaName)
{
    ChatRequest r;
    r.messages = {ChatMessage::system(system), ChatMessage::user(user)};
    r.responseSchema = schema;
    r.responseSchemaName = schemaName;
    return r;
}

void reportAnalysis(Memory *memory, const char *step, const char *path, const QString &reason, bool llmFailed)
{
    if (llmFailed)
        qCWarning(lcMemory).noquote() << QStringLiteral("memory %1 fell back to the %2 path: %3")
                                             .arg(QLatin1String(step), QLatin1String(path), reason);
    Q_EMIT memory->analysisCompleted(QLatin1String(step), QLatin1String(path), reason);
}

} // namespace mneme
