#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>

#include <QtTest>

using namespace mneme;

namespace {

class CountingEmbedder : public Embedder
{
public:
    QString id() const override { return QStringLiteral("test/counting"); }
    int dimension() const override { return 2; }
    std::vector<Embedding> embed(const QStringList &texts) override
    {
        return std::vector<Embedding>(size_t(texts.size()), Embedding{1.0f, 0.0f});
    }
};

class CountingFactory : public EmbedderFactory
{
public:
    int built = 0;
    std::unique_ptr<Embedder> createEmbedder(const QString &, const Json &) override
    {
        ++built;
        return std::make_unique<CountingEmbedder>();
    }
};

QString errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return Error::kindName(e.kind()) + QLatin1Char(':') + e.message();
    }
    return {};
}

} // namespace

class TestPluginRegistry : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void discoversByMetadata()
    {
        PluginRegistry registry({QStringLiteral(TEST_PLUGIN_DIR)});
        const auto plugins = registry.plugins();
        QCOMPARE(plugins.size(), 2);
        bool sawGood = false, sawStale = false;
        for (const auto &p : plugins) {
            if (p.keys.contains(QStringLiteral("constant"))) {
                sawGood = true;
                QCOMPARE(p.kind, PluginRegistry::Kind::Embedder);
                QVERIFY(p.problem.isEmpty());
                QCOMPARE(p.name, QStringLiteral("Constant test embedder"));
            }
            if (p.keys.contains(QStringLiteral("stale"))) {
                sawStale = true;
                QVERIFY2(p.problem.contains(QStringLiteral("org.mneme.EmbedderFactory/0.9")), qPrintable(p.problem));
                QVERIFY(p.problem.contains(QStringLiteral("rebuild")));
            }
        }
        QVERIFY(sawGood);
        QVERIFY(sawStale);
        QCOMPARE(registry.keys(PluginRegistry::Kind::Embedder), (QStringList{"constant", "constant-alias"}));
        QVERIFY(registry.keys(PluginRegistry::Kind::Storage).isEmpty());
    }

    void createsThroughThePlugin()
    {
        PluginRegistry registry({QStringLiteral(TEST_PLUGIN_DIR)});
        auto e = registry.createEmbedder(QStringLiteral("constant"), Json{{"dimension", 3}});
        QCOMPARE(e->id(), QStringLiteral("test/constant"));
        QCOMPARE(e->dimension(), 3);
        QCOMPARE(e->embed({QStringLiteral("a"), QStringLiteral("b")}).size(), size_t(2));
        auto alias = registry.createEmbedder(QStringLiteral("constant-alias"));
        QCOMPARE(alias->dimension(), 4);
    }

    void factoryErrorsPassThrough()
    {
        PluginRegistry registry({QStringLiteral(TEST_PLUGIN_DIR)});
        const QString err = errorOf([&] { registry.createEmbedder(QStringLiteral("constant"), Json{{"dimension", 0}}); });
        QVERIFY2(err.startsWith(QStringLiteral("invalid_argument:")), qPrintable(err));
    }

    void unknownKeyListsKnownKeys()
    {
        PluginRegistry registry({QStringLiteral(TEST_PLUGIN_DIR)});
        const QString err = errorOf([&] { registry.createEmbedder(QStringLiteral("nope")); });
        QVERIFY2(err.startsWith(QStringLiteral("plugin:")), qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("unknown embedder \"nope\"")), qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("constant, constant-alias")), qPrintable(err));
    }

    void unknownKeyWithNoPluginsSaysWhereItLooked()
    {
        PluginRegistry registry({QStringLiteral("/nonexistent/mneme/plugins")});
        const QString err = errorOf([&] { registry.createStorage(QStringLiteral("sqlite")); });
        QVERIFY2(err.contains(QStringLiteral("(none)")), qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("MNEME_PLUGIN_PATH")), qPrintable(err));
    }

    void stalePluginIsReportedNotLoaded()
    {
        PluginRegistry registry({QStringLiteral(TEST_PLUGIN_DIR)});
        const QString err = errorOf([&] { registry.createEmbedder(QStringLiteral("stale")); });
        QVERIFY2(err.startsWith(QStringLiteral("plugin:")), qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("built for interface")), qPrintable(err));
    }

    void registeredFactoryWinsAndCanBeRemoved()
    {
        PluginRegistry registry({QStringLiteral(TEST_PLUGIN_DIR)});
        auto factory = std::make_shared<CountingFactory>();
        registry.registerEmbedderFactory(QStringLiteral("constant"), factory);
        QCOMPARE(registry.createEmbedder(QStringLiteral("constant"))->id(), QStringLiteral("test/counting"));
        QCOMPARE(factory->built, 1);
        registry.registerEmbedderFactory(QStringLiteral("custom"), factory);
        QVERIFY(registry.hasKey(PluginRegistry::Kind::Embedder, QStringLiteral("custom")));
        registry.unregister(PluginRegistry::Kind::Embedder, QStringLiteral("constant"));
        QCOMPARE(registry.createEmbedder(QStringLiteral("constant"))->id(), QStringLiteral("test/constant"));
    }

    void defaultPathsHonourEnvironment()
    {
        qputenv("MNEME_PLUGIN_PATH", QByteArray(TEST_PLUGIN_DIR) + ":/another/place");
        const QStringList paths = PluginRegistry::defaultSearchPaths();
        QVERIFY(paths.size() >= 2);
        QCOMPARE(paths.at(1), QStringLiteral("/another/place"));
        QVERIFY(paths.contains(QFileInfo(QStringLiteral(TEST_PLUGIN_DIR)).canonicalFilePath()));
        qunsetenv("MNEME_PLUGIN_PATH");
    }

    // Without MNEME_PLUGIN_PATH: the folder beside the libmneme_core this test runs with (the build
    // tree's here, as an install's would be beside the installed library), then only mneme/ folders
    // under Qt's library paths. No path is compiled in.
    void defaultPathsStartBesideTheLibrary()
    {
        qunsetenv("MNEME_PLUGIN_PATH");
        const QStringList paths = PluginRegistry::defaultSearchPaths();
        QVERIFY(!paths.isEmpty());
        QCOMPARE(paths.first(), QFileInfo(QStringLiteral(MNEME_PLUGIN_BUILD_DIR)).canonicalFilePath());
        QStringList underQt;
        for (const QString &qtPath : QCoreApplication::libraryPaths())
            underQt << QFileInfo(qtPath + QStringLiteral("/mneme")).canonicalFilePath();
        for (const QString &path : paths.mid(1))
            QVERIFY2(underQt.contains(path), qPrintable(path));
    }

    void unknownKeyNamesTheFoldersSearched()
    {
        PluginRegistry registry({QStringLiteral("/nonexistent/one"), QStringLiteral("/nonexistent/two")});
        try {
            registry.createEmbedder(QStringLiteral("nothing"));
            QFAIL("an unknown key was accepted");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::Plugin);
            QVERIFY2(e.message().contains(QLatin1String("/nonexistent/one, /nonexistent/two")), qPrintable(e.message()));
            QVERIFY2(e.message().contains(QLatin1String("MNEME_PLUGIN_PATH")), qPrintable(e.message()));
        }
    }

    void kindNamesAndIids()
    {
        QCOMPARE(PluginRegistry::kindName(PluginRegistry::Kind::Llm), QStringLiteral("llm"));
        QCOMPARE(PluginRegistry::interfaceId(PluginRegistry::Kind::Storage), QStringLiteral("org.mneme.StorageFactory/2.1"));
    }
};

QTEST_GUILESS_MAIN(TestPluginRegistry)
#include "test_plugin_registry.moc"
