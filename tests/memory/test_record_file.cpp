// RecordFile and RecordFileReader: the JSON Lines of `mneme export` / `mneme import`, written and
// read back through a real store.
#include <mneme/core/error.h>
#include <mneme/core/storage_backend.h>
#include <mneme/memory/memory.h>
#include <mneme/memory/record_file.h>

#include "tests/support/temp_store.h"

#include <QTest>

using namespace mneme;

class TestRecordFile : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void aLineReadsBackAsTheRecordBitForBit();
    void theEmbedderIdIsTheStoresBinding();
    void aDamagedLineCarriesItsProblem();
    void badLinesAreRefusedSayingWhy_data();
    void badLinesAreRefusedSayingWhy();
    void anIdTwiceNamesTheFirstLine();
    void aLineWithoutAnIdGetsANewOne();

private:
    static RecordFileReader::Options options(bool keep = false)
    {
        return RecordFileReader::Options{keep, QStringLiteral("builtin/hash-v2"), 4, MemoryConfig()};
    }
};

void TestRecordFile::aLineReadsBackAsTheRecordBitForBit()
{
    MemoryRecord r = MemoryRecord::create(QStringLiteral("Acme renews in March"));
    r.scope = QStringLiteral("/customer/acme");
    r.categories = QStringList{QStringLiteral("contract")};
    r.importance = 0.7;
    r.source = QStringLiteral("user:alice");
    r.isPrivate = true;
    r.metadata = Json{{"tier", "gold"}};
    r.embedding = {0.1f, -0.3333333f, 1e-7f, 0.70710678f};
    const QByteArray line = RecordFile::line(r, QStringLiteral("builtin/hash-v2"));
    QVERIFY(line.endsWith('\n'));
    QCOMPARE(line.count('\n'), 1);
    QVERIFY(line.contains("\"embedding\":[0.1,"));
    QVERIFY(line.contains("\"embedder\":\"builtin/hash-v2\""));

    RecordFileReader keep(options(true));
    const MemoryRecord back = keep.read(1, QString::fromUtf8(line.chopped(1)));
    QCOMPARE(back, r);
    QCOMPARE(back.embedding, r.embedding); // operator== leaves the vector out
    RecordFileReader reembed(options(false));
    QVERIFY(reembed.read(1, QString::fromUtf8(line.chopped(1))).embedding.empty());
}

void TestRecordFile::theEmbedderIdIsTheStoresBinding()
{
    test::TempStore dir;
    MemoryConfig config;
    config.storage = Json(dir.path().toStdString());
    Memory memory(config);
    memory.remember(QStringLiteral("bind the store"));
    const std::optional<EmbedderBinding> binding = memory.storage().embedderBinding();
    QVERIFY(binding);
    QCOMPARE(RecordFile::embedderIdOf(memory), binding->embedderId);
    const RecordFileReader::Options o = RecordFileReader::optionsFor(memory, true);
    QCOMPARE(o.embedderId, memory.embedder().id());
    QCOMPARE(o.dimension, memory.embedder().dimension());
    QVERIFY(o.keepEmbeddings);
    // Exported and read back with the store's own options, the records are the store's.
    const QList<MemoryRecord> stored = memory.exportRecords(0, RecordFile::kBatchSize, ReadContext::asCurator());
    QCOMPARE(stored.size(), 1);
    RecordFileReader reader(o);
    const QByteArray line = RecordFile::line(stored.first(), RecordFile::embedderIdOf(memory));
    const MemoryRecord back = reader.read(1, QString::fromUtf8(line.chopped(1)));
    QCOMPARE(back, stored.first());
    QCOMPARE(back.embedding, stored.first().embedding);
}

void TestRecordFile::aDamagedLineCarriesItsProblem()
{
    DamagedRecord d;
    d.record = MemoryRecord::create(QStringLiteral("half readable"));
    d.problem = QStringLiteral("its categories are not a JSON array");
    d.raw = Json{{"categories", "{oops"}};
    const QByteArray line = RecordFile::damagedLine(d, QStringLiteral("builtin/hash-v2"));
    Json j;
    QVERIFY(readJson(line.toStdString(), &j).isEmpty());
    QCOMPARE(j["damaged"]["problem"].get<std::string>(), std::string("its categories are not a JSON array"));
    QCOMPARE(j["damaged"]["columns"]["categories"].get<std::string>(), std::string("{oops"));
    // Import reads it like any record: the "damaged" key is not read.
    RecordFileReader reader(options());
    QCOMPARE(reader.read(1, QString::fromUtf8(line.chopped(1))).content, QStringLiteral("half readable"));
}

void TestRecordFile::badLinesAreRefusedSayingWhy_data()
{
    QTest::addColumn<bool>("keep");
    QTest::addColumn<QString>("line");
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("says");
    const int invalid = int(ErrorKind::InvalidArgument);
    QTest::newRow("not json") << false << "{\"content\": " << invalid << "not valid JSON";
    QTest::newRow("not an object") << false << "[1, 2]" << invalid << "expected a JSON object";
    QTest::newRow("blank content") << false << "{\"content\": \"  \"}" << invalid << "content";
    QTest::newRow("importance out of range") << false << "{\"content\": \"x\", \"importance\": 1.5}" << invalid << "importance";
    QTest::newRow("wrong field type") << false << "{\"content\": \"x\", \"categories\": \"a\"}" << invalid << "categories";
    QTest::newRow("private without a source") << false << "{\"content\": \"x\", \"private\": true}" << int(ErrorKind::PermissionDenied) << "source";
    QTest::newRow("no embedder") << true << "{\"content\": \"x\", \"embedding\": [1, 0, 0, 0]}" << invalid << "no \"embedder\"";
    QTest::newRow("another embedder") << true << "{\"content\": \"x\", \"embedder\": \"openai/x\", \"embedding\": [1, 0, 0, 0]}"
                                      << invalid << "computed by \"openai/x\"";
    QTest::newRow("short vector") << true << "{\"content\": \"x\", \"embedder\": \"builtin/hash-v2\", \"embedding\": [1, 0]}"
                                  << invalid << "has 2 numbers";
    QTest::newRow("not numbers") << true << "{\"content\": \"x\", \"embedder\": \"builtin/hash-v2\", \"embedding\": [1, 0, \"a\", 0]}"
                                 << invalid << "array of numbers";
}

void TestRecordFile::badLinesAreRefusedSayingWhy()
{
    QFETCH(bool, keep);
    QFETCH(QString, line);
    QFETCH(int, kind);
    QFETCH(QString, says);
    RecordFileReader reader(options(keep));
    try {
        reader.read(3, line);
        QFAIL("the line was read");
    } catch (const Error &e) {
        QCOMPARE(int(e.kind()), kind);
        QVERIFY2(e.message().contains(says), qPrintable(e.message()));
    }
}

void TestRecordFile::anIdTwiceNamesTheFirstLine()
{
    RecordFileReader reader(options());
    reader.read(1, QStringLiteral("{\"id\": \"a-1\", \"content\": \"first\"}"));
    reader.read(2, QStringLiteral("{\"id\": \"b-2\", \"content\": \"second\"}"));
    try {
        reader.read(5, QStringLiteral("{\"id\": \" a-1 \", \"content\": \"again\"}")); // trimmed: the same id
        QFAIL("the repeated id was read");
    } catch (const Error &e) {
        QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        QVERIFY2(e.message().contains(QStringLiteral("already used on line 1")), qPrintable(e.message()));
    }
}

void TestRecordFile::aLineWithoutAnIdGetsANewOne()
{
    RecordFileReader reader(options());
    const MemoryRecord a = reader.read(1, QStringLiteral("{\"content\": \"one\"}"));
    const MemoryRecord b = reader.read(2, QStringLiteral("{\"content\": \"two\"}"));
    QVERIFY(!a.id.isEmpty());
    QVERIFY(!b.id.isEmpty());
    QVERIFY(a.id != b.id);
}

QTEST_GUILESS_MAIN(TestRecordFile)
#include "test_record_file.moc"
