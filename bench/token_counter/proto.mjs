import { getEncoding } from "js-tiktoken";
import fs from "fs";
const enc = getEncoding(process.argv[3] || "cl100k_base");
const data = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const texts = [];
for (const c of data) for (const [k, v] of Object.entries(c.conversation)) if (Array.isArray(v)) for (const t of v) texts.push(t.text);
const re = /'(?:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;
const stats = {};
let total = 0;
for (const t of texts) {
  for (const m of t.matchAll(re)) {
    const p = m[0]; const n = enc.encode(p).length;
    let cls = /\p{L}/u.test(p) ? "L" : /\p{N}/u.test(p) ? "N" : /^\s+$/u.test(p) ? "S" : "P";
    const core = p.replace(/^[^\p{L}\p{N}]/u, "");
    const key = cls + (cls === "L" ? Math.min(core.length, 20) : cls === "P" ? Math.min(p.trim().length, 6) : "");
    stats[key] ??= [0, 0]; stats[key][0]++; stats[key][1] += n;
  }
  total += enc.encode(t).length;
}
console.log("texts", texts.length, "tokens", total);
for (const [k, [c, n]] of Object.entries(stats).sort()) console.log(k, c, (n / c).toFixed(2));
