#include <mneme/memory/memory_config.h>

#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <QUrl>
#include <cmath>
#include <functional>
#include <map>

namespace mneme {

namespace {

[[noreturn]] void bad(const std::string &key, const QString &why)
{
    throw Error(ErrorKind::InvalidArgument,
                QStringLiteral("configuration key %1 %2").arg(Error::quoted(QString::fromStdString(key)), why));
}

double number(const Json &v, const std::string &key)
{
    if (!v.is_number())
        bad(key, QStringLiteral("must be a number"));
    const double d = v.get<double>();
    if (!std::isfinite(d))
        bad(key, QStringLiteral("must be a finite number"));
    return d;
}

int integer(const Json &v, const std::string &key)
{
    if (!v.is_number_integer())
        bad(key, QStringLiteral("must be a whole number"));
    return v.get<int>();
}

void checkRange(double v, double lo, double hi, const char *key)
{
    if (!(v >= lo && v <= hi))
        bad(key, QStringLiteral("must be between %1 and %2 (got %3)").arg(lo).arg(hi).arg(v));
}

void checkPart(const Json &v, const std::string &key)
{
    if (v.is_null() || v.is_string())
        return;
    if (!v.is_object())
        bad(key, QStringLiteral("must be a string or an object with \"provider\" and \"config\""));
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (it.key() != "provider" && it.key() != "config")
            bad(key, QStringLiteral("has an unknown field \"%1\"; it takes \"provider\" and \"config\"")
                         .arg(QString::fromStdString(it.key())));
    }
    if (v.contains("provider") && !v["provider"].is_string())
        bad(key, QStringLiteral("field \"provider\" must be a string"));
    if (v.contains("config") && !v["config"].is_object())
        bad(key, QStringLiteral("field \"config\" must be an object"));
}

struct Profile
{
    double semantic, recency, importance;
};

const std::map<std::string, Profile> &profiles()
{
    // The retrieval-strategies profiles (relevance -> semantic).
    static const std::map<std::string, Profile> p = {
        {"conversation", {0.4, 0.4, 0.2}},
        {"research", {0.7, 0.1, 0.2}},
        {"support", {0.3, 0.2, 0.5}},
    };
    return p;
}

// A copy of a provider configuration with secrets replaced, for output that may reach a log.
Json redacted(const Json &v)
{
    if (v.is_object()) {
        Json out = Json::object();
        for (auto it = v.begin(); it != v.end(); ++it) {
            const QString key = QString::fromStdString(it.key()).toLower();
            const bool secret = key.contains(QLatin1String("key")) || key.contains(QLatin1String("token"))
                             || key.contains(QLatin1String("secret")) || key.contains(QLatin1String("password"))
                             || key.contains(QLatin1String("authorization")) || key.contains(QLatin1String("cookie"));
            if (secret) {
                out[it.key()] = "***";
            } else if (key == QLatin1String("proxy") && it.value().is_string()) {
                // http://user:password@host:port: keep the host, hide the credentials.
                QUrl url(QString::fromStdString(it.value().get<std::string>()));
                if (!url.userInfo().isEmpty())
                    url.setUserInfo(QStringLiteral("***"));
                out[it.key()] = url.toString().toStdString();
            } else {
                out[it.key()] = redacted(it.value());
            }
        }
        return out;
    }
    if (v.is_array()) {
        Json out = Json::array();
        for (const auto &e : v)
            out.push_back(redacted(e));
        return out;
    }
    return v;
}

} // namespace

MemoryConfig MemoryConfig::fromJson(const Json &json)
{
    MemoryConfig c;
    if (json.is_null())
        return c;
    if (!json.is_object())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("the configuration must be a JSON object"));

    if (json.contains("profile")) {
        if (!json["profile"].is_string())
            bad("profile", QStringLiteral("must be a string"));
        const std::string name = json["profile"].get<std::string>();
        const auto it = profiles().find(name);
        if (it == profiles().end())
            bad("profile", QStringLiteral("must be one of conversation, research, support (got \"%1\")")
                               .arg(QString::fromStdString(name)));
        c.semanticWeight = it->second.semantic;
        c.recencyWeight = it->second.recency;
        c.importanceWeight = it->second.importance;
    }

    using Setter = std::function<void(const Json &, const std::string &)>;
    const std::map<std::string, Setter> setters = {
        {"profile", [](const Json &, const std::string &) {}},
        {"llm", [&](const Json &v, const std::string &k) { checkPart(v, k); c.llm = v; }},
        {"embedder", [&](const Json &v, const std::string &k) { checkPart(v, k); c.embedder = v; }},
        {"storage", [&](const Json &v, const std::string &k) { checkPart(v, k); c.storage = v; }},
        {"semantic_weight", [&](const Json &v, const std::string &k) { c.semanticWeight = number(v, k); }},
        {"recency_weight", [&](const Json &v, const std::string &k) { c.recencyWeight = number(v, k); }},
        {"importance_weight", [&](const Json &v, const std::string &k) { c.importanceWeight = number(v, k); }},
        {"keyword_weight", [&](const Json &v, const std::string &k) { c.keywordWeight = number(v, k); }},
        {"keyword_context_weight", [&](const Json &v, const std::string &k) { c.keywordContextWeight = number(v, k); }},
        {"min_relevance", [&](const Json &v, const std::string &k) { c.minRelevance = number(v, k); }},
        {"standing_exponent", [&](const Json &v, const std::string &k) { c.standingExponent = number(v, k); }},
        {"recency_half_life_days", [&](const Json &v, const std::string &k) { c.recencyHalfLifeDays = number(v, k); }},
        {"decay_function", [&](const Json &v, const std::string &k) {
             if (!v.is_string())
                 bad(k, QStringLiteral("must be \"exponential\" or \"linear\""));
             c.decayFunction = QString::fromStdString(v.get<std::string>());
         }},
        {"access_boost", [&](const Json &v, const std::string &k) { c.accessBoost = number(v, k); }},
        {"consolidation_threshold", [&](const Json &v, const std::string &k) { c.consolidationThreshold = number(v, k); }},
        {"consolidation_limit", [&](const Json &v, const std::string &k) { c.consolidationLimit = integer(v, k); }},
        {"default_importance", [&](const Json &v, const std::string &k) { c.defaultImportance = number(v, k); }},
        {"batch_dedup_threshold", [&](const Json &v, const std::string &k) { c.batchDedupThreshold = number(v, k); }},
        {"max_content_chars", [&](const Json &v, const std::string &k) { c.maxContentChars = integer(v, k); }},
        {"conversation_context_window", [&](const Json &v, const std::string &k) { c.conversationContextWindow = integer(v, k); }},
        {"conversation_context_weight", [&](const Json &v, const std::string &k) { c.conversationContextWeight = number(v, k); }},
        {"conversation_recent_messages", [&](const Json &v, const std::string &k) { c.conversationRecentMessages = integer(v, k); }},
        {"conversation_similar_memories", [&](const Json &v, const std::string &k) { c.conversationSimilarMemories = integer(v, k); }},
        {"confidence_threshold_high", [&](const Json &v, const std::string &k) { c.confidenceThresholdHigh = number(v, k); }},
        {"confidence_threshold_low", [&](const Json &v, const std::string &k) { c.confidenceThresholdLow = number(v, k); }},
        {"complex_query_threshold", [&](const Json &v, const std::string &k) { c.complexQueryThreshold = number(v, k); }},
        {"exploration_budget", [&](const Json &v, const std::string &k) { c.explorationBudget = integer(v, k); }},
        {"query_analysis_threshold", [&](const Json &v, const std::string &k) { c.queryAnalysisThreshold = integer(v, k); }},
        {"graph_memory", [&](const Json &v, const std::string &k) {
             if (!v.is_boolean())
                 bad(k, QStringLiteral("must be true or false"));
             c.graphMemory = v.get<bool>();
         }},
        {"graph_extractor", [&](const Json &v, const std::string &k) {
             if (!v.is_string())
                 bad(k, QStringLiteral("must be \"auto\", \"llm\" or \"offline\""));
             c.graphExtractor = QString::fromStdString(v.get<std::string>());
         }},
        {"graph_entity_threshold", [&](const Json &v, const std::string &k) { c.graphEntityThreshold = number(v, k); }},
        {"graph_relation_threshold", [&](const Json &v, const std::string &k) { c.graphRelationThreshold = number(v, k); }},
        {"graph_hops", [&](const Json &v, const std::string &k) { c.graphHops = integer(v, k); }},
        {"graph_weight", [&](const Json &v, const std::string &k) { c.graphWeight = number(v, k); }},
        {"read_only", [&](const Json &v, const std::string &k) {
             if (!v.is_boolean())
                 bad(k, QStringLiteral("must be true or false"));
             c.readOnly = v.get<bool>();
         }},
        {"root_scope", [&](const Json &v, const std::string &k) {
             if (v.is_null())
                 return;
             if (!v.is_string())
                 bad(k, QStringLiteral("must be a scope path string such as \"/crew/research\""));
             c.rootScope = QString::fromStdString(v.get<std::string>());
         }},
    };

    for (auto it = json.begin(); it != json.end(); ++it) {
        const auto s = setters.find(it.key());
        if (s == setters.end()) {
            QStringList known;
            for (const auto &[k, f] : setters)
                known << QString::fromStdString(k);
            bad(it.key(), QStringLiteral("is not a Mneme setting; known keys: %1").arg(known.join(QStringLiteral(", "))));
        }
        s->second(it.value(), it.key());
    }
    c.validate();
    return c;
}

void MemoryConfig::validate() const
{
    checkRange(semanticWeight, 0, 1, "semantic_weight");
    checkRange(recencyWeight, 0, 1, "recency_weight");
    checkRange(importanceWeight, 0, 1, "importance_weight");
    checkRange(keywordWeight, 0, 1, "keyword_weight");
    checkRange(keywordContextWeight, 0, 1, "keyword_context_weight");
    if (!(semanticWeight + keywordWeight > 0))
        bad("semantic_weight", QStringLiteral("and keyword_weight are both 0, so nothing would ever be relevant to a query; "
                                              "give one of them a positive weight"));
    checkRange(minRelevance, 0, 1, "min_relevance");
    checkRange(standingExponent, 0, 64, "standing_exponent");
    if (!(recencyHalfLifeDays > 0) || !std::isfinite(recencyHalfLifeDays))
        bad("recency_half_life_days", QStringLiteral("must be a positive number of days"));
    if (decayFunction != QLatin1String("exponential") && decayFunction != QLatin1String("linear"))
        bad("decay_function", QStringLiteral("must be \"exponential\" or \"linear\" (got \"%1\")").arg(decayFunction));
    checkRange(accessBoost, 0, 1, "access_boost");
    checkRange(consolidationThreshold, 0, 1, "consolidation_threshold");
    if (consolidationLimit < 1)
        bad("consolidation_limit", QStringLiteral("must be at least 1"));
    checkRange(defaultImportance, 0, 1, "default_importance");
    checkRange(batchDedupThreshold, 0, 1, "batch_dedup_threshold");
    if (maxContentChars < 1)
        bad("max_content_chars", QStringLiteral("must be at least 1"));
    if (conversationContextWindow < 0)
        bad("conversation_context_window", QStringLiteral("must be 0 or more"));
    checkRange(conversationContextWeight, 0, 1, "conversation_context_weight");
    if (conversationRecentMessages < 0)
        bad("conversation_recent_messages", QStringLiteral("must be 0 or more"));
    if (conversationSimilarMemories < 1)
        bad("conversation_similar_memories", QStringLiteral("must be at least 1"));
    checkRange(confidenceThresholdHigh, 0, 1, "confidence_threshold_high");
    checkRange(confidenceThresholdLow, 0, 1, "confidence_threshold_low");
    checkRange(complexQueryThreshold, 0, 1, "complex_query_threshold");
    if (explorationBudget < 0)
        bad("exploration_budget", QStringLiteral("must be 0 or more"));
    if (queryAnalysisThreshold < 0)
        bad("query_analysis_threshold", QStringLiteral("must be 0 or more"));
    if (graphExtractor != QLatin1String("auto") && graphExtractor != QLatin1String("llm") && graphExtractor != QLatin1String("offline"))
        bad("graph_extractor", QStringLiteral("must be \"auto\", \"llm\" or \"offline\" (got \"%1\")").arg(graphExtractor));
    checkRange(graphEntityThreshold, 0, 1, "graph_entity_threshold");
    checkRange(graphRelationThreshold, 0, 1, "graph_relation_threshold");
    if (graphHops < 1 || graphHops > 2)
        bad("graph_hops", QStringLiteral("must be 1 or 2"));
    checkRange(graphWeight, 0, 1, "graph_weight");
    if (!rootScope.isEmpty()) {
        QString why;
        if (!ScopePath::isValid(rootScope, &why))
            bad("root_scope", QStringLiteral("is invalid: %1").arg(why));
    }
}

Json MemoryConfig::toJson() const
{
    Json j = {
        {"semantic_weight", semanticWeight},
        {"recency_weight", recencyWeight},
        {"importance_weight", importanceWeight},
        {"keyword_weight", keywordWeight},
        {"keyword_context_weight", keywordContextWeight},
        {"min_relevance", minRelevance},
        {"standing_exponent", standingExponent},
        {"recency_half_life_days", recencyHalfLifeDays},
        {"decay_function", decayFunction},
        {"access_boost", accessBoost},
        {"consolidation_threshold", consolidationThreshold},
        {"consolidation_limit", consolidationLimit},
        {"default_importance", defaultImportance},
        {"batch_dedup_threshold", batchDedupThreshold},
        {"max_content_chars", maxContentChars},
        {"conversation_context_window", conversationContextWindow},
        {"conversation_context_weight", conversationContextWeight},
        {"conversation_recent_messages", conversationRecentMessages},
        {"conversation_similar_memories", conversationSimilarMemories},
        {"confidence_threshold_high", confidenceThresholdHigh},
        {"confidence_threshold_low", confidenceThresholdLow},
        {"complex_query_threshold", complexQueryThreshold},
        {"exploration_budget", explorationBudget},
        {"query_analysis_threshold", queryAnalysisThreshold},
        {"graph_memory", graphMemory},
        {"graph_extractor", graphExtractor},
        {"graph_entity_threshold", graphEntityThreshold},
        {"graph_relation_threshold", graphRelationThreshold},
        {"graph_hops", graphHops},
        {"graph_weight", graphWeight},
        {"read_only", readOnly},
        {"root_scope", rootScope.isEmpty() ? Json(nullptr) : Json(rootScope)},
    };
    if (!llm.is_null())
        j["llm"] = redacted(llm);
    if (!embedder.is_null())
        j["embedder"] = redacted(embedder);
    if (!storage.is_null())
        j["storage"] = redacted(storage);
    return j;
}

QString MemoryConfig::defaultStoragePath()
{
    const QString dir = qEnvironmentVariable("MNEME_STORAGE_DIR");
    if (!dir.isEmpty())
        return QDir(dir).filePath(QStringLiteral("memory.db"));
    // The platform's folder for an application's data: $XDG_DATA_HOME, else ~/.local/share on Linux.
    const QString data = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
    return QDir(data.isEmpty() ? QDir::homePath() + QStringLiteral("/.local/share") : data)
        .filePath(QStringLiteral("mneme/memory.db"));
}

QString MemoryConfig::legacyStoragePath()
{
    const QString path = QDir::current().filePath(QStringLiteral(".mneme/memory.db"));
    return QFileInfo::exists(path) && QDir::cleanPath(path) != QDir::cleanPath(defaultStoragePath()) ? path : QString();
}

} // namespace mneme
