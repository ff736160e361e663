#include "gemini_schema.h"

#include <vector>

namespace mneme::GeminiSchema {

namespace {

// Thrown inside the converter; convert() turns it into std::nullopt and the reason.
struct Unsupported
{
    QString why;
};

[[noreturn]] void unsupported(const QString &path, const QString &what)
{
    throw Unsupported{QStringLiteral("%1: %2").arg(path, what)};
}

QString upperType(const std::string &t)
{
    if (t == "string") return QStringLiteral("STRING");
    if (t == "number") return QStringLiteral("NUMBER");
    if (t == "integer") return QStringLiteral("INTEGER");
    if (t == "boolean") return QStringLiteral("BOOLEAN");
    if (t == "array") return QStringLiteral("ARRAY");
    if (t == "object") return QStringLiteral("OBJECT");
    return {};
}

// {"type": "null"}, {"const": null} or {"enum": [null]}: a branch that only allows null.
bool onlyNull(const Json &s)
{
    if (!s.is_object())
        return false;
    if (s.contains("type") && s["type"] == "null")
        return true;
    if (s.contains("const") && s["const"].is_null())
        return true;
    return s.contains("enum") && s["enum"].is_array() && s["enum"].size() == 1 && s["enum"][0].is_null();
}

bool formatAllowed(const QString &type, const std::string &format)
{
    if (type == QLatin1String("STRING"))
        return format == "enum" || format == "date-time";
    if (type == QLatin1String("NUMBER"))
        return format == "float" || format == "double";
    if (type == QLatin1String("INTEGER"))
        return format == "int32" || format == "int64";
    return false;
}

class Converter
{
public:
    explicit Converter(const Json &root)
        : m_root(root)
    {
    }

    Json node(const Json &schema, const QString &path, int depth = 0)
    {
        if (depth > 64)
            unsupported(path, QStringLiteral("the schema nests too deeply"));
        if (schema.is_boolean())
            unsupported(path, QStringLiteral("a boolean schema (any value or no value) has no equivalent"));
        if (!schema.is_object())
            unsupported(path, QStringLiteral("not a schema object"));

        if (schema.contains("$ref"))
            return reference(schema, path, depth);

        if (schema.contains("allOf")) {
            const Json &all = schema["allOf"];
            if (!all.is_array() || all.size() != 1 || !all[0].is_object())
                unsupported(path, QStringLiteral("allOf with several schemas cannot be merged"));
            Json merged = schema;
            merged.erase("allOf");
            for (auto it = all[0].begin(); it != all[0].end(); ++it) {
                if (!merged.contains(it.key()))
                    merged[it.key()] = it.value();
            }
            return node(merged, path, depth + 1);
        }

        for (const char *k : {"not", "if", "then", "else", "patternProperties", "prefixItems", "dependentSchemas",
                              "dependencies", "contains", "unevaluatedProperties", "unevaluatedItems", "propertyNames"}) {
            if (schema.contains(k))
                unsupported(path, QStringLiteral("\"%1\" has no equivalent").arg(QLatin1String(k)));
        }

        bool nullable = schema.contains("nullable") && schema["nullable"] == true;

        const char *unionKey = schema.contains("anyOf") ? "anyOf" : schema.contains("oneOf") ? "oneOf"
                                                                                             : nullptr;
        if (unionKey)
            return unionOf(schema, unionKey, nullable, path, depth);

        // The type, written or implied.
        QString type;
        const Json t = schema.value("type", Json());
        if (t.is_array()) {
            std::vector<std::string> types;
            for (const Json &e : t) {
                if (!e.is_string())
                    unsupported(path, QStringLiteral("a type list with a non-string entry"));
                if (e == "null")
                    nullable = true;
                else
                    types.push_back(e.get<std::string>());
            }
            if (types.empty())
                unsupported(path, QStringLiteral("a value that can only be null"));
            if (types.size() > 1)
                unsupported(path, QStringLiteral("several types at once (%1)").arg(QString::fromStdString(t.dump())));
            type = upperType(types.front());
        } else if (t.is_string()) {
            if (t == "null")
                unsupported(path, QStringLiteral("a value that can only be null"));
            type = upperType(t.get<std::string>());
        } else if (t.is_null()) {
            if (schema.contains("properties"))
                type = QStringLiteral("OBJECT");
            else if (schema.contains("items"))
                type = QStringLiteral("ARRAY");
            else if (schema.contains("enum") || (schema.contains("const") && schema["const"].is_string()))
                type = QStringLiteral("STRING");
            else
                unsupported(path, QStringLiteral("a schema without a type accepts any value"));
        }
        if (type.isEmpty())
            unsupported(path, QStringLiteral("unknown type %1").arg(QString::fromStdString(t.dump())));

        Json out = {{"type", type}};
        if (schema.contains("description") && schema["description"].is_string())
            out["description"] = schema["description"];

        if (schema.contains("enum")) {
            if (!schema["enum"].is_array())
                unsupported(path, QStringLiteral("\"enum\" is not a list"));
            Json values = Json::array();
            for (const Json &v : schema["enum"]) {
                if (v.is_null())
                    nullable = true;
                else if (v.is_string())
                    values.push_back(v);
                else
                    unsupported(path, QStringLiteral("enum values that are not strings (%1)").arg(QString::fromStdString(v.dump())));
            }
            if (type != QLatin1String("STRING"))
                unsupported(path, QStringLiteral("an enum on a %1 (Gemini's enums are strings)").arg(type.toLower()));
            out["enum"] = std::move(values);
        } else if (schema.contains("const")) {
            if (!schema["const"].is_string() || type != QLatin1String("STRING"))
                unsupported(path, QStringLiteral("a const that is not a string"));
            out["enum"] = Json::array({schema["const"]});
        }

        if (schema.contains("format") && schema["format"].is_string()
            && formatAllowed(type, schema["format"].get<std::string>()))
            out["format"] = schema["format"];

        const auto copyNumber = [&](const char *key) {
            if (schema.contains(key) && schema[key].is_number())
                out[key] = schema[key];
        };
        if (type == QLatin1String("OBJECT")) {
            const Json props = schema.value("properties", Json::object());
            if (!props.is_object())
                unsupported(path, QStringLiteral("\"properties\" is not an object"));
            if (props.empty())
                unsupported(path, QStringLiteral("an object without properties (a free-form map) cannot be described; "
                                                 "Gemini needs at least one named property"));
            Json outProps = Json::object();
            for (auto it = props.begin(); it != props.end(); ++it)
                outProps[it.key()] = node(it.value(), path + QLatin1Char('.') + QString::fromStdString(it.key()), depth + 1);
            out["properties"] = std::move(outProps);
            if (schema.contains("required") && schema["required"].is_array()) {
                Json required = Json::array();
                for (const Json &r : schema["required"]) {
                    if (r.is_string() && props.contains(r.get<std::string>()))
                        required.push_back(r);
                }
                if (!required.empty())
                    out["required"] = std::move(required);
            }
            if (schema.contains("propertyOrdering") && schema["propertyOrdering"].is_array())
                out["propertyOrdering"] = schema["propertyOrdering"];
            copyNumber("minProperties");
            copyNumber("maxProperties");
        } else if (type == QLatin1String("ARRAY")) {
            if (!schema.contains("items"))
                unsupported(path, QStringLiteral("an array without \"items\" cannot be described"));
            if (schema["items"].is_array())
                unsupported(path, QStringLiteral("a tuple (a list of item schemas) has no equivalent"));
            out["items"] = node(schema["items"], path + QStringLiteral("[]"), depth + 1);
            copyNumber("minItems");
            copyNumber("maxItems");
        } else if (type == QLatin1String("NUMBER") || type == QLatin1String("INTEGER")) {
            copyNumber("minimum");
            copyNumber("maximum");
        } else if (type == QLatin1String("STRING")) {
            copyNumber("minLength");
            copyNumber("maxLength");
        }
        if (nullable)
            out["nullable"] = true;
        return out;
    }

private:
    Json reference(const Json &schema, const QString &path, int depth)
    {
        if (!schema["$ref"].is_string())
            unsupported(path, QStringLiteral("\"$ref\" is not a string"));
        const std::string ref = schema["$ref"].get<std::string>();
        if (ref.rfind("#/", 0) != 0)
            unsupported(path, QStringLiteral("the reference \"%1\" is not local to the schema").arg(QString::fromStdString(ref)));
        for (const std::string &open : m_open) {
            if (open == ref)
                unsupported(path, QStringLiteral("the reference \"%1\" is recursive and cannot be inlined").arg(QString::fromStdString(ref)));
        }
        Json target;
        try {
            target = m_root.at(Json::json_pointer(ref.substr(1)));
        } catch (const std::exception &) {
            unsupported(path, QStringLiteral("the reference \"%1\" points nowhere").arg(QString::fromStdString(ref)));
        }
        if (!target.is_object())
            unsupported(path, QStringLiteral("the reference \"%1\" is not a schema object").arg(QString::fromStdString(ref)));
        // Keywords beside the reference (a description, usually) win over the target's.
        for (auto it = schema.begin(); it != schema.end(); ++it) {
            if (it.key() != "$ref")
                target[it.key()] = it.value();
        }
        m_open.push_back(ref);
        Json out = node(target, path, depth + 1);
        m_open.pop_back();
        return out;
    }

    Json unionOf(const Json &schema, const char *key, bool nullable, const QString &path, int depth)
    {
        const Json &branches = schema[key];
        if (!branches.is_array() || branches.empty())
            unsupported(path, QStringLiteral("\"%1\" is not a list of schemas").arg(QLatin1String(key)));
        std::vector<Json> kept;
        for (const Json &b : branches) {
            if (onlyNull(b))
                nullable = true;
            else
                kept.push_back(b);
        }
        if (kept.empty())
            unsupported(path, QStringLiteral("a value that can only be null"));
        Json out;
        if (kept.size() == 1) {
            // "X or null": X, nullable. The outer keywords (a description) fill what X leaves open.
            Json merged = kept.front();
            if (!merged.is_object())
                unsupported(path, QStringLiteral("a boolean schema in \"%1\"").arg(QLatin1String(key)));
            for (auto it = schema.begin(); it != schema.end(); ++it) {
                if (it.key() != key && it.key() != "nullable" && !merged.contains(it.key()))
                    merged[it.key()] = it.value();
            }
            out = node(merged, path, depth + 1);
        } else {
            Json any = Json::array();
            for (size_t i = 0; i < kept.size(); ++i)
                any.push_back(node(kept[i], QStringLiteral("%1.%2[%3]").arg(path, QLatin1String(key)).arg(i), depth + 1));
            out = {{"anyOf", std::move(any)}};
            if (schema.contains("description") && schema["description"].is_string())
                out["description"] = schema["description"];
        }
        if (nullable)
            out["nullable"] = true;
        return out;
    }

    const Json &m_root;
    std::vector<std::string> m_open; // the references being inlined, outermost first
};

} // namespace

std::optional<Json> convert(const Json &schema, QString *why)
{
    try {
        Converter converter(schema);
        return converter.node(schema, QStringLiteral("$"));
    } catch (const Unsupported &u) {
        if (why)
            *why = u.why;
        return std::nullopt;
    }
}

} // namespace mneme::GeminiSchema
