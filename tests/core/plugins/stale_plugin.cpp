// A test plugin built against an older interface version: the registry must refuse it politely.
#include <mneme/core/embedder.h>

#include <QObject>

class StaleInterface
{
public:
    virtual ~StaleInterface() = default;
};
Q_DECLARE_INTERFACE(StaleInterface, "org.mneme.EmbedderFactory/0.9")

class StalePlugin : public QObject, public StaleInterface
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID "org.mneme.EmbedderFactory/0.9" FILE "stale_plugin.json")
    Q_INTERFACES(StaleInterface)
};

#include "stale_plugin.moc"
