// mneme-token-count: the chat memory's default token counter (TokenCounter::estimate) as a filter, for
// measuring it against a real tokenizer (bench/token_counter/measure.mjs runs it).
//
//   mneme-token-count < texts.jsonl > counts.jsonl
//
// Each input line is a JSON object {"text": "..."}; each output line is {"tokens": N} for it.

#include <mneme/memory/token_counter.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

int main()
{
    std::ios::sync_with_stdio(false);
    std::string line;
    long lineNumber = 0;
    while (std::getline(std::cin, line)) {
        ++lineNumber;
        const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_object() || !j.contains("text") || !j["text"].is_string()) {
            std::fprintf(stderr, "mneme-token-count: line %ld is not an object {\"text\": \"...\"}\n", lineNumber);
            return 2;
        }
        const int tokens = mneme::TokenCounter::estimate(QString::fromStdString(j["text"].get<std::string>()));
        std::cout << "{\"tokens\":" << tokens << "}\n";
    }
    return 0;
}
