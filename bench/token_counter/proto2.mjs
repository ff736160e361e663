import { getEncoding } from "js-tiktoken";
import fs from "fs";
const enc = getEncoding(process.argv[3] || "cl100k_base");
const data = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const turns = [], sessions = [];
for (const c of data) for (const [k, v] of Object.entries(c.conversation)) if (Array.isArray(v)) {
  const lines = [];
  for (const t of v) { let s = t.text; if (t.blip_caption) s += ` [shares ${t.blip_caption}]`; turns.push(s); lines.push(`${t.speaker}: ${s}`); }
  sessions.push(lines.join("\n"));
}
const re = /'(?:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;
function rule(t) {
  let sum = 0;
  for (const m of t.matchAll(re)) {
    const p = m[0];
    if (/\p{L}/u.test(p)) { const core = p.replace(/^[^\p{L}]/u, ""); const n = [...core].length; sum += 1 + Math.max(0, n - 7) * 0.07; }
    else if (/\p{N}/u.test(p)) sum += 1;
    else if (/^\s+$/u.test(p)) sum += 1;
    else { const n = [...p.trim()].length; sum += 1 + Math.max(0, n - 1) * 0.5; }
  }
  return Math.ceil(sum);
}
const quarter = t => Math.ceil(t.length / 4);
const pieces = t => [...t.matchAll(re)].length;
for (const [name, set] of [["turns", turns], ["sessions", sessions]]) {
  for (const [fname, f] of [["chars/4", quarter], ["pieces", pieces], ["rule", rule]]) {
    let abs = 0, tot = 0, est = 0; const rel = [];
    for (const t of set) { const r = enc.encode(t).length, e = f(t); tot += r; est += e; rel.push(Math.abs(e - r) / r); }
    rel.sort((a, b) => a - b);
    console.log(name, fname, "mean|rel|", (rel.reduce((a, b) => a + b, 0) / rel.length * 100).toFixed(2) + "%", "p95", (rel[Math.floor(rel.length * .95)] * 100).toFixed(1) + "%", "total bias", ((est - tot) / tot * 100).toFixed(2) + "%");
  }
}
