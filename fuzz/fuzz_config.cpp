// The configuration readers: a memory's (MemoryConfig, with the crews' and flows' memory settings),
// a provider's (ProviderSpec, ProviderSettings), the sqlite storage's and a flow definition's. Bad
// configuration is an Error; nothing else escapes.

#include "plugins/storage/sqlite/sqlite_storage.h"
#include <mneme/core/error.h>
#include <mneme/core/json.h>
#include <mneme/core/provider_settings.h>
#include <mneme/flows/flow_definition.h>
#include <mneme/memory/memory_config.h>

#include <cstdint>
#include <cstdlib>

using namespace mneme;

namespace {

template<typename F>
void refusedOrRead(F &&read)
{
    try {
        read();
    } catch (const Error &) {
        // refused, saying why
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Json config;
    if (!readJson(std::string_view(reinterpret_cast<const char *>(data), size), &config).isEmpty())
        return 0;
    refusedOrRead([&] {
        const MemoryConfig c = MemoryConfig::fromJson(config);
        (void)c.toJson();
    });
    refusedOrRead([&] { (void)ProviderSpec::llm(config, {QStringLiteral("openai"), QStringLiteral("ollama"), QStringLiteral("anthropic")}); });
    refusedOrRead([&] { (void)ProviderSpec::embedder(config); });
    refusedOrRead([&] {
        ProviderDefaults defaults;
        defaults.provider = QStringLiteral("openai");
        defaults.defaultModel = QStringLiteral("gpt-4o-mini");
        defaults.defaultBaseUrl = QStringLiteral("https://api.openai.com/v1");
        (void)ProviderSettings::read(config, defaults);
    });
    refusedOrRead([&] { (void)SqliteStorage::Options::fromJson(config); });
    refusedOrRead([&] {
        const FlowDefinition definition = FlowDefinition::fromJson(config);
        (void)definition.toDot();
        (void)definition.toJson();
    });
    return 0;
}
