// The charts' history: the Overview's charts draw the server's time series,
// so a reload (and a restart, for the spans kept on disk) draws the same
// points; every span spans itself; the Usage screen draws one bar for one
// day of data.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SPANS = [
  { w: '1m', span: 60, res: '10', buckets: '6' },
  { w: '5m', span: 300, res: '10', buckets: '30' },
  { w: '1h', span: 3600, res: '10', buckets: '360' },
  { w: '24h', span: 86400, res: '60', buckets: '1440' },
  { w: '7d', span: 604800, res: '3600', buckets: '168' },
];

export default async function (h) {
  const { page, base, test, assert, waitFor, go, chat, shots } = h;

  const chart = (p, id) => p.getByTestId(id);
  const attrs = (p, id) =>
    chart(p, id).evaluate((el) => ({
      from: Number(el.dataset.from), to: Number(el.dataset.to), res: el.dataset.resolution,
      buckets: el.dataset.buckets, points: el.dataset.points,
    }));
  // The requests a throughput chart counts: its points are per minute.
  const counted = (a) => JSON.parse(a.points || '[]').reduce((s, [, v]) => s + v, 0) * Number(a.res) / 60;

  // The segmented controls draw their radios under their labels: a user
  // clicks the label.
  const pick = (p, id) => p.getByTestId(id).locator('xpath=..').click();

  async function pickSpan(p, w, buckets) {
    await pick(p, `chart-span-${w}`);
    await waitFor(async () => (await attrs(p, 'chart-throughput')).buckets === buckets, `the ${w} chart to load ${buckets} buckets`);
  }

  await test('series: a reload draws the same chart history', async () => {
    await go('overview');
    await page.getByTestId('chart-throughput').waitFor();
    await pickSpan(page, '1h', '360');
    const before = counted(await attrs(page, 'chart-throughput'));
    for (let i = 0; i < 4; i++) assert((await chat('main')).status === 200, 'chat on main failed');
    await waitFor(async () => counted(await attrs(page, 'chart-throughput')) >= before + 4, 'the throughput chart to count the 4 new requests');
    const drawn = await attrs(page, 'chart-throughput');
    const latency = await attrs(page, 'chart-latency');
    assert(JSON.parse(latency.points).length > 0, `the latency chart has no points: ${latency.points}`);
    await page.screenshot({ path: join(shots, 'series-overview-1h.png'), fullPage: true });

    await page.reload();
    await page.getByTestId('chart-throughput').waitFor();
    // The span picked is remembered, and the chart is the server's, not
    // the samples this page happened to see.
    await waitFor(async () => (await attrs(page, 'chart-throughput')).points === drawn.points,
      `the reloaded chart to draw ${drawn.points}`);
    const after = await attrs(page, 'chart-throughput');
    assert(after.buckets === '360' && after.to - after.from === 3600, `after the reload: ${JSON.stringify(after)}`);
    assert(await page.getByTestId('chart-span-1h').isChecked(), 'the 1 hour span was not kept across the reload');
  });

  await test('series: each chart span spans exactly its window', async () => {
    await go('overview');
    await page.getByTestId('chart-throughput').waitFor();
    for (const s of SPANS) {
      await pickSpan(page, s.w, s.buckets);
      for (const id of ['chart-throughput', 'chart-latency']) {
        const a = await attrs(page, id);
        const now = Date.now() / 1000;
        assert(a.to - a.from === s.span, `${s.w} ${id}: spans ${a.to - a.from} s, want ${s.span}`);
        assert(Math.abs(a.to - now) < 30, `${s.w} ${id}: ends at ${a.to}, not now (${now})`);
        assert(a.res === s.res && a.buckets === s.buckets, `${s.w} ${id}: ${a.buckets} buckets of ${a.res} s`);
      }
      const title = await page.getByTestId('chart-throughput').locator('figcaption').innerText();
      assert(title.includes('last'), `${s.w}: title ${title}`);
      // The requests of this run are in every span that holds them.
      assert(counted(await attrs(page, 'chart-throughput')) > 0 || s.w === '1m', `${s.w}: no requests drawn`);
    }
    await page.screenshot({ path: join(shots, 'series-overview-7d.png'), fullPage: true });
    await pickSpan(page, '1h', '360');
  });

  await test('series: the usage chart draws a single day of data as one bar', async () => {
    await go('usage');
    const usage = page.getByTestId('usage-chart');
    await waitFor(async () => (await usage.getAttribute('data-bars')) === '1', 'the usage chart to draw one bar');
    assert((await usage.getAttribute('data-categories')) === '30', 'the usage chart does not cover 30 days');
    const ticks = await usage.locator('svg text.y').allTextContents();
    assert(ticks.length >= 2 && ticks.every((t) => /^[\d,]+$/.test(t)), `request ticks are not whole numbers: ${ticks}`);
    const note = await page.getByTestId('estimated-note').innerText();
    assert(/did not report/.test(note) && /tokenizer/.test(note), `the estimated note: ${note}`);
    await pick(page, 'usage-stack-provider');
    await pick(page, 'usage-metric-tokens');
    await waitFor(async () => (await usage.getAttribute('data-bars')) === '1', 'the tokens chart to draw one bar');
    await page.screenshot({ path: join(shots, 'series-usage.png'), fullPage: true });
    await pick(page, 'usage-stack-model');
    await pick(page, 'usage-metric-requests');
  });

  await test('series: the day and week charts survive a restart', async () => {
    const port = await h.freePort();
    const url = `http://127.0.0.1:${port}`;
    const dir = mkdtempSync(join(tmpdir(), 'freelane-e2e-series-'));
    const cfg = join(dir, 'freelane.yaml');
    writeFileSync(cfg, `listen: 127.0.0.1:${port}\nprobes: {disabled: true}\ndiscovery: {disabled: true}\nproviders:\n` +
      `  - {name: alpha, tier: free, base_url: "${h.upURL}", api_key: sk-alpha-series-0001, models: [{id: m-alpha, params_b: 70}]}\n`);
    const ctx = await h.browser.newContext({ viewport: { width: 1024, height: 800 } });
    const p = await ctx.newPage();
    let proc;
    const stop = async () => {
      if (!proc) return;
      const gone = new Promise((res) => proc.once('exit', res));
      proc.kill('SIGTERM');
      await gone;
      proc = undefined;
    };
    try {
      let link;
      ({ proc, link } = await h.launch(cfg, dir, url, 'the series freelane to start'));
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ model: 'alpha/m-alpha', messages: [{ role: 'user', content: 'hi' }] }) });
        await r.text();
        assert(r.status === 200, `chat: ${r.status}`);
      }
      await p.goto(link);
      await p.getByTestId('chart-throughput').waitFor();
      await pickSpan(p, '24h', '1440');
      await waitFor(async () => counted(await attrs(p, 'chart-throughput')) === 3, 'the day chart to count 3 requests');
      const day = (await attrs(p, 'chart-throughput')).points;
      await pickSpan(p, '7d', '168');
      const week = (await attrs(p, 'chart-throughput')).points;
      assert(counted(await attrs(p, 'chart-throughput')) === 3, `the week chart: ${week}`);

      await stop();
      ({ proc, link } = await h.launch(cfg, dir, url, 'the series freelane to start again'));
      await p.goto(link);
      await p.getByTestId('chart-throughput').waitFor();
      await waitFor(async () => (await attrs(p, 'chart-throughput')).points === week, `the week chart after a restart to draw ${week}`);
      await pickSpan(p, '24h', '1440');
      await waitFor(async () => (await attrs(p, 'chart-throughput')).points === day, `the day chart after a restart to draw ${day}`);
    } finally {
      await ctx.close();
      await stop();
    }
  });
}
