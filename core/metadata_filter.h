#pragma once

#include <mneme/core/export.h>
#include <mneme/core/json.h>

#include <QString>
#include <string>
#include <vector>

namespace mneme {

// Conditions on a record's metadata (RecordFilter::metadata), written as JSON in the manner of
// LangGraph's store and Mem0's filters:
//
//   {"status": "done"}                          equal: JSON equality (1 equals 1.0)
//   {"priority": {"$gte": 2, "$lt": 5}}         $eq $ne $gt $gte $lt $lte
//   {"team": {"$in": ["ops", "web"]}}           $in $nin: equal to one of / none of the values
//   {"due": {"$exists": true}}                  the key is there (with any value, null included)
//   {"$and": [{...}, {...}]}                    every document holds (to repeat a key)
//
// Keys are top-level metadata keys, taken as written (a dot is part of the key). Every condition must
// hold. $gt, $gte, $lt and $lte hold between two numbers, or two strings compared byte by byte (so ISO
// dates order in time); between other values they do not hold. $ne and $nin hold when the key is
// missing. A value must be a JSON scalar, array or object; an operator object mixing operators with
// other keys, an unknown operator, $in or $nin without an array, $exists without true or false, and a
// comparison with something that is not a number or a string are refused.
class MNEME_CORE_EXPORT MetadataFilter
{
public:
    enum class Op {
        Eq,
        Ne,
        Gt,
        Gte,
        Lt,
        Lte,
        In,
        Nin,
        Exists
    };
    struct Condition
    {
        std::string key;
        Op op = Op::Eq;
        Json value; // $in / $nin: an array; $exists: a boolean
    };

    MetadataFilter() = default;
    // Reads a filter document (null or an empty object: no condition). Throws Error(InvalidArgument)
    // saying what is wrong and how to write it.
    static MetadataFilter parse(const Json &document);
    // Both documents' conditions together: {"$and": [a, b]}, or one of them when the other is empty.
    static Json both(const Json &a, const Json &b);

    bool isEmpty() const { return m_conditions.empty(); }
    // In document order, $and flattened.
    const std::vector<Condition> &conditions() const { return m_conditions; }
    // Whether `metadata` (a JSON object; anything else is treated as an empty one) meets every condition.
    bool matches(const Json &metadata) const;
    // Whether the value at the condition's key (nullptr: the key is missing) meets the condition.
    static bool holds(const Condition &condition, const Json *value);
    // "$gte" for Op::Gte, ...; "=" for Op::Eq.
    static QString opName(Op op);

private:
    void read(const Json &document, int depth);

    std::vector<Condition> m_conditions;
};

} // namespace mneme
