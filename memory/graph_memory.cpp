#include "memory/graph_memory_p.h"

#include "memory/analysis_call_p.h"
#include "memory/memory_p.h"

#include <QHash>
#include <QSet>
#include <algorithm>
#include <cmath>

namespace mneme {

namespace {

constexpr const char *kGraphStep = AnalysisStep::GraphRelations;

// An entity in more relations than this is a hub (a conversation's speaker, the user): that a query
// names it says little about which of its relations are meant, so graph recall does not expand it
// (the triplet path still finds its relations that read like the query).
constexpr int kHubDegree = 40;
// The evidence an entity gives its relations falls with its degree: whole up to this many relations,
// then 1 / (1 + log2(degree / kSpecificDegree)).
constexpr int kSpecificDegree = 4;

// How sure one recall path alone is at best: a relation both paths find outranks one that only one
// path finds fully (a relation of the query's entity whose text is also like the query, before the
// entity's other relations).
constexpr double kPathCertainty = 0.9;

// The text a relation's embedding is made of: "Alice lives in Lisbon".
QString relationSentence(const QString &source, const QString &label, const QString &destination)
{
    return QStringLiteral("%1 %2 %3").arg(source, QString(label).replace(QLatin1Char('_'), QLatin1Char(' ')), destination);
}

QString str(const Json &j, const char *key)
{
    if (!j.is_object() || !j.contains(key) || !j[key].is_string())
        return {};
    return QString::fromStdString(j[key].get<std::string>()).simplified();
}

Json entitySchema()
{
    return Json{{"type", "object"},
                {"properties",
                 {{"entities",
                   {{"type", "array"},
                    {"items",
                     {{"type", "object"},
                      {"properties", {{"name", {{"type", "string"}}}, {"type", {{"type", "string"}}}}},
                      {"required", {"name", "type"}}}}}}}},
                {"required", {"entities"}}};
}

Json relationSchema()
{
    return Json{{"type", "object"},
                {"properties",
                 {{"relations",
                   {{"type", "array"},
                    {"items",
                     {{"type", "object"},
                      {"properties",
                       {{"source", {{"type", "string"}}},
                        {"relation", {{"type", "string"}}},
                        {"destination", {{"type", "string"}}},
                        {"one_at_a_time", {{"type", "boolean"}}}}},
                      {"required", {"source", "relation", "destination"}}}}}},
                  {"obsolete", {{"type", "array"}, {"items", {{"type", "integer"}}}}}}},
                {"required", {"relations"}}};
}

} // namespace

GraphFilter GraphMemory::filterOf(const RecordFilter &records, const QDateTime &asOf, bool includeInvalid)
{
    GraphFilter f;
    f.scopes = records.scopes;
    f.applyPrivacy = records.applyPrivacy;
    f.includePrivate = records.includePrivate;
    f.source = records.source;
    f.asOf = asOf;
    f.includeInvalid = includeInvalid;
    return f;
}

bool GraphMemory::useLlm() const
{
    const QString &how = d.config.graphExtractor;
    return how == QLatin1String("llm") || (how == QLatin1String("auto") && d.llmConfigured());
}

// ---------------------------------------------------------------------------------------------
// Writing

void GraphMemory::add(const std::vector<MemoryRecord> &records)
{
    if (records.empty())
        return;
    try {
        const std::vector<std::optional<ExtractedGraph>> graphs = extract(records);
        // Every name and relation text of the batch embedded in one call.
        QStringList texts;
        for (const std::optional<ExtractedGraph> &g : graphs) {
            if (!g)
                continue;
            for (const ExtractedEntity &e : g->entities)
                texts << e.name;
            for (const ExtractedTriplet &t : g->triplets)
                texts << t.source.name << t.destination.name << relationSentence(t.source.name, t.label, t.destination.name);
        }
        texts.removeDuplicates();
        QHash<QString, Embedding> vectors;
        if (!texts.isEmpty()) {
            std::vector<Embedding> v = d.embedAll(texts);
            for (qsizetype i = 0; i < texts.size(); ++i)
                vectors.insert(texts[i], std::move(v[std::size_t(i)]));
        }
        std::vector<GraphExtraction> extractions;
        for (std::size_t i = 0; i < records.size(); ++i) {
            if (!graphs[i] || graphs[i]->isEmpty())
                continue;
            const MemoryRecord &r = records[i];
            GraphExtraction x;
            x.origin = GraphOrigin{r.id, r.scope, r.source, r.isPrivate, r.createdAt};
            const auto entity = [&](const ExtractedEntity &e) { return GraphEntityInput{e.name, e.type, vectors.value(e.name)}; };
            for (const ExtractedEntity &e : graphs[i]->entities)
                x.entities.push_back(entity(e));
            for (const ExtractedTriplet &t : graphs[i]->triplets) {
                GraphTripletInput in;
                in.source = entity(t.source);
                in.label = t.label;
                in.destination = entity(t.destination);
                in.embedding = vectors.value(relationSentence(t.source.name, t.label, t.destination.name));
                in.exclusive = t.exclusive;
                in.contradicts.assign(t.contradicts.begin(), t.contradicts.end());
                in.extractor = graphs[i]->extractor;
                x.triplets.push_back(std::move(in));
            }
            extractions.push_back(std::move(x));
        }
        GraphWriteOptions options;
        options.entitySimilarity = d.config.graphEntityThreshold;
        m_store.write(extractions, options);
    } catch (const std::exception &e) {
        reportAnalysis(d.q, kGraphStep, AnalysisPath::Skipped,
                       QStringLiteral("the graph of %1 records was not written: %2").arg(records.size()).arg(QString::fromUtf8(e.what())),
                       true);
    }
}

void GraphMemory::replace(const std::vector<MemoryRecord> &records)
{
    QStringList ids;
    for (const MemoryRecord &r : records)
        ids << r.id;
    remove(ids);
    add(records);
}

void GraphMemory::remove(const QStringList &recordIds)
{
    try {
        m_store.revertRecords(recordIds);
    } catch (const std::exception &e) {
        reportAnalysis(d.q, kGraphStep, AnalysisPath::Skipped,
                       QStringLiteral("the graph of %1 deleted records was not reverted: %2").arg(recordIds.size()).arg(QString::fromUtf8(e.what())),
                       true);
    }
}

std::vector<std::optional<ExtractedGraph>> GraphMemory::extract(const std::vector<MemoryRecord> &records)
{
    if (useLlm())
        return extractWithLlm(records);
    std::vector<std::optional<ExtractedGraph>> out;
    out.reserve(records.size());
    for (const MemoryRecord &r : records)
        out.push_back(OfflineGraphExtractor::extract(r.content, r.createdAt));
    reportAnalysis(d.q, kGraphStep, AnalysisPath::Offline,
                   d.config.graphExtractor == QLatin1String("offline") ? QStringLiteral("graph_extractor is \"offline\"")
                                                                       : QStringLiteral("no LLM is configured"));
    return out;
}

std::vector<std::optional<ExtractedGraph>> GraphMemory::extractWithLlm(const std::vector<MemoryRecord> &records)
{
    std::vector<std::optional<ExtractedGraph>> out(records.size());
    // 1. The entity extractor, every record at once.
    AnalysisBatch entityCalls(d.q);
    for (const MemoryRecord &r : records)
        entityCalls.add(AnalysisStep::GraphEntities,
                        entityRequest(r.content, r.source.isEmpty() ? QStringLiteral("user") : r.source));
    std::vector<std::optional<QList<ExtractedEntity>>> entities(records.size());
    QStringList failures;
    for (std::size_t i = 0; i < records.size(); ++i) {
        QString why;
        entities[i] = entityCalls.at(i).read(&GraphMemory::readEntities, QStringLiteral("the reply has no \"entities\" list"), &why);
        if (!entities[i])
            failures << QStringLiteral("record %1: %2").arg(records[i].id, why);
    }
    // 2. The relationship generator, with the valid relations already stored for those entities.
    AnalysisBatch relationCalls(d.q);
    std::vector<std::vector<GraphRelation>> known(records.size());
    std::vector<std::size_t> callOf(records.size(), std::size_t(-1));
    for (std::size_t i = 0; i < records.size(); ++i) {
        if (!entities[i] || entities[i]->isEmpty())
            continue;
        known[i] = knownRelations(records[i], *entities[i]);
        callOf[i] = relationCalls.add(AnalysisStep::GraphRelations, relationRequest(records[i].content, *entities[i], known[i]));
    }
    for (std::size_t i = 0; i < records.size(); ++i) {
        if (!entities[i])
            continue;
        if (callOf[i] == std::size_t(-1)) {
            out[i] = ExtractedGraph{{}, {}, QStringLiteral("llm")};
            continue;
        }
        QString why;
        const std::vector<GraphRelation> &offered = known[i];
        const std::optional<QList<ExtractedTriplet>> triplets = relationCalls.at(callOf[i]).read(
            [&offered](const Json &reply) { return readRelations(reply, offered); }, QStringLiteral("the reply has no \"relations\" list"),
            &why);
        if (!triplets) {
            failures << QStringLiteral("record %1: %2").arg(records[i].id, why);
            continue;
        }
        ExtractedGraph g;
        g.extractor = QStringLiteral("llm");
        g.entities = *entities[i];
        g.triplets = *triplets;
        OfflineGraphExtractor::withResidences(g);
        out[i] = std::move(g);
    }
    if (failures.isEmpty())
        reportAnalysis(d.q, kGraphStep, AnalysisPath::Llm);
    else
        reportAnalysis(d.q, kGraphStep, AnalysisPath::Skipped,
                       QStringLiteral("the graph extraction failed, so these records add nothing to the graph (they are "
                                      "saved): %1")
                           .arg(failures.join(QStringLiteral("; "))),
                       true);
    return out;
}

std::vector<GraphRelation> GraphMemory::knownRelations(const MemoryRecord &record, const QList<ExtractedEntity> &entities)
{
    GraphFilter f;
    f.scopes = {record.scope};
    f.applyPrivacy = true;
    f.source = record.source;
    QStringList names;
    for (const ExtractedEntity &e : entities)
        names << GraphEntity::normalize(e.name);
    std::vector<qint64> ids;
    for (const GraphEntity &e : m_store.entitiesByName(names, f))
        if (e.scope == record.scope && e.isPrivate == record.isPrivate)
            ids.push_back(e.id);
    std::vector<GraphRelation> out = m_store.relationsOf(ids, 1, f);
    if (out.size() > 30)
        out.resize(30);
    return out;
}

// ---------------------------------------------------------------------------------------------
// The LLM's prompts and readers

ChatRequest GraphMemory::entityRequest(const QString &content, const QString &speaker)
{
    const QString system = QStringLiteral(
                               "You find the entities a memory mentions, for a knowledge graph. An entity is a person, place, "
                               "organisation, event, object, activity, date or idea that the memory says something about. Give each "
                               "once, with its name as written (a full name when the memory gives one) and a one-word lower-case type "
                               "(person, place, organisation, event, object, activity, date, idea, ...). First-person words (I, me, my) "
                               "mean the speaker, named \"%1\" unless the memory names them. Leave out pronouns and vague words.")
                               .arg(speaker);
    return structuredRequest(system, QStringLiteral("Memory:\n%1").arg(content), entitySchema(), QStringLiteral("graph_entities"));
}

std::optional<QList<ExtractedEntity>> GraphMemory::readEntities(const Json &reply)
{
    if (!reply.is_object() || !reply.contains("entities") || !reply["entities"].is_array())
        return std::nullopt;
    QList<ExtractedEntity> out;
    for (const Json &e : reply["entities"]) {
        ExtractedEntity x{str(e, "name"), str(e, "type").toLower()};
        if (!x.name.isEmpty() && !GraphEntity::normalize(x.name).isEmpty() && !out.contains(x))
            out << x;
    }
    return out;
}

ChatRequest GraphMemory::relationRequest(const QString &content, const QList<ExtractedEntity> &entities,
                                         const std::vector<GraphRelation> &known)
{
    QStringList names;
    for (const ExtractedEntity &e : entities)
        names << QStringLiteral("%1 (%2)").arg(e.name, e.type);
    QStringList stored;
    for (const GraphRelation &r : known)
        stored << QStringLiteral("[%1] %2 -- %3 -> %4").arg(r.id).arg(r.sourceName, r.label, r.destinationName);
    const QString system = QStringLiteral(
        "You turn a memory into relations between its entities, for a knowledge graph. Each relation is a "
        "triplet: a source entity, a short relation in lower case with words joined by underscores (lives_in, "
        "works_at, sister_of, prefers, happened_on), and a destination entity. Use the entities given; add one "
        "only when a relation needs it. Say one_at_a_time when the source can hold only one such relation at a "
        "time (lives_in, works_at, married_to), so that a new one replaces the old. Then list as obsolete the "
        "ids of the stored relations this memory shows to be no longer true (a moved home, a changed job, a "
        "reversed preference); none when nothing changed. State only what the memory says.");
    const QString user = QStringLiteral("Memory:\n%1\n\nEntities:\n%2\n\nStored relations:\n%3")
                             .arg(content, names.join(QLatin1Char('\n')),
                                  stored.isEmpty() ? QStringLiteral("(none)") : stored.join(QLatin1Char('\n')));
    return structuredRequest(system, user, relationSchema(), QStringLiteral("graph_relations"));
}

std::optional<QList<ExtractedTriplet>> GraphMemory::readRelations(const Json &reply, const std::vector<GraphRelation> &known)
{
    if (!reply.is_object() || !reply.contains("relations") || !reply["relations"].is_array())
        return std::nullopt;
    QSet<qint64> offered;
    for (const GraphRelation &r : known)
        offered.insert(r.id);
    QList<qint64> obsolete;
    if (reply.contains("obsolete") && reply["obsolete"].is_array())
        for (const Json &id : reply["obsolete"])
            if (id.is_number_integer() && offered.contains(id.get<qint64>()) && !obsolete.contains(id.get<qint64>()))
                obsolete << id.get<qint64>();
    QList<ExtractedTriplet> out;
    for (const Json &r : reply["relations"]) {
        ExtractedTriplet t;
        t.source = {str(r, "source"), QString()};
        t.label = OfflineGraphExtractor::normalizedLabel(str(r, "relation"));
        t.destination = {str(r, "destination"), QString()};
        if (t.source.name.isEmpty() || t.destination.name.isEmpty() || t.label.isEmpty())
            continue;
        t.exclusive = r.is_object() && r.contains("one_at_a_time") && r["one_at_a_time"].is_boolean() && r["one_at_a_time"].get<bool>();
        out << t;
    }
    // The obsolete relations go with the first new relation (they are invalidated by this record).
    if (!obsolete.isEmpty() && !out.isEmpty())
        out.first().contradicts = obsolete;
    return out;
}

// ---------------------------------------------------------------------------------------------
// Recall

QHash<qint64, double> GraphMemory::specificEntities(const QHash<qint64, double> &evidence, const GraphFilter &filter, int limit)
{
    std::vector<std::pair<double, qint64>> ranked;
    const std::vector<qint64> ids(evidence.keyBegin(), evidence.keyEnd());
    const QHash<qint64, int> degree = m_store.degrees(ids, filter);
    for (qint64 id : ids) {
        const int n = degree.value(id);
        if (n > kHubDegree)
            continue;
        const double specificity = n <= kSpecificDegree ? 1.0 : 1.0 / (1.0 + std::log2(double(n) / kSpecificDegree));
        ranked.emplace_back(evidence.value(id) * specificity, id);
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto &a, const auto &b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    if (int(ranked.size()) > limit)
        ranked.resize(std::size_t(limit));
    QHash<qint64, double> out;
    for (const auto &[weight, id] : ranked)
        out.insert(id, weight);
    return out;
}

void GraphMemory::expandEntities(const QHash<qint64, double> &seeds, const GraphFilter &filter, int limit,
                                 QHash<qint64, RelationMatch> &found)
{
    // Hop 1: the relations of the query's specific entities, each with its best end's weight.
    const QHash<qint64, double> first = specificEntities(seeds, filter, limit);
    if (first.isEmpty())
        return;
    QHash<qint64, double> reached; // the other ends, with half the evidence of the relation that reached them
    for (const GraphRelation &r : m_store.relationsOf(std::vector<qint64>(first.keyBegin(), first.keyEnd()), 1, filter)) {
        const double weight = std::max(first.value(r.sourceId), first.value(r.destinationId));
        RelationMatch &m = found[r.id];
        m.relation = r;
        m.entityScore = std::max(m.entityScore, weight);
        m.hops = 1;
        for (qint64 end : {r.sourceId, r.destinationId})
            if (!first.contains(end))
                reached[end] = std::max(reached.value(end), weight / 2);
    }
    if (d.config.graphHops < 2 || reached.isEmpty())
        return;
    // Hop 2: the relations of the specific entities reached, not already found.
    const QHash<qint64, double> second = specificEntities(reached, filter, limit);
    if (second.isEmpty())
        return;
    for (const GraphRelation &r : m_store.relationsOf(std::vector<qint64>(second.keyBegin(), second.keyEnd()), 1, filter)) {
        if (found.contains(r.id))
            continue;
        RelationMatch &m = found[r.id];
        m.relation = r;
        m.entityScore = std::max(second.value(r.sourceId), second.value(r.destinationId));
        m.hops = 2;
    }
}

QList<RelationMatch> GraphMemory::recall(const QString &query, const Embedding &queryVector, const GraphFilter &filter, int limit)
{
    QHash<qint64, RelationMatch> found;
    const auto take = [&found](const GraphRelation &r) -> RelationMatch & {
        RelationMatch &m = found[r.id];
        if (m.relation.id == 0)
            m.relation = r;
        return m;
    };

    // 1. Entity-centric: the query's names -> entities (by normalised name, then by similarity) ->
    //    their relations, 1-2 hops.
    const QStringList names = OfflineGraphExtractor::queryNames(query);
    QHash<qint64, double> seeds;
    if (!names.isEmpty()) {
        QStringList normalized;
        for (const QString &n : names)
            normalized << GraphEntity::normalize(n);
        for (const GraphEntity &e : m_store.entitiesByName(normalized, filter))
            seeds[e.id] = 1.0;
        const std::vector<Embedding> vectors = d.embedAll(names);
        for (const Embedding &v : vectors)
            for (const ScoredEntity &s : m_store.similarEntities(v, filter, d.config.graphEntityThreshold, 3))
                seeds[s.entity.id] = std::max(seeds.value(s.entity.id), std::min(1.0, s.score));
    }
    if (!seeds.isEmpty())
        expandEntities(seeds, filter, limit, found);

    // 2. Triplet-semantic: the query against each relation's text.
    for (const ScoredRelation &s : m_store.similarRelations(queryVector, filter, d.config.graphRelationThreshold, 2 * limit))
        take(s.relation).tripletScore = std::clamp(s.score, 0.0, 1.0);

    // 3. Merged: either path is evidence (at most kPathCertainty alone), both more.
    QList<RelationMatch> out;
    for (RelationMatch &m : found) {
        m.score = 1 - (1 - kPathCertainty * m.entityScore) * (1 - kPathCertainty * m.tripletScore);
        if (m.hops == 1)
            m.matchReasons << QStringLiteral("entity");
        else if (m.hops == 2)
            m.matchReasons << QStringLiteral("entity_2hop");
        if (m.tripletScore > 0)
            m.matchReasons << QStringLiteral("triplet");
        out << m;
    }
    std::sort(out.begin(), out.end(), [](const RelationMatch &a, const RelationMatch &b) {
        if (a.score != b.score)
            return a.score > b.score;
        if (a.relation.createdAt != b.relation.createdAt)
            return a.relation.createdAt > b.relation.createdAt;
        return a.relation.id < b.relation.id;
    });
    if (out.size() > limit)
        out.resize(limit);
    return out;
}

} // namespace mneme
