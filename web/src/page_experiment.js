// One experiment: (a) time per phase per configuration, (b) t_learn and t_sum against cores and GPUs,
// (c) cost per configuration under each billing rule, (d) the recommendation: the planner's ranking of every
// offer for this workload (GET /v1/plan) and what this experiment measured, and the runs. A search's probe
// (search_id set) shows its search first (search.js). While runs are
// unfinished the page follows the earliest unfinished run's event stream and reloads on each change.
import { ApiError, api } from './api.js';
import { costChart, costTable, phasesChart, scalingChart, servingChart } from './charts.js';
import { empty, failure, h, loading, pager, replace, table } from './dom.js';
import { LIVE, TERMINAL, configName, dateTime, describeWorkload, money, number, seconds } from './format.js';
import { badge } from './page_experiments.js';
import { PLAN_OBJECTIVES, planRows } from './plan.js';
import { searchCard } from './search.js';
import { watchRun } from './sse.js';
import { byConfig, resources } from './stats.js';

function card(title, hint, ...body) {
  return h('section', { class: 'card' }, h('h2', {}, title), hint && h('p', { class: 'hint' }, hint), ...body);
}

function chartBox(id, height) {
  const canvas = h('canvas', { id, role: 'img' });
  const box = h('div', { class: 'chart' }, canvas);
  box.style.height = `${height}px`;
  return [box, canvas];
}

// Rows of the measured recommendation: {objective, config, amount, currency, tSum, reason, source}, from the
// experiment's summary.
function recommendationsFromSummary(experiment, costs) {
  const { summary } = experiment;
  const rows = [];
  for (const rule of costs.rules) {
    const best = summary.cheapest?.[rule.name];
    if (!best) continue;
    const mine = summary.configs.find((c) => c.config_index === best.config_index);
    const next = summary.configs.filter((c) => c.config_index !== best.config_index)
      .sort((a, b) => a.mean_cost[rule.name] - b.mean_cost[rule.name])[0];
    let reason = `Lowest mean cost under ${rule.name} over ${mine.runs_done} done run${mine.runs_done === 1 ? '' : 's'}`;
    reason += next ? `; next best ${configName(next.config)} at ${money(next.mean_cost[rule.name], next.currency)}.`
      : '; the only configuration with done runs.';
    const near = costs.nearStep.find((n) => n.rule.name === rule.name && n.configIndex === best.config_index);
    if (near) reason += ` Its t_sum ends ${Math.round(near.left * 100)}% of a step before ${near.boundary} s: a slightly slower run costs one step more.`;
    rows.push({ objective: `Cheapest under ${rule.name}`, config: best.config, amount: best.amount,
      currency: best.currency, tSum: best.mean_t_sum, reason, source: 'experiment summary' });
  }
  if (summary.fastest) {
    const f = summary.fastest;
    const others = summary.configs.filter((c) => c.config_index !== f.config_index)
      .sort((a, b) => a.mean_t_sum - b.mean_t_sum);
    rows.push({ objective: 'Fastest', config: f.config, amount: null, currency: '', tSum: f.mean_t_sum,
      reason: `Lowest mean t_sum${others.length ? `; next ${configName(others[0].config)} at ${seconds(others[0].mean_t_sum)}` : ''}.`,
      source: 'experiment summary' });
  }
  return rows;
}

function recommendationTable(rows) {
  if (!rows.length) return empty('No recommendation yet: it needs at least one done run per configuration compared.');
  return table(['Objective', 'Recommendation', 'Cost per run', 'Mean t_sum', 'Reason', 'Source'],
    rows.map((r) => h('tr', {},
      h('th', { scope: 'row' }, r.objective),
      h('td', {}, h('b', {}, configName(r.config))),
      h('td', { class: 'num' }, r.amount === null ? '–' : money(r.amount, r.currency)),
      h('td', { class: 'num' }, seconds(r.tSum)),
      h('td', { class: 'reason' }, r.reason),
      h('td', {}, r.source))), { id: 'recommendations' });
}

const PLAN_SHOWN = 5;

function planTable(plan) {
  const rows = planRows(plan, PLAN_SHOWN);
  if (!rows.length) return empty('The planner could not predict any offer for this workload.');
  const more = plan.ranked.length - rows.length;
  return [
    table(['#', 'Configuration', 'Billing', 'Predicted t_sum', 'Billed', 'Expected cost', 'Reason'],
      rows.map((r) => h('tr', { dataset: { config: r.config, feasible: r.feasible } },
        h('td', { class: 'num' }, r.rank),
        h('th', { scope: 'row' }, h('b', {}, r.config)),
        h('td', {}, r.billing),
        h('td', { class: 'num' }, seconds(r.tSum), h('br'), h('small', {}, `p10–p90 ${seconds(r.tLow)}–${seconds(r.tHigh)}`)),
        h('td', { class: 'num' }, seconds(r.billedS, 0)),
        h('td', { class: 'num' }, money(r.cost, r.currency)),
        h('td', { class: 'reason' }, r.reason, r.feasible ? null : h('small', { class: 'reason' }, ' (not feasible)')))),
      { id: 'plan' }),
    h('p', { class: 'hint' }, `Predicted from ${plan.history_runs} done run${plan.history_runs === 1 ? '' : 's'} of this workload`,
      more > 0 ? `; ${more} more offer${more === 1 ? '' : 's'} ranked below these` : '',
      plan.unpredictable?.length ? `; ${plan.unpredictable.length} offer${plan.unpredictable.length === 1 ? '' : 's'} could not be predicted` : '',
      '.'),
  ];
}

// The planner's card: an objective picker and the ranked offers, loaded on its own so the rest of the page
// never waits for it (only the answer to the latest question is shown), then the measured recommendation.
function planCard(experimentId, { signal, state }, measured) {
  let asked = 0;
  const body = h('div', { id: 'plan-box' }, loading('Asking the planner…'));
  const picker = h('select', { id: 'plan-objective', 'aria-label': 'Objective' },
    PLAN_OBJECTIVES.map(([value, text]) => h('option', { value, selected: value === state.objective }, text)));
  const load = () => {
    const question = ++asked;
    replace(body, loading('Asking the planner…'));
    api(`/v1/plan?experiment=${experimentId}&objective=${encodeURIComponent(state.objective)}`, { signal })
      .then((plan) => question === asked && replace(body, planTable(plan)))
      .catch((err) => {
        if (signal.aborted || question !== asked) return;
        if (err instanceof ApiError && err.status === 422) {
          replace(body, empty(`The planner has no answer yet: ${err.message}.`));
        } else {
          replace(body, failure(`Could not ask the planner: ${err.message}`, load));
        }
      });
  };
  picker.addEventListener('change', () => {
    state.objective = picker.value;
    load();
  });
  load();
  return card('Recommendation', 'The planner ranks every offer of every provider for this workload, predicted from all done runs of it.',
    h('div', { class: 'field inline' }, h('label', { for: 'plan-objective' }, 'Objective'), picker),
    body,
    h('h3', { class: 'measured' }, 'Measured in this experiment'), measured);
}

// A serving experiment: every configuration's measured curve (p99 against throughput) with the bound, and the
// configurations ranked by cost per million requests at the bound (GET /v1/plan?objective=serve).
function servingCard(experimentId, w, { signal }) {
  const bound = w.bound_ms ?? 100;
  const [box, canvas] = chartBox('chart-serving', 300);
  const body = h('div', { id: 'serving-box' }, loading('Pricing the measured curves…'));
  api(`/v1/plan?experiment=${experimentId}&objective=serve&p99_ms=${bound}`, { signal })
    .then((plan) => {
      const all = [...plan.ranked, ...plan.infeasible];
      servingChart(canvas, all, bound);
      replace(body, table(['#', 'Configuration', 'Sustained', 'p99 there', 'Billed per hour', 'Per million requests', 'Reason'],
        all.map((c, i) => h('tr', { dataset: { config: c.config, feasible: i < plan.ranked.length } },
          h('td', { class: 'num' }, i < plan.ranked.length ? i + 1 : '–'),
          h('th', { scope: 'row' }, h('b', {}, c.config), i === 0 && plan.pick === c.config ? ' ★' : ''),
          h('td', { class: 'num' }, c.sustained_rps ? `${number(c.sustained_rps, 1)} req/s` : '–'),
          h('td', { class: 'num' }, Number.isFinite(c.p99_ms) ? `${number(c.p99_ms, 1)} ms` : `best ${number(c.best_p99_ms, 1)} ms`),
          h('td', { class: 'num' }, money(c.billed_hourly, c.currency)),
          h('td', { class: 'num' }, c.cost_per_million ? money(c.cost_per_million, c.currency) : 'infeasible'),
          h('td', { class: 'reason' }, c.reason))), { id: 'serving-plan' }));
    })
    .catch((err) => {
      if (!signal.aborted) replace(body, empty(`No serving curve to price yet: ${err.message}.`));
    });
  return card('Serving', `p99 latency against throughput per configuration (each level's mean over its runs), the bound at ${bound} ms, and the configurations ranked by cost per million requests at the highest throughput whose p99 meets it.`,
    box, body);
}

function costMarkerList(costs, groups, experiment) {
  const items = costs.cheapest.map(([ri, ci]) => {
    const rule = costs.rules[ri];
    const best = experiment.summary.cheapest[rule.name];
    return h('li', { dataset: { marker: 'cheapest', rule: rule.name, config: groups[ci].name } },
      h('span', { class: 'mark good' }, '★'), ` cheapest under ${rule.name}: `, h('b', {}, groups[ci].name),
      ` (${money(best.amount, best.currency)})`);
  });
  for (const n of costs.nearStep) {
    items.push(h('li', { dataset: { marker: 'near-step', rule: n.rule.name, config: n.group.name } },
      h('span', { class: 'mark warn' }, '⚠'), ` ${n.group.name} under ${n.rule.name} ends ${seconds(n.boundary - n.group.tSum.mean)} `,
      `(${Math.round(n.left * 100)}% of a step) before its ${seconds(n.boundary, 0)} boundary`));
  }
  return h('ul', { id: 'cost-markers', class: 'markers' }, items);
}

function runRow(r) {
  return h('tr', { dataset: { run: r.id } },
    h('td', {}, h('a', { href: `#/runs/${r.id}` }, `Run ${r.id}`)),
    h('td', {}, configName(r.config)),
    h('td', { class: 'num' }, r.repetition),
    h('td', {}, badge(r.status), r.reason ? h('small', { class: 'reason' }, ` ${r.reason}`) : null),
    h('td', { class: 'num' }, seconds(r.t_sum)),
    h('td', { class: 'num' }, Number.isFinite(r.metrics.test_accuracy) ? `${number(100 * r.metrics.test_accuracy, 1)} %` : '–'),
    h('td', { class: 'num' }, number(r.metrics.images_per_s)));
}

// The experiment's first page of runs (GET /v1/experiments/{id} carries it), and more on request from GET /v1/runs.
function runsTable(experiment, signal) {
  const t = table(['Run', 'Configuration', 'Repetition', 'Status', 't_sum', 'Test accuracy', 'Images/s'],
    experiment.runs.map(runRow), { id: 'runs' });
  const more = (cursor) => api(`/v1/runs?experiment=${experiment.id}&cursor=${cursor}`, { signal });
  return h('div', {}, t, pager(t.querySelector('tbody'), {
    total: experiment.total, cursor: experiment.next_cursor, more, rows: (page) => page.runs, row: runRow,
    noun: 'runs', id: 'runs',
  }));
}

function render(root, experiment, offers, liveNote, plan) {
  if (!experiment.spec) {  // stored in a form this daemon no longer reads: its runs are listed, nothing is drawn
    replace(root, h('div', { class: 'page-head' }, h('h1', {}, `#${experiment.id} ${experiment.name}`), badge(experiment.status)),
      h('p', { class: 'notice error', role: 'alert' }, experiment.error));
    return;
  }
  const groups = byConfig(experiment);
  const anyDone = groups.some((g) => g.done > 0);
  const p = experiment.progress;
  const w = experiment.spec.workload;
  const head = [
    h('div', { class: 'page-head' }, h('h1', {}, `#${experiment.id} ${experiment.name}`), badge(experiment.status)),
    h('p', { class: 'meta' },
      `${p.finished}/${p.runs} runs finished · ${describeWorkload(w)}`,
      ` · ${experiment.spec.repetitions} repetition${experiment.spec.repetitions === 1 ? '' : 's'} · created ${dateTime(experiment.created_at)}`),
    liveNote,
    experiment.search_id ? searchCard(experiment.search_id, { signal: plan.signal }) : null,
  ];
  if (!anyDone) {
    replace(root, ...head,
      card('Charts', null, empty(TERMINAL.has(experiment.status)
        ? 'No run finished successfully, so there is nothing to chart. The runs below say why.'
        : 'The charts appear as soon as the first run is done.')),
      card('Recommendation', null, h('div', { id: 'plan-box' }, empty('The planner ranks the offers for this workload once a run of this experiment is done.'))),
      card('Runs', null, runsTable(experiment, plan.signal)));
    return;
  }
  const costs = costTable(experiment, groups);
  const [phasesBox, phasesCanvas] = chartBox('chart-phases', (window.innerWidth < 600 ? 150 : 100) + 56 * groups.length);
  const [coresBox, coresCanvas] = chartBox('chart-cores', 280);
  const hasGpus = groups.some((g) => resources(g.config, offers).gpus > 0);
  const [gpusBox, gpusCanvas] = chartBox('chart-gpus', 280);
  const [costBox, costCanvas] = chartBox('chart-cost', 320);
  replace(root, ...head,
    card('Time per phase', 'The 8 phases of t_sum per configuration: mean over its done repetitions, whiskers at ± one standard error.', phasesBox),
    card('Scaling', 't_learn and t_sum (means) against the configuration\'s cores and GPUs.',
      h('div', { class: 'pair' },
        h('div', {}, h('h3', {}, 'Against vCPUs'), coresBox),
        h('div', {}, h('h3', {}, 'Against GPUs'), hasGpus ? gpusBox
          : empty('No configuration in this experiment has a GPU, so there is no GPU axis to plot.')))),
    card('Cost per configuration', 'Mean cost of one run under each billing rule. ★ marks the cheapest per rule, ⚠ a t_sum that ends within 10% of a step below the step boundary.',
      costBox, costMarkerList(costs, groups, experiment)),
    w.kind === 'serve' ? servingCard(experiment.id, w, plan) : null,
    planCard(experiment.id, plan, recommendationTable(recommendationsFromSummary(experiment, costs))),
    card('Runs', null, runsTable(experiment, plan.signal)));
  phasesChart(phasesCanvas, groups);
  scalingChart('cores', coresCanvas, groups, offers, 'vcpus');
  if (hasGpus) scalingChart('gpus', gpusCanvas, groups, offers, 'gpus');
  costChart(costCanvas, groups, costs);
}

export function experimentPage(root, [id], { signal }) {
  let offers = [];
  let following = null;  // {runId, stop}
  let reloadTimer = null;
  let liveText = '';
  const plan = { signal, state: { objective: 'cost' } };  // the objective stays picked across live reloads

  const liveNote = () => (liveText ? h('p', { class: 'notice info live', id: 'live-note' }, liveText) : null);

  // The earliest unfinished run: on the page the experiment came with, else asked for (a long experiment's first
  // page may be all finished).
  async function unfinished(experiment) {
    if (TERMINAL.has(experiment.status)) return null;
    const here = experiment.runs.find((r) => !TERMINAL.has(r.status));
    if (here || !experiment.next_cursor) return here;
    const page = await api(`/v1/runs?experiment=${experiment.id}&status=${LIVE.join(',')}&limit=1`, { signal });
    return page.runs[0];
  }

  function follow(next) {
    if (following && following.runId === next?.id) return;
    following?.stop();
    following = null;
    liveText = '';
    if (!next) return;
    liveText = `Live: following run ${next.id} (${configName(next.config)}) through the daemon's event stream.`;
    following = {
      runId: next.id,
      stop: watchRun(next.id, {
        onRun: () => scheduleReload(),
        onEnd: () => scheduleReload(),
        onState: (state, detail) => {
          if (state === 'retrying' || state === 'failed') liveText = `Live updates paused: ${detail}`;
        },
      }),
    };
  }

  function scheduleReload() {
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(load, 250);
  }

  async function load() {
    try {
      const experiment = await api(`/v1/experiments/${id}`, { signal });
      const next = await unfinished(experiment);
      if (signal.aborted) return;
      follow(next);
      render(root, experiment, offers, liveNote(), plan);
    } catch (err) {
      if (!signal.aborted) replace(root, failure(`Could not load experiment ${id}: ${err.message}`, load));
    }
  }

  replace(root, loading(`Loading experiment ${id}…`));
  api('/v1/offers', { signal }).then((data) => { offers = data.offers; }, () => { offers = []; }).then(load);
  return () => {
    clearTimeout(reloadTimer);
    following?.stop();
  };
}
