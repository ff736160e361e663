#pragma once

#include <mneme/core/llm_provider.h>
#include <mneme/memory/export.h>
#include <mneme/memory/memory_block.h>

#include <QStringList>
#include <memory>

namespace mneme {

// Facts about the conversation, extracted from each batch of flushed messages: the seed's
// FactExtractionMemoryBlock. With an LLM, one call lists the new facts (the existing ones are shown so
// that it does not repeat them) and, when the list grows past maxFacts, a second call condenses it to
// at most maxFacts (its answer replaces the list). Without an LLM, or when a call fails, the offline
// analyzer does it: the user's messages split into statements, and the oldest facts dropped past
// maxFacts; ChatMemory::analysisCompleted() says which path ran and why. The facts survive restarts
// (state()). Section <fact_extraction_memory>, one <fact> per fact; truncation drops the oldest.
class MNEME_MEMORY_EXPORT FactExtractionMemoryBlock : public MemoryBlock
{
public:
    // Step names of its LLM calls in ChatMemory's llmCall* and analysisCompleted signals.
    static constexpr const char *kExtractionStep = "chat_fact_extraction";
    static constexpr const char *kCondensationStep = "chat_fact_condensation";

    // `llm` may be null (offline). Throws Error(InvalidArgument) for maxFacts below 1.
    FactExtractionMemoryBlock(const QString &name, std::shared_ptr<LlmProvider> llm, int maxFacts = 50, int priority = 0);

    QStringList facts() const { return m_facts; }
    int maxFacts() const { return m_maxFacts; }
    std::shared_ptr<LlmProvider> llm() const { return m_llm; }

    QString get(const std::vector<ChatMessage> &messages) override;
    void put(const QList<SessionMessage> &messages, const FlushContext &flush) override;
    QString truncate(const QString &content, int tokens) override;
    QString section() const override;
    QString render(const QString &content) const override;
    Json state() const override;
    void restoreState(const Json &state) override;

private:
    // The facts a reply lists (trimmed, one line each, without repeats); nullopt when it has no list.
    static std::optional<QStringList> readFacts(const Json &reply);
    std::optional<QStringList> ask(const char *step, const ChatRequest &request, QString *why);
    void report(const char *step, const char *path, const QString &reason, bool llmFailed);

    std::shared_ptr<LlmProvider> m_llm;
    int m_maxFacts;
    QStringList m_facts;
};

} // namespace mneme
