#include "source_view.h"

#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>

#include <algorithm>

namespace mneme::cli {

namespace {

constexpr int kPage = 1000;

} // namespace

SourceView::SourceView(Memory &memory, QString source) : m_memory(memory), m_source(std::move(source)) {}

bool SourceView::sees(const MemoryRecord &record) const
{
    return reader().sees(record);
}

ReadContext SourceView::reader() const
{
    return m_source.isEmpty() ? ReadContext::anonymous() : ReadContext::of(m_source);
}

bool SourceView::seesJson(const Json &record) const
{
    if (!record.is_object())
        return true; // no record on that side of the change
    const auto isPrivate = record.find("private");
    if (isPrivate == record.end() || !isPrivate->is_boolean() || !isPrivate->get<bool>())
        return true;
    const auto source = record.find("source");
    return !m_source.isEmpty() && source != record.end() && source->is_string() && QString::fromStdString(source->get<std::string>()) == m_source;
}

void SourceView::unknownId(const QString &id)
{
    throw Error(ErrorKind::NotFound, QStringLiteral("no record has the id \"%1\"; find ids with recall or list").arg(id.trimmed()));
}

RecordFilter SourceView::filterFor(const QString &scope) const
{
    RecordFilter f;
    const QString resolved = m_memory.resolveScope(scope.isEmpty() ? std::nullopt : std::optional<QString>(scope));
    if (resolved != QLatin1String("/"))
        f.scopes = {resolved};
    f.applyPrivacy = true;
    f.includePrivate = false;
    f.source = m_source;
    return f;
}

void SourceView::forEachSeen(const QString &scope, const std::function<void(const MemoryRecord &)> &fn)
{
    const RecordFilter f = filterFor(scope);
    m_memory.drainWrites();
    for (int offset = 0;; offset += kPage) {
        const std::vector<MemoryRecord> page = m_memory.storage().list(f, kPage, offset);
        for (const MemoryRecord &r : page)
            if (sees(r)) // the storage applied the filter already; checked again where it matters most
                fn(r);
        if (int(page.size()) < kPage)
            return;
    }
}

std::optional<MemoryRecord> SourceView::seenRecord(const QString &id)
{
    std::optional<MemoryRecord> r = m_memory.get(id, reader());
    if (r && !sees(*r))
        return std::nullopt;
    return r;
}

MemoryRecord SourceView::requireSeen(const QString &id)
{
    std::optional<MemoryRecord> r = seenRecord(id);
    if (!r)
        unknownId(id);
    return *r;
}

MemoryRecord SourceView::remember(const QString &content, RememberOptions options)
{
    if (options.isPrivate && m_source.isEmpty())
        throw Error(ErrorKind::PermissionDenied,
                    QStringLiteral("a private record needs a source, and this request has none; give the source the "
                                   "record belongs to, or store it without \"private\""));
    options.source = m_source;
    return m_memory.remember(content, options);
}

SaveResult SourceView::rememberMany(QList<MemoryInput> items)
{
    for (MemoryInput &item : items) {
        if (item.options.isPrivate && m_source.isEmpty())
            throw Error(ErrorKind::PermissionDenied,
                        QStringLiteral("a private record needs a source, and this request has none; give the source the "
                                       "records belong to, or store them without \"private\""));
        item.options.source = m_source;
    }
    return m_memory.rememberMany(items).result();
}

QList<MemoryMatch> SourceView::recall(const QString &query, RecallOptions options)
{
    options.reader = reader();
    options.source.clear(); // the older spellings of the reader: not the caller's to choose
    options.includePrivate = false;
    QList<MemoryMatch> matches = m_memory.recall(query, options);
    matches.removeIf([this](const MemoryMatch &m) { return !sees(m.record); });
    return matches;
}

std::optional<MemoryRecord> SourceView::get(const QString &id)
{
    return seenRecord(id);
}

QList<HistoryEntry> SourceView::history(const QString &id)
{
    QList<HistoryEntry> entries;
    try {
        entries = m_memory.history(id, reader());
    } catch (const Error &e) {
        if (e.kind() == ErrorKind::NotFound)
            unknownId(id);
        throw;
    }
    // A deleted record is known by its history only: every side of every change must be seen.
    for (const HistoryEntry &e : entries)
        if (!seesJson(e.oldRecord) || !seesJson(e.newRecord))
            unknownId(id);
    if (const std::optional<MemoryRecord> current = m_memory.get(id, reader()); current && !sees(*current))
        unknownId(id);
    return entries;
}

MemoryRecord SourceView::update(const QString &id, const UpdateOptions &options)
{
    requireSeen(id);
    return m_memory.update(id, options, reader());
}

MemoryRecord SourceView::undo(const QString &id)
{
    history(id); // NotFound for a record this source does not see, deleted or not
    return m_memory.undo(id, reader());
}

int SourceView::forget(const ForgetOptions &options)
{
    if (!options.scope && options.ids.isEmpty() && options.categories.isEmpty() && !options.olderThan.isValid()
        && options.metadata.empty() && options.userId.isEmpty() && options.agentId.isEmpty() && options.runId.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("forget needs at least one of scope, ids, categories, older_than, where (metadata "
                                   "conditions), user_id, agent_id or run_id"));
    // Memory deletes only what this source sees.
    return m_memory.forget(options, reader());
}

QList<MemoryRecord> SourceView::list(const QString &scope, int limit, int offset)
{
    return m_memory.listRecords(scope, limit, offset, reader());
}

QMap<QString, int> SourceView::scopeCounts(const QString &path)
{
    const QString root = m_memory.resolveScope(path.isEmpty() ? std::nullopt : std::optional<QString>(path));
    QMap<QString, int> counts;
    forEachSeen(path, [&](const MemoryRecord &r) {
        for (QString s = r.scope;; s = ScopePath::parent(s)) {
            ++counts[s];
            if (s == root || s == QLatin1String("/"))
                break;
        }
    });
    return counts;
}

ScopeNode SourceView::tree(const QString &path, int maxDepth)
{
    return m_memory.scopeTree(path, maxDepth, reader());
}

ScopeInfo SourceView::info(const QString &path)
{
    return m_memory.info(path, reader());
}

QStringList SourceView::scopes(const QString &path)
{
    return m_memory.listScopes(path, reader());
}

QMap<QString, int> SourceView::categories(const QString &scope)
{
    return m_memory.listCategories(scope, reader());
}

QStringList SourceView::extract(const QString &text)
{
    return m_memory.extractMemories(text);
}

} // namespace mneme::cli
