#pragma once

#include <mneme/core/export.h>

#include <QByteArray>
#include <vector>

namespace mneme {

// Server-sent events (text/event-stream, as OpenAI, Anthropic and Gemini stream): feed bytes as they
// arrive, take the complete events. Handles \n, \r\n and \r line ends, multi-line data, comments and
// events split across chunks.
class MNEME_CORE_EXPORT SseParser
{
public:
    struct Event
    {
        QByteArray event; // the "event:" field; empty when the server sent none
        QByteArray data;  // "data:" lines joined by \n
        QByteArray id;
    };

    void feed(const QByteArray &bytes);
    // Events completed so far, oldest first; the parser forgets them.
    std::vector<Event> take();
    // The stream ended: completes an event left without its blank line.
    void finish();

private:
    void line(const QByteArray &l);
    QByteArray m_buffer;
    Event m_current;
    bool m_hasData = false;
    std::vector<Event> m_ready;
};

// Newline-delimited JSON (Ollama streams): one complete line per entry, blank lines skipped.
class MNEME_CORE_EXPORT NdjsonParser
{
public:
    void feed(const QByteArray &bytes);
    std::vector<QByteArray> take();
    void finish();

private:
    QByteArray m_buffer;
    std::vector<QByteArray> m_ready;
};

} // namespace mneme
