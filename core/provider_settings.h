#pragma once

#include <mneme/core/export.h>
#include <mneme/core/http_client.h>
#include <mneme/core/json.h>

#include <QString>
#include <QStringList>
#include <QUrl>
#include <optional>

namespace mneme {

// What a provider plugin needs to know to read its configuration.
struct MNEME_CORE_EXPORT ProviderDefaults
{
    QString provider;       // the key the user wrote: "openai", "azure", "google-generativeai", ...
    QString defaultModel;   // empty: `model` is required
    QString defaultBaseUrl; // the public endpoint
    QStringList apiKeyEnv;  // environment variables tried in order when api_key is absent
    QStringList baseUrlEnv; // environment variables tried in order when no base URL is given
    // An API key is needed when the base URL is the public default (a local OpenAI-compatible
    // server usually needs none).
    bool apiKeyRequired = true;
    bool apiKeyAlwaysRequired = false; // also with another base URL (Azure: every endpoint needs a key)
    int defaultTimeoutMs = 120000;
    QStringList extraKeys; // the provider's own keys (deployment_id, api_version, dimensions, ...)
};

// The settings every provider shares, read from the `config` object of {"provider", "config"}.
//
// Common keys: model (also model_name, model_id), base_url (also api_base, url, host), api_key,
// timeout (seconds), max_retries, max_rpm, proxy, temperature, max_tokens. Any other key must be one
// of the provider's extraKeys, else Error(InvalidArgument) lists the accepted keys.
struct MNEME_CORE_EXPORT ProviderSettings
{
    QString provider;
    QString model;
    QUrl baseUrl; // without a trailing slash
    bool baseUrlIsDefault = true;
    QString apiKey;       // never logged, never in errors (HttpPolicy::secrets holds it)
    QString apiKeySource; // "config", the environment variable's name, or empty
    HttpPolicy http;
    std::optional<double> temperature;
    std::optional<int> maxTokens;
    Json config = Json::object(); // the whole config, for the provider's own keys

    static ProviderSettings read(const Json &config, const ProviderDefaults &defaults);

    // Throws Error(Authentication) naming api_key and the environment variables when the provider
    // needs a key and has none. Providers call it before sending, so construction never fails for a
    // missing key.
    void requireApiKey(const ProviderDefaults &defaults) const;

    // The URL of `path` under the base URL ("/chat/completions" -> https://api.openai.com/v1/chat/completions).
    QUrl endpoint(const QString &path) const;

    // Typed readers of the provider's own keys; throw Error(InvalidArgument) naming the key.
    QString string(const char *key, const QString &fallback = {}) const;
    int integer(const char *key, int fallback) const;
};

// How a configuration names a provider: a model string or {"provider": key, "config": {...}}.
struct MNEME_CORE_EXPORT ProviderSpec
{
    QString key;
    Json config = Json::object();

    // LLM: "gpt-4o-mini" -> openai; "ollama/llama3.2" -> ollama with model llama3.2; "azure/<deployment>"
    // -> azure with deployment_id; a bare "claude-..." or "gemini-..." -> anthropic / gemini. A prefix
    // that is not a known LLM key ("meta-llama/Llama-3-8B") is an OpenAI(-compatible) model name as a
    // whole. `knownKeys` are the registry's LLM keys.
    static ProviderSpec llm(const Json &spec, const QStringList &knownKeys);
    // Embedder: a key ("builtin", "ollama"), "provider/model" ("openai/text-embedding-3-small"), or
    // an object. Null means the builtin embedder.
    static ProviderSpec embedder(const Json &spec);
};

} // namespace mneme
