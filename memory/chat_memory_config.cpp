#include <mneme/memory/chat_memory_config.h>

#include "memory/memory_block_specs_p.h"
#include <mneme/core/error.h>
#include <mneme/memory/memory_config.h>

#include <cmath>

namespace mneme {

namespace {

[[noreturn]] void bad(const char *key, const QString &why)
{
    throw Error(ErrorKind::InvalidArgument, QStringLiteral("configuration key \"%1\" %2").arg(QLatin1String(key), why));
}

int integer(const Json &v, const char *key)
{
    if (!v.is_number_integer())
        bad(key, QStringLiteral("must be a whole number"));
    const long long n = v.get<long long>();
    if (n < std::numeric_limits<int>::min() || n > std::numeric_limits<int>::max())
        bad(key, QStringLiteral("is out of range (got %1)").arg(n));
    return int(n);
}

void checkPart(const Json &v, const char *key)
{
    if (v.is_null() || v.is_string())
        return;
    if (!v.is_object() || !v.contains("provider") || !v["provider"].is_string() || (v.contains("config") && !v["config"].is_object()))
        bad(key, QStringLiteral("must be a model string or an object with \"provider\" and \"config\""));
}

} // namespace

int ChatMemoryConfig::flushSize() const
{
    constexpr int kDefaultFlushSize = 3000;
    if (tokenFlushSize)
        return *tokenFlushSize;
    return tokenLimit > kDefaultFlushSize ? kDefaultFlushSize : std::max(1, tokenLimit / 10);
}

int ChatMemoryConfig::historyBudget() const
{
    return int(std::floor(double(tokenLimit) * chatHistoryTokenRatio + 1e-9));
}

void ChatMemoryConfig::validate() const
{
    if (tokenLimit < 1)
        bad("token_limit", QStringLiteral("must be a positive number of tokens (got %1)").arg(tokenLimit));
    if (!std::isfinite(chatHistoryTokenRatio) || chatHistoryTokenRatio <= 0 || chatHistoryTokenRatio > 1)
        bad("chat_history_token_ratio", QStringLiteral("must be above 0 and at most 1 (got %1)").arg(chatHistoryTokenRatio));
    if (historyBudget() < 1)
        bad("chat_history_token_ratio",
            QStringLiteral("leaves the history no token of token_limit %1 (got %2); raise one of them").arg(tokenLimit).arg(chatHistoryTokenRatio));
    if (tokenFlushSize && *tokenFlushSize < 1)
        bad("token_flush_size", QStringLiteral("must be a positive number of tokens (got %1)").arg(*tokenFlushSize));
    if (flushSize() >= tokenLimit)
        bad("token_flush_size", QStringLiteral("must be below token_limit (%1 is not below %2)").arg(flushSize()).arg(tokenLimit));
    if (!storage.is_null() && !(storage.is_string() && !QString::fromStdString(storage.get<std::string>()).trimmed().isEmpty()))
        bad("storage", QStringLiteral("must be the path of the chat store's file, or \":memory:\""));
    checkPart(llm, "llm");
    BlockSpecs::check(memoryBlocks);
}

ChatMemoryConfig ChatMemoryConfig::fromJson(const Json &json)
{
    if (json.is_null())
        return ChatMemoryConfig();
    if (!json.is_object())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("the chat memory configuration must be a JSON object"));
    ChatMemoryConfig c;
    for (auto it = json.begin(); it != json.end(); ++it) {
        const std::string &key = it.key();
        const Json &v = it.value();
        if (key == "token_limit") {
            c.tokenLimit = integer(v, "token_limit");
        } else if (key == "chat_history_token_ratio") {
            if (!v.is_number())
                bad("chat_history_token_ratio", QStringLiteral("must be a number"));
            c.chatHistoryTokenRatio = v.get<double>();
        } else if (key == "token_flush_size") {
            if (!v.is_null())
                c.tokenFlushSize = integer(v, "token_flush_size");
        } else if (key == "insert_method") {
            const std::string m = v.is_string() ? v.get<std::string>() : std::string();
            if (m == "system")
                c.insertMethod = InsertMethod::System;
            else if (m == "user")
                c.insertMethod = InsertMethod::User;
            else
                bad("insert_method", QStringLiteral("must be \"system\" or \"user\""));
        } else if (key == "memory_blocks") {
            c.memoryBlocks = v.is_null() ? Json::array() : v;
        } else if (key == "storage") {
            c.storage = v;
        } else if (key == "llm") {
            c.llm = v;
        } else {
            bad(key.c_str(), QStringLiteral("is not a chat memory setting; the keys are token_limit, chat_history_token_ratio, "
                                            "token_flush_size, insert_method, memory_blocks, storage and llm"));
        }
    }
    c.validate();
    return c;
}

Json ChatMemoryConfig::toJson() const
{
    Json j = {{"token_limit", tokenLimit},
              {"chat_history_token_ratio", chatHistoryTokenRatio},
              {"token_flush_size", flushSize()},
              {"insert_method", insertMethod == InsertMethod::System ? "system" : "user"},
              {"memory_blocks", memoryBlocks.is_null() ? Json::array() : memoryBlocks},
              {"storage", storage}};
    // The memory configuration's masking of secrets, reused for the LLM and the blocks' LLMs.
    MemoryConfig mask;
    mask.llm = llm;
    j["llm"] = mask.toJson()["llm"];
    for (Json &spec : j["memory_blocks"])
        if (spec.is_object() && spec.contains("llm")) {
            mask.llm = spec["llm"];
            spec["llm"] = mask.toJson()["llm"];
        }
    return j;
}

} // namespace mneme
