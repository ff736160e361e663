#pragma once

#include "command_spec.h"

#include <mneme/core/json.h>
#include <mneme/memory/memory_options.h>

#include <QDateTime>
#include <QMap>
#include <QString>
#include <QStringList>
#include <optional>

namespace mneme::cli {

// The parsed command line of `mneme`. Global options may stand before or after the command name;
// command options after it. "--name value" and "--name=value" are both accepted, "--" ends the
// options. Every problem throws mneme::Error(InvalidArgument) with a message that says how to fix
// it (exit status 2).
class CliArguments
{
public:
    // Parses the arguments after the program name. Throws for an unknown command or option, a
    // missing value, a repeated single option or a wrong number of positional arguments. With
    // --help / -h anywhere (or the `help` command) nothing else is checked: helpRequested() is set.
    static CliArguments parse(const QStringList &arguments);

    // The command (its spec), or null when only global options were given.
    const CommandSpec *command() const { return m_command; }
    QString commandName() const { return m_command ? m_command->name : QString(); }
    const QStringList &positionals() const { return m_positionals; }
    QString positional(int index) const { return m_positionals.value(index); }

    bool helpRequested() const { return m_help; }
    // --version anywhere (after --help, which wins): nothing else is checked.
    bool versionRequested() const { return m_options.contains(QStringLiteral("version")); }
    // The command whose usage --help / `help` asks for; empty for the general usage.
    QString helpTopic() const { return m_helpTopic; }

    // Global options.
    std::optional<QString> db() const { return value(QStringLiteral("db")); }
    std::optional<QString> configFile() const { return value(QStringLiteral("config")); }
    bool json() const { return has(QStringLiteral("json")); }
    bool quiet() const { return has(QStringLiteral("quiet")); }
    bool verbose() const { return has(QStringLiteral("verbose")); }

    // Whether the option (or flag) was given at all.
    bool has(const QString &name) const { return m_options.contains(name); }
    // The value of a single option; unset when absent.
    std::optional<QString> value(const QString &name) const;
    // Every value of a repeatable option, in order.
    QStringList values(const QString &name) const { return m_options.value(name); }

    // Typed values of options; each throws Error(InvalidArgument) naming the option.
    // An integer >= minimum.
    std::optional<int> integer(const QString &name, int minimum) const;
    // A finite number in 0..1.
    std::optional<double> unitInterval(const QString &name) const;
    // An ISO 8601 date or date-time.
    std::optional<QDateTime> time(const QString &name) const;
    // A normalised scope path.
    std::optional<QString> scope(const QString &name) const;
    QStringList scopes(const QString &name) const;
    // A JSON object.
    std::optional<Json> jsonObject(const QString &name) const;
    // Non-blank values, trimmed.
    QStringList nonBlankValues(const QString &name) const;
    // Who a read (or an update, undo, forget) acts as: --source S (S's own private records too),
    // --curator (every record; also --include-private of recall), else anonymous (shared records).
    ReadContext reader() const;

    // Helpers shared with the input parsers.
    static QString normalizedScope(const QString &text, const QString &what);
    static double parseUnitInterval(const QString &text, const QString &what);

private:
    void addOption(const CommandSpec::Option &option, const QString &value);

    const CommandSpec *m_command = nullptr;
    QStringList m_positionals;
    QMap<QString, QStringList> m_options;
    bool m_help = false;
    QString m_helpTopic;
};

} // namespace mneme::cli
