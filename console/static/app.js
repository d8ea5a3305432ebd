// Switchboard web console: plain JavaScript, no build step. It signs in
// with an API key and uses the appliance's own HTTP API, so a key sees and
// changes only what its ACLs allow. The key lives in this tab's memory, or
// in sessionStorage when asked; it never goes into a URL. Every value from
// the API is put in the page as text (textContent), never as HTML.
'use strict';

const state = { key: '', self: null, render: null, talk: null, supervise: null };
const KEY_ITEM = 'switchboard.console.key';

// ---- DOM helpers ----------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const $ = (id) => document.getElementById(id);
const page = () => $('page');

function field(label, input) { return h('label', {}, label, ' ', input); }
function fmtTime(s) { return s ? new Date(s).toLocaleString() : '—'; }
function fmtDur(ms) {
  if (!ms) return '0:00';
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}
function showError(where, err) {
  where.replaceChildren(h('p', { class: 'error', role: 'alert' }, err.message || String(err)));
}
// failed shows err in where, unless the render that asked (signal) has
// given the page up: its requests were cancelled, and what it shows would
// land in a page another render owns.
function failed(signal, where, err) {
  if (!signal.aborted) showError(where, err);
}

// ---- API ------------------------------------------------------------------

class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(`${status} ${e.code || ''}: ${e.message || 'request failed'}`);
    this.status = status;
    this.code = e.code;
  }
}

// api calls the appliance's API with the key. A request of a render
// carries its signal, so that it is cancelled when the render gives the
// page up (get is api's GET).
async function api(method, path, body, signal) {
  const headers = { Authorization: `Bearer ${state.key}` };
  const init = { method, headers, signal };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
  if (!r.ok) throw new APIError(r.status, data);
  return data;
}
const get = (path, signal) => api('GET', path, undefined, signal);

// allowed reports whether the key's ACL grants an endpoint
// ("api-key:endpoint:<name>", with * wildcards).
function allowed(endpoint) {
  const acls = (state.self && state.self.acls) || [];
  return acls.some((a) => {
    const m = /^api-key:endpoint:(.*)$/.exec(a);
    if (!m) return false;
    const re = new RegExp('^' + m[1].split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$');
    return re.test(endpoint);
  });
}

// ---- sign in --------------------------------------------------------------

async function signIn(key, remember) {
  state.key = key;
  try {
    state.self = await api('GET', '/v1/api-key');
  } catch (e) {
    state.key = '';
    throw e;
  }
  if (remember) sessionStorage.setItem(KEY_ITEM, key);
  $('signin').hidden = true;
  $('nav').hidden = false;
  $('who').hidden = false;
  $('who-name').textContent = `${state.self.name || state.self.api_key_id} · team ${state.self.team_id}`;
  const gates = { live: 'calls', numbers: 'phone-numbers', agents: 'agents', calls: 'calls' };
  for (const a of document.querySelectorAll('#nav a')) {
    const ep = gates[a.dataset.page];
    a.classList.toggle('denied', !!ep && !allowed(ep));
  }
  if (!location.hash || location.hash === '#/') navigate(allowed('calls') ? '#/live' : '#/numbers');
  else route();
}

function signOut() {
  leavePage();
  hangUpTalk();
  stopSupervising();
  state.key = '';
  state.self = null;
  sessionStorage.removeItem(KEY_ITEM);
  $('nav').hidden = true;
  $('who').hidden = true;
  page().hidden = true;
  page().replaceChildren();
  $('signin').hidden = false;
  $('signin-key').value = '';
}

// ---- router ---------------------------------------------------------------

const pages = { live: livePage, numbers: numbersPage, agents: agentsPage, calls: callsPage, keys: keysPage, audit: auditPage };

// route renders the page the hash names. A render owns #page until the
// next one starts: route aborts the previous render's signal, which
// cancels that render's requests (the live stream too) and keeps it from
// writing into the page (failed). A page function is called as
// fn(signal, arg).
function route() {
  if (!state.key) return;
  leavePage();
  stopSupervising();
  const ctl = new AbortController();
  state.render = ctl;
  const [, name, arg] = (location.hash || '#/live').split('/');
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.page === name);
  const fn = pages[name] || livePage;
  page().hidden = false;
  page().replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
  fn(ctl.signal, arg ? decodeURIComponent(arg) : '').catch((e) => failed(ctl.signal, page(), e));
}

// navigate shows the page of hash: setting a new hash routes (hashchange),
// so route runs here only when the hash stays the same; either way the
// page is rendered once.
function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

// leavePage ends the current render (see route).
function leavePage() {
  if (state.render) { state.render.abort(); state.render = null; }
}

function denied(what, endpoint) {
  page().replaceChildren(h('h2', {}, what),
    h('p', { class: 'error' }, `This API key has no permission for ${what.toLowerCase()} (needs api-key:endpoint:${endpoint}).`));
}

// ---- live calls (pushed) --------------------------------------------------

// livePage reads GET /v1/calls/live, a Server-Sent Events stream, with
// fetch (an EventSource cannot send the bearer token), until the render
// ends (signal: the stream is cancelled with it).
async function livePage(signal) {
  if (!allowed('calls')) return denied('Live calls', 'calls');
  const list = h('div', { id: 'live-list' }, h('p', { class: 'muted' }, 'Connecting…'));
  const status = h('span', { class: 'muted', id: 'live-status' }, 'connecting');
  // The supervisor's box stays while the list below is redrawn.
  page().replaceChildren(h('h2', {}, 'Live calls ', status), h('div', { id: 'supervise' }), list);
  const r = await fetch('/v1/calls/live', { headers: { Authorization: `Bearer ${state.key}` }, signal });
  if (!r.ok) throw new APIError(r.status, await r.json().catch(() => null));
  status.textContent = 'live';
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const chunk = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = chunk.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (data) renderLive(list, JSON.parse(data).calls);
    }
  }
  status.textContent = 'stream ended';
}

function renderLive(list, calls) {
  if (!calls.length) {
    list.replaceChildren(h('p', { class: 'muted' }, 'No call in progress.'));
    return;
  }
  list.replaceChildren(...calls.map((c) => h('div', { class: 'card live-call', 'data-call': c.call_id },
    h('div', {},
      h('span', { class: `pill ${c.state}` }, c.state), ' ',
      h('strong', {}, c.channel === 'webrtc' ? 'Browser' : (c.from || 'unknown')), ' → ',
      c.channel === 'webrtc' ? '' : (c.phone_number || c.to || ''), ' ', h('span', { class: 'muted' }, c.route), ' ',
      h('span', { class: 'pill' }, c.channel), ' ', fmtDur(c.duration_ms), ' ',
      takenOver(c) ? h('span', { class: 'pill takeover' }, 'taken over') : null, ' ',
      c.state === 'active' ? h('button', { class: 'secondary listen', type: 'button', onclick: () => supervise(c, false) }, 'Listen') : null, ' ',
      c.state === 'active' && !takenOver(c) ? h('button', { class: 'secondary takeover', type: 'button', onclick: () => supervise(c, true) }, 'Take over') : null, ' ',
      h('button', { class: 'danger', type: 'button', onclick: () => api('POST', `/v1/realtime/calls/${c.call_id}/hangup`).catch(alert) }, 'Hang up')),
    h('div', { class: 'figures muted mono' },
      h('span', {}, `in ${c.media.packets_in} pkts`), h('span', {}, `out ${c.media.packets_out} pkts`),
      h('span', {}, `lost ${c.media.lost}`), h('span', {}, `jitter ${(c.media.jitter_ms || 0).toFixed(1)} ms`),
      h('span', {}, `rtt ${(c.media.rtt_ms || 0).toFixed(1)} ms`)),
    transcript(c.transcript))));
}

function takenOver(c) {
  return (c.events || []).some((e) => e.kind === 'supervisor' && e.text === 'takeover');
}

// supervise joins a live call from this browser: Listen (POST
// /v1/calls/{id}/listen: this page hears the caller and the agent, mixed,
// and nobody hears it) or Take over (POST /v1/calls/{id}/takeover: the
// microphone replaces the agent; the caller and this page hear each
// other). The offer is the browser's own, sent as application/sdp with
// the key. A takeover from a listening page replaces its listening once
// the new connection is set up.
async function supervise(c, takeOver) {
  const box = $('supervise');
  if (!box) return;
  const prev = state.supervise;
  const mode = takeOver ? 'takeover' : 'listen';
  const sup = { pc: null, mic: null, stream: null, callId: c.call_id, mode, party: '' };
  const status = h('span', { id: 'supervise-status' }, takeOver ? 'taking over…' : 'joining…');
  const player = h('audio', { autoplay: true, id: 'supervise-audio' });
  const actions = h('span', {});
  box.replaceChildren(h('div', { class: 'card', 'data-call': c.call_id },
    h('strong', {}, takeOver ? `Talking on call ${c.call_id}: ` : `Listening to call ${c.call_id}: `), status, ' ', actions, player));
  try {
    const pc = new RTCPeerConnection();
    sup.pc = pc;
    if (takeOver) {
      sup.mic = await navigator.mediaDevices.getUserMedia({ audio: true });
      pc.addTrack(sup.mic.getAudioTracks()[0], sup.mic);
    } else {
      pc.addTransceiver('audio', { direction: 'recvonly' });
    }
    pc.ontrack = (e) => { sup.stream = e.streams[0] || new MediaStream([e.track]); player.srcObject = sup.stream; };
    pc.onconnectionstatechange = () => {
      if (state.supervise !== sup) return;
      if (pc.connectionState === 'connected') status.textContent = takeOver ? 'connected: you are on the call' : 'listening';
      if (['failed', 'closed', 'disconnected'].includes(pc.connectionState)) status.textContent = `ended (${pc.connectionState})`;
    };
    await pc.setLocalDescription(await pc.createOffer());
    const r = await fetch(`/v1/calls/${encodeURIComponent(c.call_id)}/${mode}`, {
      method: 'POST', body: pc.localDescription.sdp,
      headers: { Authorization: `Bearer ${state.key}`, 'Content-Type': 'application/sdp' },
    });
    const body = await r.text();
    if (r.status !== 201) {
      let m = body;
      try { m = JSON.parse(body).error.message; } catch (_) { /* keep the text */ }
      throw new Error(`${r.status}: ${m}`);
    }
    sup.party = r.headers.get('X-Switchboard-Party-Id') || '';
    await pc.setRemoteDescription({ type: 'answer', sdp: body });
    state.supervise = sup;
    if (prev && prev !== sup) closeSupervision(prev);
    status.textContent = 'connecting…';
    if (!takeOver) actions.append(h('button', { type: 'button', class: 'secondary', id: 'supervise-takeover', onclick: () => supervise(c, true) }, 'Take over'), ' ');
    actions.append(h('button', { type: 'button', class: 'danger', id: 'supervise-stop', onclick: () => stopSupervising() }, takeOver ? 'Hang up' : 'Stop listening'));
  } catch (err) {
    closeSupervision(sup);
    status.textContent = `failed: ${err.message}`;
    status.className = 'error';
    // A failed takeover leaves the listening as it was.
    if (prev && prev === state.supervise) {
      player.srcObject = prev.stream;
      actions.append(h('button', { type: 'button', class: 'danger', id: 'supervise-stop', onclick: () => stopSupervising() }, 'Stop listening'));
    }
  }
}

function closeSupervision(sup) {
  if (sup.pc) sup.pc.close();
  if (sup.mic) sup.mic.getTracks().forEach((t) => t.stop());
}

// stopSupervising leaves the call: closing the connection takes this
// browser out of it (after a takeover the caller is hung up on too).
function stopSupervising() {
  const sup = state.supervise;
  if (!sup) return;
  state.supervise = null;
  closeSupervision(sup);
  const s = $('supervise-status');
  if (s) s.textContent = sup.mode === 'takeover' ? 'hung up' : 'stopped listening';
}

function transcript(lines) {
  const box = h('div', { class: 'transcript' },
    (lines || []).map((l) => h('p', { class: l.role }, h('strong', {}, l.role === 'user' ? 'Caller: ' : 'Agent: '), l.text)));
  if (!lines || !lines.length) box.append(h('p', { class: 'muted' }, 'No transcript yet.'));
  return box;
}

// ---- numbers --------------------------------------------------------------

async function agentOptions(signal) {
  if (!allowed('agents')) return [];
  const r = await get('/v1/agents?page_size=100', signal);
  return r.agents || [];
}

async function numbersPage(signal) {
  if (!allowed('phone-numbers')) return denied('Numbers', 'phone-numbers');
  const [r, agents] = await Promise.all([get('/v2/phone-numbers?page_size=100', signal), agentOptions(signal)]);
  const nums = r.phone_numbers || [];
  const msg = h('div', { id: 'numbers-msg' });
  const table = h('table', { id: 'numbers-table' },
    h('tr', {}, h('th', {}, 'Number'), h('th', {}, 'Name'), h('th', {}, 'Routes to'), h('th', {}, 'SIP auth'), h('th', {}, 'Registration'), h('th', {}, '')),
    nums.map((n) => h('tr', { 'data-number': n.phone_number },
      h('td', { class: 'mono' }, n.phone_number), h('td', {}, n.name),
      h('td', {}, n.agent_id ? `agent ${n.agent_name || n.agent_id}` : (n.webhook ? `webhook ${n.webhook.url}` : '—')),
      h('td', {}, n.sip_auth && n.sip_auth.auth_username ? `digest user ${n.sip_auth.auth_username}` : 'none',
        n.sip_auth && n.sip_auth.allowed_addresses && n.sip_auth.allowed_addresses.length ? ` · ${n.sip_auth.allowed_addresses.join(', ')}` : '',
        n.outbound_trunk ? ` · outbound via ${n.outbound_trunk.uri}` : ''),
      h('td', { class: 'registration' }, registrationText(n.registration)),
      h('td', {}, h('button', { class: 'secondary', type: 'button', onclick: () => editNumber(signal, n, agents, msg) }, 'Edit')))));
  page().replaceChildren(h('h2', {}, 'Numbers'), msg, table, numberForm(signal, agents, msg));
}

// registrationText says where a number registers and how that goes.
function registrationText(r) {
  if (!r) return '—';
  let s = `${r.username}@${r.registrar} (${r.transport}): ${r.state}`;
  if (r.state === 'registered' && r.expires_at) s += ` until ${new Date(r.expires_at).toLocaleTimeString()}`;
  if (r.state === 'failed') s += ` ${r.last_status || ''} ${r.last_error || ''}`;
  if (r.node_id) s += ` · node ${r.node_id}`;
  return s;
}

function routeInputs(agents, current) {
  const kind = h('select', { name: 'route' }, h('option', { value: 'agent' }, 'an agent'), h('option', { value: 'webhook' }, 'a webhook'));
  const agent = h('select', { name: 'agent_id' }, agents.map((a) => h('option', { value: a.agent_id }, `${a.name} (${a.agent_id})`)));
  const url = h('input', { name: 'webhook_url', type: 'text', placeholder: 'https://app.example/hook' });
  if (current && current.webhook) { kind.value = 'webhook'; url.value = current.webhook.url; }
  if (current && current.agent_id) agent.value = current.agent_id;
  const body = () => (kind.value === 'agent' ? { agent_id: agent.value, webhook: null } : { agent_id: null, webhook: { url: url.value } });
  return { els: [field('Route to', kind), field('Agent', agent), field('Webhook URL', url)], body };
}

// numberForm and editNumber belong to the numbers page's render (signal):
// once it is over, what they learn is no longer shown.
function numberForm(signal, agents, msg) {
  const name = h('input', { name: 'name', type: 'text', required: true });
  const number = h('input', { name: 'phone_number', type: 'text', placeholder: '+14155550123', required: true });
  const rt = routeInputs(agents);
  return h('form', {
    class: 'card', id: 'number-create', onsubmit: async (e) => {
      e.preventDefault();
      const b = { origin: 'byo_trunk', name: name.value, phone_number: number.value, ...rt.body() };
      if (b.webhook === null) delete b.webhook;
      if (b.agent_id === null) delete b.agent_id;
      try {
        const r = await api('POST', '/v2/phone-numbers', b);
        if (signal.aborted) return;
        await numbersPage(signal);
        secretNotice(r, $('numbers-msg'));
      } catch (err) { failed(signal, msg, err); }
    },
  }, h('h3', {}, 'Add a number (BYO trunk)'), field('Name', name), field('Number (E.164)', number), rt.els, h('button', { type: 'submit' }, 'Create'));
}

function secretNotice(r, where) {
  if (r && r.webhook && r.webhook.dispatch_signing_secret) {
    where.replaceChildren(h('div', { class: 'secret' }, 'Webhook signing secret (shown once): ', h('span', { class: 'mono' }, r.webhook.dispatch_signing_secret)));
  }
}

function editNumber(signal, n, agents, msg) {
  const rt = routeInputs(agents, n);
  const user = h('input', { name: 'auth_username', type: 'text', value: (n.sip_auth && n.sip_auth.auth_username) || '' });
  const pass = h('input', { name: 'auth_password', type: 'password', placeholder: 'unchanged unless set' });
  const allow = h('input', { name: 'allowed_addresses', type: 'text', value: ((n.sip_auth && n.sip_auth.allowed_addresses) || []).join(', ') });
  const ob = n.outbound_trunk || {};
  const obURI = h('input', { name: 'outbound_uri', type: 'text', placeholder: 'sip:sip.carrier.example:5060', value: ob.uri || '' });
  const obUser = h('input', { name: 'outbound_username', type: 'text', value: ob.auth_username || '' });
  const obPass = h('input', { name: 'outbound_password', type: 'password', placeholder: 'unchanged unless set' });
  const obCaller = h('input', { name: 'outbound_caller_id', type: 'text', placeholder: n.phone_number, value: ob.caller_id || '' });
  const rg = n.registration || {};
  const regURI = h('input', { name: 'registrar', type: 'text', placeholder: 'sip:pbx.example.com:5060', value: rg.registrar || '' });
  const regUser = h('input', { name: 'registration_username', type: 'text', value: rg.username || '' });
  const regPass = h('input', { name: 'registration_password', type: 'password', placeholder: 'unchanged unless set' });
  const regTransport = h('select', { name: 'registration_transport' }, ['udp', 'tcp', 'tls'].map((t) => h('option', { value: t }, t)));
  regTransport.value = rg.transport || 'udp';
  const regContact = h('input', { name: 'registration_contact_user', type: 'text', placeholder: 'the username', value: rg.contact_user || '' });
  const form = h('form', {
    class: 'card', id: 'number-edit', onsubmit: async (e) => {
      e.preventDefault();
      const b = rt.body();
      const auth = { allowed_addresses: allow.value.split(',').map((s) => s.trim()).filter(Boolean) };
      if (user.value || pass.value) { auth.auth_username = user.value; auth.auth_password = pass.value; }
      b.sip_auth = auth;
      if (obURI.value) {
        b.outbound_trunk = { uri: obURI.value, caller_id: obCaller.value };
        if (obPass.value || (!obUser.value && ob.auth_username)) {
          b.outbound_trunk.auth_username = obUser.value;
          b.outbound_trunk.auth_password = obPass.value;
        }
      } else if (n.outbound_trunk) {
        b.outbound_trunk = null;
      }
      if (regURI.value) {
        b.registration = { registrar: regURI.value, username: regUser.value, transport: regTransport.value, contact_user: regContact.value };
        if (regPass.value) b.registration.password = regPass.value;
      } else if (n.registration) {
        b.registration = null;
      }
      try {
        const r = await api('PATCH', `/v2/phone-numbers/${n.phone_number_id}`, b);
        if (signal.aborted) return;
        await numbersPage(signal);
        secretNotice(r, $('numbers-msg'));
      } catch (err) { failed(signal, msg, err); }
    },
  }, h('h3', {}, `Edit ${n.phone_number}`), rt.els,
  h('h3', {}, 'SIP authentication'), field('Digest user', user), field('Digest password', pass),
  field('Allowed source addresses (CIDR, comma-separated)', allow),
  h('h3', {}, 'Outbound trunk (calls placed from this number)'), field('Carrier SIP URI (empty: none)', obURI),
  field('Digest user', obUser), field('Digest password', obPass), field('Caller id', obCaller),
  h('h3', {}, 'Registration (the appliance registers this number at a PBX or carrier)'), field('Registrar SIP URI (empty: none)', regURI),
  field('Username', regUser), field('Password', regPass), field('Transport', regTransport), field('Contact user', regContact),
  h('button', { type: 'submit' }, 'Save'), ' ', h('button', { type: 'button', class: 'secondary', onclick: () => form.remove() }, 'Cancel'));
  document.querySelector('#number-edit')?.remove();
  page().append(form);
  form.scrollIntoView();
}

// ---- agents ---------------------------------------------------------------

async function agentsPage(signal, id) {
  if (!allowed('agents')) return denied('Agents', 'agents');
  const r = await get('/v1/agents?page_size=100', signal);
  const agents = r.agents || [];
  const msg = h('div', { id: 'agents-msg' });
  const table = h('table', { id: 'agents-table' },
    h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Engine'), h('th', {}, 'Greeting'), h('th', {}, '')),
    agents.map((a) => h('tr', { 'data-agent': a.agent_id },
      h('td', {}, a.name, h('div', { class: 'muted mono' }, a.agent_id)), h('td', {}, a.engine || 'echo'),
      h('td', {}, a.greeting || '—'),
      h('td', {},
        h('button', { class: 'secondary', type: 'button', onclick: () => { location.hash = `#/agents/${a.agent_id}`; } }, 'Edit'), ' ',
        allowed('realtime') ? h('button', { type: 'button', class: 'talk', onclick: () => talk(a) }, 'Talk to this agent') : null))));
  page().replaceChildren(h('h2', {}, 'Agents'), msg, h('div', { id: 'talk' }), table);
  const current = agents.find((a) => a.agent_id === id);
  page().append(agentForm(signal, current, msg));
}

// agentForm belongs to the agents page's render (signal), as numberForm.
function agentForm(signal, a, msg) {
  const v = (x, d) => (x === undefined || x === null ? d : x);
  const name = h('input', { name: 'name', type: 'text', required: true, value: a ? a.name : '' });
  const engine = h('select', { name: 'engine' }, ['echo', 'upstream', 'loopback'].map((e) => h('option', { value: e }, e)));
  engine.value = a ? v(a.engine, 'echo') : 'echo';
  const instructions = h('textarea', { name: 'instructions' }, a ? v(a.instructions, '') : '');
  const greeting = h('input', { name: 'greeting', type: 'text', value: a ? v(a.greeting, '') : '' });
  const tools = h('textarea', { name: 'tools', placeholder: '[{"name":"lookup","description":"…","url":"https://…","parameters":{…}}]' },
    a && a.tools ? JSON.stringify(a.tools, null, 2) : '');
  const mode = h('select', { name: 'dtmf_mode' }, ['model', 'redact', 'route'].map((m) => h('option', { value: m }, m)));
  mode.value = (a && a.dtmf && a.dtmf.mode) || 'model';
  const routes = h('textarea', { name: 'dtmf_routes', placeholder: '{"0":{"kind":"transfer","target":"sip:operator@pbx"}}' },
    a && a.dtmf && a.dtmf.routes ? JSON.stringify(a.dtmf.routes, null, 2) : '');
  return h('form', {
    class: 'card', id: 'agent-form', onsubmit: async (e) => {
      e.preventDefault();
      try {
        const b = { name: name.value, engine: engine.value, instructions: instructions.value, greeting: greeting.value };
        b.tools = tools.value.trim() ? JSON.parse(tools.value) : [];
        b.dtmf = { mode: mode.value };
        if (mode.value === 'route') b.dtmf.routes = JSON.parse(routes.value || '{}');
        if (a) await api('PATCH', `/v1/agents/${a.agent_id}`, b);
        else await api('POST', '/v1/agents', b);
        if (!signal.aborted) navigate('#/agents');
      } catch (err) { failed(signal, msg, err); }
    },
  }, h('h3', {}, a ? `Edit ${a.name}` : 'Create an agent'), field('Name', name), field('Engine', engine),
  field('Instructions', instructions), field('Greeting', greeting), field('Tools (JSON)', tools),
  field('DTMF policy', mode), field('DTMF routes (JSON, route mode)', routes),
  h('button', { type: 'submit' }, a ? 'Save' : 'Create'));
}

// talk places a browser call to agent a through POST /v1/realtime/calls,
// the way any web app does: the microphone, the "oai-events" data channel
// for the transcript, the SDP offer as application/sdp.
async function talk(a) {
  hangUpTalk();
  const box = $('talk');
  const status = h('span', { id: 'talk-status' }, 'calling…');
  const lines = h('div', { class: 'transcript', id: 'talk-transcript' });
  const player = h('audio', { autoplay: true });
  const call = { pc: null, mic: null };
  state.talk = call;
  box.replaceChildren(h('div', { class: 'card' }, h('strong', {}, `Talking to ${a.name}: `), status, ' ',
    h('button', { type: 'button', class: 'danger', id: 'talk-hangup', onclick: hangUpTalk }, 'Hang up'), lines, player));
  try {
    call.mic = await navigator.mediaDevices.getUserMedia({ audio: true });
    const pc = new RTCPeerConnection();
    call.pc = pc;
    const dc = pc.createDataChannel('oai-events');
    const partial = {};
    dc.onmessage = (e) => {
      const ev = JSON.parse(e.data);
      if (ev.type === 'conversation.item.input_audio_transcription.completed') lines.append(h('p', { class: 'user' }, h('strong', {}, 'You: '), ev.transcript));
      if (ev.type === 'response.output_audio_transcript.delta') partial[ev.item_id] = (partial[ev.item_id] || '') + ev.delta;
      if (ev.type === 'response.output_audio_transcript.done') lines.append(h('p', { class: 'assistant' }, h('strong', {}, `${a.name}: `), ev.transcript || partial[ev.item_id] || ''));
      if (ev.type === 'input_audio_buffer.speech_started') status.textContent = 'listening…';
      if (ev.type === 'response.created') status.textContent = 'answering…';
      lines.scrollTop = lines.scrollHeight;
    };
    pc.addTrack(call.mic.getAudioTracks()[0], call.mic);
    pc.ontrack = (e) => { player.srcObject = e.streams[0] || new MediaStream([e.track]); };
    pc.onconnectionstatechange = () => {
      if (pc.connectionState === 'connected') status.textContent = 'connected';
      if (['failed', 'closed', 'disconnected'].includes(pc.connectionState)) status.textContent = `call ${pc.connectionState}`;
      if (pc.connectionState === 'failed') status.className = 'error';
    };
    await pc.setLocalDescription(await pc.createOffer());
    const r = await fetch(`/v1/realtime/calls?agent_id=${encodeURIComponent(a.agent_id)}`, {
      method: 'POST', body: pc.localDescription.sdp,
      headers: { Authorization: `Bearer ${state.key}`, 'Content-Type': 'application/sdp' },
    });
    const body = await r.text();
    if (r.status !== 201) {
      let m = body;
      try { m = JSON.parse(body).error.message; } catch (_) { /* keep the text */ }
      throw new Error(`${r.status}: ${m}`);
    }
    call.id = (r.headers.get('Location') || '').split('/').pop();
    status.textContent = `call ${call.id}: connecting…`;
    await pc.setRemoteDescription({ type: 'answer', sdp: body });
  } catch (err) {
    status.textContent = `failed: ${err.message}`;
    status.className = 'error';
    hangUpTalk(true);
  }
}

function hangUpTalk(keepBox) {
  const call = state.talk;
  if (!call) return;
  state.talk = null;
  if (call.pc) call.pc.close();
  if (call.mic) call.mic.getTracks().forEach((t) => t.stop());
  const s = $('talk-status');
  if (s && keepBox !== true) s.textContent = 'hung up';
}

// ---- call records ---------------------------------------------------------

async function callsPage(signal, id) {
  if (!allowed('calls')) return denied('Call records', 'calls');
  if (id) return callDetail(signal, id);
  const r = await get('/v1/calls?page_size=50', signal);
  const calls = r.calls || [];
  page().replaceChildren(h('h2', {}, 'Call records'), h('table', { id: 'calls-table' },
    h('tr', {}, h('th', {}, 'Started'), h('th', {}, 'Channel'), h('th', {}, 'From → To'), h('th', {}, 'Route'), h('th', {}, 'State'), h('th', {}, 'Duration'), h('th', {}, 'Ended by')),
    calls.map((c) => h('tr', { class: 'clickable', 'data-call': c.call_id, onclick: () => { location.hash = `#/calls/${c.call_id}`; } },
      h('td', {}, fmtTime(c.invited_at)), h('td', {}, h('span', { class: 'pill' }, c.channel)),
      h('td', {}, `${c.from || '—'} → ${c.to || c.phone_number || '—'}`), h('td', { class: 'mono' }, c.route),
      h('td', {}, h('span', { class: `pill ${c.state}` }, c.state)), h('td', {}, fmtDur(c.duration_ms)),
      h('td', {}, c.ended_by ? `${c.ended_by}${c.end_reason ? ': ' + c.end_reason : ''}` : '—')))),
  calls.length ? null : h('p', { class: 'muted' }, 'No calls yet.'));
}

async function callDetail(signal, id) {
  const c = await get(`/v1/calls/${encodeURIComponent(id)}`, signal);
  const m = c.media || {};
  page().replaceChildren(h('h2', {}, `Call ${c.call_id}`),
    h('p', {}, h('span', { class: 'pill' }, c.channel), ' ', h('span', { class: `pill ${c.state}` }, c.state), ' ',
      `${c.from || '—'} → ${c.to || c.phone_number || '—'} · ${c.route} · started ${fmtTime(c.invited_at)} · ${fmtDur(c.duration_ms)}`,
      c.ended_by ? ` · ended by ${c.ended_by}${c.end_reason ? ' (' + c.end_reason + ')' : ''}` : ''),
    h('h3', {}, 'Transcript'), transcript(c.transcript),
    h('h3', {}, 'Tool calls'), (c.tool_calls || []).length
      ? h('table', {}, h('tr', {}, h('th', {}, 'At'), h('th', {}, 'Kind'), h('th', {}, 'Detail')),
        c.tool_calls.map((t) => h('tr', {}, h('td', {}, fmtTime(t.at)), h('td', {}, t.kind), h('td', { class: 'mono' }, t.text || '', ' ', t.data ? JSON.stringify(t.data) : ''))))
      : h('p', { class: 'muted' }, 'None.'),
    h('h3', {}, 'Media'), mediaSummary(m),
    h('div', { class: 'figures mono' }, Object.entries(m).filter(([, v]) => typeof v !== 'object').map(([k, v]) => h('span', {}, `${k} ${v}`))),
    h('h3', {}, 'Recording'), c.recording ? recordingPlayer(signal, c) : h('p', { class: 'muted' }, 'Not recorded.'),
    h('h3', {}, 'Events'), (c.events || []).length
      ? h('table', {}, c.events.map((e) => h('tr', {}, h('td', {}, fmtTime(e.at)), h('td', {}, e.kind), h('td', { class: 'mono' }, e.text || '', ' ', e.data ? JSON.stringify(e.data) : ''))))
      : h('p', { class: 'muted' }, 'None.'),
    h('p', {}, h('a', { href: '#/calls' }, '← all calls')));
}

// mediaSummary is the line an operator reads first: how fast the agent
// answered and whether the audio was whole.
function mediaSummary(m) {
  const t = m.turn_latency || {};
  const parts = [];
  if (m.first_audio_ms !== undefined) parts.push(`first audio ${m.first_audio_ms} ms after answer`);
  parts.push(t.count ? `turn latency p50 ${t.p50_ms} ms · p95 ${t.p95_ms} ms · max ${t.max_ms} ms (${t.count} turns)` : 'no turns measured');
  parts.push(`barge-ins ${m.barge_ins || 0}`);
  parts.push(`loss ${((m.loss_ratio || 0) * 100).toFixed(2)}%`);
  if (m.one_way_seen) parts.push('one-way audio seen');
  return h('p', { id: 'media-summary' }, parts.join(' · '));
}

// recordingPlayer fetches the call's WAV with the key (an <audio src> could
// not send it) and plays it from a blob URL; the same blob is offered as a
// download. The download belongs to the call page's render (signal).
function recordingPlayer(signal, c) {
  const box = h('div', { id: 'recording' });
  const msg = h('div');
  const load = h('button', { type: 'button', onclick: async () => {
    load.disabled = true;
    try {
      const r = await fetch(c.recording.url, { headers: { Authorization: `Bearer ${state.key}` }, signal });
      if (!r.ok) {
        let body = null;
        try { body = await r.json(); } catch (_) { body = null; }
        throw new APIError(r.status, body);
      }
      const url = URL.createObjectURL(await r.blob());
      box.replaceChildren(h('audio', { controls: '', src: url }), ' ',
        h('a', { href: url, download: `${c.call_id}.wav` }, 'download WAV'),
        h('p', { class: 'muted' }, 'Stereo: the caller on the left, the agent on the right.'));
    } catch (err) {
      load.disabled = false;
      failed(signal, msg, err);
    }
  } }, 'Load recording');
  box.append(load, msg);
  return box;
}

// ---- API keys and audit (management keys) ---------------------------------

async function keysPage(signal) {
  const team = state.self.team_id;
  const msg = h('div', { id: 'keys-msg' });
  let r;
  try {
    r = await get(`/auth/teams/${encodeURIComponent(team)}/api-keys?pageSize=100`, signal);
  } catch (e) {
    if (e.status === 401 || e.status === 403) {
      page().replaceChildren(h('h2', {}, 'API keys'), h('p', { class: 'error' }, 'API keys are managed with a management key; this key is not one.'));
      return;
    }
    throw e;
  }
  const name = h('input', { name: 'name', type: 'text', required: true });
  const acls = h('input', { name: 'acls', type: 'text', value: 'api-key:endpoint:calls' });
  page().replaceChildren(h('h2', {}, 'API keys'), msg,
    h('table', { id: 'keys-table' }, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Key'), h('th', {}, 'ACLs'), h('th', {}, 'Created'), h('th', {}, 'State')),
      (r.apiKeys || []).map((k) => h('tr', {}, h('td', {}, k.name, k.managementKey ? h('span', { class: 'pill' }, 'management') : null),
        h('td', { class: 'mono' }, k.redactedApiKey), h('td', { class: 'mono' }, (k.aclStrings || []).join(' ')),
        h('td', {}, fmtTime(k.createTime)), h('td', {}, k.disabled ? 'disabled' : 'active')))),
    h('form', {
      class: 'card', id: 'key-create', onsubmit: async (e) => {
        e.preventDefault();
        try {
          const k = await api('POST', `/auth/teams/${encodeURIComponent(team)}/api-keys`, { name: name.value, acls: acls.value.split(/[\s,]+/).filter(Boolean) });
          if (signal.aborted) return;
          await keysPage(signal);
          $('keys-msg').replaceChildren(h('div', { class: 'secret' }, 'New key (shown once): ', h('span', { class: 'mono' }, k.apiKey)));
        } catch (err) { failed(signal, msg, err); }
      },
    }, h('h3', {}, 'Create a key'), field('Name', name), field('ACLs (space-separated)', acls), h('button', { type: 'submit' }, 'Create')));
}

async function auditPage(signal) {
  const team = state.self.team_id;
  let r;
  try {
    r = await get(`/audit/teams/${encodeURIComponent(team)}/events?pageSize=100&orderBy=TIME_DESCENDING`, signal);
  } catch (e) {
    if (e.status === 401 || e.status === 403) {
      page().replaceChildren(h('h2', {}, 'Audit log'), h('p', { class: 'error' }, 'The audit log needs a management key; this key is not one.'));
      return;
    }
    throw e;
  }
  page().replaceChildren(h('h2', {}, 'Audit log'), h('table', { id: 'audit-table' },
    h('tr', {}, h('th', {}, 'Time'), h('th', {}, 'Action'), h('th', {}, 'Resource'), h('th', {}, 'Who'), h('th', {}, 'What')),
    (r.events || []).map((e) => h('tr', {}, h('td', {}, fmtTime(e.eventTime)), h('td', { class: 'mono' }, e.action),
      h('td', { class: 'mono' }, e.resource), h('td', { class: 'mono' }, e.apiKeyId || (e.user && e.user.userId) || ''), h('td', {}, e.description)))));
}

// ---- start ----------------------------------------------------------------

window.addEventListener('hashchange', route);
window.addEventListener('DOMContentLoaded', () => {
  $('signin-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    $('signin-error').textContent = '';
    try {
      await signIn($('signin-key').value.trim(), $('signin-remember').checked);
      $('signin-key').value = '';
    } catch (err) {
      $('signin-error').textContent = err.status === 401 ? 'That key was not accepted.' : err.message;
    }
  });
  $('signout').addEventListener('click', signOut);
  const saved = sessionStorage.getItem(KEY_ITEM);
  if (saved) signIn(saved, true).catch(() => signOut());
});
