// The dashboard end to end, in real headless Chromium against a real tsumd running real tsum-train: sign-in
// (wrong token and right token), creating an experiment through the form, following a run live over
// Server-Sent Events, the experiment page's charts, markers, the planner's ranking and the measured
// recommendation, the offers page, creating, editing and deleting a schedule through its form, cancelling a run,
// a search's probes, bands and stop reason on its probes' pages (trace provider), both viewport sizes, no console
// errors and no request leaving 127.0.0.1. Screenshots go to TSUM_WEB_ARTIFACTS.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { localFiring } from '../../web/src/schedule_form.js';
import { launchBrowser, openPage, overflowsSideways, signIn, startDaemon, until } from './harness.mjs';

const ARTIFACTS = process.env.TSUM_WEB_ARTIFACTS || path.resolve('web-artifacts');
const PHASES = ['startup', 'install', 'load_data', 'start', 'learn', 'verify', 'save', 'poweroff'];
const RULES = ['per_second_60s_min', 'per_minute', 'per_10_minutes', 'per_hour'];
const VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };

let daemon;
let browser;
let main;          // the signed-in page that the tests share, in order
let experimentId;

const shot = (page, name) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  daemon = await startDaemon();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

test('a wrong token is refused, and a 401 later sends the user back to the login form', async () => {
  const { page, context, consoleErrors, offHost } = await openPage(browser);
  await page.goto(`${daemon.url}/`);
  await page.waitForSelector('#login-form');
  assert.match(page.url(), /#\/login$/, 'without a token the app opens the login form');

  await signIn(page, daemon, 'not-a-real-token');
  await page.waitForSelector('#login-message .notice.error');
  assert.match(await page.textContent('#login-message'), /rejected: invalid or revoked token/);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('tsum.token')), null, 'a refused token is not kept');
  assert.match(page.url(), /#\/login$/);

  // A token that stops working (revoked, or the daemon's database changed) mid-session: back to the login form.
  await page.evaluate(() => sessionStorage.setItem('tsum.token', 'revoked-token'));
  await page.goto(`${daemon.url}/#/experiments`);
  await page.waitForSelector('#login-message .notice.error:has-text("The server rejected your token")');
  await page.waitForTimeout(500);  // every pending request has answered by now; the message must stay
  assert.match(await page.textContent('#login-message'), /The server rejected your token \(invalid or revoked token\)/);
  assert.match(page.url(), /#\/login$/);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('tsum.token')), null);
  await shot(page, 'login-rejected');

  // The only console errors are Chromium's own lines about the 401 responses.
  assert.ok(consoleErrors.length > 0, 'Chromium reports the 401 responses');
  for (const line of consoleErrors) assert.match(line, /status of 401/);
  assert.deepEqual(offHost, []);
  await context.close();
});

test('sign in and create a tiny experiment through the form', async () => {
  main = await openPage(browser);
  const { page } = main;
  await signIn(page, daemon);
  await page.waitForSelector('#create-form input[name=config]');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('tsum.token')), daemon.token);
  assert.ok(await page.isVisible('#nav'));
  assert.match(await page.textContent('#experiment-list'), /No experiments yet/);
  await shot(page, 'experiments-empty');

  // The defaults run as they are: two configs ticked, none of them a byo machine that waits for one to join.
  const offered = await page.$$eval('input[name=config]', (els) => els.map((e) => JSON.parse(e.value).provider));
  assert.ok(offered.includes('byo'), `the daemon offers a byo machine: ${offered}`);
  const ticked = await page.$$eval('input[name=config]:checked', (els) => els.map((e) => JSON.parse(e.value).provider));
  assert.equal(ticked.length, 2);
  assert.ok(!ticked.includes('byo'), `ticked by default: ${ticked}`);

  await page.fill('#name', 'web e2e');
  for (const box of await page.$$('input[name=config]')) await box.uncheck();
  await page.check('#config-local-local-1c');
  await page.check('#config-local-local-2c');
  await page.fill('#epochs', '1');
  await page.fill('#limit', '300');
  await page.fill('#test_limit', '200');
  await page.fill('#repetitions', '1');
  for (const rule of RULES) assert.ok(await page.isChecked(`#rule-${rule}`));
  await page.click('#create');
  await page.waitForURL(/#\/experiments\/\d+$/);
  experimentId = Number(/(\d+)$/.exec(page.url())[1]);
  await page.waitForSelector('#plan-box .state.empty');
  assert.match(await page.textContent('#plan-box'), /once a run of this experiment is done/, 'no plan before a done run');

  const created = await daemon.api(`/v1/experiments/${experimentId}`);
  assert.equal(created.name, 'web e2e');
  assert.deepEqual(created.spec.configs.map((c) => c.instance_type), ['local-1c', 'local-2c']);
  assert.deepEqual(created.spec.workload, { model: 'mnist_cnn', dataset: 'fashion-mnist', epochs: 1, limit: 300, test_limit: 200 });
  assert.deepEqual(created.spec.billing, RULES);
});

test('the run page follows a run live over SSE until it is done', { timeout: 300000 }, async () => {
  const { page, requests } = main;
  await page.waitForSelector('#runs a');
  const runId = Number(/(\d+)$/.exec(await page.getAttribute('#runs tbody tr:first-child a', 'href'))[1]);
  const seenBefore = requests.length;
  await page.click('#runs tbody tr:first-child a');
  await page.waitForSelector('#timeline');

  const statuses = new Set();
  let unmeasured = 0;  // bars of the running and pending phases seen while the run was live, and how many had width
  let drawn = 0;
  await until(async () => {
    statuses.add(await page.getAttribute('#timeline', 'data-status'));
    const widths = await page.$$eval('#timeline li:not([data-state=done]) .bar', (bars) => bars.map((b) => b.getBoundingClientRect().width));
    unmeasured += widths.length;
    drawn += widths.filter((w) => w > 0).length;
    return statuses.has('done');
  }, 240000, `run ${runId} to be done on its page`);
  assert.ok(unmeasured > 0, 'the page was seen while phases were still to come');
  assert.equal(drawn, 0, 'a phase not yet measured has no bar: only its track');
  await shot(page, 'run-done');

  // The page saw the run move through several states without being reloaded ...
  const log = await page.$$eval('#event-log li', (items) => items.map((li) => li.textContent));
  const logged = log.map((line) => /status (\w+)/.exec(line)?.[1]).filter(Boolean);
  assert.ok(logged.length >= 3, `the event log shows at least 3 status changes: ${log.join(' | ')}`);
  assert.equal(logged.at(-1), 'done');
  for (const phase of PHASES) assert.ok(log.some((l) => l.includes(`${phase} took`)), `the log shows ${phase} ending`);
  assert.equal(await page.$$eval('#timeline li[data-state=done]', (l) => l.length), 8);
  assert.equal(await page.textContent('#connection'), 'final');
  assert.equal(await page.isVisible('#cancel'), false, 'a finished run has no cancel button');

  // ... all from one event stream, with the token in a header, and no polling of the run; its output came by
  // long polls of its logs, each going on from the last line it had.
  const mine = requests.slice(seenBefore).filter((r) => r.url.includes(`/v1/runs/${runId}`));
  const streams = mine.filter((r) => r.url.endsWith(`/v1/runs/${runId}/stream`));
  const logs = mine.filter((r) => r.url.includes(`/v1/runs/${runId}/logs?`));
  assert.equal(streams.length, 1, `one stream request: ${mine.map((r) => r.url).join(', ')}`);
  assert.equal(mine.length, 1 + logs.length, `no other request for the run: ${mine.map((r) => r.url).join(', ')}`);
  assert.ok(logs.every((r) => /wait=20/.test(r.url)), 'every logs request is a long poll');
  const afters = logs.map((r) => Number(/after=(\d+)/.exec(r.url)[1]));
  assert.deepEqual(afters, [...afters].sort((a, b) => a - b), `each goes on from the last: ${afters}`);
  assert.equal(streams[0].headers.authorization, `Bearer ${daemon.token}`);
  assert.ok(!streams[0].url.includes(daemon.token), 'the token is not in the URL');
  // The output panel holds what tsum-train wrote, every line the daemon has, and says the run has ended.
  await until(async () => (await page.textContent('#run-output-state')) === 'ended', 30000, 'the output to end');
  const output = await page.textContent('#run-output');
  assert.match(output, /"event":"learn_end"/);
  const held = await daemon.api(`/v1/runs/${runId}/logs?limit=10000`);
  assert.equal(Number(await page.getAttribute('#run-output', 'data-lines')), held.lines.length);
  assert.equal(output.trimEnd().split('\n').length, held.lines.length, 'one line each, none twice');

  const run = await daemon.api(`/v1/runs/${runId}`);
  assert.equal(run.status, 'done');
  assert.equal(await page.$$eval('#epochs tbody tr', (rows) => rows.length), run.epochs.length);

  // Opened again once the run is over, the page shows its history at the daemon's times, not the page's.
  await page.reload();
  await page.waitForSelector('#timeline[data-status=done]');
  await page.waitForSelector('#event-log li');
  const stamped = await page.$$eval('#event-log li', (items) => items.map((li) => [Date.parse(li.querySelector('time').getAttribute('datetime')) / 1000, li.textContent]));
  const at = (re) => stamped.find(([, text]) => re.test(text))[0];
  assert.ok(Math.abs(at(/status done/) - run.updated_at) < 0.01, `status done at ${at(/status done/)}, the run's ${run.updated_at}`);
  assertHistory(stamped, run);
  assert.ok(await page.$$eval('#stats tbody tr', (rows) => rows.length) >= 6, 'resource statistics for the inner phases');
});

// The event log of a finished run, as a page opened after it shows it: every line at the daemon's time of it (each
// phase's end from phase_times, each epoch's from its `at`), in the order it happened, within the run's life.
function assertHistory(stamped, run) {
  const lines = stamped.map(([t, text]) => `${new Date(t * 1000).toISOString()} ${text}`).join(' | ');
  for (const [t, text] of stamped) {
    assert.ok(Number.isFinite(t), `every line has a time: ${lines}`);
    assert.ok(t >= run.created_at - 0.001 && t <= run.updated_at + 0.001, `${text} within the run's life: ${lines}`);
    const phase = /^(\w+) (took|not marked)/.exec(text.replace(/^\S+ /, ''))?.[1];
    if (phase) assert.ok(Math.abs(t - run.phase_times[phase].ended_at) < 0.001, `${text} at its phase's end: ${lines}`);
    const epoch = /epoch (\d+):/.exec(text)?.[1];
    if (epoch) assert.ok(Math.abs(t - run.epochs.find((e) => e.epoch === Number(epoch)).at) < 0.001, `${text} at its epoch's end: ${lines}`);
  }
  const times = stamped.map(([t]) => t);
  assert.deepEqual(times, [...times].sort((a, b) => a - b), `in time order: ${lines}`);
  const took = PHASES.filter((p) => Number.isFinite(run.phases[p])).map((p) => run.phase_times[p].ended_at);
  assert.deepEqual(took, [...took].sort((a, b) => a - b), `the phases ended in their order: ${JSON.stringify(run.phase_times)}`);
}

test('the experiment page updates live and charts phases, scaling and cost', { timeout: 300000 }, async () => {
  const { page } = main;
  await page.goto(`${daemon.url}/#/experiments/${experimentId}`);
  await page.waitForSelector('.page-head .badge');
  await until(async () => (await page.textContent('.page-head .badge')) === 'done', 240000, 'the experiment page to show done');
  await page.waitForSelector('#chart-cost');
  const exp = await daemon.api(`/v1/experiments/${experimentId}`);
  assert.equal(exp.status, 'done');
  assert.equal(await page.isVisible('#live-note'), false, 'a finished experiment is not followed');

  const charts = await page.evaluate(() => Object.fromEntries([...window.tsum.charts].map(([name, c]) => [name, {
    type: c.config.type,
    indexAxis: c.options.indexAxis,
    labels: c.data.labels,
    datasets: c.data.datasets.map((d) => ({ label: d.label, data: d.data, colour: d.backgroundColor })),
    markers: c.options.plugins.costMarkers,
    y: c.scales.y ? { type: c.scales.y.type, ticks: c.scales.y.ticks.map((t) => ({ value: t.value, label: t.label })) } : null,
    painted: (() => {
      const { width, height } = c.canvas;
      const pixels = c.canvas.getContext('2d').getImageData(0, 0, width, height).data;
      let inked = 0;
      for (let i = 3; i < pixels.length; i += 4) inked += pixels[i] > 0;
      return inked / (width * height);
    })(),
  }])));
  assert.deepEqual(Object.keys(charts).sort(), ['cores', 'cost', 'phases'], 'three charts; no GPU chart without GPUs');
  for (const [name, c] of Object.entries(charts)) assert.ok(c.painted > 0.01, `${name} is drawn (${c.painted})`);
  assert.match(await page.textContent('body'), /No configuration in this experiment has a GPU/);

  const byType = (type) => exp.runs.find((r) => r.config.instance_type === type);
  const [one, two] = [byType('local-1c'), byType('local-2c')];

  // (a) 8 phase series, each colour its own, one bar per configuration, holding the run's phase seconds.
  const phases = charts.phases;
  assert.equal(phases.indexAxis, 'y');
  assert.deepEqual(phases.labels, ['local/local-1c', 'local/local-2c']);
  assert.deepEqual(phases.datasets.map((d) => d.label), PHASES);
  assert.equal(new Set(phases.datasets.map((d) => d.colour)).size, 8);
  phases.datasets.forEach((d, i) => {
    assert.equal(d.data.length, 2);
    assert.ok(Math.abs(d.data[0] - one.phases[PHASES[i]]) < 1e-9 && Math.abs(d.data[1] - two.phases[PHASES[i]]) < 1e-9);
  });

  // (b) t_learn and t_sum at 1 and 2 cores.
  const cores = charts.cores;
  assert.deepEqual(cores.datasets.map((d) => d.label), ['t_learn', 't_sum']);
  for (const d of cores.datasets) assert.deepEqual(d.data.map((p) => p.x), [1, 2]);
  assert.deepEqual(cores.datasets[1].data.map((p) => p.y), [one.t_sum, two.t_sum]);
  assert.deepEqual(cores.datasets[0].data.map((p) => p.y), [one.phases.learn, two.phases.learn]);

  // (c) one series per billing rule, a bar per configuration; ★ on each rule's cheapest per the daemon.
  const cost = charts.cost;
  assert.deepEqual(cost.datasets.map((d) => d.label), RULES);
  cost.datasets.forEach((d) => assert.deepEqual(d.data, [one.cost[d.label].amount, two.cost[d.label].amount]));
  // On its log axis (per_hour's bars are ~60 times the rest), a labelled tick stands at or above the tallest bar.
  const tallest = Math.max(...cost.datasets.flatMap((d) => d.data));
  assert.equal(cost.y.type, 'logarithmic');
  const labelled = cost.y.ticks.filter((t) => t.label !== '' && t.label !== undefined).map((t) => t.value);
  assert.ok(Math.max(...labelled) >= tallest, `labelled ticks ${labelled} under the tallest bar ${tallest}`);
  const expectedCheapest = RULES.map((rule, ri) => [ri, exp.summary.cheapest[rule].config_index]);
  assert.deepEqual(cost.markers.cheapest, expectedCheapest);
  const cheapestItems = await page.$$eval('#cost-markers li[data-marker=cheapest]',
    (items) => items.map((li) => [li.dataset.rule, li.dataset.config]));
  assert.deepEqual(cheapestItems, RULES.map((rule) => [rule, `local/${exp.summary.cheapest[rule].config.instance_type}`]));

  // ⚠ exactly where a t_sum ends within 10% of a step (of a minute or more) below the step boundary.
  const expectedNear = [];
  exp.rules.forEach((rule) => [one, two].forEach((run) => {
    const left = (Math.ceil(run.t_sum / rule.step_s) * rule.step_s - run.t_sum) / rule.step_s;
    if (rule.step_s >= 60 && run.t_sum >= rule.min_s && left > 0 && left <= 0.1) expectedNear.push([rule.name, `local/${run.config.instance_type}`]);
  }));
  const nearItems = await page.$$eval('#cost-markers li[data-marker=near-step]',
    (items) => items.map((li) => [li.dataset.rule, li.dataset.config]));
  assert.deepEqual(nearItems, expectedNear);

  // (d) the recommendation: the cheapest per rule and the fastest, with a reason each.
  const recs = await page.$$eval('#recommendations tbody tr', (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
  assert.equal(recs.length, RULES.length + 1);
  RULES.forEach((rule, i) => {
    assert.equal(recs[i][0], `Cheapest under ${rule}`);
    assert.equal(recs[i][1], `local/${exp.summary.cheapest[rule].config.instance_type}`);
    assert.match(recs[i][4], /Lowest mean cost/);
  });
  assert.equal(recs[RULES.length][1], `local/${exp.summary.fastest.config.instance_type}`);

  // (e) the planner's ranking for this workload: its top rows, in its order, each with its one-line reason.
  for (const objective of ['cost', 'time']) {
    const plan = await daemon.api(`/v1/plan?experiment=${experimentId}&objective=${objective}`);
    assert.ok(plan.ranked.length >= 2, `the planner ranks the local offers (${objective})`);
    if (objective !== 'cost') await page.selectOption('#plan-objective', objective);
    const top = plan.ranked[0];
    await until(async () => (await page.$$eval('#plan tbody tr', (rows) => rows.map((r) => r.dataset.config)))
      .join() === plan.ranked.slice(0, 5).map((e) => e.config).join(), 30000, `the ${objective} plan's rows`);
    const first = await page.$eval('#plan tbody tr', (tr) => [...tr.children].map((c) => c.textContent));
    assert.equal(first[0], '1');
    assert.equal(first[1], top.config);
    assert.equal(first[2], top.billing);
    assert.ok(top.reason.length > 0);
    assert.ok(first[6].startsWith(top.reason), `the top row gives the planner's reason: ${first[6]}`);
    assert.match(await page.textContent('#plan-box .hint'), new RegExp(`from ${plan.history_runs} done runs? of this workload`));
  }
  await shot(page, 'experiment-desktop');
});

test('the offers page shows each provider with its catalog date', async () => {
  const { page } = main;
  await page.click('nav a[data-nav=offers]');
  await page.waitForSelector('section[data-provider=local]');
  const offers = await daemon.api('/v1/offers');
  assert.equal(await page.textContent('section[data-provider=local] .as-of'), offers.catalogs.local.as_of);
  assert.equal(await page.$$eval('section[data-provider=local] tbody tr', (r) => r.length),
    offers.offers.filter((o) => o.provider === 'local').length);
  await shot(page, 'offers');
});

test('a schedule is created through the form, listed with its next firings, edited and deleted', async () => {
  const { page, consoleErrors } = main;
  await page.click('nav a[data-nav=schedules]');
  await page.waitForSelector('#schedule-list .state.empty');
  assert.match(await page.textContent('#schedule-list'), /No schedules yet/);
  await shot(page, 'schedules-empty');

  // Problems are named before anything is sent; the daemon's refusal is shown as it said it.
  await page.fill('#cron', '0 2 * *');
  await page.fill('#experiment', '{"configs": [');
  await page.click('#schedule-save');
  assert.match(await page.textContent('#schedule-message'), /Cron needs five fields.*Experiment is not valid JSON/);
  await page.fill('#experiment', JSON.stringify({ name: 'nightly web', workload: { epochs: 1, limit: 300, test_limit: 200 },
    configs: [{ provider: 'local', instance_type: 'local-1c' }] }));
  await page.fill('#cron', '0 2 * * *');
  await page.fill('#timezone', 'Mars/Olympus_Mons');
  const errorsBefore = consoleErrors.length;
  await page.click('#schedule-save');
  await page.waitForSelector('#schedule-message .notice.error:has-text("not saved")');
  assert.match(await page.textContent('#schedule-message'), /Mars\/Olympus_Mons/, 'the daemon\'s reason names the zone');
  assert.deepEqual((await daemon.api('/v1/schedules')).schedules, [], 'nothing was created');
  // Chromium logs the refused request itself; that one line is expected, and taken out of the session's record.
  assert.deepEqual(consoleErrors.splice(errorsBefore), ['error: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)']);

  await page.fill('#schedule-name', 'web nightly');
  await page.fill('#timezone', 'Europe/Moscow');
  await page.fill('#budget', '2.5');
  await page.selectOption('#missed', 'catch_up');
  await page.click('#schedule-save');
  await page.waitForSelector('#schedule-list article[data-schedule]');
  const [created] = (await daemon.api('/v1/schedules')).schedules;
  assert.deepEqual([created.name, created.cron, created.timezone, created.budget, created.missed, created.enabled],
    ['web nightly', '0 2 * * *', 'Europe/Moscow', 2.5, 'catch_up', true]);
  assert.equal(created.experiment.configs[0].instance_type, 'local-1c');

  const card = `article[data-schedule="${created.id}"]`;
  const nextShown = () => page.$$eval(`${card} .next li`, (items) => items.map((li) => li.textContent));
  const nextWanted = async () => (await daemon.api(`/v1/schedules/${created.id}/next?count=3`)).next.map((n) => localFiring(n.local));
  const wanted = await nextWanted();
  assert.equal(wanted.length, 3);
  for (const line of wanted) assert.match(line, /^\d{4}-\d\d-\d\d 02:00 \(UTC\+03:00\)$/);
  assert.deepEqual(await nextShown(), wanted, 'the card lists the next three firings in the schedule\'s zone');
  assert.equal(await page.textContent(`${card} .cron`), '0 2 * * *');
  assert.equal(await page.textContent(`${card} .timezone`), 'Europe/Moscow');
  assert.match(await page.textContent(`${card} .budget`), /\$2\.5000/);
  assert.equal(await page.textContent(`${card} .missed`), 'caught up once');
  assert.equal(await page.textContent(`${card} .badge`), 'enabled');
  await shot(page, 'schedules-listed');

  // Edit: the form takes the schedule's values, and saving PUTs them to the same id.
  await page.click(`${card} [data-action=edit]`);
  assert.equal(await page.textContent('#schedule-form-title'), `Edit schedule #${created.id}`);
  assert.equal(await page.inputValue('#cron'), '0 2 * * *');
  assert.equal(await page.inputValue('#budget'), '2.5');
  await page.fill('#cron', '30 6 * * 1-5');
  await page.fill('#timezone', 'UTC');
  await page.uncheck('#enabled');
  await page.click('#schedule-save');
  await page.waitForSelector(`${card} .cron:has-text("30 6 * * 1-5")`);
  const { schedules } = await daemon.api('/v1/schedules');
  assert.equal(schedules.length, 1, 'editing did not create another schedule');
  assert.deepEqual([schedules[0].id, schedules[0].cron, schedules[0].timezone, schedules[0].enabled],
    [created.id, '30 6 * * 1-5', 'UTC', false]);
  assert.equal(await page.textContent(`${card} .badge`), 'disabled');
  assert.equal(await page.textContent('#schedule-form-title'), 'New schedule', 'the form is back to creating');
  assert.deepEqual(await nextShown(), await nextWanted());

  // A schedule written with `cores`, as the local provider takes them, reads as its instance types.
  const cored = await daemon.api('/v1/schedules', { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ cron: '0 3 * * *', enabled: false, experiment: { workload: {}, configs: [{ provider: 'local', cores: [1, 2] }] } }) });
  await page.reload();
  await page.waitForSelector(`article[data-schedule="${cored.id}"]`);
  const coredText = await page.textContent(`article[data-schedule="${cored.id}"]`);
  assert.match(coredText, /local\/local-1c\|local-2c/);
  assert.ok(!coredText.includes('undefined'), coredText);
  await daemon.api(`/v1/schedules/${cored.id}`, { method: 'DELETE' });
  await page.reload();
  await page.waitForSelector(card);

  // Delete, after a confirmation.
  await page.click(`${card} [data-action=delete]`);
  assert.ok(await page.isVisible(card), 'nothing is deleted before the confirmation');
  await page.click(`${card} [data-action=confirm-delete]`);
  await page.waitForSelector('#schedule-list .state.empty');
  assert.deepEqual((await daemon.api('/v1/schedules')).schedules, []);
});

test('the cancel button cancels a live run, and the page hears it over the stream', { timeout: 180000 }, async () => {
  const { page } = main;
  const body = {
    name: 'to cancel',
    workload: { epochs: 1, limit: 60000, test_limit: 200 },
    configs: [{ provider: 'local', instance_type: 'local-1c' }],
  };
  const { id } = await daemon.api('/v1/experiments', { method: 'POST', body: JSON.stringify(body),
    headers: { 'Content-Type': 'application/json' } });
  const runId = (await daemon.api(`/v1/experiments/${id}`)).runs[0].id;
  await page.goto(`${daemon.url}/#/runs/${runId}`);
  await page.waitForSelector('#timeline[data-status=learning]', { timeout: 120000 });
  await page.click('#cancel');
  await page.click('#cancel-confirm');
  await page.waitForSelector('#timeline[data-status=cancelled]', { timeout: 60000 });
  const run = await daemon.api(`/v1/runs/${runId}`);
  assert.equal(run.status, 'cancelled');
  assert.equal(run.reason, 'cancelled by user');
  assert.equal(await page.isVisible('#cancel'), false);
  assert.match(await page.textContent('#event-log'), /status cancelled/);
});

// Creates the experiment of one run and waits until that run is done. Earlier tests' queued runs would go first:
// they are cancelled, so it need not wait for them.
async function runAlone(body, within, what, expect = 'done') {
  for (const e of (await daemon.api('/v1/experiments')).experiments)
    if (e.status === 'queued' || e.status === 'running') await daemon.api(`/v1/experiments/${e.id}`, { method: 'DELETE' });
  const { id } = await daemon.api('/v1/experiments', { method: 'POST', body: JSON.stringify(body),
    headers: { 'Content-Type': 'application/json' } });
  const runId = (await daemon.api(`/v1/experiments/${id}`)).runs[0].id;
  const done = await until(async () => {
    const r = await daemon.api(`/v1/runs/${runId}`);
    return ['done', 'failed', 'cancelled'].includes(r.status) && r;
  }, within, what);
  assert.equal(done.status, expect, done.reason);
  return { id, runId, done };
}

// A folder of one run.sh, uploaded: its workdir name.
async function uploadRunScript(text) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsum-web-job-'));
  writeFileSync(path.join(dir, 'run.sh'), text);
  const archive = execFileSync('tar', ['-czf', '-', '-C', dir, 'run.sh']);
  rmSync(dir, { recursive: true, force: true });
  const folder = await daemon.api('/v1/workdirs', { method: 'POST', body: archive, headers: { 'Content-Type': 'application/gzip' } });
  return `sha256:${folder.sha256}`;
}

const stampedLog = (page) => page.$$eval('#event-log li', (items) => items.map((li) => [Date.parse(li.querySelector('time').getAttribute('datetime')) / 1000, li.textContent]));
const timelineOf = (page) => page.$$eval('#timeline li', (items) => Object.fromEntries(items.map((li) => [li.dataset.phase, [li.dataset.state, li.querySelector('.secs').textContent]])));

test('a failed job\'s page: its epoch\'s numbers, no phase that did not run, its history at the daemon\'s times, what it billed', { timeout: 240000 }, async () => {
  const { page } = main;
  // A folder job that reports an epoch (learn is under way from there), then fails.
  const workdir = await uploadRunScript('echo \'{"event": "epoch", "epoch": 1, "loss": 0.5, "images_per_s": 100}\' > "$TSUM_EVENTS"\n' +
    'sleep 1\necho giving up\nexit 3\n');
  const { id: failedId, runId, done: run } = await runAlone({
    name: 'fails in learn', workload: { workdir, run: 'sh run.sh' }, configs: [{ provider: 'local', instance_type: 'local-1c' }], repetitions: 1,
  }, 180000, 'the failing job to end', 'failed');
  assert.match(run.reason, /^learn failed: the job exited with status 3/);
  for (const p of ['learn', 'verify', 'save']) assert.equal(run.phases[p], null, `${p} is not timed`);
  for (const p of ['startup', 'install', 'load_data', 'start', 'poweroff']) assert.ok(run.phases[p] >= 0, `${p} is timed`);
  assert.deepEqual(run.epochs.map((e) => [e.epoch, e.loss, e.images_per_s]), [[1, 0.5, 100]]);
  assert.ok(Object.values(run.cost).every((c) => c.partial && c.amount > 0), JSON.stringify(run.cost));

  await page.goto(`${daemon.url}/#/runs/${runId}`);
  await page.waitForSelector('#timeline[data-status=failed]');
  await page.waitForSelector('#event-log li');
  const timeline = await timelineOf(page);
  assert.deepEqual(timeline.learn, ['failed', 'failed']);
  for (const p of ['verify', 'save']) assert.deepEqual(timeline[p], ['pending', ''], `${p} did not run: ${JSON.stringify(timeline)}`);
  assert.deepEqual((await page.$$eval('#epochs tbody tr td', (cells) => cells.map((c) => c.textContent))).slice(0, 3), ['1', '0.5000', '100']);
  const stamped = await stampedLog(page);
  assert.ok(stamped.some(([, text]) => /epoch 1: loss 0\.5000, 100 images\/s/.test(text)), JSON.stringify(stamped));
  assert.ok(stamped.some(([, text]) => /poweroff took/.test(text)), JSON.stringify(stamped));
  assert.ok(!stamped.some(([, text]) => /(learn|verify|save) took/.test(text)), JSON.stringify(stamped));
  assertHistory(stamped, run);
  assert.match(await page.textContent('main'), /the run ended before all 8 phases ran/);
  await shot(page, 'run-failed');

  // A job that marks nothing and succeeds: all of it is learn; start and verify took no time of their own, and
  // are shown so rather than as 0 s; t_sum is the phases that ran.
  const plain = await uploadRunScript('echo working\n');
  const { id: doneId, runId: plainId, done: ok } = await runAlone({
    name: 'unmarked', workload: { workdir: plain, run: 'sh run.sh' }, configs: [{ provider: 'local', instance_type: 'local-1c' }], repetitions: 1,
  }, 180000, 'the unmarked job to end');
  assert.deepEqual(ok.unmarked, ['start', 'verify']);
  assert.equal(ok.phases.start, null);
  assert.equal(ok.phases.verify, null);
  const sum = PHASES.map((p) => ok.phases[p] ?? 0).reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(ok.t_sum - sum) < 1e-9, `t_sum ${ok.t_sum} is the phases that ran: ${sum}`);
  await page.goto(`${daemon.url}/#/runs/${plainId}`);
  await page.waitForSelector('#timeline[data-status=done]');
  await page.waitForSelector('#event-log li');
  const unmarked = await timelineOf(page);
  for (const p of ['start', 'verify']) assert.deepEqual(unmarked[p], ['unmarked', 'not marked'], JSON.stringify(unmarked));
  const history = await stampedLog(page);
  assert.ok(history.some(([, text]) => /start not marked by the job/.test(text)), JSON.stringify(history));
  assertHistory(history, ok);

  // The experiments' progress bars: done, failed and cancelled runs each in their own colour.
  await page.goto(`${daemon.url}/#/experiments`);
  await page.waitForSelector('#experiments');
  const bars = await page.$$eval('#experiments tbody tr', (rows) => Object.fromEntries(rows.map((r) => [r.dataset.experiment,
    Object.fromEntries([...r.querySelectorAll('.progress .segment')].map((seg) => [seg.classList[1],
      { runs: Number(seg.dataset.runs), colour: getComputedStyle(seg).backgroundColor, width: seg.getBoundingClientRect().width }]))])));
  const cancelled = Object.values(bars).find((b) => b.cancelled?.runs > 0);
  assert.ok(cancelled, `an experiment with a cancelled run: ${JSON.stringify(bars)}`);
  const failedExp = await daemon.api(`/v1/experiments/${failedId}`);
  assert.equal(bars[failedId].failed.runs, failedExp.progress.failed, `${JSON.stringify(bars[failedId])} ${JSON.stringify(failedExp.progress)}`);
  assert.equal(failedExp.progress.failed, 1, JSON.stringify(failedExp.progress));
  assert.ok(bars[failedId].failed.width > 0 && bars[failedId].done.width === 0, JSON.stringify(bars[failedId]));
  assert.ok(bars[doneId].done.width > 0, JSON.stringify(bars[doneId]));
  const colours = new Set([bars[doneId].done.colour, bars[failedId].failed.colour, cancelled.cancelled.colour]);
  assert.equal(colours.size, 3, `three colours: ${[...colours]}`);
});

test('an inference sweep\'s run page charts images/s and p50/p99 latency against the batch size', { timeout: 240000 }, async () => {
  const { page } = main;
  const body = {
    name: 'sweep', repetitions: 1,
    workload: { kind: 'infer', model: 'cifar_small', batch: [1, 4, 16], iterations: 3, source: 'memory' },
    configs: [{ provider: 'local', instance_type: 'local-1c' }],
  };
  const { runId } = await runAlone(body, 180000, 'the sweep to finish');
  await page.goto(`${daemon.url}/#/runs/${runId}`);
  await page.waitForSelector('#chart-inference');
  const chart = await page.evaluate(() => {
    const c = window.tsum.charts.get('inference');
    return { labels: c.data.labels, series: c.data.datasets.map((d) => [d.label, d.data.length, d.data.every((v) => v > 0)]) };
  });
  assert.deepEqual(chart.labels, ['1', '4', '16']);
  assert.deepEqual(chart.series, [['images/s', 3, true], ['p50 latency (ms)', 3, true], ['p99 latency (ms)', 3, true]]);
  assert.equal(await page.locator('#inference tbody tr').count(), 3);
  assert.equal(await page.isVisible('#epochs'), false);  // a sweep has no epochs table
});

test('a serving experiment: its page describes it, draws p99 against throughput with the bound and prices it; its run lists the levels', { timeout: 300000 }, async () => {
  const { page } = main;
  const body = {
    name: 'serving', repetitions: 1,
    workload: { kind: 'serve', model: 'delay', service_ms: 10, max_batch: 1, concurrency: [1, 4], window_s: 0.5, bound_ms: 500 },
    configs: [{ provider: 'local', instance_type: 'local-1c' }],
  };
  const { id, runId, done } = await runAlone(body, 240000, 'the serving run to finish');
  assert.equal(done.metrics.serving.length, 2);
  await page.goto(`${daemon.url}/#/experiments/${id}`);
  await page.waitForSelector('#serving-plan tbody tr');
  assert.match(await page.textContent('.meta'), /serving delay \(max batch 1, 1 image a request, fp32\), concurrency 1, 4, p99 bound 500 ms/);
  const chart = await page.evaluate(() => {
    const c = window.tsum.charts.get('serving');
    return c.data.datasets.map((d) => [d.label, d.data.length]);
  });
  assert.deepEqual(chart, [['local/local-1c', 2], ['p99 bound 500 ms', 2]]);
  assert.match(await page.textContent('#serving-plan tbody tr'), /per million|\$/);
  assert.notEqual((await page.textContent('#runs tbody tr td:last-child')).trim(), '–');  // images/s of the best level
  await page.goto(`${daemon.url}/#/runs/${runId}`);
  await page.waitForSelector('#serving tbody tr');
  assert.equal(await page.locator('#serving tbody tr').count(), 2);
  await page.waitForSelector('#chart-serving');
});

test('the experiments page offers the seeds\' presets with their runs and worst case, and creates one', { timeout: 120000 }, async () => {
  const { page } = main;
  await page.goto(`${daemon.url}/#/experiments`);
  await page.waitForSelector('#preset-table tbody tr');
  assert.deepEqual(await page.locator('#preset-table tbody th').allTextContents(), ['cpu-vs-gpu', 'optimizers', 'inference']);
  const { presets } = await daemon.api('/v1/presets');
  const inference = presets.find((p) => p.name === 'inference');
  assert.match(await page.textContent('#preset-table tr[data-preset=inference]'), new RegExp(`${inference.runs}`));
  // Without a CIFAR-10 data set the optimizers preset has nothing to run: its button is off and a note says why.
  assert.equal(await page.isDisabled('button[data-preset=optimizers]'), true);
  assert.match(await page.textContent('#preset-table tr[data-preset=optimizers]'), /no cifar10-bin data set/);
  const before = (await daemon.api('/v1/experiments')).experiments.length;
  await page.click('button[data-preset=inference]');
  await page.waitForURL(/#\/experiments\/\d+$/);
  const id = Number(page.url().split('/').pop());
  const exp = await daemon.api(`/v1/experiments/${id}`);
  assert.equal(exp.name, 'inference');
  assert.equal(exp.runs.length, inference.runs);
  assert.equal((await daemon.api('/v1/experiments')).experiments.length, before + 1);
  await daemon.api(`/v1/experiments/${id}`, { method: 'DELETE' });  // not run here: ResNet-50 on 2 cores
});

// Learn scales with cores; t-4c is the cheapest under a 60 s minimum (tests/integration/test_search.cpp).
const SEARCH_TRACE = `config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,save,poweroff
t-2c,trace,t-2c,2,0,0.10,10,20,10,5,800,5,5,10
t-4c,trace,t-4c,4,0,0.12,10,20,10,5,400,5,5,10
t-8c,trace,t-8c,8,0,0.40,10,20,10,5,200,5,5,10
`;

test('a search\'s probe pages show its probes in order, every candidate\'s band after each probe, and why it stopped', { timeout: 240000 }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsum-web-search-'));
  writeFileSync(path.join(dir, 'trace.csv'), SEARCH_TRACE);
  const traced = await startDaemon({ args: ['--trace', path.join(dir, 'trace.csv'), '--trace-speed', '200'] });
  try {
    const created = await traced.api('/v1/searches', { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ workload: { model: 'mnist_cnn', dataset: 'fashion-mnist', epochs: 1 },
        candidates: ['t-2c', 't-4c', 't-8c'].map((t) => ({ provider: 'trace', instance_type: t })),
        objective: 'cost', probe_budget: 1, future_runs: 100, billing: 'per_second_60s_min' }) });
    const s = await until(async () => {
      const now = await traced.api(`/v1/searches/${created.id}`);
      return now.status !== 'running' && now;
    }, 180000, 'the search to finish');
    assert.equal(s.status, 'done', JSON.stringify(s));
    assert.ok(s.trace.length >= 1 && s.rounds.length === s.trace.length + 1);
    const { page, context, consoleErrors, offHost } = await openPage(browser);
    await signIn(page, traced);
    await page.waitForSelector('#experiments');

    const last = s.probes[s.probes.length - 1];
    await page.goto(`${traced.url}/#/experiments/${last.experiment_id}`);
    await page.waitForSelector('#search-summary[data-status=done]');
    const probes = await page.$$eval('#search-probes tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
    assert.deepEqual(probes.map((r) => r[1]), s.trace.map((t) => t.config));
    assert.deepEqual(probes.map((r) => r[3]), s.trace.map((t) => t.why));
    const columns = await page.$$eval('#search-bands thead th', (ths) => ths.map((th) => th.textContent));
    assert.equal(columns.length, 1 + s.rounds.length);
    const candidates = await page.$$eval('#search-bands tbody tr', (trs) => trs.map((tr) => tr.dataset.config));
    assert.deepEqual([...candidates].sort(), ['trace/t-2c', 'trace/t-4c', 'trace/t-8c']);
    // Each round's pick carries the star in its column, and no other cell of that column does.
    for (const [k, round] of s.rounds.entries()) {
      const starred = await page.$$eval(`#search-bands tbody tr`, (trs, col) => trs
        .filter((tr) => tr.cells[col].textContent.includes('★')).map((tr) => tr.dataset.config), k + 1);
      assert.deepEqual(starred, round.pick ? [round.pick] : [], `round ${k}`);
    }
    const summary = await page.textContent('#search-summary');
    assert.ok(summary.includes(s.stop_reason) && summary.includes(s.recommendation.config), summary);
    // It says whether the recommendation was measured, or what the guess rests on and may cost.
    if (s.recommendation.measured) assert.ok(summary.includes(`${s.recommendation.config} (measured)`), summary);
    else assert.ok(summary.includes('not measured') && summary.includes(s.recommendation.why), summary);
    assert.equal(typeof s.model_check.explains, 'boolean');
    await shot(page, 'search-experiment');

    // The first probe's run page shows the same search with that probe marked.
    await page.goto(`${traced.url}/#/runs/${s.probes[0].run_id}`);
    await page.waitForSelector('#search-probes tr.current[data-probe="1"]');
    await page.waitForSelector('#timeline[data-status=done]');
    // A finished trace run reported no epochs, and will not: the page does not promise them.
    const trainer = await page.textContent('main');
    assert.ok(!trainer.includes('No epochs yet'), 'a finished run is not waiting for epochs');
    assert.ok(trainer.includes('This run reported no epochs'), trainer);
    assert.equal(await overflowsSideways(page), false);
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(offHost, []);
    await context.close();
  } finally {
    await traced.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every page fits 1280×800 and 390×844 without sideways scrolling', async () => {
  const schedule = await daemon.api('/v1/schedules', { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'a schedule with a rather long name to wrap', cron: '15 3 * * 1', timezone: 'America/Argentina/Buenos_Aires',
      budget: 10, experiment: { workload: { epochs: 1 }, configs: [{ provider: 'local', instance_type: 'local-2c' }] } }) });
  for (const [name, viewport] of Object.entries(VIEWPORTS)) {
    const { page, context, consoleErrors, offHost } = await openPage(browser, viewport);
    await signIn(page, daemon);
    await page.waitForSelector('#create-form input[name=config]');
    const exp = await daemon.api(`/v1/experiments/${experimentId}`);
    const pages = [
      ['experiments', '#/experiments', '#experiments'],
      ['experiment', `#/experiments/${experimentId}`, '#chart-cost'],
      ['run', `#/runs/${exp.runs[1].id}`, '#timeline[data-status=done]'],
      ['offers', '#/offers', 'section[data-provider=local]'],
      ['schedules', '#/schedules', '#schedule-list article[data-schedule]'],
    ];
    for (const [page_name, hash, ready] of pages) {
      await page.goto(`${daemon.url}/${hash}`);
      await page.waitForSelector(ready);
      assert.equal(await overflowsSideways(page), false, `${page_name} overflows sideways at ${name}`);
      await shot(page, `${page_name}-${name}`);
    }
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(offHost, []);
    await context.close();
  }
  await daemon.api(`/v1/schedules/${schedule.id}`, { method: 'DELETE' });
});

test('the signed-in session had no console errors and no request left 127.0.0.1', () => {
  assert.deepEqual(main.consoleErrors, []);
  assert.deepEqual(main.offHost, []);
  assert.ok(main.requests.every((r) => new URL(r.url).hostname === '127.0.0.1' || r.url.startsWith('data:')));
});
