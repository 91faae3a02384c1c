// The run page's Machines card in real headless Chromium, for a database holding a run of several machines (a spot
// run: tests/integration/test_spot.cpp makes one on the fake EC2 and calls this with its database):
//   node tests/web/machines_card.mjs DB RUN_ID [OUT.png]
// Serves DB with the real tsumd (harness.mjs), signs in through the login form, opens the run page and checks the
// card against the run's own JSON: one bar per attempt, in order on one time axis (each within 0-100 %, none
// starting before the one before it), each bar's outcome, each table row's machine, instance and how it ended,
// the number of interruptions; no console error, no request off 127.0.0.1, nothing overflowing sideways on a
// phone. Exits 1 with the reason on any mismatch; prints "machines card: ok (N attempts)".
import assert from 'node:assert/strict';

import { launchBrowser, openPage, overflowsSideways, signIn, startDaemon } from './harness.mjs';

const [db, runId, out] = process.argv.slice(2);
if (!db || !runId) {
  console.error('usage: node tests/web/machines_card.mjs DB RUN_ID [OUT.png]');
  process.exit(2);
}

const daemon = await startDaemon({ db });
let browser;
try {
  browser = await launchBrowser();
  const run = await daemon.api(`/v1/runs/${runId}`);
  assert.ok(Array.isArray(run.attempts) && run.attempts.length >= 2, `run ${runId} has one machine: nothing to draw`);
  for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
    const { page, consoleErrors, offHost } = await openPage(browser, viewport);
    await signIn(page, daemon);
    await page.waitForSelector('#create-form');
    await page.goto(`${daemon.url}/#/runs/${runId}`);
    await page.waitForSelector('#attempts li');
    const bars = await page.$$eval('#attempts li', (items) => items.map((li) => {
      const bar = li.querySelector('.bar');
      return { attempt: Number(li.dataset.attempt), outcome: li.dataset.outcome, text: li.textContent,
               left: parseFloat(bar.style.marginLeft), width: parseFloat(bar.style.width), cls: bar.className };
    }));
    assert.equal(bars.length, run.attempts.length, 'one bar per attempt');
    let previous = -1;
    bars.forEach((b, i) => {
      const a = run.attempts[i];
      assert.equal(b.attempt, a.attempt);
      assert.equal(b.outcome, a.outcome);
      assert.match(b.text, new RegExp(`#${a.attempt} ${a.market}`));
      assert.ok(b.left >= 0 && b.left + b.width <= 100.5, `bar ${i + 1} lies on the axis (${b.left} + ${b.width})`);
      assert.ok(b.left >= previous, `bar ${i + 1} starts after the one before it`);
      previous = b.left;
      assert.equal(b.cls.includes('interrupted'), a.outcome === 'interrupted' || a.outcome === 'abandoned');
    });
    const rows = await page.$$eval('#attempts ~ .table-wrap tbody tr',
      (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    assert.equal(rows.length, run.attempts.length, 'one row per attempt');
    rows.forEach((cells, i) => {
      const a = run.attempts[i];
      assert.equal(cells[0], `#${a.attempt}`);
      assert.ok(cells[1].startsWith(`${a.market} ${a.instance_type}`), `row ${i + 1}: ${cells[1]}`);
      assert.equal(cells[2], a.instance ?? '–');
      assert.equal(cells[4], a.outcome ?? 'running');
      assert.equal(cells[5], a.notice ? `${a.notice.source} notice` : '–');
    });
    const interrupted = run.attempts.filter((a) => a.outcome === 'interrupted').length;
    const hint = await page.textContent('#attempts >> xpath=.. >> p.hint');
    assert.match(hint, new RegExp(`Interrupted ${interrupted} times`));
    if (viewport.width < 500) assert.equal(await overflowsSideways(page), false, 'nothing overflows on a phone');
    else if (out) await page.screenshot({ path: out, fullPage: true });
    assert.deepEqual(consoleErrors, [], 'no console errors');
    assert.deepEqual(offHost, [], 'no request leaves 127.0.0.1');
    await page.context().close();
  }
  console.log(`machines card: ok (${run.attempts.length} attempts)`);
} catch (err) {
  console.error(`machines card: ${err.stack || err.message}\n${daemon.log()}`);
  process.exitCode = 1;
} finally {
  await browser?.close();
  await daemon.stop();
}
