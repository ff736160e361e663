#include <mneme/core/stream_parsers.h>

namespace mneme {

// ---------------------------------------------------------------------------------------------
// SseParser
//
// Follows the WHATWG "event stream interpretation": a line ends at \r\n, \n or \r. A \r that ends
// a feed is handled at once (the event must not wait for the next chunk), and the parser leaves
// that \r alone in m_buffer as a marker: after a feed m_buffer otherwise holds only an unfinished
// line, which never contains \r or \n, so an m_buffer of exactly "\r" when the next feed arrives
// can only be that marker. If that feed starts with \n, the \n completes the \r\n pair and is
// dropped; otherwise the marker is dropped alone.
// ---------------------------------------------------------------------------------------------

void SseParser::feed(const QByteArray &bytes)
{
    if (bytes.isEmpty())
        return;
    // Checked before appending: the new bytes may themselves start with a \r of their own.
    const bool pendingCr = m_buffer == "\r";
    m_buffer.append(bytes);

    qsizetype start = 0;
    if (pendingCr) {
        start = 1;
        if (m_buffer.at(1) == '\n')
            start = 2;
    }

    const qsizetype n = m_buffer.size();
    qsizetype i = start;
    while (i < n) {
        const char c = m_buffer.at(i);
        if (c != '\n' && c != '\r') {
            ++i;
            continue;
        }
        line(m_buffer.mid(start, i - start));
        if (c == '\r') {
            if (i + 1 == n) {
                // Cannot tell yet whether a \n follows: keep the \r as the marker described above.
                m_buffer = QByteArray(1, '\r');
                return;
            }
            if (m_buffer.at(i + 1) == '\n')
                ++i;
        }
        start = ++i;
    }
    m_buffer.remove(0, start);
}

std::vector<SseParser::Event> SseParser::take()
{
    std::vector<Event> out;
    out.swap(m_ready);
    return out;
}

void SseParser::finish()
{
    // A partial last line counts as a line; the marker \r is not a line of its own.
    if (!m_buffer.isEmpty() && m_buffer != "\r")
        line(m_buffer);
    m_buffer.clear();
    // The stream ended without the blank line that would dispatch the last event.
    line(QByteArray());
}

void SseParser::line(const QByteArray &l)
{
    if (l.isEmpty()) {
        // Dispatch. An event without any data line is not dispatched; the last event id carries
        // over to the following events, as the WHATWG model keeps it.
        if (m_hasData)
            m_ready.push_back(m_current);
        m_current.event.clear();
        m_current.data.clear();
        m_hasData = false;
        return;
    }
    if (l.startsWith(':'))
        return; // comment (keep-alive)

    QByteArray field;
    QByteArray value;
    const qsizetype colon = l.indexOf(':');
    if (colon < 0) {
        field = l;
    } else {
        field = l.left(colon);
        qsizetype v = colon + 1;
        if (v < l.size() && l.at(v) == ' ')
            ++v;
        value = l.mid(v);
    }

    if (field == "data") {
        if (m_hasData)
            m_current.data.append('\n');
        m_current.data.append(value);
        m_hasData = true;
    } else if (field == "event") {
        m_current.event = value;
    } else if (field == "id") {
        if (!value.contains('\0'))
            m_current.id = value;
    }
    // "retry" and unknown fields are ignored.
}

// ---------------------------------------------------------------------------------------------
// NdjsonParser
// ---------------------------------------------------------------------------------------------

namespace {

bool isBlank(const QByteArray &l)
{
    for (const char c : l) {
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\f' && c != '\v')
            return false;
    }
    return true;
}

void addLine(std::vector<QByteArray> &ready, QByteArray l)
{
    if (l.endsWith('\r'))
        l.chop(1);
    if (!isBlank(l))
        ready.push_back(std::move(l));
}

} // namespace

void NdjsonParser::feed(const QByteArray &bytes)
{
    if (bytes.isEmpty())
        return;
    m_buffer.append(bytes);
    qsizetype start = 0;
    for (qsizetype nl = m_buffer.indexOf('\n'); nl >= 0; nl = m_buffer.indexOf('\n', start)) {
        addLine(m_ready, m_buffer.mid(start, nl - start));
        start = nl + 1;
    }
    m_buffer.remove(0, start);
}

std::vector<QByteArray> NdjsonParser::take()
{
    std::vector<QByteArray> out;
    out.swap(m_ready);
    return out;
}

void NdjsonParser::finish()
{
    if (!m_buffer.isEmpty())
        addLine(m_ready, m_buffer);
    m_buffer.clear();
}

} // namespace mneme
