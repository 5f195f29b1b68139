// The request log people work in: a dense table that a 1280x800 screen
// shows forty lines of, a search that finds a request by the id its
// answer named, a details drawer with the routing decision, and a view
// that lives in the URL.
import { join } from 'node:path';

export default async function (h) {
  const { mainContext, base, shots, test, assert, waitFor, chat } = h;

  // One page of its own, at the size the layout is meant to fit.
  const open = async (hash = '') => {
    const p = await mainContext.newPage();
    await p.setViewportSize({ width: 1280, height: 800 });
    await p.goto(`${base}/#/requests${hash}`);
    await p.getByTestId('request-table').waitFor();
    return p;
  };
  const ask = async (content) => {
    const r = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'main', messages: [{ role: 'user', content }] }),
    });
    await r.text();
    assert(r.status === 200, `chat: ${r.status}`);
    return r.headers.get('x-freelane-request-id');
  };

  await test('request log: 40 requests fit on one 1280x800 screen', async () => {
    for (let i = 0; i < 45; i++) await chat('main');
    const p = await open();
    try {
      const rows = p.locator('tr[data-testid^="request-row-"]');
      await waitFor(async () => (await rows.count()) >= 45, '45 requests in the table');
      await p.screenshot({ path: join(shots, 'reqlog-table.png') });
      const boxes = await rows.evaluateAll((els) => els.map((e) => e.getBoundingClientRect().bottom));
      const visible = boxes.filter((b) => b <= 800).length;
      assert(visible >= 40, `${visible} requests fit the 1280x800 screen, want 40 (row bottoms: ${boxes.slice(0, 42).map(Math.round).join(',')})`);
      // The page does not scroll sideways at this width.
      const wide = await p.evaluate(() => document.documentElement.scrollWidth);
      assert(wide <= 1280, `the page is ${wide} px wide at 1280`);
    } finally {
      await p.close();
    }
  });

  await test('request log: a search by request id finds exactly that request', async () => {
    const id = await ask('find me by my id');
    await ask('another one');
    const p = await open();
    try {
      await waitFor(async () => (await p.locator('tr[data-testid^="request-row-"]').count()) > 2, 'the log to list requests');
      const search = p.getByTestId('request-search');
      await search.fill(id);
      await search.press('Enter');
      const rows = p.locator('tr[data-testid^="request-row-"]');
      await waitFor(async () => (await rows.count()) === 1 && (await rows.first().getAttribute('data-testid')) === `request-row-${id}`,
        `only request ${id} to be listed`);
      // It stays alone while other requests arrive on the live tail.
      await chat('main');
      await p.waitForTimeout(800);
      assert((await rows.count()) === 1, `the search lists ${await rows.count()} requests after a new one arrived`);
      await p.screenshot({ path: join(shots, 'reqlog-search.png') });
    } finally {
      await p.close();
    }
  });

  await test('request log: the details drawer shows the decision log', async () => {
    const id = await ask('show my decision');
    const p = await open();
    try {
      await p.getByTestId(`request-row-${id}`).waitFor();
      await p.getByTestId(`request-row-${id}`).click();
      const drawer = p.getByTestId(`request-detail-${id}`);
      await drawer.waitFor();
      await waitFor(async () => (await p.getByTestId(`decision-${id}-chain`).count()) === 1, 'the decision to load');
      assert((await p.getByTestId(`decision-${id}-chain`).innerText()) === 'main', 'the decision names another chain');
      assert((await p.getByTestId(`decision-${id}-candidates`).innerText()).includes('beta/m-beta'), 'the decision lists no candidates');
      assert((await p.getByTestId(`request-attempts-${id}`).count()) === 1, 'the drawer shows no attempts');
      // Body logging is off in this FreeLane: the drawer says how to turn it on.
      await waitFor(async () => (await p.getByTestId(`request-bodies-off-${id}`).count()) === 1, 'the note on body logging');
      assert((await p.getByTestId(`request-bodies-off-${id}`).innerText()).includes('request_log: {bodies: true}'), 'the note names no setting');
      assert(p.url().includes(`open=${id}`), `the open request is not in the URL: ${p.url()}`);
      await p.screenshot({ path: join(shots, 'reqlog-drawer.png') });
      await p.keyboard.press('Escape');
      await drawer.waitFor({ state: 'detached' });
    } finally {
      await p.close();
    }
  });

  await test('request log: the URL keeps the search, filters and sort after a reload', async () => {
    const p = await open();
    try {
      await p.getByTestId('filter-status').selectOption('2xx');
      await p.getByTestId('filter-stream').selectOption('false');
      await p.getByTestId('sort-latency').click();
      await waitFor(async () => /status=2xx/.test(p.url()) && /stream=false/.test(p.url()) && /sort=latency/.test(p.url()), `the view in the URL: ${p.url()}`);
      const asked = p.waitForRequest((r) => r.url().includes('/api/requests?') && r.url().includes('status=2xx') && r.url().includes('sort=latency'), { timeout: 10000 });
      await p.reload();
      await asked;
      await p.getByTestId('request-table').waitFor();
      assert((await p.getByTestId('filter-status').inputValue()) === '2xx', 'the status filter was lost');
      assert((await p.getByTestId('filter-stream').inputValue()) === 'false', 'the stream filter was lost');
      assert((await p.getByTestId('sort-latency').locator('xpath=..').getAttribute('aria-sort')) === 'descending', 'the sort was lost');
      // And a link to the same URL opens the same view in another tab.
      const other = await mainContext.newPage();
      try {
        const seen = other.waitForRequest((r) => r.url().includes('status=2xx') && r.url().includes('stream=false'), { timeout: 10000 });
        await other.goto(p.url());
        await seen;
      } finally {
        await other.close();
      }
      await p.screenshot({ path: join(shots, 'reqlog-filtered.png') });
    } finally {
      await p.close();
    }
  });
}
