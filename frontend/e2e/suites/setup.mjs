// Browser tests of the first run: Setup's search, the route test in reach,
// a key whose vendor cannot be reached (and Add anyway), and Connect's
// snippets at the address of the FreeLane that runs.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Go's and the wire's own error text, which no message may carry.
const RAW = [/dial (tcp|unix)/, /no such host/, /connect: connection refused/, /\bEOF\b/, /context deadline exceeded/,
  /HTTP \d+:/, /%!/, /<nil>/, /(Get|Post) "http/, /modellist: /];

function rawIn(text) {
  const hit = RAW.find((re) => re.test(text));
  return hit ? hit.source : '';
}

export default async function setupSuite(h) {
  const { browser, page, base, shots, test, assert, waitFor, go, launch, freePort } = h;
  const port = new URL(base).port;

  await test('setup: the search filters the catalog and the route test stays in reach', async () => {
    await go('setup');
    const search = page.getByTestId('setup-search');
    await search.waitFor();
    const cards = page.locator('[data-testid^="catalog-card-"]');
    await waitFor(async () => (await cards.count()) > 10, 'the catalog cards');
    const all = await cards.count();
    const own = page.getByTestId('setup-own');
    assert(/Your own keys/.test(await own.innerText()), 'no "Your own keys" section');
    assert((await own.locator('[data-testid^="catalog-card-"]').count()) > 0, 'the own-keys section lists no vendor');
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    console.log(`     (Setup: ${all} catalog cards, page ${height} px tall at 1024 px wide)`);
    await page.screenshot({ path: join(shots, 'setup.png'), fullPage: true });

    // The route test is above the catalog and stays on screen while it scrolls.
    const tryit = page.getByTestId('setup-tryit');
    const top0 = (await tryit.boundingBox()).y;
    const free0 = (await page.getByTestId('setup-free').boundingBox()).y;
    assert(top0 < free0, `the route test (y ${top0}) is not above the catalog (y ${free0})`);
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    await page.waitForTimeout(100);
    const box = await tryit.boundingBox();
    // Just below the dashboard's own sticky bar, whatever its height at
    // this width: not scrolled away, and not hidden under the bar.
    const bar = await page.locator('header.top').boundingBox();
    const barBottom = bar.y + bar.height;
    assert(box && box.y >= barBottom - 1 && box.y < barBottom + 40, `the route test is at y ${box && box.y}, the bar ends at ${barBottom}`);
    await page.getByTestId('setup-test').click();
    await page.getByTestId('route-result').waitFor();
    const result = await page.getByTestId('route-result').innerText();
    assert(!rawIn(result), `the route test shows raw error text: ${result}`);
    await page.screenshot({ path: join(shots, 'setup-scrolled-test.png') });
    await page.evaluate(() => window.scrollTo(0, 0));

    // A jump link brings a section's heading into view, below the route test.
    await page.getByTestId('jump-setup-own-title').click();
    await waitFor(async () => {
      const head = await page.locator('#setup-own-title').boundingBox();
      const t = await tryit.boundingBox();
      return head && t && head.y >= t.y + t.height - 1 && head.y < t.y + t.height + 80;
    }, 'the jump to "Your own keys"');
    await page.screenshot({ path: join(shots, 'setup-jumped-own-keys.png') });
    await page.evaluate(() => window.scrollTo(0, 0));

    await search.fill('groq');
    await waitFor(async () => (await cards.count()) < all, 'the search to narrow the cards');
    const ids = await cards.evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')));
    assert(ids.includes('catalog-card-groq'), `groq is not shown for "groq": ${ids}`);
    for (const id of ids) {
      const text = (await page.getByTestId(id).innerText()).toLowerCase();
      assert(text.includes('groq'), `${id} is shown for "groq" but does not mention it`);
    }
    assert(/match/.test(await page.getByTestId('setup-search-count').innerText()), 'the count does not say how many match');
    await search.fill('no-such-provider-anywhere');
    await page.getByTestId('setup-search-none').waitFor();
    assert((await cards.count()) === 0, 'cards are left for a search nothing matches');
    await page.screenshot({ path: join(shots, 'setup-search-none.png') });
    await search.fill('');
    await waitFor(async () => (await cards.count()) === all, 'every card back after clearing the search');
  });

  await test('setup: a vendor out of reach gets a sentence and Add anyway, which adds its key as not yet checked', async () => {
    // A FreeLane of its own whose catalog has a vendor on a port nothing
    // listens on, confirmed as a user would have confirmed it.
    const dead = await freePort();
    const port5 = await freePort();
    const base5 = `http://127.0.0.1:${port5}`;
    const dir5 = mkdtempSync(join(tmpdir(), 'freelane-e2e-offline-'));
    const downURL = `http://127.0.0.1:${dead}/v1`;
    writeFileSync(join(dir5, 'catalog.yaml'), `date: 2099-01-01
providers:
  - id: downco
    name: DownCo
    tier: free
    dialect: openai
    base_url: "${downURL}"
    key_env: [DOWNCO_API_KEY]
    signup_url: https://downco.example/keys
    list_models: true
    models:
      - {id: d-model, params_b: 70}
`);
    writeFileSync(join(dir5, 'catalog-addresses.json'), JSON.stringify({ confirmed: { downco: { base_url: downURL, key_env: ['DOWNCO_API_KEY'] } } }));
    const cfg5 = join(dir5, 'freelane.yaml');
    writeFileSync(cfg5, `listen: 127.0.0.1:${port5}\nprobes: {disabled: true}\ndiscovery: {disabled: true}\n`);
    const { proc, link } = await launch(cfg5, dir5, base5, 'the offline freelane to start');
    const ctx = await browser.newContext({ viewport: { width: 1024, height: 900 } });
    try {
      const p = await ctx.newPage();
      await p.goto(link);
      await p.getByTestId('nav-overview').waitFor();
      // The empty overview leads to Setup.
      await p.goto(`${base5}/#/overview`);
      await p.getByTestId('empty-overview').waitFor();
      await p.getByTestId('empty-overview-setup').click();
      await p.getByTestId('catalog-card-downco').waitFor();
      await p.getByTestId('key-downco').fill('sk-downco-offline-0001');
      await p.getByTestId('add-downco').click();
      const err = p.getByTestId('add-error-downco');
      await err.waitFor();
      const msg = await err.innerText();
      assert(msg.startsWith('FreeLane could not reach DownCo to check the key: add it anyway, or try again.'), `the message: ${msg}`);
      assert(/^[A-Z]/.test(msg) && /[.!?]$/.test(msg.trim()), `not a sentence: ${msg}`);
      assert(!rawIn(msg), `raw error text (${rawIn(msg)}): ${msg}`);
      assert(!msg.includes('sk-downco'), 'the message repeats the key');
      await p.getByTestId('try-again-downco').waitFor();
      await p.screenshot({ path: join(shots, 'setup-offline-key.png') });
      await p.getByTestId('add-anyway-downco').click();
      await p.getByTestId('add-result-downco').waitFor();
      assert(/not checked yet/.test(await p.getByTestId('add-result-downco').innerText()), 'the answer does not say the key is not checked');
      await p.getByTestId('added-downco').waitFor();
      await p.getByTestId('unchecked-downco').waitFor();
      await p.screenshot({ path: join(shots, 'setup-added-anyway.png') });
      // It really was added: the API lists it, and Providers marks its key.
      const session = await p.evaluate(() => Object.entries(localStorage).find(([k]) => /session/i.test(k))?.[1] ?? '');
      await p.goto(`${base5}/#/providers`);
      await p.getByTestId('key-unchecked-downco').waitFor();
      assert(session !== undefined, 'no session');
      await p.screenshot({ path: join(shots, 'providers-unchecked.png') });
    } finally {
      await ctx.close();
      proc.kill('SIGTERM');
    }
  });

  await test('connect: jump links, a curl snippet and every snippet at the running instance\'s port', async () => {
    assert(port !== '7788', 'the test FreeLane runs on the default port; this test needs another');
    await go('connect');
    await page.getByTestId('tool-claude-code').waitFor();
    const endpoint = await page.getByTestId('endpoint').innerText();
    assert(endpoint === `${base}/v1`, `endpoint ${endpoint}, want ${base}/v1`);
    const write = await page.getByTestId('tool-claude-code-write').innerText();
    assert(write.includes(`--url ${base}`), `the write command has no --url for port ${port}: ${write}`);
    for (const id of ['tool-claude-code-shell', 'tool-codex-file', 'snippet-curl', 'snippet-python', 'snippet-node', 'snippet-env']) {
      const text = await page.getByTestId(id).innerText();
      assert(text.includes(`127.0.0.1:${port}`), `${id} lacks the port ${port}: ${text}`);
      assert(!text.includes(':7788'), `${id} names 7788: ${text}`);
    }
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    console.log(`     (Connect: page ${height} px tall at 1024 px wide)`);
    await page.screenshot({ path: join(shots, 'connect.png'), fullPage: true });
    // A jump link brings its tool into view.
    await page.getByTestId('jump-connect-cursor').click();
    await waitFor(async () => {
      const b = await page.getByTestId('tool-cursor').boundingBox();
      const jumps = await page.getByTestId('connect-jumps').boundingBox();
      // In view, below the jump links that stay on screen.
      return b && jumps && b.y >= jumps.y + jumps.height - 1 && b.y < 400;
    }, 'the jump to Cursor');
    await page.screenshot({ path: join(shots, 'connect-jumped.png') });
    // The curl snippet, run as written, gets an answer from this FreeLane.
    const curl = await page.getByTestId('snippet-curl').locator('pre').innerText();
    const out = await new Promise((res, rej) => execFile('bash', ['-c', curl], { timeout: 15000 }, (e, stdout, stderr) => (e ? rej(new Error(`${e.message}: ${stderr}`)) : res(stdout))));
    const reply = JSON.parse(out);
    assert(Array.isArray(reply.choices) && reply.choices.length > 0, `curl got: ${out.slice(0, 300)}`);
  });
}
