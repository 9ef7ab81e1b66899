// The official OpenAI Node SDK (openai v4, see package.json) against the lorafleet HTTP gateway.
//
// Driven by environment variables (openai_sdk.sh sets them):
//   LF_BASE_URL        required  the gateway's base URL, e.g. http://127.0.0.1:8080 (no /v1)
//   LF_MODEL           required  the base model's name as /v1/models lists it
//   LF_ADAPTER         required  an adapter's name (an entry of /v1/models) whose effect is visible
//   LF_CONTEXT         optional  the model's context window in tokens (default 256)
//   LF_ZMQ_TEXT_FILE   optional  stdout of `lorafleet client --prompt "$LF_ZMQ_PROMPT" --temperature 0
//                                --max-tokens $LF_ZMQ_MAX_TOKENS --no-stream` (the text and one "\n");
//                                when given, the HTTP greedy completion must equal it exactly
//   LF_ZMQ_ADAPTER_TEXT_FILE  optional  the same with `--adapter $LF_ADAPTER`: the HTTP greedy
//                                completion with model LF_ADAPTER must equal it exactly
//   LF_ZMQ_PROMPT      optional  that prompt (default "The quick brown fox")
//   LF_ZMQ_MAX_TOKENS  optional  that max_tokens (default 24)
//   LF_BIN, LF_MODEL_DIR optional the lorafleet binary and the model's directory: with both, the
//                                logit_bias checks find token ids with `lorafleet tokenize`
// Run from tests/http (so that node_modules/openai resolves): node openai_sdk_test.mjs
//
// Prints one line per check ("ok N - what"), stops at the first failure ("not ok N - what" and the
// error, exit 1), ends with "N passed, 0 failed". No test framework: node:assert only. Node >= 18.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import OpenAI from 'openai';

function env(name, dflt) {
  const v = process.env[name];
  if (v === undefined || v === '') {
    if (dflt === undefined) {
      console.error(`openai_sdk_test: ${name} is not set (see the top of this file)`);
      process.exit(2);
    }
    return dflt;
  }
  return v;
}

const BASE_URL = env('LF_BASE_URL').replace(/\/+$/, '');
const MODEL = env('LF_MODEL');
const ADAPTER = env('LF_ADAPTER');
const CONTEXT = Number(env('LF_CONTEXT', '256'));
const ZMQ_TEXT_FILE = process.env.LF_ZMQ_TEXT_FILE || '';
const ZMQ_ADAPTER_TEXT_FILE = process.env.LF_ZMQ_ADAPTER_TEXT_FILE || '';
const ZMQ_PROMPT = env('LF_ZMQ_PROMPT', 'The quick brown fox');
const ZMQ_MAX_TOKENS = Number(env('LF_ZMQ_MAX_TOKENS', '24'));

// maxRetries 0: the SDK would otherwise retry 5xx/429 answers (the 504 check) with back-off.
const client = new OpenAI({ baseURL: BASE_URL + '/v1', apiKey: 'unused', maxRetries: 0, timeout: 60000 });

let passed = 0;
async function check(name, fn) {
  try {
    await fn();
  } catch (e) {
    console.log(`not ok ${passed + 1} - ${name}`);
    console.log(e && e.stack ? e.stack : String(e));
    if (e && e.status !== undefined) console.log(`  (status ${e.status}, error ${JSON.stringify(e.error)})`);
    console.log(`${passed} passed, 1 failed`);
    process.exit(1);
  }
  passed++;
  console.log(`ok ${passed} - ${name}`);
}

// Runs fn, which must throw; returns the error.
async function rejects(fn) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  assert.fail('the request succeeded; an error was expected');
}

function checkUsage(u, maxTokens, finishReason) {
  assert.ok(u, 'usage is present');
  assert.ok(Number.isInteger(u.prompt_tokens) && u.prompt_tokens > 0, `prompt_tokens ${u.prompt_tokens}`);
  assert.ok(Number.isInteger(u.completion_tokens) && u.completion_tokens > 0, `completion_tokens ${u.completion_tokens}`);
  assert.ok(u.completion_tokens <= maxTokens, `completion_tokens ${u.completion_tokens} <= max_tokens ${maxTokens}`);
  if (finishReason === 'length') assert.equal(u.completion_tokens, maxTokens, 'finish_reason length: completion_tokens == max_tokens');
  assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens, 'total_tokens = prompt_tokens + completion_tokens');
}

const PROMPT = 'Once upon a time, in a land far away,';
const CHAT = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Tell me a story about a dragon.' },
];
const N_TOKENS = 16;
const greedy = { model: MODEL, prompt: PROMPT, max_tokens: N_TOKENS, temperature: 0 };

let greedyText = '';
let greedyUsage = null;
await check('completions: non-streaming greedy completion (text, finish_reason, usage)', async () => {
  const r = await client.completions.create(greedy);
  assert.equal(r.object, 'text_completion');
  assert.ok(typeof r.id === 'string' && r.id.length > 0, 'id');
  assert.equal(r.model, MODEL);
  assert.equal(r.choices.length, 1);
  const c = r.choices[0];
  assert.equal(c.index, 0);
  assert.equal(typeof c.text, 'string');
  assert.ok(c.text.length > 0, 'text is not empty');
  assert.ok(['length', 'stop'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
  checkUsage(r.usage, N_TOKENS, c.finish_reason);
  greedyText = c.text;
  greedyUsage = r.usage;
  // greedy is deterministic
  const again = await client.completions.create(greedy);
  assert.equal(again.choices[0].text, greedyText, 'a second greedy request gives the same text');
});

await check('completions: streamed chunks concatenate to the greedy text; include_usage gives a usage chunk', async () => {
  const stream = await client.completions.create({ ...greedy, stream: true, stream_options: { include_usage: true } });
  let text = '', finish = null, usage = null, chunks = 0, afterUsage = 0;
  for await (const ch of stream) {
    chunks++;
    if (usage) afterUsage++;
    assert.equal(ch.object, 'text_completion');
    if (ch.usage) {
      usage = ch.usage;
      assert.equal(ch.choices.length, 0, 'the usage chunk has no choices');
      continue;
    }
    assert.equal(ch.usage ?? null, null, 'only the last chunk carries usage');
    for (const c of ch.choices) {
      assert.equal(c.index, 0);
      text += c.text ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(chunks >= 3, `several chunks (${chunks})`);
  assert.equal(text, greedyText, 'streamed text == non-streamed text');
  assert.ok(['length', 'stop'].includes(finish), `finish_reason ${finish}`);
  assert.ok(usage, 'a usage chunk arrived');
  assert.equal(afterUsage, 0, 'the usage chunk is the last one');
  assert.deepEqual(
    [usage.prompt_tokens, usage.completion_tokens, usage.total_tokens],
    [greedyUsage.prompt_tokens, greedyUsage.completion_tokens, greedyUsage.total_tokens],
    'streamed usage == non-streamed usage');
});

await check('completions: stream without include_usage has no usage chunk', async () => {
  const stream = await client.completions.create({ ...greedy, stream: true });
  let text = '';
  for await (const ch of stream) {
    assert.ok(!ch.usage, 'no usage without include_usage');
    for (const c of ch.choices) text += c.text ?? '';
  }
  assert.equal(text, greedyText);
});

await check('completions: stop string cuts the text before its first occurrence, finish_reason "stop"', async () => {
  // a seeded sample (the tiny random model's greedy text repeats one token); the stop string is its
  // third token, so the text before it is known
  const req = { model: MODEL, prompt: PROMPT, max_tokens: N_TOKENS, temperature: 1, seed: 5, ignore_eos: true };
  const full = await client.completions.create({ ...req, logprobs: 1 });
  const toks = full.choices[0].logprobs.tokens;
  assert.equal(toks.join(''), full.choices[0].text);
  const stop = toks.slice(2).find((t) => t.trim().length > 0);
  assert.ok(stop, `a non-blank token from the third on: ${JSON.stringify(toks)}`);
  const at = full.choices[0].text.indexOf(stop);
  const r = await client.completions.create({ ...req, stop: [stop, 'never-generated-zzzz'] });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.choices[0].text, full.choices[0].text.slice(0, at));
  assert.ok(r.usage.completion_tokens < N_TOKENS, 'fewer tokens than max_tokens');
});

await check('completions: user, seed, top_k/repetition_penalty extensions accepted; top_k 1 == greedy', async () => {
  const r = await client.completions.create({ ...greedy, temperature: 1, top_k: 1, repetition_penalty: 1.0, seed: 7, user: 'sdk-test' });
  assert.equal(r.choices[0].text, greedyText);
});

let chatText = '';
await check('chat: non-streaming greedy completion (message, finish_reason, usage)', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: CHAT, max_tokens: N_TOKENS, temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, MODEL);
  assert.equal(r.choices.length, 1);
  const c = r.choices[0];
  assert.equal(c.index, 0);
  assert.equal(c.message.role, 'assistant');
  assert.equal(typeof c.message.content, 'string');
  assert.ok(c.message.content.length > 0, 'content is not empty');
  assert.ok(['length', 'stop'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
  checkUsage(r.usage, N_TOKENS, c.finish_reason);
  chatText = c.message.content;
});

await check('chat: streaming (role in the first delta, content == non-streaming, usage chunk)', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL, messages: CHAT, max_tokens: N_TOKENS, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '', first = true, finish = null, usage = null;
  for await (const ch of stream) {
    assert.equal(ch.object, 'chat.completion.chunk');
    if (ch.usage) { usage = ch.usage; assert.equal(ch.choices.length, 0); continue; }
    for (const c of ch.choices) {
      if (first) { assert.equal(c.delta.role, 'assistant', 'the first delta carries the role'); first = false; }
      text += c.delta.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(first, false, 'at least one choice delta arrived');
  assert.equal(text, chatText);
  assert.ok(['length', 'stop'].includes(finish), `finish_reason ${finish}`);
  checkUsage(usage, N_TOKENS, finish);
});

await check('completions: n 3 gives 3 choices with indices 0..2', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 8, temperature: 1, n: 3 });
  assert.equal(r.choices.length, 3);
  assert.deepEqual(r.choices.map((c) => c.index).sort(), [0, 1, 2]);
  for (const c of r.choices) assert.ok(c.text.length > 0 && c.finish_reason, 'each choice has text and finish_reason');
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.ok(r.usage.completion_tokens <= 3 * 8 && r.usage.completion_tokens >= 3);
});

await check('chat: n 3 gives 3 choices with indices 0..2', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: CHAT, max_tokens: 8, n: 3 });
  assert.equal(r.choices.length, 3);
  assert.deepEqual(r.choices.map((c) => c.index).sort(), [0, 1, 2]);
  for (const c of r.choices) assert.equal(c.message.role, 'assistant');
});

await check('completions: streaming with n 2 (each index streams its text and finish_reason)', async () => {
  const stream = await client.completions.create({ ...greedy, n: 2, stream: true });
  const text = ['', ''], finish = [null, null];
  for await (const ch of stream) {
    for (const c of ch.choices) {
      assert.ok(c.index === 0 || c.index === 1, `index ${c.index}`);
      text[c.index] += c.text ?? '';
      if (c.finish_reason) finish[c.index] = c.finish_reason;
    }
  }
  assert.deepEqual(text, [greedyText, greedyText], 'greedy: both choices equal the greedy text');
  assert.ok(finish[0] && finish[1], 'both choices finished');
});

await check('completions: streaming with n 3 at temperature 1 and a seed: per-choice index and finish_reason, the same texts as unstreamed', async () => {
  const req = { model: MODEL, prompt: PROMPT, max_tokens: 8, temperature: 1, seed: 11, n: 3 };
  const whole = await client.completions.create(req);
  const stream = await client.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  const text = ['', '', ''], finish = [0, 0, 0];
  let usage = null;
  for await (const ch of stream) {
    if (ch.usage) usage = ch.usage;
    for (const c of ch.choices) {
      assert.ok([0, 1, 2].includes(c.index), `index ${c.index}`);
      assert.equal(finish[c.index], 0, `nothing after choice ${c.index}'s finish_reason`);
      text[c.index] += c.text ?? '';
      if (c.finish_reason) finish[c.index] = 1;
    }
  }
  assert.deepEqual(finish, [1, 1, 1], 'each choice ends with its own finish_reason');
  assert.deepEqual(text, whole.choices.map((c) => c.text), 'choice j streams what choice j of the same seeded request returns');
  assert.ok(new Set(text).size > 1, 'choices have seeds of their own (derived from seed and index)');
  assert.equal(usage.completion_tokens, whole.usage.completion_tokens, 'usage counts every choice');
});

await check('chat: streaming with n 2: chunks carry their choice index, each ends with finish_reason', async () => {
  const stream = await client.chat.completions.create({ model: MODEL, messages: CHAT, max_tokens: 6, temperature: 0, n: 2, stream: true });
  const text = ['', ''], finish = [null, null];
  for await (const ch of stream)
    for (const c of ch.choices) {
      text[c.index] += c.delta?.content ?? '';
      if (c.finish_reason) finish[c.index] = c.finish_reason;
    }
  assert.ok(finish[0] && finish[1], 'both finished');
  assert.equal(text[0], text[1], 'greedy: the same text');
});

// ---- logit_bias -------------------------------------------------------------------------------
const LF_BIN = process.env.LF_BIN || '', LF_MODEL_DIR = process.env.LF_MODEL_DIR || '';
function tokenIds(s) {
  return JSON.parse(execFileSync(LF_BIN, ['tokenize', '--model', LF_MODEL_DIR], { input: s }).toString());
}
if (LF_BIN && LF_MODEL_DIR) {
  await check('logit_bias: +100 on one token makes greedy output that token; -100 bans the greedy token', async () => {
    const first = await client.completions.create({ ...greedy, max_tokens: 1, logprobs: 1 });
    const greedyTok = first.choices[0].logprobs.tokens[0];
    const ids = tokenIds(greedyTok);
    assert.equal(ids.length, 1, `the greedy token ${JSON.stringify(greedyTok)} is one token`);
    // Banned: greedy picks something else. Reported logprobs are the model's, without the bias
    // (OpenAI's API since 2024), so the banned token still ranks first among them.
    const banned = await client.completions.create({ ...greedy, max_tokens: 1, logprobs: 1, logit_bias: { [ids[0]]: -100 } });
    assert.notEqual(banned.choices[0].logprobs.tokens[0], greedyTok, 'the banned token is not produced');
    assert.ok(greedyTok in banned.choices[0].logprobs.top_logprobs[0], 'logprobs are unbiased: it still ranks first');
    // Forced: a token the model would not pick, every step.
    const forced = tokenIds(' dog');
    assert.equal(forced.length, 1);
    const f = await client.completions.create({ ...greedy, max_tokens: 4, logit_bias: { [forced[0]]: 100 } });
    assert.equal(f.choices[0].text, ' dog'.repeat(4));
    // Sampled too, and in chat.
    const s = await client.completions.create({ ...greedy, temperature: 1, seed: 5, max_tokens: 3, logit_bias: { [forced[0]]: 100 } });
    assert.equal(s.choices[0].text, ' dog'.repeat(3));
    const c = await client.chat.completions.create({ model: MODEL, messages: CHAT, max_tokens: 2, temperature: 0, logit_bias: { [forced[0]]: 100 } });
    assert.equal(c.choices[0].message.content, ' dog'.repeat(2));
  });
}

await check('logit_bias: bad keys, values out of [-100, 100] and ids outside the vocabulary -> 400 naming logit_bias', async () => {
  for (const lb of [{ x: 1 }, { 5: 101 }, { 5: -100.5 }, { 99999999: 1 }]) {
    const e = await rejects(() => client.completions.create({ ...greedy, logit_bias: lb }));
    assert.ok(e instanceof OpenAI.BadRequestError, `${JSON.stringify(lb)}: BadRequestError, got ${e}`);
    assert.equal(e.param, 'logit_bias', JSON.stringify(lb));
  }
});

// ---- echo -------------------------------------------------------------------------------------
await check('echo: the text starts with the prompt (whole and streamed); max_tokens 0 returns the prompt alone', async () => {
  const r = await client.completions.create({ ...greedy, echo: true });
  assert.equal(r.choices[0].text, PROMPT + greedyText);
  const stream = await client.completions.create({ ...greedy, echo: true, stream: true });
  const chunks = [];
  for await (const ch of stream) for (const c of ch.choices) if (c.text) chunks.push(c.text);
  assert.equal(chunks[0], PROMPT, 'the prompt is the first chunk');
  assert.equal(chunks.join(''), PROMPT + greedyText);
  const z = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 0, echo: true });
  assert.equal(z.choices[0].text, PROMPT);
  assert.equal(z.choices[0].finish_reason, 'length');
  assert.equal(z.usage.completion_tokens, 0);
  assert.equal(z.usage.prompt_tokens, greedyUsage.prompt_tokens);
  const zs = await client.completions.create({ model: MODEL, prompt: [PROMPT, 'Hi'], max_tokens: 0, echo: true, stream: true });
  const got = ['', ''];
  for await (const ch of zs) for (const c of ch.choices) got[c.index] += c.text ?? '';
  assert.deepEqual(got, [PROMPT, 'Hi']);
  const e = await rejects(() => client.completions.create({ ...greedy, echo: true, logprobs: 1 }));
  assert.equal(e.status, 400);
  assert.equal(e.param, 'echo');
  const m0 = await rejects(() => client.completions.create({ ...greedy, max_tokens: 0 }));
  assert.equal(m0.param, 'max_tokens');
});

await check('completions: logprobs 2 (tokens, token_logprobs, top_logprobs, text_offset)', async () => {
  const r = await client.completions.create({ ...greedy, logprobs: 2 });
  const c = r.choices[0], lp = c.logprobs;
  assert.equal(c.text, greedyText, 'logprobs do not change the greedy text');
  const n = r.usage.completion_tokens;
  assert.ok(lp, 'logprobs present');
  assert.equal(lp.tokens.length, n, 'tokens: one per completion token');
  assert.equal(lp.token_logprobs.length, n);
  assert.equal(lp.top_logprobs.length, n);
  assert.equal(lp.tokens.join(''), c.text, 'tokens concatenate to the text');
  if (lp.text_offset) {
    assert.equal(lp.text_offset.length, n);
    let off = lp.text_offset[0];
    for (let i = 0; i < n; i++) { assert.equal(lp.text_offset[i], off); off += lp.tokens[i].length; }
  }
  for (let i = 0; i < n; i++) {
    const v = lp.token_logprobs[i];
    assert.ok(typeof v === 'number' && Number.isFinite(v) && v <= 0, `token_logprobs[${i}] = ${v} <= 0`);
    const top = lp.top_logprobs[i];
    const vals = Object.values(top);
    // two alternatives (a dict: two tokens decoding to the same string would merge)
    assert.ok(vals.length >= 1 && vals.length <= 2, `top_logprobs[${i}] has 1..2 entries: ${JSON.stringify(top)}`);
    for (const x of vals) assert.ok(Number.isFinite(x) && x <= 0, `top logprob ${x} <= 0`);
    // greedy: the chosen token is the most likely one
    assert.ok(Math.abs(Math.max(...vals) - v) < 1e-4, `greedy token ${i} is the top-1 (${v} vs ${JSON.stringify(top)})`);
    assert.ok(lp.tokens[i] in top, `the chosen token ${JSON.stringify(lp.tokens[i])} is in top_logprobs[${i}]`);
  }
});

await check('chat: logprobs true, top_logprobs 2 (token, logprob, bytes, top_logprobs sorted)', async () => {
  const r = await client.chat.completions.create({
    model: MODEL, messages: CHAT, max_tokens: N_TOKENS, temperature: 0, logprobs: true, top_logprobs: 2,
  });
  const c = r.choices[0];
  assert.equal(c.message.content, chatText, 'logprobs do not change the greedy text');
  const content = c.logprobs && c.logprobs.content;
  assert.ok(Array.isArray(content), 'logprobs.content is an array');
  assert.equal(content.length, r.usage.completion_tokens, 'one entry per completion token');
  const bytes = [];
  for (const [i, e] of content.entries()) {
    assert.equal(typeof e.token, 'string');
    assert.ok(Number.isFinite(e.logprob) && e.logprob <= 0, `logprob[${i}] ${e.logprob} <= 0`);
    assert.ok(Array.isArray(e.bytes) && e.bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255), 'bytes');
    bytes.push(...e.bytes);
    assert.equal(e.top_logprobs.length, 2, `top_logprobs[${i}] has 2 entries`);
    for (const t of e.top_logprobs) {
      assert.equal(typeof t.token, 'string');
      assert.ok(Number.isFinite(t.logprob) && t.logprob <= 0);
      assert.ok(Array.isArray(t.bytes));
    }
    assert.ok(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob, `top_logprobs[${i}] sorted descending`);
    assert.ok(Math.abs(e.top_logprobs[0].logprob - e.logprob) < 1e-4, `greedy token ${i} is the top-1`);
  }
  assert.equal(Buffer.from(bytes).toString('utf8'), c.message.content, 'the bytes decode to the content');
});

await check('chat: streaming with logprobs carries logprobs.content in the deltas', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL, messages: CHAT, max_tokens: N_TOKENS, temperature: 0, logprobs: true, top_logprobs: 2, stream: true,
  });
  let text = '', entries = 0;
  for await (const ch of stream) {
    for (const c of ch.choices) {
      text += c.delta.content ?? '';
      if (c.logprobs && c.logprobs.content) {
        for (const e of c.logprobs.content) { assert.equal(e.top_logprobs.length, 2); entries++; }
      }
    }
  }
  assert.equal(text, chatText);
  assert.ok(entries >= 1 && entries <= N_TOKENS, `logprob entries ${entries}`);
});

await check('seed: same seed at temperature 1 reproduces the text; different seeds differ', async () => {
  const req = { model: MODEL, prompt: PROMPT, max_tokens: 32, temperature: 1, ignore_eos: true };
  const a = (await client.completions.create({ ...req, seed: 1234 })).choices[0].text;
  const b = (await client.completions.create({ ...req, seed: 1234 })).choices[0].text;
  assert.equal(b, a, 'same seed, same text');
  const others = [];
  for (const s of [1, 2, 3]) others.push((await client.completions.create({ ...req, seed: s })).choices[0].text);
  assert.ok(others.some((t) => t !== a), 'some other seed gives a different text');
  assert.ok(new Set(others).size >= 2, 'seeds 1, 2, 3 do not all give the same text');
  // chat too
  const creq = { model: MODEL, messages: CHAT, max_tokens: 32, temperature: 1, seed: 99 };
  const c1 = (await client.chat.completions.create(creq)).choices[0].message.content;
  const c2 = (await client.chat.completions.create(creq)).choices[0].message.content;
  assert.equal(c2, c1, 'chat: same seed, same text');
});

await check('adapter: the adapter as model works and changes the greedy text', async () => {
  const r = await client.completions.create({ ...greedy, model: ADAPTER });
  assert.equal(r.model, ADAPTER);
  assert.ok(r.choices[0].text.length > 0);
  assert.notEqual(r.choices[0].text, greedyText, 'adapter greedy text != base greedy text');
  const again = await client.completions.create({ ...greedy, model: ADAPTER });
  assert.equal(again.choices[0].text, r.choices[0].text, 'adapter greedy text is deterministic');
  const chat = await client.chat.completions.create({ model: ADAPTER, messages: CHAT, max_tokens: N_TOKENS, temperature: 0 });
  assert.notEqual(chat.choices[0].message.content, chatText, 'adapter chat text != base chat text');
});

await check('models.list(): holds the base model and the adapter', async () => {
  const ids = [];
  for await (const m of client.models.list()) {
    assert.equal(m.object, 'model');
    ids.push(m.id);
  }
  assert.ok(ids.includes(MODEL), `${MODEL} in ${JSON.stringify(ids)}`);
  assert.ok(ids.includes(ADAPTER), `${ADAPTER} in ${JSON.stringify(ids)}`);
});

await check('models.retrieve(): the base model, the adapter (parent), NotFoundError for an unknown id', async () => {
  const m = await client.models.retrieve(MODEL);
  assert.equal(m.id, MODEL);
  assert.equal(m.object, 'model');
  const a = await client.models.retrieve(ADAPTER);
  assert.equal(a.id, ADAPTER);
  assert.equal(a.parent, MODEL);
  const e = await rejects(() => client.models.retrieve('no-such-model'));
  assert.ok(e instanceof OpenAI.NotFoundError, `NotFoundError, got ${e}`);
  assert.equal(e.status, 404);
  assert.equal(e.code, 'model_not_found');
});

// The `lorafleet client --no-stream` output: the text and one newline.
function readClientText(file) {
  const t = readFileSync(file, 'utf8');
  assert.ok(t.endsWith('\n'), `${file}: the client output ends with a newline`);
  assert.ok(t.length > 1, `${file}: the ZeroMQ text is not empty`);
  return t.slice(0, -1);
}
for (const [file, model] of [[ZMQ_TEXT_FILE, MODEL], [ZMQ_ADAPTER_TEXT_FILE, ADAPTER]]) {
  if (!file) continue;
  await check(`ZeroMQ and HTTP give the same greedy text (model ${model}, ${ZMQ_MAX_TOKENS} tokens)`, async () => {
    const zmq = readClientText(file);
    const r = await client.completions.create({ model, prompt: ZMQ_PROMPT, max_tokens: ZMQ_MAX_TOKENS, temperature: 0 });
    assert.equal(r.choices[0].text, zmq);
    let streamed = '';
    for await (const ch of await client.completions.create({ model, prompt: ZMQ_PROMPT, max_tokens: ZMQ_MAX_TOKENS, temperature: 0, stream: true })) {
      for (const c of ch.choices) streamed += c.text ?? '';
    }
    assert.equal(streamed, zmq, 'streamed too');
  });
}

// ---- errors -----------------------------------------------------------------------------------
for (const [field, extra] of [['echo', { echo: true, logprobs: 1 }], ['foo', { foo: 1 }], ['frequency_penalty', { frequency_penalty: 0.5 }]]) {
  await check(`errors: ${JSON.stringify(extra)} -> BadRequestError 400 naming the parameter`, async () => {
    const e = await rejects(() => client.completions.create({ ...greedy, ...extra }));
    assert.ok(e instanceof OpenAI.BadRequestError, `BadRequestError, got ${e && e.constructor && e.constructor.name}: ${e}`);
    assert.equal(e.status, 400);
    assert.equal(e.param, field);
    assert.equal(e.type, 'invalid_request_error');
  });
}

await check('errors: unknown chat parameter (via request options body) -> BadRequestError 400', async () => {
  const e = await rejects(() => client.chat.completions.create(
    { model: MODEL, messages: CHAT, max_tokens: 4 }, { body: { model: MODEL, messages: CHAT, max_tokens: 4, foo: 1 } }));
  assert.ok(e instanceof OpenAI.BadRequestError, `BadRequestError, got ${e}`);
  assert.equal(e.status, 400);
  assert.equal(e.param, 'foo');
});

await check('errors: unknown model -> NotFoundError 404, code unknown_adapter (also when streaming)', async () => {
  const e = await rejects(() => client.completions.create({ ...greedy, model: 'no-such-model' }));
  assert.ok(e instanceof OpenAI.NotFoundError, `NotFoundError, got ${e}`);
  assert.equal(e.status, 404);
  assert.equal(e.code, 'unknown_adapter');
  const e2 = await rejects(async () => {
    const s = await client.chat.completions.create({ model: 'no-such-model', messages: CHAT, max_tokens: 4, stream: true });
    for await (const _ of s) { /* drain */ }
  });
  assert.ok(e2 instanceof OpenAI.NotFoundError, `streaming: NotFoundError, got ${e2}`);
  assert.equal(e2.status, 404);
});

await check(`errors: prompt + max_tokens beyond the context window (${CONTEXT}) -> BadRequestError 400`, async () => {
  const n = greedyUsage.prompt_tokens;
  // exactly the window is fine
  const ok = await client.completions.create({ ...greedy, max_tokens: CONTEXT - n });
  assert.ok(ok.usage.completion_tokens >= 1 && ok.usage.completion_tokens <= CONTEXT - n);
  const e = await rejects(() => client.completions.create({ ...greedy, max_tokens: CONTEXT - n + 1 }));
  assert.ok(e instanceof OpenAI.BadRequestError, `BadRequestError, got ${e}`);
  assert.equal(e.status, 400);
  assert.equal(e.code, 'prompt_too_long');
  assert.match(e.message, /context window/, 'the message names the context window');
  const e2 = await rejects(() => client.chat.completions.create({ model: MODEL, messages: CHAT, max_tokens: CONTEXT }));
  assert.ok(e2 instanceof OpenAI.BadRequestError, `chat: BadRequestError, got ${e2}`);
  assert.equal(e2.status, 400);
  const e3 = await rejects(() => client.completions.create({ ...greedy, max_tokens: 100000 }));
  assert.ok(e3 instanceof OpenAI.BadRequestError, `max_tokens 100000: BadRequestError, got ${e3}`);
  assert.equal(e3.status, 400);
});

await check('errors: deadline_ms 1 on a long ignore_eos generation -> APIError 504', async () => {
  const e = await rejects(() => client.completions.create({ ...greedy, max_tokens: 200, ignore_eos: true, deadline_ms: 1 }));
  assert.ok(e instanceof OpenAI.APIError, `APIError, got ${e}`);
  assert.ok(e instanceof OpenAI.InternalServerError, 'the SDK maps 5xx to InternalServerError');
  assert.equal(e.status, 504);
  assert.equal(e.code, 'timeout');
});

await check('errors: a deadline passed while streaming surfaces as an APIError from the stream', async () => {
  const e = await rejects(async () => {
    const s = await client.completions.create({ ...greedy, max_tokens: 200, ignore_eos: true, deadline_ms: 1, stream: true });
    for await (const _ of s) { /* drain */ }
  });
  assert.ok(e instanceof OpenAI.APIError, `APIError, got ${e}`);
  assert.ok(e.status === 504 || e.code === 'timeout', `status 504 or error code timeout: ${e.status} ${e.code}`);
});

await check('errors: a body over 1 MiB -> APIError 413', async () => {
  const e = await rejects(() => client.completions.create({ ...greedy, prompt: 'hello '.repeat(200000) }));
  assert.ok(e instanceof OpenAI.APIError, `APIError, got ${e}`);
  assert.ok(!(e instanceof OpenAI.APIConnectionError), `an HTTP answer, not a connection error: ${e}`);
  assert.equal(e.status, 413);
});

await check('the gateway still serves after the errors', async () => {
  const r = await client.completions.create(greedy);
  assert.equal(r.choices[0].text, greedyText);
});

console.log(`${passed} passed, 0 failed`);
