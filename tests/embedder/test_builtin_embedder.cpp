// Tests of the builtin embedder (builtin/hash-v1), loaded through the real plugin.

#include "core/error.h"
#include "core/plugin_registry.h"

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
    }

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
        QCOMPARE(e->id(), QStringLiteral("builtin/hash-v1"));

        const QString err = errorOf([&] { registry.createEmbedder(QStringLiteral("no-such-embedder")); });
        QVERIFY2(err.startsWith(QStringLiteral("plugin:")), qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("no-such-embedder")), qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("builtin")), qPrintable(err));
    }

    void idAndDefaultDimension()
    {
        QCOMPARE(m_embedder->id(), QStringLiteral("builtin/hash-v1"));
        QCOMPARE(m_embedder->dimension(), 384);
        QCOMPARE(embedOne(*m_embedder, QStringLiteral("hello world")).size(), size_t(384));
    }

    void acceptedConfig_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<int>("dimension");
        QTest::newRow("empty") << "{}" << 384;
        QTest::newRow("null config") << "null" << 384;
        QTest::newRow("minimum") << R"({"dimension": 16})" << 16;
        QTest::newRow("maximum") << R"({"dimension": 4096})" << 4096;
        QTest::newRow("odd size") << R"({"dimension": 100})" << 100;
        QTest::newRow("integral float") << R"({"dimension": 256.0})" << 256;
        QTest::newRow("model") << R"({"model": "hash-v1"})" << 384;
        QTest::newRow("model_name") << R"({"model_name": "hash-v1", "dimension": 64})" << 64;
        QTest::newRow("null model") << R"({"model": null})" << 384;
    }

    void acceptedConfig()
    {
        QFETCH(QString, config);
        QFETCH(int, dimension);
        auto e = makeEmbedder(Json::parse(config.toStdString()));
        QCOMPARE(e->dimension(), dimension);
        QCOMPARE(e->id(), QStringLiteral("builtin/hash-v1"));
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
                                                    QStringLiteral("model_name")};
        QTest::newRow("unknown model") << R"({"model": "text-embedding-3-small"})"
                                       << QStringList{QStringLiteral("text-embedding-3-small"), QStringLiteral("hash-v1")};
        QTest::newRow("unknown model_name") << R"({"model_name": "hash-v2"})"
                                            << QStringList{QStringLiteral("\"model_name\""), QStringLiteral("hash-v1")};
        QTest::newRow("model not a string") << R"({"model": 1})"
                                            << QStringList{QStringLiteral("\"model\""), QStringLiteral("hash-v1")};
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
        QTest::addColumn<QString>("text");
        QTest::newRow("sentence") << "The user prefers PostgreSQL for long-term storage.";
        QTest::newRow("accents") << "Crème brûlée à l'hôtel in Zürich";
        QTest::newRow("numbers") << "Version 3.14.1 shipped on 2024-05-08 with 1,000 fixes";
        QTest::newRow("cjk") << "ユーザーは東京のダークモードを好みます";
        QTest::newRow("emoji") << "ship it 🚀🚀 👩‍💻";
        QTest::newRow("one word") << "a";
    }

    void deterministic()
    {
        QFETCH(QString, text);
        auto other = makeEmbedder();
        const Embedding a = embedOne(*m_embedder, text);
        QVERIFY(!a.empty());
        QCOMPARE(embedOne(*m_embedder, text), a);
        QCOMPARE(embedOne(*other, text), a);
        QCOMPARE(other->embed({QStringLiteral("something else first"), text}).at(1), a);
    }

    // Pins the hashing: if any of these change, every stored vector would silently stop matching.
    // A deliberate change needs a new model name (hash-v2), not new numbers here.
    void golden_data()
    {
        QTest::addColumn<int>("dimension");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("top");
        QTest::addColumn<double>("largest");
        QTest::addColumn<double>("checksum"); // sum of (i + 1) * v[i]
        QTest::newRow("fox 384") << 384 << "The quick brown fox jumps over the lazy dog"
                                 << QStringList{"-341", "+80", "+86", "-163", "+165"} << 0.327119380 << 22.515172257;
        QTest::newRow("accents 64") << 64 << "Crème brûlée à l'hôtel, s'il vous plaît!"
                                    << QStringList{"+16", "+17", "+30", "+25", "-10"} << 0.348856479 << 29.765745699;
    }

    void golden()
    {
        QFETCH(int, dimension);
        QFETCH(QString, text);
        QFETCH(QStringList, top);
        QFETCH(double, largest);
        QFETCH(double, checksum);
        auto e = makeEmbedder(Json{{"dimension", dimension}});
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
        QTest::addColumn<QString>("text");
        QTest::newRow("word") << "memory";
        QTest::newRow("sentence") << "Agents recall facts before each task and store new ones after it.";
        QTest::newRow("repeated word") << "go go go go go go go go go go";
        QTest::newRow("digits") << "42";
        QTest::newRow("hyphenated") << "state-of-the-art e-mail";
        QTest::newRow("greek") << "Καλημέρα κόσμε";
        QTest::newRow("cyrillic") << "Привет, мир";
        QTest::newRow("arabic") << "مَرْحَبًا بِالْعَالَمِ";
        QTest::newRow("hindi") << "नमस्ते दुनिया";
        QTest::newRow("korean") << "안녕하세요 세계";
    }

    void unitNorm()
    {
        QFETCH(QString, text);
        const Embedding v = embedOne(*m_embedder, text);
        QCOMPARE(v.size(), size_t(384));
        QVERIFY(allFinite(v));
        QVERIFY2(std::fabs(norm(v) - 1.0) < 1e-5, qPrintable(QString::number(norm(v), 'g', 9)));
    }

    void blankGivesEmpty_data()
    {
        QTest::addColumn<QString>("text");
        QTest::newRow("empty") << QString();
        QTest::newRow("space") << " ";
        QTest::newRow("whitespace") << " \t\r\n  \v\f ";
        QTest::newRow("unicode spaces") << QString::fromUtf8("\u00A0\u2003\u3000\u200B\u2028");
        QTest::newRow("punctuation only") << "... --- !!! ?? ' \" () []";
        QTest::newRow("format characters") << QString::fromUtf8("\u200D\u00AD\uFEFF");
    }

    void blankGivesEmpty()
    {
        QFETCH(QString, text);
        QVERIFY(embedOne(*m_embedder, text).empty());
        // In a batch too, keeping the positions of the others.
        const auto batch = m_embedder->embed({QStringLiteral("before"), text, QStringLiteral("after")});
        QCOMPARE(batch.size(), size_t(3));
        QCOMPARE(batch[0].size(), size_t(384));
        QVERIFY(batch[1].empty());
        QCOMPARE(batch[2].size(), size_t(384));
    }

    void caseAndAccentInsensitive_data()
    {
        QTest::addColumn<QString>("a");
        QTest::addColumn<QString>("b");
        QTest::newRow("café") << "Café" << "cafe";
        QTest::newRow("upper") << "CAFÉ CRÈME" << "café crème";
        QTest::newRow("decomposed") << QString::fromUtf8("cafe\u0301") << "café";
        QTest::newRow("brûlée") << "Crème Brûlée" << "creme brulee";
        QTest::newRow("naïve") << "naïve Zoë" << "naive zoe";
        QTest::newRow("ß") << "Straße" << "strasse";
        QTest::newRow("łódź") << "Łódź" << "lodz";
        QTest::newRow("ø") << "Søren Kierkegaard" << "soren kierkegaard";
        QTest::newRow("fullwidth") << "ＦＵＬＬ　ＷＩＤＴＨ１２" << "full width12";
        QTest::newRow("ligature") << "ﬁle ﬂow" << "file flow";
        QTest::newRow("greek tonos") << "Καλημέρα" << "καλημερα";
        QTest::newRow("curly apostrophe") << "don’t" << "don't";
        QTest::newRow("apostrophe dropped") << "don't" << "dont";
        QTest::newRow("soft hyphen") << QString::fromUtf8("hy\u00ADphen") << "hyphen";
        QTest::newRow("arabic harakat") << "مَرْحَبًا" << "مرحبا";
    }

    void caseAndAccentInsensitive()
    {
        QFETCH(QString, a);
        QFETCH(QString, b);
        const Embedding va = embedOne(*m_embedder, a);
        QVERIFY(!va.empty());
        QCOMPARE(va, embedOne(*m_embedder, b));
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
        QTest::newRow("typo single word") << "postgres" << "postgress" << "kubernetes";
        QTest::newRow("plural") << "The meeting is scheduled for Monday"
                                << "The meetings are scheduled for Mondays"
                                << "Bananas are rich in potassium";
        QTest::newRow("plural single word") << "invoice" << "invoices" << "holiday";
        QTest::newRow("hyphen vs joined") << "send an e-mail to the team" << "send an email to the team"
                                          << "water the plants on the balcony";
        QTest::newRow("accents and case") << "Rendez-vous au café à Genève" << "rendez vous au cafe a geneve"
                                          << "Der Zug nach Berlin ist verspätet";
        QTest::newRow("cjk") << "東京タワーに行きました" << "東京タワーへ行った" << "猫がソファで寝ている";
        QTest::newRow("numbers") << "Upgrade Qt to 6.4.2 on the build server" << "the build server runs Qt 6.4.2"
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
        QTest::newRow("swap subject and object") << "alice sent bob the report" << "bob sent alice the report";
        QTest::newRow("reversed") << "recall memories before each task" << "task each before memories recall";
        QTest::newRow("moved clause") << "yesterday the deploy failed on staging" << "the deploy failed on staging yesterday";
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
    }

    void concurrentUseGivesIdenticalResults()
    {
        QStringList texts;
        for (int i = 0; i < 4000; ++i)
            texts << QStringLiteral("Fact %1: the agent %2 prefers %3 — café №%4")
                         .arg(i)
                         .arg(i % 17)
                         .arg(i % 2 ? QStringLiteral("tabs") : QStringLiteral("spaces"))
                         .arg(i * 7);
        std::vector<Embedding> expected;
        for (const QString &t : std::as_const(texts))
            expected.push_back(embedOne(*m_embedder, t));

        Embedder *shared = m_embedder.get();
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
                own = makeEmbedder();
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
        QTest::addColumn<QString>("text");
        QTest::newRow("emoji") << "😀🎉👍🏽";
        QTest::newRow("emoji zwj sequence") << "👩‍👩‍👧‍👦 family";
        QTest::newRow("flags") << "🇫🇷🇩🇪";
        QTest::newRow("cjk") << "记忆系统在每个任务之前召回";
        QTest::newRow("nul only") << QString(3, QChar(0));
        QTest::newRow("nul inside") << QString::fromUtf16(u"abc\0def", 7);
        QTest::newRow("lone high surrogate") << fromUtf16({u'a', 0xD800, u'b'});
        QTest::newRow("lone low surrogate") << fromUtf16({0xDC00});
        QTest::newRow("reversed pair") << fromUtf16({u'x', 0xDE00, 0xD83D, u'y'});
        QTest::newRow("trailing high surrogate") << fromUtf16({u'z', 0xD83D});
        QTest::newRow("noncharacters") << fromUtf16({0xFFFE, 0xFFFF, u'k'});
        QTest::newRow("lone combining marks") << QString::fromUtf8("\u0301\u0308\u0327");
        QTest::newRow("kept marks alone") << QString::fromUtf8("\u093E\u0941");
        QTest::newRow("hangul jamo") << QString::fromUtf8("\u1100\u1161\u11A8 \u3131\u314F");
        QTest::newRow("private use") << QString::fromUtf8("\uE000\uF8FF");
        QTest::newRow("controls") << QString::fromUtf8("\u0001\u0002\u001B[31mred\u001B[0m");
        QTest::newRow("math letters") << QString::fromUtf8("\U0001D400\U0001D401\U0001D402");
        QTest::newRow("apostrophes and hyphens") << "'quoted' -dash- a--b ''x'' -";
        QTest::newRow("numbers and dots") << "1. 2.. .3 4,5, ,6 v1.2.3.";
    }

    void oddInput()
    {
        QFETCH(QString, text);
        const Embedding v = embedOne(*m_embedder, text);
        if (!v.empty()) {
            QCOMPARE(v.size(), size_t(384));
            QVERIFY(allFinite(v));
            QVERIFY(std::fabs(norm(v) - 1.0) < 1e-5);
        }
        QCOMPARE(embedOne(*m_embedder, text), v);
    }

    // The embedder normalises most texts with a per-character table and falls back to Unicode
    // normalisation of the whole text when a character's result depends on its neighbours. A lone
    // surrogate forces the fallback and adds no feature, so both paths must give the same vector.
    void fastAndSlowNormalisationAgree_data()
    {
        QTest::addColumn<QString>("text");
        QTest::newRow("ascii") << "Hello, World! It's a state-of-the-art test: 3.14 and 1,000.";
        QTest::newRow("latin-1") << "Ça été très “spécial” — naïve façade, Øre, Æsir, ½ cup, ²³, µ, º";
        QTest::newRow("compatibility") << "ﬁ ﬀ ㎏ ㍻ ① Ⅻ ｶﾀｶﾅ ＡＢＣ ™ …";
        QTest::newRow("greek and cyrillic") << "ΟΔΥΣΣΕΥΣ Ἀθῆναι Ёжик Йод";
        QTest::newRow("hangul syllables") << "한국어 문장입니다";
        QTest::newRow("kana with voicing") << "がぎぐげご パピプペポ";
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
            QTest::addRow("sweep U+%04X", unsigned(start)) << sweep;
        }
    }

    void fastAndSlowNormalisationAgree()
    {
        QFETCH(QString, text);
        // Split into words so that each piece usually takes the fast path on its own.
        const QStringList pieces = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
        for (const QString &piece : pieces) {
            const Embedding fast = embedOne(*m_embedder, piece);
            const Embedding slow = embedOne(*m_embedder, piece + QChar(char16_t(0xD800)));
            QVERIFY2(fast == slow, qPrintable(QStringLiteral("differs for \"%1\"").arg(piece)));
        }
    }

private:
    std::unique_ptr<Embedder> m_embedder;
};

QTEST_GUILESS_MAIN(TestBuiltinEmbedder)
#include "test_builtin_embedder.moc"
