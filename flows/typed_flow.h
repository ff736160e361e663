#pragma once

#include <mneme/core/error.h>
#include <mneme/flows/flow.h>

#include <QMutexLocker>
#include <QUuid>
#include <functional>
#include <memory>

namespace mneme {

// A flow whose state is a C++ struct (CrewAI's Flow[MyModel]). `State` is default-constructible
// with nlohmann to_json / from_json, and has an id field written as "id":
//
//   struct ReviewState { QString id; QString draft; int attempts = 0; };
//   NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ReviewState, id, draft, attempts)
//   class ReviewFlow : public mneme::TypedFlow<ReviewState> { ... };
//
// The struct's defaults are the initial state (an empty id is given a new uuid). Inputs, saved
// states and updateState() are checked against the struct: a key that is not one of its fields, or
// a value of the wrong type, is refused with a message naming the field ("Invalid inputs for
// structured state: ..."). A state type whose to_json writes no "id" is refused when the flow is
// constructed ("Flow state model must have an 'id' field ...").
template<typename State>
class TypedFlow : public Flow
{
public:
    explicit TypedFlow(const QString &name, const FlowOptions &options = {}, QObject *parent = nullptr)
        : Flow(name, std::make_unique<Model>(), options, parent)
    {
        // Used as it is, a TypedFlow has no member of its own that a step could use.
        stopsRunOnDestruction(typeid(TypedFlow));
    }

    // A copy of the state (any thread).
    State state() const
    {
        refuseInsideChange("state()");
        QMutexLocker lock(&stateMutex());
        return model().value;
    }

    // Changes the state under the flow's lock, all or nothing (any thread). The id may not change.
    // The change reads and changes the state it is given: a state function of the flow called
    // inside it throws Error(InvalidArgument) (it would wait for the lock the change holds).
    void updateState(const std::function<void(State &)> &change)
    {
        refuseInsideChange("updateState()");
        QMutexLocker lock(&stateMutex());
        State next = model().value;
        {
            const ChangeScope changing(*this);
            change(next);
        }
        const Json before = model().toJson();
        const Json after = Model::write(next);
        if (after.value("id", Json()) != before.value("id", Json()))
            throw Error(ErrorKind::InvalidArgument,
                        QStringLiteral("updateState of flow \"%1\" may not change the state's id; kick off with the inputs "
                                       "{\"id\": ...} to work on another state")
                            .arg(name()));
        model().value = std::move(next);
    }

    // The JSON view of Flow (stateJson(), updateState(Json &), setStateValue()) works too, checked
    // against the struct.
    using Flow::updateState;

private:
    struct Model : FlowStateModel
    {
        State value{};

        Model()
        {
            const Json initial = write(State{});
            if (!initial.is_object() || !initial.contains("id") || !initial["id"].is_string())
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("Flow state model must have an 'id' field: the state type's to_json writes no "
                                           "string \"id\"; add `QString id;` to the struct and to its to_json / from_json "
                                           "(NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(State, id, ...))"));
        }

        static Json write(const State &s) { return Json(s); }

        Json toJson() const override { return write(value); }
        Json defaults() const override { return write(State{}); }
        QString kind() const override { return QStringLiteral("structured"); }

        Json check(const Json &state, const QString &context) const override { return write(read(state, context)); }
        void assign(const Json &state, const QString &context) override { value = read(state, context); }

        State read(const Json &state, const QString &context) const
        {
            const auto refuse = [&](const QString &why) { return Error(ErrorKind::InvalidArgument, context + QStringLiteral(": ") + why); };
            if (!state.is_object())
                throw refuse(QStringLiteral("the state must be a JSON object"));
            const Json fields = defaults();
            QStringList names;
            for (auto it = fields.begin(); it != fields.end(); ++it)
                names << QString::fromStdString(it.key());
            for (auto it = state.begin(); it != state.end(); ++it) {
                if (!fields.contains(it.key()))
                    throw refuse(QStringLiteral("\"%1\" is not a field of the state (its fields: %2)")
                                     .arg(QString::fromStdString(it.key()), names.join(QStringLiteral(", "))));
            }
            // The struct's own fields first: Json's message does not say which field was wrong.
            for (auto it = state.begin(); it != state.end(); ++it) {
                const Json &expected = fields[it.key()];
                if (!expected.is_null() && !sameKind(expected, it.value()))
                    throw refuse(QStringLiteral("\"%1\" must be %2, not %3")
                                     .arg(QString::fromStdString(it.key()), kindOf(expected),
                                          QString::fromStdString(it.value().dump()).left(100)));
            }
            State s{};
            try {
                state.get_to(s);
            } catch (const Json::exception &e) {
                throw refuse(QString::fromUtf8(e.what()));
            }
            const Json back = write(s);
            if (!back["id"].is_string() || back["id"].template get<std::string>().empty())
                throw refuse(QStringLiteral("the state's \"id\" must be a non-empty string"));
            return s;
        }

        static bool sameKind(const Json &a, const Json &b)
        {
            if (a.is_number() || b.is_number())
                return a.is_number() && b.is_number() && !(a.is_number_integer() && b.is_number_float());
            return a.type() == b.type();
        }

        static QString kindOf(const Json &j)
        {
            if (j.is_number_integer())
                return QStringLiteral("an integer");
            if (j.is_number())
                return QStringLiteral("a number");
            if (j.is_string())
                return QStringLiteral("a string");
            if (j.is_boolean())
                return QStringLiteral("true or false");
            if (j.is_array())
                return QStringLiteral("an array");
            return QStringLiteral("an object");
        }
    };

    Model &model() const { return static_cast<Model &>(stateModel()); }
};

} // namespace mneme
