#include <mneme/runtime/task_output.h>

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

namespace {

QString text(const Json &j, const char *key)
{
    return j.contains(key) && j[key].is_string() ? QString::fromStdString(j[key].get<std::string>()) : QString();
}

int integer(const Json &j, const char *key)
{
    return j.contains(key) && j[key].is_number_integer() ? j[key].get<int>() : 0;
}

void readUsage(const Json &j, TokenUsage &usage, int &requests)
{
    const Json u = j.value("usage", j.value("token_usage", Json::object()));
    usage.promptTokens = integer(u, "prompt_tokens");
    usage.completionTokens = integer(u, "completion_tokens");
    requests = integer(u, "successful_requests");
}

} // namespace

void to_json(Json &j, const TaskOutput &o)
{
    j = o.toJson();
}

void from_json(const Json &j, TaskOutput &o)
{
    o = TaskOutput();
    o.taskId = text(j, "task_id");
    o.name = text(j, "name");
    o.description = text(j, "description");
    o.expectedOutput = text(j, "expected_output");
    o.summary = text(j, "summary");
    o.raw = text(j, "raw");
    o.json = j.value("json", Json());
    o.outputFormat = text(j, "output_format") == QLatin1String("json") ? TaskOutput::Format::Json : TaskOutput::Format::Raw;
    o.agent = text(j, "agent");
    if (j.contains("tool_calls") && j["tool_calls"].is_array())
        for (const Json &c : j["tool_calls"])
            o.toolCalls.push_back(AgentToolCall{text(c, "name"), c.value("arguments", Json()), text(c, "output"),
                                                c.value("is_error", false)});
    readUsage(j, o.usage, o.llmRequests);
    o.attempts = j.contains("attempts") ? integer(j, "attempts") : 1;
}

void to_json(Json &j, const CrewOutput &o)
{
    j = o.toJson();
}

void from_json(const Json &j, CrewOutput &o)
{
    o = CrewOutput();
    o.raw = text(j, "raw");
    o.json = j.value("json", Json());
    if (j.contains("tasks_output") && j["tasks_output"].is_array())
        for (const Json &t : j["tasks_output"])
            o.tasksOutput.push_back(t.get<TaskOutput>());
    readUsage(j, o.tokenUsage, o.llmRequests);
}

} // namespace mneme
