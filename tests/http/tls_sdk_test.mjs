// The official OpenAI Node SDK over HTTPS (serve --tls-cert/--tls-key): the test's self-signed
// certificate reaches Node through NODE_EXTRA_CA_CERTS, so the SDK verifies the server as it
// would a real one (no rejectUnauthorized tricks).
//
//   LF_BASE_URL  required  https://127.0.0.1:PORT (no /v1)
//   LF_MODEL     required  the base model's name as /v1/models lists it
// Run from tests/http (node_modules/openai). Prints "ok N - what"; exits 1 at the first failure.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const BASE_URL = (process.env.LF_BASE_URL || '').replace(/\/+$/, '');
const MODEL = process.env.LF_MODEL || '';
if (!BASE_URL.startsWith('https://') || !MODEL) {
  console.error('tls_sdk_test: set LF_BASE_URL (https://...) and LF_MODEL');
  process.exit(2);
}
const client = new OpenAI({ baseURL: BASE_URL + '/v1', apiKey: 'unused', maxRetries: 0, timeout: 60000 });

let passed = 0;
async function check(name, fn) {
  try {
    await fn();
  } catch (e) {
    console.log(`not ok ${passed + 1} - ${name}`);
    console.log(e && e.stack ? e.stack : String(e));
    if (e && e.cause) console.log(`  cause: ${e.cause}`);
    process.exit(1);
  }
  passed++;
  console.log(`ok ${passed} - ${name}`);
}

await check('models.list over HTTPS names the base model', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.ok(ids.includes(MODEL), `models: ${ids}`);
});

let greedy = '';
await check('completions.create over HTTPS', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: 'The quick brown fox', max_tokens: 12, temperature: 0 });
  assert.equal(r.choices.length, 1);
  assert.equal(r.usage.completion_tokens, 12);
  greedy = r.choices[0].text;
});

await check('a streamed completion over HTTPS: every chunk, the same text', async () => {
  const stream = await client.completions.create({
    model: MODEL, prompt: 'The quick brown fox', max_tokens: 12, temperature: 0, stream: true,
  });
  let text = '';
  let chunks = 0;
  for await (const c of stream) {
    chunks++;
    text += c.choices[0]?.text ?? '';
  }
  assert.ok(chunks >= 2, `chunks: ${chunks}`);
  assert.equal(text, greedy);
});

await check('a streamed chat completion over HTTPS', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, temperature: 0, stream: true,
  });
  let finish = null;
  for await (const c of stream) finish = c.choices[0]?.finish_reason ?? finish;
  assert.ok(finish === 'length' || finish === 'stop', `finish_reason: ${finish}`);
});

console.log(`${passed} passed, 0 failed`);
