#include <mneme/core/stop_words.h>

#include <unordered_set>

namespace mneme {

namespace {

constexpr const char *kEnglish[] = {
    // articles, determiners, quantifiers
    "a", "an", "the", "this", "that", "these", "those", "some", "any", "each", "every", "all", "both",
    "either", "neither", "such", "own", "same", "other", "another", "much", "many", "more", "most",
    "few", "less", "lot", "lots",
    // pronouns
    "i", "me", "my", "mine", "myself", "you", "your", "yours", "yourself", "yourselves", "he", "him",
    "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself", "we", "us", "our", "ours",
    "ourselves", "they", "them", "their", "theirs", "themselves", "something", "anything", "everything",
    "nothing", "someone", "anyone", "everyone", "somebody", "anybody", "everybody", "nobody", "u", "ya",
    // question words
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "whatever",
    // be, have, do, modal verbs
    "am", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "having", "do",
    "does", "did", "doing", "will", "would", "shall", "should", "can", "could", "might", "must",
    // prepositions and particles
    "of", "to", "in", "on", "at", "by", "for", "with", "about", "from", "into", "onto", "upon", "out",
    "off", "over", "under", "up", "down", "through", "during", "before", "after", "above", "below",
    "between", "against", "around", "across", "along", "among", "within", "without", "toward",
    "towards", "via", "per", "than",
    // conjunctions
    "and", "but", "or", "nor", "so", "yet", "if", "because", "as", "until", "while", "although",
    "though", "whether", "since", "unless", "then", "also",
    // adverbs and conversational particles
    "here", "there", "very", "too", "just", "only", "really", "quite", "even", "still", "ever", "never",
    "not", "no", "yes", "yeah", "yep", "oh", "ok", "okay", "hey", "hi", "hello", "wow", "um", "uh",
    "ah", "hmm", "lol", "again", "now", "well", "sure", "maybe", "definitely", "totally", "super",
    // contractions without their apostrophe
    "im", "ive", "id", "ill", "youre", "youve", "youll", "youd", "hes", "shes", "hed", "itll", "weve",
    "wed", "theyre", "theyve", "theyll", "theyd", "thats", "whats", "whos", "wheres", "hows", "whys",
    "theres", "heres", "lets", "dont", "doesnt", "didnt", "cant", "cannot", "wont", "isnt", "arent",
    "wasnt", "werent", "havent", "hasnt", "hadnt", "wouldnt", "couldnt", "shouldnt", "mustnt", "aint",
    "gonna", "wanna", "gotta",
};

} // namespace

std::span<const char *const> StopWords::english()
{
    return kEnglish;
}

bool StopWords::isEnglish(std::string_view word)
{
    static const std::unordered_set<std::string_view> set(std::begin(kEnglish), std::end(kEnglish));
    return set.contains(word);
}

} // namespace mneme
