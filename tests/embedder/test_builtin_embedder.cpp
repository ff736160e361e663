// Tests of the builtin embedders (builtin/hash-v2, the default, and builtin/hash-v1), loaded through
// the real plugin.

#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>

#include <QtConcurrent>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

using namespace mneme;

namespace {

QString pluginDir()
{
    const QStringList env = qEnvironmentVariable("MNEME_PLUGIN_PATH").split(QLatin1Char(':'), Qt::SkipEmptyParts);
    return env.isEmpty() ? QStringLiteral(MNEME_TEST_PLUGIN_DIR) : env.first();
}

std::unique_ptr<Embedder> makeEmbedder(const Json &config = Json::object())
{
    return PluginRegistry::instance().createEmbedder(QStringLiteral("builtin"), config);
}

Embedding embedOne(Embedder &e, const QString &text)
{
    std::vector<Embedding> out = e.embed({text});
    if (out.size() != 1)
        qFatal("embed() returned %zu vectors for one text", out.size());
    return out.front();
}

double cosine(const Embedding &a, const Embedding &b)
{
    if (a.empty() || b.empty() || a.size() != b.size())
        return std::nan("");
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i)
        s += double(a[i]) * double(b[i]);
    return s;
}

double norm(const Embedding &v)
{
    double s = 0;
    for (float x : v)
        s += double(x) * double(x);
    return std::sqrt(s);
}

bool allFinite(const Embedding &v)
{
    return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

// Kind and message of the Error f throws, or an empty string.
QString errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return Error::kindName(e.kind()) + QLatin1Char(':') + e.message();
    }
    return {};
}

// One data row per model ("hash-v2 <name>", "hash-v1 <name>"), the model in the first column.
template<typename... T>
void addRowsForModels(const char *name, T... values)
{
    for (const char *model : {"hash-v2", "hash-v1"})
        (QTest::addRow("%s %s", model, name) << QString::fromLatin1(model) << ... << values);
}

QString fromUtf16(std::initializer_list<char16_t> units)
{
    return QString(reinterpret_cast<const QChar *>(units.begin()), qsizetype(units.size()));
}

// The positions of the largest |components|, largest first, with their signs ("+12" / "-7").
QStringList topComponents(const Embedding &v, int n)
{
    std::vector<int> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return std::fabs(v[size_t(a)]) > std::fabs(v[size_t(b)]); });
    QStringList out;
    for (int i = 0; i < n && i < int(idx.size()); ++i)
        out << (v[size_t(idx[size_t(i)])] < 0 ? QStringLiteral("-") : QStringLiteral("+")) + QString::number(idx[size_t(i)]);
    return out;
}

} // namespace

class TestBuiltinEmbedder : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        m_embedder = makeEmbedder();
        QVERIFY(m_embedder);
        m_v1 = makeEmbedder(Json{{"model", "hash-v1"}});
        QVERIFY(m_v1);
    }

    // The instance for a row's model: the default one for hash-v2.
    Embedder &embedder(const QString &model) { return model == QLatin1String("hash-v1") ? *m_v1 : *m_embedder; }

    // ---- plugin and configuration -------------------------------------------------------

    void discoveredByMetadata()
    {
        PluginRegistry registry(QStringList{pluginDir()});
        bool found = false;
        for (const PluginRegistry::PluginInfo &p : registry.plugins()) {
            if (!p.keys.contains(QStringLiteral("builtin")))
                continue;
            found = true;
            QCOMPARE(p.kind, PluginRegistry::Kind::Embedder);
            QCOMPARE(p.iid, PluginRegistry::interfaceId(PluginRegistry::Kind::Embedder));
            QVERIFY2(p.problem.isEmpty(), qPrintable(p.problem));
            QVERIFY(!p.name.isEmpty());
            QVERIFY(!p.description.isEmpty());
            QVERIFY(p.file.contains(QStringLiteral("mneme_embedder_builtin")));
        }
        QVERIFY2(found, qPrintable(QStringLiteral("no builtin embedder plugin in ") + pluginDir()));
        QVERIFY(registry.hasKey(PluginRegistry::Kind::Embedder, QStringLiteral("builtin")));

        auto e = registry.createEmbedder(QStringLiteral("builtin"));
        QCOMPARE(e->id(), QStringLiteral("builtin/hash-v2"));

        const QString err = errorOf([&] { registry.createEmbedder(QStringLiteral("no-such-embedder")); });
        QVERIFY2(err.startsWith(QStringLiteral("plugin:")), qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("no-such-embedder")), qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("builtin")), qPrintable(err));
    }

    void idAndDefaultDimension()
    {
        QCOMPARE(m_embedder->id(), QStringLiteral("builtin/hash-v2"));
        QCOMPARE(m_v1->id(), QStringLiteral("builtin/hash-v1"));
        QCOMPARE(m_v1->dimension(), 384);
        QCOMPARE(m_embedder->dimension(), 384);
        QCOMPARE(embedOne(*m_embedder, QStringLiteral("hello world")).size(), size_t(384));
    }

    void acceptedConfig_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<int>("dimension");
        QTest::addColumn<QString>("id");
        const QString v1 = QStringLiteral("builtin/hash-v1"), v2 = QStringLiteral("builtin/hash-v2");
        QTest::newRow("empty") << "{}" << 384 << v2;
        QTest::newRow("null config") << "null" << 384 << v2;
        QTest::newRow("minimum") << R"({"dimension": 16})" << 16 << v2;
        QTest::newRow("maximum") << R"({"dimension": 4096})" << 4096 << v2;
        QTest::newRow("odd size") << R"({"dimension": 100})" << 100 << v2;
        QTest::newRow("integral float") << R"({"dimension": 256.0})" << 256 << v2;
        QTest::newRow("model v1") << R"({"model": "hash-v1"})" << 384 << v1;
        QTest::newRow("model v2") << R"({"model": "hash-v2"})" << 384 << v2;
        QTest::newRow("model_name v1") << R"({"model_name": "hash-v1", "dimension": 64})" << 64 << v1;
        QTest::newRow("model_name v2") << R"({"model_name": "hash-v2", "dimension": 64})" << 64 << v2;
        QTest::newRow("both keys agree") << R"({"model": "hash-v1", "model_name": "hash-v1"})" << 384 << v1;
        QTest::newRow("null model") << R"({"model": null})" << 384 << v2;
        QTest::newRow("null model_name beside model") << R"({"model": "hash-v1", "model_name": null})" << 384 << v1;
    }

    void acceptedConfig()
    {
        QFETCH(QString, config);
        QFETCH(int, dimension);
        QFETCH(QString, id);
        auto e = makeEmbedder(Json::parse(config.toStdString()));
        QCOMPARE(e->dimension(), dimension);
        QCOMPARE(e->id(), id);
        const Embedding v = embedOne(*e, QStringLiteral("The user prefers dark mode"));
        QCOMPARE(v.size(), size_t(dimension));
        QVERIFY(std::fabs(norm(v) - 1.0) < 1e-5);
    }

    void rejectedConfig_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QStringList>("mentions");
        const QStringList range{QStringLiteral("\"dimension\""), QStringLiteral("16"), QStringLiteral("4096")};
        QTest::newRow("dimension 0") << R"({"dimension": 0})" << range;
        QTest::newRow("dimension 8") << R"({"dimension": 8})" << range;
        QTest::newRow("dimension 5000") << R"({"dimension": 5000})" << range;
        QTest::newRow("dimension -384") << R"({"dimension": -384})" << range;
        QTest::newRow("dimension huge") << R"({"dimension": 18446744073709551615})" << range;
        QTest::newRow("dimension abc") << R"({"dimension": "abc"})" << (QStringList(range) << QStringLiteral("\"abc\""));
        QTest::newRow("dimension as string") << R"({"dimension": "384"})" << range;
        QTest::newRow("dimension fraction") << R"({"dimension": 100.5})" << range;
        QTest::newRow("dimension bool") << R"({"dimension": true})" << range;
        QTest::newRow("dimension null") << R"({"dimension": null})" << range;
        QTest::newRow("unknown key") << R"({"dimensions": 384})"
                                     << QStringList{QStringLiteral("\"dimensions\""), QStringLiteral("dimension"),
                                                    QStringLiteral("model_name"), QStringLiteral("hash-v2"),
                                                    QStringLiteral("hash-v1")};
        const QStringList both{QStringLiteral("\"hash-v2\""), QStringLiteral("\"hash-v1\"")};
        QTest::newRow("unknown model") << R"({"model": "text-embedding-3-small"})"
                                       << (QStringList(both) << QStringLiteral("text-embedding-3-small"));
        QTest::newRow("unknown model_name") << R"({"model_name": "hash-v3"})"
                                            << (QStringList(both) << QStringLiteral("\"model_name\"") << QStringLiteral("hash-v3"));
        QTest::newRow("model in other case") << R"({"model": "HASH-V2"})" << (QStringList(both) << QStringLiteral("HASH-V2"));
        QTest::newRow("model not a string") << R"({"model": 1})" << (QStringList(both) << QStringLiteral("\"model\""));
        QTest::newRow("model and model_name differ") << R"({"model": "hash-v1", "model_name": "hash-v2"})"
                                                     << QStringList{QStringLiteral("\"model\""), QStringLiteral("\"model_name\"")};
        QTest::newRow("config not an object") << R"([384])" << QStringList{QStringLiteral("object")};
    }

    void rejectedConfig()
    {
        QFETCH(QString, config);
        QFETCH(QStringList, mentions);
        const Json json = Json::parse(config.toStdString());
        const QString err = errorOf([&] { makeEmbedder(json); });
        QVERIFY2(err.startsWith(QStringLiteral("invalid_argument:")), qPrintable(err));
        for (const QString &m : std::as_const(mentions))
            QVERIFY2(err.contains(m), qPrintable(QStringLiteral("\"%1\" not in: %2").arg(m, err)));
    }

    // ---- the vectors --------------------------------------------------------------------

    void deterministic_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("text");
        addRowsForModels("sentence", "The user prefers PostgreSQL for long-term storage.");
        addRowsForModels("accents", "Crème brûlée à l'hôtel in Zürich");
        addRowsForModels("numbers", "Version 3.14.1 shipped on 2024-05-08 with 1,000 fixes");
        addRowsForModels("cjk", "ユーザーは東京のダークモードを好みます");
        addRowsForModels("emoji", "ship it 🚀🚀 👩‍💻");
        addRowsForModels("one word", "a");
    }

    void deterministic()
    {
        QFETCH(QString, model);
        QFETCH(QString, text);
        Embedder &e = embedder(model);
        auto other = makeEmbedder(Json{{"model", model.toStdString()}});
        const Embedding a = embedOne(e, text);
        QVERIFY(!a.empty());
        QCOMPARE(embedOne(e, text), a);
        QCOMPARE(embedOne(*other, text), a);
        QCOMPARE(other->embed({QStringLiteral("something else first"), text}).at(1), a);
    }

    // Pins the hashing: if any of these change, every stored vector would silently stop matching.
    // A deliberate change needs a new model name (hash-v3), not new numbers here.
    void golden_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("dimension");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("top");
        QTest::addColumn<double>("largest");
        QTest::addColumn<double>("checksum"); // sum of (i + 1) * v[i]
        // hash-v1: the figures pinned when it was the only model, unchanged.
        QTest::newRow("v1 fox 384") << "hash-v1" << 384 << "The quick brown fox jumps over the lazy dog"
                                    << QStringList{"-341", "+80", "+86", "-163", "+165"} << 0.327119380 << 22.515172257;
        QTest::newRow("v1 accents 64") << "hash-v1" << 64 << "Crème brûlée à l'hôtel, s'il vous plaît!"
                                       << QStringList{"+16", "+17", "+30", "+25", "-10"} << 0.348856479 << 29.765745699;
        // hash-v2, the default: the same pins for its own format.
        QTest::newRow("v2 fox 384") << "hash-v2" << 384 << "The quick brown fox jumps over the lazy dog"
                                    << QStringList{"-18", "+82", "-145", "+234", "-285"} << 0.324545354 << -323.344047382;
        QTest::newRow("v2 meetings 384") << "hash-v2" << 384 << "We met on May 7th: 3 meetings, 1,000 users, the children's books."
                                         << QStringList{"+360", "+56", "-197", "-237", "+293"} << 0.443342119 << 313.717370681;
        QTest::newRow("v2 short 64") << "hash-v2" << 64 << "Caroline: Thanks!"
                                     << QStringList{"-16", "+32", "+9", "+21", "-57"} << 0.484825253 << 15.521634318;
    }

    void golden()
    {
        QFETCH(QString, model);
        QFETCH(int, dimension);
        QFETCH(QString, text);
        QFETCH(QStringList, top);
        QFETCH(double, largest);
        QFETCH(double, checksum);
        auto e = makeEmbedder(Json{{"model", model.toStdString()}, {"dimension", dimension}});
        QCOMPARE(e->id(), QStringLiteral("builtin/") + model);
        const Embedding v = embedOne(*e, text);
        QCOMPARE(v.size(), size_t(dimension));
        QCOMPARE(topComponents(v, 5), top);
        double maxAbs = 0, total = 0;
        for (size_t i = 0; i < v.size(); ++i) {
            maxAbs = std::max(maxAbs, double(std::fabs(v[i])));
            total += double(i + 1) * double(v[i]);
        }
        QVERIFY2(std::fabs(maxAbs - largest) < 1e-5, qPrintable(QString::number(maxAbs, 'g', 9)));
        QVERIFY2(std::fabs(total - checksum) < 1e-3, qPrintable(QString::number(total, 'g', 9)));
    }

    void unitNorm_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("text");
        addRowsForModels("word", "memory");
        addRowsForModels("sentence", "Agents recall facts before each task and store new ones after it.");
        addRowsForModels("repeated word", "go go go go go go go go go go");
        addRowsForModels("digits", "42");
        addRowsForModels("hyphenated", "state-of-the-art e-mail");
        addRowsForModels("greek", "Καλημέρα κόσμε");
        addRowsForModels("cyrillic", "Привет, мир");
        addRowsForModels("arabic", "مَرْحَبًا بِالْعَالَمِ");
        addRowsForModels("hindi", "नमस्ते दुनिया");
        addRowsForModels("korean", "안녕하세요 세계");
    }

    void unitNorm()
    {
        QFETCH(QString, model);
        QFETCH(QString, text);
        const Embedding v = embedOne(embedder(model), text);
        QCOMPARE(v.size(), size_t(384));
        QVERIFY(allFinite(v));
        QVERIFY2(std::fabs(norm(v) - 1.0) < 1e-5, qPrintable(QString::number(norm(v), 'g', 9)));
    }

    void blankGivesEmpty_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("text");
        addRowsForModels("empty", QString());
        addRowsForModels("space", " ");
        addRowsForModels("whitespace", " \t\r\n  \v\f ");
        addRowsForModels("unicode spaces", QString::fromUtf8("\u00A0\u2003\u3000\u200B\u2028"));
        addRowsForModels("punctuation only", "... --- !!! ?? ' \" () []");
        addRowsForModels("format characters", QString::fromUtf8("\u200D\u00AD\uFEFF"));
    }

    void blankGivesEmpty()
    {
        QFETCH(QString, model);
        QFETCH(QString, text);
        Embedder &e = embedder(model);
        QVERIFY(embedOne(e, text).empty());
        // In a batch too, keeping the positions of the others.
        const auto batch = e.embed({QStringLiteral("before"), text, QStringLiteral("after")});
        QCOMPARE(batch.size(), size_t(3));
        QCOMPARE(batch[0].size(), size_t(384));
        QVERIFY(batch[1].empty());
        QCOMPARE(batch[2].size(), size_t(384));
    }

    void caseAndAccentInsensitive_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("a");
        QTest::addColumn<QString>("b");
        addRowsForModels("café", "Café", "cafe");
        addRowsForModels("upper", "CAFÉ CRÈME", "café crème");
        addRowsForModels("decomposed", QString::fromUtf8("cafe\u0301"), "café");
        addRowsForModels("brûlée", "Crème Brûlée", "creme brulee");
        addRowsForModels("naïve", "naïve Zoë", "naive zoe");
        addRowsForModels("ß", "Straße", "strasse");
        addRowsForModels("łódź", "Łódź", "lodz");
        addRowsForModels("ø", "Søren Kierkegaard", "soren kierkegaard");
        addRowsForModels("fullwidth", "ＦＵＬＬ　ＷＩＤＴＨ１２", "full width12");
        addRowsForModels("ligature", "ﬁle ﬂow", "file flow");
        addRowsForModels("greek tonos", "Καλημέρα", "καλημερα");
        addRowsForModels("curly apostrophe", "don’t", "don't");
        addRowsForModels("apostrophe dropped", "don't", "dont");
        addRowsForModels("soft hyphen", QString::fromUtf8("hy\u00ADphen"), "hyphen");
        addRowsForModels("arabic harakat", "مَرْحَبًا", "مرحبا");
    }

    void caseAndAccentInsensitive()
    {
        QFETCH(QString, model);
        QFETCH(QString, a);
        QFETCH(QString, b);
        Embedder &e = embedder(model);
        const Embedding va = embedOne(e, a);
        QVERIFY(!va.empty());
        QCOMPARE(va, embedOne(e, b));
    }

    // ---- what hash-v2 adds ----------------------------------------------------------------

    // Forms of one word, which hash-v1 only partly joins through shared character n-grams.
    void v2JoinsWordForms_data()
    {
        QTest::addColumn<QString>("a");
        QTest::addColumn<QString>("b");
        QTest::addColumn<double>("minimum"); // cosine under hash-v2
        QTest::newRow("plural") << "meetings"
                                << "meeting" << 0.8;
        QTest::newRow("-ing and -s") << "running"
                                     << "runs" << 0.6;
        QTest::newRow("in a sentence") << "The meetings ran late"
                                       << "the meeting runs late" << 0.8;
        QTest::newRow("irregular past") << "We met up with friends"
                                        << "we meet up with our friends" << 0.8;
        QTest::newRow("irregular plural") << "the children's books"
                                          << "a child's book" << 0.6;
        QTest::newRow("went / go") << "Melanie went camping"
                                   << "Melanie will go camping" << 0.8;
        QTest::newRow("number word") << "three kids"
                                     << "3 kids" << 0.8;
        QTest::newRow("thousands separator") << "1,000 users"
                                             << "1000 users" << 0.99;
        QTest::newRow("ordinal") << "on May 7th"
                                 << "7 May" << 0.8;
    }

    void v2JoinsWordForms()
    {
        QFETCH(QString, a);
        QFETCH(QString, b);
        QFETCH(double, minimum);
        const double v2 = cosine(embedOne(*m_embedder, a), embedOne(*m_embedder, b));
        const double v1 = cosine(embedOne(*m_v1, a), embedOne(*m_v1, b));
        QVERIFY2(v2 >= minimum, qPrintable(QStringLiteral("hash-v2 %1 (hash-v1 %2)").arg(v2).arg(v1)));
        QVERIFY2(v2 > v1 + 0.05, qPrintable(QStringLiteral("hash-v2 %1, hash-v1 %2").arg(v2).arg(v1)));
    }

    // Texts that share only function words are unrelated.
    void v2IgnoresStopWords_data()
    {
        QTest::addColumn<QString>("a");
        QTest::addColumn<QString>("b");
        QTest::newRow("cat and stock") << "the cat is on the mat"
                                       << "the stock is on the rise";
        QTest::newRow("have been") << "I have been to the store with him"
                                   << "they have been at the beach with her";
        QTest::newRow("question") << "What did you do with the car?"
                                  << "What did you do with the garden?";
        QTest::newRow("contractions") << "I'm sure it's the blue one, isn't it?"
                                      << "I'm sure it's a dog, isn't it?";
    }

    void v2IgnoresStopWords()
    {
        QFETCH(QString, a);
        QFETCH(QString, b);
        const double v2 = cosine(embedOne(*m_embedder, a), embedOne(*m_embedder, b));
        const double v1 = cosine(embedOne(*m_v1, a), embedOne(*m_v1, b));
        QVERIFY2(v2 < 0.2, qPrintable(QStringLiteral("hash-v2 %1 (hash-v1 %2)").arg(v2).arg(v1)));
        QVERIFY2(v2 < v1 - 0.15, qPrintable(QStringLiteral("hash-v2 %1, hash-v1 %2").arg(v2).arg(v1)));
    }

    // Stop words add nothing to a text that has content words: these embed identically under
    // hash-v2 (not under hash-v1).
    void v2StopWordsAddNothing_data()
    {
        QTest::addColumn<QString>("a");
        QTest::addColumn<QString>("b");
        QTest::newRow("article") << "the cat"
                                 << "a cat";
        QTest::newRow("pronouns and auxiliaries") << "I have been painting"
                                                  << "she was painting";
        QTest::newRow("around a pair") << "support for the group"
                                       << "support group";
    }

    void v2StopWordsAddNothing()
    {
        QFETCH(QString, a);
        QFETCH(QString, b);
        const Embedding va = embedOne(*m_embedder, a);
        QCOMPARE(va.size(), size_t(384));
        QCOMPARE(va, embedOne(*m_embedder, b));
        QVERIFY(embedOne(*m_v1, a) != embedOne(*m_v1, b));
    }

    // Chosen behaviour: a text of nothing but stop words is embedded from those words (as if none
    // were stop words), so it is never silently vectorless; blank and punctuation-only texts give
    // an empty vector under both models (blankGivesEmpty).
    void v2StopWordsOnly_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("same");  // embeds identically
        QTest::addColumn<QString>("other"); // other stop words: a different vector
        QTest::newRow("question") << "Is it?"
                                  << "is IT"
                                  << "was it?";
        QTest::newRow("one word") << "the"
                                  << "The!"
                                  << "a";
        QTest::newRow("contraction") << "I don't."
                                     << "i dont"
                                     << "I do.";
    }

    void v2StopWordsOnly()
    {
        QFETCH(QString, text);
        QFETCH(QString, same);
        QFETCH(QString, other);
        const Embedding v = embedOne(*m_embedder, text);
        QCOMPARE(v.size(), size_t(384));
        QVERIFY(allFinite(v));
        QVERIFY(std::fabs(norm(v) - 1.0) < 1e-5);
        QCOMPARE(embedOne(*m_embedder, same), v);
        const double c = cosine(v, embedOne(*m_embedder, other));
        QVERIFY2(c < 0.9, qPrintable(QString::number(c)));
    }

    // "when" and words naming a time share a feature: a question about when matches the text that
    // says when better than one that does not, all else equal.
    void v2WhenMatchesTimes()
    {
        const Embedding q = embedOne(*m_embedder, QStringLiteral("When is the budget review?"));
        const double dated = cosine(q, embedOne(*m_embedder, QStringLiteral("The budget review is on Friday.")));
        const double undated = cosine(q, embedOne(*m_embedder, QStringLiteral("The budget review is in room B.")));
        QVERIFY2(dated > undated + 0.05, qPrintable(QStringLiteral("dated %1, undated %2").arg(dated).arg(undated)));
    }

    // The stemmer is not thread-safe; each embed() call has its own. Many threads stemming at once
    // through one instance must give what one thread gives.
    void v2StemmingUnderConcurrency()
    {
        QStringList texts;
        const QStringList words{"running", "meetings", "happily", "organizational", "generously", "caresses",
                                "ponies", "relational", "conditional", "hopefulness", "went", "children"};
        for (int i = 0; i < 2000; ++i)
            texts << words[i % words.size()] + QLatin1Char(' ') + words[(i * 7 + 3) % words.size()] + QLatin1Char(' ')
                         + QString::number(i);
        std::vector<Embedding> expected;
        for (const QString &t : std::as_const(texts))
            expected.push_back(embedOne(*m_embedder, t));
        QThreadPool pool;
        pool.setMaxThreadCount(8);
        Embedder *shared = m_embedder.get();
        const QList<Embedding> got =
            QtConcurrent::blockingMapped<QList<Embedding>>(&pool, texts, [shared](const QString &t) { return embedOne(*shared, t); });
        for (qsizetype i = 0; i < texts.size(); ++i)
            QCOMPARE(got[i], expected[size_t(i)]);
    }

    void similarBeatsUnrelated_data()
    {
        QTest::addColumn<QString>("anchor");
        QTest::addColumn<QString>("similar");
        QTest::addColumn<QString>("unrelated");
        QTest::newRow("shared keywords") << "The user prefers PostgreSQL for storage"
                                         << "PostgreSQL is the storage the user wants"
                                         << "My cat sleeps on the sofa all afternoon";
        QTest::newRow("typo") << "We migrated the database to postgres last week"
                              << "We migrated the database to postgress last week"
                              << "We adopted a puppy from the shelter last week";
        QTest::newRow("typo single word") << "postgres"
                                          << "postgress"
                                          << "kubernetes";
        QTest::newRow("plural") << "The meeting is scheduled for Monday"
                                << "The meetings are scheduled for Mondays"
                                << "Bananas are rich in potassium";
        QTest::newRow("plural single word") << "invoice"
                                            << "invoices"
                                            << "holiday";
        QTest::newRow("hyphen vs joined") << "send an e-mail to the team"
                                          << "send an email to the team"
                                          << "water the plants on the balcony";
        QTest::newRow("accents and case") << "Rendez-vous au café à Genève"
                                          << "rendez vous au cafe a geneve"
                                          << "Der Zug nach Berlin ist verspätet";
        QTest::newRow("cjk") << "東京タワーに行きました"
                             << "東京タワーへ行った"
                             << "猫がソファで寝ている";
        QTest::newRow("numbers") << "Upgrade Qt to 6.4.2 on the build server"
                                 << "the build server runs Qt 6.4.2"
                                 << "Lunch is at noon in the cafeteria";
    }

    void similarBeatsUnrelated()
    {
        QFETCH(QString, anchor);
        QFETCH(QString, similar);
        QFETCH(QString, unrelated);
        const auto v = m_embedder->embed({anchor, similar, unrelated});
        const double near = cosine(v[0], v[1]);
        const double far = cosine(v[0], v[2]);
        QVERIFY2(near > far + 0.15, qPrintable(QStringLiteral("similar %1, unrelated %2").arg(near).arg(far)));
        QVERIFY2(near > 0.3, qPrintable(QStringLiteral("similar %1").arg(near)));
    }

    void wordOrderMattersALittle_data()
    {
        QTest::addColumn<QString>("a");
        QTest::addColumn<QString>("b");
        QTest::newRow("swap subject and object") << "alice sent bob the report"
                                                 << "bob sent alice the report";
        QTest::newRow("reversed") << "recall memories before each task"
                                  << "task each before memories recall";
        QTest::newRow("moved clause") << "yesterday the deploy failed on staging"
                                      << "the deploy failed on staging yesterday";
    }

    void wordOrderMattersALittle()
    {
        QFETCH(QString, a);
        QFETCH(QString, b);
        const double c = cosine(embedOne(*m_embedder, a), embedOne(*m_embedder, b));
        QVERIFY2(c < 0.99, qPrintable(QString::number(c)));
        QVERIFY2(c > 0.6, qPrintable(QString::number(c)));
    }

    void batchEqualsSingle()
    {
        const QStringList texts{QStringLiteral("first text"), QString(), QStringLiteral("Crème brûlée"),
                                QStringLiteral("東京"), QStringLiteral("🚀"), QStringLiteral("a much longer sentence about memory and recall")};
        const auto batch = m_embedder->embed(texts);
        QCOMPARE(batch.size(), size_t(texts.size()));
        for (qsizetype i = 0; i < texts.size(); ++i)
            QCOMPARE(batch[size_t(i)], embedOne(*m_embedder, texts[i]));
        QVERIFY(m_embedder->embed({}).empty());

        // A large batch is split over threads: still each text's own vector, in order.
        QStringList many;
        for (int i = 0; i < 1000; ++i)
            many << QStringLiteral("note %1 about %2").arg(i).arg(texts[i % texts.size()]);
        const auto big = m_embedder->embed(many);
        QCOMPARE(big.size(), size_t(many.size()));
        for (qsizetype i = 0; i < many.size(); i += 37)
            QCOMPARE(big[size_t(i)], embedOne(*m_embedder, many[i]));
        QCOMPARE(big.back(), embedOne(*m_embedder, many.back()));
    }

    void concurrentUseGivesIdenticalResults_data()
    {
        QTest::addColumn<QString>("model");
        QTest::newRow("hash-v2") << "hash-v2";
        QTest::newRow("hash-v1") << "hash-v1";
    }

    void concurrentUseGivesIdenticalResults()
    {
        QFETCH(QString, model);
        QStringList texts;
        for (int i = 0; i < 4000; ++i)
            texts << QStringLiteral("Fact %1: the agent %2 prefers %3 — café №%4")
                         .arg(i)
                         .arg(i % 17)
                         .arg(i % 2 ? QStringLiteral("tabs") : QStringLiteral("spaces"))
                         .arg(i * 7);
        std::vector<Embedding> expected;
        for (const QString &t : std::as_const(texts))
            expected.push_back(embedOne(embedder(model), t));

        Embedder *shared = &embedder(model);
        QThreadPool pool;
        pool.setMaxThreadCount(8);
        // Single texts through one shared instance, from many threads at once.
        const QList<Embedding> singles =
            QtConcurrent::blockingMapped<QList<Embedding>>(&pool, texts, [shared](const QString &t) { return embedOne(*shared, t); });
        QCOMPARE(singles.size(), texts.size());
        for (qsizetype i = 0; i < texts.size(); ++i)
            QCOMPARE(singles[i], expected[size_t(i)]);

        // Batches, half through the shared instance, half through instances made on the worker.
        QList<int> chunks;
        for (int c = 0; c < 40; ++c)
            chunks << c;
        const QList<bool> ok = QtConcurrent::blockingMapped<QList<bool>>(&pool, chunks, [&](int c) {
            const QStringList part = texts.mid(c * 100, 100);
            std::unique_ptr<Embedder> own;
            Embedder *e = shared;
            if (c % 2) {
                own = makeEmbedder(Json{{"model", model.toStdString()}});
                e = own.get();
            }
            const auto got = e->embed(part);
            for (qsizetype i = 0; i < part.size(); ++i)
                if (got[size_t(i)] != expected[size_t(c * 100 + i)])
                    return false;
            return true;
        });
        QVERIFY(std::all_of(ok.begin(), ok.end(), [](bool b) { return b; }));
    }

    void veryLongInput_data()
    {
        QTest::addColumn<QString>("text");
        QString words;
        for (int i = 0; words.size() < 1024 * 1024; ++i)
            words += QStringLiteral("Lorem ipsum dolor sit amet %1, consectetur adipiscing elit. ").arg(i);
        QTest::newRow("1 MB of words") << words;
        QTest::newRow("1 MB without a separator") << QString(1024 * 1024, QLatin1Char('x'));
        QString mixed;
        while (mixed.size() < 1024 * 1024)
            mixed += QString::fromUtf8("東京 café 🚀 мир नमस्ते ");
        QTest::newRow("1 MB mixed scripts") << mixed;
    }

    void veryLongInput()
    {
        QFETCH(QString, text);
        const Embedding v = embedOne(*m_embedder, text);
        QCOMPARE(v.size(), size_t(384));
        QVERIFY(allFinite(v));
        QVERIFY(std::fabs(norm(v) - 1.0) < 1e-5);
    }

    void oddInput_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("text");
        addRowsForModels("emoji", "😀🎉👍🏽");
        addRowsForModels("emoji zwj sequence", "👩‍👩‍👧‍👦 family");
        addRowsForModels("flags", "🇫🇷🇩🇪");
        addRowsForModels("cjk", "记忆系统在每个任务之前召回");
        addRowsForModels("nul only", QString(3, QChar(0)));
        addRowsForModels("nul inside", QString::fromUtf16(u"abc\0def", 7));
        addRowsForModels("lone high surrogate", fromUtf16({u'a', 0xD800, u'b'}));
        addRowsForModels("lone low surrogate", fromUtf16({0xDC00}));
        addRowsForModels("reversed pair", fromUtf16({u'x', 0xDE00, 0xD83D, u'y'}));
        addRowsForModels("trailing high surrogate", fromUtf16({u'z', 0xD83D}));
        addRowsForModels("noncharacters", fromUtf16({0xFFFE, 0xFFFF, u'k'}));
        addRowsForModels("lone combining marks", QString::fromUtf8("\u0301\u0308\u0327"));
        addRowsForModels("kept marks alone", QString::fromUtf8("\u093E\u0941"));
        addRowsForModels("hangul jamo", QString::fromUtf8("\u1100\u1161\u11A8 \u3131\u314F"));
        addRowsForModels("private use", QString::fromUtf8("\uE000\uF8FF"));
        addRowsForModels("controls", QString::fromUtf8("\u0001\u0002\u001B[31mred\u001B[0m"));
        addRowsForModels("math letters", QString::fromUtf8("\U0001D400\U0001D401\U0001D402"));
        addRowsForModels("apostrophes and hyphens", "'quoted' -dash- a--b ''x'' -");
        addRowsForModels("numbers and dots", "1. 2.. .3 4,5, ,6 v1.2.3.");
    }

    void oddInput()
    {
        QFETCH(QString, model);
        QFETCH(QString, text);
        Embedder &e = embedder(model);
        const Embedding v = embedOne(e, text);
        if (!v.empty()) {
            QCOMPARE(v.size(), size_t(384));
            QVERIFY(allFinite(v));
            QVERIFY(std::fabs(norm(v) - 1.0) < 1e-5);
        }
        QCOMPARE(embedOne(e, text), v);
    }

    // The embedder normalises most texts with a per-character table and falls back to Unicode
    // normalisation of the whole text when a character's result depends on its neighbours. A lone
    // surrogate forces the fallback and adds no feature, so both paths must give the same vector.
    void fastAndSlowNormalisationAgree_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("text");
        addRowsForModels("ascii", "Hello, World! It's a state-of-the-art test: 3.14 and 1,000.");
        addRowsForModels("latin-1", "Ça été très “spécial” — naïve façade, Øre, Æsir, ½ cup, ²³, µ, º");
        addRowsForModels("compatibility", "ﬁ ﬀ ㎏ ㍻ ① Ⅻ ｶﾀｶﾅ ＡＢＣ ™ …");
        addRowsForModels("greek and cyrillic", "ΟΔΥΣΣΕΥΣ Ἀθῆναι Ёжик Йод");
        addRowsForModels("hangul syllables", "한국어 문장입니다");
        addRowsForModels("kana with voicing", "がぎぐげご パピプペポ");
        // Every code point of the BMP outside the surrogates, CJK and Hangul syllables, 32 to a word.
        for (char32_t start = 0x80; start < 0xFFF0; start += 0x800) {
            QString sweep;
            for (char32_t c = start; c < start + 0x800 && c < 0xFFF0; ++c) {
                if ((c >= 0xD800 && c < 0xE000) || (c >= 0x4E00 && c < 0xA000) || (c >= 0xAC00 && c < 0xD7A4))
                    continue;
                sweep += QChar(char16_t(c));
                if (c % 32 == 31)
                    sweep += QLatin1Char(' ');
            }
            for (const char *model : {"hash-v2", "hash-v1"})
                QTest::addRow("%s sweep U+%04X", model, unsigned(start)) << QString::fromLatin1(model) << sweep;
        }
    }

    void fastAndSlowNormalisationAgree()
    {
        QFETCH(QString, model);
        QFETCH(QString, text);
        Embedder &e = embedder(model);
        // Split into words so that each piece usually takes the fast path on its own.
        const QStringList pieces = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
        for (const QString &piece : pieces) {
            const Embedding fast = embedOne(e, piece);
            const Embedding slow = embedOne(e, piece + QChar(char16_t(0xD800)));
            QVERIFY2(fast == slow, qPrintable(QStringLiteral("differs for \"%1\"").arg(piece)));
        }
    }

private:
    std::unique_ptr<Embedder> m_embedder; // the default: hash-v2
    std::unique_ptr<Embedder> m_v1;
};

QTEST_GUILESS_MAIN(TestBuiltinEmbedder)
#include "test_builtin_embedder.moc"
