#pragma once

// Private to the memory library: the JSON specs of the built-in memory blocks
// (ChatMemoryConfig::memoryBlocks), checked and built.

#include <mneme/core/json.h>
#include <mneme/core/llm_provider.h>

#include <memory>
#include <vector>

namespace mneme {

class Memory;
class MemoryBlock;

namespace BlockSpecs {

// Throws Error(InvalidArgument) naming the block and the key: not an array of objects, an unknown
// type or key, a wrong type, a value out of range, a repeated name.
void check(const Json &specs);

// The blocks of `specs` (checked first). Vector and long-term blocks keep their content in `memory`
// (Error(InvalidArgument) when it is null); fact-extraction blocks use their own "llm", else `llm`
// (which may be null: offline).
std::vector<std::shared_ptr<MemoryBlock>> build(const Json &specs, Memory *memory, const std::shared_ptr<LlmProvider> &llm);

// An LLM built through the PluginRegistry from a model string or {"provider", "config"}.
std::shared_ptr<LlmProvider> llmFrom(const Json &spec);

} // namespace BlockSpecs

} // namespace mneme
