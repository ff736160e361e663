#pragma once

// How the crew examples choose their LLM: a real provider when the environment configures one, else
// the replay cassette shipped beside the example, so every example also runs offline. The first line
// an example prints says which.

#include <mneme/runtime/llm_ref.h>

#include <QByteArray>
#include <QString>
#include <cstdio>

namespace example {

struct ExampleLlm
{
    mneme::LlmRef llm;
    QString line; // "LLM: ..." for the example's first line
};

inline QString env(const char *name)
{
    return QString::fromLocal8Bit(qgetenv(name)).trimmed();
}

inline ExampleLlm chooseLlm(const QString &cassette)
{
    // MNEME_EXAMPLE_LLM: any `llm` value, a model string or {"provider", "config"} as JSON.
    if (const QString spec = env("MNEME_EXAMPLE_LLM"); !spec.isEmpty()) {
        const mneme::Json parsed = mneme::Json::parse(spec.toStdString(), nullptr, false);
        const mneme::Json value = parsed.is_discarded() ? mneme::Json(spec.toStdString()) : parsed;
        return {mneme::LlmRef(value), QStringLiteral("LLM: %1 (from MNEME_EXAMPLE_LLM)").arg(mneme::LlmRef(value).describe())};
    }
    if (!env("OPENAI_API_KEY").isEmpty())
        return {"gpt-4o-mini", QStringLiteral("LLM: openai/gpt-4o-mini (OPENAI_API_KEY is set)")};
    if (!env("ANTHROPIC_API_KEY").isEmpty())
        return {"anthropic/claude-3-5-haiku-latest", QStringLiteral("LLM: anthropic/claude-3-5-haiku-latest (ANTHROPIC_API_KEY is set)")};
    if (!env("GEMINI_API_KEY").isEmpty() || !env("GOOGLE_API_KEY").isEmpty())
        return {"gemini/gemini-2.0-flash", QStringLiteral("LLM: gemini/gemini-2.0-flash (GEMINI_API_KEY is set)")};
    if (!env("OLLAMA_HOST").isEmpty()) {
        const QString model = env("OLLAMA_MODEL").isEmpty() ? QStringLiteral("llama3.2") : env("OLLAMA_MODEL");
        return {QStringLiteral("ollama/") + model, QStringLiteral("LLM: ollama/%1 at %2 (OLLAMA_HOST is set)").arg(model, env("OLLAMA_HOST"))};
    }
    const mneme::Json replay = {{"provider", "replay"}, {"config", {{"cassette", cassette.toStdString()}}}};
    return {mneme::LlmRef(replay),
            QStringLiteral("LLM: replay cassette %1 (no provider configured: set OPENAI_API_KEY, ANTHROPIC_API_KEY, "
                           "GEMINI_API_KEY or OLLAMA_HOST to run against a real model)")
                .arg(cassette)};
}

} // namespace example
