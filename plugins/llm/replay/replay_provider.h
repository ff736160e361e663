#pragma once

#include <mneme/core/llm_provider.h>

#include <QMutex>
#include <QString>
#include <memory>
#include <vector>

namespace mneme {

// Replays chat exchanges from a cassette (JSON Lines: {"request": ChatRequest JSON, "response":
// ChatResponse JSON} per line), or records them through another provider.
//
// A request matches a recorded one when their canonical JSON is equal (messages, tools, tool
// choice, schema, temperature, max tokens, stop; not the stream flag). Identical requests are
// answered in the order they were recorded; once each was used, the last one answers again.
class ReplayProvider : public LlmProvider
{
    Q_OBJECT
public:
    struct Settings
    {
        enum class Mode {
            Replay,
            Record
        };
        Mode mode = Mode::Replay;
        QString cassette;
        Json llm; // record: the provider to pass through to
        static Settings read(const Json &config);
    };

    explicit ReplayProvider(Settings settings, QObject *parent = nullptr);
    ~ReplayProvider() override;

    QString id() const override;
    Capabilities capabilities() const override;
    QFuture<ChatResponse> chat(const ChatRequest &request) override;

private:
    struct Exchange
    {
        Json request;
        ChatResponse response;
        bool used = false;
    };

    QFuture<ChatResponse> replay(const ChatRequest &request);
    QFuture<ChatResponse> record(const ChatRequest &request);
    void load();
    static Json canonical(const ChatRequest &request);

    Settings m_settings;
    std::unique_ptr<LlmProvider> m_inner;
    std::shared_ptr<QMutex> m_fileMutex;
    QMutex m_mutex;
    std::vector<Exchange> m_exchanges;
    QString m_model;
};

} // namespace mneme
