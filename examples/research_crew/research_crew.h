#pragma once

// The research crew of research_crew/main.cpp, as a function, so that another program (Mneme
// Studio's Run view) runs the same crew on the same cassette.

#include <mneme/core/plugin_registry.h>
#include <mneme/runtime/crew.h>

#include <QStringList>
#include <memory>

namespace example {

// The topics the example kicks the crew off with, in order; its cassette holds both runs.
inline QStringList researchTopics()
{
    return {QStringLiteral("residential heat pumps"), QStringLiteral("heat pump running costs")};
}

// A researcher (with the calculator tool) gathers facts, a writer turns them into a brief; the crew's
// memory is the SQLite file `db`. `bus` null: the global EventBus.
inline std::unique_ptr<mneme::Crew> makeResearchCrew(const mneme::LlmRef &llm, const QString &db, mneme::EventBus *bus = nullptr)
{
    using namespace mneme;
    auto researcher = std::make_shared<Agent>(AgentConfig{
        .role = QStringLiteral("Researcher"),
        .goal = QStringLiteral("Find accurate, specific facts about {topic}, with figures."),
        .backstory = QStringLiteral("You are an energy analyst who checks numbers before you state them and uses the "
                                    "calculator for any arithmetic."),
        .llm = llm,
        .tools = {PluginRegistry::instance().createTool(QStringLiteral("calculator"))},
    });
    auto writer = std::make_shared<Agent>(AgentConfig{
        .role = QStringLiteral("Writer"),
        .goal = QStringLiteral("Explain {topic} clearly to a busy homeowner."),
        .backstory = QStringLiteral("You write short, concrete briefs and never add facts the research does not contain."),
        .llm = llm,
    });
    auto research = std::make_shared<Task>(TaskConfig{
        .name = QStringLiteral("research"),
        .description = QStringLiteral("Research {topic}. Start from what the team already knows, and give the key facts "
                                      "with figures."),
        .expectedOutput = QStringLiteral("Three to five bullet points, each a fact with a figure."),
        .agent = researcher,
    });
    auto brief = std::make_shared<Task>(TaskConfig{
        .name = QStringLiteral("brief"),
        .description = QStringLiteral("Write a brief on {topic} from the research."),
        .expectedOutput = QStringLiteral("One paragraph of at most four sentences."),
        .agent = writer,
    });

    MemoryConfig memory;
    memory.storage = db.toStdString();
    return std::make_unique<Crew>(CrewConfig{
        .name = QStringLiteral("Research Crew"),
        .agents = {researcher, writer},
        .tasks = {research, brief},
        .memory = true,
        .memoryConfig = memory,
        .eventBus = bus,
    });
}

} // namespace example
