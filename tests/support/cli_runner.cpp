#include "cli_runner.h"

#include <QProcess>

namespace mneme::test {

QByteArray CliRun::describe() const
{
    QStringList shown;
    for (const QString &a : args)
        shown << (a.size() > 80 ? a.left(80) + QStringLiteral("...") : a);
    return "mneme " + shown.join(QLatin1Char(' ')).toUtf8() + "\n  exit " + QByteArray::number(exitCode)
         + "\n  stdout: " + out.left(3000) + "\n  stderr: " + err.left(2000);
}

CliRun runCli(const QString &program, const QStringList &args, const QString &workDir, const QByteArray &input,
              const QProcessEnvironment &env)
{
    CliRun r;
    r.args = args;
    QProcess p;
    p.setProgram(program);
    p.setArguments(args);
    QProcessEnvironment environment = env.isEmpty() ? QProcessEnvironment::systemEnvironment() : env;
    if (!environment.contains(QStringLiteral("MNEME_STORAGE_DIR")))
        environment.insert(QStringLiteral("MNEME_STORAGE_DIR"), workDir + QStringLiteral("/default"));
    p.setProcessEnvironment(environment);
    p.setWorkingDirectory(workDir);
    p.start();
    if (!p.waitForStarted(10000))
        return r;
    if (!input.isEmpty())
        p.write(input);
    p.closeWriteChannel();
    if (!p.waitForFinished(60000)) {
        p.kill();
        p.waitForFinished();
        return r;
    }
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    return r;
}

} // namespace mneme::test
