// API keys and roles through the official OpenAI Node SDK (auth_keys.sh starts the server).
//   LF_BASE_URL  the gateway (no /v1)   LF_MODEL  the base model's name
//   LF_USER_KEY, LF_ADMIN_KEY  keys of the key file's user and admin lines
//   LF_ADAPTER_PATH  an adapter directory the admin may register and remove
// Each case asserts the SDK's typed error: AuthenticationError (401), PermissionDeniedError (403).
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const BASE_URL = process.env.LF_BASE_URL.replace(/\/+$/, '') + '/v1';
const MODEL = process.env.LF_MODEL;
const USER_KEY = process.env.LF_USER_KEY;
const ADMIN_KEY = process.env.LF_ADMIN_KEY;
const ADAPTER_PATH = process.env.LF_ADAPTER_PATH;

const sdk = (apiKey) => new OpenAI({ baseURL: BASE_URL, apiKey, maxRetries: 0, timeout: 60_000 });
const complete = (c) => c.completions.create({ model: MODEL, prompt: 'Hello', max_tokens: 2, temperature: 0 });
const addAdapter = (c, name) => c.post('/adapters', { body: { name, path: ADAPTER_PATH } });
const removeAdapter = (c, name) => c.delete(`/adapters/${name}`);

let n = 0;
async function check(what, fn) {
  n += 1;
  try {
    await fn();
    console.log(`ok ${n} - ${what}`);
  } catch (e) {
    console.log(`not ok ${n} - ${what}`);
    console.error(e);
    process.exit(1);
  }
}
async function rejects(promise, type, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof type, `expected ${type.name}, got ${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.code, code);
    return true;
  });
}

const none = sdk('');       // the SDK sends "Bearer " with an empty key
const wrong = sdk('sk-wrong-0123456789abcdef');
const user = sdk(USER_KEY);
const admin = sdk(ADMIN_KEY);

await check('no key: completions, models and adapter add are 401 AuthenticationError', async () => {
  await rejects(complete(none), OpenAI.AuthenticationError, 'unauthenticated');
  await rejects(none.models.list(), OpenAI.AuthenticationError, 'unauthenticated');
  await rejects(addAdapter(none, 'k1'), OpenAI.AuthenticationError, 'unauthenticated');
});
await check('a wrong key: completions, models and adapter remove are 401', async () => {
  await rejects(complete(wrong), OpenAI.AuthenticationError, 'unauthenticated');
  await rejects(wrong.models.list(), OpenAI.AuthenticationError, 'unauthenticated');
  await rejects(removeAdapter(wrong, 'k1'), OpenAI.AuthenticationError, 'unauthenticated');
});
await check('a user key: completions, chat and models succeed', async () => {
  const r = await complete(user);
  assert.equal(r.object, 'text_completion');
  assert.equal(r.usage.completion_tokens, 2);
  const c = await user.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
  assert.equal(c.object, 'chat.completion');
  const m = await user.models.list();
  assert.ok(m.data.some((x) => x.id === MODEL));
});
await check('a user key: adapter add and remove are 403 PermissionDeniedError', async () => {
  await rejects(addAdapter(user, 'k1'), OpenAI.PermissionDeniedError, 'forbidden');
  await rejects(removeAdapter(user, 'k1'), OpenAI.PermissionDeniedError, 'forbidden');
});
await check('an admin key: completions, then adapter add, list and remove succeed', async () => {
  assert.equal((await complete(admin)).usage.completion_tokens, 2);
  const added = await addAdapter(admin, 'k1');
  assert.ok(added.data.some((a) => a.id === 'k1' && !a.removed));
  const listed = await user.get('/adapters');  // listing is a user operation
  assert.ok(listed.data.some((a) => a.id === 'k1'));
  const removed = await removeAdapter(admin, 'k1');
  assert.ok(removed.data.some((a) => a.id === 'k1' && a.removed));
});
console.log(`${n} passed, 0 failed`);
