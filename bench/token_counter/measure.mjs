// Measures the error of Mneme's default token counter (TokenCounter::estimate, run as the
// mneme-token-count filter) against OpenAI's BPE tokenizers (cl100k_base, o200k_base, from the
// js-tiktoken package pinned in package-lock.json), on the dialogue of a LOCOMO-format file.
// A measurement tool only: nothing of it is used by Mneme at run time.
//
//   cd bench/token_counter && npm ci
//   node measure.mjs <locomo-dev.json> [path of mneme-token-count (default ../../build/bin/mneme-token-count)]
//
// Two sets of texts: every dialogue turn on its own (a chat message), and every session as
// "Speaker: text" lines (a long history). For each set and tokenizer it prints the texts' total
// tokens, the estimate's bias on the total, and its relative error per text (mean of the absolute
// values, median, 95th percentile, worst) with the share of texts it undercounts.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { getEncoding } from "js-tiktoken";

const here = path.dirname(fileURLToPath(import.meta.url));
const [file, counterArg] = process.argv.slice(2);
if (!file) {
  console.error("usage: node measure.mjs <locomo-dev.json> [path of mneme-token-count]");
  process.exit(2);
}
const counter = counterArg ?? path.join(here, "..", "..", "build", "bin", "mneme-token-count");

const data = JSON.parse(readFileSync(file, "utf8"));
const turns = [];
const sessions = [];
for (const sample of data) {
  for (const [key, value] of Object.entries(sample.conversation)) {
    if (!/^session_\d+$/.test(key) || !Array.isArray(value)) continue;
    const lines = [];
    for (const turn of value) {
      turns.push(turn.text);
      lines.push(`${turn.speaker}: ${turn.text}`);
    }
    if (lines.length) sessions.push(lines.join("\n"));
  }
}

// The estimate of every text, in one run of the filter.
function estimates(texts) {
  const input = texts.map((text) => JSON.stringify({ text })).join("\n") + "\n";
  const output = execFileSync(counter, [], { input, maxBuffer: 1 << 28 }).toString();
  return output.trim().split("\n").map((line) => JSON.parse(line).tokens);
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

const pct = (x) => `${(x * 100).toFixed(1)} %`;
const rows = [];
for (const [name, texts] of [["turns", turns], ["sessions", sessions]]) {
  const estimated = estimates(texts);
  for (const encodingName of ["cl100k_base", "o200k_base"]) {
    const encoding = getEncoding(encodingName);
    let real = 0;
    let est = 0;
    let under = 0;
    const errors = [];
    texts.forEach((text, i) => {
      const r = encoding.encode(text).length;
      const e = estimated[i];
      real += r;
      est += e;
      if (e < r) under += 1;
      if (r > 0) errors.push(Math.abs(e - r) / r);
    });
    errors.sort((a, b) => a - b);
    const mean = errors.reduce((a, b) => a + b, 0) / errors.length;
    rows.push({
      set: name,
      tokenizer: encodingName,
      texts: texts.length,
      tokens: real,
      bias: (est - real) / real,
      mean,
      median: percentile(errors, 0.5),
      p95: percentile(errors, 0.95),
      worst: errors[errors.length - 1],
      under: under / texts.length,
    });
  }
}

console.log("| texts | tokenizer | n | tokens | bias of the total | mean abs. error | median | p95 | worst | undercounted |");
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
for (const r of rows)
  console.log(`| ${r.set} | ${r.tokenizer} | ${r.texts} | ${r.tokens} | ${r.bias >= 0 ? "+" : ""}${pct(r.bias)} | ${pct(r.mean)} | ${pct(r.median)} | ${pct(r.p95)} | ${pct(r.worst)} | ${pct(r.under)} |`);
