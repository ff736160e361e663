#include "memory/memory_block_specs_p.h"

#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/provider_settings.h>
#include <mneme/core/scope_path.h>
#include <mneme/memory/fact_extraction_memory_block.h>
#include <mneme/memory/long_term_memory_block.h>
#include <mneme/memory/static_memory_block.h>
#include <mneme/memory/vector_memory_block.h>

#include <QSet>
#include <map>
#include <set>

namespace mneme::BlockSpecs {

namespace {

struct Kind
{
    const char *defaultName;
    std::set<std::string> keys; // besides type, name and priority
};

const std::map<std::string, Kind> &kinds()
{
    static const std::map<std::string, Kind> k = {
        {"static", {"core_info", {"static_content"}}},
        {"fact_extraction", {"extracted_info", {"max_facts", "llm"}}},
        {"vector", {"vector_memory", {"similarity_top_k", "retrieval_context_window", "scope"}}},
        {"long_term", {"long_term", {"similarity_top_k", "retrieval_context_window", "scope", "source"}}},
    };
    return k;
}

[[noreturn]] void bad(size_t index, const Json &spec, const QString &why)
{
    QString which = QStringLiteral("memory_blocks[%1]").arg(index);
    if (spec.is_object() && spec.contains("name") && spec["name"].is_string())
        which += QStringLiteral(" (%1)").arg(QString::fromStdString(spec["name"].get<std::string>()));
    throw Error(ErrorKind::InvalidArgument, QStringLiteral("configuration key %1 %2").arg(which, why));
}

int intKey(size_t index, const Json &spec, const char *key, int fallback, int minimum)
{
    if (!spec.contains(key))
        return fallback;
    const Json &v = spec[key];
    if (!v.is_number_integer())
        bad(index, spec, QStringLiteral("\"%1\" must be a whole number").arg(QLatin1String(key)));
    const long long n = v.get<long long>();
    if (n < minimum || n > 1000000000)
        bad(index, spec, QStringLiteral("\"%1\" must be at least %2 (got %3)").arg(QLatin1String(key)).arg(minimum).arg(n));
    return int(n);
}

QString stringKey(size_t index, const Json &spec, const char *key, const QString &fallback)
{
    if (!spec.contains(key))
        return fallback;
    if (!spec[key].is_string())
        bad(index, spec, QStringLiteral("\"%1\" must be a string").arg(QLatin1String(key)));
    return QString::fromStdString(spec[key].get<std::string>());
}

void checkLlm(size_t index, const Json &spec)
{
    if (!spec.contains("llm") || spec["llm"].is_null() || spec["llm"].is_string())
        return;
    const Json &v = spec["llm"];
    if (!v.is_object() || !v.contains("provider") || !v["provider"].is_string() || (v.contains("config") && !v["config"].is_object()))
        bad(index, spec, QStringLiteral("\"llm\" must be a model string or an object with \"provider\" and \"config\""));
}

void checkOne(size_t index, const Json &spec)
{
    if (!spec.is_object())
        bad(index, spec, QStringLiteral("must be an object such as {\"type\": \"static\", \"static_content\": \"...\"}"));
    if (!spec.contains("type") || !spec["type"].is_string())
        bad(index, spec, QStringLiteral("needs a \"type\": static, fact_extraction, vector or long_term"));
    const std::string type = spec["type"].get<std::string>();
    const auto kind = kinds().find(type);
    if (kind == kinds().end())
        bad(index, spec, QStringLiteral("has an unknown type \"%1\"; the types are static, fact_extraction, vector and long_term").arg(QString::fromStdString(type)));
    for (auto it = spec.begin(); it != spec.end(); ++it) {
        if (it.key() == "type" || it.key() == "name" || it.key() == "priority" || kind->second.keys.count(it.key()))
            continue;
        QStringList known = {QStringLiteral("type"), QStringLiteral("name"), QStringLiteral("priority")};
        for (const std::string &k : kind->second.keys)
            known << QString::fromStdString(k);
        bad(index, spec, QStringLiteral("has an unknown key \"%1\"; a %2 block takes %3").arg(QString::fromStdString(it.key()), QString::fromStdString(type), known.join(QStringLiteral(", "))));
    }
    if (stringKey(index, spec, "name", QStringLiteral("x")).trimmed().isEmpty())
        bad(index, spec, QStringLiteral("has a blank \"name\""));
    intKey(index, spec, "priority", 0, 0);
    if (type == "static" && stringKey(index, spec, "static_content", QString()).trimmed().isEmpty())
        bad(index, spec, QStringLiteral("needs \"static_content\", the text the block always offers"));
    intKey(index, spec, "max_facts", 50, 1);
    intKey(index, spec, "similarity_top_k", 1, 1);
    intKey(index, spec, "retrieval_context_window", 1, 1);
    stringKey(index, spec, "source", QString());
    if (spec.contains("scope")) {
        QString error;
        if (!ScopePath::isValid(stringKey(index, spec, "scope", QString()), &error))
            bad(index, spec, QStringLiteral("\"scope\": %1").arg(error));
    }
    checkLlm(index, spec);
}

QString nameOf(const Json &spec)
{
    const std::string type = spec["type"].get<std::string>();
    return spec.contains("name") ? QString::fromStdString(spec["name"].get<std::string>()).trimmed()
                                 : QLatin1String(kinds().at(type).defaultName);
}

} // namespace

void check(const Json &specs)
{
    if (specs.is_null())
        return;
    if (!specs.is_array())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("configuration key \"memory_blocks\" must be an array of block specs such as "
                                   "[{\"type\": \"static\", \"name\": \"core_info\", \"static_content\": \"...\"}]"));
    QSet<QString> names;
    for (size_t i = 0; i < specs.size(); ++i) {
        checkOne(i, specs[i]);
        const QString name = nameOf(specs[i]);
        if (names.contains(name))
            bad(i, specs[i], QStringLiteral("repeats the block name \"%1\"; give each block a name of its own").arg(name));
        names.insert(name);
    }
}

std::shared_ptr<LlmProvider> llmFrom(const Json &spec)
{
    if (spec.is_null())
        return nullptr;
    PluginRegistry &registry = PluginRegistry::instance();
    const ProviderSpec p = ProviderSpec::llm(spec, registry.keys(PluginRegistry::Kind::Llm));
    return registry.createLlm(p.key, p.config);
}

std::vector<std::shared_ptr<MemoryBlock>> build(const Json &specs, Memory *memory, const std::shared_ptr<LlmProvider> &llm)
{
    check(specs);
    std::vector<std::shared_ptr<MemoryBlock>> blocks;
    if (specs.is_null())
        return blocks;
    for (size_t i = 0; i < specs.size(); ++i) {
        const Json &spec = specs[i];
        const std::string type = spec["type"].get<std::string>();
        const QString name = nameOf(spec);
        const int priority = intKey(i, spec, "priority", 0, 0);
        if ((type == "vector" || type == "long_term") && !memory)
            bad(i, spec, QStringLiteral("keeps its content in a Memory, and none was given (pass one to ChatMemory::fromDefaults)"));
        if (type == "static") {
            blocks.push_back(std::make_shared<StaticMemoryBlock>(name, stringKey(i, spec, "static_content", QString()), priority));
        } else if (type == "fact_extraction") {
            const std::shared_ptr<LlmProvider> own = spec.contains("llm") ? llmFrom(spec["llm"]) : nullptr;
            blocks.push_back(std::make_shared<FactExtractionMemoryBlock>(name, own ? own : llm, intKey(i, spec, "max_facts", 50, 1), priority));
        } else if (type == "vector") {
            VectorMemoryBlock::Options o;
            o.scope = stringKey(i, spec, "scope", o.scope);
            o.similarityTopK = intKey(i, spec, "similarity_top_k", o.similarityTopK, 1);
            o.retrievalContextWindow = intKey(i, spec, "retrieval_context_window", o.retrievalContextWindow, 1);
            o.priority = priority;
            blocks.push_back(std::make_shared<VectorMemoryBlock>(name, memory, o));
        } else {
            LongTermMemoryBlock::Options o;
            o.scope = stringKey(i, spec, "scope", o.scope);
            o.similarityTopK = intKey(i, spec, "similarity_top_k", o.similarityTopK, 1);
            o.retrievalContextWindow = intKey(i, spec, "retrieval_context_window", o.retrievalContextWindow, 1);
            o.source = stringKey(i, spec, "source", QString());
            o.priority = priority;
            blocks.push_back(std::make_shared<LongTermMemoryBlock>(name, memory, o));
        }
    }
    return blocks;
}

} // namespace mneme::BlockSpecs
