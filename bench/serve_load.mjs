#!/usr/bin/env node
// Load on `mneme serve`: a store seeded through the REST API, then C clients at once, each sending
// requests back to back for a while (a mix of recall, remember and get, as an agent's memory sees),
// and the subtree reads the servers answer through the records a source sees (tree, info).
// Needs Node.js 18 or later and nothing else (fetch is Node's own).
//
//   node bench/serve_load.mjs [--mneme build/bin/mneme] [--records 10000] [--clients 1,4,16,64]
//                             [--seconds 10] [--private 0.1] [--writes 0.2]
//
// --writes is the share of remember requests in the mix (the rest: recall 7 parts, get 1 part); each
// is a save the memory's one writer commits, and reads wait for the saves submitted before them.
//
// Prints one JSON line per figure on standard output ({"metric", "clients", "value", "unit"}) and a
// table on standard error.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const mneme = option('mneme', 'build/bin/mneme');
const records = Number(option('records', '10000'));
const clientCounts = option('clients', '1,4,16,64').split(',').map(Number);
const seconds = Number(option('seconds', '10'));
const privateShare = Number(option('private', '0.1'));
const writeShare = Number(option('writes', '0.2'));

const words = ['alpha', 'budget', 'customer', 'deadline', 'design', 'deploy', 'email', 'invoice', 'launch', 'meeting', 'migration',
  'office', 'onboarding', 'outage', 'pricing', 'release', 'review', 'roadmap', 'salary', 'schedule', 'security', 'server',
  'sprint', 'support', 'team', 'ticket', 'training', 'travel', 'vendor', 'workshop'];
let seed = 42;
const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const pick = (list) => list[Math.floor(random() * list.length)];
const sentence = (i) => `Note ${i}: the ${pick(words)} of the ${pick(words)} team moves to ${pick(words)} after the ${pick(words)} ${pick(words)}.`;

function report(metric, clients, value, unit) {
  process.stdout.write(JSON.stringify({ metric, records, clients, writes: writeShare, value: Number(value.toFixed(2)), unit }) + '\n');
  process.stderr.write(`${metric.padEnd(22)} ${String(clients).padStart(4)} clients  ${value.toFixed(2).padStart(10)} ${unit}\n`);
}

function percentile(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'mneme-serve-bench-'));
  const server = spawn(mneme, ['--db', join(dir, 'memory.db'), 'serve', '--listen', '127.0.0.1:0', '--json', '--max-connections', '512'],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    let out = '';
    const { url } = await new Promise((resolve, reject) => {
      server.stdout.on('data', (d) => { out += d; try { resolve(JSON.parse(out)); } catch { /* more to come */ } });
      server.on('exit', (code) => reject(new Error(`mneme serve exited with ${code}`)));
    });
    const post = (path, body) => fetch(url + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

    // The store: records in 20 scopes, a share of them private to one of 10 sources.
    const started = performance.now();
    const ids = [];
    for (let i = 0; i < records; i += 1000) {
      const bySource = new Map();
      for (let k = i; k < Math.min(records, i + 1000); ++k) {
        const isPrivate = random() < privateShare;
        const source = isPrivate ? `user-${k % 10}` : '';
        if (!bySource.has(source)) bySource.set(source, []);
        bySource.get(source).push({ content: sentence(k), scope: `/project/${k % 20}`, importance: 0.5, categories: [pick(words)], private: isPrivate });
      }
      for (const [source, items] of bySource) {
        const r = await post(`/v1/memories/batch${source ? `?source=${source}` : ''}`, { items });
        if (r.status !== 200) throw new Error(`seeding failed: ${r.status} ${await r.text()}`);
        ids.push(...(await r.json()).ids);
      }
    }
    report('seed_records_per_s', 1, records / ((performance.now() - started) / 1000), 'records/s');

    // Subtree reads go through every record the source sees.
    for (const [metric, path] of [['tree_ms', '/v1/tree?source=user-1&max_depth=3'], ['info_ms', '/v1/info?source=user-1']]) {
      const times = [];
      for (let i = 0; i < 5; ++i) {
        const t = performance.now();
        const r = await fetch(url + path);
        await r.text();
        times.push(performance.now() - t);
      }
      report(metric, 1, times.sort((a, b) => a - b)[2], 'ms');
    }

    for (const clients of clientCounts) {
      const latencies = { recall: [], remember: [], get: [] };
      let errors = 0;
      let n = 0;
      const until = performance.now() + seconds * 1000;
      await Promise.all(Array.from({ length: clients }, async (_, c) => {
        const source = `user-${c % 10}`;
        while (performance.now() < until) {
          const roll = random();
          const op = roll < writeShare ? 'remember' : roll < writeShare + (1 - writeShare) * 7 / 8 ? 'recall' : 'get';
          const t = performance.now();
          let r;
          if (op === 'recall')
            r = await post(`/v1/recall?source=${source}`, { query: `${pick(words)} ${pick(words)}`, depth: 'shallow', limit: 10 });
          else if (op === 'remember')
            r = await post(`/v1/memories?source=${source}`, { content: sentence(records + n), scope: `/project/${n % 20}`, importance: 0.5, categories: ['load'] });
          else
            r = await fetch(`${url}/v1/memories/${pick(ids)}?source=${source}`);
          await r.text();
          if (r.status >= 500 || (op !== 'get' && r.status >= 400)) ++errors;
          latencies[op].push(performance.now() - t);
          ++n;
        }
      }));
      report('requests_per_s', clients, n / seconds, 'requests/s');
      for (const op of ['recall', 'remember', 'get']) {
        const sorted = latencies[op].sort((a, b) => a - b);
        report(`${op}_p50_ms`, clients, percentile(sorted, 0.5), 'ms');
        report(`${op}_p99_ms`, clients, percentile(sorted, 0.99), 'ms');
      }
      report('errors', clients, errors, 'requests');
    }
  } finally {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.on('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
