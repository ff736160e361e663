#include <mneme/core/error.h>
#include <mneme/memory/memory.h>

#include <QCoreApplication>
#include <cstdio>

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    try {
        mneme::Memory memory; // the default store (~/.local/share/mneme/memory.db), builtin embedder, no LLM

        mneme::RememberOptions decision;
        decision.scope = QStringLiteral("/project/alpha");
        decision.categories = QStringList{QStringLiteral("decision")};
        decision.importance = 0.9;
        memory.remember(QStringLiteral("We decided to use PostgreSQL for the user database."), decision);
        memory.remember(QStringLiteral("Our staging environment uses port 8080."));

        for (const mneme::MemoryMatch &m : memory.recall(QStringLiteral("Which database did we choose?")))
            std::printf("[%.2f] %s (%s)\n", m.score, qPrintable(m.record.content),
                        qPrintable(m.matchReasons.join(QStringLiteral(", "))));
        std::printf("%s\n", qPrintable(memory.tree()));
    } catch (const mneme::Error &e) {
        std::fprintf(stderr, "%s\n", qPrintable(e.message()));
        return 1;
    }
    return 0;
}
