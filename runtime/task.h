#pragma once

#include <mneme/core/json.h>
#include <mneme/core/tool.h>
#include <mneme/runtime/export.h>
#include <mneme/runtime/guardrail.h>
#include <mneme/runtime/task_output.h>

#include <QMutex>
#include <QString>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace mneme {

class Agent;
class Task;

// A piece of work for an agent. Field names follow CrewAI's Task.
struct MNEME_RUNTIME_EXPORT TaskConfig
{
    QString name;                 // optional; shown in events and outputs
    QString description;          // required; may hold {placeholders} filled from kickoff inputs
    QString expectedOutput;       // required; may hold {placeholders}
    std::shared_ptr<Agent> agent; // required in a sequential crew
    // Unset: the outputs of every earlier task. A list: those tasks' outputs. An empty list: none.
    std::optional<std::vector<std::shared_ptr<Task>>> context;
    bool asyncExecution = false;                      // runs while the following tasks run (see docs/crews.md)
    Json outputJson;                                  // a JSON schema: the final answer must be a value that follows it
    QString outputFile;                               // where the final text (or JSON) is written; may hold {placeholders}
    bool createDirectory = true;                      // create the output file's directory when missing
    std::vector<std::shared_ptr<Tool>> tools;         // replace the agent's tools for this task when not empty
    std::vector<Guardrail> guardrails;                // checked in order on every output
    int guardrailMaxRetries = 3;                      // re-executions allowed per guardrail (and for the schema)
    std::function<void(const TaskOutput &)> callback; // on the crew's thread, after the guardrails passed
    bool markdown = false;                            // ask for Markdown
};

// A task, built once and shared by crews (std::shared_ptr). The constructor checks the configuration
// and throws Error(InvalidArgument) naming the task and the field.
class MNEME_RUNTIME_EXPORT Task
{
public:
    explicit Task(TaskConfig config);
    Task(const Task &) = delete;
    Task &operator=(const Task &) = delete;

    QString id() const { return m_id; }
    const TaskConfig &config() const { return m_config; }
    // The name, else the start of the description (for messages and events).
    QString displayName() const;
    // The output of the last run that completed this task, if any.
    std::optional<TaskOutput> output() const;
    void setOutput(const TaskOutput &output);

    // The user message of the task: description, expected output, JSON-schema and Markdown
    // instructions (context and memories are added by the crew).
    static QString prompt(const QString &description, const QString &expectedOutput, const Json &outputJson, bool markdown);
    // `text` with each {name} replaced by inputs[name] (strings as they are, other values as JSON).
    // Braces that do not enclose a plain name ({"a": 1}, {0}, { x }) stay. Throws
    // Error(InvalidArgument) naming `where` and the missing input when inputs lack a name used.
    static QString interpolate(const QString &text, const Json &inputs, const QString &where);
    // Throws Error(InvalidArgument) naming `label` for an empty output file path or one with a ".."
    // segment (it would leave its folder).
    static void checkOutputFile(const QString &path, const QString &label);

private:
    TaskConfig m_config;
    QString m_id;
    mutable QMutex m_mutex;
    std::optional<TaskOutput> m_output;
};

} // namespace mneme
