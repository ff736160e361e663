#include "cli_app.h"

#include "chat_commands.h"
#include "cli_arguments.h"
#include "command_context.h"
#include "console.h"
#include "eval_commands.h"
#include "flow_commands.h"
#include "graph_commands.h"
#include "migrate_command.h"
#include "record_commands.h"
#include "scope_commands.h"
#include "server_commands.h"
#include "transfer_commands.h"

#include <mneme/core/error.h>
#include <mneme/core/version.h>

#include <QElapsedTimer>
#include <functional>

namespace mneme::cli {

CliApp::CliApp(Console &console)
    : m_console(console)
{
}

int CliApp::run(const QStringList &arguments)
{
    if (arguments.isEmpty()) {
        m_console.writeError(CommandSpec::generalUsage());
        return 2;
    }
    m_console.captureLogMessages();
    try {
        const CliArguments args = CliArguments::parse(arguments);
        m_console.setQuiet(args.quiet());
        m_console.setVerbose(args.verbose());
        if (args.helpRequested()) {
            const CommandSpec *topic = CommandSpec::find(args.helpTopic());
            const QString usage =
                topic && topic->name != QLatin1String("help") ? topic->usage() : CommandSpec::generalUsage();
            // Even the usage is one JSON document in --json mode.
            if (args.json())
                m_console.writeJson(Json{{"usage", usage}});
            else
                m_console.write(usage);
            return 0;
        }
        if (args.versionRequested()) {
            if (args.json())
                m_console.writeJson(Json{{"version", MNEME_VERSION_STR}});
            else
                m_console.write(QStringLiteral("mneme " MNEME_VERSION_STR "\n"));
            return 0;
        }
        QElapsedTimer timer;
        timer.start();
        CommandContext context(args, m_console);
        dispatch(context);
        context.close();
        m_console.showWarnings();
        m_console.event(QStringLiteral("%1 finished in %2 ms")
                            .arg(args.commandName(), QString::number(double(timer.nsecsElapsed()) / 1e6, 'f', 1)));
        return context.exitCode();
    } catch (const Error &e) {
        m_console.dropWarnings();
        m_console.error(e.message());
        return e.exitCode();
    } catch (const std::exception &e) {
        m_console.dropWarnings();
        m_console.error(QString::fromUtf8(e.what()));
        return 1;
    }
}

void CliApp::dispatch(CommandContext &context)
{
    RecordCommands records(context);
    ScopeCommands scopes(context);
    TransferCommands transfer(context);
    MigrateCommand migration(context);
    EvalCommands evaluations(context);
    FlowCommands flows(context);
    GraphCommands graphs(context);
    ChatCommands chats(context);
    ServerCommands servers(context);
    const QMap<QString, std::function<void()>> commands = {
        {QStringLiteral("remember"), [&] { records.remember(); }},
        {QStringLiteral("remember-many"), [&] { transfer.rememberMany(); }},
        {QStringLiteral("recall"), [&] { records.recall(); }},
        {QStringLiteral("forget"), [&] { records.forget(); }},
        {QStringLiteral("update"), [&] { records.update(); }},
        {QStringLiteral("get"), [&] { records.get(); }},
        {QStringLiteral("history"), [&] { records.history(); }},
        {QStringLiteral("undo"), [&] { records.undo(); }},
        {QStringLiteral("tree"), [&] { scopes.tree(); }},
        {QStringLiteral("info"), [&] { scopes.info(); }},
        {QStringLiteral("scopes"), [&] { scopes.scopes(); }},
        {QStringLiteral("categories"), [&] { scopes.categories(); }},
        {QStringLiteral("list"), [&] { records.list(); }},
        {QStringLiteral("extract"), [&] { records.extract(); }},
        {QStringLiteral("reset"), [&] { scopes.reset(); }},
        {QStringLiteral("check"), [&] { scopes.check(); }},
        {QStringLiteral("export"), [&] { transfer.exportRecords(); }},
        {QStringLiteral("import"), [&] { transfer.importRecords(); }},
        {QStringLiteral("migrate"), [&] { migration.migrate(); }},
        {QStringLiteral("eval"), [&] { evaluations.eval(); }},
        {QStringLiteral("flow-graph"), [&] { flows.flowGraph(); }},
        {QStringLiteral("graph"), [&] { graphs.graph(); }},
        {QStringLiteral("chat"), [&] { chats.chat(); }},
        {QStringLiteral("sessions"), [&] { chats.sessions(); }},
        {QStringLiteral("mcp"), [&] { servers.mcp(); }},
        {QStringLiteral("serve"), [&] { servers.serve(); }},
    };
    const auto it = commands.constFind(context.args().commandName());
    if (it == commands.constEnd())
        throw Error(ErrorKind::Internal,
                    QStringLiteral("the command \"%1\" has no implementation").arg(context.args().commandName()));
    it.value()();
}

} // namespace mneme::cli
