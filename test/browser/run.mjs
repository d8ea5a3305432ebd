// Drives Debian's chromium for the Go tests (test/browser_test.go,
// test/console_test.go): node run.mjs <job.json> prints one JSON result
// line. Jobs: "call" (a browser call through /v1/realtime/calls with the
// fake microphone, recording what it hears) and "console" (the web console's
// pages, with screenshots).
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
const out = { console: [] };
try {
  const page = await browser.newPage();
  page.on('console', (m) => out.console.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => out.console.push(`pageerror: ${e.message}`));
  if (job.kind === 'call') {
    await page.goto(job.page);
    Object.assign(out, await page.evaluate(browserCall, job));
  } else if (job.kind === 'console') {
    Object.assign(out, await consoleTour(page, job));
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

async function consoleTour() {
  throw new Error('the console tour is not written yet');
}
