#include "runtime/task_output.h"

namespace mneme {

namespace {
Json usageJson(const TokenUsage &u, int requests)
{
    return Json{{"prompt_tokens", u.promptTokens},
                {"completion_tokens", u.completionTokens},
                {"total_tokens", u.totalTokens()},
                {"successful_requests", requests}};
}
} // namespace

Json TaskOutput::toJson() const
{
    Json calls = Json::array();
    for (const AgentToolCall &c : toolCalls)
        calls.push_back({{"name", c.name}, {"arguments", c.arguments}, {"output", c.output}, {"is_error", c.isError}});
    return Json{{"task_id", taskId},
                {"name", name},
                {"description", description},
                {"expected_output", expectedOutput},
                {"summary", summary},
                {"raw", raw},
                {"json", json},
                {"output_format", outputFormat == Format::Json ? "json" : "raw"},
                {"agent", agent},
                {"tool_calls", calls},
                {"usage", usageJson(usage, llmRequests)},
                {"attempts", attempts}};
}

Json CrewOutput::toJson() const
{
    Json tasks = Json::array();
    for (const TaskOutput &t : tasksOutput)
        tasks.push_back(t.toJson());
    return Json{{"raw", raw}, {"json", json}, {"tasks_output", tasks}, {"token_usage", usageJson(tokenUsage, llmRequests)}};
}

} // namespace mneme
