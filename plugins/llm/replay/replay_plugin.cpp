#include "replay_plugin.h"

#include "replay_provider.h"

namespace mneme {

std::unique_ptr<LlmProvider> ReplayPlugin::createLlm(const QString &, const Json &config)
{
    return std::make_unique<ReplayProvider>(ReplayProvider::Settings::read(config));
}

} // namespace mneme
