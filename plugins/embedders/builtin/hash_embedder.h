#pragma once

#include <mneme/core/embedder.h>

#include <QString>
#include <QStringList>
#include <vector>

namespace mneme {

// The default embedder: deterministic, offline, no model weights. Feature hashing of normalised
// words, adjacent word pairs and character 3- and 4-grams into `dimension` signed buckets,
// L2-normalised. Two models, each a frozen format:
//   hash-v2 (the default)  stop words dropped, English words stemmed (Snowball), number words and
//                          number forms unified, pairs of content words;
//   hash-v1                every word as written.
// See plugins/embedders/builtin/README.md for what they do and do not capture.
//
// The hashing is fixed (its own 64-bit hash over UTF-8 bytes), so a vector computed today equals
// the vector computed by any later build on any platform for the same text, id and dimension.
// Thread-safe: embed() keeps all its working state on the caller's stack.
class HashEmbedder : public Embedder
{
public:
    static constexpr int DefaultDimension = 384;
    static constexpr int MinDimension = 16;
    static constexpr int MaxDimension = 4096;

    enum class Model {
        HashV1,
        HashV2
    };
    static constexpr Model DefaultModel = Model::HashV2;

    // "hash-v1", "hash-v2"
    static QString modelName(Model model);
    // Every model's name, the default first.
    static QStringList modelNames();
    // The model called `name`; false when there is none.
    static bool modelFromName(const QString &name, Model *model);

    // Throws Error(InvalidArgument) when dimension is outside MinDimension..MaxDimension.
    explicit HashEmbedder(int dimension = DefaultDimension, Model model = DefaultModel);

    Model model() const;
    QString id() const override; // "builtin/hash-v2" or "builtin/hash-v1"
    int dimension() const override;
    bool isLocal() const override { return true; }
    std::vector<Embedding> embed(const QStringList &texts) override;

    // One text; a blank text (or one with nothing but punctuation) gives an empty vector. Under
    // hash-v2 a text of nothing but stop words ("is it?") is embedded from those words.
    Embedding embedOne(const QString &text) const;

    // The normalisation the features are computed from: compatibility decomposition, case
    // folding, diacritics removed, apostrophe/hyphen variants unified, canonical composition.
    // Exposed for diagnostics and tests of the normaliser; embed() uses a table-driven fast path
    // that gives the same result.
    static QString normalize(const QString &text);

private:
    int m_dimension;
    Model m_model;
};

} // namespace mneme
