#pragma once

#include "cli_arguments.h"
#include "console.h"

#include <mneme/memory/memory.h>

#include <memory>
#include <optional>

namespace mneme::cli {

// What a command works with: its parsed arguments, the console, and the Memory, opened on first
// use so that every argument is checked before the store is touched.
class CommandContext
{
public:
    CommandContext(const CliArguments &arguments, Console &console);
    ~CommandContext();
    CommandContext(const CommandContext &) = delete;
    CommandContext &operator=(const CommandContext &) = delete;

    const CliArguments &args() const { return m_args; }
    Console &console() const { return m_console; }
    bool json() const { return m_args.json(); }

    // The configuration of --config / --db, read on the first call (see configFor()).
    const MemoryConfig &config();
    // The Memory of --db / --config / $MNEME_STORAGE_DIR, opened on the first call. Only the commands
    // that add records (createsStore()) create a missing store (and its folder); for the others a
    // missing store is Error(NotFound) naming its path. Throws mneme::Error when the configuration is
    // invalid or the store cannot be opened.
    Memory &memory();
    // A Memory with the configuration's LLM, embedder and settings over an empty in-memory store,
    // for commands that store nothing (extract): the store of --db (or the default one) is neither
    // opened nor created. Opened on the first call; a command calls this or memory(), not both.
    Memory &memoryWithoutStore();
    // Drains and closes the Memory when it was opened, so failures of pending writes surface.
    void close();

    // The exit status of a command that ran to its end but reports a finding (check: problems
    // remain); 0 by default.
    int exitCode() const { return m_exitCode; }
    void setExitCode(int code) { m_exitCode = code; }

    // The configuration the arguments ask for: --config FILE (MemoryConfig keys), then --db PATH as
    // the SQLite file. Throws Error(InvalidArgument) naming the file for a bad configuration.
    static MemoryConfig configFor(const CliArguments &arguments);
    // The sections of the --config file that are not MemoryConfig keys: "chat_memory" (a
    // ChatMemoryConfig) and "agent" (the agent of `mneme chat`); null when absent.
    Json configSection(const char *key);
    // The SQLite file of the store the arguments name (for the chat sessions kept beside it).
    // Throws Error(InvalidArgument) when the configured storage is not a SQLite file.
    QString storePath();
    // The commands that may save (remember, remember-many, import, chat, mcp, serve): they create a
    // missing store.
    static bool createsStore(const QString &command);
    // `config` with its SQLite store opened only if it exists ("create": false).
    static MemoryConfig withoutCreating(MemoryConfig config);

private:
    void open(const MemoryConfig &config);
    void connectEvents();

    const CliArguments &m_args;
    Console &m_console;
    std::optional<MemoryConfig> m_config;
    std::unique_ptr<Memory> m_memory;
    int m_exitCode = 0;
};

} // namespace mneme::cli
