#pragma once

#include <mneme/core/json.h>

#include <QString>
#include <optional>

namespace mneme::GeminiSchema {

// Rewrites a JSON schema in the schema dialect Gemini accepts for generationConfig.responseSchema
// and for function parameters: a subset of OpenAPI 3.0's Schema object.
//
// What changes: types are written in capitals ("OBJECT", "STRING", ...); a type list or an anyOf /
// oneOf branch with "null" becomes "nullable": true; local $ref (to #/$defs/..., #/definitions/...)
// are inlined and a one-element allOf merged; const (a string) becomes a one-value enum; keywords the
// dialect rejects or ignores are dropped ($schema, $id, $defs, additionalProperties, title, default,
// examples, pattern, uniqueItems, multipleOf, exclusive bounds, string formats other than "enum" and
// "date-time", ...). Mneme still checks the reply against the original schema, so a dropped constraint
// is enforced there.
//
// What cannot be said, and gives std::nullopt with the reason in *why: recursive references, remote
// references, not / if-then-else / patternProperties / tuple arrays (prefixItems or an items list),
// an object without properties (a free-form map), an array without items, several non-null types at
// once, a lone "null" type, a non-string enum or const, and a schema that is a boolean.
std::optional<Json> convert(const Json &schema, QString *why = nullptr);

} // namespace mneme::GeminiSchema
