#pragma once

// The flow of crew_flow/main.cpp, as a class, so that another program (Mneme Studio's Run view) runs
// the same flow on the same cassette.

#include <mneme/flows/flow.h>
#include <mneme/memory/memory.h>
#include <mneme/runtime/crew.h>

#include <QString>
#include <memory>

namespace example {

// The inputs the example kicks the flow off with; its cassette answers them.
inline mneme::Json launchInputs()
{
    return mneme::Json{{"product", "a solar-powered e-bike charger"}, {"audience", "city commuters"}};
}

// "plan" turns the kickoff inputs into the crew's inputs, "research" kicks off a two-agent crew (its
// QFuture awaited without blocking the flow's thread), "publish" keeps the crew's result in the flow's
// memory (/flow/launchflow/taglines). Run it as mneme::FlowInstance<LaunchFlow>.
class LaunchFlow : public mneme::Flow
{
public:
    LaunchFlow(const mneme::LlmRef &llm, const mneme::FlowOptions &options) : mneme::Flow(QStringLiteral("LaunchFlow"), options)
    {
        auto researcher = std::make_shared<mneme::Agent>(mneme::AgentConfig{
            .role = QStringLiteral("Product Researcher"),
            .goal = QStringLiteral("Know what {audience} need from {product}."),
            .backstory = QStringLiteral("You interview customers and report what they actually say."),
            .llm = llm,
        });
        auto writer = std::make_shared<mneme::Agent>(mneme::AgentConfig{
            .role = QStringLiteral("Tagline Writer"),
            .goal = QStringLiteral("Write taglines that speak to {audience}."),
            .backstory = QStringLiteral("You write short lines people remember."),
            .llm = llm,
        });
        auto needs = std::make_shared<mneme::Task>(mneme::TaskConfig{
            .name = QStringLiteral("needs"),
            .description = QStringLiteral("List what {audience} need from {product}."),
            .expectedOutput = QStringLiteral("Three short bullet points."),
            .agent = researcher,
        });
        auto tagline = std::make_shared<mneme::Task>(mneme::TaskConfig{
            .name = QStringLiteral("tagline"),
            .description = QStringLiteral("Write one tagline for {product} from those needs."),
            .expectedOutput = QStringLiteral("One line, at most ten words."),
            .agent = writer,
        });
        m_crew = std::make_unique<mneme::Crew>(mneme::CrewConfig{
            .name = QStringLiteral("Launch Crew"),
            .agents = {researcher, writer},
            .tasks = {needs, tagline},
            .eventBus = options.eventBus,
        });

        start("plan", [](const mneme::Json &inputs) {
            return mneme::Json{{"product", inputs.value("product", std::string("our product"))},
                               {"audience", inputs.value("audience", std::string("customers"))}};
        });
        listen("research", "plan", [this](const mneme::Json &plan) { return m_crew->kickoff(plan); });
        listen("publish", "research", [this](const mneme::CrewOutput &out) {
            mneme::RememberOptions o;
            o.scope = QStringLiteral("/taglines");
            o.importance = 0.8;
            o.categories = QStringList{QStringLiteral("marketing")};
            const mneme::MemoryRecord stored = remember(out.raw.trimmed(), o);
            return QStringLiteral("Stored \"%1\" at %2 (%3 tokens)").arg(stored.content, stored.scope).arg(out.tokenUsage.totalTokens());
        });
    }

private:
    std::unique_ptr<mneme::Crew> m_crew;
};

} // namespace example
