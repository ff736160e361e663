#pragma once

#include <mneme/core/export.h>
#include <mneme/core/json.h>
#include <mneme/core/memory_record.h>

#include <QDateTime>
#include <QHash>
#include <QString>
#include <QStringList>
#include <vector>

namespace mneme {

// Graph memory (Mem0's Mem0g): entities as nodes and relations between them as directed labelled
// edges, kept beside the records and derived from them. Every entity and relation belongs, like a
// record, to a scope, a source and a privacy; it lists the records it came from. A relation that a
// newer one contradicts is marked invalid (with the time and the reason), never deleted.

// Where a graph change comes from: the record whose save made it.
struct MNEME_CORE_EXPORT GraphOrigin
{
    QString recordId;
    QString scope;
    QString source;
    bool isPrivate = false;
    QDateTime at; // the record's creation time: the time the graph learnt it
};

struct MNEME_CORE_EXPORT GraphEntity
{
    qint64 id = 0;
    QString name;           // as first written ("Alice Smith")
    QString normalizedName; // normalize(name): how the same entity written differently is found
    QString type;           // "person", "place", "date", ... (free text, lower case)
    Embedding embedding;    // of the name; empty when not read
    QString scope;
    QString source;
    bool isPrivate = false;
    QDateTime createdAt;
    QStringList recordIds; // the records it came from

    // Lower case, diacritics removed, punctuation dropped, whitespace collapsed, a leading article
    // ("the", "a", "an") dropped: "The  Café-Lumière" -> "cafe lumiere".
    static QString normalize(const QString &name);
};

struct MNEME_CORE_EXPORT GraphRelation
{
    qint64 id = 0;
    qint64 sourceId = 0;
    QString sourceName;
    QString label; // lower case, words joined by '_': "lives_in"
    qint64 destinationId = 0;
    QString destinationName;
    bool valid = true;
    QDateTime createdAt;
    QDateTime invalidatedAt; // set when invalid
    QString why;             // why it was invalidated
    QString scope;
    QString source;
    bool isPrivate = false;
    QStringList recordIds; // the records it came from
    QString extractor;     // what found it: "llm", "offline" (the weaker pattern extractor), or another name

    // "alice -- lives_in -> lisbon": the text its embedding is made of, and how it is shown.
    QString text() const;
    // Known at `t` and not yet invalidated then.
    bool validAt(const QDateTime &t) const;
};

// {"id","source","label","destination","valid","created_at","invalidated_at","why","scope","record_ids",...}
MNEME_CORE_EXPORT void to_json(Json &j, const GraphEntity &e);
MNEME_CORE_EXPORT void to_json(Json &j, const GraphRelation &r);

struct MNEME_CORE_EXPORT ScoredEntity
{
    GraphEntity entity;
    double score = 0; // cosine similarity
};

struct MNEME_CORE_EXPORT ScoredRelation
{
    GraphRelation relation;
    double score = 0; // cosine similarity of the relation's text to the query
};

// Which graph rows a read sees: the scopes and privacy rules of RecordFilter, and time.
struct MNEME_CORE_EXPORT GraphFilter
{
    QStringList scopes; // scope prefixes (whole path components); empty: every scope
    // As RecordFilter: a row is visible when it is not private, or includePrivate is set, or its
    // source equals `source`.
    bool applyPrivacy = false;
    bool includePrivate = false;
    QString source;
    // Relations: only those valid at `asOf` (created by then, not invalidated by then); invalid
    // `asOf`: those valid now. includeInvalid: every relation, valid or not (asOf ignored).
    QDateTime asOf;
    bool includeInvalid = false;

    bool sees(const QString &scope, const QString &source, bool isPrivate) const;
    bool admits(const GraphRelation &r) const; // sees() and the time conditions
};

// An entity an extractor found in a record.
struct MNEME_CORE_EXPORT GraphEntityInput
{
    QString name;
    QString type;
    Embedding embedding; // of the name (resolution by similarity); may be empty
};

// A relation an extractor found: source -label-> destination.
struct MNEME_CORE_EXPORT GraphTripletInput
{
    GraphEntityInput source;
    QString label;
    GraphEntityInput destination;
    Embedding embedding; // of GraphRelation::text(); may be empty
    // The label holds one value at a time for a source (lives_in, works_at, is_married_to): valid
    // relations with the same source and label and another destination are invalidated.
    bool exclusive = false;
    // Valid relations (by id) the extractor found this one contradicts (an LLM update resolver).
    std::vector<qint64> contradicts;
    QString extractor; // GraphRelation::extractor
};

// What one record contributes to the graph.
struct MNEME_CORE_EXPORT GraphExtraction
{
    GraphOrigin origin;
    std::vector<GraphEntityInput> entities;
    std::vector<GraphTripletInput> triplets;
};

struct MNEME_CORE_EXPORT GraphWriteOptions
{
    // Cosine similarity of names above which an entity is taken for a stored one with another
    // normalised name (same scope, source and privacy). Above 1: by normalised name only.
    double entitySimilarity = 0.92;
};

struct MNEME_CORE_EXPORT GraphWriteResult
{
    int entitiesAdded = 0;
    int entitiesResolved = 0; // found as a stored entity (by name or similarity)
    int relationsAdded = 0;
    int relationsLinked = 0; // the same valid relation already stored: the record is added to its sources
    int relationsInvalidated = 0;
};

// One change the graph history holds: what undoing a record's save reverts.
struct MNEME_CORE_EXPORT GraphChange
{
    enum class Kind {
        AddEntity,  // the entity was created by the record
        LinkEntity, // the record was added to a stored entity's sources
        AddRelation,
        LinkRelation,
        Invalidate // the record's relation invalidated this one
    };
    qint64 seq = 0;
    QString recordId;
    Kind kind = Kind::AddEntity;
    qint64 rowId = 0; // the entity's or relation's id
    QDateTime at;

    static QString kindName(Kind k); // "ADD_ENTITY", "LINK_ENTITY", "ADD_RELATION", "LINK_RELATION", "INVALIDATE"
};

// The graph half of a store, reached through StorageBackend::graph(). Thread-safe like the backend;
// every method throws mneme::Error on failure and leaves the store as it was.
class MNEME_CORE_EXPORT GraphStore
{
public:
    virtual ~GraphStore() = default;

    // Adds what the records' extractions found, in one transaction, with a graph history entry per
    // change. Entities resolve to stored ones of the same scope, source and privacy by normalised
    // name, then by embedding similarity; a triplet already stored and valid gains the record as a
    // source; an exclusive or contradicting triplet invalidates the relations it replaces.
    virtual GraphWriteResult write(const std::vector<GraphExtraction> &extractions, const GraphWriteOptions &options) = 0;
    // Reverts every graph change of these records (newest first) and forgets them: sources removed,
    // entities and relations left without a source deleted, relations they invalidated valid again.
    // Used when the records are deleted (the undo of their save). Returns the changes reverted.
    virtual int revertRecords(const QStringList &recordIds) = 0;
    // Deletes the graph at or below scopePrefix ("/": everything, with the graph history).
    virtual void reset(const QString &scopePrefix) = 0;

    // The graph history of one record, oldest first.
    virtual std::vector<GraphChange> changesOf(const QString &recordId) = 0;
    // Entities the filter sees, by name; `limit` < 0: all.
    virtual std::vector<GraphEntity> entities(const GraphFilter &filter, int limit, int offset) = 0;
    // Entities whose normalised name is one of these.
    virtual std::vector<GraphEntity> entitiesByName(const QStringList &normalizedNames, const GraphFilter &filter) = 0;
    // Entities whose name embedding has a cosine similarity of at least minScore with `query`, best first.
    virtual std::vector<ScoredEntity> similarEntities(const Embedding &query, const GraphFilter &filter, double minScore,
                                                      int limit) = 0;
    // Relations the filter admits, newest first; `limit` < 0: all.
    virtual std::vector<GraphRelation> relations(const GraphFilter &filter, int limit) = 0;
    // Relations into or out of these entities (hops 1), and of their neighbours (hops 2).
    virtual std::vector<GraphRelation> relationsOf(const std::vector<qint64> &entityIds, int hops, const GraphFilter &filter) = 0;
    // Relations whose text embedding has a cosine similarity of at least minScore with `query`, best first.
    virtual std::vector<ScoredRelation> similarRelations(const Embedding &query, const GraphFilter &filter, double minScore,
                                                         int limit) = 0;
    // The degree of each of these entities: how many relations the filter admits into or out of it
    // (graph recall weighs an entity by it and does not expand a hub). This default counts what
    // relationsOf() returns; a backend may count in place.
    virtual QHash<qint64, int> degrees(const std::vector<qint64> &entityIds, const GraphFilter &filter);

    // --- Moving a graph whole between stores (`mneme migrate`) ---

    enum class Table {
        // {"id", "name", "norm", "type", "scope", "source", "private", "created_at", "embedding", "record_ids"}
        Entities,
        // {"id", "src", "label", "dst", "valid", "created_at", "invalidated_at", "invalidated_by", "why", "scope",
        //  "source", "private", "extractor", "embedding", "record_ids"}
        Relations,
        // {"seq", "record_id", "change", "row_id", "at"}
        History,
    };
    // Up to `limit` rows of `table` whose key ("id"; History: "seq") is above `after`, in key order:
    // a JSON array of objects holding the stored columns as above (times in ms since the epoch, UTC;
    // an embedding as an array of numbers or null; record_ids: the records the row came from).
    virtual Json dumpRows(Table table, qint64 after, int limit) = 0;
    // Stores rows of dumpRows(), keys kept, in one transaction; a row whose key is stored already is
    // left as it is, so an interrupted move can be run again. Error(InvalidArgument) for a malformed row.
    virtual void loadRows(Table table, const Json &rows) = 0;
};

} // namespace mneme
