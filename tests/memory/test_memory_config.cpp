#include <mneme/core/error.h>
#include <mneme/memory/memory_config.h>

#include <QTemporaryDir>
#include <QtTest>

using namespace mneme;

class TestMemoryConfig : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void readsEveryKey()
    {
        const Json j = Json::parse(R"({
            "semantic_weight": 0.4, "recency_weight": 0.1, "importance_weight": 0.3, "keyword_weight": 0.2,
            "keyword_context_weight": 0.6, "conversation_context_window": 3, "conversation_context_weight": 0.25,
            "recency_half_life_days": 7, "decay_function": "linear", "access_boost": 0.05,
            "consolidation_threshold": 0.9, "consolidation_limit": 3, "default_importance": 0.6,
            "batch_dedup_threshold": 0.95, "max_content_chars": 1000, "standing_exponent": 3,
            "conversation_recent_messages": 4, "conversation_similar_memories": 3,
            "confidence_threshold_high": 0.9, "confidence_threshold_low": 0.4, "complex_query_threshold": 0.6,
            "exploration_budget": 2, "query_analysis_threshold": 100, "read_only": true, "root_scope": "/crew/x/",
            "llm": "gpt-4o-mini", "embedder": {"provider": "builtin", "config": {"dimension": 128}},
            "storage": "/tmp/x.db"})");
        const MemoryConfig c = MemoryConfig::fromJson(j);
        QCOMPARE(c.semanticWeight, 0.4);
        QCOMPARE(c.recencyWeight, 0.1);
        QCOMPARE(c.importanceWeight, 0.3);
        QCOMPARE(c.keywordWeight, 0.2);
        QCOMPARE(c.keywordContextWeight, 0.6);
        QCOMPARE(c.conversationContextWindow, 3);
        QCOMPARE(c.conversationContextWeight, 0.25);
        QCOMPARE(c.recencyHalfLifeDays, 7.0);
        QCOMPARE(c.decayFunction, QStringLiteral("linear"));
        QCOMPARE(c.accessBoost, 0.05);
        QCOMPARE(c.consolidationThreshold, 0.9);
        QCOMPARE(c.consolidationLimit, 3);
        QCOMPARE(c.defaultImportance, 0.6);
        QCOMPARE(c.batchDedupThreshold, 0.95);
        QCOMPARE(c.maxContentChars, 1000);
        QCOMPARE(c.standingExponent, 3.0);
        QCOMPARE(c.conversationRecentMessages, 4);
        QCOMPARE(c.conversationSimilarMemories, 3);
        QCOMPARE(c.confidenceThresholdHigh, 0.9);
        QCOMPARE(c.confidenceThresholdLow, 0.4);
        QCOMPARE(c.complexQueryThreshold, 0.6);
        QCOMPARE(c.explorationBudget, 2);
        QCOMPARE(c.queryAnalysisThreshold, 100);
        QVERIFY(c.readOnly);
        QCOMPARE(c.rootScope, QStringLiteral("/crew/x/"));
        QCOMPARE(c.llm, Json("gpt-4o-mini"));
        QCOMPARE(c.embedder["config"]["dimension"], 128);
        QCOMPARE(c.storage, Json("/tmp/x.db"));
        // And back.
        const MemoryConfig again = MemoryConfig::fromJson(c.toJson());
        QCOMPARE(again.toJson(), c.toJson());
    }

    void conversationIngestionDefaults()
    {
        const MemoryConfig c = MemoryConfig::fromJson(Json::object());
        QCOMPARE(c.conversationRecentMessages, 10);
        QCOMPARE(c.conversationSimilarMemories, 10);
        QCOMPARE(c.conversationContextWindow, 2);
        QCOMPARE(c.conversationContextWeight, 0.5);
        QCOMPARE(c.keywordContextWeight, 0.3);
        QCOMPARE(c.toJson()["conversation_recent_messages"], 10);
        // m = 0 is allowed: no earlier messages in the prompt.
        QCOMPARE(MemoryConfig::fromJson(Json{{"conversation_recent_messages", 0}}).conversationRecentMessages, 0);
    }

    void profiles_data()
    {
        QTest::addColumn<QString>("profile");
        QTest::addColumn<double>("semantic");
        QTest::addColumn<double>("recency");
        QTest::addColumn<double>("importance");
        QTest::newRow("conversation") << "conversation" << 0.4 << 0.4 << 0.2;
        QTest::newRow("research") << "research" << 0.7 << 0.1 << 0.2;
        QTest::newRow("support") << "support" << 0.3 << 0.2 << 0.5;
    }
    void profiles()
    {
        QFETCH(QString, profile);
        QFETCH(double, semantic);
        QFETCH(double, recency);
        QFETCH(double, importance);
        const MemoryConfig c = MemoryConfig::fromJson(Json{{"profile", profile}});
        QCOMPARE(c.semanticWeight, semantic);
        QCOMPARE(c.recencyWeight, recency);
        QCOMPARE(c.importanceWeight, importance);
        // Explicit keys win over the profile.
        const MemoryConfig d = MemoryConfig::fromJson(Json{{"profile", profile}, {"recency_weight", 0.05}});
        QCOMPARE(d.recencyWeight, 0.05);
        QCOMPARE(d.semanticWeight, semantic);
    }

    void rejects_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("not an object") << "[1]"
                                       << "JSON object";
        QTest::newRow("unknown key") << R"({"semantic_wieght": 0.5})"
                                     << "semantic_wieght";
        QTest::newRow("unknown key lists known") << R"({"nope": 1})"
                                                 << "recency_half_life_days";
        QTest::newRow("string weight") << R"({"semantic_weight": "high"})"
                                       << "semantic_weight";
        QTest::newRow("weight above 1") << R"({"recency_weight": 1.5})"
                                        << "between 0 and 1";
        QTest::newRow("negative weight") << R"({"importance_weight": -0.1})"
                                         << "importance_weight";
        QTest::newRow("zero half-life") << R"({"recency_half_life_days": 0})"
                                        << "positive";
        QTest::newRow("decay function") << R"({"decay_function": "cubic"})"
                                        << "exponential";
        QTest::newRow("fractional limit") << R"({"consolidation_limit": 2.5})"
                                          << "whole number";
        QTest::newRow("zero limit") << R"({"consolidation_limit": 0})"
                                    << "at least 1";
        QTest::newRow("negative recent messages") << R"({"conversation_recent_messages": -1})"
                                                  << "conversation_recent_messages";
        QTest::newRow("zero similar memories") << R"({"conversation_similar_memories": 0})"
                                               << "at least 1";
        QTest::newRow("fractional similar memories") << R"({"conversation_similar_memories": 2.5})"
                                                     << "whole number";
        QTest::newRow("keyword context weight above 1") << R"({"keyword_context_weight": 1.5})"
                                                        << "keyword_context_weight";
        QTest::newRow("negative standing exponent") << R"({"standing_exponent": -1})"
                                                    << "standing_exponent";
        QTest::newRow("standing exponent above 64") << R"({"standing_exponent": 65})"
                                                    << "standing_exponent";
        QTest::newRow("negative context window") << R"({"conversation_context_window": -1})"
                                                 << "conversation_context_window";
        QTest::newRow("negative budget") << R"({"exploration_budget": -1})"
                                         << "exploration_budget";
        QTest::newRow("bad root") << R"({"root_scope": "/a/../b"})"
                                  << "root_scope";
        QTest::newRow("read_only string") << R"({"read_only": "yes"})"
                                          << "true or false";
        QTest::newRow("bad profile") << R"({"profile": "gaming"})"
                                     << "conversation";
        QTest::newRow("embedder number") << R"({"embedder": 5})"
                                         << "embedder";
        QTest::newRow("embedder extra field") << R"({"embedder": {"provider": "x", "model": "y"}})"
                                              << "unknown field";
        QTest::newRow("llm config not object") << R"({"llm": {"provider": "openai", "config": "x"}})"
                                               << "config";
    }
    void rejects()
    {
        QFETCH(QString, json);
        QFETCH(QString, mentions);
        try {
            MemoryConfig::fromJson(Json::parse(json.toStdString()));
            QFAIL("accepted an invalid configuration");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
            QVERIFY2(e.message().contains(mentions), qPrintable(e.message()));
        }
    }

    void secretsAreMasked()
    {
        const MemoryConfig c = MemoryConfig::fromJson(Json::parse(
            R"({"llm": {"provider": "openai", "config": {"model": "gpt-4o", "api_key": "sk-secret-123"}},
                "embedder": {"provider": "openai", "config": {"apiKey": "sk-other-456", "token": "t"}}})"));
        const std::string out = c.toJson().dump();
        QVERIFY(out.find("sk-secret-123") == std::string::npos);
        QVERIFY(out.find("sk-other-456") == std::string::npos);
        QVERIFY(out.find("gpt-4o") != std::string::npos);
        // The configuration itself keeps the key for the provider to use.
        QCOMPARE(c.llm["config"]["api_key"], "sk-secret-123");
    }

    void defaultStoragePath()
    {
        qputenv("MNEME_STORAGE_DIR", "/tmp/mneme-elsewhere");
        QCOMPARE(MemoryConfig::defaultStoragePath(), QStringLiteral("/tmp/mneme-elsewhere/memory.db"));
        qunsetenv("MNEME_STORAGE_DIR");
        // The XDG data folder, $XDG_DATA_HOME when set; never the working folder.
        const QByteArray xdg = qgetenv("XDG_DATA_HOME");
        qputenv("XDG_DATA_HOME", "/tmp/mneme-xdg-data");
        QCOMPARE(MemoryConfig::defaultStoragePath(), QStringLiteral("/tmp/mneme-xdg-data/mneme/memory.db"));
        qunsetenv("XDG_DATA_HOME");
        QCOMPARE(MemoryConfig::defaultStoragePath(), QDir::homePath() + QStringLiteral("/.local/share/mneme/memory.db"));
        if (!xdg.isEmpty())
            qputenv("XDG_DATA_HOME", xdg);
    }

    // ./.mneme/memory.db, the default store of earlier versions, is named when it exists, so a caller
    // can say where it went; never when it is the default store itself.
    void legacyStoragePath()
    {
        QTemporaryDir dir;
        const QString before = QDir::currentPath();
        QDir::setCurrent(dir.path());
        qputenv("MNEME_STORAGE_DIR", QFile::encodeName(dir.filePath(QStringLiteral("elsewhere"))));
        QVERIFY(MemoryConfig::legacyStoragePath().isEmpty());
        QDir().mkpath(QStringLiteral(".mneme"));
        QFile f(QStringLiteral(".mneme/memory.db"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.close();
        QCOMPARE(QFileInfo(MemoryConfig::legacyStoragePath()).canonicalFilePath(), QFileInfo(f).canonicalFilePath());
        qputenv("MNEME_STORAGE_DIR", QFile::encodeName(dir.filePath(QStringLiteral(".mneme"))));
        QVERIFY(MemoryConfig::legacyStoragePath().isEmpty());
        qunsetenv("MNEME_STORAGE_DIR");
        QDir::setCurrent(before);
    }
};

QTEST_GUILESS_MAIN(TestMemoryConfig)
#include "test_memory_config.moc"
