#pragma once

#include <mneme/core/export.h>
#include <mneme/core/json.h>

#include <QString>
#include <QStringList>

namespace mneme {

// Reading JSON out of what a model wrote, and checking it against a JSON schema.
namespace JsonReply {

// The JSON value in a model's reply: drops <think>...</think> blocks, prefers the content of a
// ```json (or plain ```) fence, else the first balanced {...} or [...] that parses, ignoring chatter
// before and after it. Throws Error(MalformedReply) saying what was found when there is none.
MNEME_CORE_EXPORT Json extract(const QString &reply);

// Problems of `value` against `schema`, one sentence each with a JSON-pointer-like path ("$.tags[2]:
// expected string, got number"); empty when it conforms. Covers type (incl. lists of types and
// "integer"), properties, required, additionalProperties: false, items, enum, const, minItems /
// maxItems, minLength / maxLength, minimum / maximum, anyOf / oneOf, and local $ref to #/$defs or
// #/definitions. Unknown keywords are ignored.
MNEME_CORE_EXPORT QStringList validate(const Json &value, const Json &schema);

// The instruction added for models without native structured output: reply with one JSON value
// that follows the schema, nothing else.
MNEME_CORE_EXPORT QString instructionFor(const Json &schema);

} // namespace JsonReply

} // namespace mneme
