#include "memory/chat_window_p.h"

#include <mneme/memory/memory_block.h>

#include <QHash>
#include <numeric>

namespace mneme::ChatWindow {

namespace {

using Role = ChatMessage::Role;

QString attribute(const QString &value)
{
    return MemoryBlock::escape(value).replace(QLatin1Char('\''), QLatin1String("&apos;"));
}

} // namespace

bool canStartAt(const std::vector<Role> &roles, size_t index)
{
    return index < roles.size() && roles[index] != Role::Tool;
}

FlushSelection selectFlush(const std::vector<Role> &roles, const std::vector<int> &tokens, int budget, int flushSize)
{
    const int n = int(roles.size());
    const long long total = std::accumulate(tokens.begin(), tokens.end(), 0LL);
    if (n < 2 || total <= budget)
        return {};
    // The oldest messages up to the flush size, never the last one.
    int taken = 0;
    long long takenTokens = 0;
    while (taken < n - 1 && takenTokens < flushSize)
        takenTokens += tokens[size_t(taken++)];
    // What stays starts with a user message...
    int k = taken;
    while (k < n - 1 && roles[size_t(k)] != Role::User)
        ++k;
    if (roles[size_t(k)] != Role::User) {
        // ...or, when none follows, with the last user message taken, and everything after it...
        int lastUser = -1;
        for (int i = taken - 1; i >= 0 && lastUser < 0; --i)
            if (roles[size_t(i)] == Role::User)
                lastUser = i;
        if (lastUser >= 0) {
            k = lastUser;
        } else {
            // ...or, in a history without user messages, with anything but a tool result.
            k = taken;
            while (k > 0 && !canStartAt(roles, size_t(k)))
                --k;
        }
    }
    if (k <= 0)
        return {};
    FlushSelection s;
    s.count = k;
    s.tokens = int(std::accumulate(tokens.begin(), tokens.begin() + k, 0LL));
    return s;
}

QString renderMemory(const std::vector<Section> &sections)
{
    if (sections.empty())
        return {};
    QHash<QString, int> tagCount;
    for (const Section &s : sections)
        ++tagCount[s.tag];
    QStringList parts{QStringLiteral("<memory>")};
    for (const Section &s : sections) {
        const QString open = tagCount.value(s.tag) > 1 ? QStringLiteral("<%1 name='%2'>").arg(s.tag, attribute(s.name))
                                                       : QStringLiteral("<%1>").arg(s.tag);
        parts << open << s.body << QStringLiteral("</%1>").arg(s.tag);
    }
    parts << QStringLiteral("</memory>");
    return parts.join(QLatin1Char('\n'));
}

size_t insertMemory(std::vector<ChatMessage> &messages, const QString &memory, InsertMethod method)
{
    const auto prepend = [&memory](ChatMessage &m) {
        m.content = m.content.isEmpty() ? memory : memory + QStringLiteral("\n\n") + m.content;
    };
    if (method == InsertMethod::System) {
        for (size_t i = 0; i < messages.size(); ++i)
            if (messages[i].role == Role::System) {
                prepend(messages[i]);
                return i;
            }
        messages.insert(messages.begin(), ChatMessage::system(memory));
        return 0;
    }
    for (size_t i = messages.size(); i-- > 0;)
        if (messages[i].role == Role::User) {
            prepend(messages[i]);
            return i;
        }
    messages.push_back(ChatMessage::user(memory));
    return messages.size() - 1;
}

} // namespace mneme::ChatWindow
