// Drives Debian's chromium for the Go tests (test/browser_test.go,
// test/console_test.go): node run.mjs <job.json> prints one JSON result
// line. Jobs: "call" (a browser call through /v1/realtime/calls with the
// fake microphone, recording what it hears), "console" (the web console's
// pages, with screenshots) and "supervise" (the console's Listen and Take
// over on a live call, recording what the supervisor hears).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const job = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-chromium-'));
const args = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-features=WebRtcHideLocalIpsWithMdns,MediaRouter,OptimizationHints',
  '--disable-default-apps', '--disable-extensions', '--no-default-browser-check',
  '--autoplay-policy=no-user-gesture-required',
  '--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream',
  `--user-data-dir=${profile}`,
];
if (job.wav) args.push(`--use-file-for-fake-audio-capture=${job.wav}`);

const browser = await puppeteer.launch({
  executablePath: job.chromium || '/usr/bin/chromium', headless: true, args,
  userDataDir: profile, protocolTimeout: 180000,
});
const out = { console: [], problems: [] };
// Every error a page shows or logs is a problem the Go test fails on: text
// in a visible element of class "error" or role "alert" (how the console
// shows an error; watchErrors reports each as it appears), a dialog, an
// uncaught exception, a console error. A step that expects one names it in
// expected (regular expressions), for as long as the step lasts.
let expected = [];
const problem = (what) => { if (!expected.some((re) => re.test(what))) out.problems.push(what); };
try {
  const page = await browser.newPage();
  page.on('console', (m) => {
    out.console.push(`${m.type()}: ${m.text()}`);
    if (m.type() === 'error') problem(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => {
    out.console.push(`pageerror: ${e.message}`);
    problem(`uncaught: ${e.message}`);
  });
  page.on('dialog', async (d) => {
    problem(`dialog: ${d.message()}`);
    await d.dismiss();
  });
  await page.exposeFunction('switchboardTestShownError', (text) => problem(`shown: ${text}`));
  await page.evaluateOnNewDocument(watchErrors);
  page.on('response', (r) => { if (r.status() >= 400) out.console.push(`http: ${r.request().method()} ${r.url()} ${r.status()}`); });
  if (job.kind === 'call') {
    await page.goto(job.page);
    Object.assign(out, await page.evaluate(browserCall, job));
  } else if (job.kind === 'sdk') {
    await page.goto(job.page);
    Object.assign(out, await page.evaluate(sdkCall, job));
  } else if (job.kind === 'console') {
    Object.assign(out, await consoleTour(page, job));
  } else if (job.kind === 'supervise') {
    Object.assign(out, await consoleSupervise(page, job));
  } else {
    throw new Error(`unknown job kind ${job.kind}`);
  }
} catch (e) {
  out.error = String(e && e.stack || e);
} finally {
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out) + '\n');

// watchErrors runs in every document the page loads: each time an element
// of class "error" or role "alert" is visible with text (a new one, or new
// text), it reports the text to switchboardTestShownError.
function watchErrors() {
  const reported = new WeakMap();
  const scan = () => {
    for (const el of document.querySelectorAll('.error, [role=alert]')) {
      const text = el.textContent.trim();
      if (!text || reported.get(el) === text || !el.checkVisibility()) continue;
      reported.set(el, text);
      window.switchboardTestShownError(text);
    }
  };
  new MutationObserver(scan).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
}

// browserCall runs in the page: the call as a web app places it (the
// Agents SDK's WebRTC transport does the same: the offer without waiting
// for ICE candidates, POSTed as application/sdp with a bearer token), then
// it records what it hears for job.seconds (48 kHz).
async function browserCall(job) {
  const events = [];
  const pc = new RTCPeerConnection();
  const dc = pc.createDataChannel('oai-events');
  dc.onmessage = (e) => { try { events.push(JSON.parse(e.data).type); } catch (_) { events.push('unparsable'); } };
  // The speech goes out as it is: no echo canceller, noise suppressor or
  // gain control between the file and the call, so what comes back can be
  // compared with it sample by sample.
  const mic = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false } });
  pc.addTrack(mic.getAudioTracks()[0], mic);
  const gotTrack = new Promise((resolve) => { pc.ontrack = (e) => resolve(e.streams[0] || new MediaStream([e.track])); });
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  const resp = await fetch(`${job.url}/v1/realtime/calls${job.query}`, {
    method: 'POST', body: offer.sdp,
    headers: { 'Content-Type': 'application/sdp', Authorization: `Bearer ${job.token}`, 'X-OpenAI-Agents-SDK': 'switchboard-test' },
  });
  const body = await resp.text();
  if (resp.status !== 201) return { status: resp.status, body };
  const location = resp.headers.get('Location');
  await pc.setRemoteDescription({ type: 'answer', sdp: body });
  const stream = await gotTrack;
  // Chrome feeds a remote stream to WebAudio only while a media element
  // plays it.
  const el = new Audio();
  el.srcObject = stream;
  el.muted = true;
  await el.play().catch(() => {});
  const ctx = new AudioContext({ sampleRate: 48000 });
  await ctx.resume();
  const src = ctx.createMediaStreamSource(stream);
  const proc = ctx.createScriptProcessor(4096, 1, 1);
  const samples = [];
  proc.onaudioprocess = (e) => {
    const d = e.inputBuffer.getChannelData(0);
    for (let i = 0; i < d.length; i++) samples.push(Math.max(-32768, Math.min(32767, Math.round(d[i] * 32767))));
  };
  src.connect(proc);
  proc.connect(ctx.destination);
  await new Promise((r) => setTimeout(r, job.seconds * 1000));
  let codec = '', packetsReceived = 0, packetsSent = 0, rtt = 0;
  (await pc.getStats()).forEach((s) => {
    if (s.type === 'codec' && s.mimeType.startsWith('audio/')) codec = s.mimeType;
    if (s.type === 'inbound-rtp' && s.kind === 'audio') packetsReceived = s.packetsReceived;
    if (s.type === 'outbound-rtp' && s.kind === 'audio') packetsSent = s.packetsSent;
    if (s.type === 'candidate-pair' && s.nominated && s.currentRoundTripTime) rtt = s.currentRoundTripTime;
  });
  const state = pc.connectionState;
  pc.close();
  await ctx.close();
  return { status: resp.status, location, events, samples, rate: ctx.sampleRate, codec, packetsReceived, packetsSent, rtt, state };
}

// sdkCall runs in a page that loaded the OpenAI Agents SDK's browser bundle
// (window.OpenAIAgentsRealtime): a RealtimeSession over its WebRTC
// transport, pointed at the appliance with baseUrl and nothing else
// changed, talks until the echo engine's answer is in the history.
async function sdkCall(job) {
  const { RealtimeAgent, RealtimeSession, OpenAIRealtimeWebRTC } = window.OpenAIAgentsRealtime;
  const audio = document.createElement('audio');
  audio.autoplay = true;
  document.body.append(audio);
  // Our client secrets are not "ek_" keys, so the SDK is told the key is
  // meant for the browser.
  const transport = new OpenAIRealtimeWebRTC({ baseUrl: `${job.url}/v1/realtime/calls`, audioElement: audio, useInsecureApiKey: true });
  const agent = new RealtimeAgent({ name: 'Browser test', instructions: 'Repeat what the caller says.' });
  const session = new RealtimeSession(agent, { transport, model: job.model });
  const events = [];
  transport.on('*', (ev) => events.push(ev.type));
  const errors = [];
  session.on('error', (e) => errors.push(String(e && (e.error?.message || e.message || JSON.stringify(e)))));
  await session.connect({ apiKey: job.token });
  const callId = transport.callId;
  const texts = () => session.history.filter((i) => i.type === 'message' && i.role === 'assistant')
    .map((i) => i.content.map((c) => c.transcript || c.text || '').join(''));
  const t0 = Date.now();
  while (Date.now() - t0 < job.seconds * 1000 && !texts().some((t) => t.includes('echo'))) {
    await new Promise((r) => setTimeout(r, 250));
  }
  const result = { callId, events, texts: texts(), errors, status: transport.status };
  session.close();
  return result;
}

// consoleTour walks the web console as a person would, keeping a
// screenshot of each page in job.shots, and reports what it saw.
async function consoleTour(page, job) {
  const seen = { shots: [], urls: [] };
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) seen.urls.push(f.url()); });
  await page.setViewport({ width: 1280, height: 900 });
  const shot = async (name) => {
    const file = path.join(job.shots, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    seen.shots.push(file);
  };
  // clean ends a step: the page showed and logged no error since the last
  // one, but those the step expected. A round trip to the page first, so
  // that what it reported before is in.
  const clean = async (step) => {
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))));
    expected = [];
    if (out.problems.length) throw new Error(`${step}: the page showed or logged an error: ${out.problems.join(' | ')}`);
  };
  // settled waits until the page is ready (ready, run in the page with
  // arg) or has shown or logged an error, whichever comes first.
  const settled = async (ready, arg) => {
    const stop = new AbortController();
    const problemSeen = new Promise((resolve) => {
      const t = setInterval(() => { if (out.problems.length || stop.signal.aborted) { clearInterval(t); resolve(); } }, 50);
    });
    try {
      await Promise.race([page.waitForFunction(ready, { timeout: 15000, signal: stop.signal }, arg), problemSeen]);
    } finally {
      stop.abort();
    }
  };
  const go = async (hash, ready, arg, expect = []) => {
    expected = expect;
    await page.evaluate((h) => { location.hash = h; }, hash);
    await settled(ready, arg);
    await clean(`open ${hash}`);
  };
  const has = (sel) => !!document.querySelector(sel);
  const text = (sel) => page.$eval(sel, (el) => el.textContent);
  // Page loads are counted, to see that a sign-in renders its page once.
  let liveStreams = 0;
  page.on('request', (r) => { if (new URL(r.url()).pathname === '/v1/calls/live') liveStreams++; });
  const signIn = async (key, ready, expect = []) => {
    await page.waitForSelector('#signin-key', { visible: true });
    await page.type('#signin-key', key);
    liveStreams = 0;
    expected = expect;
    await page.click('#signin-form button[type=submit]');
    await page.waitForSelector('#nav:not([hidden])', { timeout: 10000 });
    await settled(ready);
    await clean('sign in');
  };

  await page.goto(`${job.url}/console`);
  await clean('load');
  await shot('01-signin');
  await signIn(job.key, () => document.querySelector('#live-status')?.textContent === 'live');
  seen.liveStreamsAtSignIn = liveStreams;
  seen.keyInStorage = await page.evaluate(() => Object.keys(sessionStorage).length + Object.keys(localStorage).length);
  seen.who = await text('#who-name');

  await go('#/numbers', has, '#numbers-table');
  seen.numbers = await text('#numbers-table');
  // Add a number routed to the demo agent, then give the demo number
  // digest credentials.
  await page.type('#number-create input[name=name]', 'Console line');
  await page.type('#number-create input[name=phone_number]', job.newNumber);
  await page.click('#number-create button[type=submit]');
  await settled((n) => document.querySelector('#numbers-table')?.textContent.includes(n), job.newNumber);
  await clean('create a number');
  await page.evaluate(() => [...document.querySelectorAll('#numbers-table tr[data-number]')]
    .find((r) => r.dataset.number === '+18005550100').querySelector('button').click());
  await page.waitForSelector('#number-edit');
  await page.type('#number-edit input[name=auth_username]', 'pbx');
  await page.type('#number-edit input[name=auth_password]', 'console-secret-1');
  await page.type('#number-edit input[name=outbound_uri]', 'sip:127.0.0.1:5099');
  await page.type('#number-edit input[name=outbound_username]', 'carrier-acct');
  await page.type('#number-edit input[name=outbound_password]', 'console-outbound-2');
  await page.type('#number-edit input[name=registrar]', 'sip:127.0.0.1:9');
  await page.type('#number-edit input[name=registration_username]', 'console-ext');
  await page.type('#number-edit input[name=registration_password]', 'console-reg-3');
  await page.click('#number-edit button[type=submit]');
  await settled(() => document.querySelector('#numbers-table')?.textContent.includes('digest user pbx'));
  await clean('edit a number');
  seen.numbersAfter = await text('#numbers-table');
  await shot('02-numbers');

  await go('#/agents', has, '#agent-form');
  await page.type('#agent-form input[name=name]', job.agentName);
  await page.type('#agent-form textarea[name=instructions]', 'You help the console test.');
  await page.type('#agent-form input[name=greeting]', 'Hello from the console.');
  await page.click('#agent-form button[type=submit]');
  await settled((n) => document.querySelector('#agents-table')?.textContent.includes(n), job.agentName);
  await clean('create an agent');
  seen.agents = await text('#agents-table');
  await shot('03-agents');

  // Talk to the demo agent: a browser call from the console.
  await page.evaluate(() => {
    const row = [...document.querySelectorAll('#agents-table tr')].find((r) => r.textContent.includes('Demo agent'));
    row.querySelector('button.talk').click();
  });
  await settled(() => /connected/.test(document.querySelector('#talk-status')?.textContent || ''));
  await settled(() => document.querySelectorAll('#talk-transcript p.assistant').length >= 1);
  await clean('talk to an agent');
  seen.talk = await text('#talk-transcript');
  await shot('04-talk');

  await go('#/live', has, '#live-list');
  await settled((n) => document.querySelectorAll('#live-list .live-call').length >= n, job.liveCalls);
  await settled(() => [...document.querySelectorAll('#live-list .transcript p.assistant')].length >= 1);
  await clean('live transcripts');
  seen.live = await text('#live-list');
  seen.liveStatus = await text('#live-status');
  await shot('05-live');
  await page.evaluate(() => hangUpTalk());

  await go('#/calls', () => document.querySelector('#calls-table')?.textContent.includes('webrtc'));
  seen.calls = await text('#calls-table');
  await shot('06-calls');
  await page.evaluate(() => [...document.querySelectorAll('#calls-table tr[data-call]')].find((r) => r.textContent.includes('webrtc')).click());
  await settled(() => document.querySelector('#page h2')?.textContent.startsWith('Call '));
  await clean('open a call');
  seen.call = await text('#page');
  // The recording: fetched with the key, played from a blob.
  await page.click('#recording button');
  await settled(has, '#recording audio');
  seen.recordingSeconds = await page.$eval('#recording audio', (a) => new Promise((resolve) => {
    if (a.readyState >= 1) resolve(a.duration);
    a.addEventListener('loadedmetadata', () => resolve(a.duration));
    a.addEventListener('error', () => resolve(-1));
  }));
  await clean('play the recording');
  await shot('07-call');

  await go('#/keys', has, '#keys-table');
  seen.keys = await text('#keys-table');
  await shot('08-keys');
  await go('#/audit', has, '#audit-table');
  seen.audit = await text('#audit-table');
  await shot('09-audit');

  // A key that may only read calls sees only that, and is told so: the
  // errors each page shows are expected (and the browser's console line
  // for each 403).
  await page.click('#signout');
  await clean('sign out');
  const denied = /status of 403/;
  await signIn(job.limitedKey, () => /management key/.test(document.querySelector('#page')?.textContent || ''), [denied, /^shown: The audit log needs a management key/]);
  seen.limitedNav = await page.$$eval('#nav a', (as) => as.filter((a) => getComputedStyle(a).display !== 'none').map((a) => a.dataset.page));
  await go('#/numbers', has, '#page .error', [/^shown: This API key has no permission for numbers/]);
  seen.limitedNumbers = await text('#page');
  await go('#/keys', () => /management key/.test(document.querySelector('#page')?.textContent || ''), undefined, [denied, /^shown: API keys are managed with a management key/]);
  seen.limitedKeys = await text('#page');
  await shot('10-limited-key');
  return seen;
}

// recordStream runs in the page: it records a remote stream for seconds
// through WebAudio (48 kHz) and returns the samples.
async function recordStream(stream, seconds) {
  // Chrome feeds a remote stream to WebAudio only while a media element
  // plays it.
  const el = new Audio();
  el.srcObject = stream;
  el.muted = true;
  await el.play().catch(() => {});
  const ctx = new AudioContext({ sampleRate: 48000 });
  await ctx.resume();
  const src = ctx.createMediaStreamSource(stream);
  const proc = ctx.createScriptProcessor(4096, 1, 1);
  const samples = [];
  proc.onaudioprocess = (e) => {
    const d = e.inputBuffer.getChannelData(0);
    for (let i = 0; i < d.length; i++) samples.push(Math.max(-32768, Math.min(32767, Math.round(d[i] * 32767))));
  };
  src.connect(proc);
  proc.connect(ctx.destination);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  src.disconnect();
  proc.disconnect();
  el.srcObject = null;
  await ctx.close();
  return samples;
}

// consoleSupervise signs in to the console, opens the live calls, listens
// to job.callId (recording what it hears), takes it over (the fake
// microphone replaces the agent; recording what it hears again), stays on
// the call for job.talkSeconds, then hangs up; a screenshot of each step.
async function consoleSupervise(page, job) {
  try {
    return await superviseSteps(page, job);
  } catch (e) {
    await page.screenshot({ path: path.join(job.shots, 'failed.png'), fullPage: true }).catch(() => {});
    const text = await page.evaluate(() => document.body.innerText).catch(() => '');
    throw new Error(`${e.message}\npage: ${text}`);
  }
}

async function superviseSteps(page, job) {
  const seen = { shots: [] };
  await page.setViewport({ width: 1280, height: 900 });
  const shot = async (name) => {
    const file = path.join(job.shots, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    seen.shots.push(file);
  };
  const status = () => page.$eval('#supervise-status', (el) => el.textContent);
  await page.goto(`${job.url}/console`);
  await page.waitForSelector('#signin-key', { visible: true });
  await page.type('#signin-key', job.key);
  await page.click('#signin-form button[type=submit]');
  await page.waitForSelector('#nav:not([hidden])', { timeout: 10000 });
  await page.evaluate(() => { location.hash = '#/live'; });
  const card = `#live-list .live-call[data-call="${job.callId}"]`;
  await page.waitForSelector(`${card} button.listen`, { timeout: 15000 });
  seen.card = await page.$eval(card, (el) => el.textContent);

  let t0 = Date.now();
  await page.click(`${card} button.listen`);
  await page.waitForFunction(() => document.querySelector('#supervise-status')?.textContent === 'listening', { timeout: 20000 });
  seen.listenMs = Date.now() - t0;
  await page.waitForFunction(() => state.supervise && state.supervise.stream, { timeout: 10000 });
  seen.listenStatus = await status();
  seen.listenParty = await page.evaluate(() => state.supervise.party);
  seen.listen = await page.evaluate(recordStream, await page.evaluateHandle(() => state.supervise.stream), job.listenSeconds);
  await shot('01-listening');

  t0 = Date.now();
  await page.click('#supervise-takeover');
  await page.waitForFunction(() => /you are on the call/.test(document.querySelector('#supervise-status')?.textContent || ''), { timeout: 20000 });
  seen.takeoverMs = Date.now() - t0;
  await page.waitForFunction(() => state.supervise && state.supervise.mode === 'takeover' && state.supervise.stream, { timeout: 10000 });
  seen.takeoverStatus = await status();
  seen.takeoverParty = await page.evaluate(() => state.supervise.party);
  seen.talk = await page.evaluate(recordStream, await page.evaluateHandle(() => state.supervise.stream), job.talkSeconds);
  await page.waitForFunction((c) => /taken over/.test(document.querySelector(c)?.textContent || ''), { timeout: 10000 }, card);
  seen.cardAfter = await page.$eval(card, (el) => el.textContent);
  await shot('02-taken-over');

  await page.click('#supervise-stop');
  seen.stoppedStatus = await status();
  await page.waitForFunction((c) => !document.querySelector(c), { timeout: 15000 }, card);
  await shot('03-hung-up');
  return seen;
}
