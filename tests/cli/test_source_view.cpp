// SourceView, the one place where the servers decide what a caller sees: over a store holding the
// private records of two sources and public ones, every read shows a source what it may see and
// nothing else (records, counts, categories, dates, scope names), and no write reaches a record it
// does not see.

#include "source_view.h"
#include "temp_store.h"

#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <QTest>

using namespace mneme;
using namespace mneme::cli;
using mneme::test::TempStore;

namespace {

// The test's own look at the store, past every source's privacy.
const ReadContext kOwner = ReadContext::asCurator();

QStringList contentsOf(const QList<MemoryRecord> &records)
{
    QStringList out;
    for (const MemoryRecord &r : records)
        out << r.content;
    out.sort();
    return out;
}

QStringList pathsOf(const ScopeNode &node)
{
    QStringList out{node.path};
    for (const ScopeNode &c : node.children)
        out << pathsOf(c);
    return out;
}

} // namespace

class TestSourceView : public QObject
{
    Q_OBJECT

private:
    TempStore *m_store = nullptr;
    Memory *m_memory = nullptr;
    QString m_bobSecret;
    QString m_aliceSecret;
    QDateTime m_bobTime;

    MemoryRecord add(const QString &content, const QString &scope, const QString &source, bool isPrivate, const QString &category,
                     const QDateTime &at = {})
    {
        RememberOptions o;
        o.scope = scope;
        o.source = source;
        o.isPrivate = isPrivate;
        o.categories = QStringList{category};
        o.importance = 0.5;
        o.createdAt = at;
        return m_memory->remember(content, o);
    }

private Q_SLOTS:
    void init()
    {
        m_store = new TempStore;
        MemoryConfig config;
        config.storage = Json{{"provider", "sqlite"}, {"config", {{"path", m_store->path().toStdString()}}}};
        m_memory = new Memory(config);
        add(QStringLiteral("The office opens at nine"), QStringLiteral("/office"), QString(), false, QStringLiteral("facilities"));
        add(QStringLiteral("Bob presents the roadmap"), QStringLiteral("/team"), QStringLiteral("bob"), false, QStringLiteral("plans"));
        m_aliceSecret = add(QStringLiteral("Alice likes green tea"), QStringLiteral("/team/alice"), QStringLiteral("alice"), true,
                            QStringLiteral("preference"))
                            .id;
        m_bobTime = QDateTime(QDate(2001, 1, 1), QTime(0, 0), Qt::UTC);
        m_bobSecret = add(QStringLiteral("Bob earns 123k"), QStringLiteral("/hr/bob"), QStringLiteral("bob"), true, QStringLiteral("salary"),
                          m_bobTime)
                          .id;
    }
    void cleanup()
    {
        delete m_memory;
        delete m_store;
    }

    void readsShowWhatTheSourceSees_data()
    {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QStringList>("contents");
        QTest::addColumn<QStringList>("scopes");
        QTest::addColumn<QStringList>("categories");

        const QStringList pub{QStringLiteral("Bob presents the roadmap"), QStringLiteral("The office opens at nine")};
        QTest::newRow("alice") << QStringLiteral("alice") << QStringList{QStringLiteral("Alice likes green tea")} + pub
                               << QStringList{QStringLiteral("/office"), QStringLiteral("/team")}
                               << QStringList{QStringLiteral("facilities"), QStringLiteral("plans"), QStringLiteral("preference")};
        QTest::newRow("bob") << QStringLiteral("bob") << QStringList{QStringLiteral("Bob earns 123k")} + pub
                             << QStringList{QStringLiteral("/hr"), QStringLiteral("/office"), QStringLiteral("/team")}
                             << QStringList{QStringLiteral("facilities"), QStringLiteral("plans"), QStringLiteral("salary")};
        QTest::newRow("no source") << QString() << pub << QStringList{QStringLiteral("/office"), QStringLiteral("/team")}
                                   << QStringList{QStringLiteral("facilities"), QStringLiteral("plans")};
        QTest::newRow("another source") << QStringLiteral("carol") << pub << QStringList{QStringLiteral("/office"), QStringLiteral("/team")}
                                        << QStringList{QStringLiteral("facilities"), QStringLiteral("plans")};
    }
    void readsShowWhatTheSourceSees()
    {
        QFETCH(QString, source);
        QFETCH(QStringList, contents);
        QFETCH(QStringList, scopes);
        QFETCH(QStringList, categories);
        SourceView view(*m_memory, source);

        QCOMPARE(contentsOf(view.list(QString(), 100, 0)), contents);
        RecallOptions o;
        o.limit = 50;
        o.depth = RecallDepth::Shallow;
        QStringList recalled;
        for (const MemoryMatch &m : view.recall(QStringLiteral("tea salary office roadmap bob alice"), o))
            recalled << m.record.content;
        recalled.sort();
        QCOMPARE(recalled, contents);
        // Even a recall that asks for every private record sees only what the source may.
        o.includePrivate = true;
        QCOMPARE(view.recall(QStringLiteral("tea salary office roadmap bob alice"), o).size(), contents.size());

        QCOMPARE(view.scopes(QStringLiteral("/")), scopes);
        const ScopeInfo info = view.info(QStringLiteral("/"));
        QCOMPARE(info.recordCount, contents.size());
        QCOMPARE(info.childScopes, scopes);
        QCOMPARE(info.categories, categories);
        QCOMPARE(info.oldestRecord == m_bobTime, source == QLatin1String("bob"));
        QCOMPARE(view.categories(QString()).keys(), categories);
        const ScopeNode tree = view.tree(QStringLiteral("/"), 5);
        QCOMPARE(tree.recordCount, contents.size());
        QCOMPARE(pathsOf(tree).contains(QStringLiteral("/hr/bob")), source == QLatin1String("bob"));
        QCOMPARE(pathsOf(tree).contains(QStringLiteral("/team/alice")), source == QLatin1String("alice"));
        QCOMPARE(view.scopeCounts(QStringLiteral("/")).value(QStringLiteral("/team")), source == QLatin1String("alice") ? 2 : 1);
        // A scope only hidden records use is empty to the others: no count, no category, no date.
        const ScopeInfo hr = view.info(QStringLiteral("/hr"));
        QCOMPARE(hr.recordCount, source == QLatin1String("bob") ? 1 : 0);
        QCOMPARE(hr.newestRecord.isValid(), source == QLatin1String("bob"));
    }

    void anotherSourcesRecordIsAnUnknownId()
    {
        SourceView alice(*m_memory, QStringLiteral("alice"));
        QVERIFY(!alice.get(m_bobSecret));
        QString unknownMessage;
        try {
            alice.history(QStringLiteral("no-such-id"));
        } catch (const Error &e) {
            unknownMessage = e.message().replace(QStringLiteral("no-such-id"), QStringLiteral("ID"));
        }
        const auto refused = [&](const std::function<void()> &call) {
            try {
                call();
            } catch (const Error &e) {
                QCOMPARE(e.kind(), ErrorKind::NotFound);
                QCOMPARE(QString(e.message()).replace(m_bobSecret, QStringLiteral("ID")), unknownMessage);
                return;
            }
            QFAIL("the call went through");
        };
        refused([&] { alice.history(m_bobSecret); });
        UpdateOptions u;
        u.importance = 0.1;
        refused([&] { alice.update(m_bobSecret, u); });
        refused([&] { alice.undo(m_bobSecret); });
        QCOMPARE(m_memory->get(m_bobSecret, kOwner)->importance, 0.5);

        // forget selects among what alice sees: bob's record stays, whatever the filter.
        ForgetOptions byScope;
        byScope.scope = QStringLiteral("/hr");
        QCOMPARE(alice.forget(byScope), 0);
        ForgetOptions byIds;
        byIds.ids = {m_bobSecret, m_aliceSecret};
        QCOMPARE(alice.forget(byIds), 1);
        ForgetOptions byAge;
        byAge.olderThan = QDateTime(QDate(2010, 1, 1), QTime(0, 0), Qt::UTC);
        QCOMPARE(alice.forget(byAge), 0);
        QVERIFY(m_memory->get(m_bobSecret, kOwner));
        QVERIFY(!m_memory->get(m_aliceSecret, kOwner));
    }

    void aDeletedRecordStaysHidden()
    {
        SourceView bob(*m_memory, QStringLiteral("bob"));
        ForgetOptions o;
        o.ids = {m_bobSecret};
        QCOMPARE(bob.forget(o), 1);
        QCOMPARE(bob.history(m_bobSecret).size(), 2); // ADD, DELETE
        SourceView alice(*m_memory, QStringLiteral("alice"));
        QVERIFY_THROWS_EXCEPTION(Error, alice.history(m_bobSecret));
        QVERIFY_THROWS_EXCEPTION(Error, alice.undo(m_bobSecret));
        QVERIFY(!m_memory->get(m_bobSecret, kOwner)); // still deleted
        QCOMPARE(bob.undo(m_bobSecret).content, QStringLiteral("Bob earns 123k"));
    }

    void writesCarryTheSource()
    {
        SourceView alice(*m_memory, QStringLiteral("alice"));
        RememberOptions o;
        o.source = QStringLiteral("bob"); // a caller cannot pick another source
        o.isPrivate = true;
        const MemoryRecord r = alice.remember(QStringLiteral("Alice's own secret"), o);
        QCOMPARE(r.source, QStringLiteral("alice"));
        QVERIFY(r.isPrivate);
        SourceView nobody(*m_memory, QString());
        try {
            nobody.remember(QStringLiteral("A secret of nobody"), o);
            QFAIL("stored a private record without a source");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::PermissionDenied);
        }
        MemoryInput item{QStringLiteral("Batched for alice"), o};
        QCOMPARE(alice.rememberMany({item}).stored, 1);
        QCOMPARE(m_memory->listRecords(QStringLiteral("/"), 100, 0, kOwner).front().source, QStringLiteral("alice"));
    }
};

QTEST_GUILESS_MAIN(TestSourceView)
#include "test_source_view.moc"
