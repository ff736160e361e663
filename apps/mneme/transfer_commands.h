#pragma once

namespace mneme::cli {

class CommandContext;

// The bulk commands: remember-many, export and import. Inputs are read and checked whole before the
// first write; work is done in batches with a progress bar on a terminal.
class TransferCommands
{
public:
    explicit TransferCommands(CommandContext &context);

    void rememberMany();
    void exportRecords();
    void importRecords();

    // Items per call of Memory::rememberMany / exportRecords / importRecords.
    static constexpr int kBatchSize = 1000;

private:
    CommandContext &m_ctx;
};

} // namespace mneme::cli
