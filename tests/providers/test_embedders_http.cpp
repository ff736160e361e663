// The network embedder plugins (openai, azure, ollama, gemini, google-vertex, cohere, voyageai, jina,
// huggingface) against the scripted HTTP server, loaded through the real PluginRegistry: the exact
// request each sends, its reply shapes, batching, blank texts, dimensions, errors and secrets; and a
// Memory whose remember() and recall() embed through the openai plugin.

#include "log_capture.h"
#include "scripted_http_server.h"
#include "temp_store.h"
#include <mneme/core/embedder.h>
#include <mneme/core/error.h>
#include <mneme/core/json.h>
#include <mneme/core/plugin_registry.h>
#include <mneme/memory/memory.h>

#include <QLoggingCategory>
#include <QMutex>
#include <QRegularExpression>
#include <QtTest>

#include <functional>
#include <map>

using namespace mneme;
using mneme::test::LogCapture;
using mneme::test::RecordedRequest;
using mneme::test::ScriptedHttpServer;
using mneme::test::ScriptedReply;
using mneme::test::TempStore;

namespace {

// ---------------------------------------------------------------------------------------------
// Captured log lines (every mneme.* category on), checked for secrets at the end.

std::unique_ptr<LogCapture> g_logCapture;

// Every API key and token the tests hand to a plugin.
const QStringList &testSecrets()
{
    static const QStringList secrets = {
        QStringLiteral("sk-test-openai-7f3a9c1e5b"),
        QStringLiteral("azure-test-key-4d2e8a61f0"),
        QStringLiteral("ollama-test-key-93b1c7d2"),
        QStringLiteral("AIzaTestGeminiKey-5e7f9a1b3c"),
        QStringLiteral("ya29.test-vertex-token-0c8e"),
        QStringLiteral("co-test-key-6a4b2c8d0e"),
        QStringLiteral("pa-test-voyage-1f3e5d7c9b"),
        QStringLiteral("jina_test_key_2b4d6f8a0c"),
        QStringLiteral("hf_test_token_8e6c4a2f0d"),
        QStringLiteral("sk-test-memory-5c3a1e9f7d"),
    };
    return secrets;
}

// Every environment variable a plugin reads a key or a base URL from: unset so that the machine's
// own settings cannot leak into the tests.
const QStringList &providerEnvironment()
{
    static const QStringList vars = {
        QStringLiteral("OPENAI_API_KEY"),
        QStringLiteral("OPENAI_BASE_URL"),
        QStringLiteral("OPENAI_API_BASE"),
        QStringLiteral("AZURE_API_KEY"),
        QStringLiteral("AZURE_OPENAI_API_KEY"),
        QStringLiteral("AZURE_API_BASE"),
        QStringLiteral("AZURE_OPENAI_ENDPOINT"),
        QStringLiteral("AZURE_API_VERSION"),
        QStringLiteral("OPENAI_API_VERSION"),
        QStringLiteral("OLLAMA_HOST"),
        QStringLiteral("OLLAMA_API_KEY"),
        QStringLiteral("GEMINI_API_KEY"),
        QStringLiteral("GOOGLE_API_KEY"),
        QStringLiteral("GOOGLE_CLOUD_ACCESS_TOKEN"),
        QStringLiteral("GOOGLE_CLOUD_PROJECT"),
        QStringLiteral("GOOGLE_CLOUD_LOCATION"),
        QStringLiteral("COHERE_API_KEY"),
        QStringLiteral("CO_API_KEY"),
        QStringLiteral("CO_API_URL"),
        QStringLiteral("VOYAGE_API_KEY"),
        QStringLiteral("JINA_API_KEY"),
        QStringLiteral("HF_TOKEN"),
        QStringLiteral("HUGGINGFACE_API_KEY"),
        QStringLiteral("HF_TEI_URL"),
        QStringLiteral("TEI_URL"),
        QStringLiteral("HTTP_PROXY"),
        QStringLiteral("HTTPS_PROXY"),
        QStringLiteral("http_proxy"),
        QStringLiteral("https_proxy"),
        QStringLiteral("ALL_PROXY"),
        QStringLiteral("all_proxy"),
    };
    return vars;
}

// ---------------------------------------------------------------------------------------------
// Deterministic vectors: every value an exact binary fraction, so it survives JSON both ways.

Embedding vectorFor(const QString &text, int dimension)
{
    const size_t h = qHash(text, 0);
    Embedding v(dimension);
    for (int i = 0; i < dimension; ++i)
        v[i] = float((h >> ((i * 5) % 56)) & 0xff) / 256.0f + float(i + 1) / 64.0f;
    return v;
}

Json toJson(const Embedding &v)
{
    Json a = Json::array();
    for (float x : v)
        a.push_back(double(x));
    return a;
}

QStringList numbered(const QString &prefix, int n)
{
    QStringList out;
    for (int i = 0; i < n; ++i)
        out << QStringLiteral("%1 %2").arg(prefix).arg(i);
    return out;
}

Json stringsOf(const QStringList &texts)
{
    Json a = Json::array();
    for (const QString &t : texts)
        a.push_back(t.toStdString());
    return a;
}

QStringList textsFromArray(const Json &a)
{
    QStringList out;
    for (const Json &t : a)
        out << QString::fromStdString(t.get<std::string>());
    return out;
}

// ---------------------------------------------------------------------------------------------
// One provider's wire format, as its public API reference describes it.

struct ProviderCase
{
    QString key;                                       // what the config's "provider" says
    std::function<Json(const QString &server)> config; // pointing at the scripted server, with a key
    QByteArray path;                                   // path (and query) of the request
    QByteArray authHeader;                             // empty: none is sent
    QByteArray authValue;
    QString id;             // id() for config()
    int tableDimension = 0; // the known size of config()'s model
    int defaultBatch = 0;   // texts per request without max_batch
    QString secret;         // the key in config()
    // The request body for these texts (dims > 0: "dimensions" configured).
    std::function<Json(const QStringList &texts, int dims)> body;
    // The texts a request body carries.
    std::function<QStringList(const Json &body)> texts;
    // The provider's reply carrying these vectors (reversed: data[] out of index order, where the
    // format has an index).
    std::function<Json(const std::vector<Embedding> &vectors, bool reversed)> reply;
    bool indexed = false;
    // The provider's own error for a refused key.
    int errorStatus = 401;
    QByteArray errorBody;
    ErrorKind errorKind = ErrorKind::Authentication;
    QString errorText; // part of the provider's message
    // Without a key and a base URL (nullptr: the provider needs no key).
    std::function<Json(const QString &server)> keylessConfig;
    QString keyEnvName; // named in the missing-key error
};

Json openAiStyleReply(const std::vector<Embedding> &vectors, bool reversed, const char *model)
{
    Json data = Json::array();
    for (size_t i = 0; i < vectors.size(); ++i) {
        const size_t k = reversed ? vectors.size() - 1 - i : i;
        data.push_back(Json{{"object", "embedding"}, {"index", k}, {"embedding", toJson(vectors[k])}});
    }
    return Json{{"object", "list"}, {"data", data}, {"model", model}, {"usage", {{"prompt_tokens", 3 * vectors.size()}, {"total_tokens", 3 * vectors.size()}}}};
}

const std::map<QString, ProviderCase> &providerCases()
{
    static const std::map<QString, ProviderCase> cases = [] {
        std::map<QString, ProviderCase> m;

        ProviderCase openai;
        openai.key = QStringLiteral("openai");
        openai.secret = testSecrets()[0];
        openai.config = [s = openai.secret](const QString &server) {
            return Json{{"base_url", (server + QStringLiteral("/v1")).toStdString()}, {"api_key", s.toStdString()}, {"model_name", "text-embedding-3-small"}};
        };
        openai.path = "/v1/embeddings";
        openai.authHeader = "Authorization";
        openai.authValue = "Bearer " + openai.secret.toUtf8();
        openai.id = QStringLiteral("openai/text-embedding-3-small");
        openai.tableDimension = 1536;
        openai.defaultBatch = 2048;
        openai.body = [](const QStringList &texts, int dims) {
            Json b{{"model", "text-embedding-3-small"}, {"input", stringsOf(texts)}, {"encoding_format", "float"}};
            if (dims > 0)
                b["dimensions"] = dims;
            return b;
        };
        openai.texts = [](const Json &b) { return textsFromArray(b["input"]); };
        openai.reply = [](const std::vector<Embedding> &v, bool reversed) {
            return openAiStyleReply(v, reversed, "text-embedding-3-small");
        };
        openai.indexed = true;
        openai.errorStatus = 401;
        openai.errorBody = "{\"error\":{\"message\":\"Incorrect API key provided: sk-test-openai-7f3a9c1e5b. You can find your API key at https://platform.openai.com/account/api-keys.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"invalid_api_key\"}}";
        openai.errorKind = ErrorKind::Authentication;
        openai.errorText = QStringLiteral("Incorrect API key provided");
        openai.keylessConfig = [](const QString &) { return Json{{"model_name", "text-embedding-3-small"}}; };
        openai.keyEnvName = QStringLiteral("OPENAI_API_KEY");
        m[openai.key] = openai;

        ProviderCase azure;
        azure.key = QStringLiteral("azure");
        azure.secret = testSecrets()[1];
        azure.config = [s = azure.secret](const QString &server) {
            return Json{{"api_base", server.toStdString()}, {"api_key", s.toStdString()}, {"deployment_id", "emb-deploy"}, {"api_version", "2024-02-01"}, {"model_name", "text-embedding-3-small"}};
        };
        azure.path = "/openai/deployments/emb-deploy/embeddings?api-version=2024-02-01";
        azure.authHeader = "api-key";
        azure.authValue = azure.secret.toUtf8();
        azure.id = QStringLiteral("azure/text-embedding-3-small");
        azure.tableDimension = 1536;
        azure.defaultBatch = 2048;
        azure.body = [](const QStringList &texts, int dims) {
            Json b{{"input", stringsOf(texts)}, {"encoding_format", "float"}};
            if (dims > 0)
                b["dimensions"] = dims;
            return b;
        };
        azure.texts = openai.texts;
        azure.reply = [](const std::vector<Embedding> &v, bool reversed) {
            return openAiStyleReply(v, reversed, "text-embedding-3-small");
        };
        azure.indexed = true;
        azure.errorStatus = 401;
        azure.errorBody = "{\"error\":{\"code\":\"401\",\"message\":\"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.\"}}";
        azure.errorKind = ErrorKind::Authentication;
        azure.errorText = QStringLiteral("Access denied due to invalid subscription key");
        azure.keylessConfig = [](const QString &server) {
            return Json{{"api_base", server.toStdString()}, {"deployment_id", "emb-deploy"}};
        };
        azure.keyEnvName = QStringLiteral("AZURE_API_KEY");
        m[azure.key] = azure;

        ProviderCase ollama;
        ollama.key = QStringLiteral("ollama");
        ollama.secret = testSecrets()[2];
        // As CrewAI's documentation writes it: the endpoint's URL, not the server's.
        ollama.config = [](const QString &server) {
            return Json{{"url", (server + QStringLiteral("/api/embeddings")).toStdString()},
                        {"model_name", "mxbai-embed-large"}};
        };
        ollama.path = "/api/embed";
        ollama.id = QStringLiteral("ollama/mxbai-embed-large");
        ollama.tableDimension = 1024;
        ollama.defaultBatch = 512;
        ollama.body = [](const QStringList &texts, int dims) {
            Json b{{"model", "mxbai-embed-large"}, {"input", stringsOf(texts)}};
            if (dims > 0)
                b["dimensions"] = dims;
            return b;
        };
        ollama.texts = openai.texts;
        ollama.reply = [](const std::vector<Embedding> &v, bool) {
            Json e = Json::array();
            for (const Embedding &x : v)
                e.push_back(toJson(x));
            return Json{{"model", "mxbai-embed-large"}, {"embeddings", e}, {"total_duration", 14143917}, {"load_duration", 1019500}, {"prompt_eval_count", 8}};
        };
        ollama.errorStatus = 404;
        ollama.errorBody = "{\"error\":\"model \\\"mxbai-embed-large\\\" not found, try pulling it first\"}";
        ollama.errorKind = ErrorKind::BadRequest;
        ollama.errorText = QStringLiteral("not found, try pulling it first");
        m[ollama.key] = ollama;

        ProviderCase gemini;
        gemini.key = QStringLiteral("gemini");
        gemini.secret = testSecrets()[3];
        gemini.config = [s = gemini.secret](const QString &server) {
            return Json{{"base_url", server.toStdString()}, {"api_key", s.toStdString()}, {"model_name", "gemini-embedding-001"}};
        };
        gemini.path = "/v1beta/models/gemini-embedding-001:batchEmbedContents";
        gemini.authHeader = "x-goog-api-key";
        gemini.authValue = gemini.secret.toUtf8();
        gemini.id = QStringLiteral("gemini/gemini-embedding-001");
        gemini.tableDimension = 3072;
        gemini.defaultBatch = 100;
        gemini.body = [](const QStringList &texts, int dims) {
            Json requests = Json::array();
            for (const QString &t : texts) {
                Json r{{"model", "models/gemini-embedding-001"},
                       {"content", {{"parts", Json::array({Json{{"text", t.toStdString()}}})}}},
                       {"taskType", "SEMANTIC_SIMILARITY"}};
                if (dims > 0)
                    r["outputDimensionality"] = dims;
                requests.push_back(r);
            }
            return Json{{"requests", requests}};
        };
        gemini.texts = [](const Json &b) {
            QStringList out;
            for (const Json &r : b["requests"])
                out << QString::fromStdString(r["content"]["parts"][0]["text"].get<std::string>());
            return out;
        };
        gemini.reply = [](const std::vector<Embedding> &v, bool) {
            Json e = Json::array();
            for (const Embedding &x : v)
                e.push_back(Json{{"values", toJson(x)}});
            return Json{{"embeddings", e}};
        };
        gemini.errorStatus = 403;
        gemini.errorBody = "{\"error\":{\"code\":403,\"message\":\"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.\",\"status\":\"PERMISSION_DENIED\"}}";
        gemini.errorKind = ErrorKind::Authentication;
        gemini.errorText = QStringLiteral("Method doesn't allow unregistered callers");
        gemini.keylessConfig = [](const QString &) { return Json{{"model_name", "gemini-embedding-001"}}; };
        gemini.keyEnvName = QStringLiteral("GEMINI_API_KEY");
        m[gemini.key] = gemini;

        ProviderCase vertex;
        vertex.key = QStringLiteral("google-vertex");
        vertex.secret = testSecrets()[4];
        vertex.config = [s = vertex.secret](const QString &server) {
            return Json{{"base_url", server.toStdString()}, {"access_token", s.toStdString()}, {"project_id", "proj-1"}, {"location", "europe-west4"}, {"model_name", "text-embedding-005"}};
        };
        vertex.path = "/v1/projects/proj-1/locations/europe-west4/publishers/google/models/text-embedding-005:predict";
        vertex.authHeader = "Authorization";
        vertex.authValue = "Bearer " + vertex.secret.toUtf8();
        vertex.id = QStringLiteral("google-vertex/text-embedding-005");
        vertex.tableDimension = 768;
        vertex.defaultBatch = 8;
        vertex.body = [](const QStringList &texts, int dims) {
            Json instances = Json::array();
            for (const QString &t : texts)
                instances.push_back(Json{{"content", t.toStdString()}, {"task_type", "SEMANTIC_SIMILARITY"}});
            Json b{{"instances", instances}};
            if (dims > 0)
                b["parameters"] = Json{{"outputDimensionality", dims}};
            return b;
        };
        vertex.texts = [](const Json &b) {
            QStringList out;
            for (const Json &i : b["instances"])
                out << QString::fromStdString(i["content"].get<std::string>());
            return out;
        };
        vertex.reply = [](const std::vector<Embedding> &v, bool) {
            Json p = Json::array();
            for (const Embedding &x : v)
                p.push_back(Json{{"embeddings", {{"statistics", {{"truncated", false}, {"token_count", 4}}}, {"values", toJson(x)}}}});
            return Json{{"predictions", p}, {"metadata", {{"billableCharacterCount", 42}}}};
        };
        vertex.errorStatus = 403;
        vertex.errorBody = "{\"error\":{\"code\":403,\"message\":\"Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/proj-1/locations/europe-west4/publishers/google/models/text-embedding-005' (or it may not exist).\",\"status\":\"PERMISSION_DENIED\"}}";
        vertex.errorKind = ErrorKind::Authentication;
        vertex.errorText = QStringLiteral("Permission 'aiplatform.endpoints.predict' denied");
        vertex.keylessConfig = [](const QString &) {
            return Json{{"project_id", "proj-1"}, {"location", "us-central1"}, {"model_name", "text-embedding-005"}};
        };
        vertex.keyEnvName = QStringLiteral("GOOGLE_CLOUD_ACCESS_TOKEN");
        m[vertex.key] = vertex;

        ProviderCase cohere;
        cohere.key = QStringLiteral("cohere");
        cohere.secret = testSecrets()[5];
        cohere.config = [s = cohere.secret](const QString &server) {
            return Json{{"base_url", server.toStdString()}, {"api_key", s.toStdString()}, {"model_name", "embed-english-v3.0"}};
        };
        cohere.path = "/v2/embed";
        cohere.authHeader = "Authorization";
        cohere.authValue = "Bearer " + cohere.secret.toUtf8();
        cohere.id = QStringLiteral("cohere/embed-english-v3.0");
        cohere.tableDimension = 1024;
        cohere.defaultBatch = 96;
        cohere.body = [](const QStringList &texts, int dims) {
            Json b{{"model", "embed-english-v3.0"}, {"texts", stringsOf(texts)}, {"input_type", "search_document"}, {"embedding_types", Json::array({"float"})}};
            if (dims > 0)
                b["output_dimension"] = dims;
            return b;
        };
        cohere.texts = [](const Json &b) { return textsFromArray(b["texts"]); };
        cohere.reply = [](const std::vector<Embedding> &v, bool) {
            Json f = Json::array();
            for (const Embedding &x : v)
                f.push_back(toJson(x));
            return Json{{"id", "da6e531f-54c6-4a73-bf92-f60566d8d753"},
                        {"embeddings", {{"float", f}}},
                        {"texts", Json::array()},
                        {"meta", {{"api_version", {{"version", "2"}}}, {"billed_units", {{"input_tokens", 4}}}}},
                        {"response_type", "embeddings_by_type"}};
        };
        cohere.errorStatus = 401;
        cohere.errorBody = "{\"id\":\"4e8d1b2c-0f3a-4b5c-9d6e-7f8a9b0c1d2e\",\"message\":\"invalid api token\"}";
        cohere.errorKind = ErrorKind::Authentication;
        cohere.errorText = QStringLiteral("invalid api token");
        cohere.keylessConfig = [](const QString &) { return Json{{"model_name", "embed-english-v3.0"}}; };
        cohere.keyEnvName = QStringLiteral("COHERE_API_KEY");
        m[cohere.key] = cohere;

        ProviderCase voyage;
        voyage.key = QStringLiteral("voyageai");
        voyage.secret = testSecrets()[6];
        voyage.config = [s = voyage.secret](const QString &server) {
            return Json{{"base_url", server.toStdString()}, {"api_key", s.toStdString()}, {"model", "voyage-3"}};
        };
        voyage.path = "/v1/embeddings";
        voyage.authHeader = "Authorization";
        voyage.authValue = "Bearer " + voyage.secret.toUtf8();
        voyage.id = QStringLiteral("voyageai/voyage-3");
        voyage.tableDimension = 1024;
        voyage.defaultBatch = 128;
        voyage.body = [](const QStringList &texts, int dims) {
            Json b{{"model", "voyage-3"}, {"input", stringsOf(texts)}};
            if (dims > 0)
                b["output_dimension"] = dims;
            return b;
        };
        voyage.texts = openai.texts;
        voyage.reply = [](const std::vector<Embedding> &v, bool reversed) {
            return openAiStyleReply(v, reversed, "voyage-3");
        };
        voyage.indexed = true;
        voyage.errorStatus = 401;
        voyage.errorBody = "{\"detail\":\"Provided API key is invalid.\"}";
        voyage.errorKind = ErrorKind::Authentication;
        voyage.errorText = QStringLiteral("Provided API key is invalid.");
        voyage.keylessConfig = [](const QString &) { return Json{{"model", "voyage-3"}}; };
        voyage.keyEnvName = QStringLiteral("VOYAGE_API_KEY");
        m[voyage.key] = voyage;

        ProviderCase jina;
        jina.key = QStringLiteral("jina");
        jina.secret = testSecrets()[7];
        jina.config = [s = jina.secret](const QString &server) {
            return Json{{"base_url", server.toStdString()}, {"api_key", s.toStdString()}, {"model_name", "jina-embeddings-v2-base-en"}};
        };
        jina.path = "/v1/embeddings";
        jina.authHeader = "Authorization";
        jina.authValue = "Bearer " + jina.secret.toUtf8();
        jina.id = QStringLiteral("jina/jina-embeddings-v2-base-en");
        jina.tableDimension = 768;
        jina.defaultBatch = 512;
        jina.body = [](const QStringList &texts, int dims) {
            Json b{{"model", "jina-embeddings-v2-base-en"}, {"input", stringsOf(texts)}};
            if (dims > 0)
                b["dimensions"] = dims;
            return b;
        };
        jina.texts = openai.texts;
        jina.reply = [](const std::vector<Embedding> &v, bool reversed) {
            return openAiStyleReply(v, reversed, "jina-embeddings-v2-base-en");
        };
        jina.indexed = true;
        jina.errorStatus = 401;
        jina.errorBody = "{\"detail\":\"Invalid API key: jina_test_key_2b4d6f8a0c is not authorized\"}";
        jina.errorKind = ErrorKind::Authentication;
        jina.errorText = QStringLiteral("is not authorized");
        jina.keylessConfig = [](const QString &) { return Json{{"model_name", "jina-embeddings-v2-base-en"}}; };
        jina.keyEnvName = QStringLiteral("JINA_API_KEY");
        m[jina.key] = jina;

        ProviderCase hf;
        hf.key = QStringLiteral("huggingface");
        hf.secret = testSecrets()[8];
        hf.config = [s = hf.secret](const QString &server) {
            return Json{{"base_url", server.toStdString()}, {"api_key", s.toStdString()}, {"model_name", "sentence-transformers/all-MiniLM-L6-v2"}};
        };
        hf.path = "/embed";
        hf.authHeader = "Authorization";
        hf.authValue = "Bearer " + hf.secret.toUtf8();
        hf.id = QStringLiteral("huggingface/sentence-transformers/all-MiniLM-L6-v2");
        hf.tableDimension = 384;
        hf.defaultBatch = 32;
        hf.body = [](const QStringList &texts, int dims) {
            Json b{{"inputs", stringsOf(texts)}, {"normalize", true}, {"truncate", true}};
            if (dims > 0)
                b["dimensions"] = dims;
            return b;
        };
        hf.texts = [](const Json &b) { return textsFromArray(b["inputs"]); };
        hf.reply = [](const std::vector<Embedding> &v, bool) {
            Json a = Json::array();
            for (const Embedding &x : v)
                a.push_back(toJson(x));
            return a;
        };
        hf.errorStatus = 413;
        hf.errorBody = "{\"error\":\"batch size 64 > maximum allowed batch size 32\",\"error_type\":\"Validation\"}";
        hf.errorKind = ErrorKind::BadRequest;
        hf.errorText = QStringLiteral("maximum allowed batch size 32");
        m[hf.key] = hf;

        return m;
    }();
    return cases;
}

const ProviderCase &providerCase(const QString &key)
{
    return providerCases().at(key);
}

Json merged(Json base, const Json &patch)
{
    for (auto it = patch.begin(); it != patch.end(); ++it)
        base[it.key()] = it.value();
    return base;
}

// How the scripted provider misbehaves.
struct Answer
{
    int dimension = 8;
    bool reversed = false; // data[] out of index order
    bool dropLast = false; // one vector fewer than asked
    int shortIndex = -1;   // this vector gets dimension - 1 entries
};

// A handler answering every request in the provider's format with vectorFor() of its texts.
std::function<ScriptedReply(const RecordedRequest &)> answering(const ProviderCase &c, Answer a)
{
    return [c, a](const RecordedRequest &request) {
        const QStringList texts = c.texts(request.json());
        std::vector<Embedding> vectors;
        for (int i = 0; i < texts.size(); ++i) {
            Embedding v = vectorFor(texts[i], a.dimension);
            if (i == a.shortIndex)
                v.pop_back();
            vectors.push_back(std::move(v));
        }
        if (a.dropLast && !vectors.empty())
            vectors.pop_back();
        return ScriptedReply::json(QByteArray::fromStdString(c.reply(vectors, a.reversed).dump()));
    };
}

QStringList allKeys()
{
    QStringList keys;
    for (const auto &[key, c] : providerCases())
        keys << key;
    return keys;
}

} // namespace

class TestEmbeddersHttp : public QObject
{
    Q_OBJECT

private:
    std::unique_ptr<Embedder> create(const QString &key, const Json &config)
    {
        return PluginRegistry::instance().createEmbedder(key, config);
    }

    void addProviderRows(bool keyedOnly = false)
    {
        QTest::addColumn<QString>("key");
        for (const QString &key : allKeys()) {
            if (keyedOnly && !providerCase(key).keylessConfig)
                continue;
            QTest::newRow(key.toUtf8().constData()) << key;
        }
    }

private Q_SLOTS:
    void initTestCase()
    {
        for (const QString &var : providerEnvironment())
            qunsetenv(var.toLatin1().constData());
        g_logCapture = std::make_unique<LogCapture>();
        const QStringList keys = PluginRegistry::instance().keys(PluginRegistry::Kind::Embedder);
        for (const char *k : {"openai", "azure", "ollama", "gemini", "google-generativeai", "google",
                              "google-vertex", "cohere", "voyageai", "voyage", "jina", "huggingface",
                              "text-embeddings-inference"})
            QVERIFY2(keys.contains(QString::fromLatin1(k)), qPrintable(QStringLiteral("no embedder plugin for \"%1\"; known: %2")
                                                                           .arg(QString::fromLatin1(k), keys.join(QLatin1Char(' ')))));
    }

    // The exact request: method, path, auth header, body field by field; the vectors in order;
    // id() and the dimension from the known-model table (no request) or from "dimensions".
    void request_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<int>("dims");
        for (const QString &key : allKeys()) {
            QTest::newRow(key.toUtf8().constData()) << key << 0;
            QTest::newRow((key + QStringLiteral("+dimensions")).toUtf8().constData()) << key << 8;
        }
    }
    void request()
    {
        QFETCH(QString, key);
        QFETCH(int, dims);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        Json config = c.config(server.baseUrl().toString());
        if (dims > 0)
            config["dimensions"] = dims;
        const int size = dims > 0 ? dims : c.tableDimension;
        server.setHandler(answering(c, Answer{size}));

        auto embedder = create(c.key, config);
        QCOMPARE(embedder->id(), c.id);
        QCOMPARE(embedder->dimension(), size);
        QCOMPARE(server.requestCount(), 0); // known without asking

        const QStringList texts = {QStringLiteral("The cat sat on the mat."), QStringLiteral("Ünïcödé \"quotes\" \\ and\nnewlines")};
        const std::vector<Embedding> vectors = embedder->embed(texts);
        QCOMPARE(int(vectors.size()), 2);
        QCOMPARE(vectors[0], vectorFor(texts[0], size));
        QCOMPARE(vectors[1], vectorFor(texts[1], size));

        const QList<RecordedRequest> requests = server.requests();
        QCOMPARE(requests.size(), 1);
        const RecordedRequest &r = requests.front();
        QCOMPARE(r.method, QByteArray("POST"));
        QCOMPARE(r.path, c.path);
        QVERIFY2(r.header("content-type").startsWith("application/json"), r.header("content-type").constData());
        if (c.authHeader.isEmpty()) {
            QVERIFY(r.header("authorization").isEmpty());
        } else {
            QCOMPARE(r.header(c.authHeader), c.authValue);
        }
        QVERIFY2(!r.path.contains(c.secret.toUtf8()), "the key is in the URL");
        const Json expected = c.body(texts, dims);
        QVERIFY2(r.json() == expected, qPrintable(QStringLiteral("body %1\nexpected %2")
                                                      .arg(QString::fromUtf8(r.body), QString::fromStdString(expected.dump()))));
    }

    // data[] arriving out of index order is put back in order.
    void replyOutOfOrder_data()
    {
        QTest::addColumn<QString>("key");
        for (const QString &key : allKeys())
            if (providerCase(key).indexed)
                QTest::newRow(key.toUtf8().constData()) << key;
    }
    void replyOutOfOrder()
    {
        QFETCH(QString, key);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        server.setHandler(answering(c, Answer{8, true}));
        auto embedder = create(c.key, merged(c.config(server.baseUrl().toString()), {{"dimensions", 8}}));
        const QStringList texts = numbered(QStringLiteral("text"), 5);
        const std::vector<Embedding> vectors = embedder->embed(texts);
        QCOMPARE(int(vectors.size()), 5);
        for (int i = 0; i < 5; ++i)
            QCOMPARE(vectors[i], vectorFor(texts[i], 8));
    }

    // More texts than a request takes: several requests in order, the vectors stitched back.
    void batching_data() { addProviderRows(); }
    void batching()
    {
        QFETCH(QString, key);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        server.setHandler(answering(c, Answer{8}));
        auto embedder = create(c.key, merged(c.config(server.baseUrl().toString()), {{"dimensions", 8}, {"max_batch", 50}}));
        const QStringList texts = numbered(QStringLiteral("memory"), 120);
        const std::vector<Embedding> vectors = embedder->embed(texts);
        QCOMPARE(int(vectors.size()), 120);
        for (int i = 0; i < 120; ++i)
            QCOMPARE(vectors[i], vectorFor(texts[i], 8));
        const QList<RecordedRequest> requests = server.requests();
        QCOMPARE(requests.size(), 3);
        QCOMPARE(c.texts(requests[0].json()), texts.mid(0, 50));
        QCOMPARE(c.texts(requests[1].json()), texts.mid(50, 50));
        QCOMPARE(c.texts(requests[2].json()), texts.mid(100, 20));
    }

    // Without max_batch, the provider's own limit.
    void defaultBatchLimit_data() { addProviderRows(); }
    void defaultBatchLimit()
    {
        QFETCH(QString, key);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        server.setHandler(answering(c, Answer{4}));
        auto embedder = create(c.key, merged(c.config(server.baseUrl().toString()), {{"dimensions", 4}}));
        const QStringList texts = numbered(QStringLiteral("t"), c.defaultBatch + 1);
        const std::vector<Embedding> vectors = embedder->embed(texts);
        QCOMPARE(int(vectors.size()), texts.size());
        QCOMPARE(vectors.back(), vectorFor(texts.back(), 4));
        const QList<RecordedRequest> requests = server.requests();
        QCOMPARE(requests.size(), 2);
        QCOMPARE(int(c.texts(requests[0].json()).size()), c.defaultBatch);
        QCOMPARE(c.texts(requests[1].json()), QStringList{texts.back()});
    }

    // Blank texts get empty vectors and are not sent; only blanks: no request at all.
    void blankTexts_data() { addProviderRows(); }
    void blankTexts()
    {
        QFETCH(QString, key);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        server.setHandler(answering(c, Answer{8}));
        auto embedder = create(c.key, merged(c.config(server.baseUrl().toString()), {{"dimensions", 8}}));
        const QStringList texts = {QString(), QStringLiteral("alpha"), QStringLiteral("  \n\t"), QStringLiteral("beta")};
        const std::vector<Embedding> vectors = embedder->embed(texts);
        QCOMPARE(int(vectors.size()), 4);
        QVERIFY(vectors[0].empty());
        QCOMPARE(vectors[1], vectorFor(QStringLiteral("alpha"), 8));
        QVERIFY(vectors[2].empty());
        QCOMPARE(vectors[3], vectorFor(QStringLiteral("beta"), 8));
        QCOMPARE(server.requestCount(), 1);
        QCOMPARE(c.texts(server.requests().front().json()), (QStringList{QStringLiteral("alpha"), QStringLiteral("beta")}));

        QCOMPARE(int(embedder->embed({QString(), QStringLiteral(" ")}).size()), 2);
        QVERIFY(embedder->embed({}).empty());
        QCOMPARE(server.requestCount(), 1);
    }

    // An unknown model without "dimensions": one probe request, once; later vectors must match it.
    void probedDimension_data() { addProviderRows(); }
    void probedDimension()
    {
        QFETCH(QString, key);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        server.setHandler(answering(c, Answer{5}));
        auto embedder = create(c.key, merged(c.config(server.baseUrl().toString()), {{"model", "custom-embed"}}));
        QVERIFY2(embedder->id().endsWith(QStringLiteral("/custom-embed")), qPrintable(embedder->id()));
        QCOMPARE(embedder->dimension(), 5);
        QCOMPARE(server.requestCount(), 1);
        QCOMPARE(c.texts(server.requests().front().json()).size(), 1);
        QCOMPARE(embedder->dimension(), 5);
        QCOMPARE(server.requestCount(), 1);

        QCOMPARE(embedder->embed({QStringLiteral("one")}).front(), vectorFor(QStringLiteral("one"), 5));
        server.setHandler(answering(c, Answer{6}));
        try {
            embedder->embed({QStringLiteral("two")});
            QFAIL("a vector of another size was accepted");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::MalformedReply);
            QVERIFY2(e.message().contains(QStringLiteral("dimensions")), qPrintable(e.message()));
        }
    }

    // A vector of the wrong size, or one vector too few: MalformedReply.
    void malformedReplies_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<bool>("dropLast");
        for (const QString &key : allKeys()) {
            QTest::newRow((key + QStringLiteral(": wrong dimension")).toUtf8().constData()) << key << false;
            QTest::newRow((key + QStringLiteral(": wrong count")).toUtf8().constData()) << key << true;
        }
    }
    void malformedReplies()
    {
        QFETCH(QString, key);
        QFETCH(bool, dropLast);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        Answer a{8};
        if (dropLast)
            a.dropLast = true;
        else
            a.shortIndex = 1;
        server.setHandler(answering(c, a));
        auto embedder = create(c.key, merged(c.config(server.baseUrl().toString()), {{"dimensions", 8}}));
        try {
            embedder->embed({QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")});
            QFAIL("a malformed reply was accepted");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::MalformedReply);
            QVERIFY2(e.message().contains(dropLast ? QStringLiteral("3") : QStringLiteral("7")), qPrintable(e.message()));
            QVERIFY(!e.message().contains(c.secret));
        }
    }

    // Replies that are not the promised shape at all.
    void notTheShape_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<int>("kind");
        for (const QString &key : allKeys()) {
            QTest::newRow((key + QStringLiteral(": html")).toUtf8().constData())
                << key << QByteArray("<html><head><title>502 Bad Gateway</title></head></html>") << int(ErrorKind::MalformedReply);
            QTest::newRow((key + QStringLiteral(": empty object")).toUtf8().constData())
                << key << QByteArray("{}") << int(ErrorKind::MalformedReply);
            QTest::newRow((key + QStringLiteral(": strings")).toUtf8().constData())
                << key << QByteArray("{\"data\":[{\"index\":0,\"embedding\":[\"x\"]}],\"embeddings\":[[\"x\"]],\"predictions\":[{\"embeddings\":{\"values\":[\"x\"]}}]}")
                << int(ErrorKind::MalformedReply);
            QTest::newRow((key + QStringLiteral(": error in a 200")).toUtf8().constData())
                << key << QByteArray("{\"error\":{\"message\":\"the model is overloaded\"}}") << int(ErrorKind::Provider);
        }
    }
    void notTheShape()
    {
        QFETCH(QString, key);
        QFETCH(QByteArray, body);
        QFETCH(int, kind);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(body));
        auto embedder = create(c.key, merged(c.config(server.baseUrl().toString()), {{"dimensions", 8}, {"max_retries", 0}}));
        try {
            embedder->embed({QStringLiteral("a")});
            QFAIL("a reply of the wrong shape was accepted");
        } catch (const Error &e) {
            QCOMPARE(int(e.kind()), kind);
            if (kind == int(ErrorKind::Provider))
                QVERIFY2(e.message().contains(QStringLiteral("the model is overloaded")), qPrintable(e.message()));
        }
    }

    // The provider's own error reply: the right kind, the provider's message, never the key.
    void providerError_data() { addProviderRows(); }
    void providerError()
    {
        QFETCH(QString, key);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(c.errorBody, c.errorStatus));
        auto embedder = create(c.key, merged(c.config(server.baseUrl().toString()), {{"dimensions", 8}, {"max_retries", 0}}));
        try {
            embedder->embed({QStringLiteral("hello")});
            QFAIL("an error reply was accepted");
        } catch (const Error &e) {
            QCOMPARE(int(e.kind()), int(c.errorKind));
            QCOMPARE(e.httpStatus(), c.errorStatus);
            QVERIFY2(e.message().contains(c.errorText), qPrintable(e.message()));
            for (const QString &secret : testSecrets())
                QVERIFY2(!e.message().contains(secret), qPrintable(e.message()));
        }
        QCOMPARE(server.requestCount(), 1);
    }

    // The HTTP layer's kinds through one provider's real shapes.
    void errorKinds_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("text");
        QTest::newRow("429") << 429
                             << QByteArray("{\"error\":{\"message\":\"Rate limit reached for text-embedding-3-small in organization org-x on requests per min (RPM): Limit 3000, Used 3000, Requested 1.\",\"type\":\"requests\",\"param\":null,\"code\":\"rate_limit_exceeded\"}}")
                             << int(ErrorKind::RateLimited) << QStringLiteral("Rate limit reached");
        QTest::newRow("500") << 500
                             << QByteArray("{\"error\":{\"message\":\"The server had an error while processing your request. Sorry about that!\",\"type\":\"server_error\",\"param\":null,\"code\":null}}")
                             << int(ErrorKind::ServerError) << QStringLiteral("The server had an error");
        QTest::newRow("context length") << 400
                                        << QByteArray("{\"error\":{\"message\":\"This model's maximum context length is 8192 tokens, however you requested 9000 tokens (9000 in your prompt; 0 for the completion). Please reduce your prompt; or completion length.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}")
                                        << int(ErrorKind::ContextLength) << QStringLiteral("maximum context length");
        QTest::newRow("bad request") << 400
                                     << QByteArray("{\"error\":{\"message\":\"This model does not support specifying dimensions.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}")
                                     << int(ErrorKind::BadRequest) << QStringLiteral("does not support specifying dimensions");
    }
    void errorKinds()
    {
        QFETCH(int, status);
        QFETCH(QByteArray, body);
        QFETCH(int, kind);
        QFETCH(QString, text);
        const ProviderCase &c = providerCase(QStringLiteral("openai"));
        ScriptedHttpServer server;
        server.enqueue(ScriptedReply::json(body, status));
        auto embedder = create(c.key, merged(c.config(server.baseUrl().toString()), {{"dimensions", 8}, {"max_retries", 0}}));
        try {
            embedder->embed({QStringLiteral("hello")});
            QFAIL("an error reply was accepted");
        } catch (const Error &e) {
            QCOMPARE(int(e.kind()), kind);
            QVERIFY2(e.message().contains(text), qPrintable(e.message()));
        }
    }

    // No key anywhere: Authentication naming where to put one, and nothing is sent. The default
    // endpoints are public hosts, so the client is pointed at the scripted server as its proxy:
    // anything sent would arrive there.
    void missingKey_data() { addProviderRows(true); }
    void missingKey()
    {
        QFETCH(QString, key);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        server.setHandler(answering(c, Answer{8}));
        Json config = c.keylessConfig(server.baseUrl().toString());
        config["proxy"] = server.baseUrl().toString().toStdString();
        config["dimensions"] = 8;
        auto embedder = create(c.key, config); // constructing never needs the key
        QCOMPARE(embedder->dimension(), 8);
        try {
            embedder->embed({QStringLiteral("hello")});
            QFAIL("embedded without a key");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::Authentication);
            QVERIFY2(e.message().contains(c.keyEnvName), qPrintable(e.message()));
        }
        QCOMPARE(server.requestCount(), 0);

        // Control: the same configuration with a key does reach the scripted server (as a proxy,
        // which refuses the tunnel), so the zero above means nothing was sent.
        server.setHandler([](const RecordedRequest &) { return ScriptedReply::json("{}", 502); });
        config[key == QLatin1String("google-vertex") ? "access_token" : "api_key"] = c.secret.toStdString();
        config["max_retries"] = 0;
        auto keyed = create(c.key, config);
        try {
            keyed->embed({QStringLiteral("hello")});
            QFAIL("the refused tunnel was not reported");
        } catch (const Error &e) {
            QVERIFY2(e.kind() != ErrorKind::Authentication, qPrintable(e.message()));
        }
        QVERIFY(server.requestCount() >= 1);
    }

    // The key from the environment variable goes into the request's auth header.
    void keyFromEnvironment_data() { addProviderRows(true); }
    void keyFromEnvironment()
    {
        QFETCH(QString, key);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        server.setHandler(answering(c, Answer{8}));
        Json config = merged(c.config(server.baseUrl().toString()), {{"dimensions", 8}});
        config.erase("api_key");
        config.erase("access_token");
        qputenv(c.keyEnvName.toLatin1().constData(), c.secret.toUtf8());
        auto embedder = create(c.key, config);
        qunsetenv(c.keyEnvName.toLatin1().constData());
        embedder->embed({QStringLiteral("hello")});
        QCOMPARE(server.requestCount(), 1);
        QCOMPARE(server.requests().front().header(c.authHeader), c.authValue);
    }

    // CrewAI's embedder configuration dictionaries, exactly as written, build embedders (no request).
    void seedConfigs_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QByteArray>("config");
        QTest::addColumn<QString>("id");
        QTest::addColumn<int>("dimension");
        QTest::newRow("openai") << QStringLiteral("openai") << QByteArray("{\"model_name\": \"text-embedding-3-small\"}")
                                << QStringLiteral("openai/text-embedding-3-small") << 1536;
        QTest::newRow("ollama") << QStringLiteral("ollama")
                                << QByteArray("{\"model_name\": \"mxbai-embed-large\", \"url\": \"http://localhost:11434/api/embeddings\"}")
                                << QStringLiteral("ollama/mxbai-embed-large") << 1024;
        QTest::newRow("azure") << QStringLiteral("azure")
                               << QByteArray("{\"deployment_id\": \"your-embedding-deployment\", \"api_key\": \"your-azure-api-key\", \"api_base\": \"https://your-resource.openai.azure.com\", \"api_version\": \"2024-02-01\", \"dimensions\": 1536}")
                               << QStringLiteral("azure/your-embedding-deployment") << 1536;
        QTest::newRow("google-generativeai") << QStringLiteral("google-generativeai") << QByteArray("{\"model_name\": \"gemini-embedding-001\"}")
                                             << QStringLiteral("gemini/gemini-embedding-001") << 3072;
        QTest::newRow("google-vertex") << QStringLiteral("google-vertex")
                                       << QByteArray("{\"model_name\": \"gemini-embedding-001\", \"project_id\": \"your-gcp-project-id\", \"location\": \"us-central1\"}")
                                       << QStringLiteral("google-vertex/gemini-embedding-001") << 3072;
        QTest::newRow("cohere") << QStringLiteral("cohere") << QByteArray("{\"model_name\": \"embed-english-v3.0\"}")
                                << QStringLiteral("cohere/embed-english-v3.0") << 1024;
        QTest::newRow("voyageai") << QStringLiteral("voyageai") << QByteArray("{\"model\": \"voyage-3\"}")
                                  << QStringLiteral("voyageai/voyage-3") << 1024;
        QTest::newRow("voyage") << QStringLiteral("voyage") << QByteArray("{\"model\": \"voyage-3\"}")
                                << QStringLiteral("voyageai/voyage-3") << 1024;
        QTest::newRow("huggingface") << QStringLiteral("huggingface")
                                     << QByteArray("{\"model_name\": \"sentence-transformers/all-MiniLM-L6-v2\"}")
                                     << QStringLiteral("huggingface/sentence-transformers/all-MiniLM-L6-v2") << 384;
        QTest::newRow("jina") << QStringLiteral("jina") << QByteArray("{\"model_name\": \"jina-embeddings-v2-base-en\"}")
                              << QStringLiteral("jina/jina-embeddings-v2-base-en") << 768;
        QTest::newRow("gemini defaults") << QStringLiteral("gemini") << QByteArray("{}") << QStringLiteral("gemini/gemini-embedding-001") << 3072;
        QTest::newRow("google models/ prefix") << QStringLiteral("google") << QByteArray("{\"model\": \"models/text-embedding-004\"}")
                                               << QStringLiteral("gemini/text-embedding-004") << 768;
        QTest::newRow("ollama defaults") << QStringLiteral("ollama") << QByteArray("{}") << QStringLiteral("ollama/nomic-embed-text") << 768;
        QTest::newRow("cohere defaults") << QStringLiteral("cohere") << QByteArray("{}") << QStringLiteral("cohere/embed-english-v3.0") << 1024;
        QTest::newRow("cohere v4 output_dimension") << QStringLiteral("cohere") << QByteArray("{\"model\": \"embed-v4.0\", \"output_dimension\": 512}")
                                                    << QStringLiteral("cohere/embed-v4.0") << 512;
        QTest::newRow("voyage output_dimension") << QStringLiteral("voyageai") << QByteArray("{\"model\": \"voyage-3-large\", \"output_dimension\": 256}")
                                                 << QStringLiteral("voyageai/voyage-3-large") << 256;
        QTest::newRow("gemini output_dimensionality") << QStringLiteral("gemini") << QByteArray("{\"output_dimensionality\": 768}")
                                                      << QStringLiteral("gemini/gemini-embedding-001") << 768;
        QTest::newRow("tei alias") << QStringLiteral("text-embeddings-inference") << QByteArray("{\"model\": \"BAAI/bge-small-en-v1.5\"}")
                                   << QStringLiteral("huggingface/BAAI/bge-small-en-v1.5") << 384;
        QTest::newRow("jina defaults") << QStringLiteral("jina") << QByteArray("{}") << QStringLiteral("jina/jina-embeddings-v2-base-en") << 768;
        QTest::newRow("openai defaults") << QStringLiteral("openai") << QByteArray("{}") << QStringLiteral("openai/text-embedding-3-small") << 1536;
    }
    void seedConfigs()
    {
        QFETCH(QString, key);
        QFETCH(QByteArray, config);
        QFETCH(QString, id);
        QFETCH(int, dimension);
        auto embedder = create(key, Json::parse(config.toStdString()));
        QCOMPARE(embedder->id(), id);
        QCOMPARE(embedder->dimension(), dimension);
    }

    // Configurations refused when built, naming the key and what to do.
    void badConfigs_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QByteArray>("config");
        QTest::addColumn<QString>("text");
        QTest::newRow("unknown key") << QStringLiteral("openai") << QByteArray("{\"modle\": \"x\"}") << QStringLiteral("modle");
        QTest::newRow("dimensions zero") << QStringLiteral("openai") << QByteArray("{\"dimensions\": 0}") << QStringLiteral("dimensions");
        QTest::newRow("dimensions text") << QStringLiteral("cohere") << QByteArray("{\"dimensions\": \"big\"}") << QStringLiteral("dimensions");
        QTest::newRow("max_batch over the limit") << QStringLiteral("cohere") << QByteArray("{\"max_batch\": 500}") << QStringLiteral("max_batch");
        QTest::newRow("azure without endpoint") << QStringLiteral("azure") << QByteArray("{\"deployment_id\": \"d\", \"api_key\": \"k\"}") << QStringLiteral("api_base");
        QTest::newRow("azure without deployment") << QStringLiteral("azure") << QByteArray("{\"api_base\": \"https://r.openai.azure.com\"}") << QStringLiteral("deployment_id");
        QTest::newRow("vertex without project") << QStringLiteral("google-vertex") << QByteArray("{\"location\": \"us-central1\"}") << QStringLiteral("project_id");
        QTest::newRow("vertex bad location") << QStringLiteral("google-vertex") << QByteArray("{\"project_id\": \"p\", \"location\": \"us central/1\"}") << QStringLiteral("location");
        QTest::newRow("vertex gemini batch") << QStringLiteral("google-vertex") << QByteArray("{\"project_id\": \"p\", \"max_batch\": 5}") << QStringLiteral("max_batch");
        QTest::newRow("voyage input_type") << QStringLiteral("voyageai") << QByteArray("{\"input_type\": \"passage\"}") << QStringLiteral("input_type");
        QTest::newRow("cohere truncate") << QStringLiteral("cohere") << QByteArray("{\"truncate\": \"MIDDLE\"}") << QStringLiteral("truncate");
        QTest::newRow("tei normalize") << QStringLiteral("huggingface") << QByteArray("{\"normalize\": \"yes\"}") << QStringLiteral("normalize");
        QTest::newRow("ollama options") << QStringLiteral("ollama") << QByteArray("{\"options\": 3}") << QStringLiteral("options");
        QTest::newRow("bad url") << QStringLiteral("jina") << QByteArray("{\"base_url\": \"ftp://x\"}") << QStringLiteral("base_url");
    }
    void badConfigs()
    {
        QFETCH(QString, key);
        QFETCH(QByteArray, config);
        QFETCH(QString, text);
        try {
            create(key, Json::parse(config.toStdString()));
            QFAIL("a bad configuration was accepted");
        } catch (const Error &e) {
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
            QVERIFY2(e.message().contains(text), qPrintable(e.message()));
        }
    }

    // Provider options travel in the request under the provider's names.
    void providerOptions_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QByteArray>("options");
        QTest::addColumn<QByteArray>("expected"); // fields the body must hold
        QTest::addColumn<QStringList>("absent");  // fields it must not hold
        QTest::newRow("ollama keep_alive, truncate, options")
            << QStringLiteral("ollama") << QByteArray("{\"keep_alive\": \"10m\", \"truncate\": false, \"options\": {\"num_ctx\": 4096}}")
            << QByteArray("{\"keep_alive\": \"10m\", \"truncate\": false, \"options\": {\"num_ctx\": 4096}}") << QStringList();
        QTest::newRow("gemini task_type") << QStringLiteral("gemini") << QByteArray("{\"task_type\": \"retrieval_document\"}")
                                          << QByteArray("{}") << QStringList();
        QTest::newRow("cohere input_type, truncate") << QStringLiteral("cohere") << QByteArray("{\"input_type\": \"clustering\", \"truncate\": \"end\"}")
                                                     << QByteArray("{\"input_type\": \"clustering\", \"truncate\": \"END\"}") << QStringList();
        QTest::newRow("cohere no input_type") << QStringLiteral("cohere") << QByteArray("{\"input_type\": null}")
                                              << QByteArray("{}") << QStringList{QStringLiteral("input_type")};
        QTest::newRow("voyage input_type, truncation") << QStringLiteral("voyageai") << QByteArray("{\"input_type\": \"document\", \"truncation\": true}")
                                                       << QByteArray("{\"input_type\": \"document\", \"truncation\": true}") << QStringList();
        QTest::newRow("jina task, normalized") << QStringLiteral("jina") << QByteArray("{\"task\": \"text-matching\", \"normalized\": true, \"late_chunking\": false}")
                                               << QByteArray("{\"task\": \"text-matching\", \"normalized\": true, \"late_chunking\": false}") << QStringList();
        QTest::newRow("tei options") << QStringLiteral("huggingface")
                                     << QByteArray("{\"normalize\": false, \"truncate\": false, \"truncation_direction\": \"left\", \"prompt_name\": \"query\"}")
                                     << QByteArray("{\"normalize\": false, \"truncate\": false, \"truncation_direction\": \"Left\", \"prompt_name\": \"query\"}")
                                     << QStringList();
        QTest::newRow("openai dimension alias") << QStringLiteral("openai") << QByteArray("{\"dimension\": 8}")
                                                << QByteArray("{\"dimensions\": 8}") << QStringList{QStringLiteral("dimension")};
    }
    void providerOptions()
    {
        QFETCH(QString, key);
        QFETCH(QByteArray, options);
        QFETCH(QByteArray, expected);
        QFETCH(QStringList, absent);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        server.setHandler(answering(c, Answer{8}));
        Json config = merged(c.config(server.baseUrl().toString()), Json::parse(options.toStdString()));
        if (!config.contains("dimension"))
            config["dimensions"] = 8;
        auto embedder = create(c.key, config);
        embedder->embed({QStringLiteral("hello")});
        QCOMPARE(server.requestCount(), 1);
        const Json body = server.requests().front().json();
        const Json want = Json::parse(expected.toStdString());
        for (auto it = want.begin(); it != want.end(); ++it)
            QVERIFY2(body.contains(it.key()) && body[it.key()] == it.value(),
                     qPrintable(QStringLiteral("%1 in %2").arg(QString::fromStdString(it.key()), QString::fromUtf8(server.requests().front().body))));
        for (const QString &field : absent)
            QVERIFY2(!body.contains(field.toStdString()), qPrintable(QString::fromUtf8(server.requests().front().body)));
        if (key == QLatin1String("gemini"))
            QCOMPARE(body["requests"][0]["taskType"], Json("RETRIEVAL_DOCUMENT"));
    }

    // Base URLs written with a version or an endpoint still reach the right path.
    void baseUrlForms_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("suffix");
        QTest::addColumn<QByteArray>("path");
        QTest::newRow("ollama /api/embed") << QStringLiteral("ollama") << QStringLiteral("/api/embed") << QByteArray("/api/embed");
        QTest::newRow("ollama bare") << QStringLiteral("ollama") << QString() << QByteArray("/api/embed");
        QTest::newRow("gemini /v1beta") << QStringLiteral("gemini") << QStringLiteral("/v1beta") << QByteArray("/v1beta/models/gemini-embedding-001:batchEmbedContents");
        QTest::newRow("cohere /v2") << QStringLiteral("cohere") << QStringLiteral("/v2/") << QByteArray("/v2/embed");
        QTest::newRow("voyage /v1") << QStringLiteral("voyageai") << QStringLiteral("/v1") << QByteArray("/v1/embeddings");
        QTest::newRow("jina /v1") << QStringLiteral("jina") << QStringLiteral("/v1") << QByteArray("/v1/embeddings");
        QTest::newRow("tei /embed") << QStringLiteral("huggingface") << QStringLiteral("/embed") << QByteArray("/embed");
        QTest::newRow("azure /openai") << QStringLiteral("azure") << QStringLiteral("/openai/") << QByteArray("/openai/deployments/emb-deploy/embeddings?api-version=2024-02-01");
        QTest::newRow("vertex /v1") << QStringLiteral("google-vertex") << QStringLiteral("/v1")
                                    << QByteArray("/v1/projects/proj-1/locations/europe-west4/publishers/google/models/text-embedding-005:predict");
    }
    void baseUrlForms()
    {
        QFETCH(QString, key);
        QFETCH(QString, suffix);
        QFETCH(QByteArray, path);
        const ProviderCase &c = providerCase(key);
        ScriptedHttpServer server;
        server.setHandler(answering(c, Answer{8}));
        const QString base = server.baseUrl().toString() + suffix;
        Json config = merged(c.config(server.baseUrl().toString()), {{"dimensions", 8}});
        for (const char *k : {"base_url", "api_base", "url"})
            config.erase(k);
        config[key == QLatin1String("azure") ? "api_base" : "base_url"] = base.toStdString();
        create(c.key, config)->embed({QStringLiteral("x")});
        QCOMPARE(server.requestCount(), 1);
        QCOMPARE(server.requests().front().path, path);
    }

    // Vertex AI takes one input per request for gemini-embedding-001.
    void vertexGeminiOneInputPerRequest()
    {
        const ProviderCase &c = providerCase(QStringLiteral("google-vertex"));
        ScriptedHttpServer server;
        server.setHandler(answering(c, Answer{8}));
        auto embedder = create(c.key, merged(c.config(server.baseUrl().toString()),
                                             {{"model_name", "gemini-embedding-001"}, {"dimensions", 8}, {"auto_truncate", false}}));
        const QStringList texts = numbered(QStringLiteral("v"), 3);
        const std::vector<Embedding> vectors = embedder->embed(texts);
        QCOMPARE(vectors[2], vectorFor(texts[2], 8));
        const QList<RecordedRequest> requests = server.requests();
        QCOMPARE(requests.size(), 3);
        QCOMPARE(requests[1].path, QByteArray("/v1/projects/proj-1/locations/europe-west4/publishers/google/models/gemini-embedding-001:predict"));
        QVERIFY(requests[1].json() == (Json{{"instances", Json::array({Json{{"content", "v 1"}, {"task_type", "SEMANTIC_SIMILARITY"}}})}, {"parameters", {{"outputDimensionality", 8}, {"autoTruncate", false}}}}));
    }

    // An Ollama model with a size tag is not taken for the untagged model's size: it is probed.
    void ollamaTaggedModelIsProbed()
    {
        const ProviderCase &c = providerCase(QStringLiteral("ollama"));
        ScriptedHttpServer server;
        server.setHandler(answering(c, Answer{384}));
        auto embedder = create(c.key, merged(c.config(server.baseUrl().toString()), {{"model_name", "snowflake-arctic-embed:xs"}}));
        QCOMPARE(embedder->dimension(), 384);
        QCOMPARE(server.requestCount(), 1);
        auto latest = create(c.key, merged(c.config(server.baseUrl().toString()), {{"model_name", "nomic-embed-text:latest"}}));
        QCOMPARE(latest->dimension(), 768);
        QCOMPARE(server.requestCount(), 1);
    }

    // A local OpenAI-compatible server needs no key: no Authorization header is sent.
    void openAiCompatibleWithoutKey()
    {
        const ProviderCase &c = providerCase(QStringLiteral("openai"));
        ScriptedHttpServer server;
        server.setHandler(answering(c, Answer{8}));
        qputenv("OPENAI_BASE_URL", (server.baseUrl().toString() + QStringLiteral("/v1")).toUtf8());
        auto embedder = create(c.key, Json{{"model", "nomic-embed-text"}, {"dimensions", 8}});
        qunsetenv("OPENAI_BASE_URL");
        QCOMPARE(embedder->id(), QStringLiteral("openai/nomic-embed-text"));
        embedder->embed({QStringLiteral("local")});
        QCOMPARE(server.requestCount(), 1);
        QCOMPARE(server.requests().front().path, QByteArray("/v1/embeddings"));
        QVERIFY(server.requests().front().header("authorization").isEmpty());
    }

    // Memory end to end: remember() and recall() embed through the openai plugin and the scripted
    // server, and the store is the real SQLite plugin.
    void memoryEndToEnd()
    {
        ScriptedHttpServer server;
        const QString secret = testSecrets()[9];
        // Topic words share a bucket, other words hash into the rest: texts about the same thing are close.
        const auto topicVector = [](const QString &text) {
            static const QStringList database = {QStringLiteral("database"), QStringLiteral("postgresql"), QStringLiteral("postgres"), QStringLiteral("sql")};
            static const QStringList drinks = {QStringLiteral("tea"), QStringLiteral("coffee"), QStringLiteral("drink"), QStringLiteral("drinks")};
            Embedding v(8, 0.0f);
            const QStringList words = text.toLower().split(QRegularExpression(QStringLiteral("[^a-z0-9]+")), Qt::SkipEmptyParts);
            for (const QString &w : words) {
                if (database.contains(w))
                    v[0] += 4;
                else if (drinks.contains(w))
                    v[1] += 4;
                else
                    v[2 + qHash(w, 0) % 6] += 1;
            }
            return v;
        };
        server.setHandler([topicVector](const RecordedRequest &r) {
            if (r.path != "/v1/embeddings")
                return ScriptedReply::json("{\"error\":{\"message\":\"unknown path\"}}", 404);
            const Json body = r.json();
            Json data = Json::array();
            int i = 0;
            for (const Json &t : body["input"])
                data.push_back(Json{{"object", "embedding"}, {"index", i++}, {"embedding", toJson(topicVector(QString::fromStdString(t.get<std::string>())))}});
            return ScriptedReply::json(QByteArray::fromStdString(
                Json{{"object", "list"}, {"data", data}, {"model", "text-embedding-3-small"}, {"usage", {{"prompt_tokens", 1}, {"total_tokens", 1}}}}.dump()));
        });

        TempStore store;
        MemoryConfig config;
        config.storage = Json{{"provider", "sqlite"}, {"config", {{"path", store.path().toStdString()}}}};
        config.embedder = Json{{"provider", "openai"},
                               {"config", {{"base_url", (server.baseUrl().toString() + QStringLiteral("/v1")).toStdString()}, {"api_key", secret.toStdString()}, {"model_name", "text-embedding-3-small"}, {"dimensions", 8}}}};
        Memory memory(config);
        QCOMPARE(memory.embedder().id(), QStringLiteral("openai/text-embedding-3-small"));
        QCOMPARE(memory.embedder().dimension(), 8);

        memory.remember(QStringLiteral("Our production database is PostgreSQL 16 on the staging cluster."));
        memory.remember(QStringLiteral("Alice drinks green tea every morning instead of coffee."));
        const int afterSaves = server.requestCount();
        QVERIFY(afterSaves >= 2);

        RecallOptions options;
        options.depth = RecallDepth::Shallow;
        const QList<MemoryMatch> matches = memory.recall(QStringLiteral("Which database do we run?"), options);
        QVERIFY(!matches.isEmpty());
        QVERIFY2(matches.front().record.content.contains(QStringLiteral("PostgreSQL")), qPrintable(matches.front().record.content));
        QVERIFY(server.requestCount() > afterSaves);

        const QList<RecordedRequest> requests = server.requests();
        bool sawQuery = false;
        for (const RecordedRequest &r : requests) {
            QCOMPARE(r.method, QByteArray("POST"));
            QCOMPARE(r.path, QByteArray("/v1/embeddings"));
            QCOMPARE(r.header("authorization"), "Bearer " + secret.toUtf8());
            const Json body = r.json();
            QCOMPARE(body["model"], Json("text-embedding-3-small"));
            QCOMPARE(body["dimensions"], Json(8));
            for (const Json &t : body["input"])
                sawQuery = sawQuery || t == Json("Which database do we run?");
        }
        QVERIFY(sawQuery);
        memory.close();
    }

    // Last: no log line of the whole run holds a key.
    void keysNeverLogged()
    {
        const QStringList log = LogCapture::messages();
        // The HTTP layer's debug lines were captured, so the check below looked at something.
        QVERIFY(std::any_of(log.cbegin(), log.cend(), [](const QString &l) { return l.contains(QStringLiteral("/embed")); }));
        for (const QString &line : log)
            for (const QString &secret : testSecrets())
                QVERIFY2(!line.contains(secret), qPrintable(line));
    }

    void cleanupTestCase()
    {
        g_logCapture.reset();
    }
};

QTEST_GUILESS_MAIN(TestEmbeddersHttp)
#include "test_embedders_http.moc"
