#pragma once

#include <mneme/core/graph_store.h>
#include <mneme/core/json.h>
#include <mneme/core/memory_record.h>
#include <mneme/memory/export.h>

#include <QList>
#include <QMetaType>
#include <QStringList>

namespace mneme {

// The raw signals behind a score, each in 0..1 before weighting.
struct MNEME_MEMORY_EXPORT MatchSignals
{
    double semantic = 0;   // cosine similarity of the embeddings, clipped to 0..1 (decision 7)
    double recency = 0;    // decay of the record's age
    double importance = 0; // the record's importance (plus the access boost, when configured)
    double keyword = 0;    // keywordEvidence over the best keyword evidence among the recall's candidates
    // The storage's keyword evidence: BM25 of the query's words in the record, over the BM25 of an
    // average-length record holding each of them once, capped at 1.
    double keywordEvidence = 0;
    // What the relevance floor (min_relevance) judges: semantic and keyword evidence combined,
    // (semantic_weight*semantic + keyword_weight*keywordEvidence) / (semantic_weight + keyword_weight).
    double relevance = 0;
};

// One recall result.
struct MNEME_MEMORY_EXPORT MemoryMatch
{
    MemoryRecord record;
    // 0..1: the weighted mean of the signals, recency and importance scaled by the square of the match's
    // relevance relative to the most relevant match of the recall (docs/concepts.md, "Recall").
    double score = 0;
    MatchSignals signalValues; // "signals" in JSON (the C++ name avoids Qt's `signals` keyword macro)
    // "semantic", "keyword", "recency", "importance"; deep recall adds "time_filter" (the record passed
    // the period the query names) and "offline_analysis" (the offline analyzer read that period).
    QStringList matchReasons;
    QStringList evidenceGaps;

    // The block injected into prompts:
    //   - (score=0.84) content
    //     categories: a, b
    //     key: value          (each metadata entry with a value; lists joined with commas)
    QString format() const;
};

// One relation graph recall found (Memory::recallRelations).
struct MNEME_MEMORY_EXPORT RelationMatch
{
    GraphRelation relation;
    // 0..1: the entity path's and the triplet path's evidence combined,
    // 1 - (1 - 0.9 entity)(1 - 0.9 triplet): either path alone gives at most 0.9.
    double score = 0;
    double entityScore = 0;  // how well the query named one of its entities (halved at the second hop)
    double tripletScore = 0; // cosine similarity of the query to the relation's text (0: below the threshold)
    int hops = 0;            // 1 or 2 from a query entity; 0 when found by the triplet path alone
    // "entity", "entity_2hop", "triplet"
    QStringList matchReasons;
    // "- Alice -- lives_in -> Lisbon (since 2024-05-01)" as the memory block shows it.
    QString format() const;
};

// How a recall was answered (RecallOptions::stats).
struct MNEME_MEMORY_EXPORT RecallStats
{
    // False when an approximate index (an HNSW graph) answered one of the recall's vector searches (it
    // may miss a nearer record); true when each compared every vector its filter selects, and when the
    // recall made none.
    bool exact = true;
    // The store was building its index: the recall scanned exactly instead of waiting for it.
    bool indexBuilding = false;
    int vectorSearches = 0; // the vector searches made (a deep recall may make several)
    // The store's account of how they and the keyword searches were answered, each distinct one once,
    // in order: "HNSW graph of 3,225 records", "exact scan of 4,000 records: the HNSW graph is being
    // built"; a PostgreSQL store's keyword searches, "keyword index of 3,225 records", or "keywords on
    // the server (GIN index): the keyword index is loading".
    QStringList answers;
    double elapsedMs = 0; // the recall's time (as Memory::queryCompleted reports it)
};

// {"exact", "index_building", "vector_searches", "answers", "elapsed_ms"}.
MNEME_MEMORY_EXPORT void to_json(Json &j, const RecallStats &s);

// The relation's JSON plus "score", "entity_score", "triplet_score", "hops" and "match_reasons".
MNEME_MEMORY_EXPORT void to_json(Json &j, const RelationMatch &m);

// The record's JSON plus "score", "signals" and "match_reasons" (and "evidence_gaps" when any).
MNEME_MEMORY_EXPORT void to_json(Json &j, const MemoryMatch &m);

} // namespace mneme

Q_DECLARE_METATYPE(mneme::MemoryMatch)
Q_DECLARE_METATYPE(QList<mneme::MemoryMatch>)
