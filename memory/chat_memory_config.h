#pragma once

#include <mneme/core/json.h>
#include <mneme/memory/export.h>
#include <mneme/memory/token_counter.h>

#include <QString>
#include <optional>

namespace mneme {

// Where the memory blocks' content goes in what ChatMemory::get() returns.
enum class InsertMethod {
    System, // into the first system message (a new one at the start when there is none)
    User,   // into the latest user message (a new user message at the end when there is none)
};

// Every setting of a ChatMemory. JSON keys are the LlamaIndex Memory's (docs/chat-memory.md).
struct MNEME_MEMORY_EXPORT ChatMemoryConfig
{
    // The most tokens get() returns: the history that fits, the blocks' content and the extra messages.
    int tokenLimit = 30000;
    // The history's share of tokenLimit; past it the oldest messages are flushed to the blocks.
    double chatHistoryTokenRatio = 0.7;
    // Tokens moved out of the history by one flush; unset: 3000 (LlamaIndex's default), or a tenth of
    // tokenLimit when 3000 is not below it.
    std::optional<int> tokenFlushSize;
    InsertMethod insertMethod = InsertMethod::System;
    // The blocks ChatMemory::fromDefaults() builds, in order: a JSON array of block specs such as
    // {"type": "static", "name": "core_info", "static_content": "...", "priority": 0}
    // ("static", "fact_extraction", "vector", "long_term"; docs/chat-memory.md lists their keys).
    Json memoryBlocks = Json::array();
    // Where fromDefaults() keeps the sessions: null for the long-term memory's store file
    // (MemoryConfig::defaultStoragePath()), a path, or ":memory:".
    Json storage;
    // The LLM of fact_extraction blocks that name none: a model string or {"provider", "config"};
    // null for none (the offline analyzer extracts facts).
    Json llm;
    // Counts tokens (not part of the JSON): TokenCounter::estimate() unless set.
    TokenCounter tokenCounter;

    // tokenFlushSize, or its default for tokenLimit.
    int flushSize() const;
    // The most tokens the history keeps before a flush: tokenLimit x chatHistoryTokenRatio, rounded down.
    int historyBudget() const;

    // Reads {"token_limit", "chat_history_token_ratio", "token_flush_size", "insert_method",
    // "memory_blocks", "storage", "llm"}. Throws Error(InvalidArgument) naming the key for an unknown
    // key, a wrong type or a value out of range.
    static ChatMemoryConfig fromJson(const Json &json);
    // The settings as JSON (secrets of the llm masked).
    Json toJson() const;
    // Throws Error(InvalidArgument) naming the first invalid setting: token_limit must be positive,
    // chat_history_token_ratio in (0, 1], token_flush_size positive and below token_limit, and every
    // block spec valid (known type and keys, unique names, priorities of 0 or more).
    void validate() const;
};

} // namespace mneme
