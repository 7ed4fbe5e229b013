//===- RoutingFile.cpp - the moecomm-routing-v1 format --------------------===//

#include "moecomm/Workload/RoutingFile.h"
#include "moecomm/Workload/ModelConfig.h"
#include "moecomm/Workload/ToolIO.h"

#include "moecomm/Model/Limits.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace moecomm::workload {

namespace {

/// Reads an integer field of the top-level object.
Expected<int64_t> requireInt(const json::Object &root, StringRef key,
                             StringRef name) {
  const json::Value *v = root.get(key);
  if (!v)
    return inputError(formatv("{0}: missing field \"{1}\"", name, key));
  std::optional<int64_t> i = v->getAsInteger();
  if (!i)
    return inputError(
        formatv("{0}: field \"{1}\" must be an integer", name, key));
  return *i;
}

/// Describes the JSON kind of a value for messages.
StringRef kindOf(const json::Value &v) {
  switch (v.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "a boolean";
  case json::Value::Number:
    return "a number";
  case json::Value::String:
    return "a string";
  case json::Value::Array:
    return "an array";
  case json::Value::Object:
    return "an object";
  }
  return "a value";
}

} // namespace

Expected<RoutingProblem> parseRoutingJson(StringRef text, StringRef name) {
  Expected<json::Value> parsed = parseUserJson(text);
  if (!parsed) {
    std::string detail = toString(parsed.takeError());
    // json::ParseError logs "[line:col, byte=N]: message".
    return inputError(formatv("{0}: malformed JSON at {1}", name, detail));
  }
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return inputError(
        formatv("{0}: the document must be a JSON object, not {1}", name,
                kindOf(*parsed)));

  const json::Value *format = root->get("format");
  if (!format)
    return inputError(formatv(
        "{0}: missing field \"format\" (expected \"moecomm-routing-v1\")",
        name));
  std::optional<StringRef> formatName = format->getAsString();
  if (!formatName || *formatName != "moecomm-routing-v1") {
    std::string shown;
    if (formatName)
      shown = ("\"" + *formatName + "\"").str();
    else
      shown = kindOf(*format).str();
    return inputError(
        formatv("{0}: unsupported format {1} (expected \"moecomm-routing-v1\")",
                name, shown));
  }

  RoutingProblem p;
  p.origin = ("file " + name).str();
  int64_t ranks, ranksPerNode, topk;
  if (Error e = requireInt(*root, "ranks", name).moveInto(ranks))
    return std::move(e);
  if (Error e =
          requireInt(*root, "ranks_per_node", name).moveInto(ranksPerNode))
    return std::move(e);
  if (Error e = requireInt(*root, "num_experts", name).moveInto(p.numExperts))
    return std::move(e);
  if (Error e = requireInt(*root, "topk", name).moveInto(topk))
    return std::move(e);
  if (Error e = requireInt(*root, "hidden", name).moveInto(p.hidden))
    return std::move(e);
  if (ranks < 1 || ranks > kMaxRanks)
    return inputError(formatv("{0}: \"ranks\" must be in [1, {2}], got {1}",
                              name, ranks, kMaxRanks));
  if (ranksPerNode < 1 || ranksPerNode > kMaxRanks)
    return inputError(
        formatv("{0}: \"ranks_per_node\" must be in [1, {2}], got {1}", name,
                ranksPerNode, kMaxRanks));
  if (topk < 1 || topk > kMaxTopk)
    return inputError(formatv("{0}: \"topk\" must be in [1, {2}], got {1}",
                              name, topk, kMaxTopk));
  if (p.numExperts < 1)
    return inputError(formatv("{0}: \"num_experts\" must be >= 1, got {1}",
                              name, p.numExperts));
  if (p.hidden < 1 || p.hidden > workload::kMaxHidden)
    return inputError(formatv("{0}: \"hidden\" must be in [1, {1}], got {2}",
                              name, workload::kMaxHidden, p.hidden));
  p.ranks = static_cast<int>(ranks);
  p.ranksPerNode = static_cast<int>(ranksPerNode);
  p.topk = static_cast<int>(topk);

  if (const json::Value *dtype = root->get("dtype");
      dtype && dtype->kind() != json::Value::Null) {
    std::optional<StringRef> s = dtype->getAsString();
    std::optional<PayloadType> t = s ? parsePayloadType(*s) : std::nullopt;
    if (!t)
      return inputError(formatv(
          "{0}: field \"dtype\" must be \"bf16\", \"f32\", \"fp8\", "
          "\"fp8_e4m3_ue8m0\" or \"mxfp8\", got {1}",
          name, s ? ("\"" + *s + "\"").str() : kindOf(*dtype).str()));
    p.dtype = *t;
  }

  if (const json::Value *cap = root->get("capacity");
      cap && cap->kind() != json::Value::Null) {
    std::optional<int64_t> c = cap->getAsInteger();
    if (!c)
      return inputError(
          formatv("{0}: field \"capacity\" must be an integer or null, got {1}",
                  name, kindOf(*cap)));
    if (*c < 1)
      return inputError(
          formatv("{0}: \"capacity\" must be >= 1 (or null for none), got {1}",
                  name, *c));
    p.capacity = *c;
  }

  const json::Value *idxValue = root->get("topk_idx");
  if (!idxValue)
    return inputError(formatv("{0}: missing field \"topk_idx\"", name));
  const json::Array *idx = idxValue->getAsArray();
  if (!idx)
    return inputError(
        formatv("{0}: field \"topk_idx\" must be an array of ranks, got {1}",
                name, kindOf(*idxValue)));
  if (static_cast<int64_t>(idx->size()) != ranks)
    return inputError(formatv("{0}: rank count mismatch: \"ranks\" is {1} but "
                              "\"topk_idx\" has {2} ranks",
                              name, ranks, idx->size()));

  const json::Array *weights = nullptr;
  if (const json::Value *wv = root->get("topk_weights");
      wv && wv->kind() != json::Value::Null) {
    weights = wv->getAsArray();
    if (!weights)
      return inputError(formatv(
          "{0}: field \"topk_weights\" must be an array of ranks, got {1}",
          name, kindOf(*wv)));
    if (static_cast<int64_t>(weights->size()) != ranks)
      return inputError(formatv("{0}: topk_weights shape mismatch: \"ranks\" "
                                "is {1} but \"topk_weights\" has {2} ranks",
                                name, ranks, weights->size()));
    p.explicitWeights = true;
  }

  p.numTokens.resize(p.ranks);
  p.topkIdx.resize(p.ranks);
  p.topkWeights.resize(p.ranks);
  for (int r = 0; r < p.ranks; ++r) {
    const json::Array *rows = (*idx)[r].getAsArray();
    if (!rows)
      return inputError(formatv("{0}: rank {1}: topk_idx[{1}] must be an array "
                                "of token rows, got {2}",
                                name, r, kindOf((*idx)[r])));
    const int64_t T = static_cast<int64_t>(rows->size());
    p.numTokens[r] = T;
    // Grown row by row: T x topk is what the rows claim, not what they hold
    // (ten million empty rows with topk 4096 would reserve 320 GB).
    std::vector<int64_t> &ids = p.topkIdx[r];
    for (int64_t t = 0; t < T; ++t) {
      const json::Array *row = (*rows)[t].getAsArray();
      if (!row)
        return inputError(formatv("{0}: rank {1}, token {2}: topk_idx row must "
                                  "be an array of {3} expert ids, got {4}",
                                  name, r, t, p.topk, kindOf((*rows)[t])));
      if (static_cast<int64_t>(row->size()) != p.topk)
        return inputError(formatv("{0}: rank {1}, token {2}: topk_idx row has "
                                  "{3} entries, expected topk = {4}",
                                  name, r, t, row->size(), p.topk));
      for (int k = 0; k < p.topk; ++k) {
        std::optional<int64_t> e = (*row)[k].getAsInteger();
        if (!e)
          return inputError(formatv("{0}: rank {1}, token {2}, slot {3}: "
                                    "expert id must be an integer, got {4}",
                                    name, r, t, k, kindOf((*row)[k])));
        ids.push_back(*e);
      }
    }

    std::vector<float> &w = p.topkWeights[r];
    w.reserve(ids.size());
    if (!weights) {
      for (int64_t id : ids)
        w.push_back(id < 0 ? 0.0f : 1.0f);
      continue;
    }
    const json::Array *wrows = (*weights)[r].getAsArray();
    if (!wrows)
      return inputError(formatv("{0}: rank {1}: topk_weights[{1}] must be an "
                                "array of token rows, got {2}",
                                name, r, kindOf((*weights)[r])));
    if (static_cast<int64_t>(wrows->size()) != T)
      return inputError(formatv("{0}: rank {1}: topk_weights shape mismatch: "
                                "{2} rows, but topk_idx has {3} tokens",
                                name, r, wrows->size(), T));
    for (int64_t t = 0; t < T; ++t) {
      const json::Array *wrow = (*wrows)[t].getAsArray();
      if (!wrow)
        return inputError(formatv("{0}: rank {1}, token {2}: topk_weights row "
                                  "must be an array of {3} numbers, got {4}",
                                  name, r, t, p.topk, kindOf((*wrows)[t])));
      if (static_cast<int64_t>(wrow->size()) != p.topk)
        return inputError(
            formatv("{0}: rank {1}, token {2}: topk_weights shape "
                    "mismatch: row has {3} entries, expected "
                    "topk = {4}",
                    name, r, t, wrow->size(), p.topk));
      for (int k = 0; k < p.topk; ++k) {
        std::optional<double> x = (*wrow)[k].getAsNumber();
        if (!x)
          return inputError(formatv("{0}: rank {1}, token {2}, slot {3}: "
                                    "weight must be a number, got {4}",
                                    name, r, t, k, kindOf((*wrow)[k])));
        if (!std::isfinite(static_cast<float>(*x)))
          return inputError(formatv("{0}: rank {1}, token {2}, slot {3}: "
                                    "weight {4:e} is not finite in f32",
                                    name, r, t, k, *x));
        // A zero weight is +0: its sign means nothing to a routing, and a
        // written -0 (--save-routing, any JSON writer) reads back as the
        // integer 0, so a saved routing would not replay bit for bit (the
        // runtime returns the weights with the rows).
        const float weight = static_cast<float>(*x);
        w.push_back(weight == 0.0f ? 0.0f : weight);
      }
    }
  }
  return p;
}

Expected<RoutingProblem> loadRoutingFile(StringRef path) {
  Expected<std::string> text =
      readInputFile(path, "routing file", /*allowStdin=*/true);
  if (!text)
    return text.takeError();
  return parseRoutingJson(*text, path);
}

json::Value routingToJson(const RoutingProblem &p) {
  json::Array idx, weights;
  for (int r = 0; r < p.ranks; ++r) {
    json::Array rows, wrows;
    for (int64_t t = 0; t < p.numTokens[r]; ++t) {
      json::Array row, wrow;
      for (int k = 0; k < p.topk; ++k) {
        row.push_back(p.topkIdx[r][t * p.topk + k]);
        wrow.push_back(static_cast<double>(p.topkWeights[r][t * p.topk + k]));
      }
      rows.push_back(std::move(row));
      wrows.push_back(std::move(wrow));
    }
    idx.push_back(std::move(rows));
    weights.push_back(std::move(wrows));
  }
  json::Object o{{"format", "moecomm-routing-v1"},
                 {"ranks", p.ranks},
                 {"ranks_per_node", p.ranksPerNode},
                 {"num_experts", p.numExperts},
                 {"topk", p.topk},
                 {"hidden", p.hidden},
                 {"dtype", payloadTypeName(p.dtype)},
                 {"topk_idx", std::move(idx)},
                 {"topk_weights", std::move(weights)}};
  if (p.capacity > 0)
    o["capacity"] = p.capacity;
  else
    o["capacity"] = nullptr;
  return json::Value(std::move(o));
}

} // namespace moecomm::workload
