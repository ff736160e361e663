// Mneme standalone memory: remember facts in several scopes, recall them with scores and reasons,
// look at the scope tree, let the offline analyzer file a note and split a meeting note into facts,
// undo an edit. Offline: SQLite storage and the builtin embedder, no LLM, no API key.

#include <mneme/memory/memory.h>

#include <QCoreApplication>
#include <QTemporaryDir>
#include <cstdio>

using namespace mneme;

namespace {

void print(const QString &text)
{
    std::printf("%s\n", qPrintable(text));
}

RememberOptions in(const QString &scope, double importance, const QStringList &categories)
{
    RememberOptions o;
    o.scope = scope;
    o.importance = importance;
    o.categories = categories;
    return o;
}

void show(Memory &memory, const QString &query, RecallOptions options = {})
{
    options.depth = RecallDepth::Shallow;
    options.limit = 3;
    print(QStringLiteral("\nrecall \"%1\"%2").arg(query, options.scopes.isEmpty() ? QString() : QStringLiteral(" in ") + options.scopes.join(QStringLiteral(", "))));
    for (const MemoryMatch &m : memory.recall(query, options))
        print(QStringLiteral("  [%1] %2  (%3; %4)")
                  .arg(m.score, 0, 'f', 2)
                  .arg(m.record.content, m.record.scope, m.matchReasons.join(QStringLiteral(", "))));
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QTemporaryDir dir;
    MemoryConfig config;
    config.storage = Json{{"provider", "sqlite"}, {"config", {{"path", dir.filePath(QStringLiteral("memory.db")).toStdString()}}}};

    try {
        Memory memory(config);
        print(QStringLiteral("Mneme standalone memory: store %1, embedder %2, no LLM")
                  .arg(memory.storage().location(), memory.embedder().id()));

        memory.remember(QStringLiteral("The API rate limit is 1000 requests per minute."), in(QStringLiteral("/product/docs"), 0.8, {QStringLiteral("limits")}));
        memory.remember(QStringLiteral("Our staging environment uses port 8080."), in(QStringLiteral("/project/alpha/infra"), 0.5, {QStringLiteral("infrastructure")}));
        memory.remember(QStringLiteral("We decided to use PostgreSQL for the user database."), in(QStringLiteral("/project/alpha/decisions"), 0.9, {QStringLiteral("decision"), QStringLiteral("database")}));
        memory.remember(QStringLiteral("GraphQL API for client apps."), in(QStringLiteral("/project/beta/api"), 0.6, {QStringLiteral("decision")}));

        // Many at once, in the background; recall waits for them (the read barrier).
        memory.rememberMany({QStringLiteral("Acme Corp prefers email communication."),
                             QStringLiteral("Acme Corp is on the enterprise plan with 50 seats."),
                             QStringLiteral("Acme Corp prefers email communication.")}, // dropped: same as the first
                            in(QStringLiteral("/customer/acme-corp"), 0.7, {QStringLiteral("customer")}));

        // A researcher's private view of its own subtree.
        MemoryScope researcher = memory.scope(QStringLiteral("/agent/researcher"));
        researcher.remember(QStringLiteral("Found three relevant papers on LLM memory."));

        // A private memory: only recalls with the same source see it.
        RememberOptions secret = in(QStringLiteral("/customer/acme-corp"), 0.9, {QStringLiteral("contact")});
        secret.source = QStringLiteral("user:alice");
        secret.isPrivate = true;
        memory.remember(QStringLiteral("Alice's direct line is extension 4411."), secret);

        show(memory, QStringLiteral("What database did we choose?"));
        show(memory, QStringLiteral("API limits"));
        RecallOptions acme;
        acme.scopes = {QStringLiteral("/customer/acme-corp")};
        show(memory, QStringLiteral("How should we contact Acme?"), acme);
        acme.source = QStringLiteral("user:alice");
        print(QStringLiteral("\n(as user:alice, who owns the private record)"));
        show(memory, QStringLiteral("How should we contact Acme?"), acme);

        MemorySlice view = memory.slice({QStringLiteral("/agent/researcher"), QStringLiteral("/product/docs")});
        print(QStringLiteral("\nread-only slice over /agent/researcher and /product/docs:"));
        for (const MemoryMatch &m : view.recall(QStringLiteral("papers and limits")))
            print(QStringLiteral("  [%1] %2").arg(m.score, 0, 'f', 2).arg(m.record.content));

        // No scope, categories or importance: without an LLM the offline analyzer fills them in, taking
        // the scope of the most similar stored records.
        const MemoryRecord filed = memory.remember(QStringLiteral("The user database runs PostgreSQL 16 on the staging environment."));
        print(QStringLiteral("\nfiled offline: \"%1\" -> %2, categories [%3], importance %4")
                  .arg(filed.content, filed.scope, filed.categories.join(QStringLiteral(", ")))
                  .arg(filed.importance, 0, 'f', 2));

        // A meeting note becomes separate facts (an LLM would also rewrite them to stand alone).
        print(QStringLiteral("\nfacts in a meeting note:"));
        for (const QString &fact : memory.extractMemories(QStringLiteral(
                 "Standup notes: we moved the release to June 3; Bob owns the migration. Alice will review the API.")))
            print(QStringLiteral("  - ") + fact);

        // Every change is in the history, and the last one can be undone.
        UpdateOptions edit;
        edit.content = QStringLiteral("The user database runs PostgreSQL 17 on the staging environment.");
        memory.update(filed.id, edit);
        print(QStringLiteral("\nundo of an edit restores: \"%1\" (%2 changes in its history)")
                  .arg(memory.undo(filed.id).content)
                  .arg(memory.history(filed.id).size()));

        print(QStringLiteral("\nscope tree:"));
        print(memory.tree());
        const ScopeInfo info = memory.info(QStringLiteral("/project/alpha"));
        print(QStringLiteral("\ninfo /project/alpha: %1 records, categories %2, children %3")
                  .arg(info.recordCount)
                  .arg(info.categories.join(QStringLiteral(", ")), info.childScopes.join(QStringLiteral(", "))));
        memory.close();
    } catch (const Error &e) {
        std::fprintf(stderr, "standalone_memory: %s\n", e.what());
        return 1;
    }
    return 0;
}
