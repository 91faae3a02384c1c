// How long the dashboard's pages take to load in headless Chromium against a running daemon (issue 61's goal: the
// experiments page and an experiment of 10,000 runs in at most 1 s). Prints one JSON object:
// {"experiments_ms", "experiment_ms", "experiment_runs_shown", "experiment_charts"}, each the median of `n` loads,
// from navigation to the page drawn (its table; an experiment's runs and, when a run is done, its charts).
//   node bench/dashboard_load.mjs URL TOKEN EXPERIMENT_ID [N]       (web/node_modules and Chromium installed)
import { launchBrowser, openPage, signIn } from '../tests/web/harness.mjs';

const [url, token, id, times = '3'] = process.argv.slice(2);
if (!url || !token || !id) {
  console.error('usage: node bench/dashboard_load.mjs URL TOKEN EXPERIMENT_ID [N]');
  process.exit(2);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const browser = await launchBrowser();
try {
  const { page, consoleErrors } = await openPage(browser, { width: 1280, height: 800 });
  await signIn(page, { url }, token);
  await page.waitForSelector('#experiments');
  const load = async (hash, ...ready) => {
    await page.goto('about:blank');
    const t0 = performance.now();
    await page.goto(`${url}/${hash}`);
    for (const selector of ready) await page.waitForSelector(selector, { timeout: 60000 });
    return performance.now() - t0;
  };
  const list = [], one = [];
  for (let i = 0; i < Number(times); ++i) {
    list.push(await load('#/experiments', '#experiments tbody tr'));
    // Drawn: its runs table, and the cost chart, or the note that nothing is done yet.
    one.push(await load(`#/experiments/${id}`, '#runs tbody tr', '#chart-cost, .state.empty'));
  }
  const shown = await page.$$eval('#runs tbody tr', (rows) => rows.length);
  const charts = await page.evaluate(() => [...(window.tsum?.charts?.keys() || [])]);
  if (consoleErrors.length) throw new Error(`page problems: ${consoleErrors.join('; ')}`);
  console.log(JSON.stringify({ experiments_ms: median(list), experiment_ms: median(one), experiment_runs_shown: shown,
    experiment_charts: charts }));
} finally {
  await browser.close();
}
