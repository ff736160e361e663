#include "memory/scoring_p.h"
#include <mneme/core/error.h>
#include <mneme/memory/memory_config.h>
#include <mneme/memory/memory_match.h>

#include <QtTest>

#include <cmath>

using namespace mneme;

namespace {

MemoryRecord aged(double importance, double ageDays, const QDateTime &now)
{
    MemoryRecord r = MemoryRecord::create(QStringLiteral("x"));
    r.importance = importance;
    r.createdAt = now.addMSecs(-qint64(ageDays * 86400000.0));
    return r;
}

} // namespace

class TestScoring : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // The block a match adds to a prompt: the score, the content, categories, and each metadata entry
    // that says something.
    void formatsForPrompts_data()
    {
        QTest::addColumn<QString>("metadata");
        QTest::addColumn<QStringList>("categories");
        QTest::addColumn<QString>("expected");
        QTest::newRow("plain") << "{}" << QStringList() << "- (score=0.84) Fact.";
        QTest::newRow("categories") << "{}" << QStringList{"a", "b"} << "- (score=0.84) Fact.\n  categories: a, b";
        QTest::newRow("lists joined, empty entries left out")
            << R"({"dates": [], "entities": ["Alice", "Bob"], "note": "", "topics": ["x"], "n": null, "o": {}})" << QStringList()
            << "- (score=0.84) Fact.\n  entities: Alice, Bob\n  topics: x";
        QTest::newRow("numbers and nested values") << R"({"count": 3, "deep": [{"a": 1}], "flag": true})" << QStringList()
                                                   << "- (score=0.84) Fact.\n  count: 3\n  deep: [{\"a\":1}]\n  flag: true";
    }
    void formatsForPrompts()
    {
        QFETCH(QString, metadata);
        QFETCH(QStringList, categories);
        QFETCH(QString, expected);
        mneme::MemoryMatch m;
        m.score = 0.8412;
        m.record.content = QStringLiteral("Fact.");
        m.record.categories = categories;
        m.record.metadata = mneme::Json::parse(metadata.toStdString());
        QCOMPARE(m.format(), expected);
    }

    // Acceptance case 3.
    void configDefaults()
    {
        const MemoryConfig c;
        QCOMPARE(c.recencyWeight, 0.3);
        QCOMPARE(c.semanticWeight, 0.5);
        QCOMPARE(c.importanceWeight, 0.2);
        QCOMPARE(c.recencyHalfLifeDays, 30.0);
        QCOMPARE(c.consolidationThreshold, 0.85);
        QCOMPARE(c.consolidationLimit, 5);
        QCOMPARE(c.defaultImportance, 0.5);
        QCOMPARE(c.batchDedupThreshold, 0.98);
        QCOMPARE(c.confidenceThresholdHigh, 0.8);
        QCOMPARE(c.confidenceThresholdLow, 0.5);
        QCOMPARE(c.complexQueryThreshold, 0.7);
        QCOMPARE(c.explorationBudget, 1);
        QCOMPARE(c.queryAnalysisThreshold, 200);
    }

    // Acceptance cases 4-7, as ranges and orderings. The reference has no keyword signal: with
    // keyword_weight 0 and its weights (which sum to 1) the score is its composite exactly.
    void composite_data()
    {
        QTest::addColumn<double>("semanticWeight");
        QTest::addColumn<double>("recencyWeight");
        QTest::addColumn<double>("importanceWeight");
        QTest::addColumn<double>("cosine");
        QTest::addColumn<double>("importance");
        QTest::addColumn<double>("ageDays");
        QTest::addColumn<double>("low");
        QTest::addColumn<double>("high");
        QTest::addColumn<QStringList>("reasons");
        QTest::newRow("case 4: new record") << 0.5 << 0.3 << 0.2 << 0.8 << 0.7 << 0.0 << 0.82 << 0.86
                                            << QStringList{"semantic", "recency", "importance"};
        QTest::newRow("case 5: old record") << 0.5 << 0.3 << 0.2 << 0.8 << 0.5 << 60.0 << 0.55 << 0.60
                                            << QStringList{"semantic"};
        QTest::newRow("case 6: semantic only") << 1.0 << 0.0 << 0.0 << 0.73 << 0.5 << 10.0 << 0.7299 << 0.7301
                                               << QStringList{"semantic", "recency"};
        QTest::newRow("case 7: old and low") << 0.5 << 0.3 << 0.2 << 0.8 << 0.1 << 60.0 << 0.0 << 1.0
                                             << QStringList{"semantic"};
        QTest::newRow("decision 7: negative cosine clipped") << 0.5 << 0.3 << 0.2 << -0.6 << 0.5 << 0.0 << 0.399 << 0.401
                                                             << QStringList{"recency"};
    }
    void composite()
    {
        QFETCH(double, semanticWeight);
        QFETCH(double, recencyWeight);
        QFETCH(double, importanceWeight);
        QFETCH(double, cosine);
        QFETCH(double, importance);
        QFETCH(double, ageDays);
        QFETCH(double, low);
        QFETCH(double, high);
        QFETCH(QStringList, reasons);
        MemoryConfig c;
        c.semanticWeight = semanticWeight;
        c.recencyWeight = recencyWeight;
        c.importanceWeight = importanceWeight;
        c.keywordWeight = 0;
        const QDateTime now = nowUtc();
        const MemoryMatch m = Scoring::match(aged(importance, ageDays, now), cosine, 0, now, c);
        QVERIFY2(m.score >= low && m.score <= high, qPrintable(QString::number(m.score)));
        QCOMPARE(m.matchReasons, reasons);
        QVERIFY(m.signalValues.semantic >= 0 && m.signalValues.semantic <= 1);
    }

    void decay_data()
    {
        QTest::addColumn<QString>("function");
        QTest::addColumn<double>("ageDays");
        QTest::addColumn<double>("expected");
        QTest::newRow("exp today") << "exponential" << 0.0 << 1.0;
        QTest::newRow("exp half-life") << "exponential" << 30.0 << 0.5;
        QTest::newRow("exp two half-lives") << "exponential" << 60.0 << 0.25;
        QTest::newRow("exp future is today") << "exponential" << -5.0 << 1.0;
        QTest::newRow("linear today") << "linear" << 0.0 << 1.0;
        QTest::newRow("linear half-life") << "linear" << 30.0 << 0.5;
        QTest::newRow("linear floor") << "linear" << 90.0 << 0.0;
    }
    void decay()
    {
        QFETCH(QString, function);
        QFETCH(double, ageDays);
        QFETCH(double, expected);
        MemoryConfig c;
        c.decayFunction = function;
        QVERIFY(qAbs(Scoring::decay(ageDays, c) - expected) < 1e-9);
    }

    void keywordSignalAndReason()
    {
        MemoryConfig c;
        c.keywordWeight = 0.4;
        const QDateTime now = nowUtc();
        const MemoryMatch m = Scoring::match(aged(0.5, 100, now), 0.0, 0.5, now, c);
        QCOMPARE(m.matchReasons, QStringList{QStringLiteral("keyword")});
        // The weighted mean of the four signals.
        QVERIFY(qAbs(m.score - (0.4 * 0.5 + 0.3 * std::pow(0.5, 100 / 30.0) + 0.2 * 0.5) / (0.5 + 0.4 + 0.3 + 0.2)) < 1e-9);
        QVERIFY(qAbs(m.signalValues.relevance - 0.4 * 0.5 / (0.5 + 0.4)) < 1e-12);
    }

    // Scores stay within 0..1 whatever the signals and weights (the weighted mean), and are 1 only
    // when every weighed signal is.
    void scoresStayInTheUnitInterval_data()
    {
        QTest::addColumn<double>("semanticWeight");
        QTest::addColumn<double>("keywordWeight");
        QTest::addColumn<double>("recencyWeight");
        QTest::addColumn<double>("importanceWeight");
        QTest::newRow("defaults") << 0.5 << 0.5 << 0.3 << 0.2;
        QTest::newRow("all weights 1") << 1.0 << 1.0 << 1.0 << 1.0;
        QTest::newRow("keyword only") << 0.0 << 1.0 << 0.0 << 0.0;
        QTest::newRow("semantic only") << 1.0 << 0.0 << 0.0 << 0.0;
        QTest::newRow("no recency") << 0.7 << 0.3 << 0.0 << 0.2;
    }
    void scoresStayInTheUnitInterval()
    {
        QFETCH(double, semanticWeight);
        QFETCH(double, keywordWeight);
        QFETCH(double, recencyWeight);
        QFETCH(double, importanceWeight);
        MemoryConfig c;
        c.semanticWeight = semanticWeight;
        c.keywordWeight = keywordWeight;
        c.recencyWeight = recencyWeight;
        c.importanceWeight = importanceWeight;
        const QDateTime now = nowUtc();
        QList<MemoryMatch> all;
        for (double cosine : {-1.0, 0.0, 0.3, 1.0, 1.5})
            for (double keyword : {0.0, 0.4, 1.0, 2.0})
                for (double importance : {0.0, 1.0})
                    for (double age : {0.0, 400.0})
                        all << Scoring::match(aged(importance, age, now), cosine, keyword, now, c);
        for (const MemoryMatch &m : std::as_const(all)) {
            QVERIFY(m.score >= 0 && m.score <= 1 + 1e-12);
            QVERIFY(m.signalValues.relevance >= 0 && m.signalValues.relevance <= 1 + 1e-12);
        }
        Scoring::weighByRelevance(all, c);
        double best = 0;
        for (const MemoryMatch &m : std::as_const(all)) {
            QVERIFY(m.score >= 0 && m.score <= 1 + 1e-12);
            best = std::max(best, m.score);
        }
        QVERIFY(qAbs(best - 1.0) < 1e-12); // signals all at 1 (or clipped to it)
    }

    // The floor looks at relevance only: recency and importance never make a record relevant. A recall
    // passes when one candidate reaches the floor; then candidates at half of it come along.
    void floorJudgesRelevanceOnly()
    {
        MemoryConfig c;
        const QDateTime now = nowUtc();
        const MemoryMatch unrelated = Scoring::match(aged(1.0, 0, now), 0.0, 0.0, now, c);
        QVERIFY(!Scoring::anyRelevantEnough({&unrelated.signalValues}, 0.0));
        QVERIFY(!Scoring::relevantEnough(unrelated.signalValues, 0.0));
        QVERIFY(unrelated.score > 0.3); // new and important: a high composite, still not returned
        const MemoryMatch weak = Scoring::match(aged(0.5, 900, now), 0.2, 0.1, now, c);
        QVERIFY(qAbs(weak.signalValues.relevance - 0.15) < 1e-12);
        QVERIFY(Scoring::anyRelevantEnough({&weak.signalValues}, 0.15));
        QVERIFY(!Scoring::anyRelevantEnough({&weak.signalValues, &unrelated.signalValues}, 0.16));
        QCOMPARE(Scoring::kCompanionShare, 0.5);
        QVERIFY(Scoring::relevantEnough(weak.signalValues, 0.30));
        QVERIFY(!Scoring::relevantEnough(weak.signalValues, 0.31));
    }

    // The keyword signal that ranks is the evidence over the best evidence among the candidates; the
    // relevance (and so the floor) keeps the absolute evidence.
    void relativeKeywords()
    {
        MemoryConfig c;
        const QDateTime now = nowUtc();
        MemoryMatch a = Scoring::match(aged(0.5, 1, now), 0.1, 0.4, now, c);
        MemoryMatch b = Scoring::match(aged(0.5, 1, now), 0.1, 0.1, now, c);
        MemoryMatch none = Scoring::match(aged(0.5, 1, now), 0.3, 0.0, now, c);
        Scoring::relativeKeywords({&a.signalValues, &b.signalValues, &none.signalValues});
        QCOMPARE(a.signalValues.keyword, 1.0);
        QVERIFY(qAbs(b.signalValues.keyword - 0.25) < 1e-12);
        QCOMPARE(none.signalValues.keyword, 0.0);
        QCOMPARE(a.signalValues.keywordEvidence, 0.4);
        QVERIFY(qAbs(a.signalValues.relevance - 0.25) < 1e-12); // (0.1 + 0.4) / 2
    }

    void accessBoost()
    {
        MemoryConfig c;
        c.accessBoost = 0.1;
        const QDateTime now = nowUtc();
        MemoryRecord r = aged(0.5, 0, now);
        r.accessCount = 3; // log2(4) = 2 -> +0.2
        QVERIFY(qAbs(Scoring::signalsFor(r, 0.5, 0, now, c).importance - 0.7) < 1e-9);
        r.accessCount = 1000;
        QCOMPARE(Scoring::signalsFor(r, 0.5, 0, now, c).importance, 1.0);
        c.accessBoost = 0;
        QCOMPARE(Scoring::signalsFor(r, 0.5, 0, now, c).importance, 0.5);
    }

    void weighByRelevance()
    {
        MemoryConfig c; // 0.5 semantic, 0.5 keyword, 0.3 recency, 0.2 importance
        const QDateTime now = nowUtc();
        // One candidate: the plain composite.
        QList<MemoryMatch> one{Scoring::match(aged(0.7, 0, now), 0.8, 0, now, c)};
        const double composite = one.first().score;
        Scoring::weighByRelevance(one, c);
        QVERIFY(qAbs(one.first().score - composite) < 1e-12);
        // Equally relevant candidates: the composite orders them (recency decides).
        QList<MemoryMatch> tie{Scoring::match(aged(0.5, 90, now), 0.6, 0, now, c), Scoring::match(aged(0.5, 0, now), 0.6, 0, now, c)};
        const double oldComposite = tie[0].score, newComposite = tie[1].score;
        Scoring::weighByRelevance(tie, c);
        QVERIFY(qAbs(tie[0].score - oldComposite) < 1e-12);
        QVERIFY(qAbs(tie[1].score - newComposite) < 1e-12);
        QVERIFY(tie[1].score > tie[0].score);
        // A clearly relevant old record and a weakly related new one: the composite would put the new
        // one first; weighed by relevance, the relevant one stays first.
        QList<MemoryMatch> drown{Scoring::match(aged(0.5, 300, now), 0.6, 0.8, now, c), Scoring::match(aged(0.5, 0, now), 0.2, 0, now, c)};
        QVERIFY(drown[1].score > drown[0].score - 0.5); // sanity of the setup below
        const double before0 = drown[0].score, before1 = drown[1].score;
        Scoring::weighByRelevance(drown, c);
        QVERIFY(drown[0].score > drown[1].score);
        QVERIFY(drown[0].score <= before0 + 1e-12);
        QVERIFY(drown[1].score < before1);
        const double rel1 = 0.2 / 2, best = (0.6 + 0.8) / 2; // relevance: the mean of semantic and keyword
        QVERIFY(qAbs(drown[1].score - (0.5 * 0.2 + (0.3 * 1.0 + 0.2 * 0.5) * std::pow(rel1 / best, 8)) / 1.5) < 1e-9);
    }

    // standing_exponent: how fast recency and importance fade below the best candidate's relevance.
    // A new record 80 % as relevant as an old one: at the default 8 the relevant one stays first; with
    // the exponent 0 recency counts at its full weight and lifts the new one over it.
    void standingExponent_data()
    {
        QTest::addColumn<double>("exponent");
        QTest::addColumn<bool>("newFirst");
        QTest::newRow("0: full weight") << 0.0 << true;
        QTest::newRow("2") << 2.0 << true;
        QTest::newRow("8 (default)") << 8.0 << false;
        QTest::newRow("32") << 32.0 << false;
    }

    void standingExponent()
    {
        QFETCH(double, exponent);
        QFETCH(bool, newFirst);
        MemoryConfig c;
        QCOMPARE(c.standingExponent, 8.0);
        c.standingExponent = exponent;
        const QDateTime now = nowUtc();
        QList<MemoryMatch> m{Scoring::match(aged(0.5, 365, now), 0.5, 0.5, now, c), Scoring::match(aged(0.5, 0, now), 0.4, 0.4, now, c)};
        Scoring::weighByRelevance(m, c);
        QCOMPARE(m[1].score > m[0].score, newFirst);
        const double share = std::pow(0.4 / 0.5, exponent);
        QVERIFY(qAbs(m[1].score - (0.5 * 0.4 + 0.5 * 0.4 + (0.3 * 1.0 + 0.2 * 0.5) * share) / 1.5) < 1e-9);
        // The best candidate's standing counts in full at any exponent.
        QVERIFY(qAbs(m[0].score - (0.5 * 0.5 + 0.5 * 0.5 + 0.3 * Scoring::decay(365, c) + 0.2 * 0.5) / 1.5) < 1e-9);
    }

    // A query names a speaker by the whole name, in any case; not by a part of a word or of the name.
    void namesSpeaker_data()
    {
        QTest::addColumn<QString>("query");
        QTest::addColumn<QString>("speaker");
        QTest::addColumn<bool>("named");
        QTest::newRow("the name") << "What does Melanie paint?"
                                  << "Melanie" << true;
        QTest::newRow("any case") << "what does melanie paint"
                                  << "Melanie" << true;
        QTest::newRow("possessive") << "Melanie's kids"
                                    << "Melanie" << true;
        QTest::newRow("at the end") << "hobbies of Jon"
                                    << "Jon" << true;
        QTest::newRow("two words") << "what did Dr. Ruth Smith say"
                                   << "Ruth Smith" << true;
        QTest::newRow("part of a word") << "What did Jonathan say?"
                                        << "Jon" << false;
        QTest::newRow("word within a name") << "Where is Smithfield?"
                                            << "Smith" << false;
        QTest::newRow("another person") << "What does Caroline paint?"
                                        << "Melanie" << false;
        QTest::newRow("half of the name") << "what did Ruth say"
                                          << "Ruth Smith" << false;
        QTest::newRow("accented") << "Was macht Zoë?"
                                  << "Zoë" << true;
        QTest::newRow("blank speaker") << "anything"
                                       << "  " << false;
    }
    void namesSpeaker()
    {
        QFETCH(QString, query);
        QFETCH(QString, speaker);
        QFETCH(bool, named);
        QCOMPARE(Scoring::namesSpeaker(query, speaker), named);
    }

    void asks_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("asks");
        QTest::newRow("question") << "Mel: Did you go?" << true;
        QTest::newRow("trailing spaces") << "Did you go?  \n"
                                         << true;
        QTest::newRow("statement, then a question") << "I went. Did you?" << true;
        QTest::newRow("question, then a statement") << "Guess what? I went." << false;
        QTest::newRow("statement") << "I went." << false;
        QTest::newRow("empty") << "" << false;
    }
    void asks()
    {
        QFETCH(QString, text);
        QFETCH(bool, asks);
        QCOMPARE(Scoring::asks(text), asks);
    }

    // A conversation turn (metadata.speaker) is lifted when the query names its speaker and lowered
    // when it asks or says little; other records are left as they are; scores stay at most 1.
    void turnFactor()
    {
        // Turns of 20 words or more, which their length does not lower.
        const QString story = QStringLiteral("Melanie: I painted a sunset over the lake last weekend with the kids, and we "
                                             "hung it in the hall by the door.");
        const QString question = QStringLiteral("Melanie: Do you paint too, or do you mostly draw with pencils and ink "
                                                "when you have a free afternoon at home?");
        QVERIFY(Scoring::wordCount(story) >= Scoring::kFullTurnWords);
        QVERIFY(Scoring::wordCount(question) >= Scoring::kFullTurnWords);
        MemoryRecord said = MemoryRecord::create(story);
        said.metadata = Json{{"speaker", "Melanie"}};
        MemoryRecord asked = MemoryRecord::create(question);
        asked.metadata = Json{{"speaker", "Melanie"}};
        MemoryRecord brief = MemoryRecord::create(QStringLiteral("Melanie: I paint sunsets mostly."));
        brief.metadata = Json{{"speaker", "Melanie"}};
        MemoryRecord note = MemoryRecord::create(QStringLiteral("Melanie: do you paint?"));
        MemoryRecord odd = note;
        odd.metadata = Json{{"speaker", 3}};
        const QString query = QStringLiteral("What does Melanie paint?");
        QCOMPARE(Scoring::turnFactor(said, query), 1.0 + Scoring::kNamedSpeakerBoost);
        QCOMPARE(Scoring::turnFactor(said, QStringLiteral("What does Caroline paint?")), 1.0);
        QVERIFY(qAbs(Scoring::turnFactor(asked, query) - (1.0 + Scoring::kNamedSpeakerBoost) * (1.0 - Scoring::kQuestionTurnDiscount)) < 1e-12);
        QCOMPARE(Scoring::turnFactor(asked, QStringLiteral("paint")), 1.0 - Scoring::kQuestionTurnDiscount);
        // Five words: lowered by half, the most its length can lower it.
        QCOMPARE(Scoring::turnFactor(brief, QStringLiteral("paint")), Scoring::kShortTurnFloor);
        QVERIFY(qAbs(Scoring::turnFactor(brief, query) - (1.0 + Scoring::kNamedSpeakerBoost) * Scoring::kShortTurnFloor) < 1e-12);
        // Not turns: as short as they are, nothing changes.
        QCOMPARE(Scoring::turnFactor(note, query), 1.0);
        QCOMPARE(Scoring::turnFactor(odd, query), 1.0);
        QVERIFY(Scoring::isNamedSpeakersTurn(said, query));
        QVERIFY(!Scoring::isNamedSpeakersTurn(note, query));
        QVERIFY(Scoring::isTurn(asked));
        QVERIFY(!Scoring::isTurn(note));
        QVERIFY(!Scoring::isTurn(odd));

        QList<MemoryMatch> matches(4);
        matches[0].record = said;
        matches[0].score = 0.9;
        matches[1].record = asked;
        matches[1].score = 0.5;
        matches[2].record = note;
        matches[2].score = 0.4;
        matches[3].record = brief;
        matches[3].score = 0.9;
        Scoring::weighTurns(matches, query);
        QCOMPARE(matches[0].score, 1.0); // 0.9 * 1.2, at most 1
        QVERIFY(qAbs(matches[1].score - 0.5 * 1.2 * 0.8) < 1e-12);
        QCOMPARE(matches[2].score, 0.4);
        QVERIFY(qAbs(matches[3].score - 0.9 * 1.2 * 0.5) < 1e-12);
    }

    // A turn's length: words are runs of non-space characters (the speaker's "Name:" is one); the
    // factor is sqrt(words / 20), between a half (5 words or fewer) and 1 (20 or more).
    void shortTurnFactor_data()
    {
        QTest::addColumn<QString>("content");
        QTest::addColumn<int>("words");
        QTest::addColumn<double>("factor");
        const auto words = [](int n) {
            QStringList w;
            for (int i = 0; i < n; ++i)
                w << QStringLiteral("w%1").arg(i);
            return w.join(QLatin1Char(' '));
        };
        QTest::newRow("empty") << QString() << 0 << 0.5;
        QTest::newRow("spaces only") << QStringLiteral(" \t\n ") << 0 << 0.5;
        QTest::newRow("a short reply") << QStringLiteral("Bob: Yes, twice!") << 3 << 0.5;
        QTest::newRow("five words, at the floor") << words(5) << 5 << 0.5;
        QTest::newRow("ten words") << words(10) << 10 << std::sqrt(0.5);
        QTest::newRow("any whitespace separates")
            << QStringLiteral("  Ann:\tone\ntwo  three\u00a0four five six\r\nseven eight nine ten  ") << 11 << std::sqrt(11.0 / 20);
        QTest::newRow("nineteen words") << words(19) << 19 << std::sqrt(19.0 / 20);
        QTest::newRow("twenty words") << words(20) << 20 << 1.0;
        QTest::newRow("sixty words") << words(60) << 60 << 1.0;
    }

    void shortTurnFactor()
    {
        QFETCH(QString, content);
        QFETCH(int, words);
        QFETCH(double, factor);
        QCOMPARE(Scoring::wordCount(content), words);
        QCOMPARE(Scoring::wordCount(content, Scoring::kFullTurnWords), std::min(words, Scoring::kFullTurnWords));
        QCOMPARE(Scoring::wordCount(content, 1), std::min(words, 1));
        QVERIFY2(qAbs(Scoring::shortTurnFactor(content) - factor) < 1e-12, qPrintable(QString::number(Scoring::shortTurnFactor(content))));
    }

    void cosine()
    {
        QCOMPARE(Scoring::cosine({1, 0}, {1, 0}), 1.0);
        QCOMPARE(Scoring::cosine({1, 0}, {0, 1}), 0.0);
        QCOMPARE(Scoring::cosine({1, 0}, {1, 0, 0}), 0.0);
        QCOMPARE(Scoring::cosine({0, 0}, {1, 0}), 0.0);
        QVERIFY(qAbs(Scoring::cosine({2, 0}, {1, 1}) - std::sqrt(0.5)) < 1e-6); // float kernels
    }
};

QTEST_GUILESS_MAIN(TestScoring)
#include "test_scoring.moc"
