#include <mneme/memory/memory_options.h>

namespace mneme {

ReadContext ReadContext::anonymous()
{
    return ReadContext();
}

ReadContext ReadContext::of(const QString &source, bool ownPrivate)
{
    ReadContext r;
    r.source = source.trimmed();
    r.ownPrivate = ownPrivate;
    return r;
}

ReadContext ReadContext::asCurator()
{
    ReadContext r;
    r.curator = true;
    return r;
}

bool ReadContext::sees(const MemoryRecord &record) const
{
    return curator || !record.isPrivate || (ownPrivate && !source.isEmpty() && record.source == source);
}

void ReadContext::restrict(RecordFilter &filter) const
{
    filter.applyPrivacy = !curator;
    filter.includePrivate = false;
    filter.source = curator || !ownPrivate ? QString() : source.trimmed();
}

ReadContext RecallOptions::effectiveReader() const
{
    ReadContext r = reader;
    if (r.source.isEmpty())
        r.source = source.trimmed();
    r.curator = r.curator || includePrivate;
    return r;
}

void to_json(Json &j, const ScopeNode &node)
{
    Json children = Json::array();
    for (const ScopeNode &c : node.children) {
        Json cj;
        to_json(cj, c);
        children.push_back(std::move(cj));
    }
    j = Json{{"path", node.path}, {"record_count", node.recordCount}, {"children", std::move(children)}};
}

} // namespace mneme
