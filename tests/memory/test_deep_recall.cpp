// Deep recall (RecallFlow): query analysis, the scopes and periods it searches, the confidence router,
// exploration with refined queries, and what happens when the LLM fails or talks nonsense. The LLM is
// the real `openai` plugin talking to a scripted server on loopback; storage is the SQLite plugin,
// wrapped to record every search it is asked for; the embedder's vectors are chosen per text, and the
// score weights are set so a match's score is its cosine similarity (confidence is then exact).

#include "counting_storage.h"
#include "fake_embedder.h"
#include "memory_test_util.h"
#include "scripted_llm.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/core/storage_backend.h>
#include <mneme/memory/memory.h>

#include <QSignalSpy>
#include <QtTest>
#include <cmath>

using namespace mneme;
using mneme::test::CountingStorage;
using mneme::test::errorOf;
using mneme::test::FakeEmbedder;
using mneme::test::fields;
using mneme::test::ScriptedLlm;
using mneme::test::ScriptedReply;
using mneme::test::TempStore;

namespace {

constexpr int kDim = 8;
const QDateTime kNow(QDate(2024, 6, 12), QTime(12, 0), Qt::UTC); // a Wednesday

// The unit vector of one axis.
Embedding axis(int i)
{
    Embedding v(kDim, 0.0f);
    v[size_t(i)] = 1;
    return v;
}

// A unit vector whose cosine with axis(base) is `c`, leaning towards axis(other).
Embedding cosTo(double c, int other, int base = 0)
{
    Embedding v(kDim, 0.0f);
    v[size_t(base)] = float(c);
    v[size_t(other)] = float(std::sqrt(1 - c * c));
    return v;
}

QDateTime day(int y, int m, int d) { return QDateTime(QDate(y, m, d), QTime(10, 0), Qt::UTC); }

// One record to store.
struct Rec
{
    QString content;
    QString scope;
    Embedding vector;
    QDateTime created = day(2024, 6, 1);
    QStringList categories = {};
    QString source = {};
    bool isPrivate = false;
};

Json strings(const QStringList &list)
{
    Json a = Json::array();
    for (const QString &s : list)
        a.push_back(s.toStdString());
    return a;
}

Json queryReply(const QStringList &queries, const QStringList &scopes = {}, const QString &complexity = QStringLiteral("simple"),
                const QString &timeFilter = {})
{
    Json j = {{"keywords", Json::array()}, {"scopes", strings(scopes)}, {"complexity", complexity.toStdString()}, {"queries", strings(queries)}};
    j["time_filter"] = timeFilter.isEmpty() ? Json(nullptr) : Json(timeFilter.toStdString());
    return j;
}

Json explorationReply(const QString &missing, const QStringList &queries)
{
    return Json{{"findings", "Some of it."}, {"missing", missing.toStdString()}, {"queries", strings(queries)}};
}

QStringList contents(const QList<MemoryMatch> &matches)
{
    QStringList out;
    for (const MemoryMatch &m : matches)
        out << m.record.content;
    return out;
}

// (step, path) of every analysisCompleted, as "step:path".
QStringList paths(const QSignalSpy &spy)
{
    QStringList out;
    for (const QList<QVariant> &args : spy)
        out << args.at(0).toString() + QLatin1Char(':') + args.at(1).toString();
    return out;
}

QStringList steps(const QSignalSpy &spy)
{
    QStringList out;
    for (const QList<QVariant> &args : spy)
        out << args.at(0).toString();
    return out;
}

const QString kShort = QStringLiteral("payment outage");
const QString kLong = QStringLiteral("Please tell me everything we know about the payment service outage and its root cause");

} // namespace

class TestDeepRecall : public QObject
{
    Q_OBJECT

    std::unique_ptr<TempStore> m_dir;
    std::unique_ptr<ScriptedLlm> m_llm;
    std::shared_ptr<FakeEmbedder> m_embedder;
    std::shared_ptr<CountingStorage> m_storage;

    MemoryConfig config(bool withLlm, const QString &root = {}) const
    {
        MemoryConfig c;
        c.storage = Json{{"provider", "sqlite"}, {"config", {{"path", m_dir->path()}}}};
        c.rootScope = root;
        // Score = cosine similarity, so confidence is exactly the top match's cosine.
        c.semanticWeight = 1;
        c.keywordWeight = 0;
        c.recencyWeight = 0;
        c.importanceWeight = 0;
        c.queryAnalysisThreshold = 60;
        if (withLlm)
            c.llm = m_llm->config();
        return c;
    }

    // Stores the records through a Memory without an LLM (so seeding makes no LLM call).
    void seed(const QList<Rec> &records)
    {
        Memory m(config(false), nullptr, m_embedder);
        for (const Rec &r : records) {
            m_embedder->setVector(r.content, r.vector);
            RememberOptions o;
            o.scope = r.scope;
            o.categories = r.categories;
            o.importance = 0.5;
            o.source = r.source;
            o.isPrivate = r.isPrivate;
            o.createdAt = r.created;
            m.remember(r.content, o);
        }
    }

    std::unique_ptr<Memory> open(bool withLlm = true, const QString &root = {}, int budget = 1)
    {
        m_storage = std::make_shared<CountingStorage>(
            PluginRegistry::instance().createStorage(QStringLiteral("sqlite"), Json{{"path", m_dir->path().toStdString()}}));
        MemoryConfig c = config(withLlm, root);
        c.explorationBudget = budget;
        return std::make_unique<Memory>(c, m_storage, m_embedder);
    }

    static RecallOptions deep(const QStringList &scopes = {}, int limit = 10)
    {
        RecallOptions o;
        o.depth = RecallDepth::Deep;
        o.scopes = scopes;
        o.limit = limit;
        o.now = kNow;
        return o;
    }

    void setQuery(const QString &text, const Embedding &v) { m_embedder->setVector(text, v); }

private Q_SLOTS:
    void init()
    {
        m_dir = std::make_unique<TempStore>();
        m_llm = std::make_unique<ScriptedLlm>();
        m_embedder = std::make_shared<FakeEmbedder>(kDim);
        setQuery(kShort, axis(0));
        setQuery(kLong, axis(0));
    }
    void cleanup()
    {
        m_storage.reset();
        m_llm.reset();
        m_dir.reset();
    }

    // ---- The cheap path ------------------------------------------------------------------------

    // A short query with no period: no LLM call, one embedding, one search per scope, and the very
    // results of a shallow recall.
    void shortQueryIsTheShallowSearch_data()
    {
        QTest::addColumn<bool>("withLlm");
        QTest::addColumn<QStringList>("scopes");
        QTest::addColumn<double>("top");
        QTest::addColumn<QStringList>("analysis");
        QTest::newRow("llm, whole store") << true << QStringList() << 0.9 << QStringList{"query_analysis:skipped"};
        QTest::newRow("llm, one scope") << true << QStringList{"/a"} << 0.9 << QStringList{"query_analysis:skipped"};
        QTest::newRow("no llm, whole store") << false << QStringList() << 0.9 << QStringList{"query_analysis:skipped"};
        QTest::newRow("no llm, low confidence") << false << QStringList() << 0.3
                                                << QStringList{"query_analysis:skipped", "exploration:skipped"};
        QTest::newRow("no llm, slice of two") << false << QStringList{"/a", "/b"} << 0.9 << QStringList{"query_analysis:skipped"};
    }
    void shortQueryIsTheShallowSearch()
    {
        QFETCH(bool, withLlm);
        QFETCH(QStringList, scopes);
        QFETCH(double, top);
        QFETCH(QStringList, analysis);
        seed({{"The payment service went down on Friday.", "/a", cosTo(top, 1)},
              {"Payments were retried automatically.", "/b", cosTo(top - 0.1, 2)},
              {"A note about lunch.", "/c", axis(3)},
              {"Payments failed in the EU region.", "/a/eu", cosTo(top - 0.2, 4)}});
        auto m = open(withLlm);
        QSignalSpy completed(m.get(), &Memory::analysisCompleted);
        const int embedCalls = m_embedder->calls();
        const QList<MemoryMatch> got = m->recall(kShort, deep(scopes));
        QCOMPARE(m_llm->totalCalls(), 0);
        QCOMPARE(m_embedder->calls(), embedCalls + 1);
        QCOMPARE(m_storage->searches().size(), qMax(1, int(scopes.size())));
        QCOMPARE(paths(completed), analysis);

        RecallOptions shallow = deep(scopes);
        shallow.depth = RecallDepth::Shallow;
        const QList<MemoryMatch> want = m->recall(kShort, shallow);
        QVERIFY(!want.isEmpty());
        QCOMPARE(contents(got), contents(want));
        for (qsizetype i = 0; i < got.size(); ++i) {
            QCOMPARE(got[i].score, want[i].score);
            QCOMPARE(got[i].matchReasons, want[i].matchReasons);
            QVERIFY(got[i].evidenceGaps.isEmpty());
        }
        // The prefix and its children are searched (decision 3): /a/eu is found from /a.
        if (scopes == QStringList{"/a"})
            QVERIFY(contents(got).contains(QStringLiteral("Payments failed in the EU region.")));
    }

    // query_analysis_threshold: a query of exactly that many characters is analysed.
    void analysisThreshold_data()
    {
        QTest::addColumn<int>("length");
        QTest::addColumn<int>("calls");
        QTest::newRow("one short") << 59 << 0;
        QTest::newRow("exactly") << 60 << 1;
        QTest::newRow("longer") << 200 << 1;
    }
    void analysisThreshold()
    {
        QFETCH(int, length);
        QFETCH(int, calls);
        const QString query = QString(QLatin1Char('x')).repeated(length);
        setQuery(query, axis(0));
        seed({{"The payment service went down on Friday.", "/a", cosTo(0.9, 1)}});
        m_llm->onJson(QStringLiteral("query_analysis"), queryReply({query}));
        auto m = open();
        QCOMPARE(m->recall(query, deep()).size(), 1);
        QCOMPARE(m_llm->calls(QStringLiteral("query_analysis")), calls);
    }

    // ---- Query analysis ------------------------------------------------------------------------

    // The LLM sees the scopes below the searched prefix relative to it, and the prefix's statistics.
    void analysisShowsScopesRelative()
    {
        seed({{"Alpha runs the billing job.", "/proj/alpha", cosTo(0.9, 1), day(2024, 6, 1), {"ops"}},
              {"Beta deploys on Tuesdays.", "/proj/beta/x", cosTo(0.85, 2)},
              {"Other team's secret.", "/other", cosTo(0.95, 3)}});
        m_llm->onJson(QStringLiteral("query_analysis"), queryReply({kLong}));
        auto m = open();
        QSignalSpy completed(m.get(), &Memory::analysisCompleted);
        const auto got = m->recall(kLong, deep({"/proj"}));
        QCOMPARE(m_llm->calls(QStringLiteral("query_analysis")), 1);
        const QString prompt = m_llm->lastPrompt(QStringLiteral("query_analysis"));
        QVERIFY2(prompt.contains(QStringLiteral("\"/alpha\"")), qPrintable(prompt));
        QVERIFY(prompt.contains(QStringLiteral("\"/beta\"")));
        QVERIFY(prompt.contains(QStringLiteral("\"/beta/x\"")));
        QVERIFY(!prompt.contains(QStringLiteral("/proj")));
        QVERIFY(!prompt.contains(QStringLiteral("/other")));
        QVERIFY(prompt.contains(QStringLiteral("holds 2 memories")));
        QVERIFY(prompt.contains(QStringLiteral("\"ops\"")));
        QVERIFY(prompt.contains(QStringLiteral("Today is 2024-06-12")));
        QCOMPARE(paths(completed), QStringList{"query_analysis:llm"});
        QCOMPARE(contents(got), (QStringList{"Alpha runs the billing job.", "Beta deploys on Tuesdays."}));
    }

    // Suggested scopes restrict the search; suggestions that hold nothing give way to the prefix.
    void suggestedScopesRestrictSearch_data()
    {
        QTest::addColumn<QStringList>("suggested");
        QTest::addColumn<QStringList>("searched");
        QTest::addColumn<QStringList>("found");
        const QString a = QStringLiteral("Alpha runs the billing job.");
        const QString b = QStringLiteral("Beta deploys on Tuesdays.");
        QTest::newRow("none: the prefix") << QStringList() << QStringList{"/proj"} << QStringList{b, a};
        QTest::newRow("one") << QStringList{"/alpha"} << QStringList{"/proj/alpha"} << QStringList{a};
        QTest::newRow("full path repeated") << QStringList{"/proj/alpha"} << QStringList{"/proj/alpha"} << QStringList{a};
        QTest::newRow("relative, no slash") << QStringList{"beta"} << QStringList{"/proj/beta"} << QStringList{b};
        QTest::newRow("two") << QStringList{"/alpha", "/beta"} << QStringList{"/proj/alpha", "/proj/beta"} << QStringList{b, a};
        QTest::newRow("child covered by parent") << QStringList{"/beta/x", "/beta"} << QStringList{"/proj/beta"} << QStringList{b};
        QTest::newRow("root: the prefix") << QStringList{"/"} << QStringList{"/proj"} << QStringList{b, a};
        QTest::newRow("empty scope falls back") << QStringList{"/nothing-here"} << QStringList{"/proj/nothing-here", "/proj"}
                                                << QStringList{b, a};
    }
    void suggestedScopesRestrictSearch()
    {
        QFETCH(QStringList, suggested);
        QFETCH(QStringList, searched);
        QFETCH(QStringList, found);
        seed({{"Alpha runs the billing job.", "/proj/alpha", cosTo(0.85, 1)},
              {"Beta deploys on Tuesdays.", "/proj/beta/x", cosTo(0.9, 2)},
              {"Other team's secret.", "/other", cosTo(0.95, 3)}});
        m_llm->onJson(QStringLiteral("query_analysis"), queryReply({kLong}, suggested));
        auto m = open();
        const auto got = m->recall(kLong, deep({"/proj"}));
        QCOMPARE(m_storage->searchedScopes(), searched);
        QCOMPARE(contents(got), found);
    }

    // Decision 4: whatever the LLM suggests, the search stays inside the root scope or the view.
    void hostileScopesStayInside_data()
    {
        QTest::addColumn<QString>("root");
        QTest::addColumn<QStringList>("scopes");
        QTest::addColumn<QStringList>("suggested");
        const QStringList hostile = {"/../../etc", "/other/outside", "../x", "..", "/crew/../../secret", "\\etc", ""};
        for (const QString &h : hostile) {
            QTest::addRow("root_scope, %s", qPrintable(h)) << QStringLiteral("/crew") << QStringList() << QStringList{h};
            QTest::addRow("recall scope, %s", qPrintable(h)) << QString() << QStringList{"/crew"} << QStringList{h};
        }
        QTest::newRow("all at once") << QStringLiteral("/crew") << QStringList() << hostile;
        QTest::newRow("slice, outside both") << QString() << QStringList{"/crew/a", "/crew/b"}
                                             << QStringList{"/other/outside", "/crew", "/"};
    }
    void hostileScopesStayInside()
    {
        QFETCH(QString, root);
        QFETCH(QStringList, scopes);
        QFETCH(QStringList, suggested);
        seed({{"Crew notes on the outage.", "/crew/a", cosTo(0.6, 1)},
              {"Crew follow-up on the outage.", "/crew/b", cosTo(0.55, 2)},
              {"etc secret", "/etc", cosTo(0.99, 3)},
              {"outside secret", "/other/outside", cosTo(0.98, 4)},
              {"x secret", "/x", cosTo(0.97, 5)},
              {"secret secret", "/secret", cosTo(0.96, 6)},
              {"crewmate secret", "/crewmate", cosTo(0.95, 7)}});
        m_llm->onJson(QStringLiteral("query_analysis"), queryReply({kLong}, suggested));
        auto m = open(true, root);
        const auto got = m->recall(kLong, deep(scopes));
        QVERIFY(!got.isEmpty());
        for (const MemoryMatch &match : got)
            QVERIFY2(match.record.scope.startsWith(QStringLiteral("/crew/")), qPrintable(match.record.scope));
        for (const QString &s : m_storage->searchedScopes()) {
            for (const QString &one : s.split(QLatin1Char('+')))
                QVERIFY2(one == QStringLiteral("/crew") || one.startsWith(QStringLiteral("/crew/")), qPrintable(s));
        }
    }

    // Up to three recall queries, embedded in one call, each searched: a record only the second
    // query finds is returned; a fourth query is ignored.
    void recallQueriesAreAllSearched()
    {
        seed({{"The payment service went down on Friday.", "/a", cosTo(0.9, 1)},
              {"The database ran out of connections.", "/a", axis(2)},
              {"The CDN certificate expired.", "/a", axis(3)},
              {"The fourth query's record.", "/a", axis(4)}});
        setQuery(QStringLiteral("payment outage"), axis(0));
        setQuery(QStringLiteral("database connections"), axis(2));
        setQuery(QStringLiteral("cdn certificate"), axis(3));
        setQuery(QStringLiteral("fourth"), axis(4));
        m_llm->onJson(QStringLiteral("query_analysis"),
                      queryReply({"payment outage", "database connections", "cdn certificate", "fourth"}));
        auto m = open();
        const int batches = int(m_embedder->batches().size());
        const auto got = m->recall(kLong, deep());
        QCOMPARE(m_embedder->batches().size(), batches + 1);
        QCOMPARE(m_embedder->batches().last(),
                 (QStringList{"payment outage", "database connections", "cdn certificate"}));
        QCOMPARE(m_storage->searches().size(), 3);
        const QStringList found = contents(got);
        QVERIFY(found.contains(QStringLiteral("The payment service went down on Friday.")));
        QVERIFY(found.contains(QStringLiteral("The database ran out of connections.")));
        QVERIFY(found.contains(QStringLiteral("The CDN certificate expired.")));
        QVERIFY(!found.contains(QStringLiteral("The fourth query's record.")));
    }

    // A record found by two queries appears once, with its better score.
    void duplicatesKeepTheBestScore()
    {
        seed({{"The payment service went down on Friday.", "/a", cosTo(0.9, 1)}});
        setQuery(QStringLiteral("payment outage"), axis(0));
        setQuery(QStringLiteral("friday incident"), cosTo(0.95, 1, 0)); // cosine ~0.99 with the record
        m_llm->onJson(QStringLiteral("query_analysis"), queryReply({"payment outage", "friday incident"}));
        auto m = open();
        const auto got = m->recall(kLong, deep());
        QCOMPARE(got.size(), 1);
        QVERIFY2(got.first().score > 0.95, qPrintable(QString::number(got.first().score)));
    }

    // ---- Periods (decision 9) ------------------------------------------------------------------

    // The LLM's time_filter bounds created_at from below; with the offline reading of the same
    // period it is bounded above too; an unparseable one is ignored.
    void llmTimeFilter_data()
    {
        QTest::addColumn<QString>("query");
        QTest::addColumn<QString>("timeFilter");
        QTest::addColumn<QStringList>("found");
        QTest::addColumn<QDateTime>("after");
        QTest::addColumn<QDateTime>("before");
        const QString q1 = kLong;
        const QString q2 = QStringLiteral("Please tell me everything about the payment service outage in May 2024, root cause too");
        const QDateTime may1(QDate(2024, 5, 1), QTime(0, 0), Qt::UTC);
        QTest::newRow("earliest date") << q1 << "2024-05-01" << QStringList{"June outage.", "May outage."} << may1 << QDateTime();
        QTest::newRow("date-time with offset") << q1 << "2024-05-01T02:00:00+02:00" << QStringList{"June outage.", "May outage."}
                                               << may1 << QDateTime();
        QTest::newRow("the same period offline") << q2 << "2024-05-01" << QStringList{"May outage."} << may1
                                                 << QDateTime(QDate(2024, 6, 1), QTime(0, 0), Qt::UTC);
        QTest::newRow("unparseable") << q1 << "last week-ish" << QStringList{"April outage.", "June outage.", "May outage."}
                                     << QDateTime() << QDateTime();
    }
    void llmTimeFilter()
    {
        QFETCH(QString, query);
        QFETCH(QString, timeFilter);
        QFETCH(QStringList, found);
        QFETCH(QDateTime, after);
        QFETCH(QDateTime, before);
        setQuery(query, axis(0));
        seed({{"April outage.", "/", cosTo(0.95, 1), day(2024, 4, 20)},
              {"May outage.", "/", cosTo(0.85, 2), day(2024, 5, 10)},
              {"June outage.", "/", cosTo(0.9, 3), day(2024, 6, 5)}});
        m_llm->onJson(QStringLiteral("query_analysis"), queryReply({query}, {}, QStringLiteral("simple"), timeFilter));
        auto m = open();
        const auto got = m->recall(query, deep());
        QCOMPARE(contents(got), found);
        for (const RecordFilter &f : m_storage->searches()) {
            QCOMPARE(f.createdAfter, after);
            QCOMPARE(f.createdBefore, before);
        }
        for (const MemoryMatch &match : got) {
            QCOMPARE(match.matchReasons.contains(QStringLiteral("time_filter")), after.isValid());
            QVERIFY(!match.matchReasons.contains(QStringLiteral("offline_analysis")));
        }
    }

    // A day or a month that is the subject of the question ("on Friday", "in December") is no filter
    // without the LLM: only definite periods are.
    void offlineAmbiguousPeriodIsNoFilter()
    {
        const QString query = QStringLiteral("Are deployments allowed on Friday?");
        setQuery(query, axis(0));
        seed({{"Deployments are frozen on Friday afternoons.", "/", cosTo(0.9, 1), day(2024, 5, 1)},
              {"Lunch on Friday was pizza.", "/", cosTo(0.4, 2), day(2024, 6, 7)}});
        auto m = open(false);
        const auto deepResults = m->recall(query, deep());
        QCOMPARE(contents(deepResults).value(0), QStringLiteral("Deployments are frozen on Friday afternoons."));
        for (const MemoryMatch &match : deepResults)
            QVERIFY(!match.matchReasons.contains(QStringLiteral("time_filter")));
        for (const RecordFilter &f : m_storage->searches())
            QVERIFY(!f.createdAfter.isValid() && !f.createdBefore.isValid());
    }

    // Without an LLM (or when it fails) the offline analyzer reads the period, and says so.
    void offlinePeriod_data()
    {
        QTest::addColumn<QString>("query");
        QTest::addColumn<int>("llmStatus"); // 0: no LLM
        QTest::addColumn<int>("analysisCalls");
        QTest::newRow("no llm, short query") << QStringLiteral("what did we decide last week") << 0 << 0;
        QTest::newRow("llm, short query") << QStringLiteral("what did we decide last week") << 200 << 0;
        QTest::newRow("no llm, long query")
            << QStringLiteral("Remind me of everything the team decided about the payment service last week, please") << 0 << 0;
        QTest::newRow("llm fails, long query")
            << QStringLiteral("Remind me of everything the team decided about the payment service last week, please") << 500 << 1;
    }
    void offlinePeriod()
    {
        QFETCH(QString, query);
        QFETCH(int, llmStatus);
        QFETCH(int, analysisCalls);
        setQuery(query, axis(0));
        // Last week: Monday 2024-06-03 up to (not including) Monday 2024-06-10.
        seed({{"Decided to retry payments.", "/", cosTo(0.7, 1), day(2024, 6, 5)},
              {"Decided to drop the old API.", "/", cosTo(0.95, 2), day(2024, 5, 20)},
              {"Decided on a new logo.", "/", cosTo(0.9, 3), day(2024, 6, 11)}});
        if (llmStatus >= 400)
            m_llm->onError(QStringLiteral("query_analysis"), llmStatus);
        m_llm->onJson(QStringLiteral("exploration"), explorationReply(QString(), {}));
        auto m = open(llmStatus != 0);
        QSignalSpy completed(m.get(), &Memory::analysisCompleted);
        const auto got = m->recall(query, deep());
        QCOMPARE(m_llm->calls(QStringLiteral("query_analysis")), analysisCalls);
        QCOMPARE(contents(got), QStringList{"Decided to retry payments."});
        const QStringList reasons = got.first().matchReasons;
        QCOMPARE(reasons.first(), QStringLiteral("semantic"));
        QCOMPARE(reasons.mid(reasons.size() - 2), (QStringList{"time_filter", "offline_analysis"}));
        QVERIFY(!completed.isEmpty());
        QCOMPARE(completed.first().at(0).toString(), QStringLiteral("query_analysis"));
        QCOMPARE(completed.first().at(1).toString(), QStringLiteral("offline"));
        QVERIFY(!completed.first().at(2).toString().isEmpty());
        const QDateTime monday(QDate(2024, 6, 3), QTime(0, 0), Qt::UTC);
        for (const RecordFilter &f : m_storage->searches()) {
            QCOMPARE(f.createdAfter, monday);
            QCOMPARE(f.createdBefore, monday.addDays(7));
        }
    }

    // A period that holds nothing relevant: the results come from any time, with a gap saying so.
    void emptyPeriodFallsBackWithAGap()
    {
        const QString query = QStringLiteral("what broke yesterday");
        setQuery(query, axis(0));
        seed({{"The payment service went down.", "/", cosTo(0.9, 1), day(2024, 5, 2)}});
        auto m = open(false);
        const auto got = m->recall(query, deep());
        QCOMPARE(contents(got), QStringList{"The payment service went down."});
        QVERIFY(!got.first().matchReasons.contains(QStringLiteral("time_filter")));
        QCOMPARE(got.first().evidenceGaps.size(), 1);
        QVERIFY2(got.first().evidenceGaps.first().contains(QStringLiteral("yesterday (2024-06-11 to 2024-06-11)")),
                 qPrintable(got.first().evidenceGaps.first()));
        QCOMPARE(m_storage->searches().size(), 2);
        QVERIFY(m_storage->searches().first().createdAfter.isValid());
        QVERIFY(!m_storage->searches().last().createdAfter.isValid());
    }

    // ---- The router ----------------------------------------------------------------------------

    // The reference's rules with the default thresholds (high 0.8, low 0.5, complex 0.7). Each
    // exploration proposes a new phrase; "helpful" ones find a record with cosine 1.
    void router_data()
    {
        QTest::addColumn<QString>("complexity");
        QTest::addColumn<double>("top");
        QTest::addColumn<int>("budget");
        QTest::addColumn<bool>("helpful");
        QTest::addColumn<int>("explorations");
        QTest::newRow("high: synthesize") << "simple" << 0.9 << 1 << false << 0;
        QTest::newRow("just above high: synthesize") << "simple" << 0.81 << 1 << false << 0;
        QTest::newRow("just below high: synthesize") << "simple" << 0.79 << 1 << false << 0;
        QTest::newRow("medium simple: synthesize") << "simple" << 0.6 << 1 << false << 0;
        QTest::newRow("just above low: synthesize") << "simple" << 0.51 << 1 << false << 0;
        QTest::newRow("just below low: explore") << "simple" << 0.49 << 1 << false << 1;
        QTest::newRow("low: explore") << "simple" << 0.3 << 1 << false << 1;
        QTest::newRow("nothing found: explore") << "simple" << 0.0 << 1 << false << 1;
        QTest::newRow("complex medium: explore") << "complex" << 0.6 << 1 << false << 1;
        QTest::newRow("complex above its threshold") << "complex" << 0.75 << 1 << false << 0;
        QTest::newRow("complex high") << "complex" << 0.9 << 1 << false << 0;
        QTest::newRow("budget 0: never") << "simple" << 0.3 << 0 << false << 0;
        QTest::newRow("complex, budget 0: never") << "complex" << 0.6 << 0 << false << 0;
        QTest::newRow("budget 2, no help: 2 rounds") << "simple" << 0.3 << 2 << false << 2;
        QTest::newRow("budget 3, no help: 3 rounds") << "complex" << 0.6 << 3 << false << 3;
        QTest::newRow("budget 3, help at once: 1 round") << "simple" << 0.3 << 3 << true << 1;
    }
    void router()
    {
        QFETCH(QString, complexity);
        QFETCH(double, top);
        QFETCH(int, budget);
        QFETCH(bool, helpful);
        QFETCH(int, explorations);
        QList<Rec> records;
        records << Rec{"Hidden answer.", "/", axis(6)};
        if (top > 0)
            records << Rec{"The payment service went down on Friday.", "/", cosTo(top, 1)};
        seed(records);
        for (int i = 1; i <= 3; ++i)
            setQuery(QStringLiteral("angle %1").arg(i), helpful ? axis(6) : axis(7));
        m_llm->onJson(QStringLiteral("query_analysis"), queryReply({kLong}, {}, complexity));
        int round = 0;
        m_llm->on(QStringLiteral("exploration"), [&round](const Json &) {
            ++round;
            return ScriptedLlm::completion(
                QString::fromStdString(explorationReply(QStringLiteral("more detail"), {QStringLiteral("angle %1").arg(round)}).dump()));
        });
        auto m = open(true, {}, budget);
        const auto got = m->recall(kLong, deep());
        QCOMPARE(m_llm->calls(QStringLiteral("exploration")), explorations);
        QCOMPARE(m_llm->calls(QStringLiteral("query_analysis")), 1);
        // One search for the query, one per exploration round.
        QCOMPARE(m_storage->searches().size(), 1 + explorations);
        QCOMPARE(contents(got).contains(QStringLiteral("Hidden answer.")), helpful && explorations > 0);
        if (!got.isEmpty())
            QCOMPARE(got.first().evidenceGaps, explorations > 0 ? QStringList{"more detail"} : QStringList());
    }

    // An empty scope: there is nothing a rephrased search could find, so no exploration call is made.
    void nothingVisibleIsNotExplored()
    {
        seed({});
        m_llm->onJson(QStringLiteral("query_analysis"), queryReply({kLong}, {}, QStringLiteral("complex")));
        m_llm->onJson(QStringLiteral("exploration"), explorationReply(QStringLiteral("everything"), {"anything"}));
        auto m = open(true, {}, 3);
        QVERIFY(m->recall(kLong, deep()).isEmpty());
        QCOMPARE(m_llm->calls(QStringLiteral("query_analysis")), 1);
        QCOMPARE(m_llm->calls(QStringLiteral("exploration")), 0);
    }

    // Low confidence: the exploration sees the best excerpts, its refined query finds a record the
    // original query misses (decision 8), and what it says is missing is the first match's gap.
    void explorationRefinesTheSearch()
    {
        seed({{"The payment service went down on Friday.", "/", cosTo(0.3, 1)},
              {"Root cause: an expired certificate on the payment gateway.", "/", axis(5)}});
        setQuery(QStringLiteral("payment gateway root cause"), axis(5));
        m_llm->onJson(QStringLiteral("exploration"),
                      explorationReply(QStringLiteral("the root cause of the outage"), {"payment gateway root cause"}));
        auto m = open();
        QSignalSpy started(m.get(), &Memory::llmCallStarted);
        QSignalSpy done(m.get(), &Memory::llmCallCompleted);
        QSignalSpy failed(m.get(), &Memory::llmCallFailed);
        QSignalSpy completed(m.get(), &Memory::analysisCompleted);
        const auto got = m->recall(kShort, deep());
        QCOMPARE(steps(started), QStringList{"exploration"});
        QCOMPARE(steps(done), QStringList{"exploration"});
        QCOMPARE(failed.size(), 0);
        QCOMPARE(paths(completed), (QStringList{"query_analysis:skipped", "exploration:llm"}));
        const QString prompt = m_llm->lastPrompt(QStringLiteral("exploration"));
        QVERIFY(prompt.contains(QStringLiteral("The payment service went down on Friday.")));
        QVERIFY(prompt.contains(kShort));
        QCOMPARE(contents(got), (QStringList{"Root cause: an expired certificate on the payment gateway.",
                                             "The payment service went down on Friday."}));
        QCOMPARE(got.first().evidenceGaps, QStringList{"the root cause of the outage"});
        QVERIFY(got.last().evidenceGaps.isEmpty());
    }

    // An exploration that proposes nothing new ends the exploration, whatever the budget.
    void explorationWithoutNewQueriesStops()
    {
        seed({{"The payment service went down on Friday.", "/", cosTo(0.3, 1)}});
        m_llm->onJson(QStringLiteral("exploration"), explorationReply(QStringLiteral("none"), {kShort, "PAYMENT OUTAGE"}));
        auto m = open(true, {}, 3);
        const auto got = m->recall(kShort, deep());
        QCOMPARE(m_llm->calls(QStringLiteral("exploration")), 1);
        QCOMPARE(m_storage->searches().size(), 1);
        QCOMPARE(got.size(), 1);
        QVERIFY(got.first().evidenceGaps.isEmpty());
    }

    // ---- Failures ------------------------------------------------------------------------------

    // Query analysis fails or talks nonsense: the offline path, the same results, no exception.
    void queryAnalysisFailure_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("reply");
        QTest::addColumn<QString>("path");
        QTest::newRow("http 500") << 500 << QString() << "offline";
        QTest::newRow("http 401") << 401 << QString() << "offline";
        QTest::newRow("prose") << 200 << QStringLiteral("I think you should search for cats") << "offline";
        QTest::newRow("malformed json") << 200 << QStringLiteral("{scopes: [") << "offline";
        QTest::newRow("truncated json") << 200 << QStringLiteral("{\"queries\": [\"payment") << "offline";
        QTest::newRow("a list") << 200 << QStringLiteral("[\"/a\"]") << "offline";
        QTest::newRow("fenced json is fine") << 200 << QStringLiteral("```json\n{\"queries\": [\"payment outage\"]}\n```") << "llm";
        QTest::newRow("reference field names") << 200
                                               << QStringLiteral("{\"recall_queries\": [\"payment outage\"], \"suggested_scopes\": []}")
                                               << "llm";
        QTest::newRow("queries of the wrong type") << 200 << QStringLiteral("{\"queries\": 42, \"scopes\": \"/a\"}") << "offline";
    }
    void queryAnalysisFailure()
    {
        QFETCH(int, status);
        QFETCH(QString, reply);
        QFETCH(QString, path);
        seed({{"The payment service went down on Friday.", "/a", cosTo(0.9, 1)},
              {"Payments were retried automatically.", "/b", cosTo(0.85, 2)}});
        if (status != 200)
            m_llm->onError(QStringLiteral("query_analysis"), status);
        else
            m_llm->onText(QStringLiteral("query_analysis"), reply);
        auto m = open();
        QSignalSpy started(m.get(), &Memory::llmCallStarted);
        QSignalSpy completed(m.get(), &Memory::analysisCompleted);
        QSignalSpy failed(m.get(), &Memory::llmCallFailed);
        QList<MemoryMatch> got;
        try {
            got = m->recall(kLong, deep());
        } catch (const std::exception &e) {
            QFAIL(e.what());
        }
        // One analysis call (the provider itself may ask once more for a reply that is not JSON).
        QCOMPARE(steps(started), QStringList{"query_analysis"});
        QVERIFY(m_llm->calls(QStringLiteral("query_analysis")) >= 1);
        QCOMPARE(contents(got), (QStringList{"The payment service went down on Friday.", "Payments were retried automatically."}));
        QCOMPARE(completed.size(), 1);
        QCOMPARE(completed.first().at(1).toString(), path);
        QCOMPARE(failed.size(), path == QLatin1String("offline") ? 1 : 0);
        if (path == QLatin1String("offline")) {
            QVERIFY(!completed.first().at(2).toString().isEmpty());
            QCOMPARE(failed.first().at(0).toString(), QStringLiteral("query_analysis"));
        }
        // The offline path searches the query itself over the whole store.
        QCOMPARE(m_storage->searchedScopes(), QStringList{"/"});
    }

    // Exploration fails or talks nonsense: the results of the first search, no exception.
    void explorationFailure_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("reply");
        QTest::newRow("http 500") << 500 << QString();
        QTest::newRow("prose") << 200 << QStringLiteral("I think you should search for cats");
        QTest::newRow("malformed json") << 200 << QStringLiteral("{missing: [");
        QTest::newRow("a number") << 200 << QStringLiteral("42");
    }
    void explorationFailure()
    {
        QFETCH(int, status);
        QFETCH(QString, reply);
        seed({{"The payment service went down on Friday.", "/", cosTo(0.3, 1)}});
        if (status != 200)
            m_llm->onError(QStringLiteral("exploration"), status);
        else
            m_llm->onText(QStringLiteral("exploration"), reply);
        auto m = open(true, {}, 2);
        QSignalSpy started(m.get(), &Memory::llmCallStarted);
        QSignalSpy completed(m.get(), &Memory::analysisCompleted);
        QSignalSpy failed(m.get(), &Memory::llmCallFailed);
        QList<MemoryMatch> got;
        try {
            got = m->recall(kShort, deep());
        } catch (const std::exception &e) {
            QFAIL(e.what());
        }
        QCOMPARE(contents(got), QStringList{"The payment service went down on Friday."});
        QVERIFY(got.first().evidenceGaps.isEmpty());
        QCOMPARE(steps(started), QStringList{"exploration"}); // a failure ends the exploration despite budget 2
        QCOMPARE(m_storage->searches().size(), 1);
        QCOMPARE(paths(completed), (QStringList{"query_analysis:skipped", "exploration:defaults"}));
        QVERIFY(!completed.last().at(2).toString().isEmpty());
        QCOMPARE(steps(failed), QStringList{"exploration"});
    }

    // Only embedder and storage failures raise.
    void embedderFailureRaises()
    {
        seed({{"The payment service went down on Friday.", "/", cosTo(0.9, 1)}});
        m_llm->onJson(QStringLiteral("query_analysis"), queryReply({"payment outage"}));
        auto m = open();
        m_embedder->failWith(QStringLiteral("embedder down"));
        QSignalSpy queryFailed(m.get(), &Memory::queryFailed);
        QCOMPARE(errorOf([&] { m->recall(kLong, deep()); }).kind(), ErrorKind::Embedder);
        QCOMPARE(errorOf([&] { m->recall(kShort, deep()); }).kind(), ErrorKind::Embedder);
        QCOMPARE(queryFailed.size(), 2);
    }

    // ---- Filters on every search ---------------------------------------------------------------

    // Categories and privacy apply to the first search, to suggested scopes, to every recall query
    // and to the exploration's refined queries.
    void filtersApplyToEverySearch()
    {
        seed({{"Shared note about the outage.", "/a", cosTo(0.3, 1), day(2024, 6, 1), {"incident"}},
              {"Alice's private outage diary.", "/a", axis(2), day(2024, 6, 1), {"incident"}, "alice", true},
              {"Lunch menu mentioning the outage.", "/a", axis(3), day(2024, 6, 1), {"food"}},
              {"Bob's private note on the outage.", "/a", axis(4), day(2024, 6, 1), {"incident"}, "bob", true}});
        setQuery(QStringLiteral("private diary"), axis(2));
        setQuery(QStringLiteral("lunch menu"), axis(3));
        setQuery(QStringLiteral("bob note"), axis(4));
        m_llm->onJson(QStringLiteral("query_analysis"), queryReply({kLong, "private diary"}, {"/a"}));
        m_llm->onJson(QStringLiteral("exploration"), explorationReply(QStringLiteral("more"), {"lunch menu", "bob note"}));
        auto m = open();
        RecallOptions o = deep();
        o.categories = {"incident"};
        o.source = QStringLiteral("bob");
        const auto got = m->recall(kLong, o);
        QCOMPARE(m_llm->calls(QStringLiteral("exploration")), 1);
        QCOMPARE(m_storage->searches().size(), 4);
        for (const RecordFilter &f : m_storage->searches()) {
            QCOMPARE(f.categories, QStringList{"incident"});
            QVERIFY(f.applyPrivacy);
            QVERIFY(!f.includePrivate);
            QCOMPARE(f.source, QStringLiteral("bob"));
            QCOMPARE(f.scopes, QStringList{"/a"});
        }
        const QStringList found = contents(got);
        QVERIFY(found.contains(QStringLiteral("Shared note about the outage.")));
        QVERIFY(found.contains(QStringLiteral("Bob's private note on the outage.")));
        QVERIFY(!found.contains(QStringLiteral("Alice's private outage diary.")));
        QVERIFY(!found.contains(QStringLiteral("Lunch menu mentioning the outage.")));
    }

    // The limit applies to the merged results.
    void limitAppliesToTheMergedResults()
    {
        QList<Rec> records;
        for (int i = 0; i < 6; ++i)
            records << Rec{QStringLiteral("Outage note %1.").arg(i), i % 2 ? "/a" : "/b", cosTo(0.9 - i * 0.01, 1 + i % 5)};
        seed(records);
        setQuery(QStringLiteral("outage notes"), axis(0));
        m_llm->onJson(QStringLiteral("query_analysis"), queryReply({kLong, "outage notes"}, {"/a", "/b"}));
        auto m = open();
        const auto got = m->recall(kLong, deep({}, 3));
        QCOMPARE(contents(got), (QStringList{"Outage note 0.", "Outage note 1.", "Outage note 2."}));
        QCOMPARE(m_storage->searches().size(), 4);
    }
};

QTEST_GUILESS_MAIN(TestDeepRecall)
#include "test_deep_recall.moc"
