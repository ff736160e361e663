#pragma once

// The trip assistant of chat_agent/main.cpp, as a function, so that another program (Mneme Studio's
// Chat view) chats with the same agent, with the same chat memory, on the same cassette.

#include <mneme/core/plugin_registry.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/fact_extraction_memory_block.h>
#include <mneme/memory/long_term_memory_block.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/sqlite_chat_store.h>
#include <mneme/memory/static_memory_block.h>
#include <mneme/memory/vector_memory_block.h>
#include <mneme/runtime/agent.h>

#include <QStringList>
#include <memory>

namespace example {

// A memory block of our own (the seed's MentionCounter): counts how often the flushed messages mention
// a name. Its count is its state, so it survives restarts and is applied exactly once per flush.
class MentionCounter : public mneme::MemoryBlock
{
public:
    MentionCounter(const QString &name, const QString &mention, int priority) : mneme::MemoryBlock(name, priority), m_mention(mention) {}

    QString get(const std::vector<mneme::ChatMessage> &) override
    {
        return QStringLiteral("%1 was mentioned %2 times.").arg(m_mention).arg(m_count);
    }
    void put(const QList<mneme::SessionMessage> &messages, const mneme::FlushContext &) override
    {
        for (const mneme::SessionMessage &m : messages)
            m_count += int(m.message.content.count(m_mention));
    }
    // Shortening is all or nothing: the default truncate() leaves the block out.
    mneme::Json state() const override { return mneme::Json{{"count", m_count}}; }
    void restoreState(const mneme::Json &state) override { m_count = state.is_object() ? state.value("count", 0) : 0; }

private:
    QString m_mention;
    int m_count = 0;
};

// The example's six turns, in order; its cassette answers them.
inline QStringList tripTurns()
{
    return {
        QStringLiteral("Hi! I'm Logan. I'm planning a trip to Lisbon in May with my sister Ana."),
        QStringLiteral("We have a budget of 1800 EUR for the two of us. Flights are 320 EUR each. What is left for the rest?"),
        QStringLiteral("Ana is vegetarian, and I don't eat fish. Where should we eat?"),
        QStringLiteral("Logan again: we prefer walking over taxis. What should we see on day one?"),
        QStringLiteral("What did we say is left of our budget after the flights?"),
        QStringLiteral("Thanks! Summarise what you know about us."),
    };
}

// The assistant and what it remembers with: a Memory over the SQLite file `db` (the long-term
// block's facts go there), the chat session "lisbon-trip" in the same file, its memory blocks (the
// seed's static, fact extraction and vector blocks, a long-term block and MentionCounter).
struct TripChat
{
    std::unique_ptr<mneme::Memory> memory;
    std::shared_ptr<mneme::ChatMemory> chatMemory;
    std::shared_ptr<mneme::Agent> assistant;
};

// `stream`: the assistant streams its answers (AgentConfig::stream).
inline TripChat makeTripChat(const std::shared_ptr<mneme::LlmProvider> &llm, const QString &db, bool stream = false)
{
    using namespace mneme;
    TripChat trip;
    MemoryConfig memoryConfig;
    memoryConfig.storage = db.toStdString();
    trip.memory = std::make_unique<Memory>(memoryConfig);
    trip.memory->setLlm(llm); // the long-term block's fact extraction

    // The seed's blocks, and two more.
    VectorMemoryBlock::Options vector;
    vector.similarityTopK = 2;
    vector.retrievalContextWindow = 5;
    vector.priority = 2;
    LongTermMemoryBlock::Options longTerm;
    longTerm.scope = QStringLiteral("/trips");
    longTerm.similarityTopK = 3;
    longTerm.priority = 3;
    std::vector<std::shared_ptr<MemoryBlock>> blocks = {
        std::make_shared<StaticMemoryBlock>(QStringLiteral("core_info"),
                                            QStringLiteral("The user is Logan. He lives in Saskatoon and works at a bakery."), 0),
        std::make_shared<FactExtractionMemoryBlock>(QStringLiteral("extracted_info"), llm, 50, 1),
        std::make_shared<VectorMemoryBlock>(QStringLiteral("vector_memory"), trip.memory.get(), vector),
        std::make_shared<LongTermMemoryBlock>(QStringLiteral("long_term"), trip.memory.get(), longTerm),
        std::make_shared<MentionCounter>(QStringLiteral("mentions"), QStringLiteral("Logan"), 4),
    };
    // A small budget, so that the first turns are flushed into the blocks within six turns.
    ChatMemoryConfig config;
    config.tokenLimit = 900;
    config.chatHistoryTokenRatio = 0.4;
    config.tokenFlushSize = 150;
    config.insertMethod = InsertMethod::System;
    trip.chatMemory = std::make_shared<ChatMemory>(QStringLiteral("lisbon-trip"), config, std::make_shared<SqliteChatStore>(db), blocks);

    trip.assistant = std::make_shared<Agent>(AgentConfig{
        .role = QStringLiteral("Trip Assistant"),
        .goal = QStringLiteral("Help the user plan a trip, remembering what they told you."),
        .backstory = QStringLiteral("You plan city trips. You use the calculator for any arithmetic and answer in two or three "
                                    "sentences."),
        .llm = llm,
        .tools = {PluginRegistry::instance().createTool(QStringLiteral("calculator"))},
        .stream = stream,
    });
    return trip;
}

} // namespace example
