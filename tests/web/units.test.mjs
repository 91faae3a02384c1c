// The dashboard's pure helpers: statistics, the billing-step marker, SSE parsing, the planner's rows and the
// schedule form.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { configName, describeWorkload } from '../../web/src/format.js';
import { planRows } from '../../web/src/plan.js';
import { localFiring, scheduleBody } from '../../web/src/schedule_form.js';
import { scaleOf } from '../../web/src/search.js';
import { parseEvents } from '../../web/src/sse.js';
import { attemptSpans, byConfig, headroomUnderStep, resources } from '../../web/src/stats.js';

test('a t_sum just under a step of a minute or more is marked; elsewhere not', () => {
  const perMinute = { name: 'per_minute', step_s: 60, min_s: 0 };
  assert.deepEqual(headroomUnderStep(55, perMinute), { left: 5 / 60, boundary: 60 });
  assert.equal(headroomUnderStep(50, perMinute), null);        // 10 s = 17% of the step left
  assert.equal(headroomUnderStep(60, perMinute), null);        // on the boundary: nothing left to lose
  assert.deepEqual(headroomUnderStep(118, perMinute), { left: 2 / 60, boundary: 120 });
  assert.equal(headroomUnderStep(0.95, { step_s: 1, min_s: 60 }), null);  // per-second steps do not bite
  assert.equal(headroomUnderStep(3500, { step_s: 3600, min_s: 0 }).boundary, 3600);
  assert.equal(headroomUnderStep(55, { step_s: 60, min_s: 120 }), null);  // under the minimum
  assert.equal(headroomUnderStep(null, perMinute), null);
});

test('per configuration: the summary\'s statistics in spec order, none for a config with no done run', () => {
  const d = (n, mean, stderr) => ({ n, mean, stderr, min: mean, max: mean });
  const phases = Object.fromEntries(['startup', 'install', 'load_data', 'start', 'learn', 'verify', 'save', 'poweroff'].map((p) => [p, d(2, 1.5, 0.5)]));
  const experiment = {
    spec: { configs: [{ provider: 'local', instance_type: 'local-1c' }, { provider: 'local', instance_type: 'local-4c' }] },
    summary: {
      configs: [{ config_index: 0, runs_done: 2, t_sum: d(2, 12, 4), phases: { ...phases, verify: d(1, 3, 0) },
        mean_cost: { per_hour: 0.1 }, currency: 'EUR' }],
    },
  };
  const [one, four] = byConfig(experiment);
  assert.equal(one.name, 'local/local-1c');
  assert.equal(one.done, 2);
  assert.equal(one.tSum.mean, 12);
  assert.equal(one.phases.learn.mean, 1.5);
  assert.equal(one.phases.learn.n, 2);
  assert.equal(one.phases.learn.stderr, 0.5);
  assert.equal(one.phases.verify.stderr, null);  // one value: no spread to show
  assert.equal(one.tLearn, one.phases.learn);
  assert.equal(one.cost.per_hour, 0.1);
  assert.equal(one.currency, 'EUR');
  assert.equal(four.done, 0);
  assert.deepEqual(four.phases.startup, { mean: null, stderr: null, n: 0 });  // a live run's phases do not count yet
  assert.deepEqual(resources(four.config, []), { vcpus: 4, gpus: 0 });
  assert.deepEqual(resources(four.config, [{ provider: 'local', instance_type: 'local-4c', vcpus: 4, gpus: 1 }]), { vcpus: 4, gpus: 1 });
});

test('SSE parsing keeps incomplete events for later and drops comments', () => {
  const [events, rest] = parseEvents(': heartbeat\n\nevent: run\ndata: {"id":1}\n\nevent: end\ndata: {"sta');
  assert.deepEqual(events, [{ name: 'run', data: '{"id":1}' }]);
  assert.equal(rest, 'event: end\ndata: {"sta');
  const [more] = parseEvents(`${rest}tus":"done"}\n\n`);
  assert.deepEqual(more, [{ name: 'end', data: '{"status":"done"}' }]);
  const [crlf] = parseEvents('data: a\r\ndata: b\r\n\r\n');
  assert.deepEqual(crlf, [{ name: 'message', data: 'a\nb' }]);
});

test('the planner\'s ranked offers become table rows, in its order, at most `limit`', () => {
  const entry = (config, tSum, cost, feasible = true) => ({
    config, billing: 'per_minute', t_sum: tSum, t_sum_p10: tSum - 1, t_sum_p90: tSum + 2, billed_s: 60 * Math.ceil(tSum / 60),
    cost, currency: 'USD', feasible, reason: `${config} because`,
  });
  const plan = { ranked: [entry('local/local-2c', 40, 0.01), entry('local/local-1c', 70, 0.02), entry('aws/x', 10, 0.5, false)] };
  const rows = planRows(plan, 2);
  assert.equal(rows.length, 2);
  assert.deepEqual(rows[0], { rank: 1, config: 'local/local-2c', billing: 'per_minute', tSum: 40, tLow: 39, tHigh: 42,
    billedS: 60, cost: 0.01, currency: 'USD', reason: 'local/local-2c because', feasible: true });
  assert.equal(rows[1].billedS, 120);
  assert.equal(planRows(plan)[2].feasible, false);
  assert.deepEqual(planRows({ ranked: [] }), []);
  assert.deepEqual(planRows(undefined), []);
});

test('a schedule form becomes the POST body, or problems naming each bad field', () => {
  const good = { name: ' nightly ', cron: ' 0 2 * * * ', timezone: 'Europe/Moscow', experiment: '{"configs":[]}',
    budget: '', missed: 'catch_up', enabled: false };
  assert.deepEqual(scheduleBody(good), { problems: [], body: { name: 'nightly', cron: '0 2 * * *', timezone: 'Europe/Moscow',
    experiment: { configs: [] }, budget: null, missed: 'catch_up', enabled: false } });
  assert.equal(scheduleBody({ ...good, budget: '12.5' }).body.budget, 12.5);
  assert.equal(scheduleBody({ ...good, cron: '@daily' }).body.cron, '@daily', 'a macro is one field');
  assert.match(scheduleBody({ ...good, cron: '@ daily' }).problems[0], /Cron needs five fields/);
  assert.equal('name' in scheduleBody({ ...good, name: '  ' }).body, false, 'an empty name is left to the daemon');

  const bad = scheduleBody({ cron: '0 2 * *', timezone: ' ', experiment: '{"configs":', budget: '-3' });
  assert.equal(bad.body, undefined);
  assert.equal(bad.problems.length, 4);
  assert.match(bad.problems[0], /Cron needs five fields/);
  assert.match(bad.problems[1], /Time zone is empty/);
  assert.match(bad.problems[2], /Experiment is not valid JSON/);
  assert.match(bad.problems[3], /Budget must be a positive amount/);
  assert.match(scheduleBody({ ...good, experiment: '[1]' }).problems[0], /must be a JSON object/);
});

test('firing times read as date, time and UTC offset', () => {
  assert.equal(localFiring('2026-11-23T02:00:00+03:00'), '2026-11-23 02:00 (UTC+03:00)');
  assert.equal(localFiring('2026-11-23T02:00:00-05:30'), '2026-11-23 02:00 (UTC-05:30)');
  assert.equal(localFiring('2026-11-23T02:00:00Z'), '2026-11-23 02:00 (UTC)');
  assert.equal(localFiring('soon'), 'soon');
  assert.equal(localFiring(undefined), '–');
});

test('a configuration is named by its offer, a non-native runtime and the workload fields the experiment varies', () => {
  assert.equal(configName({ provider: 'local', instance_type: 'local-2c' }), 'local/local-2c');
  assert.equal(configName({ provider: 'local', instance_type: 'local-1c', runtime: 'docker' }), 'local/local-1c docker');
  assert.equal(configName({ provider: 'aws', instance_type: 'c5.large', runtime: 'native',
    workload: { optimizer: 'adam', lr: 0.01 } }), 'aws/c5.large optimizer=adam lr=0.01');
});

test('a search\'s bands share one log scale from the lowest p10 to the highest p90', () => {
  const scale = scaleOf([{ p10: 1, mean: 2, p90: 4 }, { p10: 10, mean: 20, p90: 100 }]);
  assert.equal(scale(1), 0);
  assert.equal(scale(100), 100);
  assert.ok(Math.abs(scale(10) - 50) < 1e-9);  // log scale: 10 is halfway between 1 and 100
  assert.equal(scale(1000), 100);  // clamped
  assert.equal(scaleOf([])(5), 0);  // nothing to scale
  assert.equal(scaleOf([{ p10: 3, mean: 3, p90: 3 }])(3), 50);  // one point: the middle
});

test('a spot run\'s machines share one time axis from the first start to the last end; one machine gets none', () => {
  const attempts = [
    { attempt: 1, market: 'spot', started_at: 100, ended_at: 130, outcome: 'interrupted' },
    { attempt: 2, market: 'spot', started_at: 135, ended_at: 160, outcome: 'interrupted' },
    { attempt: 3, market: 'on-demand', started_at: 160, ended_at: null, outcome: null },
  ];
  const spans = attemptSpans(attempts, 200);
  assert.equal(spans.length, 3);
  assert.deepEqual(spans.map((s) => s.outcome), ['interrupted', 'interrupted', 'running']);
  assert.equal(spans[0].start, 0);
  assert.equal(spans[0].width, 30);   // 30 of the 100 s from 100 to now (200)
  assert.equal(spans[1].start, 35);
  assert.equal(spans[2].start, 60);
  assert.equal(spans[2].width, 40);   // still running: until now
  assert.equal(spans[2].market, 'on-demand');
  assert.deepEqual(attemptSpans([attempts[0]]), []);
  assert.deepEqual(attemptSpans(undefined), []);
});

test('describeWorkload says what an experiment runs: training, a sweep, serving or a job', () => {
  assert.equal(describeWorkload({ kind: 'train', model: 'mnist_cnn', dataset: 'fashion-mnist', epochs: 1, limit: 2000 }),
    'mnist_cnn on fashion-mnist, 1 epoch, 2,000 training images');
  assert.equal(describeWorkload({ kind: 'infer', model: 'resnet50', batch: [1, 8], mode: 'async', source: 'files' }),
    'resnet50 inference sweep, batch 1, 8, async, files');
  assert.equal(describeWorkload({ kind: 'serve', model: 'resnet50', max_batch: 8, batch: 1, input: 'jpeg', rate: [10, 20], arrivals: 'poisson' }),
    'serving resnet50 (max batch 8, 1 image a request, jpeg), rate 10, 20/s (poisson)');
  assert.equal(describeWorkload({ kind: 'job', image: 'r/x:1', command: ['python3', 't.py'] }), 'job r/x:1: python3 t.py');
  assert.equal(describeWorkload({ kind: 'job', workdir: `sha256:${'ab'.repeat(32)}`, setup: 's', run: 'python3 train.py' }),
    'job (folder abababababab): python3 train.py');
  assert.equal(describeWorkload({ run: 'echo hi', image: 'r/x:1' }), 'job (in r/x:1): echo hi');
});
