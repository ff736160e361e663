#pragma once

#include <mneme/core/json.h>

#include <QString>

namespace mneme::cli {

class CommandContext;

// `mneme migrate --to TARGET`: copies the whole store the command line is pointed at (its records
// with their embeddings, the embedder binding and, when both stores keep one, the graph) into a
// PostgreSQL database or a SQLite file, in batches, with a progress bar. The source is only read.
// An interrupted run is resumed by running it again: the target notes which store it is being filled
// from (the state document "mneme.migrate"), and a batch copies only the records it lacks.
class MigrateCommand
{
public:
    explicit MigrateCommand(CommandContext &context);

    void migrate();

    static constexpr int kDefaultBatch = 1000;
    // The state document of the target naming the store it is being filled from.
    static constexpr const char *kMarkerKey = "mneme.migrate";

    // The storage a TARGET names: {"provider": "postgres", "config": {"dsn": TARGET}} for a libpq URI
    // (postgresql://...) or key=value string (host=... dbname=...), else a SQLite file.
    static Json targetStorage(const QString &target);

private:
    CommandContext &m_ctx;
};

} // namespace mneme::cli
