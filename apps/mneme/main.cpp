#include "cli_app.h"
#include "console.h"

#include <mneme/core/version.h>

#include <QCoreApplication>
#include <QStringDecoder>

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("mneme"));
    QCoreApplication::setApplicationVersion(QStringLiteral(MNEME_VERSION_STR));

    mneme::cli::Console console;
    // The arguments are read as UTF-8 here, not through QCoreApplication::arguments(), which would
    // turn invalid bytes into U+FFFD silently: they are refused, as in files and on standard input.
    QStringList arguments;
    for (int i = 1; i < argc; ++i) {
        QStringDecoder utf8(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
        QString text = utf8.decode(QByteArrayView(argv[i]));
        if (utf8.hasError()) {
            console.error(QStringLiteral("argument %1 is not valid UTF-8; give every argument as UTF-8 text (nothing was done)").arg(i));
            return 2;
        }
        arguments << text;
    }
    mneme::cli::CliApp cli(console);
    return cli.run(arguments);
}
