#include "scope_commands.h"

#include "command_context.h"
#include "table_printer.h"

#include <mneme/core/error.h>

#include <algorithm>

namespace mneme::cli {

namespace {

// The positional SCOPE, normalised; "/" when absent.
QString scopeArgument(const CliArguments &a)
{
    if (a.positionals().isEmpty())
        return QStringLiteral("/");
    return CliArguments::normalizedScope(a.positional(0), QStringLiteral("SCOPE"));
}

} // namespace

ScopeCommands::ScopeCommands(CommandContext &context)
    : m_ctx(context)
{
}

void ScopeCommands::tree()
{
    const CliArguments &a = m_ctx.args();
    const QString path = scopeArgument(a);
    const int maxDepth = a.integer(QStringLiteral("max-depth"), 0).value_or(3);
    const ReadContext reader = a.reader();
    Memory &memory = m_ctx.memory();
    if (m_ctx.json()) {
        m_ctx.console().writeJson(memory.scopeTree(path, maxDepth, reader));
        return;
    }
    QString text = memory.tree(path, maxDepth, reader);
    if (!text.endsWith(QLatin1Char('\n')))
        text += QLatin1Char('\n');
    m_ctx.console().write(text);
}

void ScopeCommands::info()
{
    const QString path = scopeArgument(m_ctx.args());
    const ScopeInfo info = m_ctx.memory().info(path, m_ctx.args().reader());
    if (m_ctx.json()) {
        m_ctx.console().writeJson(info);
        return;
    }
    auto orDash = [](const QString &s) { return s.isEmpty() ? QStringLiteral("-") : s; };
    QString text;
    text += QStringLiteral("scope:          %1\n").arg(info.path);
    text += QStringLiteral("records:        %1\n").arg(info.recordCount);
    text += QStringLiteral("categories:     %1\n").arg(orDash(info.categories.join(QStringLiteral(", "))));
    text += QStringLiteral("oldest record:  %1\n").arg(orDash(toIso(info.oldestRecord)));
    text += QStringLiteral("newest record:  %1\n").arg(orDash(toIso(info.newestRecord)));
    text += QStringLiteral("child scopes:   %1\n").arg(orDash(info.childScopes.join(QStringLiteral(", "))));
    m_ctx.console().write(text);
}

void ScopeCommands::scopes()
{
    const QString path = scopeArgument(m_ctx.args());
    const QStringList children = m_ctx.memory().listScopes(path, m_ctx.args().reader());
    if (m_ctx.json()) {
        m_ctx.console().writeJson(Json(children));
        return;
    }
    if (children.isEmpty()) {
        m_ctx.console().write(QStringLiteral("No scopes below %1.\n").arg(path));
        return;
    }
    m_ctx.console().write(children.join(QLatin1Char('\n')) + QLatin1Char('\n'));
}

void ScopeCommands::categories()
{
    const QString scope = m_ctx.args().scope(QStringLiteral("scope")).value_or(QString());
    const QMap<QString, int> counts = m_ctx.memory().listCategories(scope, m_ctx.args().reader());
    if (m_ctx.json()) {
        Json out = Json::object();
        for (auto it = counts.cbegin(); it != counts.cend(); ++it)
            out[it.key().toStdString()] = it.value();
        m_ctx.console().writeJson(out);
        return;
    }
    if (counts.isEmpty()) {
        m_ctx.console().write(QStringLiteral("No categories.\n"));
        return;
    }
    QList<std::pair<QString, int>> rows;
    for (auto it = counts.cbegin(); it != counts.cend(); ++it)
        rows.append({it.key(), it.value()});
    std::stable_sort(rows.begin(), rows.end(), [](const auto &x, const auto &y) { return x.second > y.second; });
    TablePrinter table;
    table.addColumn(QStringLiteral("CATEGORY"));
    table.addColumn(QStringLiteral("RECORDS"), TablePrinter::Align::Right);
    for (const auto &[name, count] : rows)
        table.addRow({name, QString::number(count)});
    m_ctx.console().write(table.render());
}

void ScopeCommands::reset()
{
    const CliArguments &a = m_ctx.args();
    const std::optional<QString> scope = a.scope(QStringLiteral("scope"));
    if (!a.has(QStringLiteral("yes"))) {
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("refusing to delete without --yes; run \"mneme reset%1 --yes\" to delete %2 for good")
                        .arg(scope ? QStringLiteral(" --scope ") + *scope : QString(),
                             scope ? QStringLiteral("every record of %1").arg(*scope) : QStringLiteral("every record")));
    }
    Memory &memory = m_ctx.memory();
    // Without --scope: everything, or everything under the configured root_scope (never beyond it).
    const int deleted = scope ? memory.reset(*scope) : (memory.rootScope().isEmpty() ? memory.resetAll() : memory.reset());
    if (m_ctx.json())
        m_ctx.console().writeJson(Json{{"deleted", deleted}});
    else
        m_ctx.console().write(QStringLiteral("Deleted %1 record(s).\n").arg(deleted));
}

void ScopeCommands::check()
{
    const bool repair = m_ctx.args().has(QStringLiteral("repair"));
    Memory &memory = m_ctx.memory();
    const StoreCheck report = memory.check(repair);
    if (!report.ok())
        m_ctx.setExitCode(1);
    if (m_ctx.json()) {
        Json damaged = Json::array();
        for (const DamagedRecord &r : report.damaged)
            damaged.push_back(Json{{"id", r.record.id}, {"problem", r.problem}});
        m_ctx.console().writeJson(Json{{"store", memory.storage().location()},
                                       {"ok", report.ok()},
                                       {"problems", report.problems},
                                       {"damaged_records", damaged},
                                       {"repaired", report.repaired}});
        return;
    }
    QString text = QStringLiteral("Store %1: %2\n")
                       .arg(memory.storage().location(),
                            report.ok() ? QStringLiteral("no problem found.")
                                        : QStringLiteral("%1 problem(s), %2 damaged record(s).")
                                              .arg(report.problems.size())
                                              .arg(report.damaged.size()));
    for (const QString &p : report.problems)
        text += QStringLiteral("  - %1\n").arg(Console::oneLine(p));
    if (!report.damaged.empty()) {
        text += QStringLiteral("Damaged records (left out of reads; `mneme export --curator` writes them as they are, "
                               "`mneme forget --id ID --curator` deletes one):\n");
        for (const DamagedRecord &r : report.damaged)
            text += QStringLiteral("  %1  %2\n").arg(r.record.id, r.problem);
    }
    for (const QString &r : report.repaired)
        text += QStringLiteral("Repaired: %1\n").arg(r);
    m_ctx.console().write(text);
}

} // namespace mneme::cli
