#pragma once

#include <mneme/core/llm_provider.h>
#include <mneme/memory/export.h>

#include <QString>
#include <functional>
#include <vector>

namespace mneme {

struct SessionMessage;

// Counts tokens for ChatMemory's budget: a function from a text to its number of tokens, and the
// rule that turns messages into texts. The default is estimate(), a model-free approximation of the
// BPE tokenizers of OpenAI's models (docs/chat-memory.md gives its measured error); plug in the
// tokenizer of your model for exact counts. The function must be thread-safe and must count a text
// the same way every time.
class MNEME_MEMORY_EXPORT TokenCounter
{
public:
    using Function = std::function<int(const QString &text)>;

    // Tokens a message costs beyond its texts (the role and the separators of the chat format), and
    // each tool call beyond its name and arguments.
    static constexpr int kMessageOverhead = 3;
    static constexpr int kToolCallOverhead = 3;

    TokenCounter(); // estimate()
    explicit TokenCounter(Function count);

    // The text's tokens (0 for an empty text); negative counts from a custom function are taken as 0.
    int count(const QString &text) const;
    // A message's tokens: kMessageOverhead, its content, its name and tool call id, and per tool call
    // kToolCallOverhead, its name and its arguments as compact JSON.
    int count(const ChatMessage &message) const;
    // A stored message: the provider's count when it has one, else count(message.message).
    int count(const SessionMessage &message) const;
    int count(const std::vector<ChatMessage> &messages) const;

    // The default counter: the text is cut the way OpenAI's tokenizers cut it before BPE (runs of
    // letters with one leading space or punctuation mark, runs of up to three digits, runs of
    // punctuation, white space), and each piece costs what pieces of its kind and length cost on
    // average: a word of up to seven letters one token, longer words 0.07 of a token more per
    // letter, a run of punctuation one token and half a token per further mark, a letter of a
    // script without spaces (CJK) one token, other letters outside Latin half a token, a symbol
    // outside the Basic Multilingual Plane (emoji) two. The sum is rounded up.
    static int estimate(const QString &text);

private:
    Function m_count;
};

} // namespace mneme
