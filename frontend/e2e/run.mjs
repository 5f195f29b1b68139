// Browser tests of the dashboard: the real freelane binary in front of the
// fake upstream, driven in Debian's Chromium through playwright-core.
// Usage: node e2e/run.mjs (from frontend/, after `make build`).
// Screenshots of every screen go to build/screenshots/ at the repository root.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const root = resolve(import.meta.dirname, '..', '..');
const bin = join(root, 'build', 'bin');
const shots = join(root, 'build', 'screenshots');
mkdirSync(shots, { recursive: true });

const children = [];
function start(cmd, args, env = {}) {
  const p = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(p);
  p.stderr.on('data', (d) => { if (process.env.E2E_VERBOSE) process.stderr.write(d); });
  return p;
}
function cleanup() {
  for (const c of children) c.kill('SIGTERM');
}
process.on('exit', cleanup);

function freePort() {
  return new Promise((res) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
  });
}

async function waitFor(fn, what, ms = 15000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try { if (await fn()) return; } catch (e) { last = e; }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

// The fake upstream prints its base URL first.
const up = start(join(bin, 'fakeupstream'), []);
const upURL = await new Promise((res) => createInterface({ input: up.stdout }).once('line', res));

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const dir = mkdtempSync(join(tmpdir(), 'freelane-e2e-'));
const cfg = join(dir, 'freelane.yaml');
writeFileSync(cfg, `
listen: 127.0.0.1:${port}
providers:
  - {name: alpha, tier: free, base_url: "${upURL}", api_key: sk-alpha-test-0001, models: [{id: m-alpha, params_b: 70, context: 131072}]}
  - {name: beta, tier: free, base_url: "${upURL}", api_key: sk-beta-test-0002, models: [{id: m-beta, params_b: 8, context: 8192}]}
  - {name: gamma, tier: free, base_url: "${upURL}", models: [{id: m-gamma, params_b: 4}]}
  - {name: flaky, tier: free, base_url: "${upURL}", api_key: sk-flaky-0003, models: [{id: fail-a, params_b: 1}]}
  - name: capped
    tier: free
    base_url: "${upURL}"
    api_key: sk-capped-0004
    limits: {rpd: 5, reset: "daily 00:00 UTC"}
    models: [{id: m-capped, params_b: 8}]
  - name: paid
    tier: own
    base_url: "${upURL}"
    api_key: sk-paid-0005
    models: [{id: m-paid, params_b: 70, price: {input: 1000, output: 2000}}]
budgets:
  - {scope: global, period: day, limit: 5, action: block}
  - {scope: global, period: month, limit: 50, action: free-only}
chains:
  - {name: main, backends: [alpha/m-alpha, beta/m-beta]}
probes: {disabled: true}
`);
// launch starts `freelane serve` and waits until it answers. serve prints
// a one-time dashboard link on stdout, as a user sees it.
async function launch(cfgPath, dataDir, url, what) {
  const proc = start(join(bin, 'freelane'), ['serve', '--config', cfgPath, '--data-dir', dataDir], { FREELANE_KEYCHAIN: 'off', LANG: 'C.UTF-8' });
  const link = await new Promise((res) => {
    createInterface({ input: proc.stdout }).on('line', (l) => {
      const m = l.match(/^FreeLane dashboard: (\S+)/);
      if (m) res(m[1]);
    });
  });
  await waitFor(async () => (await fetch(`${url}/healthz`)).ok, what);
  return { proc, link };
}
const { link: loginLink } = await launch(cfg, dir, base, 'freelane to start');

async function chat(model) {
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await r.text();
  return { status: r.status, backend: r.headers.get('x-freelane-backend'), attempts: r.headers.get('x-freelane-attempts') };
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run'],
});
// A context of its own, so that a test can open a second tab in it.
const mainContext = await browser.newContext({ viewport: { width: 1024, height: 700 } });
const page = await mainContext.newPage();
const pageErrors = [];
page.on('pageerror', (e) => pageErrors.push(e.message));
// The Content-Security-Policy must not block anything the dashboard does.
const cspErrors = [];
page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text()); });

let passed = 0, failed = 0;
async function test(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}\n     ${e.stack || e}`);
    await page.screenshot({ path: join(shots, `failed-${name.replace(/\W+/g, '-')}.png`) }).catch(() => {});
  }
}
function assert(cond, msg) { if (!cond) throw new Error(msg); }

// upgradeStatus asks url for a websocket upgrade with headers and returns
// the status: 101 when it upgraded.
function upgradeStatus(url, headers) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { ...headers, connection: 'Upgrade', upgrade: 'websocket',
      'sec-websocket-version': '13', 'sec-websocket-key': randomBytes(16).toString('base64') } });
    req.on('upgrade', (res, socket) => { socket.destroy(); resolve(res.statusCode); });
    req.on('response', (res) => { res.resume(); resolve(res.statusCode); });
    req.on('error', reject);
    req.end();
  });
}

async function go(hash) {
  await page.goto(`${base}/#/${hash}`);
  await page.waitForLoadState('networkidle').catch(() => {});
}

await test('without a session the dashboard says how to get in, and the login link signs in', async () => {
  const res = await page.goto(`${base}/#/overview`);
  const h = res.headers();
  assert(h['x-frame-options'] === 'DENY', `X-Frame-Options: ${h['x-frame-options']}`);
  assert(/frame-ancestors 'none'/.test(h['content-security-policy'] || ''), `CSP: ${h['content-security-policy']}`);
  assert(h['x-content-type-options'] === 'nosniff', 'nosniff');
  const out = page.getByTestId('signed-out');
  await out.waitFor();
  assert((await out.innerText()).includes('freelane dashboard-url'), `signed-out screen: ${await out.innerText()}`);
  await page.screenshot({ path: join(shots, 'signed-out.png') });
  // The link differs from this page's URL only in its fragment, so this is
  // the same page being handed the code, not a reload.
  await page.goto(loginLink);
  await waitFor(() => !page.url().includes('login='), `the code to leave the address bar (${page.url()})`);
  await page.getByTestId('nav-overview').waitFor();
  await out.waitFor({ state: 'detached' });
  await waitFor(async () => /Live/.test(await page.getByTestId('connection').innerText()), 'the websocket to connect after signing in');
  // No server, proxy or log sees the code: it is in the fragment.
  assert(/\/#login=[\w-]+$/.test(loginLink), `the login link carries its code outside the fragment: ${loginLink}`);
  // The link is used up: another browser opening it is not signed in.
  const other = await browser.newContext();
  const p2 = await other.newPage();
  await p2.goto(loginLink);
  await p2.getByTestId('login-failed').waitFor();
  await other.close();
});

// The neighbour's replay: the signed-in user follows a link to a server
// another account runs on another port of 127.0.0.1. Browsers send it every
// cookie they hold for 127.0.0.1, whatever port set it; it records what it
// got and replays all of it to FreeLane, as curl would.
await test('a server on another port learns nothing that opens the dashboard', async () => {
  const recorded = [];
  const recorder = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      recorded.push({ method: req.method, url: req.url, headers: { ...req.headers }, body });
      res.writeHead(200, { 'Content-Type': 'text/html' });
      // Its page reports what it can see of the browser's storage.
      res.end(`<!doctype html><title>neighbour</title><script>
        fetch('/report', { method: 'POST', body: JSON.stringify({ cookie: document.cookie, storage: localStorage.length + sessionStorage.length }) });
      </script>`);
    });
  });
  const recPort = await new Promise((res) => recorder.listen(0, '127.0.0.1', () => res(recorder.address().port)));
  try {
    await go('overview');
    await waitFor(async () => /Live/.test(await page.getByTestId('connection').innerText()), 'the dashboard to be live before the visit');
    // One click on a link, as in a chat message or a README.
    await page.evaluate((u) => {
      const a = document.createElement('a');
      a.href = u;
      a.textContent = 'a link';
      document.body.append(a);
      a.click();
    }, `http://127.0.0.1:${recPort}/landing?from=chat`);
    await waitFor(() => recorded.some((r) => r.url === '/report'), 'the neighbour page to report');
    const visit = recorded.find((r) => r.url.startsWith('/landing'));
    assert(visit, `the neighbour saw no visit: ${JSON.stringify(recorded.map((r) => r.url))}`);
    const report = JSON.parse(recorded.find((r) => r.url === '/report').body);
    console.log(`     (the neighbour got: Cookie ${JSON.stringify(visit.headers.cookie ?? '')}; its page sees cookie ${JSON.stringify(report.cookie)}, ${report.storage} storage items)`);
    assert(report.storage === 0, `the neighbour's page sees ${report.storage} storage items`);

    // Replay every request the neighbour received, with all its headers,
    // against the admin API and its websocket. An attacker would also copy
    // any anti-CSRF cookie into the header it guards.
    const skip = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'upgrade']);
    for (const r of recorded) {
      assert(!/login|session|token/i.test(r.url), `the neighbour's URL carries a credential: ${r.url}`);
      const headers = {};
      for (const [k, v] of Object.entries(r.headers)) if (!skip.has(k)) headers[k] = v;
      const csrf = /freelane_csrf[^=]*=([^;]+)/.exec(headers.cookie ?? '');
      if (csrf) headers['x-freelane-csrf'] = decodeURIComponent(csrf[1]);
      // As received, and as curl would send it: without the neighbour's
      // own Origin (which FreeLane refuses with 403 on its own), or with
      // FreeLane's.
      const { origin, ...bare } = headers;
      const variants = [[bare, 401], [{ ...bare, origin: base }, 401]];
      if (origin) variants.push([headers, 403]);
      for (const [h, want] of variants) {
        const what = `replayed from ${r.url} (Origin ${h.origin ?? 'none'})`;
        const state = await fetch(`${base}/api/state`, { headers: h });
        assert(state.status === want, `GET /api/state ${what}: ${state.status}, want ${want}`);
        const write = await fetch(`${base}/api/routing`, { method: 'PUT', headers: { ...h, 'content-type': 'application/json' }, body: '{"paused":true}' });
        assert(write.status === want, `PUT /api/routing ${what}: ${write.status}, want ${want}`);
        const ws = await upgradeStatus(`${base}/api/ws`, h);
        assert(ws === want, `the websocket ${what}: ${ws}, want ${want}`);
      }
    }
    assert((await chat('alpha/m-alpha')).status === 200, 'routing was paused by the replay');
    const jar = await page.context().cookies(base);
    assert(jar.length === 0, `the browser holds cookies for FreeLane: ${jar.map((c) => c.name).join(', ')}`);
  } finally {
    recorder.close();
  }
  // Back on the dashboard: still signed in, after a reload and in a new
  // tab (the session is in this origin's localStorage), and live.
  await page.goto(`${base}/#/overview`);
  await waitFor(async () => /Live/.test(await page.getByTestId('connection').innerText()), 'the dashboard to be live again');
  await page.reload();
  await waitFor(async () => /Live/.test(await page.getByTestId('connection').innerText()), 'the dashboard to be live after a reload');
  const tab = await mainContext.newPage();
  tab.on('pageerror', (e) => pageErrors.push(e.message));
  await tab.goto(`${base}/#/chains`);
  await tab.getByTestId('chain-main').waitFor();
  await waitFor(async () => /Live/.test(await tab.getByTestId('connection').innerText()), 'a new tab to be live');
  assert(!(await tab.getByTestId('signed-out').count()), 'a new tab is signed out');
  await tab.close();
});

await test('overview lists every backend with its status and updates live', async () => {
  await go('overview');
  await page.getByTestId('backend-row-alpha/m-alpha').waitFor();
  const gamma = await page.getByTestId('backend-row-gamma/m-gamma').innerText();
  assert(/no key/i.test(gamma), `gamma row does not say "no key": ${gamma}`);
  const before = await page.getByTestId('backend-row-alpha/m-alpha').innerText();
  for (let i = 0; i < 5; i++) assert((await chat('alpha/m-alpha')).status === 200, 'chat failed');
  await waitFor(async () => (await page.getByTestId('backend-row-alpha/m-alpha').innerText()) !== before,
    'the alpha row to change after requests, without a reload');
  // A failing backend shows it after two failures.
  await chat('flaky/fail-a'); await chat('flaky/fail-a');
  await waitFor(async () => /open/i.test(await page.getByTestId('backend-row-flaky/fail-a').innerText()), 'flaky to show open');
  await page.screenshot({ path: join(shots, 'overview.png'), fullPage: true });
});

await test('dragging a backend reorders the chain and the next request follows it', async () => {
  assert((await chat('main')).backend === 'alpha/m-alpha', 'alpha should serve first');
  await go('chains');
  const list = page.getByTestId('chain-main');
  await list.waitFor();
  const items = list.locator('[data-testid^="chain-item-"]');
  await waitFor(async () => (await items.count()) === 2, 'two backends in main');
  await list.scrollIntoViewIfNeeded();
  await page.waitForTimeout(200);
  const from = await items.nth(1).boundingBox();
  const to = await items.nth(0).boundingBox();
  const saved = page.waitForResponse((r) => r.url().endsWith('/api/chains/main') && r.request().method() === 'PUT', { timeout: 10000 });
  // svelte-dnd-action follows mouse events: press, move in small steps
  // (the first ones start the drag), release over the first item's top half.
  const x = from.x + 24, y0 = from.y + from.height / 2, y1 = to.y + 2;
  await page.mouse.move(x, y0);
  await page.mouse.down();
  for (let i = 1; i <= 15; i++) {
    await page.mouse.move(x, y0 - ((y0 - y1) * i) / 15);
    await page.waitForTimeout(40);
  }
  await page.waitForTimeout(200);
  await page.mouse.up();
  const resp = await saved;
  assert(resp.ok(), `PUT failed: ${resp.status()}`);
  const r = await chat('main');
  assert(r.backend === 'beta/m-beta', `the next request went to ${r.backend} (${r.attempts})`);
  await page.reload();
  await waitFor(async () => (await page.getByTestId('chain-main').innerText()).indexOf('beta') <
    (await page.getByTestId('chain-main').innerText()).indexOf('alpha'), 'the new order after a reload');
  await page.screenshot({ path: join(shots, 'chains.png'), fullPage: true });
});

await test('adding a key in the form makes a keyless provider serve', async () => {
  assert((await chat('gamma/m-gamma')).status === 503, 'gamma should lack a key');
  await go('providers');
  const row = page.getByTestId('provider-gamma');
  await row.waitFor();
  await row.getByRole('button', { name: 'Paste key' }).click();
  await row.getByLabel('New key for gamma').fill('sk-gamma-from-browser-7777');
  await row.getByRole('button', { name: 'Save key' }).click();
  await waitFor(async () => /7777/.test(await page.getByTestId('masked-gamma').innerText()), 'the masked key to show');
  assert(!(await page.content()).includes('sk-gamma-from-browser-7777'), 'the page shows the whole key');
  const r = await chat('gamma/m-gamma');
  assert(r.status === 200, `gamma still fails: ${r.status}`);
  // alpha's key is written in the config file, which wins: no way to change it here.
  const alpha = page.getByTestId('key-alpha');
  assert(/written in the config file/.test(await alpha.innerText()), `alpha's key row: ${await alpha.innerText()}`);
  assert((await alpha.getByRole('button').count()) === 0, 'alpha offers to change a key the config file gives');
  await page.screenshot({ path: join(shots, 'providers.png'), fullPage: true });
});

await test('requests screen shows each route', async () => {
  await chat('main');
  // An Anthropic client's request is shown as one, not as chat/completions.
  const m = await fetch(`${base}/v1/messages`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'main', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await m.text();
  await go('requests');
  await waitFor(async () => /served by/i.test(await page.locator('body').innerText()), 'a route line');
  const apis = async () => page.locator('[data-testid^="request-api-"]').allInnerTexts();
  await waitFor(async () => (await apis()).includes('/v1/messages · Anthropic'), 'the Anthropic request labelled /v1/messages · Anthropic');
  assert((await apis()).includes('/v1/chat/completions · OpenAI'), `request API labels: ${await apis()}`);
  await page.screenshot({ path: join(shots, 'requests.png'), fullPage: true });
});

await test('a chain takes a strategy and a gear, previews its route, and a request shows its decision', async () => {
  await go('chains');
  const routing = page.getByTestId('routing-main');
  await routing.waitFor();
  // The strategy is stored and comes back after a reload.
  await page.getByTestId('strategy-main').selectOption('round_robin');
  const savedRouting = page.waitForResponse((r) => r.url().endsWith('/api/chains/main') && r.request().method() === 'PUT', { timeout: 10000 });
  await page.getByTestId('save-routing-main').click();
  assert((await savedRouting).ok(), 'saving the routing failed');
  await page.reload();
  await waitFor(async () => (await page.getByTestId('strategy-main').inputValue()) === 'round_robin', 'round_robin after a reload');
  // The gear switch has its own endpoint and shows at once.
  const switched = page.waitForResponse((r) => r.url().endsWith('/api/chains/main/gear'), { timeout: 10000 });
  await page.getByTestId('gear-main-manual').click();
  assert((await switched).ok(), 'switching the gear failed');
  await waitFor(async () => (await page.getByTestId('gear-main-manual').getAttribute('aria-pressed')) === 'true', 'the manual gear to show');
  // The preview names the gear, the strategy and every candidate.
  await page.getByTestId('preview-main').click();
  const dec = page.getByTestId('preview-decision-main');
  await dec.waitFor();
  assert((await page.getByTestId('preview-decision-main-gear').innerText()) === 'manual', `preview gear: ${await dec.innerText()}`);
  assert((await page.getByTestId('preview-decision-main-chain').innerText()) === 'main', `preview chain: ${await dec.innerText()}`);
  assert(await page.getByTestId('preview-decision-main-row-alpha/m-alpha').count() === 1, `preview candidates: ${await dec.innerText()}`);
  await page.screenshot({ path: join(shots, 'chains-routing.png'), fullPage: true });
  // A request's decision opens on the Requests screen.
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'main', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await r.text();
  const id = r.headers.get('x-freelane-request-id');
  assert(r.status === 200 && id, `request: ${r.status}`);
  await go('requests');
  const row = page.getByTestId(`request-row-${id}`);
  await row.waitFor();
  await row.click();
  await waitFor(async () => (await page.getByTestId(`decision-${id}-gear`).count()) === 1, 'the decision to load');
  assert((await page.getByTestId(`decision-${id}-gear`).innerText()) === 'manual', 'the request was not routed in the manual gear');
  assert((await page.getByTestId(`decision-${id}-chain`).innerText()) === 'main', 'the decision names another chain');
  assert((await page.getByTestId(`decision-${id}-candidates`).innerText()).includes('beta/m-beta'), 'the decision lists no candidates');
  // Back to how the chain was, for the tests that follow.
  await go('chains');
  await page.getByTestId('routing-main').waitFor();
  const back = page.waitForResponse((r) => r.url().endsWith('/api/chains/main/gear'), { timeout: 10000 });
  await page.getByTestId('gear-main-auto').click();
  await back;
  await page.getByTestId('strategy-main').selectOption('priority');
  const restored = page.waitForResponse((r) => r.url().endsWith('/api/chains/main') && r.request().method() === 'PUT', { timeout: 10000 });
  await page.getByTestId('save-routing-main').click();
  assert((await restored).ok(), 'restoring the routing failed');
});

await test('connect screen shows the endpoint', async () => {
  await go('connect');
  await waitFor(async () => (await page.locator('body').innerText()).includes(`${base}/v1`), 'the endpoint URL');
  await page.screenshot({ path: join(shots, 'connect.png'), fullPage: true });
});

const CSV_HEADER = 'time,request_id,chain,backend,outcome,status,latency_ms,ttft_ms,prompt_tokens,completion_tokens,estimated,cost,path';

await test('quota bars and spend update live while requests flow', async () => {
  await go('overview');
  const bar = page.getByTestId('quota-bar-capped/m-capped');
  await bar.waitFor();
  const rpd = page.getByTestId('quota-limit-capped-rpd');
  await waitFor(async () => /Daily requests\s*0 \/ 5/.test(await rpd.innerText()), 'the capped rpd bar at 0 / 5');
  const spent = page.getByTestId('spend-today-amount');
  assert((await spent.innerText()) === '$0.00', `spend today before any paid request: ${await spent.innerText()}`);
  assert(/of \$5\.00 daily budget/.test(await page.getByTestId('spend-today').innerText()), 'the daily budget is not shown');
  assert(/of \$50\.00 monthly budget/.test(await page.getByTestId('spend-month').innerText()), 'the monthly budget is not shown');

  for (let i = 0; i < 2; i++) assert((await chat('capped/m-capped')).status === 200, 'capped chat failed');
  await waitFor(async () => /2 \/ 5/.test(await rpd.innerText()), 'the rpd bar to show 2 / 5 without a reload');
  assert(/resets in/.test(await page.getByTestId('quota-reset-capped').innerText()), 'no reset countdown');

  for (let i = 0; i < 2; i++) assert((await chat('paid/m-paid')).status === 200, 'paid chat failed');
  await waitFor(async () => (await spent.innerText()) !== '$0.00', 'spend today to rise without a reload');
  await waitFor(async () => (await page.getByTestId('spend-month-amount').innerText()) !== '$0.00', 'spend this month to rise');

  for (let i = 0; i < 3; i++) await chat('capped/m-capped');
  await waitFor(async () => (await bar.getAttribute('data-level')) === 'full', 'the capped bar to turn red at 5 / 5');
  const sixth = await chat('capped/m-capped');
  assert(sixth.status !== 200, `the 6th request to a 5-per-day backend was served (${sixth.attempts})`);
  await page.screenshot({ path: join(shots, 'overview-quotas.png'), fullPage: true });
});

await test('budgets & limits screen shows the budgets and the stored limits', async () => {
  await page.getByTestId('nav-budgets').click();
  const row = page.getByTestId('budget-row-global|day');
  await row.waitFor();
  const text = await row.innerText();
  assert(/Daily budget for all traffic/.test(text) && /of \$5\.00/.test(text), `budget row: ${text}`);
  assert(!/\$0\.00 of/.test(text), `the budget shows no spend: ${text}`);
  await page.getByTestId('budget-row-global|month').waitFor();
  const form = page.getByTestId('limits-form');
  await form.getByTestId('limits-provider').selectOption('capped');
  await waitFor(async () => (await form.getByTestId('limits-rpd').inputValue()) === '5', 'the stored rpd of capped in the form');
  // A bad limit is refused in the page; the server's own checks answer the rest.
  await page.getByTestId('add-budget').click();
  const bf = page.getByTestId('budget-form');
  await bf.getByLabel('Covers').selectOption('provider:paid');
  await bf.getByLabel('Limit (dollars)').fill('0');
  await bf.getByRole('button', { name: 'Add budget' }).click();
  assert(/more than \$0/.test(await page.getByTestId('budget-error-limit').innerText()), 'no error for a zero limit');
  await bf.getByLabel('Limit (dollars)').fill('2.5');
  const put = page.waitForResponse((r) => r.url().endsWith('/api/budgets') && r.request().method() === 'PUT');
  await bf.getByRole('button', { name: 'Add budget' }).click();
  const resp = await put;
  assert(resp.ok(), `PUT /api/budgets: ${resp.status()} ${await resp.text()}`);
  await page.getByTestId('budget-row-provider:paid|day').waitFor();

  // Limits: a zone the page cannot judge goes to the server, whose message
  // shows next to the reset field; a good one saves and the quota bar follows.
  await form.getByTestId('limits-reset-zone').fill('Mars/Olympus_Mons');
  const bad = page.waitForResponse((r) => r.url().endsWith('/api/limits/capped') && r.request().method() === 'PUT');
  await form.getByRole('button', { name: 'Save limits' }).click();
  assert((await bad).status() === 400, 'the server took an unknown time zone');
  const zoneErr = await page.getByTestId('limits-error-limits.reset').innerText();
  assert(/Mars\/Olympus_Mons|zone|reset/i.test(zoneErr), `reset error: ${zoneErr}`);
  console.log(`     (the server said: ${zoneErr})`);
  await form.getByTestId('limits-reset-zone').fill('UTC');
  await form.getByTestId('limits-rpd').fill('8');
  const good = page.waitForResponse((r) => r.url().endsWith('/api/limits/capped') && r.request().method() === 'PUT');
  await form.getByRole('button', { name: 'Save limits' }).click();
  const ok = await good;
  assert(ok.ok(), `PUT /api/limits/capped: ${ok.status()} ${await ok.text()}`);
  await page.getByTestId('limits-saved').waitFor();
  await page.screenshot({ path: join(shots, 'budgets.png'), fullPage: true });
  await page.getByTestId('nav-overview').click();
  await waitFor(async () => /\/ 8/.test(await page.getByTestId('quota-limit-capped-rpd').innerText()), 'the capped bar to show the new limit of 8');
});

await test('usage history lists the backends and exports the ledger as CSV', async () => {
  await page.getByTestId('nav-usage').click();
  await page.getByTestId('usage-row-paid/m-paid').waitFor();
  await page.getByTestId('usage-chart').locator('svg').waitFor();
  await page.getByTestId('usage-api-/v1/messages').waitFor();
  const byAPI = await page.getByTestId('usage-apis').innerText();
  assert(byAPI.includes('/v1/messages · Anthropic') && byAPI.includes('/v1/chat/completions · OpenAI'), `usage per API: ${byAPI}`);
  const paid = await page.getByTestId('usage-row-paid/m-paid').innerText();
  assert(/\$/.test(paid) && !/\$0\.00/.test(paid), `paid usage row has no cost: ${paid}`);
  const link = page.getByTestId('usage-export');
  const href = await link.getAttribute('href');
  assert(href.startsWith('/api/usage.csv?'), `export link: ${href}`);
  const [dl] = await Promise.all([page.waitForEvent('download'), link.click()]);
  const name = dl.suggestedFilename();
  assert(/^freelane-usage-.*\.csv$/.test(name), `download name: ${name}`);
  const csv = readFileSync(await dl.path(), 'utf8');
  const lines = csv.trim().split(/\r?\n/);
  assert(lines[0] === CSV_HEADER, `CSV header: ${lines[0]}`);
  assert(lines.length > 1 && lines.some((l) => l.includes('paid/m-paid')), `CSV has no paid rows (${lines.length} lines)`);
  await page.screenshot({ path: join(shots, 'usage.png'), fullPage: true });
});

await test('requests screen shows tokens and cost per request', async () => {
  await chat('paid/m-paid');
  await page.getByTestId('nav-requests').click();
  await waitFor(async () => (await page.locator('[data-testid^="request-cost-"]').count()) > 0, 'a request with its cost');
  await page.screenshot({ path: join(shots, 'requests-cost.png'), fullPage: true });
});

await test('paused routing shows a banner and Resume serves again', async () => {
  // A write from the signed-in page, with the session it keeps.
  const r = await page.evaluate(async () => {
    const { token } = JSON.parse(localStorage.getItem('freelane.session'));
    const res = await fetch('/api/routing', { method: 'PUT', headers: { 'Content-Type': 'application/json', 'X-FreeLane-Session': token }, body: '{"paused":true}' });
    return { ok: res.ok, status: res.status };
  });
  assert(r.ok, `PUT /api/routing: ${r.status}`);
  const notice = page.getByTestId('routing-paused-notice');
  await notice.waitFor();
  assert((await notice.innerText()).includes('Routing is paused: /v1 answers 503 until you resume.'), 'banner text');
  assert((await chat('alpha/m-alpha')).status === 503, 'a paused FreeLane still served');
  await page.screenshot({ path: join(shots, 'routing-paused.png') });
  await notice.getByRole('button', { name: 'Resume' }).click();
  await notice.waitFor({ state: 'detached' });
  assert((await chat('alpha/m-alpha')).status === 200, 'not serving after Resume');
});

// A second FreeLane as a new user starts it: no provider, a catalog whose
// free tier is the fake upstream, and discovery looking at one port where
// nothing listens yet.
await test('first run: the setup screen, paste a key, the backend serves, the test shows the route, a local server is found', async () => {
  const port2 = await freePort();
  const localPort = await freePort();
  const base2 = `http://127.0.0.1:${port2}`;
  const dir2 = mkdtempSync(join(tmpdir(), 'freelane-e2e-setup-'));
  writeFileSync(join(dir2, 'catalog.yaml'), `date: 2099-01-01
providers:
  - id: alpha
    name: Alpha Free
    tier: free
    dialect: openai
    base_url: "${upURL}"
    key_env: [ALPHA_E2E_API_KEY]
    signup_url: https://alpha.example/keys
    limits:
      - {rpm: 20, rpd: 50, reset: "daily 00:00 UTC", pool: account}
    notes: ["The daily requests are shared by every model of the account."]
    models:
      - {id: m-setup, params_b: 70, context: 131072}
  - id: betapaid
    name: Beta Paid
    tier: paid
    dialect: openai
    base_url: "${upURL}"
    key_env: [BETA_E2E_API_KEY]
    prices_read: 2099-01-01
    models:
      - {id: m-paid-b, price: {input: 1, output: 2}}
`);
  // The user confirmed alpha's address earlier; betapaid, new to the
  // built-in catalog, waits for an answer on the Providers screen.
  writeFileSync(join(dir2, 'catalog-addresses.json'), JSON.stringify({ confirmed: { alpha: { base_url: upURL, key_env: ['ALPHA_E2E_API_KEY'] } } }));
  const cfg2 = join(dir2, 'freelane.yaml');
  writeFileSync(cfg2, `listen: 127.0.0.1:${port2}\ndiscovery: {ports: [${localPort}]}\nprobes: {disabled: true}\n`);
  const { proc: fl2, link: link2 } = await launch(cfg2, dir2, base2, 'the second freelane to start');
  const empty = await fetch(`${base2}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'auto', messages: [{ role: 'user', content: 'hi' }] }) });
  const emptyBody = await empty.json();
  assert(empty.status === 503 && emptyBody.error.message.includes(`open the dashboard at ${base2}/`), `empty pool: ${empty.status} ${JSON.stringify(emptyBody)}`);

  const ctx = await browser.newContext({ viewport: { width: 1024, height: 900 } });
  const p = await ctx.newPage();
  p.on('pageerror', (e) => pageErrors.push(e.message));
  await p.goto(link2);
  // Nothing can serve, so the dashboard opens on the setup.
  await p.getByTestId('setup-needed').waitFor();
  assert(p.url().includes('#/setup'), `first run did not open the setup: ${p.url()}`);
  const card = p.getByTestId('catalog-card-alpha');
  await card.waitFor();
  const cardText = await card.innerText();
  assert(cardText.includes('50 requests a day') && cardText.includes('00:00 UTC'), `alpha card lacks its limits: ${cardText}`);
  await p.screenshot({ path: join(shots, 'setup-empty.png'), fullPage: true });

  await p.getByTestId('key-alpha').fill('sk-alpha-e2e-0001');
  await p.getByTestId('add-alpha').click();
  await p.getByTestId('added-alpha').waitFor();
  const served = await fetch(`${base2}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'auto', messages: [{ role: 'user', content: 'hi' }] }) });
  assert(served.status === 200 && served.headers.get('x-freelane-backend') === 'alpha/m-setup', `after adding the key: ${served.status} ${served.headers.get('x-freelane-backend')}`);

  await p.getByTestId('setup-test').click();
  const route = p.getByTestId('route-result');
  await route.waitFor();
  await waitFor(async () => (await p.getByTestId('route-backend').innerText()).includes('alpha/m-setup'), 'the test to show its route');
  await p.screenshot({ path: join(shots, 'setup-added.png'), fullPage: true });

  // A local server starts; "Look again" finds it and its model serves.
  const local = start(join(bin, 'fakelocal'), ['-kind', 'ollama', '-port', String(localPort), '-model', 'qwen2.5-coder:7b:8192']);
  await new Promise((res) => createInterface({ input: local.stdout }).once('line', res));
  await p.getByTestId('setup-scan').click();
  await waitFor(async () => (await p.getByTestId('setup-local').innerText()).includes('qwen2.5-coder:7b'), 'the local server to be listed');
  await p.screenshot({ path: join(shots, 'setup-local.png'), fullPage: true });
  const pinned = await fetch(`${base2}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: `ollama-${localPort}/qwen2.5-coder:7b`, messages: [{ role: 'user', content: 'hi' }] }) });
  assert(pinned.status === 200, `the local model did not serve: ${pinned.status}`);

  // The catalog picker on the Providers screen searches and groups.
  await p.goto(`${base2}/#/providers`);
  await p.getByTestId('open-catalog').click();
  const change = p.getByTestId('catalog-change-betapaid');
  await change.waitFor();
  assert((await change.innerText()).replace(/\s+/g, ' ').includes(`The catalog adds Beta Paid (betapaid) at ${upURL}`), `the pending change: ${await change.innerText()}`);
  assert(await p.getByTestId('catalog-card-betapaid').count() === 0, 'an unconfirmed provider was offered');
  await p.screenshot({ path: join(shots, 'providers-catalog-pending.png'), fullPage: true });
  await p.getByTestId('catalog-change-confirm-betapaid').click();
  await p.getByTestId('catalog-card-betapaid').waitFor();
  await change.waitFor({ state: 'detached' });
  await p.screenshot({ path: join(shots, 'providers-catalog.png'), fullPage: true });
  await ctx.close();
  fl2.kill('SIGTERM');
  local.kill('SIGTERM');
});

// dragItem drags item i of a chain's list over the top half of item j, the
// way a user does: press, move in small steps (the first ones start the
// drag), release. svelte-dnd-action follows mouse events.
async function dragItem(p, list, i, j) {
  const items = list.locator('[data-testid^="chain-item-"]');
  await list.scrollIntoViewIfNeeded();
  await p.waitForTimeout(200);
  const from = await items.nth(i).boundingBox();
  const to = await items.nth(j).boundingBox();
  const x = from.x + 24, y0 = from.y + from.height / 2, y1 = to.y + 2;
  await p.mouse.move(x, y0);
  await p.mouse.down();
  for (let k = 1; k <= 15; k++) {
    await p.mouse.move(x, y0 - ((y0 - y1) * k) / 15);
    await p.waitForTimeout(40);
  }
  await p.waitForTimeout(200);
  await p.mouse.up();
}

// The README's headline setup: Ollama running (a fake one, found by
// discovery on the one port it looks at) and one free key (the fake
// vendor). The discovered model is a provider like the configured ones:
// auto can be reordered around it, a user chain can hold it, and once the
// server stops both keep it, shown as gone, and still save.
await test('a local server found by discovery is a provider: reorder auto, put it in a chain, and keep it there as gone once it stops', async () => {
  const port3 = await freePort();
  const localPort = await freePort();
  const base3 = `http://127.0.0.1:${port3}`;
  const dir3 = mkdtempSync(join(tmpdir(), 'freelane-e2e-local-'));
  const local = start(join(bin, 'fakelocal'), ['-kind', 'ollama', '-port', String(localPort), '-model', 'qwen2.5-coder:7b:8192']);
  await new Promise((res) => createInterface({ input: local.stdout }).once('line', res));
  const cfg3 = join(dir3, 'freelane.yaml');
  writeFileSync(cfg3, `
listen: 127.0.0.1:${port3}
discovery: {ports: [${localPort}]}
probes: {disabled: true}
providers:
  - {name: acme, tier: free, base_url: "${upURL}", api_key: sk-acme-e2e-0001, models: [{id: m-acme, params_b: 70, context: 131072}, {id: m-acme-small, params_b: 8, context: 8192}]}
chains:
  - {name: mine, backends: [acme/m-acme]}
`);
  const { proc: fl3, link: link3 } = await launch(cfg3, dir3, base3, 'the third freelane to start');
  const ctx = await browser.newContext({ viewport: { width: 1024, height: 900 } });
  try {
    const p = await ctx.newPage();
    p.on('pageerror', (e) => pageErrors.push(e.message));
    await p.goto(link3);
    await p.getByTestId('nav-overview').waitFor();
    const ollama = `ollama-${localPort}`;
    const qwen = `${ollama}/qwen2.5-coder:7b`;

    // Providers & keys lists the server as a provider, with where it was found.
    await p.goto(`${base3}/#/providers`);
    const card = p.getByTestId(`provider-${ollama}`);
    await card.waitFor();
    await waitFor(async () => (await p.getByTestId(`local-status-${ollama}`).innerText()) === 'serving', 'the local server to show as serving');
    assert((await p.getByTestId(`local-found-${ollama}`).innerText()).includes(`found on port ${localPort}`), `where it was found: ${await p.getByTestId(`local-found-${ollama}`).innerText()}`);
    assert((await card.innerText()).includes('qwen2.5-coder:7b'), `its models: ${await card.innerText()}`);
    assert(!(await p.getByText('Add your first key').count()), 'the screen asks for a first key');
    await p.screenshot({ path: join(shots, 'providers-local.png'), fullPage: true });

    // Drag the discovered model to the top of auto; the order is saved and holds.
    await p.goto(`${base3}/#/chains`);
    const auto = p.getByTestId('chain-auto');
    await auto.getByTestId(`chain-item-${qwen}`).waitFor();
    const names = async (list) => (await list.locator('[data-testid^="chain-item-"]').evaluateAll((els) => els.map((e) => e.dataset.testid.replace(/^chain-item-/, ''))));
    const before = await names(auto);
    assert(before.at(-1) === qwen, `auto before the drag: ${before.join(', ')}`);
    const putAuto = p.waitForResponse((r) => r.url().endsWith('/api/chains/auto') && r.request().method() === 'PUT', { timeout: 10000 });
    await dragItem(p, auto, before.length - 1, 0);
    const saved = await putAuto;
    assert(saved.ok(), `PUT /api/chains/auto: ${saved.status()} ${await saved.text()}`);
    await p.waitForTimeout(300);
    assert(!(await p.getByTestId('chain-error-auto').count()), `auto: ${await p.getByTestId('chain-error-auto').innerText().catch(() => '')}`);
    await waitFor(async () => (await names(auto))[0] === qwen, 'the local model first in auto');
    await p.reload();
    await auto.getByTestId(`chain-item-${qwen}`).waitFor();
    const after = await names(auto);
    assert(after[0] === qwen && after.length === before.length, `auto after a reload: ${after.join(', ')}`);
    assert(!(await p.getByText('Could not save the order').count()), 'Could not save the order');

    // Put it in the user chain too.
    const mine = p.getByTestId('chain-mine');
    const mineCard = p.locator('article', { has: mine });
    await mineCard.getByLabel('Backend to add to mine').selectOption(qwen);
    const putMine = p.waitForResponse((r) => r.url().endsWith('/api/chains/mine') && r.request().method() === 'PUT');
    await mineCard.getByRole('button', { name: 'Add', exact: true }).click();
    const added = await putMine;
    assert(added.ok(), `PUT /api/chains/mine: ${added.status()} ${await added.text()}`);
    await mine.getByTestId(`chain-item-${qwen}`).waitFor();
    assert(!(await p.getByTestId('chain-error-mine').count()), `mine: ${await p.getByTestId('chain-error-mine').innerText().catch(() => '')}`);
    const routed = await fetch(`${base3}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'auto', messages: [{ role: 'user', content: 'hi' }] }) });
    await routed.text();
    assert(routed.headers.get('x-freelane-backend') === qwen, `auto after the reorder went to ${routed.headers.get('x-freelane-backend')} (${routed.headers.get('x-freelane-attempts')})`);
    await p.screenshot({ path: join(shots, 'chains-local.png'), fullPage: true });

    // The server stops; after a look the chains keep it, shown as gone.
    local.kill('SIGTERM');
    await new Promise((res) => (local.exitCode !== null ? res() : local.once('exit', res)));
    const scan = await p.evaluate(async () => {
      const { token } = JSON.parse(localStorage.getItem('freelane.session'));
      const res = await fetch('/api/setup/scan', { method: 'POST', headers: { 'X-FreeLane-Session': token } });
      return { ok: res.ok, status: res.status };
    });
    assert(scan.ok, `POST /api/setup/scan: ${scan.status}`);
    await p.reload();
    const gone = p.getByTestId(`chain-gone-mine-${qwen}`);
    await gone.waitFor();
    assert(/gone/.test(await gone.innerText()) && /stopped answering/.test(await gone.innerText()), `the gone entry: ${await gone.innerText()}`);
    await p.getByTestId(`chain-gone-auto-${qwen}`).waitFor();

    // Saving the chain that names it still works, and keeps it.
    await mineCard.getByLabel('Backend to add to mine').selectOption('acme/m-acme-small');
    const putGone = p.waitForResponse((r) => r.url().endsWith('/api/chains/mine') && r.request().method() === 'PUT');
    await mineCard.getByRole('button', { name: 'Add', exact: true }).click();
    const kept = await putGone;
    assert(kept.ok(), `PUT /api/chains/mine with a gone entry: ${kept.status()} ${await kept.text()}`);
    await mine.getByTestId('chain-item-acme/m-acme-small').waitFor();
    assert(!(await p.getByTestId('chain-error-mine').count()), `mine: ${await p.getByTestId('chain-error-mine').innerText().catch(() => '')}`);
    await p.reload();
    await mine.getByTestId('chain-item-acme/m-acme-small').waitFor();
    const mineNow = await names(mine);
    assert(JSON.stringify(mineNow) === JSON.stringify(['acme/m-acme', qwen, 'acme/m-acme-small']), `mine after a reload: ${mineNow.join(', ')}`);
    await gone.waitFor();
    // So does a new order of auto with the gone entry in it.
    const autoNow = await names(auto);
    const putAuto2 = p.waitForResponse((r) => r.url().endsWith('/api/chains/auto') && r.request().method() === 'PUT', { timeout: 10000 });
    await dragItem(p, auto, autoNow.length - 1, 0);
    const saved2 = await putAuto2;
    assert(saved2.ok(), `PUT /api/chains/auto with a gone entry: ${saved2.status()} ${await saved2.text()}`);
    await p.waitForTimeout(300);
    assert(!(await p.getByText('Could not save the order').count()), 'Could not save the order, with a gone entry');
    await p.screenshot({ path: join(shots, 'chains-local-gone.png'), fullPage: true });

    await p.goto(`${base3}/#/providers`);
    await waitFor(async () => (await p.getByTestId(`local-status-${ollama}`).innerText()) === 'stopped answering', 'the provider to show the server stopped');
  } finally {
    await ctx.close();
    fl3.kill('SIGTERM');
    local.kill('SIGTERM');
  }
});

// A FreeLane of its own with the response cache on, for a paid model whose
// fake vendor answers as a prompt cache does (cache-a), and a paid model
// nobody priced. The main instance keeps the cache off, as a default
// install does.
let cachingInstance = null;
async function cachingFreeLane() {
  if (cachingInstance) return cachingInstance;
  const port4 = await freePort();
  const base4 = `http://127.0.0.1:${port4}`;
  const dir4 = mkdtempSync(join(tmpdir(), 'freelane-e2e-cache-'));
  const cfg4 = join(dir4, 'freelane.yaml');
  writeFileSync(cfg4, `
listen: 127.0.0.1:${port4}
probes: {disabled: true}
cache: {enabled: true}
providers:
  - name: cachy
    tier: own
    base_url: "${upURL}"
    api_key: sk-cachy-e2e-0006
    models:
      - {id: cache-a, params_b: 70, context: 131072, price: {input: 100, output: 200, cache_read: 10}}
      - {id: cache-unpriced, params_b: 8, context: 8192}
`);
  const { proc, link } = await launch(cfg4, dir4, base4, 'the caching freelane to start');
  const ctx = await browser.newContext({ viewport: { width: 1024, height: 900 } });
  const p = await ctx.newPage();
  p.on('pageerror', (e) => pageErrors.push(e.message));
  await p.goto(link);
  await p.getByTestId('nav-overview').waitFor();
  cachingInstance = { base: base4, proc, ctx, p };
  return cachingInstance;
}

await test('caching screen shows prompt-cache share, the response cache and savings', async () => {
  const { base: base4, p } = await cachingFreeLane();
  // A long system prompt, as a coding agent sends on every turn.
  const system = 'You are a careful assistant. '.repeat(150);
  const ask = async (messages) => {
    const r = await fetch(`${base4}/v1/chat/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'X-FreeLane-Session': 'e2e-conversation-1' },
      body: JSON.stringify({ model: 'cachy/cache-a', messages, temperature: 0 }),
    });
    const body = await r.json();
    return { status: r.status, cache: r.headers.get('x-freelane-cache'), backend: r.headers.get('x-freelane-backend'), usage: body.usage };
  };
  const turn1 = [{ role: 'system', content: system }, { role: 'user', content: 'Name a colour.' }];
  const first = await ask(turn1);
  assert(first.status === 200 && first.cache === 'miss', `first ask: ${first.status} cache ${first.cache}`);
  // The same deterministic question again: answered from the response cache.
  const again = await ask(turn1);
  assert(again.status === 200 && again.cache === 'hit', `the same question again: ${again.status} cache ${again.cache}`);
  // The next turn shares the prefix: the vendor reads it from its prompt cache.
  const turn2 = await ask([...turn1, { role: 'assistant', content: 'Blue.' }, { role: 'user', content: 'Another one.' }]);
  const cachedTokens = turn2.usage?.prompt_tokens_details?.cached_tokens ?? 0;
  assert(turn2.status === 200 && turn2.cache === 'miss', `the next turn: ${turn2.status} cache ${turn2.cache}`);
  assert(cachedTokens > 0, `the next turn's usage has no cached tokens: ${JSON.stringify(turn2.usage)}`);

  // The request log is written as requests finish; wait until the view has all three.
  await waitFor(async () => {
    const v = await p.evaluate(async () => {
      const { token } = JSON.parse(localStorage.getItem('freelane.session'));
      return (await fetch('/api/caching?window=1h', { headers: { 'X-FreeLane-Session': token } })).json();
    });
    return v.response.hits === 1 && v.response.misses === 2 && v.backends.some((b) => b.cached_tokens > 0);
  }, 'the caching view to count the hit and the cached prompt');

  await p.goto(`${base4}/#/caching`);
  const resp = p.getByTestId('caching-response');
  await resp.waitFor();
  await waitFor(async () => /1 hit, 2 misses/.test(await resp.innerText()), 'the response cache tile to count the hit');
  const rate = await resp.locator('[data-col="rate"]').innerText();
  assert(rate === '33.3%', `response cache hit rate: ${rate}`);
  const respSaved = await resp.locator('[data-col="saved"]').innerText();
  assert(/^\$\d/.test(respSaved) && respSaved !== '$0.00', `response cache savings: ${respSaved}`);
  assert(/answers, .* of 256 MB/.test(await p.getByTestId('caching-store').innerText()), `store: ${await p.getByTestId('caching-store').innerText()}`);
  const prompt = p.getByTestId('caching-prompt-total');
  const share = await prompt.locator('[data-col="share"]').innerText();
  assert(/%$/.test(share) && share !== '0%', `prompt-cache share: ${share}`);
  const promptSaved = await prompt.locator('[data-col="saved"]').innerText();
  assert(promptSaved !== '$0.00', `prompt-cache savings: ${promptSaved}`);
  const row = p.getByTestId('caching-backend-cachy/cache-a');
  assert((await row.locator('[data-col="cached"]').innerText()) !== '0', `cached tokens of cachy/cache-a: ${await row.innerText()}`);
  const sessions = p.locator('tr[data-testid^="caching-session-"]');
  assert((await sessions.count()) === 1, `sessions listed: ${await sessions.count()}`);
  // Its three requests, the hit among them.
  assert((await sessions.first().locator('[data-col="turns"]').innerText()) === '3', `session turns: ${await sessions.first().innerText()}`);
  await p.screenshot({ path: join(shots, 'caching.png'), fullPage: true });

  // The session's link opens its requests, the hit among them with its badge.
  const tag = (await sessions.first().getByRole('link').innerText()).trim();
  assert(/^[0-9a-f]{16}$/.test(tag), `session tag: ${tag}`);
  await sessions.first().getByRole('link').click();
  await p.getByTestId('filter-session').waitFor();
  const badge = p.locator('[data-testid^="request-cache-"]', { hasText: 'cache hit' });
  await waitFor(async () => (await badge.count()) === 1, 'one request with the cache hit badge');
  const hitId = (await badge.getAttribute('data-testid')).replace('request-cache-', '');
  const route = await p.getByTestId(`route-${hitId}`).innerText();
  assert(route.startsWith('cache hit — no backend called'), `the hit's route: ${route}`);
  assert(/^saved \$/.test(await p.getByTestId(`request-saved-${hitId}`).innerText()), 'the hit shows what it saved');
  const cachedCells = await p.locator('[data-testid^="request-cached-"]').allInnerTexts();
  assert(cachedCells.length === 1 && /^[\d,]+ cached \(\d+(\.\d)?%\)$/.test(cachedCells[0]), `cached prompt tokens: ${cachedCells.join(' | ')}`);
  // The next turn's details: what its prompt cache read, and its session.
  const warmId = (await p.locator('[data-testid^="request-cached-"]').getAttribute('data-testid')).replace('request-cached-', '');
  await p.getByTestId(`request-row-${warmId}`).click();
  const sess = p.getByTestId(`request-session-${warmId}`);
  await sess.waitFor();
  assert((await sess.innerText()).includes(tag), `the details' session: ${await sess.innerText()}`);
  assert(/^[\d,]+ read of [\d,]+ prompt tokens$/.test(await p.getByTestId(`request-prompt-cache-${warmId}`).innerText()), `prompt cache detail: ${await p.getByTestId(`request-prompt-cache-${warmId}`).innerText()}`);
  await p.screenshot({ path: join(shots, 'requests-caching.png'), fullPage: true });
});

await test('a paid model without a price is flagged, and the flag leads to setting its price', async () => {
  const { base: base4, p, ctx, proc } = await cachingFreeLane();
  try {
    await p.goto(`${base4}/#/overview`);
    const notice = p.getByTestId('unpriced-notice');
    await notice.waitFor();
    assert((await notice.innerText()).includes('cachy/cache-unpriced has no price'), `overview notice: ${await notice.innerText()}`);
    await p.screenshot({ path: join(shots, 'overview-unpriced.png') });
    await p.goto(`${base4}/#/providers`);
    const flag = p.getByTestId('unpriced-cachy/cache-unpriced');
    await flag.waitFor();
    assert(!(await p.getByTestId('unpriced-cachy/cache-a').count()), 'a priced model is flagged');
    await p.screenshot({ path: join(shots, 'providers-unpriced.png') });
    await flag.click();
    await p.getByTestId('unpriced').waitFor();
    const form = p.getByTestId('limits-form');
    await waitFor(async () => (await form.getByTestId('limits-model').inputValue()) === 'cache-unpriced', 'the limits form to open on the unpriced model');
    await form.getByTestId('limits-unpriced').waitFor();
    await p.screenshot({ path: join(shots, 'budgets-unpriced.png') });
    // Setting its price clears the flag.
    await form.getByTestId('limits-price-input').fill('0.5');
    await form.getByTestId('limits-price-output').fill('1.5');
    await form.getByRole('button', { name: 'Save limits' }).click();
    await form.getByTestId('limits-saved').waitFor();
    await p.getByTestId('unpriced').waitFor({ state: 'detached' });
  } finally {
    await ctx.close();
    proc.kill('SIGTERM');
  }
});

// Suites in e2e/suites/ each export a default function that takes this
// harness and registers its tests with it, in file name order, on the same
// browser and FreeLane as the tests above.
const harness = { browser, mainContext, page, base, upURL, cfg, dir, shots, bin, loginLink,
  test, assert, waitFor, go, chat, launch, freePort, start, upgradeStatus };
const suiteDir = join(import.meta.dirname, 'suites');
for (const f of (existsSync(suiteDir) ? readdirSync(suiteDir) : []).filter((n) => n.endsWith('.mjs')).sort()) {
  const suite = await import(pathToFileURL(join(suiteDir, f)).href);
  await suite.default(harness);
}

await test('no page errors (LANG=C safe, no Intl failures)', async () => {
  assert(pageErrors.length === 0, `page errors: ${pageErrors.join('; ')}`);
  assert(cspErrors.length === 0, `blocked by the Content-Security-Policy: ${cspErrors.join('; ')}`);
});

await browser.close();
cleanup();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
