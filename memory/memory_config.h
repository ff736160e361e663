#pragma once

#include <mneme/core/json.h>
#include <mneme/memory/export.h>

#include <QString>

namespace mneme {

// Every setting of a Memory. JSON keys are CrewAI's snake_case names (docs/configuration.md).
struct MNEME_MEMORY_EXPORT MemoryConfig
{
    // Parts, each null for the embedded default.
    Json llm;      // null: no LLM (offline analysis). A model string ("gpt-4o-mini") or {"provider","config"}.
    Json embedder; // null: {"provider": "builtin"}. A key string or {"provider","config"}.
    Json storage;  // null: SQLite at defaultStoragePath(). A path string, or {"provider","config":{"path"}}.

    // Composite score weights (Mneme adds the keyword signal).
    double semanticWeight = 0.5;
    double recencyWeight = 0.3;
    double importanceWeight = 0.2;
    double keywordWeight = 0.5;
    // Keyword search: a word found in a record's context (MemoryRecord::context, a conversation
    // turn's neighbours) counts this much of one found in its content (0: the content alone).
    double keywordContextWeight = 0.3;
    // The relevance floor: recall returns only records whose relevance (semantic and keyword evidence,
    // MatchSignals::relevance) is at least this, so a query about nothing stored returns nothing.
    // 0: every record with any semantic or keyword relation. RecallOptions::minRelevance overrides it.
    double minRelevance = 0.18;
    // Recency and importance count in a candidate's score scaled by (its ranking relevance / the best
    // candidate's) to this power: they order records about as relevant as the best, and fade quickly
    // below it. 0: always at their full weight.
    double standingExponent = 8;
    double recencyHalfLifeDays = 30;
    QString decayFunction = QStringLiteral("exponential"); // or "linear"
    double accessBoost = 0.0;                              // importance bonus per log2(1+access_count)

    // Save pipeline.
    double consolidationThreshold = 0.85;
    int consolidationLimit = 5;
    double defaultImportance = 0.5;
    double batchDedupThreshold = 0.98;
    int maxContentChars = 65536; // longer content is refused with a clear error

    // Conversation ingestion (rememberConversation): each turn's vector blends in the turns this many
    // places before and after it, each at this weight, and its keyword context holds their text.
    int conversationContextWindow = 2;
    double conversationContextWeight = 0.5;

    // Conversation ingestion (addConversation): earlier messages shown with the new ones (m), and
    // similar memories compared with each extracted fact (s).
    int conversationRecentMessages = 10;
    int conversationSimilarMemories = 10;

    // Deep recall.
    double confidenceThresholdHigh = 0.8;
    double confidenceThresholdLow = 0.5;
    double complexQueryThreshold = 0.7;
    int explorationBudget = 1;
    int queryAnalysisThreshold = 200;

    // Graph memory (docs/concepts.md, "Graph memory"): entities and relations extracted from every
    // saved record and kept beside the records. Off: nothing is extracted and recall is unchanged.
    bool graphMemory = false;
    // "auto" (the LLM's entity extractor and relationship generator when an LLM is configured, else
    // the offline extractor), "llm" or "offline".
    QString graphExtractor = QStringLiteral("auto");
    // Cosine similarity of two names above which they are taken for the same entity.
    double graphEntityThreshold = 0.9;
    // Cosine similarity of a query to a relation's text above which triplet recall finds it.
    double graphRelationThreshold = 0.5;
    // Hops from the query's entities that entity recall follows (1 or 2).
    int graphHops = 2;
    // How much a record's graph evidence (the best relation it gave) adds to its score in deep recall.
    double graphWeight = 0.15;

    // Views.
    bool readOnly = false;
    QString rootScope; // empty: none

    // Reads a JSON object of the keys above. A named weight profile ("profile": "conversation",
    // "research" or "support") sets the three reference weights first; explicit keys win. Throws
    // mneme::Error(InvalidArgument) naming the key for an unknown key, a wrong type or a value out of
    // range.
    static MemoryConfig fromJson(const Json &json);
    // The settings as JSON; secrets inside llm / embedder / storage (api keys, tokens) are masked.
    Json toJson() const;
    // Throws mneme::Error(InvalidArgument) naming the first invalid setting.
    void validate() const;

    // $MNEME_STORAGE_DIR/memory.db, else memory.db in the platform's folder for application data
    // ($XDG_DATA_HOME/mneme, else ~/.local/share/mneme on Linux).
    static QString defaultStoragePath();
    // ./.mneme/memory.db (the default store before version 0.3) when it exists and is not the default
    // store: a store the caller may be looking for. Empty otherwise.
    static QString legacyStoragePath();
};

} // namespace mneme
