#pragma once

#include <mneme/core/json.h>
#include <mneme/core/llm_provider.h>
#include <mneme/runtime/agent_executor.h>
#include <mneme/runtime/export.h>

#include <QMetaType>
#include <QString>
#include <vector>

namespace mneme {

// What one task produced.
struct MNEME_RUNTIME_EXPORT TaskOutput
{
    enum class Format {
        Raw,
        Json
    };

    QString taskId;
    QString name;
    QString description; // as run (placeholders filled in)
    QString expectedOutput;
    QString summary; // the description's first words
    QString raw;     // the final answer (or a guardrail's replacement)
    Json json;       // with TaskConfig::outputJson: the value, checked against the schema; else null
    Format outputFormat = Format::Raw;
    QString agent; // the role of the agent that produced it
    std::vector<AgentToolCall> toolCalls;
    TokenUsage usage;    // every LLM call of the task: the agent's, delegated coworkers', guardrails', conversion
    int llmRequests = 0; // how many of those calls succeeded
    int attempts = 1;    // executions of the agent (retries after a guardrail or schema failure included)

    // {"task_id","name","description","expected_output","summary","raw","json","output_format","agent",
    //  "tool_calls": [{"name","arguments","output","is_error"}], "usage": {...}, "attempts"}
    Json toJson() const;
};

// What a kickoff produced: the last task output that has any text, every task's output in order, and
// the token usage of the whole crew.
struct MNEME_RUNTIME_EXPORT CrewOutput
{
    QString raw;
    Json json;
    std::vector<TaskOutput> tasksOutput;
    TokenUsage tokenUsage;
    int llmRequests = 0; // successful LLM calls

    Json toJson() const;
};

// nlohmann JSON conversions (the shapes of toJson()), so outputs travel as JSON: a flow step that
// kicks off a crew returns its QFuture<CrewOutput>, and the next step reads the CrewOutput back.
MNEME_RUNTIME_EXPORT void to_json(Json &j, const TaskOutput &o);
MNEME_RUNTIME_EXPORT void from_json(const Json &j, TaskOutput &o);
MNEME_RUNTIME_EXPORT void to_json(Json &j, const CrewOutput &o);
MNEME_RUNTIME_EXPORT void from_json(const Json &j, CrewOutput &o);

} // namespace mneme

Q_DECLARE_METATYPE(mneme::TaskOutput)
Q_DECLARE_METATYPE(mneme::CrewOutput)
