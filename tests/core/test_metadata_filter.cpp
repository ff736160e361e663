#include <mneme/core/error.h>
#include <mneme/core/memory_record.h>
#include <mneme/core/metadata_filter.h>
#include <mneme/core/record_filter.h>

#include <QtTest>

using namespace mneme;

// The metadata conditions of recall, forget and the storage's filters (LangGraph / Mem0 style).
class TestMetadataFilter : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void matches_data()
    {
        QTest::addColumn<QString>("filter");
        QTest::addColumn<QString>("metadata");
        QTest::addColumn<bool>("expected");
        const QString meta = QStringLiteral(
            R"({"status": "done", "priority": 3, "score": 0.5, "flag": true, "none": null, "tags": ["a", "b"], "due": "2024-05-03"})");
        QTest::newRow("empty filter") << "{}" << meta << true;
        QTest::newRow("null filter") << "null" << meta << true;
        QTest::newRow("equal string") << R"({"status": "done"})" << meta << true;
        QTest::newRow("equal string, other value") << R"({"status": "open"})" << meta << false;
        QTest::newRow("equal number, 3 == 3.0") << R"({"priority": 3.0})" << meta << true;
        QTest::newRow("number is not its text") << R"({"priority": "3"})" << meta << false;
        QTest::newRow("equal bool") << R"({"flag": true})" << meta << true;
        QTest::newRow("equal null needs the key") << R"({"none": null})" << meta << true;
        QTest::newRow("missing key is not equal to null") << R"({"absent": null})" << meta << false;
        QTest::newRow("equal list, element-wise") << R"({"tags": ["a", "b"]})" << meta << true;
        QTest::newRow("list in another order") << R"({"tags": ["b", "a"]})" << meta << false;
        QTest::newRow("$eq") << R"({"status": {"$eq": "done"}})" << meta << true;
        QTest::newRow("$ne other") << R"({"status": {"$ne": "open"}})" << meta << true;
        QTest::newRow("$ne same") << R"({"status": {"$ne": "done"}})" << meta << false;
        QTest::newRow("$ne on a missing key holds") << R"({"absent": {"$ne": 1}})" << meta << true;
        QTest::newRow("$gt") << R"({"priority": {"$gt": 2}})" << meta << true;
        QTest::newRow("$gt equal") << R"({"priority": {"$gt": 3}})" << meta << false;
        QTest::newRow("$gte equal") << R"({"priority": {"$gte": 3}})" << meta << true;
        QTest::newRow("$lt real") << R"({"score": {"$lt": 0.75}})" << meta << true;
        QTest::newRow("$lte") << R"({"score": {"$lte": 0.25}})" << meta << false;
        QTest::newRow("range") << R"({"priority": {"$gte": 2, "$lt": 5}})" << meta << true;
        QTest::newRow("range missed") << R"({"priority": {"$gte": 4, "$lt": 5}})" << meta << false;
        QTest::newRow("dates as text order in time") << R"({"due": {"$gte": "2024-05-01", "$lt": "2024-06-01"}})" << meta << true;
        QTest::newRow("a number and a text do not compare") << R"({"status": {"$gt": 1}})" << meta << false;
        QTest::newRow("comparison on a missing key") << R"({"absent": {"$lt": 10}})" << meta << false;
        QTest::newRow("$in") << R"({"status": {"$in": ["open", "done"]}})" << meta << true;
        QTest::newRow("$in missed") << R"({"status": {"$in": ["open"]}})" << meta << false;
        QTest::newRow("$in number") << R"({"priority": {"$in": [1, 3.0]}})" << meta << true;
        QTest::newRow("$nin") << R"({"status": {"$nin": ["open"]}})" << meta << true;
        QTest::newRow("$nin hit") << R"({"status": {"$nin": ["done"]}})" << meta << false;
        QTest::newRow("$nin on a missing key holds") << R"({"absent": {"$nin": [1]}})" << meta << true;
        QTest::newRow("$exists") << R"({"none": {"$exists": true}})" << meta << true;
        QTest::newRow("$exists false") << R"({"absent": {"$exists": false}})" << meta << true;
        QTest::newRow("$exists false, present") << R"({"status": {"$exists": false}})" << meta << false;
        QTest::newRow("every condition") << R"({"status": "done", "priority": {"$lt": 3}})" << meta << false;
        QTest::newRow("$and") << R"({"$and": [{"priority": {"$gt": 1}}, {"priority": {"$ne": 2}}]})" << meta << true;
        QTest::newRow("$and, one fails") << R"({"$and": [{"priority": {"$gt": 1}}, {"priority": {"$ne": 3}}]})" << meta << false;
        QTest::newRow("a dot is part of the key") << R"({"a.b": 1})"
                                                  << R"({"a": {"b": 1}, "a.b": 1})" << true;
        QTest::newRow("metadata not an object") << R"({"a": 1})"
                                                << "[]" << false;
        QTest::newRow("plain object value is equality") << R"({"o": {"x": 1}})"
                                                        << R"({"o": {"x": 1}})" << true;
    }
    void matches()
    {
        QFETCH(QString, filter);
        QFETCH(QString, metadata);
        QFETCH(bool, expected);
        const MetadataFilter f = MetadataFilter::parse(Json::parse(filter.toStdString()));
        QCOMPARE(f.matches(Json::parse(metadata.toStdString())), expected);
        // RecordFilter applies the same conditions to a record.
        RecordFilter rf;
        rf.metadata = Json::parse(filter.toStdString());
        MemoryRecord r = MemoryRecord::create(QStringLiteral("x"));
        r.metadata = Json::parse(metadata.toStdString());
        QCOMPARE(rf.matches(r), expected);
    }

    void refuses_data()
    {
        QTest::addColumn<QString>("filter");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("not an object") << "[1]"
                                       << "must be a JSON object";
        QTest::newRow("unknown operator") << R"({"a": {"$like": "x"}})"
                                          << "\"$like\" under \"a\" is not an operator";
        QTest::newRow("operators mixed with a key") << R"({"a": {"$gt": 1, "b": 2}})"
                                                    << "\"b\" under \"a\" is not an operator";
        QTest::newRow("$in without a list") << R"({"a": {"$in": "x"}})"
                                            << "takes a list";
        QTest::newRow("$exists without a boolean") << R"({"a": {"$exists": 1}})"
                                                   << "takes true or false";
        QTest::newRow("comparison with a list") << R"({"a": {"$gt": [1]}})"
                                                << "compares with a number or a string";
        QTest::newRow("operator at the top") << R"({"$gt": 1})"
                                             << "only \"$and\" may stand at the top";
        QTest::newRow("$and without a list") << R"({"$and": {"a": 1}})"
                                             << "takes a list of filter objects";
        QTest::newRow("$and of a non-object") << R"({"$and": [1]})"
                                              << "must be a JSON object";
        QTest::newRow("empty key") << R"({"": 1})"
                                   << "a key is empty";
    }
    void refuses()
    {
        QFETCH(QString, filter);
        QFETCH(QString, mentions);
        try {
            MetadataFilter::parse(Json::parse(filter.toStdString()));
            QFAIL("no error");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
            QVERIFY2(e.message().contains(mentions), qPrintable(e.message()));
            QVERIFY2(e.message().contains(QLatin1String("$gte")), qPrintable(e.message())); // says how to write one
        }
    }

    void bothJoinsDocuments()
    {
        const Json a = Json{{"k", 1}};
        const Json b = Json{{"k", Json{{"$lt", 5}}}};
        QCOMPARE(MetadataFilter::both(Json::object(), b), b);
        QCOMPARE(MetadataFilter::both(a, Json()), a);
        const MetadataFilter f = MetadataFilter::parse(MetadataFilter::both(a, b));
        QCOMPARE(f.conditions().size(), std::size_t(2));
        QVERIFY(f.matches(Json{{"k", 1}}));
        QVERIFY(!f.matches(Json{{"k", 6}}));
    }
};

QTEST_GUILESS_MAIN(TestMetadataFilter)
#include "test_metadata_filter.moc"
