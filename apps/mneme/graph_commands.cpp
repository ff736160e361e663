#include "graph_commands.h"

#include "command_context.h"
#include "table_printer.h"

#include <mneme/core/error.h>

#include <QSet>

namespace mneme::cli {

namespace {

QString entityKey(const QString &name)
{
    return GraphEntity::normalize(name);
}

// A DOT identifier: the text in double quotes, quotes and backslashes escaped, line breaks as \n.
QString dotQuoted(const QString &text)
{
    QString out = text;
    out.replace(QLatin1Char('\\'), QStringLiteral("\\\\")).replace(QLatin1Char('"'), QStringLiteral("\\\""));
    out.replace(QLatin1Char('\n'), QStringLiteral("\\n")).replace(QLatin1Char('\r'), QString());
    return QLatin1Char('"') + out + QLatin1Char('"');
}

Json array(const auto &items)
{
    Json out = Json::array();
    for (const auto &i : items)
        out.push_back(i);
    return out;
}

} // namespace

GraphCommands::GraphCommands(CommandContext &context)
    : m_ctx(context)
{
}

GraphStore &GraphCommands::store()
{
    GraphStore *g = m_ctx.memory().graph();
    if (!g)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("the storage backend of this store keeps no graph; graph memory needs the sqlite storage"));
    return *g;
}

void GraphCommands::graph()
{
    const CliArguments &a = m_ctx.args();
    const QString what = a.positional(0);
    const QString entity = a.positional(1);
    const bool takesEntity = what == QLatin1String("relations") || what == QLatin1String("neighbours");
    if (what != QLatin1String("entities") && what != QLatin1String("export") && !takesEntity)
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("unknown graph command \"%1\"; use entities, relations, neighbours or export").arg(what));
    if (!takesEntity && !entity.isNull())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("graph %1 takes no ENTITY (got \"%2\")").arg(what, entity));
    if (what == QLatin1String("neighbours") && entity.trimmed().isEmpty())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("graph neighbours needs an ENTITY: mneme graph neighbours \"Alice\""));
    const auto onlyFor = [&](const char *option, const QStringList &commands) {
        if (a.has(QLatin1String(option)) && !commands.contains(what))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("--%1 is for graph %2, not graph %3").arg(QLatin1String(option), commands.join(QStringLiteral(" and ")), what));
    };
    onlyFor("hops", {QStringLiteral("neighbours")});
    onlyFor("dot", {QStringLiteral("export")});
    onlyFor("include-invalid", {QStringLiteral("relations"), QStringLiteral("neighbours"), QStringLiteral("export")});
    onlyFor("as-of", {QStringLiteral("relations"), QStringLiteral("neighbours"), QStringLiteral("export")});
    onlyFor("limit", {QStringLiteral("entities"), QStringLiteral("relations")});
    if (what == QLatin1String("export") && a.has(QStringLiteral("dot")) == m_ctx.json())
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("graph export needs exactly one of --dot and --json"));
    if (a.has(QStringLiteral("include-invalid")) && a.has(QStringLiteral("as-of")))
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("--include-invalid and --as-of exclude each other: --as-of shows the relations valid then"));
    const std::optional<QDateTime> asOf = a.time(QStringLiteral("as-of"));
    const GraphFilter filter = m_ctx.memory().graphFilter(a.scopes(QStringLiteral("scope")), a.reader(), asOf.value_or(QDateTime()),
                                                          a.has(QStringLiteral("include-invalid")));
    if (what == QLatin1String("entities"))
        entities(filter);
    else if (what == QLatin1String("relations"))
        relations(filter);
    else if (what == QLatin1String("neighbours"))
        neighbours(filter);
    else
        exportGraph(filter);
}

std::vector<GraphEntity> GraphCommands::named(const QString &entity, const GraphFilter &filter)
{
    std::vector<GraphEntity> found = store().entitiesByName({entityKey(entity)}, filter);
    if (found.empty())
        throw Error(ErrorKind::NotFound,
                    QStringLiteral("no entity is named \"%1\" in the graph; \"mneme graph entities\" lists them").arg(entity));
    return found;
}

void GraphCommands::entities(const GraphFilter &filter)
{
    const int limit = m_ctx.args().integer(QStringLiteral("limit"), 1).value_or(-1);
    const std::vector<GraphEntity> all = store().entities(filter, limit, 0);
    if (m_ctx.json()) {
        m_ctx.console().writeJson(array(all));
        return;
    }
    if (all.empty()) {
        m_ctx.console().write(QStringLiteral("The graph has no entities%1.\n")
                                  .arg(m_ctx.memory().config().graphMemory ? QString()
                                                                           : QStringLiteral(" (graph_memory is off in the configuration)")));
        return;
    }
    TablePrinter table;
    table.addColumn(QStringLiteral("NAME"), TablePrinter::Align::Left, 40);
    table.addColumn(QStringLiteral("TYPE"));
    table.addColumn(QStringLiteral("SCOPE"), TablePrinter::Align::Left, 24);
    table.addColumn(QStringLiteral("RECORDS"), TablePrinter::Align::Right);
    for (const GraphEntity &e : all)
        table.addRow({e.name, e.type.isEmpty() ? QStringLiteral("-") : e.type, e.scope, QString::number(e.recordIds.size())});
    m_ctx.console().write(table.render());
}

void GraphCommands::printRelations(const std::vector<GraphRelation> &relations)
{
    if (m_ctx.json()) {
        m_ctx.console().writeJson(array(relations));
        return;
    }
    if (relations.empty()) {
        m_ctx.console().write(QStringLiteral("No relations.\n"));
        return;
    }
    TablePrinter table;
    table.addColumn(QStringLiteral("SOURCE"), TablePrinter::Align::Left, 30);
    table.addColumn(QStringLiteral("RELATION"), TablePrinter::Align::Left, 30);
    table.addColumn(QStringLiteral("DESTINATION"), TablePrinter::Align::Left, 30);
    table.addColumn(QStringLiteral("SINCE"));
    table.addColumn(QStringLiteral("VALID"));
    table.addColumn(QStringLiteral("WHY"), TablePrinter::Align::Left, 50);
    for (const GraphRelation &r : relations)
        table.addRow({r.sourceName, r.label, r.destinationName, r.createdAt.date().toString(Qt::ISODate),
                      r.valid ? QStringLiteral("yes") : QStringLiteral("until %1").arg(r.invalidatedAt.date().toString(Qt::ISODate)),
                      r.why.isEmpty() ? QStringLiteral("-") : r.why});
    m_ctx.console().write(table.render());
}

void GraphCommands::relations(const GraphFilter &filter)
{
    const QString entity = m_ctx.args().positional(1);
    const int limit = m_ctx.args().integer(QStringLiteral("limit"), 1).value_or(-1);
    if (entity.trimmed().isEmpty()) {
        printRelations(store().relations(filter, limit));
        return;
    }
    std::vector<qint64> ids;
    for (const GraphEntity &e : named(entity, filter))
        ids.push_back(e.id);
    std::vector<GraphRelation> found = store().relationsOf(ids, 1, filter);
    if (limit >= 0 && int(found.size()) > limit)
        found.resize(std::size_t(limit));
    printRelations(found);
}

void GraphCommands::neighbours(const GraphFilter &filter)
{
    const QString entity = m_ctx.args().positional(1);
    const int hops = m_ctx.args().integer(QStringLiteral("hops"), 1).value_or(1);
    if (hops > 2)
        throw Error(ErrorKind::InvalidArgument, QStringLiteral("--hops must be 1 or 2 (got %1)").arg(hops));
    const std::vector<GraphEntity> start = named(entity, filter);
    std::vector<qint64> ids;
    QSet<qint64> own;
    for (const GraphEntity &e : start) {
        ids.push_back(e.id);
        own.insert(e.id);
    }
    const std::vector<GraphRelation> found = store().relationsOf(ids, hops, filter);
    QStringList names;
    QSet<qint64> seen = own;
    for (const GraphRelation &r : found)
        for (const auto &[id, name] : {std::pair{r.sourceId, r.sourceName}, std::pair{r.destinationId, r.destinationName}})
            if (!seen.contains(id)) {
                seen.insert(id);
                names << name;
            }
    if (m_ctx.json()) {
        m_ctx.console().writeJson(Json{{"entity", start.front()}, {"hops", hops}, {"neighbours", names}, {"relations", array(found)}});
        return;
    }
    m_ctx.console().write(names.isEmpty() ? QStringLiteral("%1 has no neighbours.\n").arg(start.front().name)
                                          : QStringLiteral("Neighbours of %1 (%2 hop%3): %4\n\n")
                                                .arg(start.front().name)
                                                .arg(hops)
                                                .arg(hops == 1 ? QString() : QStringLiteral("s"))
                                                .arg(names.join(QStringLiteral(", "))));
    if (!found.empty())
        printRelations(found);
}

void GraphCommands::exportGraph(const GraphFilter &filter)
{
    const std::vector<GraphEntity> entities = store().entities(filter, -1, 0);
    const std::vector<GraphRelation> relations = store().relations(filter, -1);
    if (m_ctx.json()) {
        m_ctx.console().writeJson(Json{{"entities", array(entities)}, {"relations", array(relations)}});
        return;
    }
    QString dot = QStringLiteral("digraph mneme {\n  rankdir=LR;\n  node [shape=box];\n");
    for (const GraphEntity &e : entities)
        dot += QStringLiteral("  n%1 [label=%2];\n").arg(e.id).arg(dotQuoted(e.type.isEmpty() ? e.name : e.name + QStringLiteral("\n(") + e.type + QLatin1Char(')')));
    for (const GraphRelation &r : relations)
        dot += QStringLiteral("  n%1 -> n%2 [label=%3%4];\n")
                   .arg(r.sourceId)
                   .arg(r.destinationId)
                   .arg(dotQuoted(r.label), r.valid ? QString() : QStringLiteral(", style=dashed"));
    dot += QStringLiteral("}\n");
    m_ctx.console().write(dot);
}

} // namespace mneme::cli
