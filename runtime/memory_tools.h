#pragma once

#include <mneme/core/tool.h>
#include <mneme/runtime/export.h>
#include <mneme/runtime/memory_ref.h>

#include <QFuture>
#include <QString>
#include <functional>
#include <memory>

class QThreadPool;

namespace mneme {

// The two tools an agent with memory gets in a crew (CrewAI's "Search memory" and "Save to memory",
// named search_memory and save_to_memory so that every provider's function-calling accepts them).
// They are plain Tools: give them to your own AgentExecutor too. Their work blocks (recall, save), so
// it runs on `pool` (null: the global pool); `track`, when given, receives each job, so an owner can
// wait for the jobs before the Memory goes.
namespace MemoryTools {

using Track = std::function<void(QFuture<void>)>;

inline constexpr char kSearchName[] = "search_memory";
inline constexpr char kSaveName[] = "save_to_memory";

// {"queries": ["...", ...]}: each query is recalled (up to 20
// matches, deep), matches are merged by id in first-seen order, and the result lists them as
// MemoryMatch::format() lines, or says that nothing was found.
MNEME_RUNTIME_EXPORT std::shared_ptr<Tool> search(const MemoryRef &memory, QThreadPool *pool = nullptr, Track track = {});

// {"contents": ["...", ...]}: one item is saved at once and the result names its scope and importance;
// several are saved in the background. `role` is the agent role reported in the save events. Throws
// Error(PermissionDenied) for a read-only memory: such an agent does not get this tool.
MNEME_RUNTIME_EXPORT std::shared_ptr<Tool> save(const MemoryRef &memory, const QString &role, QThreadPool *pool = nullptr, Track track = {});

} // namespace MemoryTools

} // namespace mneme
