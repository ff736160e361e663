#include <mneme/core/scope_info.h>

namespace mneme {

void to_json(Json &j, const ScopeInfo &info)
{
    j = Json{
        {"path", info.path},
        {"record_count", info.recordCount},
        {"categories", info.categories},
        {"oldest_record", info.oldestRecord.isValid() ? Json(toIso(info.oldestRecord)) : Json(nullptr)},
        {"newest_record", info.newestRecord.isValid() ? Json(toIso(info.newestRecord)) : Json(nullptr)},
        {"child_scopes", info.childScopes},
    };
}

} // namespace mneme
