// `mneme mcp` driven by the official MCP TypeScript SDK's client, over stdio and over streamable
// HTTP: the handshake, the tools with their schemas (the SDK checks every structured result against
// the tool's output schema), scopes as resources, errors, and that a server running for one source
// never shows another source's private records.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { allText, cli, env, mneme, run, seededStore, startServer } from './helpers.mjs';

const TOOLS = ['forget', 'get', 'history', 'info', 'recall', 'remember', 'tree', 'update'];

function newClient() {
  return new Client({ name: 'mneme-sdk-test', version: '1.0.0' });
}

// The whole conversation an MCP client has with the server of alice, on either transport.
async function exercise(client, store) {
  const info = client.getServerVersion();
  assert.equal(info.name, 'mneme');
  assert.match(info.version, /^\d+\.\d+\.\d+$/);
  const caps = client.getServerCapabilities();
  assert.ok(caps.tools, 'tools capability');
  assert.ok(caps.resources, 'resources capability');
  assert.match(client.getInstructions(), /recall/);

  // Tools, each with an input and an output schema.
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', t.name);
    assert.ok(t.outputSchema, `${t.name} has an output schema`);
    assert.ok(t.description.length > 20, t.name);
  }
  assert.deepEqual(tools.find((t) => t.name === 'recall').inputSchema.required, ['query']);

  // remember: a private record of alice's (the SDK validates structuredContent against outputSchema).
  const remembered = await client.callTool({ name: 'remember', arguments: { content: "Alice's flight lands at 6pm on Tuesday", scope: '/travel', private: true, categories: ['travel'], importance: 0.8 } });
  assert.equal(remembered.isError, false);
  const record = remembered.structuredContent;
  assert.equal(record.source, 'alice');
  assert.equal(record.private, true);
  assert.equal(record.scope, '/travel');
  assert.deepEqual(JSON.parse(remembered.content[0].text), record);

  // recall sees public records and alice's own private ones, never bob's private one.
  const recalled = await client.callTool({ name: 'recall', arguments: { query: 'salary secret tea flight office', depth: 'shallow', limit: 50 } });
  assert.equal(recalled.isError, false);
  const contents = recalled.structuredContent.matches.map((m) => m.content);
  assert.ok(contents.includes('Alice likes green tea in the afternoon'), contents.join(' | '));
  assert.ok(contents.includes("Alice's flight lands at 6pm on Tuesday"));
  assert.ok(contents.includes('The office opens at 9 every weekday'));
  assert.ok(!allText(recalled).includes('123k'), 'bob\'s private record leaked through recall');
  for (const m of recalled.structuredContent.matches) assert.ok(typeof m.score === 'number' && m.match_reasons.length > 0);

  // recall narrowed by scope and category, as the CLI's options do.
  const narrowed = await client.callTool({ name: 'recall', arguments: { query: 'rate limit', scope: ['/product', '/office'], categories: 'limits', depth: 'shallow' } });
  assert.deepEqual(narrowed.structuredContent.matches.map((m) => m.content), ['The API rate limit is 1000 requests per minute']);

  // bob's private record is answered exactly like an id that does not exist.
  const hidden = await client.callTool({ name: 'get', arguments: { id: store.ids.bob } });
  const unknown = await client.callTool({ name: 'get', arguments: { id: '00000000-0000-0000-0000-000000000000' } });
  assert.equal(hidden.isError, true);
  assert.equal(unknown.isError, true);
  assert.equal(hidden.content[0].text.replace(store.ids.bob, 'ID'), unknown.content[0].text.replace('00000000-0000-0000-0000-000000000000', 'ID'));
  for (const name of ['history', 'update']) {
    const r = await client.callTool({ name, arguments: name === 'update' ? { id: store.ids.bob, importance: 0.1 } : { id: store.ids.bob } });
    assert.equal(r.isError, true, name);
    assert.match(r.content[0].text, /no record has the id/);
  }

  // get, update, history of alice's own record.
  const got = await client.callTool({ name: 'get', arguments: { id: record.id } });
  assert.equal(got.structuredContent.content, record.content);
  const updated = await client.callTool({ name: 'update', arguments: { id: record.id, content: "Alice's flight lands at 7pm on Tuesday" } });
  assert.equal(updated.structuredContent.content, "Alice's flight lands at 7pm on Tuesday");
  const history = await client.callTool({ name: 'history', arguments: { id: record.id } });
  assert.deepEqual(history.structuredContent.entries.map((e) => e.event), ['ADD', 'UPDATE']);
  assert.equal(history.structuredContent.entries[1].old_content, "Alice's flight lands at 6pm on Tuesday");

  // tree and info count what alice sees; /secret (bob's private scope) is not named.
  const tree = await client.callTool({ name: 'tree', arguments: { max_depth: 5 } });
  assert.ok(!allText(tree).includes('/secret'), allText(tree));
  assert.equal(tree.structuredContent.record_count, 5); // 3 public (office, docs, team), alice's tea and flight
  const secretInfo = await client.callTool({ name: 'info', arguments: { scope: '/secret' } });
  assert.equal(secretInfo.structuredContent.record_count, 0);
  assert.deepEqual(secretInfo.structuredContent.categories, []);
  const rootInfo = await client.callTool({ name: 'info', arguments: {} });
  assert.ok(!rootInfo.structuredContent.categories.includes('salary'));
  assert.ok(!rootInfo.structuredContent.child_scopes.includes('/secret'));

  // recall and forget take metadata conditions (where), identities, a floor and a score threshold.
  const recallSchema = tools.find((t) => t.name === 'recall').inputSchema.properties;
  for (const key of ['where', 'min_relevance', 'min_score', 'only_source', 'user_id', 'agent_id', 'run_id']) assert.ok(recallSchema[key], `recall takes ${key}`);
  const forgetSchema = tools.find((t) => t.name === 'forget').inputSchema.properties;
  for (const key of ['where', 'user_id', 'agent_id', 'run_id']) assert.ok(forgetSchema[key], `forget takes ${key}`);
  for (const [content, metadata] of [['The boarding gate is B12', { user_id: 'ann', gate: 12 }], ['The boarding gate closes at 5pm', { user_id: 'ben', gate: 12 }]]) {
    assert.equal((await client.callTool({ name: 'remember', arguments: { content, scope: '/gates', metadata } })).isError, false);
  }
  const gates = async (args) => (await client.callTool({ name: 'recall', arguments: { query: 'boarding gate', scope: '/gates', depth: 'shallow', ...args } }))
    .structuredContent.matches.map((m) => m.content).sort();
  assert.deepEqual(await gates({}), ['The boarding gate closes at 5pm', 'The boarding gate is B12']);
  assert.deepEqual(await gates({ user_id: 'ann' }), ['The boarding gate is B12']);
  assert.deepEqual(await gates({ where: { user_id: { $ne: 'ann' }, gate: { $gte: 10 } } }), ['The boarding gate closes at 5pm']);
  assert.deepEqual(await gates({ only_source: 'nobody' }), []);
  assert.deepEqual(await gates({ min_relevance: 1 }), []);
  assert.deepEqual((await client.callTool({ name: 'forget', arguments: { where: { gate: 12 }, user_id: 'ben' } })).structuredContent, { deleted: 1 });
  assert.deepEqual(await gates({}), ['The boarding gate is B12']);
  assert.deepEqual((await client.callTool({ name: 'forget', arguments: { scope: '/gates' } })).structuredContent, { deleted: 1 });

  // forget by scope deletes what alice sees only: bob's private record stays.
  const forgot = await client.callTool({ name: 'forget', arguments: { scope: '/secret' } });
  assert.deepEqual(forgot.structuredContent, { deleted: 0 });
  assert.equal(cli(store.db, 'get', store.ids.bob, '--curator').content, "Bob's salary is 123k, keep it secret");

  // Bad arguments are tool errors the model can act on; an unknown tool is a protocol error.
  const bad = await client.callTool({ name: 'recall', arguments: { query: 42 } });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /recall: "query" must be a string/);
  const extra = await client.callTool({ name: 'forget', arguments: { everything: true } });
  assert.match(extra.content[0].text, /unknown argument "everything"/);
  await assert.rejects(client.callTool({ name: 'drop_database', arguments: {} }), (e) => e instanceof McpError && e.code === -32602 && /Unknown tool/.test(e.message));

  // Scopes as resources.
  const { resources } = await client.listResources();
  const uris = resources.map((r) => r.uri);
  assert.ok(uris.includes('mneme://scope/'));
  assert.ok(uris.includes('mneme://scope/people/alice'));
  assert.ok(!uris.some((u) => u.includes('secret')), uris.join(' '));
  const read = await client.readResource({ uri: 'mneme://scope/people' });
  const scope = JSON.parse(read.contents[0].text);
  assert.equal(scope.scope.path, '/people');
  assert.deepEqual(scope.records.map((r) => r.content), ['Alice likes green tea in the afternoon']);
  const readRecord = await client.readResource({ uri: `mneme://record/${record.id}` });
  assert.equal(JSON.parse(readRecord.contents[0].text).id, record.id);
  await assert.rejects(client.readResource({ uri: 'mneme://scope/secret/bob' }), (e) => e instanceof McpError && e.code === -32002);
  await assert.rejects(client.readResource({ uri: `mneme://record/${store.ids.bob}` }), (e) => e instanceof McpError && e.code === -32002);
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(), ['mneme://record/{id}', 'mneme://scope/{+path}']);

  await client.ping();
  await assert.rejects(client.listPrompts(), (e) => e instanceof McpError && e.code === -32601);
}

test('the SDK client over stdio', { timeout: 120000 }, async () => {
  const store = seededStore();
  try {
    const transport = new StdioClientTransport({ command: mneme, args: ['--db', store.db, 'mcp', '--source', 'alice'], env, stderr: 'pipe' });
    let stderr = '';
    transport.stderr.on('data', (d) => { stderr += d; });
    const client = newClient();
    await client.connect(transport);
    const pid = transport.pid;
    try {
      await exercise(client, store);
    } finally {
      await client.close(); // closes the server's input: it answers what is left and exits
    }
    assert.throws(() => process.kill(pid, 0), 'the server exited when its input closed');
    assert.match(stderr, /serving .* over stdio for source "alice"/);
  } finally {
    store.cleanup();
  }
});

test('the SDK client over streamable HTTP, with sessions and a token', { timeout: 120000 }, async () => {
  const store = seededStore();
  const token = 'test-token-0123456789abcdef';
  const tokenFile = join(store.dir, 'token');
  writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
  const server = await startServer(store.db, ['mcp', '--source', 'alice', '--listen', '127.0.0.1:0', '--token-file', tokenFile]);
  try {
    const url = new URL(server.document.url);
    assert.match(url.pathname, /^\/mcp$/);
    assert.equal(server.document.token_required, true);

    // Without the token the handshake is refused.
    await assert.rejects(newClient().connect(new StreamableHTTPClientTransport(url)), /401|Authorization/);

    const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    const client = newClient();
    await client.connect(transport);
    assert.ok(transport.sessionId, 'the server gave a session id');
    assert.equal(transport.protocolVersion, '2025-11-25');
    try {
      await exercise(client, store);
    } catch (e) {
      await client.close();
      throw e;
    }

    // Several clients at once, each in its own session.
    const others = await Promise.all([1, 2, 3, 4].map(async (i) => {
      const t = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
      const c = newClient();
      await c.connect(t);
      const r = await c.callTool({ name: 'remember', arguments: { content: `Parallel fact number ${i}`, scope: '/parallel' } });
      return { c, t, id: r.structuredContent.id };
    }));
    assert.equal(new Set(others.map((o) => o.t.sessionId)).size, 4);
    const counted = await client.callTool({ name: 'info', arguments: { scope: '/parallel' } });
    assert.equal(counted.structuredContent.record_count, 4);

    // Ending a session: its id is refused afterwards, the others go on.
    const ended = others[0].t.sessionId;
    await others[0].t.terminateSession();
    const refused = await fetch(url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': ended, 'MCP-Protocol-Version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(refused.status, 404);
    await others[1].c.ping();
    for (const o of others) await o.c.close();
    await client.close();

    assert.ok(!server.stderr().includes(token), 'the token never appears in the server\'s output');
    const { code } = await server.stop();
    assert.equal(code, 0);
  } finally {
    server.child.kill('SIGKILL');
    store.cleanup();
  }
});

test('mneme mcp refuses to listen beyond loopback without a token', () => {
  const store = seededStore();
  try {
    const r = run(['--db', store.db, 'mcp', '--listen', '0.0.0.0:0']);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /needs a bearer token.*--token-file/);
  } finally {
    store.cleanup();
  }
});
