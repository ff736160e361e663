// The offline graph extractor: sentences to triplets, without a model.

#include "memory/graph_extraction_p.h"

#include <QTest>

using namespace mneme;

namespace {

const QDateTime kAt(QDate(2023, 5, 8), QTime(13, 0), Qt::UTC);

QStringList triplets(const QString &text)
{
    QStringList out;
    for (const ExtractedTriplet &t : OfflineGraphExtractor::extract(text, kAt).triplets)
        out << QStringLiteral("%1 -%2-> %3").arg(t.source.name, t.label, t.destination.name);
    return out;
}

} // namespace

class TestGraphExtraction : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void sentences_data();
    void sentences();
    void typesAndExclusiveLabels();
    void queryNames();
};

void TestGraphExtraction::sentences_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("svo with a place") << "Alice lives in Lisbon." << QStringList{"Alice -lives_in-> Lisbon"};
    QTest::newRow("speaker and first person") << "Caroline: I went to a LGBTQ support group yesterday."
                                              << QStringList{"Caroline -went_to-> LGBTQ support group",
                                                             "Caroline went to LGBTQ support group -happened_on-> 7 May 2023"};
    QTest::newRow("no speaker: the user") << "I love painting." << QStringList{"user -love-> painting"};
    QTest::newRow("x is y's z") << "Maria is Tom's sister." << QStringList{"Tom -sister-> Maria"};
    QTest::newRow("y's z is x") << "Tom's favourite band is Radiohead." << QStringList{"Tom -favourite_band-> Radiohead"};
    QTest::newRow("my z is x") << "Melanie: My dog is Luna." << QStringList{"Melanie -dog-> Luna"};
    QTest::newRow("place later") << "Bob met Carol in Paris." << QStringList{"Bob -met-> Carol", "Bob -met_in-> Paris"};
    QTest::newRow("negation") << "Dan never visited Rome." << QStringList{"Dan -not_visited-> Rome"};
    QTest::newRow("auxiliaries") << "Alice has just moved to Porto." << QStringList{"Alice -moved_to-> Porto", "Alice -lives_in-> Porto"};
    QTest::newRow("a dated move") << "Alice moved to Porto in May 2024."
                                  << QStringList{"Alice -moved_to-> Porto", "Alice moved to Porto -happened_on-> May 2024", "Alice -lives_in-> Porto"};
    QTest::newRow("residence family") << "Bob resides in Oslo. Carol is based in Rome."
                                      << QStringList{"Bob -lives_in-> Oslo", "Carol -lives_in-> Rome"};
    QTest::newRow("a planned move is not a residence") << "Dan is moving to Berlin." << QStringList{"Dan -moving_to-> Berlin"};
    QTest::newRow("dated") << "Alice started a pottery class in May 2022."
                           << QStringList{"Alice -started-> pottery class", "Alice started pottery class -happened_on-> May 2022"};
    QTest::newRow("opening clause") << "Last week, Jon opened a dance studio." << QStringList{"Jon -opened-> dance studio", "Jon opened dance studio -happened_on-> week of 1 May 2023"};
    QTest::newRow("two sentences") << "Alice works at Acme. Bob likes jazz."
                                   << QStringList{"Alice -works_at-> Acme", "Bob -likes-> jazz"};
    QTest::newRow("unresolved pronoun") << "She lives in Oslo." << QStringList{};
    QTest::newRow("pronoun: the last person named") << "Caroline: I met Anna. She lives in Oslo."
                                                    << QStringList{"Caroline -met-> Anna", "Anna -lives_in-> Oslo"};
    QTest::newRow("the speaker is not she") << "Caroline: I love Oslo. She paints." << QStringList{"Caroline -love-> Oslo"};
    QTest::newRow("no subject") << "The weather is nice." << QStringList{};
    QTest::newRow("blank") << "   " << QStringList{};
}

void TestGraphExtraction::sentences()
{
    QFETCH(QString, text);
    QFETCH(QStringList, expected);
    QCOMPARE(triplets(text).join(QStringLiteral(" | ")), expected.join(QStringLiteral(" | ")));
}

void TestGraphExtraction::typesAndExclusiveLabels()
{
    const ExtractedGraph g = OfflineGraphExtractor::extract(QStringLiteral("Caroline: I live in Sweden since 2019."), kAt);
    QVERIFY(!g.triplets.isEmpty());
    QCOMPARE(g.triplets[0].label, QStringLiteral("lives_in")); // "live in": the residence label
    QVERIFY(g.triplets[0].exclusive);
    QCOMPARE(g.triplets[0].source.type, QStringLiteral("person"));
    QCOMPARE(g.triplets[0].destination.type, QStringLiteral("place"));
    QVERIFY(g.entities.contains(ExtractedEntity{QStringLiteral("Caroline"), QStringLiteral("person")}));
    QVERIFY(!OfflineGraphExtractor::isExclusiveLabel(QStringLiteral("likes")));
    QCOMPARE(OfflineGraphExtractor::normalizedLabel(QStringLiteral(" Works  AT ")), QStringLiteral("works_at"));
}

void TestGraphExtraction::queryNames()
{
    const QStringList names = OfflineGraphExtractor::queryNames(QStringLiteral("Where does Alice Smith's sister live?"));
    QVERIFY2(names.contains(QStringLiteral("Alice Smith")), qPrintable(names.join(QLatin1Char('|'))));
    QVERIFY(names.contains(QStringLiteral("sister")));
    QVERIFY(!names.contains(QStringLiteral("does")));
}

QTEST_GUILESS_MAIN(TestGraphExtraction)
#include "test_graph_extraction.moc"
