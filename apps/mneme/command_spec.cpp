#include "command_spec.h"

namespace mneme::cli {

namespace {

using Option = CommandSpec::Option;

Option value(const char *name, const char *valueName, const char *help)
{
    return Option{QLatin1String(name), QLatin1String(valueName), QLatin1String(help), false};
}

Option repeated(const char *name, const char *valueName, const char *help)
{
    return Option{QLatin1String(name), QLatin1String(valueName), QLatin1String(help), true};
}

Option flag(const char *name, const char *help)
{
    return Option{QLatin1String(name), QString(), QLatin1String(help), false};
}

CommandSpec command(const char *name, const char *arguments, const char *summary, int minPositionals,
                    int maxPositionals, QList<Option> options)
{
    CommandSpec spec;
    spec.name = QLatin1String(name);
    spec.arguments = QLatin1String(arguments);
    spec.summary = QLatin1String(summary);
    spec.minPositionals = minPositionals;
    spec.maxPositionals = maxPositionals;
    spec.options = std::move(options);
    return spec;
}

QList<CommandSpec> buildTable()
{
    const Option scope = value("scope", "S", "scope path of the record (default /)");
    const Option category = repeated("category", "C", "a category; repeat for several");
    const Option importance = value("importance", "X", "importance between 0 and 1");
    const Option source = value("source", "S", "where the memory comes from (required with --private)");
    const Option privateFlag = flag("private", "visible only to recalls with the same --source");
    const Option metadata = value("metadata", "JSON", "a JSON object stored with the record");
    // The servers' options (mcp, serve).
    const Option tokenFile = value("token-file", "FILE", "require the bearer token in FILE (default: $MNEME_HTTP_TOKEN when set)");
    const Option allowOrigin = repeated("allow-origin", "ORIGIN", "serve web pages from this origin as well as localhost's");
    const Option maxBody = value("max-body", "BYTES", "largest request accepted, in bytes (default 4194304)");
    const Option requestTimeout = value("request-timeout", "SECONDS", "time a client has to send a whole request (default 30)");
    const Option threads = value("threads", "N", "threads running the memory's operations (default 8)");
    // Who a read acts as (docs/cli.md "Privacy: --source and --curator").
    const Option readerSource = value("source", "S", "act as this source: its private records are visible too");
    const Option curator = flag("curator", "act as the store's owner: every record, private ones included");
    const Option user = value("user", "ID", "the user the memory belongs to (metadata user_id)");
    const Option agent = value("agent", "ID", "the agent the memory belongs to (metadata agent_id)");
    const Option run = value("run", "ID", "the run or session the memory belongs to (metadata run_id)");
    const Option where = repeated("where", "COND",
                                  "a metadata condition: KEY=VALUE, KEY!=VALUE, KEY>N, KEY>=N, KEY<N, KEY<=N, "
                                  "\"KEY in A,B\" or \"KEY not in A,B\"; repeat for several (all must hold)");
    const Option whereJson = value("metadata", "JSON",
                                   "metadata conditions as a JSON filter: {\"key\": value}, {\"key\": {\"$gte\": 2}}, "
                                   "$in, $nin, $ne, $exists");
    const Option onlyUser = value("user", "ID", "only memories of this user (metadata user_id)");
    const Option onlyAgent = value("agent", "ID", "only memories of this agent (metadata agent_id)");
    const Option onlyRun = value("run", "ID", "only memories of this run or session (metadata run_id)");

    return {
        command("remember", "TEXT", "Store one memory and print the stored record (TEXT \"-\" reads the text from standard input).", 1, 1,
                {scope, category, importance, source, privateFlag,
                 value("at", "ISO8601", "creation time of the memory (default now)"), metadata, user, agent, run}),
        command("remember-many", "[FILE|-]",
                "Store many memories from JSON Lines or plain text lines (standard input when FILE is - or absent).",
                0, 1,
                {value("scope", "S", "default scope of the items"),
                 repeated("category", "C", "default category of the items; repeat for several"),
                 value("importance", "X", "default importance of the items (0..1)"),
                 value("source", "S", "default source of the items"),
                 flag("private", "make the items private unless a line says otherwise"),
                 value("at", "ISO8601", "default creation time of the items"),
                 value("metadata", "JSON", "default metadata object; a line's keys override it"),
                 value("user", "ID", "default user of the items (a line's user_id overrides it)"),
                 value("agent", "ID", "default agent of the items (a line's agent_id overrides it)"),
                 value("run", "ID", "default run of the items (a line's run_id overrides it)")}),
        command("recall", "QUERY", "Ranked recall of the memories that match QUERY.", 1, 1,
                {repeated("scope", "S", "search this scope; several make a slice"),
                 repeated("category", "C", "only records with one of these categories"),
                 value("limit", "N", "at most N matches (default 10)"),
                 value("depth", "shallow|deep", "recall depth (default deep)"),
                 value("source", "S", "recall as this source: its private records are visible"),
                 value("only-source", "S", "only records whose source is S"),
                 curator,
                 flag("include-private", "the same as --curator"),
                 value("now", "ISO8601", "measure recency to this time instead of now"),
                 where, whereJson, onlyUser, onlyAgent, onlyRun,
                 value("min-score", "X", "only matches whose score is at least X (0..1)"),
                 value("min-relevance", "X", "the relevance floor of this recall (0..1; default min_relevance)"),
                 value("as-of", "ISO8601", "time travel: only records created before this time, and relations valid then"),
                 flag("relations", "also the relations graph recall finds (graph_memory on), with the records they came from"),
                 flag("stats", "also how the recall was answered: exactly or by the approximate index, the vector searches, "
                               "the time")}),
        command("forget", "", "Delete the records the filters select (kept in their history).", 0, 0,
                {value("scope", "S", "records in this scope and below"),
                 repeated("id", "ID", "the record with this id; repeat for several"),
                 repeated("category", "C", "records with one of these categories"),
                 value("older-than", "ISO8601", "records created before this time"), where, whereJson, onlyUser,
                 onlyAgent, onlyRun, readerSource, curator}),
        command("update", "ID", "Edit one record and print it.", 1, 1,
                {value("content", "T", "new content (embedded again)"), value("scope", "S", "new scope"),
                 repeated("category", "C", "new categories (replace the old ones); repeat for several"),
                 flag("no-categories", "remove every category of the record"),
                 value("importance", "X", "new importance between 0 and 1"),
                 value("metadata", "JSON",
                       "metadata keys to set (a JSON merge patch: a key set to null is removed, others are kept)"),
                 flag("replace-metadata", "with --metadata: replace the whole metadata object instead"), readerSource, curator}),
        command("get", "ID", "Print one record.", 1, 1, {readerSource, curator}),
        command("history", "ID", "Print every change of one record.", 1, 1, {readerSource, curator}),
        command("undo", "ID",
                "Revert the last change of one record (an update, or a delete) and print the record as restored.", 1, 1,
                {readerSource, curator}),
        command("tree", "[SCOPE]", "Print the scope tree with record counts.", 0, 1,
                {value("max-depth", "N", "levels below SCOPE to show (default 3)"), readerSource, curator}),
        command("info", "SCOPE", "Print the statistics of one scope.", 1, 1, {readerSource, curator}),
        command("scopes", "[SCOPE]", "List the immediate child scopes of SCOPE (default /).", 0, 1, {readerSource, curator}),
        command("categories", "", "Count the records of each category.", 0, 0,
                {value("scope", "S", "only records in this scope and below"), readerSource, curator}),
        command("list", "", "List records, newest first.", 0, 0,
                {value("scope", "S", "only records in this scope and below"),
                 value("limit", "N", "at most N records (default 200)"),
                 value("offset", "N", "skip the first N records (default 0)"), readerSource, curator}),
        command("extract", "TEXT|-",
                "Split a text into atomic facts, one per line, storing nothing (TEXT \"-\" reads standard input).", 1, 1,
                {}),
        command("reset", "", "Delete every record (or those of one scope) for good.", 0, 0,
                {value("scope", "S", "only this scope and below"), flag("yes", "confirm the deletion")}),
        command("check", "",
                "Check the store: its file, its keyword index, its lookup tables, its vector index file and every record. "
                "Exits with 1 when a problem remains.",
                0, 0, {flag("repair", "rebuild what is derived from the records (keyword index, lookup tables, index file)")}),
        command("export", "[FILE]",
                "Write the records with their embeddings as JSON Lines to FILE (standard output when absent or -); "
                "--curator for every record (a full backup).",
                0, 1, {readerSource, curator}),
        command("import", "FILE",
                "Read records written by export, from FILE or standard input (-); contents are embedded again by default.",
                1, 1,
                {flag("keep-embeddings", "use the embeddings of the file (same embedder only)"),
                 flag("reembed", "embed every content again (the default)")}),
        command("migrate", "--to TARGET",
                "Copy the whole store (records with their embeddings, state, graph) into a PostgreSQL database or a SQLite "
                "file, in batches; run it again to resume an interrupted migration. The store is only read.",
                0, 0,
                {value("to", "TARGET",
                       "the store to fill: a PostgreSQL dsn (\"host=H dbname=D user=U\" or postgresql://U@H/D; the password "
                       "from PGPASSWORD or .pgpass) or a SQLite file"),
                 value("batch", "N", "records per write (default 1000)")}),
        command("eval", "locomo FILE",
                "Retrieval evaluation on a LOCOMO-format file: each conversation's turns in a fresh in-memory store "
                "(--config is used, --db is not), each question recalled shallow, turn-level evidence recall@k.",
                2, 2,
                {value("k", "1,5,10", "recall cut-offs, a comma list of positive integers (default 1,5,10)"),
                 value("conversations", "A-B", "only the conversations A to B (1-based), or N for one (default all)"),
                 repeated("category", "N",
                          "only questions of this category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, "
                          "5 adversarial; repeat for several (default all five)"),
                 value("off-topic", "FILE",
                       "also recall each query of FILE (one a line, # comments) on every conversation and count "
                       "how many return nothing")}),
        command("graph", "entities|relations [ENTITY]|neighbours ENTITY|export",
                "Read the graph memory keeps beside the records (graph_memory): its entities, its relations (of ENTITY), "
                "the neighbours of ENTITY, or all of it as Graphviz DOT (--dot) or JSON (--json).",
                1, 2,
                {repeated("scope", "S", "only this scope and below; repeat for several"),
                 flag("include-invalid", "relations, neighbours, export: invalidated relations too"),
                 value("as-of", "ISO8601", "relations, neighbours, export: the relations valid at this time"),
                 value("hops", "N", "neighbours: 1 or 2 hops from ENTITY (default 1)"),
                 value("limit", "N", "entities, relations: at most N"), flag("dot", "export: Graphviz DOT"), readerSource, curator}),
        command("flow-graph", "FILE|-",
                "Print a flow's graph in Graphviz DOT, from the JSON description the flow writes with Flow::toJson() or its "
                "program prints with --flow-graph=json (FILE \"-\" reads standard input). Render it with: dot -Tsvg.",
                1, 1, {}),
        command("chat", "",
                "Chat with an agent (the configuration's llm, and its \"agent\" and \"chat_memory\" sections) in a session "
                "kept in the store: one message a line of standard input, /exit or the end of input to stop.",
                0, 0, {value("session", "S", "the chat session to continue or start (default \"default\")")}),
        command("sessions", "list|show|clear|delete [SESSION]",
                "List the chat sessions of the store, show one (its messages and block states), clear one (delete its "
                "messages and start it anew) or delete it.",
                1, 2,
                {flag("archived", "show: the messages flushed to the memory blocks too"),
                 flag("yes", "clear, delete: confirm the deletion")}),
        command("mcp", "", "Serve the memory to MCP clients over standard input and output, or over HTTP with --listen.", 0, 0,
                {value("source", "S", "act as this source: its private records are visible and stored records carry it"),
                 value("listen", "HOST:PORT", "serve streamable HTTP at http://HOST:PORT/mcp instead of stdio; any but loopback needs a token"),
                 tokenFile, allowOrigin, maxBody, requestTimeout, threads}),
        command("serve", "", "Serve the memory as a REST API, with its OpenAPI document at /openapi.json.", 0, 0,
                {value("listen", "HOST:PORT", "address to listen on (default 127.0.0.1:8765); any but loopback needs a token"), tokenFile, allowOrigin, maxBody,
                 requestTimeout, value("max-connections", "N", "connections served at once (default 256)"), threads}),
        command("help", "[COMMAND]", "Print the usage of mneme or of one command.", 0, 1, {}),
    };
}

QString optionLabel(const Option &o)
{
    QString label = QStringLiteral("--") + o.name;
    if (o.takesValue())
        label += QLatin1Char(' ') + o.valueName;
    return label;
}

QString optionLines(const QList<Option> &options)
{
    qsizetype width = 0;
    for (const Option &o : options)
        width = std::max(width, optionLabel(o).size());
    QString text;
    for (const Option &o : options) {
        QString help = o.help;
        if (o.repeatable && !help.contains(QLatin1String("repeat")))
            help += QStringLiteral(" (repeatable)");
        text += QStringLiteral("  %1  %2\n").arg(optionLabel(o).leftJustified(width), help);
    }
    return text;
}

} // namespace

const CommandSpec::Option *CommandSpec::option(const QString &optionName) const
{
    for (const Option &o : options) {
        if (o.name == optionName)
            return &o;
    }
    return nullptr;
}

QString CommandSpec::synopsis() const
{
    QString text = QStringLiteral("mneme ") + name;
    if (!arguments.isEmpty())
        text += QLatin1Char(' ') + arguments;
    for (const Option &o : options) {
        text += QStringLiteral(" [") + optionLabel(o) + QLatin1Char(']');
        if (o.repeatable)
            text += QStringLiteral("...");
    }
    return text;
}

QString CommandSpec::usage() const
{
    QString text = QStringLiteral("Usage: ") + synopsis() + QStringLiteral("\n\n") + summary + QLatin1Char('\n');
    if (!options.isEmpty())
        text += QStringLiteral("\nOptions:\n") + optionLines(options);
    text += QStringLiteral("\nGlobal options:\n") + optionLines(globalOptions());
    return text;
}

const QList<CommandSpec> &CommandSpec::all()
{
    static const QList<CommandSpec> table = buildTable();
    return table;
}

const CommandSpec *CommandSpec::find(const QString &commandName)
{
    for (const CommandSpec &spec : all()) {
        if (spec.name == commandName)
            return &spec;
    }
    return nullptr;
}

const QList<CommandSpec::Option> &CommandSpec::globalOptions()
{
    static const QList<Option> options = {
        value("db", "PATH", "SQLite file of the store (default $MNEME_STORAGE_DIR/memory.db, else ~/.local/share/mneme/memory.db)"),
        value("config", "FILE", "JSON configuration (the keys of MemoryConfig)"),
        flag("json", "print exactly one JSON document on standard output"),
        flag("quiet", "print nothing but errors on standard error"),
        flag("verbose", "print events and timings on standard error"),
        flag("help", "print this usage"),
        flag("version", "print the version (\"mneme 0.2.0\"; with --json {\"version\": \"0.2.0\"})"),
    };
    return options;
}

const CommandSpec::Option *CommandSpec::globalOption(const QString &optionName)
{
    for (const Option &o : globalOptions()) {
        if (o.name == optionName)
            return &o;
    }
    return nullptr;
}

QString CommandSpec::generalUsage()
{
    QString text = QStringLiteral("Usage: mneme [global options] COMMAND [arguments] [options]\n\n"
                                  "Long-term memory from the terminal.\n\nCommands:\n");
    qsizetype width = 0;
    for (const CommandSpec &spec : all())
        width = std::max(width, (spec.name + QLatin1Char(' ') + spec.arguments).size());
    for (const CommandSpec &spec : all()) {
        const QString head = (spec.name + QLatin1Char(' ') + spec.arguments).trimmed();
        text += QStringLiteral("  %1  %2\n").arg(head.leftJustified(width), spec.summary);
    }
    text += QStringLiteral("\nGlobal options (before or after the command):\n") + optionLines(globalOptions());
    text += QStringLiteral("\nRun \"mneme COMMAND --help\" for the options of a command.\n"
                           "Exit status: 0 success, 1 failure, 2 bad usage or invalid input, 3 permission refused.\n");
    return text;
}

} // namespace mneme::cli
