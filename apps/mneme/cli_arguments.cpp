#include "cli_arguments.h"

#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>

#include <cmath>

namespace mneme::cli {

namespace {

[[noreturn]] void usageError(const QString &message)
{
    throw Error(ErrorKind::InvalidArgument, message);
}

QString quoted(const QString &text)
{
    return Error::quoted(text);
}

bool looksLikeOption(const QString &arg)
{
    return arg.size() > 2 && arg.startsWith(QLatin1String("--"));
}

// The option of this name of some command (used to explain misplaced options), or null.
const CommandSpec::Option *anyCommandOption(const QString &name)
{
    for (const CommandSpec &spec : CommandSpec::all()) {
        if (const CommandSpec::Option *option = spec.option(name))
            return option;
    }
    return nullptr;
}

QString helpHint(const CommandSpec *command)
{
    if (command && command->name != QLatin1String("help"))
        return QStringLiteral("run \"mneme %1 --help\" for its options").arg(command->name);
    return QStringLiteral("run \"mneme --help\" for the commands and options");
}

} // namespace

CliArguments CliArguments::parse(const QStringList &arguments)
{
    CliArguments a;
    // The first problem found; reported after the loop unless --help turns up later.
    QString problem;
    auto fail = [&](const QString &message) {
        if (problem.isEmpty())
            problem = message;
    };

    bool optionsEnded = false;
    for (qsizetype i = 0; i < arguments.size(); ++i) {
        const QString arg = arguments.at(i);
        if (!optionsEnded && arg == QLatin1String("--")) {
            optionsEnded = true;
            continue;
        }
        if (!optionsEnded && (arg == QLatin1String("--help") || arg == QLatin1String("-h"))) {
            a.m_help = true;
            continue;
        }
        if (!optionsEnded && arg.startsWith(QLatin1String("--"))) {
            QString name = arg.mid(2);
            std::optional<QString> inlineValue;
            const qsizetype eq = name.indexOf(QLatin1Char('='));
            if (eq >= 0) {
                inlineValue = name.mid(eq + 1);
                name.truncate(eq);
            }
            const CommandSpec::Option *option = CommandSpec::globalOption(name);
            if (!option && a.m_command)
                option = a.m_command->option(name);
            if (!option) {
                const CommandSpec::Option *misplaced = a.m_command ? nullptr : anyCommandOption(name);
                if (misplaced) {
                    fail(QStringLiteral("option --%1 must follow the command name (mneme COMMAND --%1 ...)").arg(name.left(80)));
                    // Skip its value too, so that it is not taken for the command name.
                    if (misplaced->takesValue() && !inlineValue && i + 1 < arguments.size()
                        && !looksLikeOption(arguments.at(i + 1)))
                        ++i;
                } else if (a.m_command)
                    fail(QStringLiteral("unknown option %1 for \"%2\"; %3").arg(quoted(QStringLiteral("--") + name), a.m_command->name, helpHint(a.m_command)));
                else
                    fail(QStringLiteral("unknown option %1; %2").arg(quoted(QStringLiteral("--") + name), helpHint(nullptr)));
                continue;
            }
            if (option->takesValue()) {
                QString v;
                if (inlineValue) {
                    v = *inlineValue;
                } else if (i + 1 < arguments.size() && !looksLikeOption(arguments.at(i + 1))) {
                    v = arguments.at(++i);
                } else {
                    fail(QStringLiteral("option --%1 needs a value (--%1 %2)").arg(option->name, option->valueName));
                    continue;
                }
                if (a.m_options.contains(option->name) && !option->repeatable) {
                    fail(QStringLiteral("option --%1 was given twice; give it once").arg(option->name));
                    continue;
                }
                a.m_options[option->name].append(v);
            } else {
                if (inlineValue) {
                    fail(QStringLiteral("option --%1 takes no value; write --%1 alone").arg(option->name));
                    continue;
                }
                a.m_options[option->name] = QStringList();
            }
            continue;
        }
        if (!optionsEnded && arg.size() > 1 && arg.startsWith(QLatin1Char('-'))) {
            fail(QStringLiteral("unknown option %1; %2 (put -- before arguments that start with -)")
                     .arg(quoted(arg), helpHint(a.m_command)));
            continue;
        }
        if (!a.m_command) {
            a.m_command = CommandSpec::find(arg);
            if (!a.m_command) {
                usageError(!problem.isEmpty()
                               ? problem
                               : QStringLiteral("unknown command %1; run \"mneme --help\" for the list of commands")
                                     .arg(quoted(arg)));
            }
            continue;
        }
        a.m_positionals.append(arg);
    }

    if (a.m_command && a.m_command->name == QLatin1String("help")) {
        a.m_help = true;
        if (a.m_positionals.size() > 1)
            usageError(QStringLiteral("help takes at most one COMMAND (mneme help recall)"));
        if (!a.m_positionals.isEmpty()) {
            const CommandSpec *topic = CommandSpec::find(a.m_positionals.first());
            if (!topic || topic->name == QLatin1String("help"))
                usageError(QStringLiteral("no help for %1: not a command; run \"mneme --help\" for the list of commands")
                               .arg(quoted(a.m_positionals.first())));
            a.m_helpTopic = topic->name;
        }
        return a;
    }
    if (a.m_help) {
        a.m_helpTopic = a.commandName();
        return a;
    }
    if (a.versionRequested())
        return a;
    if (!problem.isEmpty())
        usageError(problem);
    if (a.quiet() && a.verbose())
        usageError(QStringLiteral("--quiet and --verbose exclude each other; give one of them"));
    if (!a.m_command)
        usageError(QStringLiteral("no command given; %1").arg(helpHint(nullptr)));

    const CommandSpec &spec = *a.m_command;
    if (a.m_positionals.size() < spec.minPositionals)
        usageError(QStringLiteral("%1 needs %2 (usage: %3)").arg(spec.name, spec.arguments, spec.synopsis()));
    if (a.m_positionals.size() > spec.maxPositionals) {
        const QString extra = quoted(a.m_positionals.value(spec.maxPositionals));
        if (spec.maxPositionals == 0)
            usageError(QStringLiteral("%1 takes no argument, got %2; %3").arg(spec.name, extra, helpHint(&spec)));
        usageError(QStringLiteral("%1 takes only %2, got the extra argument %3; quote text that contains spaces")
                       .arg(spec.name, spec.arguments, extra));
    }
    return a;
}

std::optional<QString> CliArguments::value(const QString &name) const
{
    const auto it = m_options.constFind(name);
    if (it == m_options.constEnd() || it->isEmpty())
        return std::nullopt;
    return it->constLast();
}

std::optional<int> CliArguments::integer(const QString &name, int minimum) const
{
    const std::optional<QString> text = value(name);
    if (!text)
        return std::nullopt;
    bool ok = false;
    const int n = text->trimmed().toInt(&ok);
    if (!ok || n < minimum) {
        const QString kind = minimum == 1 ? QStringLiteral("a positive integer")
                           : minimum == 0 ? QStringLiteral("a non-negative integer")
                                          : QStringLiteral("an integer of at least %1").arg(minimum);
        usageError(QStringLiteral("--%1 must be %2, got %3").arg(name, kind, quoted(*text)));
    }
    return n;
}

double CliArguments::parseUnitInterval(const QString &text, const QString &what)
{
    bool ok = false;
    const double x = text.trimmed().toDouble(&ok);
    if (!ok || !std::isfinite(x) || x < 0.0 || x > 1.0)
        usageError(QStringLiteral("%1 must be a number between 0 and 1, got %2").arg(what, quoted(text)));
    return x;
}

std::optional<double> CliArguments::unitInterval(const QString &name) const
{
    const std::optional<QString> text = value(name);
    if (!text)
        return std::nullopt;
    return parseUnitInterval(*text, QStringLiteral("--") + name);
}

std::optional<QDateTime> CliArguments::time(const QString &name) const
{
    const std::optional<QString> text = value(name);
    if (!text)
        return std::nullopt;
    const QDateTime t = fromIso(*text);
    if (!t.isValid())
        usageError(QStringLiteral("--%1 must be an ISO 8601 date or time such as 2024-05-01 or 2024-05-01T12:00:00Z, got %2")
                       .arg(name, quoted(*text)));
    return t;
}

QString CliArguments::normalizedScope(const QString &text, const QString &what)
{
    try {
        return ScopePath::normalize(text);
    } catch (const Error &e) {
        usageError(QStringLiteral("%1: %2").arg(what, e.message()));
    }
}

std::optional<QString> CliArguments::scope(const QString &name) const
{
    const std::optional<QString> text = value(name);
    if (!text)
        return std::nullopt;
    return normalizedScope(*text, QStringLiteral("--") + name);
}

QStringList CliArguments::scopes(const QString &name) const
{
    QStringList out;
    for (const QString &text : values(name)) {
        const QString path = normalizedScope(text, QStringLiteral("--") + name);
        if (!out.contains(path))
            out.append(path);
    }
    return out;
}

std::optional<Json> CliArguments::jsonObject(const QString &name) const
{
    const std::optional<QString> text = value(name);
    if (!text)
        return std::nullopt;
    const Json j = parseJson(*text, QStringLiteral("--") + name);
    if (!j.is_object())
        usageError(QStringLiteral("--%1 must be a JSON object such as '{\"key\": \"value\"}'").arg(name));
    return j;
}

ReadContext CliArguments::reader() const
{
    const bool curator = has(QStringLiteral("curator")) || has(QStringLiteral("include-private"));
    const std::optional<QString> source = value(QStringLiteral("source"));
    if (curator && source)
        usageError(QStringLiteral("--source and --curator exclude each other: the curator sees every record; give one of them"));
    if (curator)
        return ReadContext::asCurator();
    if (source) {
        if (source->trimmed().isEmpty())
            usageError(QStringLiteral("--source needs a non-empty value"));
        return ReadContext::of(*source);
    }
    return ReadContext::anonymous();
}

QStringList CliArguments::nonBlankValues(const QString &name) const
{
    QStringList out;
    for (const QString &v : values(name)) {
        const QString t = v.trimmed();
        if (t.isEmpty())
            usageError(QStringLiteral("--%1 needs a non-empty value").arg(name));
        out.append(t);
    }
    return out;
}

} // namespace mneme::cli
