// Structured outputs through the official OpenAI Node SDK (openai v4) against the lorafleet HTTP
// gateway, checked with JSON.parse and the ajv JSON-schema validator (and RegExp for regexes).
// Environment (structured.sh sets it): LF_BASE_URL, LF_MODEL, LF_ADAPTER, LF_CONTEXT.
// Run from tests/http: node structured_test.mjs. Prints "ok N - what"; exits 1 at a failure.
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import OpenAI from 'openai';

const BASE_URL = process.env.LF_BASE_URL.replace(/\/+$/, '');
const MODEL = process.env.LF_MODEL;
const ADAPTER = process.env.LF_ADAPTER;
const CONTEXT = Number(process.env.LF_CONTEXT || '512');
const client = new OpenAI({ baseURL: `${BASE_URL}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120000 });
const ajv = new Ajv({ strict: false });

let passed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed += 1;
    console.log(`ok ${passed} - ${name}`);
  } catch (e) {
    console.log(`not ok ${passed + 1} - ${name}`);
    if (e && e.status !== undefined) console.log(`  (status ${e.status}, error ${JSON.stringify(e.error)})`);
    console.log(e);
    process.exit(1);
  }
}

// A seeded generator (mulberry32), so the random sets are the same every run.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Schemas whose every output is bounded (strings with maxLength, arrays with maxItems), so every
// request can finish within the context whatever the random model prefers.
function randomSchema(r, depth, defs) {
  const pick = (n) => Math.floor(r() * n);
  switch (depth > 2 ? pick(6) : pick(10)) {
    case 0: return { type: 'string', maxLength: pick(6) };
    case 1: return { type: 'number' };
    case 2: return { type: 'integer' };
    case 3: return { type: pick(2) ? 'boolean' : 'null' };
    case 4: return { enum: [...new Set(Array.from({ length: 1 + pick(4) }, () => (pick(3) ? `v${pick(100)}` : pick(50) - 25)))] };  // distinct, as JSON Schema requires
    case 5: return { const: pick(2) ? 'c"q\\' : { x: 1 } };
    case 6:
    case 7: {
      const properties = {}; const required = [];
      const n = 1 + pick(4);
      for (let i = 0; i < n; i++) {
        const name = `p${i}${pick(4) === 0 ? ' é"' : ''}`;
        properties[name] = randomSchema(r, depth + 1, defs);
        if (pick(3)) required.push(name);
      }
      return { type: 'object', properties, required, additionalProperties: false };
    }
    case 8: return { type: 'array', items: randomSchema(r, depth + 1, defs), maxItems: 1 + pick(3) };
    default: {
      if (pick(2)) {
        const name = `d${Object.keys(defs).length}`;
        defs[name] = {};
        defs[name] = randomSchema(r, depth + 1, defs);
        return { $ref: `#/$defs/${name}` };
      }
      return { anyOf: [randomSchema(r, depth + 1, defs), randomSchema(r, depth + 1, defs)] };
    }
  }
}

function randomRegex(r, depth) {
  const pick = (n) => Math.floor(r() * n);
  let out = '';
  const parts = 1 + pick(4);
  for (let p = 0; p < parts; p++) {
    let atom;
    switch (depth > 1 ? pick(5) : pick(7)) {
      case 0: atom = String.fromCharCode(97 + pick(26)); break;
      case 1: atom = pick(2) ? '[a-f0-9]' : '[xyz_ ]'; break;
      case 2: atom = pick(3) === 0 ? '\\d' : pick(2) ? '\\w' : '\\.'; break;
      case 3: atom = pick(2) ? '[A-Z]' : '-'; break;
      case 4: atom = '[^"\\n]'; break;
      case 5: atom = `(${randomRegex(r, depth + 1)}|${randomRegex(r, depth + 1)})`; break;
      default: atom = `(?:${randomRegex(r, depth + 1)})`; break;
    }
    switch (pick(4)) {
      case 0: atom += '?'; break;
      case 1: atom += `{${pick(3)},${3 + pick(3)}}`; break;
      default: break;
    }
    out += atom;
  }
  return out;
}

const chat = (extra, model = MODEL) => client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'Give me some JSON.' }], max_tokens: 300, ...extra });
const complete = (extra, model = MODEL) => client.completions.create({
  model, prompt: 'Output:', max_tokens: 300, ...extra });

async function refused(extra, param, text) {
  try {
    await chat(extra);
  } catch (e) {
    assert.equal(e.status, 400, `status ${e.status}`);
    if (param) assert.equal(e.param, param);
    if (text) assert.match(e.message, text);
    return;
  }
  assert.fail(`accepted: ${JSON.stringify(extra)}`);
}

const typical = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    kind: { enum: ['cat', 'dog', 'bird'] },
    age: { type: 'integer' },
    score: { type: 'number' },
    tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 3 },
    owner: { type: 'object', properties: { id: { type: 'integer' }, vip: { type: 'boolean' } },
             required: ['id', 'vip'], additionalProperties: false },
  },
  required: ['name', 'kind', 'age', 'score', 'tags', 'owner'],
  additionalProperties: false,
};

await check('json_schema (strict) on chat: JSON.parse reads it and ajv accepts it', async () => {
  const validate = ajv.compile(typical);
  for (const temperature of [0, 1]) {
    const r = await chat({ temperature, seed: 5,
      response_format: { type: 'json_schema', json_schema: { name: 'pet', schema: typical, strict: true } } });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'stop', c.message.content);
    const v = JSON.parse(c.message.content);
    assert.ok(validate(v), `${c.message.content}: ${JSON.stringify(validate.errors)}`);
  }
});

await check('json_object on chat and completions: one JSON value (or length with a cut one)', async () => {
  for (const f of [chat, complete]) {
    const r = await f({ temperature: 0, response_format: { type: 'json_object' } });
    const c = r.choices[0];
    const text = c.message ? c.message.content : c.text;
    if (c.finish_reason === 'stop') JSON.parse(text);
    else assert.equal(c.finish_reason, 'length');
  }
});

await check('streaming a json_schema chat gives the same JSON as not streaming', async () => {
  const rf = { type: 'json_schema', json_schema: { name: 'pet', schema: typical } };
  const whole = await chat({ temperature: 0, response_format: rf });
  const stream = await chat({ temperature: 0, response_format: rf, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, whole.choices[0].message.content);
  assert.ok(ajv.validate(typical, JSON.parse(text)));
});

await check('regex, choice and grammar extensions', async () => {
  const re = await complete({ temperature: 0.9, seed: 3, regex: '[A-Z][a-z]{2,6} \\d{4}' });
  assert.match(re.choices[0].text, /^[A-Z][a-z]{2,6} \d{4}$/);
  const ch = await chat({ temperature: 0, choice: ['positive', 'negative', 'neutral'] });
  assert.ok(['positive', 'negative', 'neutral'].includes(ch.choices[0].message.content));
  const gr = await complete({ temperature: 1, seed: 9,
    grammar: 'root ::= "(" num ("," num){0,3} ")"\nnum ::= [0-9]{1,3}' });
  assert.match(gr.choices[0].text, /^\(\d{1,3}(,\d{1,3}){0,3}\)$/);
});

await check('max_tokens cuts a constrained output with finish_reason length', async () => {
  const r = await chat({ temperature: 0, max_tokens: 3,
    response_format: { type: 'json_schema', json_schema: { name: 'pet', schema: typical } } });
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.ok(r.choices[0].message.content.startsWith('{') || r.choices[0].message.content.trim().startsWith('{'));
});

await check('200 seeded random schemas and regexes, base and adapter, greedy and sampled: all valid', async () => {
  const r = rng(20261126);
  const jobs = [];
  for (let i = 0; i < 200; i++) {
    const model = i % 2 ? ADAPTER : MODEL;
    const temperature = (i >> 1) % 2 ? 1.0 : 0;
    if (i < 100) {
      const defs = {};
      const schema = randomSchema(r, 0, defs);
      if (Object.keys(defs).length) schema.$defs = defs;
      jobs.push({ kind: 'schema', schema, model, temperature });
    } else {
      jobs.push({ kind: 'regex', regex: randomRegex(r, 0), model, temperature });
    }
  }
  let next = 0;
  const failures = [];
  async function worker() {
    while (next < jobs.length) {
      const j = jobs[next++];
      const extra = { temperature: j.temperature, seed: 11, max_tokens: CONTEXT - 64 };
      if (j.kind === 'schema') extra.response_format = { type: 'json_schema', json_schema: { name: 's', schema: j.schema } };
      else extra.regex = j.regex;
      const res = await complete(extra, j.model);
      const c = res.choices[0];
      const what = `${JSON.stringify(j.schema ?? j.regex)} -> ${JSON.stringify(c.text)} (${c.finish_reason})`;
      if (c.finish_reason !== 'stop') { failures.push(`not finished: ${what}`); continue; }
      if (j.kind === 'schema') {
        let v;
        try { v = JSON.parse(c.text); } catch (e) { failures.push(`not JSON: ${what}`); continue; }
        if (!ajv.validate(j.schema, v)) failures.push(`ajv: ${JSON.stringify(ajv.errors)}: ${what}`);
      } else if (!new RegExp(`^(?:${j.regex})$`, 'u').test(c.text)) {
        failures.push(`regex: ${what}`);
      }
    }
  }
  await Promise.all([worker(), worker(), worker(), worker()]);
  assert.deepEqual(failures, []);
  assert.equal(jobs.length, 200);
});

await check('bad constraints are refused with a 400 naming the field and the problem', async () => {
  await refused({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: 'a+' } } } },
                'response_format', /unsupported keyword `pattern`/);
  await refused({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { oneOf: [] } } } },
                'response_format', /oneOf/);
  await refused({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', required: ['a'] } } } },
                'response_format', /required property "a"/);
  await refused({ response_format: { type: 'xml' } }, 'response_format', /json_object or json_schema/);
  await refused({ regex: 'a(b' }, 'regex', /missing '\)'/);
  await refused({ regex: '(a)\\1' }, 'regex', /backreferences/);
  await refused({ grammar: 'root ::= root "a" | "b"' }, 'grammar', /left-recursive/);
  await refused({ choice: [] }, 'choice', /non-empty/);
  await refused({ regex: 'a', choice: ['a'] }, 'choice', /at most one/);
  await refused({ regex: 'a', ignore_eos: true }, 'ignore_eos', /ignore_eos/);
});

console.log(`${passed} passed, 0 failed`);
