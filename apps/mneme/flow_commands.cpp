#include "flow_commands.h"

#include "command_context.h"
#include "input_lines.h"

#include <mneme/core/error.h>
#include <mneme/flows/flow_definition.h>

namespace mneme::cli {

FlowCommands::FlowCommands(CommandContext &context)
    : m_ctx(context)
{
}

void FlowCommands::flowGraph()
{
    const QString file = m_ctx.args().positional(0);
    const QString text = InputLines::readText(file);
    const QString source = file == QLatin1String("-") ? QStringLiteral("standard input") : file;
    Json document;
    const QString problem = readJson(text.toStdString(), &document);
    if (!problem.isEmpty())
        throw Error(ErrorKind::InvalidArgument,
                    QStringLiteral("%1 is not JSON (%2); give the description a flow writes with Flow::toJson(), or pipe its program's "
                                   "--flow-graph=json output (./my_flow --flow-graph=json | mneme flow-graph -)")
                        .arg(source, problem));
    FlowDefinition definition;
    try {
        definition = FlowDefinition::fromJson(document);
    } catch (const Error &e) {
        throw Error(e.kind(), QStringLiteral("%1: %2").arg(source, e.message()));
    }
    const QString dot = definition.toDot();
    if (m_ctx.json()) {
        m_ctx.console().writeJson(Json{{"name", definition.name()}, {"steps", definition.stepNames()}, {"dot", dot}});
        return;
    }
    m_ctx.console().write(dot);
}

} // namespace mneme::cli
