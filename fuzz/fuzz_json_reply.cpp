// JSON read from outside (readJson, parseJsonOrDiscarded) and from a model's reply
// (JsonReply::extract, JsonReply::validate against fixed schemas of the memory's analysis kinds).

#include <mneme/core/error.h>
#include <mneme/core/json.h>
#include <mneme/core/json_reply.h>

#include <QString>
#include <cstdint>
#include <cstdlib>

using namespace mneme;

namespace {

const Json &schemas()
{
    static const Json all = Json::array({
        Json{{"type", "object"},
             {"properties", {{"scope", {{"type", "string"}}}, {"categories", {{"type", "array"}, {"items", {{"type", "string"}}}}}, {"importance", {{"type", "number"}, {"minimum", 0}, {"maximum", 1}}}}},
             {"required", {"scope"}}},
        Json{{"type", "array"}, {"items", {{"type", "integer"}}}},
        Json{{"type", "object"}, {"additionalProperties", false}, {"properties", {{"a", {{"enum", {"x", 1, nullptr}}}}}}},
    });
    return all;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string_view bytes(reinterpret_cast<const char *>(data), size);
    Json parsed;
    const QString problem = readJson(bytes, &parsed);
    const Json lenient = parseJsonOrDiscarded(bytes);
    if (problem.isEmpty() != !lenient.is_discarded())
        std::abort(); // the two readers agree
    if (problem.isEmpty() && (jsonDepth(parsed) > kJsonMaxDepth || parsed != lenient))
        std::abort();
    if (problem.isEmpty())
        (void)parsed.dump(); // within the depth limit, writing never recurses too far
    const QString reply = QString::fromUtf8(bytes.data(), qsizetype(size));
    try {
        const Json value = JsonReply::extract(reply);
        if (jsonDepth(value) > kJsonMaxDepth)
            std::abort();
        for (const Json &schema : schemas())
            (void)JsonReply::validate(value, schema);
    } catch (const Error &) {
        // an unusable reply is an Error, nothing else
    }
    return 0;
}
