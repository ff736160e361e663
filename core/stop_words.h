#pragma once

#include <mneme/core/export.h>

#include <span>
#include <string_view>

namespace mneme {

// English function words (articles, pronouns, question words, auxiliaries and modals, prepositions,
// conjunctions, conversational particles, contractions without their apostrophe), written for
// conversational text: words that say little about what a text is about. Lower case ASCII;
// apostrophes are gone ("don't" -> "dont"). Not here on purpose: "may" (the month) and anything that
// names a thing, an action, a place, a time or a person.
//
// Frozen: the builtin embedder's hash-v2 format is defined with this list (a change would change its
// vectors), and keyword search leaves these words out of a query.
class MNEME_CORE_EXPORT StopWords
{
public:
    static std::span<const char *const> english();
    // Whether `word` (lower case) is one of english().
    static bool isEnglish(std::string_view word);
};

} // namespace mneme
