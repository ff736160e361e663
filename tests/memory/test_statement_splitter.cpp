// The offline statement splitter behind Memory::extractMemories().

#include "memory/statement_splitter_p.h"

#include <QtTest>

using namespace mneme;

class TestStatementSplitter : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void split_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("empty") << QString() << QStringList{};
        QTest::newRow("blank") << QStringLiteral("  \n\t ") << QStringList{};
        QTest::newRow("one sentence") << QStringLiteral(" One fact. ") << QStringList{QStringLiteral("One fact.")};
        QTest::newRow("two sentences") << QStringLiteral("Alice moved to Berlin. She works at Acme.")
                                       << QStringList{QStringLiteral("Alice moved to Berlin."), QStringLiteral("She works at Acme.")};
        QTest::newRow("question and exclamation") << QStringLiteral("Is the API stable? It is! Ship it.")
                                                  << QStringList{QStringLiteral("Is the API stable?"), QStringLiteral("It is!"),
                                                                 QStringLiteral("Ship it.")};
        QTest::newRow("title abbreviation") << QStringLiteral("We met Mr. Jones in March. He agreed to the terms.")
                                            << QStringList{QStringLiteral("We met Mr. Jones in March."),
                                                           QStringLiteral("He agreed to the terms.")};
        QTest::newRow("decimal and time") << QStringLiteral("The dose is 2.5 mg at 8 a.m. daily.")
                                          << QStringList{QStringLiteral("The dose is 2.5 mg at 8 a.m. daily.")};
        QTest::newRow("initial") << QStringLiteral("J. Smith leads the team.") << QStringList{QStringLiteral("J. Smith leads the team.")};
        QTest::newRow("semicolon clauses") << QStringLiteral("Prices rose in Q2; costs fell.")
                                           << QStringList{QStringLiteral("Prices rose in Q2"), QStringLiteral("costs fell.")};
        QTest::newRow("ellipsis") << QStringLiteral("Wait... What happened?") << QStringList{QStringLiteral("Wait... What happened?")};
        QTest::newRow("quoted sentence") << QStringLiteral("She said \"Go.\" Then she left.")
                                         << QStringList{QStringLiteral("She said \"Go.\""), QStringLiteral("Then she left.")};
        QTest::newRow("sentence before a number") << QStringLiteral("Budget approved. 3 people join in May.")
                                                  << QStringList{QStringLiteral("Budget approved."), QStringLiteral("3 people join in May.")};
        QTest::newRow("lower-case continuation") << QStringLiteral("Use e.g. apples. Bananas work too.")
                                                 << QStringList{QStringLiteral("Use e.g. apples."), QStringLiteral("Bananas work too.")};
        QTest::newRow("meeting note")
            << QStringLiteral("Action items:\n- Bob sends the budget by Friday\n* Carol books the venue\n\nThe launch moved to May.\nMarketing agreed.")
            << QStringList{QStringLiteral("Bob sends the budget by Friday"), QStringLiteral("Carol books the venue"),
                           QStringLiteral("The launch moved to May."), QStringLiteral("Marketing agreed.")};
        QTest::newRow("numbered list") << QStringLiteral("1. Buy milk\n2) Call the bank\n• Renew the passport")
                                       << QStringList{QStringLiteral("Buy milk"), QStringLiteral("Call the bank"),
                                                      QStringLiteral("Renew the passport")};
        QTest::newRow("wrapped paragraph") << QStringLiteral("The server runs on\nport 8080 behind nginx.\r\nIt restarts nightly.")
                                           << QStringList{QStringLiteral("The server runs on port 8080 behind nginx."),
                                                          QStringLiteral("It restarts nightly.")};
        QTest::newRow("sentence ending in no") << QStringLiteral("The answer was no. We stopped there.")
                                               << QStringList{QStringLiteral("The answer was no."), QStringLiteral("We stopped there.")};
        QTest::newRow("repeats kept once") << QStringLiteral("Tea is hot. Tea is hot. Coffee is cold.")
                                           << QStringList{QStringLiteral("Tea is hot."), QStringLiteral("Coffee is cold.")};
        QTest::newRow("punctuation only") << QStringLiteral("!!! ... ;;") << QStringList{};
        QTest::newRow("long heading is a statement") << QStringLiteral("The team decided the following after a long debate:")
                                                     << QStringList{QStringLiteral("The team decided the following after a long debate:")};
    }

    void split()
    {
        QFETCH(QString, text);
        QFETCH(QStringList, expected);
        QCOMPARE(StatementSplitter::split(text), expected);
    }
};

QTEST_GUILESS_MAIN(TestStatementSplitter)
#include "test_statement_splitter.moc"
