// mneme-studio: browse, edit and recall from a Mneme store in a window (docs/studio.md).
#include "main_window.h"

#include <mneme/core/version.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QSettings>

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("mneme-studio"));
    QApplication::setOrganizationName(QStringLiteral("mneme"));
    QApplication::setApplicationVersion(QStringLiteral(MNEME_VERSION_STR));

    QCommandLineParser parser;
    parser.setApplicationDescription(QObject::tr("Mneme Studio: browse, edit and recall from a Mneme store."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("store"), QObject::tr("The store (SQLite file) to open."), QStringLiteral("[STORE]"));
    const QCommandLineOption create(QStringLiteral("new"), QObject::tr("Create STORE when it does not exist."));
    parser.addOption(create);
    parser.process(app);

    QSettings settings;
    mneme::studio::MainWindow window(settings);
    window.show();
    if (!parser.positionalArguments().isEmpty())
        window.openStore(parser.positionalArguments().constFirst(), parser.isSet(create));
    return app.exec();
}
