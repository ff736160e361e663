#pragma once

// Private to the memory library: one LLM request made by memory analysis, with its events.

#include <mneme/core/llm_provider.h>

#include <QElapsedTimer>
#include <QFuture>
#include <QLoggingCategory>
#include <QString>
#include <memory>
#include <vector>

namespace mneme {

class Memory;

Q_DECLARE_LOGGING_CATEGORY(lcMemory)

// The steps that may call the LLM, as named in events.
namespace AnalysisStep {
inline constexpr const char *Save = "save_analysis";
inline constexpr const char *Consolidation = "consolidation";
inline constexpr const char *Extraction = "extraction";
inline constexpr const char *Query = "query_analysis";
inline constexpr const char *Exploration = "exploration";
inline constexpr const char *Facts = "conversation_facts";
inline constexpr const char *Update = "conversation_update";
inline constexpr const char *Summary = "conversation_summary";
inline constexpr const char *GraphEntities = "graph_entities";
inline constexpr const char *GraphRelations = "graph_relations";
} // namespace AnalysisStep

// Which analysis produced a result, as reported by Memory::analysisCompleted.
namespace AnalysisPath {
inline constexpr const char *Llm = "llm";
inline constexpr const char *Offline = "offline";   // the offline analyzer (no LLM, or the LLM failed)
inline constexpr const char *Defaults = "defaults"; // the documented defaults (the LLM failed)
inline constexpr const char *Skipped = "skipped";   // nothing to analyse (all fields given, short query)
} // namespace AnalysisPath

// Usage: start() then wait(). Never throws: a missing LLM, a provider that cannot be built, a provider
// error or a reply that does not follow the schema all end in wait() returning false with failure()
// saying why (secrets redacted by the provider layer). Emits Memory::llmCallStarted before the
// request and llmCallCompleted / llmCallFailed after it, from the calling thread.
class AnalysisCall
{
public:
    AnalysisCall(Memory *memory, const char *step);
    AnalysisCall(AnalysisCall &&) = default;
    ~AnalysisCall();

    // Sends the request without waiting for it.
    void start(ChatRequest request);
    // Waits for the reply; true when it arrived (validated against the schema when one was given).
    bool wait();

    // wait(), then `reader` on the structured reply: its value, or nullopt with *why set when the
    // call failed or the reader found nothing usable (`unusable` then says so).
    template<typename Reader>
    auto read(Reader &&reader, const QString &unusable, QString *why) -> decltype(reader(Json()))
    {
        if (!wait()) {
            *why = m_failure;
            return std::nullopt;
        }
        auto value = reader(m_response.structured);
        if (!value)
            *why = unusable;
        return value;
    }

    const ChatResponse &response() const { return m_response; }
    const QString &failure() const { return m_failure; }
    // False when no LLM is configured (failure() then says so).
    bool hadLlm() const { return m_hadLlm; }
    const char *step() const { return m_step; }

private:
    Memory *m_memory;
    const char *m_step;
    std::shared_ptr<LlmProvider> m_llm;
    QString m_model;
    QFuture<ChatResponse> m_future;
    QElapsedTimer m_timer;
    ChatResponse m_response;
    QString m_failure;
    bool m_started = false;
    bool m_waiting = false;
    bool m_done = false;
    bool m_hadLlm = true;
};

// Calls that run concurrently, at most `limit` in flight, started in the order they were added. Get a
// call with at() just before waiting for it: that starts it if it was not yet, and keeps the window
// full behind it. Waiting in the order of adding keeps `limit` requests on the wire (a provider's
// connection pool queues the rest, and their waiting would count against their timeouts).
class AnalysisBatch
{
public:
    explicit AnalysisBatch(Memory *memory, int limit = 8) : m_memory(memory), m_limit(limit) {}
    // Queues a call and returns its index.
    size_t add(const char *step, ChatRequest request);
    AnalysisCall &at(size_t index);

private:
    Memory *m_memory;
    int m_limit;
    size_t m_next = 0; // the first call not started
    std::vector<std::unique_ptr<AnalysisCall>> m_calls;
    std::vector<ChatRequest> m_requests;
};

// A [system, user] request for a structured reply.
ChatRequest structuredRequest(const QString &system, const QString &user, const Json &schema, const QString &schemaName);

// Emits Memory::analysisCompleted; logs a warning when `llmFailed` (the LLM was asked and failed, so
// the result came from a fallback).
void reportAnalysis(Memory *memory, const char *step, const char *path, const QString &reason = QString(),
                    bool llmFailed = false);

} // namespace mneme
