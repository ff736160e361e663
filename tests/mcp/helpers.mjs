// What the Node.js tests of `mneme mcp` and `mneme serve` share: the mneme program (MNEME_CLI, set by
// CTest), a store seeded through the command line with records of two sources, and servers started
// as child processes that are always stopped again.

import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const mneme = process.env.MNEME_CLI;
if (!mneme) throw new Error('MNEME_CLI must name the mneme program (CTest sets it)');

// The environment the mneme processes get: this one (MNEME_PLUGIN_PATH comes from CTest).
export const env = { ...process.env };

// Runs `mneme --db DB ARGS... --json` and returns its JSON output.
export function cli(db, ...args) {
  const out = execFileSync(mneme, ['--db', db, ...args, '--json'], { env, encoding: 'utf8' });
  return JSON.parse(out);
}

// A temporary store holding: public records, alice's private records and bob's private records, in
// scopes of their own, so that what one source must never see is known exactly.
export function seededStore() {
  const dir = mkdtempSync(join(tmpdir(), 'mneme-node-'));
  const db = join(dir, 'memory.db');
  const ids = {
    office: cli(db, 'remember', 'The office opens at 9 every weekday', '--scope', '/office', '--category', 'facilities').id,
    api: cli(db, 'remember', 'The API rate limit is 1000 requests per minute', '--scope', '/product/docs', '--category', 'limits').id,
    alice: cli(db, 'remember', 'Alice likes green tea in the afternoon', '--scope', '/people/alice', '--source', 'alice', '--private', '--category', 'preference').id,
    bob: cli(db, 'remember', "Bob's salary is 123k, keep it secret", '--scope', '/secret/bob', '--source', 'bob', '--private', '--category', 'salary').id,
    bobPublic: cli(db, 'remember', 'Bob presents the roadmap on Friday', '--scope', '/team', '--source', 'bob').id,
  };
  return { dir, db, ids, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

// Starts `mneme --db DB ARGS... --json` (a server), waits for the JSON document it prints first and
// returns it with the process. The process is killed at exit if a test forgot it.
export async function startServer(db, args, extraEnv = {}) {
  const child = spawn(mneme, ['--db', db, ...args, '--json'], { env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const document = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server printed nothing in 20 s; stderr: ${stderr}`)), 20000);
    child.stdout.on('data', (d) => {
      stdout += d;
      try {
        const parsed = JSON.parse(stdout);
        clearTimeout(timer);
        resolve(parsed);
      } catch { /* not complete yet */ }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`the server exited with ${code}: ${stderr}`)); });
  });
  process.on('exit', () => child.kill('SIGKILL'));
  return {
    child, document, exited,
    stderr: () => stderr,
    // SIGTERM, then the exit status (the server drains and closes the store first).
    stop: async () => { child.kill('SIGTERM'); return exited; },
  };
}

// Runs mneme with ARGS and returns {status, stdout, stderr} without throwing.
export function run(args, extraEnv = {}) {
  try {
    const stdout = execFileSync(mneme, args, { env: { ...env, ...extraEnv }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { status: 0, stdout, stderr: '' };
  } catch (e) {
    return { status: e.status, stdout: e.stdout, stderr: e.stderr };
  }
}

// Every string anywhere in a JSON value, joined: for "nothing of bob's appears anywhere".
export function allText(value) {
  return JSON.stringify(value);
}
