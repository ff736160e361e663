// Memory through its C++ API against hostile input and careless callers: the failures an outside
// attack found, each pinned by a case that failed before its fix. Real SQLite stores through the
// plugin, an embedder whose vectors the test controls, a scripted LLM on loopback.

#include "fake_embedder.h"
#include "memory_test_util.h"
#include "scripted_llm.h"
#include "temp_store.h"
#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <QtTest>

Q_DECLARE_METATYPE(mneme::ReadContext)

using namespace mneme;
using mneme::test::errorOf;
using mneme::test::FakeEmbedder;
using mneme::test::fields;
using mneme::test::ScriptedLlm;
using mneme::test::TempStore;

namespace {

// {"a": {"a": ... 1}} nested `depth` levels deep (an object counts as a level).
Json nestedObject(int depth)
{
    Json j = 1;
    for (int i = 0; i < depth; ++i)
        j = Json{{"a", j}};
    return j;
}

RememberOptions privateOf(const QString &source, const QString &scope, const QString &category = {})
{
    RememberOptions o = fields(scope, 0.5, category.isEmpty() ? QStringList() : QStringList{category});
    o.source = source;
    o.isPrivate = true;
    return o;
}

} // namespace

class TestMemoryHardening : public QObject
{
    Q_OBJECT

    std::unique_ptr<TempStore> m_dir;
    std::shared_ptr<FakeEmbedder> m_embedder;

    MemoryConfig config() const
    {
        MemoryConfig c;
        c.storage = Json{{"provider", "sqlite"}, {"config", {{"path", m_dir->path()}}}};
        return c;
    }
    std::unique_ptr<Memory> open(const MemoryConfig &c) { return std::make_unique<Memory>(c, nullptr, m_embedder); }
    std::unique_ptr<Memory> open() { return open(config()); }

private Q_SLOTS:
    void init()
    {
        m_dir = std::make_unique<TempStore>();
        m_embedder = std::make_shared<FakeEmbedder>(16);
    }
    void cleanup() { m_dir.reset(); }

    // 1. Metadata nested deeper than 32 levels, or larger than 64 KiB, is refused at the call, before
    //    anything is copied or queued (writing it recursed once a level on the writer thread).
    void metadataLimits_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("expected"); // empty: stored
        const auto text = [](const Json &j) { return QByteArray::fromStdString(j.dump()); };
        QTest::newRow("32 levels") << text(nestedObject(32)) << QString();
        QTest::newRow("33 levels") << text(nestedObject(33)) << QStringLiteral("metadata nests 33 levels deep");
        QTest::newRow("arrays count") << "{\"a\": " + QByteArray(40, '[') + QByteArray(40, ']') + "}"
                                      << QStringLiteral("metadata nests 41 levels deep");
        QTest::newRow("1000 levels") << text(nestedObject(1000)) << QStringLiteral("metadata nests 1000 levels deep");
        QTest::newRow("64 KiB") << text(Json{{"text", std::string(65000, 'x')}}) << QString();
        QTest::newRow("over 64 KiB") << text(Json{{"text", std::string(70000, 'x')}}) << QStringLiteral("at most 65536 are kept");
        QTest::newRow("not an object") << QByteArray("[1, 2]") << QStringLiteral("metadata must be a JSON object");
    }
    void metadataLimits()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, expected);
        const Json metadata = Json::parse(json.toStdString()); // the test's own input: no limit applies
        auto m = open();
        RememberOptions o = fields(QStringLiteral("/m"));
        o.metadata = metadata;
        MemoryInput input{QStringLiteral("A fact with metadata."), o};
        if (expected.isEmpty()) {
            QCOMPARE(m->remember(input.content, o).metadata, metadata);
            return;
        }
        for (const auto &call : std::vector<std::function<void()>>{
                 [&] { m->remember(input.content, o); },
                 [&] { m->rememberMany(QStringList{input.content}, o); },
                 [&] { m->rememberMany(QList<MemoryInput>{input}); },
                 [&] { Memory::checkInput(input); },
                 [&] {
                     UpdateOptions u;
                     u.metadata = metadata;
                     m->update(m->remember(QStringLiteral("another fact"), fields(QStringLiteral("/m"))).id, u, ReadContext::asCurator());
                 },
             }) {
            const Error e = errorOf(call);
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
            QVERIFY2(e.message().contains(expected), qPrintable(e.message()));
        }
        m->drainWrites();
        QCOMPARE(m->listRecords(QStringLiteral("/"), 10, 0, ReadContext::asCurator()).size(), 1); // "another fact" only
    }

    // 2. A time outside the years 1 to 9999 (in UTC) has no ISO 8601 form: refused, so an export of the
    //    store always imports again.
    void timesOutsideFourDigitYears()
    {
        auto m = open();
        RememberOptions o = fields(QStringLiteral("/t"));
        o.createdAt = QDateTime(QDate(10000, 1, 1), QTime(0, 0), Qt::UTC);
        Error e = errorOf([&] { m->remember(QStringLiteral("from the far future"), o); });
        QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        QVERIFY2(e.message().contains(QLatin1String("outside the years 1 to 9999")), qPrintable(e.message()));
        o.createdAt = QDateTime(QDate(1, 1, 1), QTime(0, 30), Qt::OffsetFromUTC, 3600); // year 0 in UTC
        QCOMPARE(errorOf([&] { m->remember(QStringLiteral("from before year 1"), o); }).kind(), ErrorKind::InvalidArgument);

        MemoryRecord r = MemoryRecord::create(QStringLiteral("imported"));
        r.scope = QStringLiteral("/t");
        r.updatedAt = QDateTime(QDate(12000, 5, 1), QTime(0, 0), Qt::UTC);
        e = errorOf([&] { m->importRecords({r}, false); });
        QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        QVERIFY2(e.message().contains(QLatin1String("updated_at of record")), qPrintable(e.message()));
        o.createdAt = QDateTime(QDate(9999, 12, 31), QTime(23, 59, 59, 999), Qt::UTC);
        QCOMPARE(m->remember(QStringLiteral("the last instant"), o).createdAt, o.createdAt);
    }

    // 18. Two writers (here two Memory objects, two connections to one file) saving the same content
    //     at once store it once: the lookup of identical records is made again inside the write.
    void concurrentWritersStoreContentOnce()
    {
        m_embedder = std::make_shared<FakeEmbedder>(512);
        QStringList lines;
        for (int i = 0; i < 300; ++i)
            lines << QStringLiteral("note%1 item%1 entry%1 remark%1").arg(i);
        auto a = open();
        auto b = open();
        QFuture<SaveResult> fa = a->rememberMany(lines, fields(QStringLiteral("/notes")));
        QFuture<SaveResult> fb = b->rememberMany(lines, fields(QStringLiteral("/notes")));
        const SaveResult ra = fa.result();
        const SaveResult rb = fb.result();
        QCOMPARE(ra.stored + rb.stored, 300);
        QCOMPARE(ra.existing + rb.existing, 300);
        QCOMPARE(ra.ids, rb.ids); // each line names the one record that holds it
        QCOMPARE(a->info(QStringLiteral("/notes")).recordCount, 300);
    }

    // 19. Every read takes the reader: a private record shows only to its source and to the curator,
    //     in records, counts, scope and category names alike; update, undo and forget act only on
    //     what their caller may see. The default is the anonymous reader.
    void readsHonourTheReader_data()
    {
        QTest::addColumn<ReadContext>("reader");
        QTest::addColumn<bool>("aliceSees"); // Alice's private record
        QTest::addColumn<bool>("bobSees");
        QTest::newRow("default") << ReadContext() << false << false;
        QTest::newRow("anonymous") << ReadContext::anonymous() << false << false;
        QTest::newRow("alice") << ReadContext::of(QStringLiteral("user:alice")) << true << false;
        QTest::newRow("alice, shared only") << ReadContext::of(QStringLiteral("user:alice"), false) << false << false;
        QTest::newRow("carol") << ReadContext::of(QStringLiteral("user:carol")) << false << false;
        QTest::newRow("curator") << ReadContext::asCurator() << true << true;
    }
    void readsHonourTheReader()
    {
        QFETCH(ReadContext, reader);
        QFETCH(bool, aliceSees);
        QFETCH(bool, bobSees);
        auto m = open();
        m->remember(QStringLiteral("The team meets on Mondays."), fields(QStringLiteral("/team"), 0.5, {QStringLiteral("meeting")}));
        const MemoryRecord alice = m->remember(QStringLiteral("Alice's door code is 4411."),
                                               privateOf(QStringLiteral("user:alice"), QStringLiteral("/secret/alice"), QStringLiteral("alice-only")));
        const MemoryRecord bob = m->remember(QStringLiteral("Bob's salary is 5000."),
                                             privateOf(QStringLiteral("user:bob"), QStringLiteral("/secret/bob"), QStringLiteral("bob-only")));
        const int seen = 1 + int(aliceSees) + int(bobSees);

        // Records.
        QCOMPARE(m->listRecords(QStringLiteral("/"), 100, 0, reader).size(), seen);
        QCOMPARE(m->exportRecords(0, 100, reader).size(), seen);
        QCOMPARE(m->get(alice.id, reader).has_value(), aliceSees);
        QCOMPARE(m->get(bob.id, reader).has_value(), bobSees);
        if (aliceSees)
            QCOMPARE(m->history(alice.id, reader).size(), 1);
        else
            QCOMPARE(errorOf([&] { m->history(alice.id, reader); }).kind(), ErrorKind::NotFound);
        // Scopes, counts, categories.
        QCOMPARE(m->info(QStringLiteral("/"), reader).recordCount, seen);
        QCOMPARE(m->info(QStringLiteral("/"), reader).categories.contains(QStringLiteral("alice-only")), aliceSees);
        QCOMPARE(m->listCategories(QStringLiteral("/"), reader).contains(QStringLiteral("bob-only")), bobSees);
        QCOMPARE(m->listScopes(QStringLiteral("/secret"), reader).contains(QStringLiteral("/secret/alice")), aliceSees);
        QCOMPARE(m->listScopes(QStringLiteral("/"), reader).contains(QStringLiteral("/secret")), aliceSees || bobSees);
        QCOMPARE(m->tree(QStringLiteral("/"), 3, reader).contains(QLatin1String("/secret/bob")), bobSees);
        QCOMPARE(m->scopeTree(QStringLiteral("/"), 3, reader).recordCount, seen);
        // Views.
        QCOMPARE(m->scope(QStringLiteral("/secret")).listRecords(QStringLiteral("/"), 10, 0, reader).size(), int(aliceSees) + int(bobSees));
        QCOMPARE(m->slice({QStringLiteral("/team"), QStringLiteral("/secret")}).info(reader).recordCount, seen);
        QCOMPARE(m->slice({QStringLiteral("/secret")}).listCategories(reader).contains(QStringLiteral("alice-only")), aliceSees);
        // Recall, with the reader and with the older spelling of the same thing.
        RecallOptions o;
        o.depth = RecallDepth::Shallow;
        o.reader = reader;
        bool found = false;
        for (const MemoryMatch &match : m->recall(QStringLiteral("door code"), o))
            found = found || match.record.id == alice.id;
        QCOMPARE(found, aliceSees);
        // Changes by id: a record the caller may not see is not found, and forget leaves it alone.
        UpdateOptions u;
        u.importance = 0.9;
        if (aliceSees) {
            QCOMPARE(m->update(alice.id, u, reader).importance, 0.9);
            QCOMPARE(m->undo(alice.id, reader).importance, 0.5);
        } else {
            QCOMPARE(errorOf([&] { m->update(alice.id, u, reader); }).kind(), ErrorKind::NotFound);
            QCOMPARE(errorOf([&] { m->undo(alice.id, reader); }).kind(), ErrorKind::NotFound);
        }
        ForgetOptions f;
        f.ids = {alice.id, bob.id};
        QCOMPARE(m->forget(f, reader), int(aliceSees) + int(bobSees));
        QCOMPARE(m->listRecords(QStringLiteral("/"), 100, 0, ReadContext::asCurator()).size(), 3 - int(aliceSees) - int(bobSees));
    }

    // 10. The near-duplicate drop within a batch compares items of the same source and privacy only:
    //     a private record of one source never drops another source's record, nor a shared one.
    void batchDedupKeepsSourcesApart()
    {
        auto m = open();
        const QString text = QStringLiteral("The door code of the lab is 4411.");
        const auto item = [&](const QString &source, bool isPrivate) {
            RememberOptions o = fields(QStringLiteral("/lab"));
            o.source = source;
            o.isPrivate = isPrivate;
            return MemoryInput{text, o};
        };
        const SaveResult r = m->rememberMany(QList<MemoryInput>{
                                                 item(QStringLiteral("user:alice"), true),
                                                 item(QStringLiteral("user:bob"), false),
                                                 item(QStringLiteral("user:alice"), false),
                                                 item(QString(), false),
                                                 item(QStringLiteral("user:alice"), true), // the one duplicate
                                             })
                                 .result();
        QCOMPARE(r.stored, 4);
        QCOMPARE(r.dropped, 1);
        QCOMPARE(m->listRecords(QStringLiteral("/lab"), 10, 0, ReadContext::of(QStringLiteral("user:bob"))).size(), 3);
        QCOMPARE(m->listRecords(QStringLiteral("/lab"), 10, 0, ReadContext::asCurator()).size(), 4);
    }

    // 11. Save and query analysis show the LLM the scopes and categories the caller may see: never the
    //     names that only another source's private records use.
    void llmSeesOnlyVisibleNames()
    {
        ScriptedLlm llm;
        llm.onJson(QStringLiteral("memory_analysis"),
                   Json{{"scope", "/notes"}, {"categories", {"note"}}, {"importance", 0.5}, {"metadata", Json::object()}});
        llm.onJson(QStringLiteral("query_analysis"), Json{{"keywords", Json::array()}, {"scopes", Json::array()}, {"complexity", "simple"}, {"queries", {"mondays"}}, {"time_filter", nullptr}});
        MemoryConfig c = config();
        c.llm = llm.config();
        c.queryAnalysisThreshold = 10;
        auto m = open(c);
        m->remember(QStringLiteral("Alice's door code is 4411."),
                    privateOf(QStringLiteral("user:alice"), QStringLiteral("/secret/alice-room"), QStringLiteral("alice-only")));
        m->remember(QStringLiteral("The team meets on Mondays."), fields(QStringLiteral("/team"), 0.5, {QStringLiteral("meeting")}));

        RememberOptions bob;
        bob.source = QStringLiteral("user:bob");
        m->remember(QStringLiteral("Bob drinks tea in the morning."), bob);
        QString prompt = llm.lastPrompt(QStringLiteral("memory_analysis"));
        QVERIFY2(prompt.contains(QLatin1String("/team")) && prompt.contains(QLatin1String("meeting")), qPrintable(prompt));
        QVERIFY2(!prompt.contains(QLatin1String("alice-room")) && !prompt.contains(QLatin1String("alice-only")), qPrintable(prompt));

        RememberOptions alice;
        alice.source = QStringLiteral("user:alice");
        m->remember(QStringLiteral("Alice drinks coffee at noon."), alice);
        prompt = llm.lastPrompt(QStringLiteral("memory_analysis"));
        QVERIFY2(prompt.contains(QLatin1String("alice-room")) && prompt.contains(QLatin1String("alice-only")), qPrintable(prompt));

        m->recall(QStringLiteral("what happens on mondays"));
        QCOMPARE(llm.calls(QStringLiteral("query_analysis")), 1);
        prompt = llm.lastPrompt(QStringLiteral("query_analysis"));
        QVERIFY2(prompt.contains(QLatin1String("/team")) && !prompt.contains(QLatin1String("alice-room")), qPrintable(prompt));
        RecallOptions asAlice;
        asAlice.reader = ReadContext::of(QStringLiteral("user:alice"));
        m->recall(QStringLiteral("what happens on mondays"), asAlice);
        QVERIFY(llm.lastPrompt(QStringLiteral("query_analysis")).contains(QLatin1String("alice-room")));
    }

    // The older spelling of a recall's reader (RecallOptions::source, includePrivate) still works.
    void recallOptionsOlderSpelling()
    {
        auto m = open();
        const MemoryRecord alice = m->remember(QStringLiteral("Alice's door code is 4411."),
                                               privateOf(QStringLiteral("user:alice"), QStringLiteral("/secret/alice")));
        RecallOptions o;
        o.depth = RecallDepth::Shallow;
        QVERIFY(m->recall(QStringLiteral("door code"), o).isEmpty());
        o.source = QStringLiteral("user:alice");
        QCOMPARE(m->recall(QStringLiteral("door code"), o).size(), 1);
        o.source.clear();
        o.includePrivate = true;
        QCOMPARE(m->recall(QStringLiteral("door code"), o).size(), 1);
        QCOMPARE(o.effectiveReader(), ReadContext::asCurator());
    }
};

QTEST_GUILESS_MAIN(TestMemoryHardening)
#include "test_memory_hardening.moc"
