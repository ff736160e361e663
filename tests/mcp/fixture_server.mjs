#!/usr/bin/env node
// A small MCP server over stdio for Mneme's client tests, written against the protocol itself (no
// SDK) so that it can misbehave exactly as a test asks. It needs nothing but Node.js.
//
//   node fixture_server.mjs [--pid-file FILE] [--mode MODE] [--version V]
//
// Modes: normal; exit-at-start (exits with status 3 after a line on stderr); garbage-at-start (answers
// initialize with a line that is not JSON); slow-start (answers initialize after 5 s); ignore-eof
// (keeps running when its input closes); ignore-term (ignores SIGTERM as well); huge-line (answers
// tools/list with 70 MiB and no line break); spawn-child (starts `sleep 1000`, writes its pid to
// FILE.child). --version answers initialize with that protocol version.
//
// Tools: echo {text}, sleep {ms}, die {}, garbage {}, fail {}, env {name}, ping_client {}, grow {}.
// Every notification it receives is logged on stderr as "notification METHOD PARAMS".

import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const mode = option('--mode', 'normal');
const pidFile = option('--pid-file', '');
const version = option('--version', '');

if (pidFile) writeFileSync(pidFile, String(process.pid));
if (mode === 'exit-at-start') {
  process.stderr.write('fixture: configuration missing, giving up\n');
  process.exit(3);
}
if (mode === 'spawn-child') {
  const child = spawn('sleep', ['1000'], { stdio: 'ignore' });
  if (pidFile) writeFileSync(pidFile + '.child', String(child.pid));
}
if (mode === 'ignore-term') process.on('SIGTERM', () => process.stderr.write('fixture: ignoring SIGTERM\n'));

const send = (message) => process.stdout.write(JSON.stringify(message) + '\n');
const text = (t, isError = false) => ({ content: [{ type: 'text', text: t }], isError });

let tools = [
  { name: 'echo', description: 'Echoes the text back', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  { name: 'sleep', description: 'Answers after ms milliseconds', inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } } },
  { name: 'die', description: 'Exits while answering', inputSchema: { type: 'object' } },
  { name: 'garbage', description: 'Answers with a line that is not JSON', inputSchema: { type: 'object' } },
  { name: 'fail', description: 'Reports a tool error', inputSchema: { type: 'object' } },
  { name: 'env', description: 'The value of an environment variable', inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
  { name: 'ping_client', description: 'Pings the client and waits for its answer', inputSchema: { type: 'object' } },
  { name: 'grow', description: 'Adds the tool "extra" and announces the change', inputSchema: { type: 'object' } },
];

let nextId = 1000;
const waiting = new Map();

function callTool(id, name, a) {
  switch (name) {
    case 'echo': return send({ jsonrpc: '2.0', id, result: text(`echo: ${a.text}`) });
    case 'sleep': return setTimeout(() => send({ jsonrpc: '2.0', id, result: text('slept') }), a.ms ?? 60000);
    case 'die':
      process.stderr.write('fixture: dying on purpose\n');
      return process.exit(7);
    case 'garbage': return process.stdout.write('this is not JSON at all\n');
    case 'fail': return send({ jsonrpc: '2.0', id, result: text('it failed on purpose', true) });
    case 'env': return send({ jsonrpc: '2.0', id, result: text(process.env[a.name] ?? '(unset)') });
    case 'ping_client': {
      const pingId = nextId++;
      waiting.set(pingId, (reply) => send({ jsonrpc: '2.0', id, result: text(reply.error ? 'ping failed' : 'pong received') }));
      return send({ jsonrpc: '2.0', id: pingId, method: 'ping' });
    }
    case 'grow':
      tools = [...tools, { name: 'extra', description: 'Added later', inputSchema: { type: 'object' } }];
      send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      return send({ jsonrpc: '2.0', id, result: text('grown') });
    case 'extra': return send({ jsonrpc: '2.0', id, result: text('extra called') });
    default: return send({ jsonrpc: '2.0', id, error: { code: -32602, message: `Unknown tool: ${name}` } });
  }
}

function handle(message) {
  if (message.id !== undefined && message.method === undefined) {
    const done = waiting.get(message.id);
    waiting.delete(message.id);
    if (done) done(message);
    return;
  }
  if (message.id === undefined) {
    process.stderr.write(`notification ${message.method} ${JSON.stringify(message.params ?? {})}\n`);
    return;
  }
  const { id, method, params = {} } = message;
  switch (method) {
    case 'initialize': {
      if (mode === 'garbage-at-start') return process.stdout.write('Welcome to the fixture server!\n');
      const result = {
        protocolVersion: version || params.protocolVersion,
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: 'fixture', version: '1.0.0' },
      };
      if (mode === 'slow-start') return setTimeout(() => send({ jsonrpc: '2.0', id, result }), 5000);
      return send({ jsonrpc: '2.0', id, result });
    }
    case 'tools/list':
      if (mode === 'huge-line') return process.stdout.write('x'.repeat(70 * 1024 * 1024));
      return send({ jsonrpc: '2.0', id, result: { tools } });
    case 'tools/call': return callTool(id, params.name, params.arguments ?? {});
    case 'ping': return send({ jsonrpc: '2.0', id, result: {} });
    default: return send({ jsonrpc: '2.0', id, error: { code: -32601, message: `Method not found: ${method}` } });
  }
}

let buffer = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  let nl;
  while ((nl = buffer.indexOf('\n')) >= 0) {
    const line = buffer.slice(0, nl).trim();
    buffer = buffer.slice(nl + 1);
    if (!line) continue;
    try {
      handle(JSON.parse(line));
    } catch (e) {
      process.stderr.write(`fixture: bad input ${e.message}\n`);
    }
  }
});
process.stdin.on('end', () => {
  process.stderr.write('fixture: input closed\n');
  if (mode !== 'ignore-eof' && mode !== 'ignore-term') process.exit(0);
});
if (mode === 'ignore-eof' || mode === 'ignore-term') setInterval(() => {}, 1000);
