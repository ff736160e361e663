#include <mneme/core/error.h>
#include <mneme/core/json_reply.h>

#include <QtTest>

using namespace mneme;

namespace {

QString dump(const Json &j)
{
    return QString::fromStdString(j.dump());
}

Json json(const QByteArray &text)
{
    return Json::parse(text.toStdString());
}

} // namespace

// The slot bodies follow the class rather than sitting inside it: moc (Qt 6.4) misreads some raw
// string literals (with '#' or backslashes in them) and would then lose a class whose bodies hold them.
class TestJsonReply : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void extract_data();
    void extract();
    void extract_fails_data();
    void extract_fails();
    void extract_manyBraces();
    void validate_data();
    void validate();
    void instructionFor();
};

void TestJsonReply::extract_data()
{
    QTest::addColumn<QString>("reply");
    QTest::addColumn<QByteArray>("expected");

    QTest::newRow("plain object") << R"({"name":"Ada","age":36})" << QByteArray(R"({"name":"Ada","age":36})");
    QTest::newRow("surrounding white space") << "\n\n  {\"a\": 1}\n  " << QByteArray(R"({"a":1})");
    QTest::newRow("json fence with chatter")
        << "Sure! Here is the result:\n\n```json\n{\n  \"a\": [1, 2]\n}\n```\n\nLet me know if you need more."
        << QByteArray(R"({"a":[1,2]})");
    QTest::newRow("JSON fence upper case") << "```JSON\n{\"a\":1}\n```" << QByteArray(R"({"a":1})");
    QTest::newRow("plain fence") << "Result:\n```\n[1, 2, 3]\n```" << QByteArray("[1,2,3]");
    QTest::newRow("inline fence") << "Here: ```json {\"a\":1}``` done" << QByteArray(R"({"a":1})");
    QTest::newRow("json fence preferred over plain fence")
        << "Example input:\n```\n{\"example\":true}\n```\nMy answer:\n```json\n{\"answer\":true}\n```"
        << QByteArray(R"({"answer":true})");
    QTest::newRow("code fence skipped")
        << "```python\nprint({'a': 1})\n```\n```json\n{\"a\":1}\n```" << QByteArray(R"({"a":1})");
    QTest::newRow("unparsable fence, then an object")
        << "```json\n{broken: yes\n```\nSorry, here it is properly: {\"a\":1}" << QByteArray(R"({"a":1})");
    QTest::newRow("unterminated fence") << "```json\n{\"a\":1}\n"
                                        << QByteArray(R"({"a":1})");
    QTest::newRow("think block") << "<think>The user wants {\"wrong\":true}, maybe [1,2].</think>\n{\"right\":true}"
                                 << QByteArray(R"({"right":true})");
    QTest::newRow("think block then fence")
        << "<think>\nLet me think.\n{\n  \"draft\": 1\n}\n</think>\n\n```json\n{\"final\":2}\n```"
        << QByteArray(R"({"final":2})");
    QTest::newRow("two think blocks") << "<think>{\"a\":1}</think>x<THINK>[2]</THINK> [3]" << QByteArray("[3]");
    QTest::newRow("closing tag only") << "I must output {\"bad\":1} no wait...</think>\n{\"good\":1}"
                                      << QByteArray(R"({"good":1})");
    QTest::newRow("unterminated think") << "<think>\n{\"a\":1}" << QByteArray(R"({"a":1})");
    QTest::newRow("chatter before and after")
        << "The answer is {\"a\": [1, {\"b\": null}]} as requested. Anything else?"
        << QByteArray(R"({"a":[1,{"b":null}]})");
    QTest::newRow("braces inside strings")
        << "Result: {\"text\": \"a } and { b ] [\", \"n\": {\"m\": \"]\"}} -- done }"
        << QByteArray(R"({"text":"a } and { b ] [","n":{"m":"]"}})");
    // (Not raw strings: moc mis-reads backslashes inside them.)
    QTest::newRow("escaped quotes") << "x {\"q\": \"he said \\\"}\\\" and \\\\\", \"r\": 1} y"
                                    << QByteArray("{\"q\":\"he said \\\"}\\\" and \\\\\",\"r\":1}");
    QTest::newRow("array reply") << "Tags: [\"x\", \"y\"]." << QByteArray(R"(["x","y"])");
    QTest::newRow("array of objects") << "[{\"a\":1},{\"a\":2}]" << QByteArray(R"([{"a":1},{"a":2}])");
    QTest::newRow("two objects: first wins") << "{\"a\":1}\n{\"b\":2}" << QByteArray(R"({"a":1})");
    QTest::newRow("invalid candidate, then valid")
        << "Use {name} as the placeholder. Result: {\"name\":\"x\"}" << QByteArray(R"({"name":"x"})");
    QTest::newRow("mismatched bracket first") << "[oops} then {\"a\":1}" << QByteArray(R"({"a":1})");
    QTest::newRow("unclosed brace first") << "{ unfinished thought... {\"a\":1}" << QByteArray(R"({"a":1})");
    QTest::newRow("invalid outer, valid inner") << "{ note: {\"a\":1} }" << QByteArray(R"({"a":1})");
    QTest::newRow("comments in json") << "{\n  \"a\": 1 // the count\n}" << QByteArray(R"({"a":1})");
    QTest::newRow("unicode") << QString::fromUtf8("Voilà : {\"name\":\"café ✓ 日本\"}")
                             << QByteArray(R"({"name":"café ✓ 日本"})");
    QTest::newRow("bare number") << "42" << QByteArray("42");
    QTest::newRow("bare string") << " \"x\" " << QByteArray(R"("x")");
    QTest::newRow("bare true") << "true\n"
                               << QByteArray("true");
    QTest::newRow("bare null") << "null" << QByteArray("null");
    QTest::newRow("empty object") << "Nothing to report: {}" << QByteArray("{}");
}

void TestJsonReply::extract()
{
    QFETCH(QString, reply);
    QFETCH(QByteArray, expected);
    try {
        QCOMPARE(dump(JsonReply::extract(reply)), dump(json(expected)));
    } catch (const Error &e) {
        QFAIL(qPrintable(e.message()));
    }
}

void TestJsonReply::extract_fails_data()
{
    QTest::addColumn<QString>("reply");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("garbage") << "I cannot help with that."
                             << "I cannot help with that.";
    QTest::newRow("empty") << ""
                           << "empty";
    QTest::newRow("white space") << " \n\t "
                                 << "empty";
    QTest::newRow("scalar in chatter") << "The answer is 42."
                                       << "The answer is 42.";
    QTest::newRow("unbalanced") << "{\"a\": 1"
                                << "{\"a\": 1";
    QTest::newRow("not json in braces") << "{a: b} [c d]"
                                        << "{a: b} [c d]";
    QTest::newRow("only thinking") << "<think>{\"a\":1}</think>"
                                   << "<think>";
    QTest::newRow("fence of prose") << "```\nno json here\n```"
                                    << "no json here";
    QTest::newRow("long garbage") << "Lorem ipsum dolor sit amet " + QString(500, QLatin1Char('z'))
                                  << "Lorem ipsum dolor sit amet zzz";
}

void TestJsonReply::extract_fails()
{
    QFETCH(QString, reply);
    QFETCH(QString, mentions);
    try {
        const Json j = JsonReply::extract(reply);
        QFAIL(qPrintable(QStringLiteral("extract() returned %1").arg(dump(j))));
    } catch (const Error &e) {
        QCOMPARE(e.kind(), ErrorKind::MalformedReply);
        QVERIFY2(e.message().contains(mentions), qPrintable(e.message()));
        QVERIFY2(e.message().size() < 200, qPrintable(e.message())); // a short quote, not the whole reply
    }
}

void TestJsonReply::extract_manyBraces()
{
    // Thousands of unclosed braces must not make the scan crawl.
    const QString reply = QString(20000, QLatin1Char('{')) + QStringLiteral("{\"a\":1}");
    QElapsedTimer t;
    t.start();
    QCOMPARE(dump(JsonReply::extract(reply)), QStringLiteral(R"({"a":1})"));
    QVERIFY2(t.elapsed() < 10000, qPrintable(QString::number(t.elapsed())));
}

void TestJsonReply::validate_data()
{
    QTest::addColumn<QByteArray>("value");
    QTest::addColumn<QByteArray>("schema");
    QTest::addColumn<QStringList>("expected");

    // type
    QTest::newRow("string ok") << QByteArray(R"("x")") << QByteArray(R"({"type":"string"})") << QStringList{};
    QTest::newRow("string vs number") << QByteArray("1") << QByteArray(R"({"type":"string"})")
                                      << QStringList{"$: expected string, got number"};
    QTest::newRow("object vs array") << QByteArray("[]") << QByteArray(R"({"type":"object"})")
                                     << QStringList{"$: expected object, got array"};
    QTest::newRow("array vs object") << QByteArray("{}") << QByteArray(R"({"type":"array"})")
                                     << QStringList{"$: expected array, got object"};
    QTest::newRow("boolean vs null") << QByteArray("null") << QByteArray(R"({"type":"boolean"})")
                                     << QStringList{"$: expected boolean, got null"};
    QTest::newRow("null ok") << QByteArray("null") << QByteArray(R"({"type":"null"})") << QStringList{};
    QTest::newRow("type list ok") << QByteArray("null") << QByteArray(R"({"type":["string","null"]})")
                                  << QStringList{};
    QTest::newRow("type list mismatch") << QByteArray("true") << QByteArray(R"({"type":["string","number","null"]})")
                                        << QStringList{"$: expected string, number or null, got boolean"};
    QTest::newRow("integer 3") << QByteArray("3") << QByteArray(R"({"type":"integer"})") << QStringList{};
    QTest::newRow("integer 3.0") << QByteArray("3.0") << QByteArray(R"({"type":"integer"})") << QStringList{};
    QTest::newRow("integer -7") << QByteArray("-7") << QByteArray(R"({"type":"integer"})") << QStringList{};
    QTest::newRow("integer 3.5") << QByteArray("3.5") << QByteArray(R"({"type":"integer"})")
                                 << QStringList{"$: expected integer, got number"};
    QTest::newRow("integer vs string") << QByteArray(R"("3")") << QByteArray(R"({"type":"integer"})")
                                       << QStringList{"$: expected integer, got string"};
    QTest::newRow("number accepts integer") << QByteArray("3") << QByteArray(R"({"type":"number"})")
                                            << QStringList{};
    QTest::newRow("number 2.5") << QByteArray("2.5") << QByteArray(R"({"type":"number"})") << QStringList{};
    QTest::newRow("type mismatch hides the rest")
        << QByteArray("5") << QByteArray(R"({"type":"string","minLength":3,"enum":["abc"]})")
        << QStringList{"$: expected string, got number"};

    // properties, required, additionalProperties
    const QByteArray person = R"({"type":"object","properties":{"name":{"type":"string"},
        "tags":{"type":"array","items":{"type":"string"}}},"required":["name"]})";
    QTest::newRow("person ok") << QByteArray(R"({"name":"Ada","tags":["a"],"extra":1})") << person << QStringList{};
    QTest::newRow("tags[2]") << QByteArray(R"({"name":"Ada","tags":["a","b",3]})") << person
                             << QStringList{"$.tags[2]: expected string, got number"};
    QTest::newRow("missing required") << QByteArray(R"({"tags":[]})") << person
                                      << QStringList{R"($: missing required property "name")"};
    QTest::newRow("several problems")
        << QByteArray(R"({"tags":[1,"b",true]})") << person
        << QStringList{R"($: missing required property "name")", "$.tags[0]: expected string, got number",
                       "$.tags[2]: expected string, got boolean"};
    QTest::newRow("nested required")
        << QByteArray(R"({"user":{"name":"x"}})")
        << QByteArray(R"({"properties":{"user":{"type":"object","required":["id","name"]}}})")
        << QStringList{R"($.user: missing required property "id")"};
    QTest::newRow("additionalProperties false")
        << QByteArray(R"({"x":{"a":1,"y":2,"z":3}})")
        << QByteArray(R"({"properties":{"x":{"properties":{"a":{}},"additionalProperties":false}}})")
        << QStringList{R"($.x: unexpected property "y")", R"($.x: unexpected property "z")"};
    QTest::newRow("additionalProperties absent")
        << QByteArray(R"({"a":1,"y":2})") << QByteArray(R"({"properties":{"a":{"type":"integer"}}})")
        << QStringList{};
    QTest::newRow("additionalProperties schema")
        << QByteArray(R"({"a":1,"y":"s","z":2})")
        << QByteArray(R"({"properties":{"a":{}},"additionalProperties":{"type":"number"}})")
        << QStringList{"$.y: expected number, got string"};
    QTest::newRow("patternProperties")
        << QByteArray(R"({"x_1":1,"x_2":"s","other":true})")
        << QByteArray(R"({"patternProperties":{"^x_":{"type":"integer"}},"additionalProperties":false})")
        << QStringList{R"($: unexpected property "other")", "$.x_2: expected integer, got string"};
    QTest::newRow("property name with a space")
        << QByteArray(R"({"my key":1})") << QByteArray(R"({"properties":{"my key":{"type":"string"}}})")
        << QStringList{R"($["my key"]: expected string, got number)"};
    QTest::newRow("false schema") << QByteArray(R"({"x":1})") << QByteArray(R"({"properties":{"x":false}})")
                                  << QStringList{"$.x: no value is allowed here"};
    QTest::newRow("deep path")
        << QByteArray(R"({"a":{"b":[{"c":[0,{"d":"no"}]}]}})")
        << QByteArray(R"({"properties":{"a":{"properties":{"b":{"items":{"properties":{"c":{"items":
            {"properties":{"d":{"type":"boolean"}}}}}}}}}}})")
        << QStringList{"$.a.b[0].c[1].d: expected boolean, got string"};

    // items
    QTest::newRow("items ok") << QByteArray("[1,2,3]") << QByteArray(R"({"items":{"type":"integer"}})")
                              << QStringList{};
    QTest::newRow("items on a non-array") << QByteArray(R"("x")") << QByteArray(R"({"items":{"type":"integer"}})")
                                          << QStringList{};
    QTest::newRow("prefixItems")
        << QByteArray(R"(["a",1,2,"x"])")
        << QByteArray(R"({"prefixItems":[{"type":"string"},{"type":"integer"}],"items":{"type":"integer"}})")
        << QStringList{"$[3]: expected integer, got string"};
    QTest::newRow("tuple items") << QByteArray(R"([1,1])")
                                 << QByteArray(R"({"items":[{"type":"integer"},{"type":"string"}]})")
                                 << QStringList{"$[1]: expected string, got number"};

    // enum, const
    QTest::newRow("enum ok") << QByteArray(R"({"kind":"a"})")
                             << QByteArray(R"({"properties":{"kind":{"enum":["a","b"]}}})") << QStringList{};
    QTest::newRow("enum mismatch") << QByteArray(R"({"kind":"z"})")
                                   << QByteArray(R"({"properties":{"kind":{"enum":["a","b"]}}})")
                                   << QStringList{R"($.kind: "z" is not one of ["a","b"])"};
    QTest::newRow("enum numbers") << QByteArray("3.0") << QByteArray(R"({"enum":[1,2,3]})") << QStringList{};
    QTest::newRow("enum mixed") << QByteArray("null") << QByteArray(R"({"enum":[1,"x",{"a":1}]})")
                                << QStringList{R"($: null is not one of [1,"x",{"a":1}])"};
    QTest::newRow("const ok") << QByteArray(R"({"a":[1]})") << QByteArray(R"({"const":{"a":[1]}})")
                              << QStringList{};
    QTest::newRow("const mismatch") << QByteArray(R"("b")") << QByteArray(R"({"const":"a"})")
                                    << QStringList{R"($: expected "a", got "b")"};

    // sizes and bounds
    QTest::newRow("minItems") << QByteArray(R"({"tags":["a"]})")
                              << QByteArray(R"({"properties":{"tags":{"minItems":2}}})")
                              << QStringList{"$.tags: expected at least 2 items, got 1"};
    QTest::newRow("maxItems") << QByteArray("[1,2]") << QByteArray(R"({"maxItems":1})")
                              << QStringList{"$: expected at most 1 item, got 2"};
    QTest::newRow("item counts ok") << QByteArray("[1,2]") << QByteArray(R"({"minItems":2,"maxItems":2})")
                                    << QStringList{};
    QTest::newRow("minLength") << QByteArray(R"("ab")") << QByteArray(R"({"minLength":3})")
                               << QStringList{"$: expected at least 3 characters, got 2"};
    QTest::newRow("maxLength") << QByteArray(R"("abcd")") << QByteArray(R"({"maxLength":3})")
                               << QStringList{"$: expected at most 3 characters, got 4"};
    QTest::newRow("length counts characters") << QByteArray(R"("é✓日")")
                                              << QByteArray(R"({"minLength":3,"maxLength":3})") << QStringList{};
    QTest::newRow("minimum") << QByteArray("0") << QByteArray(R"({"minimum":1})")
                             << QStringList{"$: 0 is less than the minimum 1"};
    QTest::newRow("maximum") << QByteArray("10.5") << QByteArray(R"({"maximum":10})")
                             << QStringList{"$: 10.5 is greater than the maximum 10"};
    QTest::newRow("bounds inclusive") << QByteArray("10") << QByteArray(R"({"minimum":10,"maximum":10})")
                                      << QStringList{};
    QTest::newRow("exclusiveMaximum") << QByteArray("10") << QByteArray(R"({"exclusiveMaximum":10})")
                                      << QStringList{"$: 10 must be less than 10"};
    QTest::newRow("exclusiveMinimum") << QByteArray("0") << QByteArray(R"({"exclusiveMinimum":0})")
                                      << QStringList{"$: 0 must be greater than 0"};
    QTest::newRow("bounds ignore strings") << QByteArray(R"("5")") << QByteArray(R"({"minimum":10})")
                                           << QStringList{};
    QTest::newRow("pattern") << QByteArray(R"("abc")") << QByteArray(R"({"pattern":"^[0-9]+$"})")
                             << QStringList{R"($: "abc" does not match the pattern "^[0-9]+$")"};

    // anyOf, oneOf, allOf, not
    const QByteArray stringOrNumber = R"({"anyOf":[{"type":"string"},{"type":"number"}]})";
    QTest::newRow("anyOf first") << QByteArray(R"("x")") << stringOrNumber << QStringList{};
    QTest::newRow("anyOf second") << QByteArray("1") << stringOrNumber << QStringList{};
    QTest::newRow("anyOf none")
        << QByteArray("true") << stringOrNumber
        << QStringList{"$: matches none of the 2 alternatives of anyOf (1) $: expected string, got boolean; "
                       "2) $: expected number, got boolean)"};
    const QByteArray oneOf = R"({"oneOf":[{"type":"integer"},{"type":"number","minimum":0}]})";
    QTest::newRow("oneOf one") << QByteArray("-1") << oneOf << QStringList{};
    QTest::newRow("oneOf two") << QByteArray("1") << oneOf
                               << QStringList{"$: matches 2 alternatives of oneOf (1 and 2), expected exactly one"};
    QTest::newRow("oneOf none") << QByteArray("-1.5") << oneOf
                                << QStringList{"$: matches none of the 2 alternatives of oneOf (1) $: expected "
                                               "integer, got number; 2) $: -1.5 is less than the minimum 0)"};
    QTest::newRow("allOf") << QByteArray(R"("abcd")")
                           << QByteArray(R"({"allOf":[{"type":"string"},{"maxLength":2}]})")
                           << QStringList{"$: expected at most 2 characters, got 4"};
    QTest::newRow("not") << QByteArray("null") << QByteArray(R"({"not":{"type":"null"}})")
                         << QStringList{R"($: must not match the schema under "not")"};

    // $ref
    QTest::newRow("$defs")
        << QByteArray(R"({"tags":[{"id":1},{"id":"x"}]})")
        << QByteArray(R"({"$defs":{"Tag":{"type":"object","properties":{"id":{"type":"integer"}}}},
            "properties":{"tags":{"type":"array","items":{"$ref":"#/$defs/Tag"}}}})")
        << QStringList{"$.tags[1].id: expected integer, got string"};
    QTest::newRow("definitions")
        << QByteArray(R"({"kind":"c"})")
        << QByteArray(R"({"definitions":{"Kind":{"enum":["a","b"]}},"properties":{"kind":{"$ref":"#/definitions/Kind"}}})")
        << QStringList{R"($.kind: "c" is not one of ["a","b"])"};
    QTest::newRow("$ref root") << QByteArray(R"({"$ref":"#/$defs/Item"})")
                               << QByteArray(R"({"$ref":"#/$defs/Item","$defs":{"Item":{"required":["id"]}}})")
                               << QStringList{R"($: missing required property "id")"};
    QTest::newRow("recursive $ref")
        << QByteArray(R"({"name":"a","children":[{"name":"b","children":[{"name":3}]}]})")
        << QByteArray(R"({"$defs":{"Node":{"type":"object","properties":{"name":{"type":"string"},
            "children":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}},"$ref":"#/$defs/Node"})")
        << QStringList{"$.children[0].children[0].name: expected string, got number"};
    QTest::newRow("unresolved $ref") << QByteArray("1") << QByteArray(R"({"$ref":"#/$defs/Nope"})")
                                     << QStringList{R"($: cannot resolve $ref "#/$defs/Nope")"};
    QTest::newRow("remote $ref") << QByteArray("1") << QByteArray(R"({"$ref":"https://example.com/s.json"})")
                                 << QStringList{R"($: cannot resolve $ref "https://example.com/s.json")"};
    QTest::newRow("circular $ref") << QByteArray("1") << QByteArray(R"({"$ref":"#"})")
                                   << QStringList{"$: the schema nests too deeply (a circular $ref?)"};

    // what is ignored
    QTest::newRow("unknown keywords") << QByteArray(R"("x")")
                                      << QByteArray(R"({"type":"string","format":"email","x-note":1,"title":"T"})")
                                      << QStringList{};
    QTest::newRow("empty schema") << QByteArray(R"({"anything":[1]})") << QByteArray("{}") << QStringList{};
    QTest::newRow("true schema") << QByteArray("1") << QByteArray("true") << QStringList{};
}

void TestJsonReply::validate()
{
    QFETCH(QByteArray, value);
    QFETCH(QByteArray, schema);
    QFETCH(QStringList, expected);
    QCOMPARE(JsonReply::validate(json(value), json(schema)), expected);
}

void TestJsonReply::instructionFor()
{
    const Json schema = json(R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})");
    const QString text = JsonReply::instructionFor(schema);
    QVERIFY(text.contains(QStringLiteral("JSON")));
    QVERIFY(text.contains(QStringLiteral("code fence")));
    const QString pretty = QString::fromStdString(schema.dump(2));
    QVERIFY2(text.endsWith(pretty), qPrintable(text));
    QVERIFY(pretty.contains(QLatin1Char('\n')));
    // The part before the schema is prose only: the schema is the one JSON value in the text.
    QCOMPARE(dump(JsonReply::extract(text)), dump(schema));

    // A model that follows the instruction produces something extract() and validate() accept.
    const Json reply = JsonReply::extract(QStringLiteral("```json\n{\"name\": \"Ada\"}\n```"));
    QVERIFY(JsonReply::validate(reply, schema).isEmpty());
}

QTEST_GUILESS_MAIN(TestJsonReply)
#include "test_json_reply.moc"
