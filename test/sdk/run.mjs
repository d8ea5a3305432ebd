// The official npm clients against a running appliance, one scenario per
// run: node run.mjs <scenario>. test/sdk_test.go starts the daemon (HTTPS
// with a self-signed certificate, trusted through NODE_EXTRA_CA_CERTS) and
// passes SB_URL (https://127.0.0.1:port), SB_KEY (an API key) and, for the
// sideband scenario, SB_CALL_ID. Each scenario prints one JSON line with
// what it saw and exits 0, or prints the failure and exits 1.

import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { RealtimeAgent, RealtimeSession, OpenAIRealtimeWebSocket, tool } from '@openai/agents-realtime';
import WebSocket from 'ws';
import { z } from 'zod';

const URL_ = process.env.SB_URL;
const KEY = process.env.SB_KEY;
const WSS = URL_.replace(/^https:/, 'wss:');
const STEP = 20_000; // ms any single wait may take
const seen = []; // every server event type, printed when a scenario fails

// speech is 800 ms of a 440 Hz tone (well above the echo engine's VAD
// gate) then 1 s of silence, PCM16LE mono 24 kHz: one caller turn.
function speech() {
  const rate = 24000;
  const voiced = rate * 0.8;
  const total = voiced + rate;
  const buf = Buffer.alloc(total * 2);
  for (let i = 0; i < voiced; i++) {
    buf.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
  }
  return buf;
}

function chunks(buf, size = 960) {
  const out = [];
  for (let i = 0; i < buf.length; i += size) out.push(buf.subarray(i, i + size));
  return out;
}

function timeout(ms, what) {
  return new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms));
}

// waitFor resolves with the first event of type typ an emitter-like
// source delivers (on(type, fn)).
function waitFor(src, typ, what = typ) {
  return Promise.race([new Promise((resolve) => src.on(typ, resolve)), timeout(STEP, what)]);
}

// Scenario: a client secret minted with the openai SDK, then a realtime
// WebSocket voice turn with the echo engine, the secret as bearer token.
async function openaiTurn() {
  const api = new OpenAI({ apiKey: KEY, baseURL: URL_ + '/v1' });
  const secret = await api.realtime.clientSecrets.create({
    expires_after: { anchor: 'created_at', seconds: 300 },
    session: { type: 'realtime', model: 'svc-voice-fast-1.0', instructions: 'Be brief.', audio: { output: { voice: 'eve' } } },
  });
  assert.match(secret.value, /^sbcs-/);
  assert.ok(secret.expires_at > Date.now() / 1000 + 250, 'expires_at about 300 s ahead');

  const client = new OpenAI({ apiKey: secret.value, baseURL: URL_ + '/v1' });
  const rt = await OpenAIRealtimeWS.create(client, { model: 'svc-voice-fast-1.0' });
  const types = [];
  const errors = [];
  rt.on('event', (e) => { types.push(e.type); seen.push(e.type === 'error' ? JSON.stringify(e) : e.type); });
  rt.on('error', (e) => errors.push(String(e.message || e)));
  const created = await waitFor(rt, 'session.created');
  const s = created.session;
  assert.equal(s.model, 'svc-voice-fast-1.0', 'session.created names the stored model');
  assert.equal(s.instructions, 'Be brief.', 'session.created holds the stored session');
  assert.equal(s.audio.output.voice, 'eve');
  assert.equal(s.audio.input.format.type, 'audio/pcm');

  let audioBytes = 0;
  rt.on('response.output_audio.delta', (e) => { audioBytes += Buffer.from(e.delta, 'base64').length; });
  const done = waitFor(rt, 'response.done');
  const added = [];
  rt.on('conversation.item.added', (e) => added.push(e.item));
  for (const c of chunks(speech())) rt.send({ type: 'input_audio_buffer.append', audio: c.toString('base64') });
  const resp = (await done).response;
  assert.equal(resp.status, 'completed');
  const user = added.find((it) => it.role === 'user');
  assert.ok(user, 'a user item was added');
  assert.equal(user.content[0].type, 'input_audio');
  assert.ok('transcript' in user.content[0] && user.content[0].transcript === null, 'input_audio carries transcript: null');
  rt.close();
  assert.deepEqual(errors, []);
  assert.ok(!types.slice(0, types.indexOf('input_audio_buffer.speech_started')).includes('session.updated'), 'no unprompted session.updated');
  return { model: s.model, audioBytes, types: [...new Set(types)] };
}

const weatherTool = () => tool({
  name: 'get_weather',
  description: 'Tells the weather of a city.',
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => `It is sunny in ${city}.`,
});

// runAgent drives a RealtimeSession: a spoken turn, then a text message
// that makes the echo engine call the function tool.
async function runAgent(transport, apiKey, model) {
  const agent = new RealtimeAgent({ name: 'Assistant', instructions: 'You help with the weather.', tools: [weatherTool()] });
  const session = new RealtimeSession(agent, { transport, model });
  const errors = [];
  const toolCalls = [];
  session.on('error', (e) => errors.push(JSON.stringify(e.error?.error ?? e.error ?? e)));
  session.on('agent_tool_end', (_ctx, _agent, t, result) => toolCalls.push({ name: t.name, result }));
  await Promise.race([session.connect({ apiKey }), timeout(STEP, 'connect')]);

  // A spoken turn: the echo engine answers with the caller's own audio.
  let audioBytes = 0;
  session.on('audio', (e) => { audioBytes += e.data.byteLength; });
  const firstDone = waitFor(session.transport, 'turn_done', 'the spoken turn');
  const pcm = speech();
  for (const c of chunks(pcm)) session.sendAudio(c.buffer.slice(c.byteOffset, c.byteOffset + c.byteLength));
  await firstDone;
  assert.ok(audioBytes > 0, 'response audio arrived');

  // A function call: the SDK runs the tool and returns its output; the
  // echo engine then says it.
  const said = new Promise((resolve) => session.on('history_updated', (h) => {
    for (const it of h) {
      if (it.type === 'message' && it.role === 'assistant' && it.content.some((c) => (c.transcript ?? c.text ?? '').includes('sunny in Paris'))) resolve(h);
    }
  }));
  session.sendMessage('get_weather({"city":"Paris"})');
  const history = await Promise.race([said, timeout(STEP, 'the answer with the tool output')]);
  session.close();
  assert.deepEqual(errors, []);
  assert.deepEqual(toolCalls.map((c) => c.name), ['get_weather']);
  const users = history.filter((it) => it.type === 'message' && it.role === 'user');
  assert.ok(users.some((u) => u.content[0].type === 'input_audio'), 'the spoken turn is in the history');
  const call = history.find((it) => it.type === 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.equal(call.output, 'It is sunny in Paris.');
  return { audioBytes, history: history.map((it) => `${it.type}/${it.role ?? it.name}`), toolCalls };
}

// Scenario: a RealtimeSession (Agents SDK) with a function tool over WSS,
// the API key as bearer token (how a Node server connects).
async function agentsSession() {
  const transport = new OpenAIRealtimeWebSocket({ url: `${WSS}/v1/realtime?model=svc-voice-latest` });
  return runAgent(transport, KEY, 'svc-voice-latest');
}

async function mintSecret(session) {
  const res = await fetch(URL_ + '/v1/realtime/client_secrets', {
    method: 'POST',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ session }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()).value;
}

// openWS opens a socket the way a browser does: no headers, the secret as
// a subprotocol. It resolves with the socket or rejects with the reason.
function openWS(url, protocols) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols);
    ws.on('open', () => resolve(ws));
    ws.on('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.on('error', reject);
  });
}

// Scenario: a browser-style client: the client secret only as the
// svc-client-secret.<secret> subprotocol, no Authorization header.
async function browser() {
  const secret = await mintSecret({ type: 'realtime', model: 'svc-voice-latest' });
  // Offered alone, the secret protocol is the one the server must choose.
  const alone = await openWS(`${WSS}/v1/realtime`, [`svc-client-secret.${secret}`]);
  assert.equal(alone.protocol, `svc-client-secret.${secret}`);
  const first = await Promise.race([new Promise((r) => alone.once('message', (m) => r(JSON.parse(m)))), timeout(STEP, 'session.created')]);
  assert.equal(first.type, 'session.created');
  assert.equal(first.session.model, 'svc-voice-latest');
  alone.close();
  // Beside "realtime" (what browser SDKs offer), "realtime" is chosen.
  const both = await openWS(`${WSS}/v1/realtime`, ['realtime', `svc-client-secret.${secret}`]);
  assert.equal(both.protocol, 'realtime');
  both.close();
  // A wrong secret is refused before the upgrade.
  await assert.rejects(openWS(`${WSS}/v1/realtime`, ['realtime', 'svc-client-secret.sbcs-' + 'x'.repeat(48)]), /HTTP 401/);

  // The Agents SDK the way a browser page uses it with the appliance:
  // its socket authenticated by subprotocol only.
  const transport = new OpenAIRealtimeWebSocket({
    url: `${WSS}/v1/realtime`,
    createWebSocket: async ({ url, apiKey }) => new WebSocket(url, ['realtime', `svc-client-secret.${apiKey}`]),
  });
  const agent = await runAgent(transport, secret, 'svc-voice-latest');
  return { protocol: alone.protocol.slice(0, 18), agent };
}

// Scenario: the openai SDK's sideband connection to a live phone call
// (callID), then the SDK's hangup.
async function sideband() {
  const callID = process.env.SB_CALL_ID;
  const api = new OpenAI({ apiKey: KEY, baseURL: URL_ + '/v1' });
  const rt = await OpenAIRealtimeWS.create(api, { callID });
  assert.equal(rt.url.searchParams.get('call_id'), callID);
  const types = [];
  const errors = [];
  rt.on('event', (e) => { types.push(e.type); seen.push(e.type === 'error' ? JSON.stringify(e) : e.type); });
  rt.on('error', (e) => errors.push(String(e.message || e)));
  await waitFor(rt, 'session.created');
  rt.send({ type: 'session.update', session: { type: 'realtime', instructions: 'You take calls for the SDK test.' } });
  const upd = await waitFor(rt, 'session.updated');
  assert.equal(upd.session.instructions, 'You take calls for the SDK test.');
  // The caller speaks (sipp plays a recording): the turn reaches the
  // controller as events, its audio stays on the phone.
  await waitFor(rt, 'input_audio_buffer.speech_started');
  await waitFor(rt, 'response.done');
  const closed = new Promise((resolve) => rt.socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  await api.realtime.calls.hangup(callID);
  const close = await Promise.race([closed, timeout(STEP, 'the socket to close')]);
  assert.deepEqual(errors, []);
  assert.ok(!types.includes('response.output_audio.delta'), 'the controller never gets the phone audio');
  return { close, types: [...new Set(types)] };
}

// The session a webhook's app accepts a call with, as the hosted API's
// SIP flow does (model, instructions, voice, tools, audio formats; the
// turn detection with an idle timer).
const acceptedSession = {
  type: 'realtime',
  model: 'svc-voice-fast-1.0',
  instructions: 'You answer for the accept test.',
  audio: {
    input: { format: { type: 'audio/pcm', rate: 24000 }, turn_detection: { type: 'server_vad', idle_timeout_ms: 1500 } },
    output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'ara' },
  },
  tools: [{ type: 'function', name: 'lookup_order', description: 'Looks an order up.', parameters: { type: 'object', properties: { id: { type: 'string' } } } }],
};

// failure runs an SDK call that must fail and returns its APIError.
async function failure(p) {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('the request succeeded');
}

// Scenario: the openai SDK's client.realtime.calls.accept answers a
// ringing call (SB_CALL_ID) with a session configuration; refusals: a
// bad body (400 naming the member), an unknown call (404), a second
// accept and a reject of the accepted call (409).
async function accept() {
  const callID = process.env.SB_CALL_ID;
  const api = new OpenAI({ apiKey: KEY, baseURL: URL_ + '/v1' });
  let e = await failure(api.realtime.calls.accept(callID, { type: 'realtime', audio: { output: { voice: 'marin' } } }));
  assert.equal(e.status, 400);
  assert.equal(e.param, 'audio.output.voice');
  e = await failure(api.realtime.calls.accept(callID, { type: 'realtime', instructions: 5 }));
  assert.equal(e.status, 400);
  assert.equal(e.param, 'instructions');
  assert.match(e.message, /instructions must be a string, not a number/);
  e = await failure(api.realtime.calls.accept('no-such-call', { type: 'realtime' }));
  assert.equal(e.status, 404);
  await api.realtime.calls.accept(callID, acceptedSession);
  e = await failure(api.realtime.calls.accept(callID, { type: 'realtime' }));
  assert.equal(e.status, 409);
  e = await failure(api.realtime.calls.reject(callID, { status_code: 486 }));
  assert.equal(e.status, 409);
  return { accepted: callID };
}

// Scenario: a sideband controller attaches (OpenAIRealtimeWS with
// callID) to a call accepted without one: its session.created holds the
// accepted session, one conversation.created comes, the model hears the
// caller, the idle timer of the accepted turn detection fires, then the
// SDK hangs up.
async function attachAccepted() {
  const callID = process.env.SB_CALL_ID;
  const api = new OpenAI({ apiKey: KEY, baseURL: URL_ + '/v1' });
  const rt = await OpenAIRealtimeWS.create(api, { callID });
  const types = [];
  const errors = [];
  const conversations = [];
  rt.on('event', (e) => { types.push(e.type); seen.push(e.type === 'error' ? JSON.stringify(e) : e.type); });
  rt.on('error', (e) => errors.push(String(e.message || e)));
  rt.on('conversation.created', (e) => conversations.push(e.conversation.id));
  const created = (await waitFor(rt, 'session.created')).session;
  assert.equal(types[0], 'session.created', 'session.created comes first');
  assert.equal(created.object, 'realtime.session');
  assert.ok(created.id, 'session.created names the session');
  assert.equal(created.model, acceptedSession.model);
  assert.equal(created.instructions, acceptedSession.instructions);
  assert.equal(created.audio.output.voice, 'ara');
  assert.equal(created.voice, 'ara', 'the spec placement says the same');
  assert.equal(created.audio.input.turn_detection.idle_timeout_ms, 1500);
  assert.deepEqual(created.tools.map((t) => t.name), ['lookup_order']);
  const done = (await waitFor(rt, 'response.done')).response;
  await waitFor(rt, 'input_audio_buffer.timeout_triggered');
  const closed = new Promise((resolve) => rt.socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  await api.realtime.calls.hangup(callID);
  const close = await Promise.race([closed, timeout(STEP, 'the socket to close')]);
  assert.deepEqual(errors, []);
  assert.equal(conversations.length, 1, `one conversation.created, got ${conversations}`);
  assert.equal(done.conversation_id, conversations[0], 'responses belong to that conversation');
  return { close, conversation: conversations[0], types: [...new Set(types)] };
}

// Scenario: client.realtime.calls.reject refuses a ringing call
// (SB_CALL_ID) with SB_STATUS, or with no body (the default, 603); a
// second decision is 409.
async function reject() {
  const callID = process.env.SB_CALL_ID;
  const api = new OpenAI({ apiKey: KEY, baseURL: URL_ + '/v1' });
  const e = await failure(api.realtime.calls.reject(callID, { status_code: 180 }));
  assert.equal(e.status, 400);
  assert.equal(e.param, 'status_code');
  if (process.env.SB_STATUS) {
    await api.realtime.calls.reject(callID, { status_code: Number(process.env.SB_STATUS) });
  } else {
    await api.realtime.calls.reject(callID);
  }
  const again = await failure(api.realtime.calls.accept(callID, { type: 'realtime' }));
  assert.equal(again.status, 409);
  return { rejected: callID };
}

const scenarios = { 'openai-turn': openaiTurn, 'agents-session': agentsSession, browser, sideband, accept, 'attach-accepted': attachAccepted, reject };

const name = process.argv[2];
const run = scenarios[name];
if (!run) {
  console.error(`unknown scenario ${name}; one of ${Object.keys(scenarios).join(', ')}`);
  process.exit(2);
}
try {
  const out = await run();
  console.log(JSON.stringify({ scenario: name, ok: true, ...out }));
  process.exit(0);
} catch (err) {
  console.error(`${name} failed:`, err?.stack ?? err);
  console.error('server events seen:', seen.join(' '));
  process.exit(1);
}
