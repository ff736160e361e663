// `mneme serve` driven by an HTTP client nobody on this project wrote (Node.js's fetch): every route
// of the OpenAPI document answered with bodies that its schemas accept, the same JSON as the command
// line's --json, privacy per source, the bearer token, origins, limits, and many clients at once.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import Ajv2020 from 'ajv/dist/2020.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { allText, cli, run, seededStore, startServer } from './helpers.mjs';

const shipped = JSON.parse(readFileSync(process.env.MNEME_OPENAPI, 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(shipped, 'openapi');

// Checks a body against a schema of the document's components ("Record") or an inline one.
function conforms(body, schema) {
  // Inline schemas refer to components of the document: their references are made absolute.
  const validate = typeof schema === 'string'
    ? ajv.getSchema(`openapi#/components/schemas/${schema}`)
    : ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/')));
  assert.ok(validate(body), `${JSON.stringify(validate.errors)} in ${JSON.stringify(body).slice(0, 300)}`);
}

// The schema the document gives a route's success (or error) response, with component refs resolved by ajv.
function responseSchema(path, method, status) {
  const response = shipped.paths[path][method].responses[String(status)];
  const resolved = response.$ref ? shipped.components.responses[response.$ref.split('/').pop()] : response;
  const schema = resolved.content['application/json'].schema;
  return schema.$ref ? schema.$ref.split('/').pop() : schema;
}

function api(base, headers = {}) {
  const call = async (method, path, body, extra = {}) => {
    const r = await fetch(base + path, {
      method,
      headers: { ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers, ...extra },
      body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)),
    });
    const text = await r.text();
    return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : null };
  };
  return call;
}

// A raw request on a socket, for what fetch refuses to send; resolves with the status line.
function raw(port, bytes) {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let data = '';
    socket.on('data', (d) => { data += d; });
    socket.on('end', () => resolve(data));
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
    socket.setTimeout(10000, () => { socket.destroy(); resolve(data); });
  });
}

test('every route of the OpenAPI document, with the command line\'s JSON', { timeout: 120000 }, async () => {
  const store = seededStore();
  const server = await startServer(store.db, ['serve', '--listen', '127.0.0.1:0']);
  try {
    const base = server.document.url;
    const call = api(base);

    // The document is served, with this server as its server; otherwise it is the shipped file.
    const doc = await call('GET', '/openapi.json');
    assert.equal(doc.status, 200);
    assert.deepEqual(doc.body.servers, [{ url: base }]);
    assert.deepEqual({ ...doc.body, servers: shipped.servers }, shipped);
    assert.deepEqual((await call('GET', '/v1/health')).body, { status: 'ok', version: shipped.info.version });

    // remember (201) and the record is the CLI's.
    const made = await call('POST', '/v1/memories?source=alice', { content: 'Alice moved the demo to Thursday', scope: '/team', categories: ['schedule'], private: true, metadata: { ticket: 'T-7' } });
    assert.equal(made.status, 201);
    conforms(made.body, 'Record');
    assert.equal(made.body.source, 'alice');
    assert.deepEqual(made.body.metadata.ticket, 'T-7');
    assert.deepEqual(cli(store.db, 'get', made.body.id, '--source', 'alice'), made.body);

    // A body far larger than the socket's buffers arrives whole (here 600 items, about 300 kB).
    const bulk = await call('POST', '/v1/memories/batch?source=bulk', { scope: '/bulk', items: Array.from({ length: 600 }, (_, i) => ({
      content: `Bulk fact ${i}: ` + Array.from({ length: 50 }, (_, k) => `w${(i * 7919 + k * 104729) % 99991}`).join(' '),
    })) });
    assert.equal(bulk.status, 200);
    assert.equal(bulk.body.ids.length, 600);
    assert.deepEqual((await call('POST', '/v1/forget?source=bulk', { scope: '/bulk' })).body, { deleted: bulk.body.stored });

    const batch = await call('POST', '/v1/memories/batch?source=alice', { scope: '/batch', items: [{ content: 'First batched fact' }, { content: 'Second batched fact', importance: 0.9 }, { content: '   ' }] });
    assert.equal(batch.status, 200);
    conforms(batch.body, 'RememberManyResult');
    assert.equal(batch.body.stored, 2);

    const listed = await call('GET', '/v1/memories?source=alice&scope=/batch&limit=10');
    conforms(listed.body, responseSchema('/v1/memories', 'get', 200));
    assert.deepEqual(listed.body.map((r) => r.content).sort(), ['First batched fact', 'Second batched fact']);
    assert.deepEqual((await call('GET', '/v1/memories?source=alice&scope=/batch&limit=1&offset=1')).body.length, 1);

    const got = await call('GET', `/v1/memories/${made.body.id}?source=alice`);
    assert.deepEqual(got.body, cli(store.db, 'get', made.body.id, '--source', 'alice'));

    const patched = await call('PATCH', `/v1/memories/${made.body.id}?source=alice`, { content: 'Alice moved the demo to Friday', importance: 0.7 });
    assert.equal(patched.status, 200);
    conforms(patched.body, 'Record');
    assert.equal(patched.body.importance, 0.7);

    const history = await call('GET', `/v1/memories/${made.body.id}/history?source=alice`);
    conforms(history.body, responseSchema('/v1/memories/{id}/history', 'get', 200));
    assert.deepEqual(history.body, cli(store.db, 'history', made.body.id, '--source', 'alice'));

    const undone = await call('POST', `/v1/memories/${made.body.id}/undo?source=alice`);
    assert.equal(undone.body.content, 'Alice moved the demo to Thursday');

    const recalled = await call('POST', '/v1/recall?source=alice', { query: 'when is the demo', depth: 'shallow', limit: 5 });
    assert.equal(recalled.status, 200);
    conforms(recalled.body, responseSchema('/v1/recall', 'post', 200));
    assert.equal(recalled.body[0].content, 'Alice moved the demo to Thursday');
    // The same recall from the command line gives the same records in the same order.
    const fromCli = cli(store.db, 'recall', 'when is the demo', '--depth', 'shallow', '--limit', '5', '--source', 'alice');
    assert.deepEqual(recalled.body.map((m) => m.id), fromCli.map((m) => m.id));

    for (const [path, schema] of [['/v1/tree?max_depth=4', 'ScopeNode'], ['/v1/info?scope=/team', 'ScopeInfo']]) {
      const r = await call('GET', path + '&source=alice');
      assert.equal(r.status, 200, path);
      conforms(r.body, schema);
    }
    assert.deepEqual((await call('GET', '/v1/scopes?source=alice')).body, ['/batch', '/office', '/people', '/product', '/team']);
    // /team holds a public record and alice's: what alice sees there is what the command line counts as alice.
    assert.deepEqual((await call('GET', '/v1/categories?source=alice&scope=/team')).body, cli(store.db, 'categories', '--scope', '/team', '--source', 'alice'));
    const extracted = await call('POST', '/v1/extract', { text: 'We ship on Monday. Anna owns QA.' });
    assert.deepEqual(extracted.body, ['We ship on Monday.', 'Anna owns QA.']);

    const forgot = await call('POST', '/v1/forget?source=alice', { scope: '/batch' });
    assert.deepEqual(forgot.body, { deleted: 2 });
    const deleted = await call('DELETE', `/v1/memories/${made.body.id}?source=alice`);
    assert.deepEqual(deleted.body, { deleted: 1 });
    assert.equal((await call('DELETE', `/v1/memories/${made.body.id}?source=alice`)).status, 404);

    // Every path and method of the document is routed (no 404 for the route, no 405).
    for (const [path, methods] of Object.entries(shipped.paths)) {
      for (const method of Object.keys(methods)) {
        const r = await call(method.toUpperCase(), path.replace('{id}', store.ids.office), ['post', 'patch'].includes(method) ? {} : undefined);
        assert.notEqual(r.status, 405, `${method} ${path}`);
        if (r.status === 404) assert.doesNotMatch(r.body.error.message, /there is no endpoint/, `${method} ${path}`);
        if (r.status >= 400) conforms(r.body, 'Error');
      }
    }

    // Errors: their shape and status.
    const bad = await call('POST', '/v1/recall', { query: 'x', limit: 0 });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.kind, 'invalid_argument');
    assert.match(bad.body.error.message, /"limit" must be an integer from 1 to 10000/);
    const notJson = await call('POST', '/v1/recall', '{not json');
    assert.equal(notJson.status, 400);
    assert.match(notJson.body.error.message, /the body is not valid JSON/);
    assert.match((await call('POST', '/v1/recall', '["x"]')).body.error.message, /must be a JSON object of arguments, not array/);
    assert.equal((await call('POST', '/v1/recall', 'query=x', { 'Content-Type': 'text/plain' })).status, 415);
    const wrongMethod = await call('PUT', '/v1/recall', {});
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get('allow'), 'POST');
    assert.equal((await call('GET', '/v2/anything')).status, 404);
    assert.equal((await call('POST', '/v1/memories', { content: 'x', private: true })).status, 403); // private needs a source
    assert.equal((await call('GET', '/v1/memories?source=%01')).status, 400);

    const { code } = await server.stop();
    assert.equal(code, 0);
  } finally {
    server.child.kill('SIGKILL');
    store.cleanup();
  }
});

test('each request sees what its source may see', { timeout: 120000 }, async () => {
  const store = seededStore();
  const server = await startServer(store.db, ['serve', '--listen', '127.0.0.1:0']);
  try {
    const call = api(server.document.url);
    const everything = async (source) => {
      const q = source ? `source=${source}` : '';
      return [
        await call('POST', `/v1/recall?${q}`, { query: 'salary secret tea office roadmap', depth: 'shallow', limit: 100 }),
        await call('GET', `/v1/memories?${q}&limit=1000`),
        await call('GET', `/v1/tree?${q}&max_depth=10`),
        await call('GET', `/v1/info?${q}`),
        await call('GET', `/v1/scopes?${q}`),
        await call('GET', `/v1/categories?${q}`),
      ];
    };
    for (const source of ['alice', '', 'carol']) {
      const text = allText(await everything(source));
      assert.ok(!text.includes('123k') && !text.includes('/secret') && !text.includes('salary'), `source "${source}" saw bob's private record: ${text}`);
      assert.equal(text.includes('green tea'), source === 'alice', `alice's private record for source "${source}"`);
      assert.ok(text.includes('roadmap'), 'public records are seen by everyone');
    }
    assert.ok(allText(await everything('bob')).includes('123k'), 'bob sees his own');
    assert.equal((await call('GET', '/v1/info?source=alice')).body.record_count, 4);
    assert.equal((await call('GET', '/v1/info')).body.record_count, 3);

    // Bob's record, by id, is as unknown to alice as an id that does not exist.
    for (const [method, path, body] of [['GET', `/v1/memories/${store.ids.bob}`], ['GET', `/v1/memories/${store.ids.bob}/history`],
      ['PATCH', `/v1/memories/${store.ids.bob}`, { importance: 0.1 }], ['POST', `/v1/memories/${store.ids.bob}/undo`], ['DELETE', `/v1/memories/${store.ids.bob}`]]) {
      const r = await call(method, `${path}?source=alice`, body);
      assert.equal(r.status, 404, `${method} ${path}`);
      assert.equal(r.body.error.message, `no record has the id "${store.ids.bob}"; find ids with recall or list`);
    }
    assert.deepEqual((await call('POST', '/v1/forget?source=alice', { categories: ['salary'] })).body, { deleted: 0 });
    assert.deepEqual((await call('POST', '/v1/forget?source=alice', { ids: [store.ids.bob, store.ids.alice] })).body, { deleted: 1 });
    assert.equal(cli(store.db, 'get', store.ids.bob, '--curator').id, store.ids.bob, 'bob\'s record is still there');
    await server.stop();
  } finally {
    server.child.kill('SIGKILL');
    store.cleanup();
  }
});

test('recall and forget take metadata conditions, floors, a source and identities', { timeout: 120000 }, async () => {
  const store = seededStore();
  const server = await startServer(store.db, ['serve', '--listen', '127.0.0.1:0']);
  try {
    const call = api(server.document.url);
    const items = [
      { source: 'alice', content: 'The kiln reaches 1200 degrees on Friday', metadata: { user_id: 'ann', priority: 3 } },
      { source: 'studio', content: 'The kiln needs a new shelf before Friday', metadata: { user_id: 'ben', priority: 1 } },
      { source: 'alice', content: 'The kiln logbook is kept in the studio', metadata: { user_id: 'ann', run_id: 'r1', priority: 2 } },
    ];
    for (const { source, ...item } of items) {
      assert.equal((await call('POST', `/v1/memories?source=${source}`, { ...item, scope: '/kiln' })).status, 201);
    }
    const recalled = async (args) => {
      const r = await call('POST', '/v1/recall?source=alice', { query: 'kiln', scope: '/kiln', depth: 'shallow', ...args });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      conforms(r.body, responseSchema('/v1/recall', 'post', 200));
      return r.body.map((m) => m.content).sort();
    };
    const contents = (...indices) => indices.map((i) => items[i].content).sort();
    assert.deepEqual(await recalled({}), contents(0, 1, 2));
    assert.deepEqual(await recalled({ where: { priority: { $gte: 2 } } }), contents(0, 2));
    assert.deepEqual(await recalled({ where: { priority: { $in: [1, 3] } }, user_id: 'ann' }), contents(0));
    assert.deepEqual(await recalled({ user_id: 'ann', run_id: 'r1' }), contents(2));
    assert.deepEqual(await recalled({ agent_id: 'nobody' }), []);
    assert.deepEqual(await recalled({ only_source: 'studio' }), contents(1));
    assert.deepEqual(await recalled({ min_relevance: 1 }), []);
    assert.deepEqual(await recalled({ min_score: 0.99 }), []);
    assert.deepEqual(await recalled({ min_relevance: 0, min_score: 0 }), contents(0, 1, 2));
    // The same as the command line's options.
    const fromCli = cli(store.db, 'recall', 'kiln', '--scope', '/kiln', '--depth', 'shallow', '--where', 'priority>=2', '--source', 'alice');
    assert.deepEqual(fromCli.map((m) => m.content).sort(), contents(0, 2));

    for (const [args, pattern] of [[{ where: { priority: { $near: 1 } } }, /\$near/], [{ where: 'priority=1' }, /"where" must be a JSON object/],
      [{ min_relevance: 2 }, /"min_relevance" must be a number from 0 to 1/], [{ min_score: -1 }, /"min_score" must be a number from 0 to 1/],
      [{ user_id: 7 }, /"user_id" must be a string/]]) {
      const bad = await call('POST', '/v1/recall', { query: 'kiln', ...args });
      assert.equal(bad.status, 400, JSON.stringify(args));
      assert.match(bad.body.error.message, pattern);
    }
    assert.equal((await call('POST', '/v1/forget', { where: { priority: { $near: 1 } } })).status, 400);

    assert.deepEqual((await call('POST', '/v1/forget?source=alice', { where: { priority: 1 } })).body, { deleted: 1 });
    assert.deepEqual((await call('POST', '/v1/forget?source=alice', { user_id: 'ann', run_id: 'r1' })).body, { deleted: 1 });
    assert.deepEqual(await recalled({}), contents(0));
    await server.stop();
  } finally {
    server.child.kill('SIGKILL');
    store.cleanup();
  }
});

test('the bearer token, origins, and the refusal to listen openly without a token', { timeout: 120000 }, async () => {
  const store = seededStore();
  const token = 'rest-token-0123456789abcdef';
  const tokenFile = join(store.dir, 'token');
  writeFileSync(tokenFile, token, { mode: 0o600 });
  const server = await startServer(store.db, ['serve', '--listen', '127.0.0.1:0', '--token-file', tokenFile, '--allow-origin', 'https://app.example', '--verbose']);
  try {
    const base = server.document.url;
    assert.equal(server.document.token_required, true);
    const anonymous = await api(base)('GET', '/v1/health');
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer realm="mneme"');
    const wrong = await api(base, { Authorization: 'Bearer rest-token-0123456789abcdeX' })('GET', '/v1/health');
    assert.equal(wrong.status, 401);
    assert.doesNotMatch(JSON.stringify(wrong.body), /rest-token/);
    const call = api(base, { Authorization: `Bearer ${token}` });
    assert.equal((await call('GET', '/v1/health')).status, 200);
    assert.equal((await call('GET', '/v1/health', undefined, { Origin: 'https://evil.example' })).status, 403);
    assert.equal((await call('GET', '/v1/health', undefined, { Origin: 'https://app.example' })).status, 200);
    assert.equal((await call('GET', '/v1/health', undefined, { Origin: 'http://localhost:5173' })).status, 200);
    assert.match(server.stderr(), /GET \/v1\/health 401/); // --verbose logs requests, never the token
    assert.ok(!server.stderr().includes(token));
    await server.stop();
  } finally {
    server.child.kill('SIGKILL');
  }
  const open = run(['--db', store.db, 'serve', '--listen', '0.0.0.0:0']);
  assert.equal(open.status, 2);
  assert.match(open.stderr, /needs a bearer token/);
  const short = run(['--db', store.db, 'serve', '--listen', '0.0.0.0:0'], { MNEME_HTTP_TOKEN: 'short' });
  assert.equal(short.status, 2);
  assert.match(short.stderr, /shorter than 16 characters/);
  assert.ok(!short.stderr.includes('"short"'));
  store.cleanup();
});

test('limits on requests', { timeout: 120000 }, async () => {
  const store = seededStore();
  const server = await startServer(store.db, ['serve', '--listen', '127.0.0.1:0', '--max-body', '2048']);
  try {
    const base = server.document.url;
    const port = Number(new URL(base).port);
    const big = await api(base)('POST', '/v1/memories', { content: 'x'.repeat(5000) });
    assert.equal(big.status, 413);
    // Refused from its Content-Length, before a byte of the body is read.
    const declared = await raw(port, 'POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n');
    assert.match(declared, /^HTTP\/1\.1 413 /);
    const chunked = await raw(port, 'POST /v1/recall HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n' +
      '1c\r\n{"query":"office","depth":"s\r\n' + 'b\r\nhallow"}   \r\n0\r\n\r\n');
    assert.match(chunked, /^HTTP\/1\.1 200 /);
    assert.match(chunked, /The office opens at 9/);
    const headers = await raw(port, `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'y'.repeat(20000)}\r\n\r\n`);
    assert.match(headers, /^HTTP\/1\.1 431 /);
    assert.match(await raw(port, 'GARBAGE\r\n\r\n'), /^HTTP\/1\.1 400 /);
    assert.match(await raw(port, 'GET /v1/health HTTP/2.0\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 505 /);
    assert.match(await raw(port, 'GET /v1/health HTTP/1.1\r\n\r\n'), /^HTTP\/1\.1 400 /); // no Host
    // Keep-alive with two pipelined requests, answered in order.
    const pipelined = await raw(port, 'GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/scopes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.equal(pipelined.match(/HTTP\/1\.1 200 /g).length, 2);
    assert.ok(pipelined.indexOf('"status":"ok"') < pipelined.indexOf('/office'));
    // The server is still there after all of that.
    assert.equal((await api(base)('GET', '/v1/health')).status, 200);
    await server.stop();
  } finally {
    server.child.kill('SIGKILL');
    store.cleanup();
  }
});

test('many clients at once', { timeout: 180000 }, async () => {
  const store = seededStore();
  const server = await startServer(store.db, ['serve', '--listen', '127.0.0.1:0']);
  try {
    const call = api(server.document.url);
    const clients = 16;
    const each = 15;
    const failures = [];
    await Promise.all(Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; i < each; ++i) {
        const source = `client-${c}`;
        const made = await call('POST', `/v1/memories?source=${source}`, { content: `Client ${c} fact ${i}: the answer is ${c * 100 + i}`, scope: `/load/${c}`, private: i % 2 === 0 });
        if (made.status !== 201) failures.push(made);
        const found = await call('POST', `/v1/recall?source=${source}`, { query: `Client ${c} fact ${i}`, scope: `/load/${c}`, depth: 'shallow', limit: 3 });
        if (found.status !== 200 || !found.body.some((m) => m.id === made.body.id)) failures.push(found);
        if (found.body.some((m) => m.private && m.source !== source)) failures.push({ leaked: found.body });
      }
    }));
    assert.deepEqual(failures, []);
    const counted = await call('GET', '/v1/info?scope=/load');
    assert.equal(counted.body.record_count, clients * Math.floor(each / 2)); // the public half
    await server.stop();
  } finally {
    server.child.kill('SIGKILL');
    store.cleanup();
  }
});
