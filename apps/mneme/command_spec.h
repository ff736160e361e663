#pragma once

#include <QList>
#include <QString>

namespace mneme::cli {

// What one command of the `mneme` CLI accepts: its positional arguments and its options. The table
// of every command (all()) is the single source for argument parsing and for the usage texts.
class CommandSpec
{
public:
    struct Option
    {
        QString name;      // without the leading "--"
        QString valueName; // empty: a flag that takes no value
        QString help;
        bool repeatable = false;

        bool takesValue() const { return !valueName.isEmpty(); }
    };

    QString name;
    QString arguments; // positional synopsis ("QUERY", "[FILE|-]")
    QString summary;
    int minPositionals = 0;
    int maxPositionals = 0;
    QList<Option> options;

    // The option called `name` (without "--"), or null.
    const Option *option(const QString &name) const;
    // "mneme recall QUERY [--scope S]... [--limit N]"
    QString synopsis() const;
    // Synopsis, summary and one line per option.
    QString usage() const;

    // Every command, in the order of the general usage.
    static const QList<CommandSpec> &all();
    static const CommandSpec *find(const QString &name);
    // Options every command accepts (--db, --config, --json, --quiet, --verbose, --help).
    static const QList<Option> &globalOptions();
    static const Option *globalOption(const QString &name);
    // The usage of the whole program: commands and global options.
    static QString generalUsage();
};

} // namespace mneme::cli
