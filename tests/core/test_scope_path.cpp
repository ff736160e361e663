#include <mneme/core/error.h>
#include <mneme/core/scope_path.h>

#include <QtTest>

using namespace mneme;

class TestScopePath : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void normalize_data()
    {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("expected");
        QTest::newRow("empty") << ""
                               << "/";
        QTest::newRow("root") << "/"
                              << "/";
        QTest::newRow("spaces") << "  /a/b  "
                                << "/a/b";
        QTest::newRow("no leading slash") << "crew/test"
                                          << "/crew/test";
        QTest::newRow("trailing slash") << "/crew/test/"
                                        << "/crew/test";
        QTest::newRow("unicode") << "/café/ünï"
                                 << "/café/ünï";
        QTest::newRow("inner spaces") << "/my project/alpha"
                                      << "/my project/alpha";
    }
    void normalize()
    {
        QFETCH(QString, input);
        QFETCH(QString, expected);
        QCOMPARE(ScopePath::normalize(input), expected);
        QVERIFY(ScopePath::isValid(input));
    }

    void rejects_data()
    {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("dotdot") << "/a/../b"
                                << "..";
        QTest::newRow("leading dotdot") << "/../../etc"
                                        << "..";
        QTest::newRow("dot") << "/a/./b"
                             << "'.'";
        QTest::newRow("empty segment") << "/a//b"
                                       << "empty segment";
        QTest::newRow("double root") << "//"
                                     << "empty segment";
        QTest::newRow("newline") << "/a\nb"
                                 << "control character";
        QTest::newRow("tab") << "/a\tb"
                             << "control character";
        QTest::newRow("nul") << QString::fromUtf16(u"/a\u0000b", 4) << "control character";
        QTest::newRow("del") << QString::fromUtf16(u"/a\u007fb") << "control character";
        QTest::newRow("segment spaces") << "/a/ b"
                                        << "white space";
        QTest::newRow("long segment") << "/" + QString(201, QLatin1Char('x')) << "200 characters";
        // Depth and length are bounded: a tree of one 10,000-segment scope printed hundreds of megabytes.
        QTest::newRow("33 segments") << QString("/a").repeated(33) << "33 segments; a scope has at most 32 levels";
        QTest::newRow("10,000 segments") << QString("/a").repeated(10000) << "a scope has at most 1000";
        QTest::newRow("1,002 characters") << "/" + QString(199, QLatin1Char('x')) + QString("/" + QString(199, QLatin1Char('y'))).repeated(4) + "/z"
                                          << "1002 characters long; a scope has at most 1000";
    }
    void limitsAccepted()
    {
        QCOMPARE(ScopePath::normalize(QString("/a").repeated(32)), QString("/a").repeated(32));
        const QString longest = "/" + QString(199, QLatin1Char('x')) + QString("/" + QString(199, QLatin1Char('y'))).repeated(4);
        QCOMPARE(longest.size(), 1000);
        QCOMPARE(ScopePath::normalize(longest), longest);
        // The message quotes a bounded prefix of what it was given.
        QString why;
        QVERIFY(!ScopePath::isValid(QString("/a").repeated(10000), &why));
        QVERIFY2(why.size() < 300 && why.contains(QLatin1String("(20000 characters)")), qPrintable(why));
    }
    void rejects()
    {
        QFETCH(QString, input);
        QFETCH(QString, mentions);
        QString why;
        QVERIFY(!ScopePath::isValid(input, &why));
        QVERIFY2(why.contains(mentions), qPrintable(why));
        try {
            ScopePath::normalize(input);
            QFAIL("normalize accepted an invalid path");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
            QVERIFY(e.message().contains(QStringLiteral("invalid scope path")));
            QCOMPARE(e.exitCode(), 2);
        }
    }

    void join_data()
    {
        QTest::addColumn<QString>("root");
        QTest::addColumn<QString>("inner");
        QTest::addColumn<QString>("expected");
        // Acceptance case 37 and the reference's join examples.
        QTest::newRow("root + explicit") << "/crew/research-crew"
                                         << "/market-trends"
                                         << "/crew/research-crew/market-trends";
        QTest::newRow("trailing slashes") << "/crew/test/"
                                          << "/inner/"
                                          << "/crew/test/inner";
        QTest::newRow("root + /") << "/crew/test"
                                  << "/"
                                  << "/crew/test";
        QTest::newRow("root without slash") << "crew/test"
                                            << "inner"
                                            << "/crew/test/inner";
        QTest::newRow("no root") << ""
                                 << "inner"
                                 << "/inner";
        QTest::newRow("neither") << ""
                                 << ""
                                 << "/";
        QTest::newRow("case 39") << "/override/path"
                                 << "/inner"
                                 << "/override/path/inner";
    }
    void join()
    {
        QFETCH(QString, root);
        QFETCH(QString, inner);
        QFETCH(QString, expected);
        QCOMPARE(ScopePath::join(root, inner), expected);
    }

    void joinRejectsEscape()
    {
        QVERIFY_THROWS_EXCEPTION(Error, ScopePath::join(QStringLiteral("/crew/a"), QStringLiteral("/../../etc")));
    }

    void contains_data()
    {
        QTest::addColumn<QString>("prefix");
        QTest::addColumn<QString>("path");
        QTest::addColumn<bool>("expected");
        QTest::newRow("same") << "/crew/a"
                              << "/crew/a" << true;
        QTest::newRow("child") << "/crew/a"
                               << "/crew/a/x" << true;
        QTest::newRow("sibling with prefix (decision 1)") << "/crew/a"
                                                          << "/crew/ab" << false;
        QTest::newRow("parent") << "/crew/a"
                                << "/crew" << false;
        QTest::newRow("root holds all") << "/"
                                        << "/x/y" << true;
        QTest::newRow("root holds root") << "/"
                                         << "/" << true;
        QTest::newRow("not root") << "/a"
                                  << "/" << false;
    }
    void contains()
    {
        QFETCH(QString, prefix);
        QFETCH(QString, path);
        QFETCH(bool, expected);
        QCOMPARE(ScopePath::contains(prefix, path), expected);
    }

    void parentsAndSegments()
    {
        QCOMPARE(ScopePath::parent(QStringLiteral("/a/b")), QStringLiteral("/a"));
        QCOMPARE(ScopePath::parent(QStringLiteral("/a")), QStringLiteral("/"));
        QCOMPARE(ScopePath::parent(QStringLiteral("/")), QStringLiteral("/"));
        QCOMPARE(ScopePath::segments(QStringLiteral("/a/b")), (QStringList{"a", "b"}));
        QVERIFY(ScopePath::segments(QStringLiteral("/")).isEmpty());
        QCOMPARE(ScopePath::childToward(QStringLiteral("/"), QStringLiteral("/a/b/c")), QStringLiteral("/a"));
        QCOMPARE(ScopePath::childToward(QStringLiteral("/a"), QStringLiteral("/a/b/c")), QStringLiteral("/a/b"));
        QCOMPARE(ScopePath::childToward(QStringLiteral("/a"), QStringLiteral("/a")), QString());
        QCOMPARE(ScopePath::childToward(QStringLiteral("/a"), QStringLiteral("/ab/c")), QString());
    }

    void sanitize_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("expected");
        QTest::newRow("spaces") << "Research Crew"
                                << "research-crew";
        QTest::newRow("punctuation") << "Agent #1 (Main)"
                                     << "agent-1-main";
        QTest::newRow("accent") << "café_worker"
                                << "caf-_worker";
        QTest::newRow("nothing left") << "@#$%"
                                      << "unknown";
        QTest::newRow("empty") << ""
                               << "unknown";
        QTest::newRow("awesome") << "My Awesome Crew #1!"
                                 << "my-awesome-crew-1";
        QTest::newRow("role") << "Senior Research Analyst 1"
                              << "senior-research-analyst-1";
    }
    void sanitize()
    {
        QFETCH(QString, name);
        QFETCH(QString, expected);
        QCOMPARE(ScopePath::sanitizeName(name), expected);
    }
};

QTEST_GUILESS_MAIN(TestScopePath)
#include "test_scope_path.moc"
