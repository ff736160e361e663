// The offline save analysis: OfflineAnalyzer (importance, categories, metadata, scope choice).

#include "memory/offline_analyzer_p.h"

#include <QtTest>

using namespace mneme;

using Neighbours = QList<QPair<QString, double>>;

namespace {

const QString kNeutral = QStringLiteral("The kettle is in the kitchen.");

QStringList strings(const Json &array)
{
    return array.get<QStringList>();
}

} // namespace

class TestOfflineAnalyzer : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void neutralIsBase_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<double>("base");
        QTest::newRow("kettle 0.5") << kNeutral << 0.5;
        QTest::newRow("kettle 0.3") << kNeutral << 0.3;
        QTest::newRow("kettle 0.8") << kNeutral << 0.8;
        QTest::newRow("plants") << QStringLiteral("The office plants get water from the cleaning crew.") << 0.5;
        QTest::newRow("tea") << QStringLiteral("Green tea tastes better with a slice of lemon.") << 0.6;
    }

    void neutralIsBase()
    {
        QFETCH(QString, text);
        QFETCH(double, base);
        QCOMPARE(OfflineAnalyzer::importance(text, base), base);
    }

    // Each row: the first text must score strictly higher than the second at the same base.
    void importanceOrder_data()
    {
        QTest::addColumn<QString>("higher");
        QTest::addColumn<QString>("lower");
        const auto row = [](const char *name, const char *higher, const QString &lower) {
            QTest::newRow(name) << QString::fromUtf8(higher) << lower;
        };
        const auto pair = [](const char *name, const char *higher, const char *lower) {
            QTest::newRow(name) << QString::fromUtf8(higher) << QString::fromUtf8(lower);
        };
        row("decision", "We decided to move the launch party to the roof.", kNeutral);
        row("rule", "Deploys must never happen during the freeze.", kNeutral);
        row("commitment", "I will send the report to the finance team.", kNeutral);
        row("deadline", "The report is due on 2024-06-01.", kNeutral);
        row("date", "The plumber came on May 3rd.", kNeutral);
        row("preference", "I prefer green tea over coffee in the morning.", kNeutral);
        row("security", "Never share the production password with anyone.", kNeutral);
        row("warning", "Warning: the staging database is shared with production.", kNeutral);
        row("problem", "The nightly build failed on the main branch.", kNeutral);
        row("lesson", "Lesson learned: back up the database before migrations.", kNeutral);
        row("contact", "Reach the landlord at landlord@example.com for repairs.", kNeutral);
        pair("name", "The kettle belongs to Maria from accounting.", "The kettle belongs to someone from accounting.");
        pair("number", "The kettle holds 2 litres of water.", "The kettle holds plenty of water.");
        row("neutral over greeting", "The kettle is in the kitchen.", QStringLiteral("Hi there, how are you doing today?"));
        row("neutral over hedge", "The kettle is in the kitchen.", QStringLiteral("Maybe the kettle is in the kitchen."));
        row("neutral over I think", "The kettle is in the kitchen.", QStringLiteral("I think the kettle is in the kitchen."));
        row("neutral over question", "The kettle is in the kitchen.", QStringLiteral("Is the kettle in the kitchen?"));
        row("neutral over very short", "The kettle is in the kitchen.", QStringLiteral("Kettle noted."));
        pair("decision over hedged decision", "We decided to use Postgres for billing.",
             "I think we decided to use Postgres for billing.");
        row("hedged decision over neutral", "I think we decided to use Postgres for billing.", kNeutral);
        pair("decision over greeting", "We decided to use Postgres for billing.", "Good morning everyone, how are you?");
        pair("more cues over fewer", "We decided that Alice must deliver the budget by Friday.",
             "We decided to paint the fence green.");
        row("greeting with decision over neutral", "Hi all, we decided to use Postgres for billing.", kNeutral);
        pair("question over thanks", "Is the kettle in the kitchen?", "Thanks!");
        pair("statement over its question", "The deadline for the report is Friday.", "Is the deadline for the report Friday?");
        pair("rule over small talk", "Always lock the server room.", "Nice weather today, isn't it?");
        row("curly apostrophe commitment", "We\u2019ll book the venue for the offsite.", kNeutral);
    }

    void importanceOrder()
    {
        QFETCH(QString, higher);
        QFETCH(QString, lower);
        const double h = OfflineAnalyzer::importance(higher, 0.5);
        const double l = OfflineAnalyzer::importance(lower, 0.5);
        QVERIFY2(h > l, qPrintable(QStringLiteral("%1 <= %2").arg(h).arg(l)));
    }

    void importanceRange_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<double>("base");
        QTest::addColumn<double>("min");
        QTest::addColumn<double>("max");
        const QString loaded = QStringLiteral("Urgent: we decided Alice must rotate the password by 2024-06-01; "
                                              "I will email bob@example.com, the last rotation failed.");
        QTest::newRow("many cues clamp high") << loaded << 0.9 << 0.95 << 0.95;
        QTest::newRow("many cues from low base") << loaded << 0.2 << 0.75 << 0.95;
        QTest::newRow("ok clamps low") << QStringLiteral("ok") << 0.1 << 0.05 << 0.05;
        QTest::newRow("empty is low") << QString() << 0.5 << 0.05 << 0.25;
        QTest::newRow("greeting well below base") << QStringLiteral("Hello!") << 0.5 << 0.05 << 0.3;
        QTest::newRow("base above range") << kNeutral << 1.5 << 0.95 << 0.95;
        QTest::newRow("base below range") << kNeutral << -1.0 << 0.05 << 0.05;
        QTest::newRow("one cue moderate") << QStringLiteral("The build failed on the main branch.") << 0.5 << 0.55 << 0.7;
    }

    void importanceRange()
    {
        QFETCH(QString, text);
        QFETCH(double, base);
        QFETCH(double, min);
        QFETCH(double, max);
        const double v = OfflineAnalyzer::importance(text, base);
        QVERIFY2(v >= min - 1e-9 && v <= max + 1e-9, qPrintable(QString::number(v)));
        QCOMPARE(OfflineAnalyzer::importance(text, base), v); // deterministic
    }

    void categories_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("existing");
        QTest::addColumn<QStringList>("expected");
        const auto row = [](const char *name, const char *text, const QStringList &existing, const QStringList &expected) {
            QTest::newRow(name) << QString::fromUtf8(text) << existing << expected;
        };
        using L = QStringList;
        row("empty", "", L{QStringLiteral("work")}, L{});
        row("neutral", "The kettle is in the kitchen.", L{QStringLiteral("work")}, L{});
        row("decision", "We decided to use Postgres for billing.", L{}, L{QStringLiteral("decision")});
        row("existing spelling of vocabulary", "We decided to use Postgres for billing.",
            L{QStringLiteral("Decisions"), QStringLiteral("billing")}, L{QStringLiteral("billing"), QStringLiteral("Decisions")});
        row("names as written, in order of appearance", "Notes about the project-alpha kickoff and code reviews",
            L{QStringLiteral("Code Review"), QStringLiteral("kickoff"), QStringLiteral("Project_Alpha")},
            L{QStringLiteral("Project_Alpha"), QStringLiteral("kickoff"), QStringLiteral("Code Review")});
        row("plural and stem", "Our travel plans for Japan", L{QStringLiteral("plan"), QStringLiteral("Traveling")},
            L{QStringLiteral("Traveling"), QStringLiteral("plan")});
        row("planning matches plan", "Planning the offsite budget", L{QStringLiteral("plans")},
            L{QStringLiteral("plans"), QStringLiteral("event")});
        row("plan is not planet", "The planet Mars is red.", L{QStringLiteral("plan")}, L{});
        row("plans is not planets", "We watched planets all night.", L{QStringLiteral("Plans")}, L{});
        row("may verb", "I may call Bob later.", L{}, L{});
        row("category inside word", "The bureaucracy is slow.", L{QStringLiteral("bureau")}, L{});
        row("hyphen as space", "We discussed machine learning models", L{QStringLiteral("machine-learning")},
            L{QStringLiteral("machine-learning")});
        row("case kept", "the budget is tight", L{QStringLiteral("BUDGET")}, L{QStringLiteral("BUDGET")});
        row("repeats kept once", "budget review", L{QStringLiteral("Budget"), QStringLiteral("budget"), QStringLiteral("budgets")},
            L{QStringLiteral("Budget")});
        row("longer name first at same place", "machine learning is fun",
            L{QStringLiteral("learning"), QStringLiteral("machine learning")},
            L{QStringLiteral("machine learning"), QStringLiteral("learning")});
        row("blank names ignored", "text about work", L{QString(), QStringLiteral("  "), QStringLiteral("--")}, L{});
        row("at most four", "We decided the deadline is Friday; passwords must rotate; the build failed.", L{},
            L{QStringLiteral("decision"), QStringLiteral("deadline"), QStringLiteral("rule"), QStringLiteral("problem")});
        row("existing first within four", "We decided the deadline is Friday; passwords must rotate; the build failed.",
            L{QStringLiteral("build")},
            L{QStringLiteral("build"), QStringLiteral("decision"), QStringLiteral("deadline"), QStringLiteral("rule")});
        row("email contact", "Bob's address is bob@example.com", L{}, L{QStringLiteral("contact")});
        row("phone contact", "The plumber's number is +1 555 123 4567.", L{}, L{QStringLiteral("contact")});
        row("iso date is not a phone", "The plumber came on 2024-05-03.", L{}, L{});
        row("person", "My sister works at the hospital.", L{}, L{QStringLiteral("person")});
        row("event", "The team meeting moved to Thursday.", L{}, L{QStringLiteral("event")});
        row("third party is no event", "We use a third-party library.", L{}, L{});
        row("preference", "Alice prefers tea over coffee.", L{}, L{QStringLiteral("preference")});
        row("lesson", "Lesson learned: back up first.", L{}, L{QStringLiteral("lesson")});
        row("imperative rule", "Never push directly to main.", L{}, L{QStringLiteral("rule")});
        row("rule after semicolon", "The limit is firm; never exceed it.", L{}, L{QStringLiteral("rule")});
        row("habit is no rule", "I never drink coffee after lunch.", L{}, L{});
        row("security", "Rotate the API keys every month.", L{}, L{QStringLiteral("security")});
        row("problem", "The nightly job crashed again.", L{}, L{QStringLiteral("problem")});
        row("plan", "Next steps: migrate the database in June.", L{}, L{QStringLiteral("plan")});
        row("deadline", "The slides are due Friday.", L{}, L{QStringLiteral("deadline")});
        row("due to is no deadline", "The delay was due to rain.", L{}, L{});
    }

    void categories()
    {
        QFETCH(QString, text);
        QFETCH(QStringList, existing);
        QFETCH(QStringList, expected);
        QCOMPARE(OfflineAnalyzer::categories(text, existing), expected);
    }

    void metadata_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("entities");
        QTest::addColumn<QStringList>("dates");
        QTest::addColumn<QStringList>("topics");
        using L = QStringList;
        const auto row = [](const char *name, const char *text, const L &entities, const L &dates, const L &topics) {
            QTest::newRow(name) << QString::fromUtf8(text) << entities << dates << topics;
        };
        row("empty", "", L{}, L{}, L{});
        row("names and places", "Yesterday Alice met Bob Smith in New York.",
            L{QStringLiteral("Alice"), QStringLiteral("Bob Smith"), QStringLiteral("New York")}, L{QStringLiteral("Yesterday")},
            L{QStringLiteral("alice"), QStringLiteral("smith"), QStringLiteral("york"), QStringLiteral("met"), QStringLiteral("bob")});
        row("sentence start alone is no name", "Alice moved to Berlin.", L{QStringLiteral("Berlin")}, L{},
            L{QStringLiteral("berlin"), QStringLiteral("alice"), QStringLiteral("moved")});
        row("two words at start", "New York is expensive.", L{QStringLiteral("New York")}, L{},
            L{QStringLiteral("expensive"), QStringLiteral("york")});
        row("stop words cut names", "I think The Beatles were great.", L{QStringLiteral("Beatles")}, L{},
            L{QStringLiteral("beatles")});
        row("emails and handles", "Email alice@example.com or ping @bob_k on Slack.",
            L{QStringLiteral("alice@example.com"), QStringLiteral("@bob_k"), QStringLiteral("Slack")}, L{},
            L{QStringLiteral("email"), QStringLiteral("slack"), QStringLiteral("ping")});
        row("title and calendar words", "We met Dr. Smith on Monday in May.", L{QStringLiteral("Smith")},
            L{QStringLiteral("Monday"), QStringLiteral("May")}, L{QStringLiteral("smith"), QStringLiteral("met")});
        row("acronyms", "The API uses OAuth.", L{QStringLiteral("API"), QStringLiteral("OAuth")}, L{},
            L{QStringLiteral("oauth"), QStringLiteral("uses"), QStringLiteral("api")});
        row("repeats once", "Ask Bob. We told Bob and bob.", L{QStringLiteral("Bob")}, L{}, L{QStringLiteral("bob")});
        row("iso day and clock", "The release is on 2024-05-03 at 3pm.", L{},
            L{QStringLiteral("2024-05-03"), QStringLiteral("3pm")}, L{QStringLiteral("release")});
        row("written dates", "Due May 3rd, next Tuesday or 10:30 am.", L{},
            L{QStringLiteral("May 3rd"), QStringLiteral("next Tuesday"), QStringLiteral("10:30 am")}, L{QStringLiteral("due")});
        row("day month year and relative", "We met on 7 May 2023 and again last week.", L{},
            L{QStringLiteral("7 May 2023"), QStringLiteral("last week")}, L{QStringLiteral("met")});
        row("may as verb", "I may call Bob.", L{QStringLiteral("Bob")}, L{}, L{QStringLiteral("call"), QStringLiteral("bob")});
        row("month and year after preposition", "In May the team grows; since 2021 we have 3 offices.", L{},
            L{QStringLiteral("May"), QStringLiteral("2021")},
            L{QStringLiteral("offices"), QStringLiteral("grows"), QStringLiteral("team")});
        row("counts", "It broke three days ago; the fix lands in 2 weeks.", L{},
            L{QStringLiteral("three days ago"), QStringLiteral("in 2 weeks")},
            L{QStringLiteral("broke"), QStringLiteral("lands"), QStringLiteral("fix")});
        row("iso date-time whole", "Meeting at 2024-05-03T10:00:00Z.", L{}, L{QStringLiteral("2024-05-03T10:00:00Z")},
            L{QStringLiteral("meeting")});
        row("topics by frequency then length", "The database migration failed; the database backup worked.", L{}, L{},
            L{QStringLiteral("database"), QStringLiteral("migration"), QStringLiteral("failed"), QStringLiteral("backup"),
              QStringLiteral("worked")});
        row("topics at most five", "alpha beta gamma delta epsilon zeta", L{}, L{},
            L{QStringLiteral("epsilon"), QStringLiteral("alpha"), QStringLiteral("gamma"), QStringLiteral("delta"),
              QStringLiteral("beta")});
        row("plurals counted together", "Meetings, meeting, meetings about budgets", L{}, L{},
            L{QStringLiteral("meetings"), QStringLiteral("budgets")});
        row("stop words only", "It is what it is.", L{}, L{}, L{});
        row("numbers are no topics", "room 42 has 3 chairs", L{}, L{}, L{QStringLiteral("chairs"), QStringLiteral("room")});
    }

    void metadata()
    {
        QFETCH(QString, text);
        QFETCH(QStringList, entities);
        QFETCH(QStringList, dates);
        QFETCH(QStringList, topics);
        const Json m = OfflineAnalyzer::metadata(text);
        QVERIFY(m.is_object());
        QCOMPARE(m.size(), size_t(3));
        QVERIFY(m["entities"].is_array() && m["dates"].is_array() && m["topics"].is_array());
        QCOMPARE(strings(m["entities"]), entities);
        QCOMPARE(strings(m["dates"]), dates);
        QCOMPARE(strings(m["topics"]), topics);
    }

    void analyzeCombines()
    {
        const QString text = QStringLiteral("We decided Alice owns the billing migration by Friday.");
        const QStringList existing = {QStringLiteral("Billing"), QStringLiteral("Decisions")};
        const OfflineAnalysis a = OfflineAnalyzer::analyze(text, 0.4, existing);
        QCOMPARE(a.importance, OfflineAnalyzer::importance(text, 0.4));
        QCOMPARE(a.categories, OfflineAnalyzer::categories(text, existing));
        QCOMPARE(a.categories.value(0), QStringLiteral("Billing"));
        QCOMPARE(a.metadata, OfflineAnalyzer::metadata(text));
        QVERIFY(a.importance > 0.4);
        // The categories prepared once for a batch give the same analysis.
        const OfflineAnalysis prepared = OfflineAnalyzer::analyze(text, 0.4, OfflineCategories(existing));
        QCOMPARE(prepared.importance, a.importance);
        QCOMPARE(prepared.categories, a.categories);
        QCOMPARE(prepared.metadata, a.metadata);
    }

    // The analyzer runs a pattern only where the text holds a word every match of it contains; on
    // texts that exercise every alternative of every pattern, in any case, nothing is lost by that.
    void shortcutMissesNothing_data()
    {
        QTest::addColumn<QString>("text");
        const char *const phrases[] = {
            // decision
            "We decided",
            "she decides",
            "the decision",
            "decisions made",
            "we agreed",
            "settled on rust",
            "went with B",
            "going with A",
            "I chose",
            "was chosen",
            "we opted",
            "approved",
            "signed off",
            "final call",
            "we will use Go",
            "I'll use it",
            // commitment
            "I will go",
            "they shall",
            "we'll see",
            "he promised",
            "promises",
            "committed to it",
            "commit to",
            "action items",
            "a to-do",
            "todos",
            "follow-up",
            "follow up",
            "assigned to me",
            "responsible for it",
            "in charge of it",
            "will send",
            "will own",
            // constraint and rule
            "must",
            "mustn't",
            "never",
            "always",
            "required",
            "requires",
            "requirements",
            "mandatory",
            "have to",
            "has to",
            "had to",
            "needs to",
            "need to",
            "not allowed",
            "forbidden",
            "prohibited",
            "policy",
            "policies",
            "rules",
            "under no circumstances",
            "Done. Always test.",
            "ok; never again",
            // deadline
            "deadline",
            "overdue",
            "due Friday",
            "no later than",
            "by the end of May",
            "by EOD",
            "by eow",
            "by tomorrow",
            "by tonight",
            "by next week",
            "by noon",
            "by midnight",
            "by Monday",
            "by June",
            "by 5",
            // preference
            "I like it",
            "we really love",
            "you don't hate",
            "he do not enjoy",
            "she prefers",
            "they dislike",
            "I adore",
            "likes",
            "loves",
            "hates",
            "enjoys",
            "prefer",
            "preferred",
            "preferences",
            "favourite",
            "favorites",
            "can't stand",
            "would rather",
            "I'd rather",
            "they'd rather",
            // plan
            "plans",
            "planned",
            "planning",
            "roadmap",
            "next steps",
            "intends to",
            "intending to",
            "milestones",
            "schedule",
            "scheduled",
            // problem
            "bugs",
            "errors",
            "fail",
            "failed",
            "failing",
            "failures",
            "crash",
            "crashes",
            "crashed",
            "crashing",
            "broken",
            "outages",
            "problems",
            "exceptions",
            "regression",
            "doesn't work",
            "does not work",
            "not working",
            "timed out",
            "timeouts",
            "incident",
            "segfault",
            "issues",
            // lesson
            "lessons",
            "learned",
            "learnt",
            "turns out",
            "turned out",
            "note to self",
            "in hindsight",
            "next time",
            "realized",
            "realised",
            "takeaways",
            "mistakes",
            "should have",
            // warning and security
            "warning",
            "warn",
            "warned",
            "careful",
            "caution",
            "danger",
            "dangerous",
            "critical",
            "urgent",
            "urgently",
            "important",
            "asap",
            "do not share",
            "don't share",
            "never share",
            "leaked",
            "security",
            "secure",
            "insecure",
            "passwords",
            "passphrase",
            "credentials",
            "secrets",
            "api keys",
            "private key",
            "ssh keys",
            "access tokens",
            "vulnerability",
            "vulnerabilities",
            "CVE-2024-1234",
            "breaches",
            "phishing",
            "malware",
            "encrypted",
            "encryption",
            "2FA",
            "MFA",
            "two-factor",
            // person
            "my wife",
            "our son",
            "his boss",
            "her fiancée",
            "their neighbours",
            "my co-worker",
            "works at",
            "works for",
            "works as",
            "lives in",
            "was born",
            "born in",
            "grew up in",
            "is married to",
            // event
            "meetings",
            "conference",
            "weddings",
            "party",
            "parties",
            "appointments",
            "interview",
            "webinars",
            "workshop",
            "concerts",
            "ceremony",
            "ceremonies",
            "summit",
            "trips",
            "vacation",
            "birthdays",
            "anniversary",
            "anniversaries",
            "funeral",
            "graduation",
            "meetups",
            "standup",
            "stand-ups",
            "offsites",
            "hackathon",
            // addresses, handles, phones
            "mail a.b+c@example.co.uk now",
            "ping @bob_k",
            "see https://example.com/x",
            "www.example.org",
            "call +44 20 7946 0958",
            "call (555) 123-4567",
            "555.123.4567",
            // small talk and hedges
            "hi",
            "Hello there",
            "hey",
            "yo",
            "howdy",
            "good morning",
            "thanks",
            "thank you",
            "thx",
            "cheers",
            "bye",
            "goodbye",
            "see you",
            "see ya",
            "take care",
            "ok",
            "okay",
            "cool",
            "nice",
            "great",
            "awesome",
            "lol",
            "haha",
            "sure",
            "no worries",
            "you're welcome",
            "sounds good",
            "how are you",
            "how's it going",
            "what's up",
            "nice weather",
            "have a nice day",
            "have a great weekend",
            "maybe",
            "perhaps",
            "probably",
            "possibly",
            "might",
            "I think",
            "I guess",
            "I suppose",
            "I believe",
            "not sure",
            "unsure",
            "kind of",
            "sort of",
            "could be",
            "I wonder",
            "hopefully",
            // dates and times
            "2024-05-03",
            "2024/5/3 10:30",
            "2024-05-03T10:00:00Z",
            "5/3/24",
            "03.05.2024",
            "May 3rd",
            "Sept. 3, 2024",
            "3 May",
            "3rd of June, 2023",
            "May, 2024",
            "Dec 2023",
            "last March",
            "this June",
            "next August",
            "in May",
            "since February",
            "end of October",
            "beginning of July",
            "in 2021",
            "since 1999",
            "the day before yesterday",
            "the day after tomorrow",
            "today",
            "tonight",
            "tomorrow",
            "yesterday",
            "last night",
            "this morning",
            "this evening",
            "next week",
            "past month",
            "previous year",
            "coming weekend",
            "last quarter",
            "Monday",
            "next Tuesday",
            "every Sunday",
            "Fridays",
            "last 3 days",
            "past few weeks",
            "next couple of months",
            "two years ago",
            "a week from now",
            "in 5 minutes",
            "in an hour",
            "10:30",
            "23:59:59 pm",
            "3pm",
            "11 a.m.",
            "noon",
            "midday",
            "midnight",
            "EOD",
            "eow",
            "end of the quarter",
            "end of year",
            "Q3",
            "q4 2024",
        };
        for (const char *phrase : phrases) {
            const QString text = QString::fromUtf8(phrase);
            QTest::newRow(phrase) << text;
            QTest::newRow(QByteArray(phrase).toUpper().constData()) << text.toUpper();
            QTest::newRow((QByteArray("in a sentence: ") + phrase).constData())
                << QStringLiteral("Yesterday, Alice said: %1. Then she left.").arg(text);
        }
        // Letters a case-insensitive pattern reads as ASCII ones: the Kelvin sign as 'k', the long s as 's'.
        QTest::newRow("kelvin sign") << QStringLiteral("\u212Aind of");
        QTest::newRow("long s") << QStringLiteral("\u017Fecurity and pa\u017F\u017Fwords");
        QTest::newRow("typographic apostrophe") << QStringLiteral("we\u2019ll see; I\u2019d rather not");
        QTest::newRow("non-ASCII digits") << QStringLiteral("\u0661\u0662/\u0663/\u0662\u0660\u0662\u0664 at \u0661\u0660:\u0663\u0660");
    }

    void shortcutMissesNothing()
    {
        QFETCH(QString, text);
        QCOMPARE(OfflineAnalyzer::missedByShortcut(text), QStringList());
    }

    void chooseScope_data()
    {
        QTest::addColumn<Neighbours>("neighbours");
        QTest::addColumn<double>("minSimilarity");
        QTest::addColumn<QString>("expected");
        const QString fallback = QStringLiteral("/inbox");
        const auto n = [](const char *scope, double similarity) { return qMakePair(QString::fromLatin1(scope), similarity); };
        QTest::newRow("none") << Neighbours{} << 0.55 << fallback;
        QTest::newRow("one above") << Neighbours{n("/work", 0.8)} << 0.55 << QStringLiteral("/work");
        QTest::newRow("one below") << Neighbours{n("/work", 0.5)} << 0.55 << fallback;
        QTest::newRow("exactly at threshold") << Neighbours{n("/work", 0.55)} << 0.55 << QStringLiteral("/work");
        QTest::newRow("votes add up") << Neighbours{n("/a", 0.9), n("/b", 0.8), n("/b", 0.75)} << 0.55 << QStringLiteral("/b");
        QTest::newRow("weak neighbours do not vote")
            << Neighbours{n("/a", 0.9), n("/b", 0.5), n("/b", 0.5), n("/b", 0.5)} << 0.55 << QStringLiteral("/a");
        QTest::newRow("tie goes deeper") << Neighbours{n("/a", 0.7), n("/a/b", 0.7)} << 0.55 << QStringLiteral("/a/b");
        QTest::newRow("tie alphabetical") << Neighbours{n("/z", 0.7), n("/m", 0.7)} << 0.55 << QStringLiteral("/m");
        QTest::newRow("rounding tie") << Neighbours{n("/b", 0.1), n("/b", 0.2), n("/a", 0.3)} << 0.05 << QStringLiteral("/a");
        QTest::newRow("custom threshold") << Neighbours{n("/a", 0.85)} << 0.9 << fallback;
        QTest::newRow("empty scope does not vote") << Neighbours{n("", 0.99), n("/a", 0.6)} << 0.55 << QStringLiteral("/a");
        QTest::newRow("best first order irrelevant to total")
            << Neighbours{n("/x", 0.95), n("/y", 0.6), n("/y", 0.6)} << 0.55 << QStringLiteral("/y");
    }

    void chooseScope()
    {
        QFETCH(Neighbours, neighbours);
        QFETCH(double, minSimilarity);
        QFETCH(QString, expected);
        QCOMPARE(OfflineAnalyzer::chooseScope(neighbours, QStringLiteral("/inbox"), minSimilarity), expected);
    }

    void chooseScopeDefaultThreshold()
    {
        QCOMPARE(OfflineAnalyzer::chooseScope({qMakePair(QStringLiteral("/a"), 0.56)}, QStringLiteral("/")), QStringLiteral("/a"));
        QCOMPARE(OfflineAnalyzer::chooseScope({qMakePair(QStringLiteral("/a"), 0.54)}, QStringLiteral("/")), QStringLiteral("/"));
    }
};

QTEST_GUILESS_MAIN(TestOfflineAnalyzer)
#include "test_offline_analyzer.moc"
