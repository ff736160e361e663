#pragma once

#include <QByteArray>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <nlohmann/json.hpp>

namespace mneme::test {

// What one run of the `mneme` command line printed and returned.
struct CliRun
{
    QStringList args;
    int exitCode = -1; // -1: did not start or did not finish, -2: crashed
    QByteArray out;
    QByteArray err;

    // stdout parsed as exactly one JSON document (discarded when stdout holds anything else).
    nlohmann::json json() const { return nlohmann::json::parse(out.toStdString(), nullptr, false); }
    bool isJson() const { return !json().is_discarded(); }
    QByteArray describe() const;
};

// Runs `program` with `args` in `workDir`, feeding `input` on stdin. The environment is `env` (the
// system's when empty); MNEME_STORAGE_DIR points inside `workDir` unless `env` sets it, so a run
// never touches ./.mneme or a user's store.
CliRun runCli(const QString &program, const QStringList &args, const QString &workDir,
              const QByteArray &input = {}, const QProcessEnvironment &env = {});

} // namespace mneme::test
