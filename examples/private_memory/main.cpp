// Memory views in a crew: an assistant works in Alice's private subtree (a MemoryScope) and saves what
// it learns there; a reader of the team's handbook sees only /team, read-only (a MemorySlice: it gets
// the search tool but not the save tool, and nothing it does is stored). Neither sees the other's part.
//
//   private_memory [--verbose]

#include "../common/example_llm.h"

#include <mneme/memory/memory.h>
#include <mneme/runtime/console_listener.h>
#include <mneme/runtime/crew.h>

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QTemporaryDir>
#include <cstdio>

using namespace mneme;

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCommandLineParser cli;
    cli.addHelpOption();
    cli.addOption({QStringLiteral("verbose"), QStringLiteral("Print every event of the crew.")});
    cli.process(app);

    const example::ExampleLlm choice = example::chooseLlm(QStringLiteral(MNEME_EXAMPLE_DIR "/private_memory.jsonl"));
    std::printf("%s\n", qPrintable(choice.line));

    QTemporaryDir scratch;
    try {
        // One store for the whole team; its analysis uses the same LLM as the agents.
        MemoryConfig config;
        config.storage = scratch.filePath(QStringLiteral("team.db")).toStdString();
        Memory memory(config);
        memory.setLlm(choice.llm.resolve());
        RememberOptions handbook;
        handbook.scope = QStringLiteral("/team/handbook");
        handbook.categories = QStringList{QStringLiteral("policy")};
        handbook.importance = 0.8;
        memory.remember(QStringLiteral("New hires get a laptop and a mentor in their first week."), handbook);
        memory.remember(QStringLiteral("Team meetings are never scheduled on Fridays."), handbook);

        auto assistant = std::make_shared<Agent>(AgentConfig{
            .role = QStringLiteral("Alice's Assistant"),
            .goal = QStringLiteral("Remember what matters to Alice for planning her week."),
            .backstory = QStringLiteral("You work for Alice only and keep her details private."),
            .llm = choice.llm,
            .memory = memory.scope(QStringLiteral("/private/alice")),
        });
        auto reader = std::make_shared<Agent>(AgentConfig{
            .role = QStringLiteral("Onboarding Guide"),
            .goal = QStringLiteral("Explain the team's rules to a new hire."),
            .backstory = QStringLiteral("You only repeat what the team handbook says."),
            .llm = choice.llm,
            .memory = memory.slice({QStringLiteral("/team")}),
        });
        auto note = std::make_shared<Task>(TaskConfig{
            .name = QStringLiteral("note preferences"),
            .description = QStringLiteral("Alice says: I prefer meetings before 11am, I am vegetarian, and I am away "
                                          "from 3 to 7 March. Confirm what you will keep in mind."),
            .expectedOutput = QStringLiteral("A short confirmation listing each preference."),
            .agent = assistant,
        });
        auto onboard = std::make_shared<Task>(TaskConfig{
            .name = QStringLiteral("onboarding"),
            .description = QStringLiteral("What should a new hire know about the team's rules?"),
            .expectedOutput = QStringLiteral("Two or three sentences."),
            .agent = reader,
            .context = std::vector<std::shared_ptr<Task>>{}, // the assistant's answer is not the guide's business
        });
        Crew crew(CrewConfig{
            .name = QStringLiteral("Office"),
            .agents = {assistant, reader},
            .tasks = {note, onboard},
        });
        std::unique_ptr<ConsoleListener> trace;
        if (cli.isSet(QStringLiteral("verbose")))
            trace = std::make_unique<ConsoleListener>(crew.eventBus(), stderr);

        const CrewOutput out = crew.kickoffAndWait();
        for (const TaskOutput &t : out.tasksOutput)
            std::printf("\n[%s]\n%s\n", qPrintable(t.agent), qPrintable(t.raw.trimmed()));

        std::printf("\nThe store:\n%s\n", qPrintable(memory.tree()));
        std::printf("\nIn Alice's private scope:\n");
        for (const MemoryRecord &r : memory.listRecords(QStringLiteral("/private/alice")))
            std::printf("  %s  %s\n", qPrintable(r.scope), qPrintable(r.content));
        std::printf("\nWhat the guide's slice finds for \"Alice's meetings and diet\":\n");
        for (const MemoryMatch &m : memory.slice({QStringLiteral("/team")}).recall(QStringLiteral("Alice's meetings and diet")))
            std::printf("  %s  %s\n", qPrintable(m.record.scope), qPrintable(m.record.content));
    } catch (const Error &e) {
        std::fprintf(stderr, "private_memory: %s\n", e.what());
        return 1;
    }
    return 0;
}
