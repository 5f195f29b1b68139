// Notifications and the screens' accessibility, in real Chromium.
//
// A FreeLane of its own (so the main one's earlier failures have not used
// up the notifier's quiet period) is made to fail a backend until its
// breaker opens; the bell in the dashboard's header counts it and lists
// it. Then every screen of the main FreeLane is opened in the light and the
// dark theme: each has one h1 and no skipped heading level, and is
// screenshotted as <screen>-light.png and <screen>-dark.png.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SCREENS = ['overview', 'chains', 'providers', 'budgets', 'usage', 'caching', 'requests', 'connect', 'setup'];

// The heading levels of the page, in document order, and what is wrong
// with them.
async function outline(p) {
  const levels = await p.evaluate(() => [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].map((h) => Number(h.tagName[1])));
  const problems = [];
  const h1s = levels.filter((l) => l === 1).length;
  if (h1s !== 1) problems.push(`${h1s} h1 headings`);
  for (let i = 1; i < levels.length; i++) if (levels[i] > levels[i - 1] + 1) problems.push(`h${levels[i - 1]} then h${levels[i]}`);
  return { levels, problems };
}

export default async function (h) {
  const { browser, assert, waitFor, test, shots } = h;

  await h.test('a backend failing until its breaker opens is a notification in the dashboard', async () => {
    const port = await h.freePort();
    const url = `http://127.0.0.1:${port}`;
    const dir = mkdtempSync(join(tmpdir(), 'freelane-e2e-notify-'));
    const cfg = join(dir, 'freelane.yaml');
    writeFileSync(cfg, `
listen: 127.0.0.1:${port}
providers:
  - {name: alpha, tier: free, base_url: "${h.upURL}", api_key: sk-alpha-test-0101, models: [{id: m-alpha, params_b: 70}]}
  - {name: flaky, tier: free, base_url: "${h.upURL}", api_key: sk-flaky-0103, models: [{id: fail-a, params_b: 1}]}
probes: {disabled: true}
discovery: {disabled: true}
`);
    const { proc, link } = await h.launch(cfg, dir, url, 'the notifications FreeLane to start');
    const ctx = await browser.newContext({ viewport: { width: 1024, height: 800 } });
    try {
      const p = await ctx.newPage();
      await p.goto(link);
      await waitFor(async () => /Live/.test(await p.getByTestId('connection').innerText()), 'the dashboard to be live');
      const bell = p.getByTestId('notify-bell');
      await bell.waitFor();
      assert((await p.getByTestId('notify-count').count()) === 0, 'a fresh FreeLane has unread notifications');
      assert((await bell.getAttribute('aria-label')) === 'Notifications', `bell label: ${await bell.getAttribute('aria-label')}`);

      for (let i = 0; i < 2; i++) {
        const r = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST', headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ model: 'flaky/fail-a', messages: [{ role: 'user', content: 'hi' }] }),
        });
        await r.text();
      }
      // It arrives over the websocket: no reload.
      await waitFor(async () => (await p.getByTestId('notify-count').count()) === 1 &&
        (await p.getByTestId('notify-count').innerText()) === '1', 'the bell to count one notification');
      assert((await bell.getAttribute('aria-label')) === 'Notifications, 1 unread', `bell label: ${await bell.getAttribute('aria-label')}`);
      await bell.click();
      const item = p.getByTestId('notification');
      await item.first().waitFor();
      const text = await item.first().innerText();
      assert(text.includes('Backend failing: flaky/fail-a') && text.includes('keeps failing') && text.includes('next backend'), `notification: ${text}`);
      assert(!text.includes('sk-flaky'), `the notification shows a key: ${text}`);
      assert((await p.getByTestId('notify-count').count()) === 0, 'opening the list left it unread');
      // The switches load, and one is stored.
      const sw = p.getByTestId('notify-switch-local');
      await sw.waitFor();
      assert(await sw.isChecked(), 'local notifications are off by default');
      await sw.click();
      await waitFor(async () => !(await sw.isChecked()) && !(await sw.isDisabled()), 'the switch to be stored');
      await p.screenshot({ path: join(shots, 'notifications.png') });
      await p.emulateMedia({ colorScheme: 'dark' });
      await p.screenshot({ path: join(shots, 'notifications-dark.png') });
      // The list survives a reload: the snapshot brings it, already read.
      await p.reload();
      await bell.waitFor();
      await waitFor(async () => /Live/.test(await p.getByTestId('connection').innerText()), 'the dashboard to be live after a reload');
      assert((await p.getByTestId('notify-count').count()) === 0, 'a notification seen is unread after a reload');
      await bell.click();
      assert((await p.getByTestId('notification').count()) === 1, 'the reloaded list');
      // The switch was stored: the settings read back from FreeLane say so.
      await p.getByTestId('notify-switch-local').waitFor();
      assert(!(await p.getByTestId('notify-switch-local').isChecked()), 'local notifications are on again after a reload');
      assert(await p.getByTestId('notify-switch-breaker').isChecked(), 'breaker notifications went off');
    } finally {
      await ctx.close();
      proc.kill('SIGTERM');
    }
  });

  for (const scheme of ['light', 'dark']) {
    await test(`every screen has one h1 and no skipped heading level, and is screenshotted (${scheme})`, async () => {
      const p = await h.mainContext.newPage();
      try {
        await p.emulateMedia({ colorScheme: scheme });
        const bad = [];
        for (const s of SCREENS) {
          await p.goto(`${h.base}/#/${s}`);
          await p.locator('main h1').first().waitFor();
          await p.waitForLoadState('networkidle').catch(() => {});
          const bg = await p.evaluate(() => getComputedStyle(document.body).backgroundColor);
          assert(scheme === 'dark' ? bg === 'rgb(17, 20, 24)' : bg === 'rgb(246, 247, 249)', `${s} in ${scheme}: background ${bg}`);
          const { levels, problems } = await outline(p);
          if (problems.length) bad.push(`${s}: ${problems.join(', ')} (h${levels.join(' h')})`);
          await p.screenshot({ path: join(shots, `${s}-${scheme}.png`), fullPage: true });
        }
        assert(bad.length === 0, `headings: ${bad.join('; ')}`);
      } finally {
        await p.close();
      }
      // The sign-in screen, in a browser that has no session.
      const ctx = await browser.newContext({ viewport: { width: 1024, height: 700 }, colorScheme: scheme });
      try {
        const p2 = await ctx.newPage();
        await p2.goto(`${h.base}/#/overview`);
        await p2.getByTestId('signed-out').waitFor();
        const { problems } = await outline(p2);
        assert(problems.length === 0, `sign-in screen: ${problems.join(', ')}`);
        await p2.screenshot({ path: join(shots, `signed-out-${scheme}.png`) });
      } finally {
        await ctx.close();
      }
    });
  }
}
