// Screenshot of an experiment page: node tests/web/screenshot.mjs DB OUT.png [EXPERIMENT_ID]
// Serves DB with the real tsumd, signs in through the login form in headless Chromium (the same setup as
// dashboard.test.mjs) and saves the experiment page (the latest experiment by default) at 1280 px wide.
import { launchBrowser, openPage, signIn, startDaemon } from './harness.mjs';

const [db, out, wanted] = process.argv.slice(2);
if (!db || !out) {
  console.error('usage: node tests/web/screenshot.mjs DB OUT.png [EXPERIMENT_ID]');
  process.exit(2);
}

const daemon = await startDaemon({ db });
const browser = await launchBrowser().catch(async (err) => {
  await daemon.stop();
  throw err;
});
try {
  const { experiments } = await daemon.api('/v1/experiments');
  const id = wanted ? Number(wanted) : Math.max(...experiments.map((e) => e.id));
  if (!experiments.some((e) => e.id === id)) throw new Error(`${db} has no experiment ${wanted ?? ''}`);
  const { page, consoleErrors, offHost } = await openPage(browser, { width: 1280, height: 800 });
  await signIn(page, daemon);
  await page.waitForSelector('#create-form');
  await page.goto(`${daemon.url}/#/experiments/${id}`);
  await page.waitForSelector('#chart-cost, .state.empty');
  await page.screenshot({ path: out, fullPage: true });
  if (consoleErrors.length || offHost.length) throw new Error(`page problems: ${[...consoleErrors, ...offHost].join('; ')}`);
  console.log(`screenshot of experiment ${id} in ${out}`);
} finally {
  await browser.close();
  await daemon.stop();
}
