#include <mneme/memory/memory_options.h>

namespace mneme {

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
