#include "cli_app.h"
#include "console.h"

#include <mneme/core/version.h>

#include <QCoreApplication>

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("mneme"));
    QCoreApplication::setApplicationVersion(QStringLiteral(MNEME_VERSION_STR));

    mneme::cli::Console console;
    mneme::cli::CliApp cli(console);
    return cli.run(QCoreApplication::arguments().mid(1));
}
