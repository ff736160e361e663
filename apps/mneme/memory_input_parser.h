#pragma once

#include "input_lines.h"

#include <mneme/memory/memory_config.h>
#include <mneme/memory/memory_options.h>

#include <QList>

namespace mneme::cli {

// Turns the input of `remember-many` into the items of Memory::rememberMany. The input is JSON
// Lines when its first non-blank line starts with '{' (objects with "content" and optional
// "scope", "categories", "importance", "source", "private", "created_at", "metadata"), else plain
// text with one memory per line. Blank lines are skipped. The defaults (from the command line) give
// every field a line leaves out; a line's metadata keys are laid over the default metadata.
//
// The whole input is checked before anything is returned: the first bad line throws
// Error(InvalidArgument) naming it (Error(PermissionDenied) for a private item without a source).
class MemoryInputParser
{
public:
    // Every item is checked with Memory::checkInput() under `config`, so the whole input is refused
    // before anything is stored when one item would be.
    MemoryInputParser(RememberOptions defaults, MemoryConfig config);

    QList<MemoryInput> parse(const InputLines &input) const;

    // True when the input is JSON Lines.
    static bool isJsonLines(const InputLines &input);

private:
    MemoryInput parseJsonLine(const InputLines &input, const InputLines::Line &line) const;
    MemoryInput plainLine(const InputLines &input, const InputLines::Line &line) const;
    void check(const InputLines &input, const InputLines::Line &line, const MemoryInput &item) const;

    RememberOptions m_defaults;
    MemoryConfig m_config;
};

} // namespace mneme::cli
