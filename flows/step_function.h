#pragma once

#include <mneme/core/error.h>
#include <mneme/core/json.h>
#include <mneme/flows/export.h>

#include <QException>
#include <QFuture>
#include <QFutureWatcher>
#include <QObject>
#include <QPromise>
#include <QThreadPool>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>

namespace mneme {

// One invocation of a step: the future of its output and a way to cancel it. Cancelling an
// asynchronous step cancels the future it returned and settles `output` as cancelled at once.
// Cancelling a synchronous one cancels `output`: a step still queued in the pool never starts, one
// already running runs to its end (`output` finishes then, without its result).
struct MNEME_FLOWS_EXPORT StepCall
{
    QFuture<Json> output;
    std::function<void()> cancel;
};

// A step's code with its calling convention erased. Built from any callable (lambda, function,
// std::function, member function of the flow) that takes nothing or one parameter (the output of
// the step or label that triggered it, read from JSON) and returns:
//   - a value convertible to Json (QString, int, a struct with to_json, Json itself, std::optional
//     of those; void gives null): the callable runs on a thread of the pool, so it may block;
//   - a QFuture<T> of such a value (QFuture<void> gives null): the callable is called on the
//     flow's thread and must return at once; the flow waits for the future without blocking.
// A parameter of a type other than Json is read with nlohmann's from_json (std::optional<T> reads
// null as nullopt); an input that does not fit fails the step with a message saying so.
class MNEME_FLOWS_EXPORT StepFunction
{
public:
    // owner: a QObject on the flow's thread (continuations are delivered there); pool: where a
    // synchronous step runs.
    using Invoke = std::function<StepCall(const Json &input, QObject *owner, QThreadPool *pool)>;

    StepFunction() = default;
    StepFunction(Invoke invoke, bool async) : m_invoke(std::move(invoke)), m_async(async) {}

    template<typename F>
    static StepFunction from(F &&function)
    {
        using Fn = std::decay_t<F>;
        if constexpr (std::is_member_function_pointer_v<Fn>) {
            static_assert(!std::is_member_function_pointer_v<Fn>,
                          "a member function needs its object: register it through the Flow (start / listen / router), "
                          "which binds it to the flow itself");
        } else {
            using Traits = CallableTraits<Fn>;
            return fromTraits<typename Traits::Result>(Fn(std::forward<F>(function)), typename Traits::Args{});
        }
    }

    // A member function of `object` (a Flow subclass calling it on itself).
    template<typename D, typename M>
    static StepFunction fromMember(D *object, M method)
    {
        using Traits = MemberTraits<M>;
        auto bound = [object, method](auto &&...args) -> typename Traits::Result {
            return (object->*method)(std::forward<decltype(args)>(args)...);
        };
        return fromTraits<typename Traits::Result>(std::move(bound), typename Traits::Args{});
    }

    // Starts the step. May throw (an asynchronous callable that throws at once, for instance).
    StepCall call(const Json &input, QObject *owner, QThreadPool *pool) const { return m_invoke(input, owner, pool); }
    bool isAsync() const { return m_async; }
    explicit operator bool() const { return bool(m_invoke); }

    // Waits, through a QFutureWatcher owned by `owner`, for `future` and delivers its value as Json
    // on the owner's thread. A future that fails passes its exception on; one cancelled without a
    // result fails with Error(Cancelled). The returned cancel() cancels `future` itself and settles
    // the step as cancelled at once (its producer may notice late, or go on regardless), unless
    // `future` is finished already: then its own result or error is what the step gives.
    //
    // Only `finished` settles the step otherwise: Qt signals a future's exception as `canceled`
    // first and `finished` second, and a producer on another thread lets the owner's thread see the
    // first before the second is sent, so `canceled` cannot tell a failure from a cancellation.
    template<typename T>
    static StepCall await(QFuture<T> future, QObject *owner)
    {
        auto promise = std::make_shared<QPromise<Json>>();
        promise->start();
        auto settled = std::make_shared<bool>(false);
        StepCall call{promise->future(), [future, promise, settled]() mutable {
                          if (*settled || future.isFinished())
                              return; // what it gave is on its way to `finished`
                          future.cancel();
                          *settled = true;
                          promise->setException(std::make_exception_ptr(cancelled()));
                          promise->finish();
                      }};
        auto *watcher = new QFutureWatcher<T>(owner);
        QObject::connect(watcher, &QFutureWatcherBase::finished, owner, [watcher, promise, settled]() {
            QFuture<T> f = watcher->future();
            watcher->deleteLater();
            if (*settled)
                return;
            *settled = true;
            try {
                f.waitForFinished(); // rethrows what the future failed with
                if constexpr (std::is_void_v<T>) {
                    if (f.isCanceled())
                        throw cancelled();
                    promise->addResult(Json());
                } else {
                    if (f.isCanceled() || f.resultCount() == 0)
                        throw cancelled();
                    promise->addResult(toJson(f.result()));
                }
            } catch (...) {
                promise->setException(std::current_exception());
            }
            promise->finish();
        });
        watcher->setFuture(future);
        return call;
    }

    template<typename T>
    static Json toJson(const T &value)
    {
        if constexpr (IsOptional<T>::value) {
            return value ? toJson(*value) : Json(nullptr);
        } else {
            static_assert(std::is_constructible_v<Json, const T &>,
                          "a step's result must convert to Json: give the type a to_json(Json &, const T &) (or "
                          "NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE), or turn it into one (.then([](T t) { return t.text; }))");
            return Json(value);
        }
    }

    template<typename A>
    static A fromInput(const Json &input)
    {
        if constexpr (std::is_same_v<A, Json>) {
            return input;
        } else if constexpr (IsOptional<A>::value) {
            if (input.is_null())
                return std::nullopt;
            return fromInput<typename A::value_type>(input);
        } else {
            try {
                return input.get<A>();
            } catch (const Json::exception &e) {
                throw Error(ErrorKind::InvalidArgument,
                            QStringLiteral("its input %1 cannot be read as the step's parameter (%2); take a Json "
                                           "parameter, or one whose from_json accepts this value")
                                .arg(QString::fromStdString(input.dump(-1, ' ', false, Json::error_handler_t::replace)).left(300),
                                     QString::fromUtf8(e.what())));
            }
        }
    }

private:
    template<typename T>
    struct IsOptional : std::false_type
    {
    };
    template<typename T>
    struct IsOptional<std::optional<T>> : std::true_type
    {
    };
    template<typename T>
    struct IsFuture : std::false_type
    {
    };
    template<typename T>
    struct IsFuture<QFuture<T>> : std::true_type
    {
    };

    template<typename... A>
    struct TypeList
    {
    };
    // The result and parameter types of a callable with one, non-template call operator.
    template<typename F>
    struct CallableTraits : CallableTraits<decltype(&F::operator())>
    {
    };
    template<typename R, typename... A>
    struct CallableTraits<R (*)(A...)>
    {
        using Result = R;
        using Args = TypeList<A...>;
    };
    template<typename C, typename R, typename... A>
    struct CallableTraits<R (C::*)(A...)> : CallableTraits<R (*)(A...)>
    {
    };
    template<typename C, typename R, typename... A>
    struct CallableTraits<R (C::*)(A...) const> : CallableTraits<R (*)(A...)>
    {
    };
    template<typename C, typename R, typename... A>
    struct CallableTraits<R (C::*)(A...) noexcept> : CallableTraits<R (*)(A...)>
    {
    };
    template<typename C, typename R, typename... A>
    struct CallableTraits<R (C::*)(A...) const noexcept> : CallableTraits<R (*)(A...)>
    {
    };
    template<typename M>
    struct MemberTraits : CallableTraits<M>
    {
    };

    static Error cancelled()
    {
        return Error(ErrorKind::Cancelled, QStringLiteral("the step's future was cancelled before it gave a result"));
    }

    // Runs `body` and turns what it throws into something that crosses a QFuture with its text:
    // QExceptions (mneme::Error among them) as they are, any other std::exception as Error(Internal).
    template<typename B>
    static Json guarded(B &&body)
    {
        try {
            return body();
        } catch (const QException &) {
            throw;
        } catch (const std::exception &e) {
            throw Error(ErrorKind::Internal, QString::fromUtf8(e.what()));
        } catch (...) {
            throw Error(ErrorKind::Internal, QStringLiteral("the step threw something that is not a std::exception"));
        }
    }

    template<typename R, typename G, typename... A>
    static StepFunction fromTraits(G function, TypeList<A...>)
    {
        static_assert(sizeof...(A) <= 1,
                      "a step takes no parameter, or one: the output of the step or router label that triggered it");
        auto invoke = [function](const Json &input) -> R {
            if constexpr (sizeof...(A) == 0)
                return function();
            else
                return function(fromInput<std::remove_cv_t<std::remove_reference_t<A>>>(input)...);
        };
        if constexpr (IsFuture<R>::value) {
            return StepFunction([invoke](const Json &input, QObject *owner, QThreadPool *) { return await(invoke(input), owner); },
                                true);
        } else {
            return StepFunction(
                [invoke](const Json &input, QObject *, QThreadPool *pool) {
                    QFuture<Json> output = QtConcurrent::run(pool, [invoke, input]() {
                        return guarded([&]() -> Json {
                            if constexpr (std::is_void_v<R>) {
                                invoke(input);
                                return Json();
                            } else {
                                return toJson(invoke(input));
                            }
                        });
                    });
                    return StepCall{output, [output]() mutable { output.cancel(); }};
                },
                false);
        }
    }

    Invoke m_invoke;
    bool m_async = false;
};

} // namespace mneme
