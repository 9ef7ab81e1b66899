// vLLM's spellings through the official OpenAI Node SDK (openai v4) against the lorafleet HTTP
// gateway: guided_* and structured_outputs as a vLLM client sends them (the Node SDK passes
// parameters it does not know into the body as given: Python's `extra_body`), every output
// checked against its constraint (RegExp, JSON.parse and ajv), refusals, and vLLM's
// POST /tokenize and /detokenize compared with `lorafleet tokenize`.
// Environment (vllm_compat.sh sets it): LF_BASE_URL, LF_KEY, LF_MODEL, LF_ADAPTER, LF_CONTEXT,
// LF_BIN, LF_MODEL_DIR. Run from tests/http: node vllm_compat_test.mjs. Prints "ok N - what";
// exits 1 at a failure.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import Ajv from 'ajv';
import OpenAI from 'openai';

const BASE_URL = process.env.LF_BASE_URL.replace(/\/+$/, '');
const MODEL = process.env.LF_MODEL;
const ADAPTER = process.env.LF_ADAPTER;
const CONTEXT = Number(process.env.LF_CONTEXT || '512');
const options = { apiKey: process.env.LF_KEY, maxRetries: 0, timeout: 120000 };
const client = new OpenAI({ baseURL: `${BASE_URL}/v1`, ...options });
// vLLM serves its tokenizer endpoints at the root, without /v1: the same SDK, another base URL.
const root = new OpenAI({ baseURL: BASE_URL, ...options });
const ajv = new Ajv({ strict: false });

let passed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed += 1;
    console.log(`ok ${passed} - ${name}`);
  } catch (e) {
    console.log(`not ok ${passed + 1} - ${name}`);
    if (e instanceof OpenAI.APIError) console.log(`  (status ${e.status}, error ${JSON.stringify(e.error)})`);
    console.log(e);
    process.exit(1);
  }
}

// The request with vLLM's extra fields (Python: create(..., extra_body=extra)).
const withExtra = (params, extra) => ({ ...params, ...extra });
const chat = (extra, model = MODEL) => client.chat.completions.create(withExtra({
  model, messages: [{ role: 'user', content: 'Answer in the format asked.' }], max_tokens: 300 }, extra));
const complete = (extra, model = MODEL) => client.completions.create(withExtra({
  model, prompt: 'Output:', max_tokens: 300 }, extra));
const textOf = (c) => (c.message ? c.message.content : c.text);

const pet = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    kind: { enum: ['cat', 'dog', 'bird'] },
    age: { type: 'integer' },
    tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 3 },
  },
  required: ['name', 'kind', 'age', 'tags'],
  additionalProperties: false,
};
const choices = ['positive', 'negative', 'neutral'];
const regex = '[A-Z][a-z]{2,6} \\d{4}';
const grammar = 'root ::= "(" num ("," num){0,3} ")"\nnum ::= [0-9]{1,3}';
const grammarAsRegex = /^\(\d{1,3}(,\d{1,3}){0,3}\)$/;

function satisfies(text, kind) {
  switch (kind) {
    case 'choice': assert.ok(choices.includes(text), text); break;
    case 'regex': assert.match(text, new RegExp(`^(?:${regex})$`, 'u')); break;
    case 'grammar': assert.match(text, grammarAsRegex); break;
    case 'json': {
      const validate = ajv.compile(pet);
      assert.ok(validate(JSON.parse(text)), `${text}: ${JSON.stringify(validate.errors)}`);
      break;
    }
    case 'json_object': JSON.parse(text); break;
    default: assert.fail(kind);
  }
}

const cases = [
  ['guided_choice', { guided_choice: choices }, 'choice'],
  ['guided_regex', { guided_regex: regex }, 'regex'],
  ['guided_json (an object)', { guided_json: pet }, 'json'],
  ['guided_json (a string)', { guided_json: JSON.stringify(pet) }, 'json'],
  ['guided_grammar', { guided_grammar: grammar }, 'grammar'],
  ['structured_outputs.choice', { structured_outputs: { choice: choices } }, 'choice'],
  ['structured_outputs.regex', { structured_outputs: { regex } }, 'regex'],
  ['structured_outputs.json (an object)', { structured_outputs: { json: pet } }, 'json'],
  ['structured_outputs.json (a string)', { structured_outputs: { json: JSON.stringify(pet) } }, 'json'],
  ['structured_outputs.grammar', { structured_outputs: { grammar } }, 'grammar'],
  ['structured_outputs.json_object', { structured_outputs: { json_object: true } }, 'json_object'],
];

for (const [name, extra, kind] of cases) {
  await check(`${name}: chat and completions, base and adapter, greedy and sampled satisfy it`, async () => {
    let i = 0;
    for (const f of [chat, complete]) {
      for (const model of [MODEL, ADAPTER]) {
        const temperature = i++ % 2 ? 1 : 0;
        const r = await f(withExtra(extra, { temperature, seed: 7 }), model);
        const c = r.choices[0];
        // Any JSON value may be a string or an array that runs on: cut by max_tokens, as OpenAI's.
        if (kind === 'json_object' && c.finish_reason === 'length') continue;
        assert.equal(c.finish_reason, 'stop', `${JSON.stringify(textOf(c))} (temperature ${temperature}, ${model})`);
        satisfies(textOf(c), kind);
      }
    }
  });
}

await check('a streamed guided_choice chat gives the same text as not streamed', async () => {
  const whole = await chat({ temperature: 0, guided_choice: choices });
  const stream = await chat({ temperature: 0, guided_choice: choices, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, whole.choices[0].message.content);
});

await check('guided_decoding_backend and structured_outputs.disable_fallback are accepted and change nothing', async () => {
  const plain = await complete({ temperature: 0, guided_regex: regex });
  const backend = await complete({ temperature: 0, guided_regex: regex, guided_decoding_backend: 'xgrammar' });
  const fallback = await complete({ temperature: 0, structured_outputs: { regex, disable_fallback: true } });
  assert.equal(backend.choices[0].text, plain.choices[0].text);
  assert.equal(fallback.choices[0].text, plain.choices[0].text);
});

async function refused(extra, param, text) {
  try {
    await chat(extra);
  } catch (e) {
    assert.equal(e.status, 400, `status ${e.status}`);
    assert.equal(e.param, param);
    assert.match(e.message, text);
    return;
  }
  assert.fail(`accepted: ${JSON.stringify(extra)}`);
}

await check('two constraints are refused naming both fields; bad values name the field and the problem', async () => {
  await refused({ guided_regex: 'a', response_format: { type: 'json_schema', json_schema: { name: 'x', schema: pet } } },
                'guided_regex', /at most one constraint.*\(got response_format and guided_regex\)/);
  await refused({ guided_choice: ['a'], guided_json: pet }, 'guided_json', /guided_choice and guided_json/);
  await refused({ guided_json: pet, structured_outputs: { json: pet } }, 'structured_outputs.json',
                /guided_json and structured_outputs\.json/);
  await refused({ structured_outputs: { regex: 'a', choice: ['a'] } }, 'structured_outputs.regex',
                /structured_outputs\.choice and structured_outputs\.regex/);
  await refused({ guided_regex: 'a(b' }, 'guided_regex', /invalid guided_regex: .*missing '\)'/);
  await refused({ guided_json: { type: 'string', pattern: 'a+' } }, 'guided_json', /unsupported keyword `pattern`/);
  await refused({ guided_json: '{"type": ' }, 'guided_json', /not JSON/);
  await refused({ guided_choice: [] }, 'guided_choice', /non-empty/);
  await refused({ guided_grammar: 'root ::= root "a" | "b"' }, 'guided_grammar', /left-recursive/);
  await refused({ structured_outputs: { grammar: 'root ::= nope' } }, 'structured_outputs.grammar', /invalid structured_outputs\.grammar/);
  await refused({ structured_outputs: { structural_tag: '{}' } }, 'structured_outputs.structural_tag', /not supported/);
  await refused({ guided_json: pet, guided_whitespace_pattern: '[\\n ]*' }, 'guided_whitespace_pattern', /not supported/);
  await refused({ structured_outputs: { json: pet, disable_any_whitespace: true } },
                'structured_outputs.disable_any_whitespace', /not supported/);
});

// `lorafleet tokenize` on the served model's directory: the reference for /tokenize.
const cliEncode = (text) => JSON.parse(execFileSync(process.env.LF_BIN, ['tokenize', '--model', process.env.LF_MODEL_DIR],
  { input: text }).toString());
const cliDecode = (ids) => execFileSync(process.env.LF_BIN, ['tokenize', '--model', process.env.LF_MODEL_DIR, '--decode'],
  { input: JSON.stringify(ids) }).toString();
const texts = ['Hello world', 'Once upon a time, na\u00efve caf\u00e9s \ud83d\ude00\n\ttabs  and  spaces',
  'a<|endoftext|>b', '', '  leading and trailing  ', '1234567890 + 0.5e-3 = ?'];

await check('/tokenize equals `lorafleet tokenize`; /detokenize gives the text back (both with the model or none)', async () => {
  for (const [i, text] of texts.entries()) {
    const model = [MODEL, ADAPTER, undefined][i % 3];
    const t = await root.post('/tokenize', { body: { model, prompt: text } });
    assert.deepEqual(t.tokens, cliEncode(text), text);
    assert.equal(t.count, t.tokens.length);
    assert.equal(t.max_model_len, CONTEXT);
    assert.equal(t.token_strs, undefined);
    const d = await root.post('/detokenize', { body: { model, tokens: t.tokens } });
    assert.equal(d.prompt, text);
    assert.equal(d.prompt, cliDecode(t.tokens));
  }
});

await check('/tokenize counts what the completions count as prompt_tokens (the chat template included)', async () => {
  const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Where is the gold?' },
    { role: 'assistant', content: 'Under the tree.' }, { role: 'user', content: 'Which tree?' }];
  const c = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 1 });
  const t = await root.post('/tokenize', { body: { model: MODEL, messages } });
  assert.equal(t.count, c.usage.prompt_tokens);
  const bare = await root.post('/tokenize', { body: { messages, add_generation_prompt: false } });
  assert.deepEqual(bare.tokens, cliEncode('Be brief.\n\nUser: Where is the gold?\nAssistant: Under the tree.\nUser: Which tree?\n'));
  const p = await client.completions.create({ model: ADAPTER, prompt: texts[1], max_tokens: 1 });
  const q = await root.post('/tokenize', { body: { model: ADAPTER, prompt: texts[1], add_special_tokens: true } });
  assert.equal(q.count, p.usage.prompt_tokens);
});

await check('return_token_strs: the vocabulary\'s spelling of each token', async () => {
  const t = await root.post('/tokenize', { body: { prompt: 'Hello world', return_token_strs: true } });
  assert.deepEqual(t.tokens, [15496, 995]);
  assert.deepEqual(t.token_strs, ['Hello', '\u0120world']);
});

async function tokenizerRefused(path, body, status, param, text) {
  try {
    await root.post(path, { body });
  } catch (e) {
    assert.equal(e.status, status, `status ${e.status}`);
    if (param) assert.equal(e.param, param);
    assert.match(e.message, text);
    return;
  }
  assert.fail(`accepted: ${path} ${JSON.stringify(body)}`);
}

await check('/tokenize and /detokenize refuse ids outside the vocabulary, unknown fields and unknown models', async () => {
  await tokenizerRefused('/detokenize', { tokens: [15496, 50257] }, 400, 'tokens', /tokens\[1\]: token id 50257 is outside the vocabulary/);
  await tokenizerRefused('/detokenize', { tokens: [-3] }, 400, 'tokens', /token id -3/);
  await tokenizerRefused('/tokenize', { prompt: 'x', continue_final_message: true }, 400, 'continue_final_message', /unknown/);
  await tokenizerRefused('/tokenize', { prompt: 'x', messages: [{ role: 'user', content: 'x' }] }, 400, 'messages', /either/);
  await tokenizerRefused('/tokenize', { messages: [{ role: 'tool', content: 'x' }] }, 400, 'messages[0].role', /role/);
  await tokenizerRefused('/tokenize', { model: 'no-such-model', prompt: 'x' }, 404, 'model', /does not exist/);
});

console.log(`${passed} passed, 0 failed`);
