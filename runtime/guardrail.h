#pragma once

#include <mneme/runtime/export.h>
#include <mneme/runtime/llm_ref.h>
#include <mneme/runtime/task_output.h>

#include <QString>
#include <functional>
#include <optional>
#include <type_traits>

namespace mneme {

// A guardrail's verdict on a task output.
struct MNEME_RUNTIME_EXPORT GuardrailResult
{
    bool success = true;
    QString error;                 // on failure: what is wrong, told to the agent on its next attempt
    std::optional<QString> output; // on success: replaces the output's text (then re-checked by the schema)

    static GuardrailResult pass(std::optional<QString> replacement = std::nullopt) { return {true, {}, std::move(replacement)}; }
    static GuardrailResult fail(const QString &error) { return {false, error, std::nullopt}; }
};

// A check a task output must pass before the task completes: a C++ callable, or a criterion in words
// that an LLM judges. A failing output makes the agent try again with the error and its previous
// result (TaskConfig::guardrailMaxRetries times at most per guardrail).
//
//   .guardrails = {[](const TaskOutput &o) { return o.raw.size() < 2000 ? GuardrailResult::pass()
//                                                 : GuardrailResult::fail("Keep it under 2000 characters."); },
//                  Guardrail("The summary names at least two sources.")}
//
// A callable runs on the crew's thread: keep it quick (an exception it throws counts as a failure with
// the exception's text). A criterion is judged by `llm`, else by the task agent's LLM.
class MNEME_RUNTIME_EXPORT Guardrail
{
public:
    using Function = std::function<GuardrailResult(const TaskOutput &)>;

    template<typename F, std::enable_if_t<std::is_invocable_r_v<GuardrailResult, F, const TaskOutput &>, int> = 0>
    Guardrail(F check) : m_function(std::move(check))
    {}
    Guardrail(const QString &criterion, LlmRef llm = {}) : m_criterion(criterion), m_llm(std::move(llm)) {}
    Guardrail(const char *criterion) : Guardrail(QString::fromUtf8(criterion)) {}

    bool isCriterion() const { return !m_function; }
    QString criterion() const { return m_criterion; }
    const Function &function() const { return m_function; }
    const LlmRef &llm() const { return m_llm; }

private:
    Function m_function;
    QString m_criterion;
    LlmRef m_llm;
};

} // namespace mneme
