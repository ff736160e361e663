#pragma once

// Helpers shared by the chat memory tests: a token counter whose counts the test can work out (one
// token per word), and a memory block that records what it receives.

#include <mneme/core/error.h>
#include <mneme/memory/chat_memory.h>
#include <mneme/memory/memory_block.h>
#include <mneme/memory/token_counter.h>

#include <QMutex>
#include <QStringList>
#include <memory>

namespace mneme::test {

// One token per white-space-separated word (markup included: "<memory>\n<x>\nw w\n</x>\n</memory>" is
// six); a message costs TokenCounter::kMessageOverhead more.
inline TokenCounter wordCounter()
{
    return TokenCounter([](const QString &text) { return int(text.simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts).size()); });
}

// `n` words ("w w w ...").
inline QString words(int n)
{
    QStringList w;
    for (int i = 0; i < n; ++i)
        w << QStringLiteral("w");
    return w.join(QLatin1Char(' '));
}

// What a RecordingBlock received, shared between blocks and threads.
struct Received
{
    QMutex mutex;
    QList<qint64> seqs;     // every message received, in order
    QList<qint64> flushes;  // the flush of each put
    QStringList blockOrder; // the block of each put
    void add(const QString &block, const QList<SessionMessage> &messages, qint64 flush)
    {
        QMutexLocker lock(&mutex);
        for (const SessionMessage &m : messages)
            seqs << m.seq;
        flushes << flush;
        blockOrder << block;
    }
};

// A block whose content the test sets (one item per line); it records each put, counts the messages
// it got in its state, and truncates by dropping its last lines.
class RecordingBlock : public MemoryBlock
{
public:
    RecordingBlock(const QString &name, int priority, std::shared_ptr<Received> received = std::make_shared<Received>())
        : MemoryBlock(name, priority), received(std::move(received))
    {
    }
    QString get(const std::vector<ChatMessage> &messages) override
    {
        lastInput = messages;
        if (failGet)
            throw Error(ErrorKind::Embedder, QStringLiteral("the test's block cannot embed"));
        return content;
    }
    void put(const QList<SessionMessage> &messages, const FlushContext &flush) override
    {
        received->add(name(), messages, flush.flush);
        count += int(messages.size());
        if (failNext) {
            failNext = false;
            throw Error(ErrorKind::Storage, QStringLiteral("the test's block failed"));
        }
    }
    QString truncate(const QString &text, int tokens) override
    {
        if (!truncates)
            return {};
        QStringList lines = text.split(QLatin1Char('\n'));
        const int before = countTokens(render(text));
        while (!lines.isEmpty() && before - countTokens(render(lines.join(QLatin1Char('\n')))) < tokens)
            lines.removeLast();
        return lines.join(QLatin1Char('\n'));
    }
    Json state() const override { return Json{{"count", count}}; }
    void restoreState(const Json &state) override { count = state.is_object() ? state.value("count", 0) : 0; }

    QString content;
    bool truncates = true;
    bool failNext = false; // the next put() throws
    bool failGet = false;  // every get() throws
    int count = 0;         // messages received, as restored from the store
    std::vector<ChatMessage> lastInput;
    std::shared_ptr<Received> received;
};

} // namespace mneme::test
