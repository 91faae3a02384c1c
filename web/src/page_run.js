// One run, live: a phase timeline and an event log fed by the daemon's event stream (no polling), what the run
// prints (its job's or tsum-train's output, followed with long polls of GET /v1/runs/{id}/logs), the resource
// statistics per phase, the trainer's loss and throughput per epoch, the cost, and a cancel button. A search's
// probe shows its search (search.js).
import { api } from './api.js';
import { epochsChart, inferenceChart, servingChart } from './charts.js';
import { empty, failure, h, loading, replace, table } from './dom.js';
import { PHASES, PHASE_OF_STATUS, TERMINAL, clock, configName, metric, money, number, seconds } from './format.js';
import { badge } from './page_experiments.js';
import { searchCard } from './search.js';
import { watchRun } from './sse.js';
import { attemptSpans } from './stats.js';

function timeline(run) {
  const known = PHASES.map((p) => run.phases[p]).filter(Number.isFinite);
  const total = known.reduce((a, b) => a + b, 0);
  const current = TERMINAL.has(run.status) ? null : PHASE_OF_STATUS[run.status];
  const failed = run.status === 'failed' ? /^(\w+) failed/.exec(run.reason)?.[1] : null;  // "learn failed: ..."
  const rows = PHASES.map((phase) => {
    const secs = run.phases[phase];
    const unmarked = run.unmarked?.includes(phase);
    const state = Number.isFinite(secs) ? 'done' : unmarked ? 'unmarked' : phase === current ? 'active'
      : phase === failed ? 'failed' : 'pending';
    const bar = h('span', { class: `bar ${phase}` });
    // Only a measured phase has a bar: the running one shows its striped track, a pending one an empty track.
    bar.style.width = state === 'done' && total > 0 ? `${Math.max(0.5, (100 * secs) / total)}%` : '0%';
    return h('li', { class: `phase ${state}`, dataset: { phase, state } },
      h('span', { class: 'name' }, phase),
      h('span', { class: 'track' }, bar),
      h('span', { class: 'secs', title: unmarked ? 'The job marked no such phase: its time is in the phase around it.' : null },
        state === 'done' ? seconds(secs, 2) : state === 'active' ? 'running…' : unmarked ? 'not marked' : state === 'failed' ? 'failed' : ''));
  });
  return h('div', {},
    h('ol', { id: 'timeline', class: 'timeline', dataset: { status: run.status } }, rows),
    h('p', { class: 'meta' }, Number.isFinite(run.t_sum) ? `t_sum ${seconds(run.t_sum, 2)}`
      : `${seconds(total, 2)} measured so far`));
}

// What changed between two states of a run, as log lines stamped with when it happened on the daemon's clock
// (not when this page heard of it: a page opened late shows the run's history at its own times): the phases'
// ends and the epochs' from the run's phase_times and epochs[].at; null where the daemon does not know it.
function changes(before, after) {
  const lines = [];
  if (!before || before.status !== after.status) {
    lines.push({ at: after.updated_at, text: `status ${after.status}${after.reason ? ` (${after.reason})` : ''}` });
  }
  const ended = (p) => after.phase_times?.[p]?.ended_at ?? null;
  for (const p of PHASES) {
    if (Number.isFinite(after.phases[p]) && !Number.isFinite(before?.phases[p])) lines.push({ at: ended(p), text: `${p} took ${seconds(after.phases[p], 2)}` });
    if (after.unmarked?.includes(p) && !before?.unmarked?.includes(p)) lines.push({ at: ended(p), text: `${p} not marked by the job: no time of its own` });
  }
  const shown = before ? before.epochs.length : 0;
  after.epochs.slice(shown).forEach((e) => {
    lines.push({ at: e.at ?? null, text: `epoch ${e.epoch}: loss ${number(e.loss, 4)}, ${number(e.images_per_s)} images/s` });
  });
  // In time order; a line whose time is unknown goes last (the sort is stable).
  return lines.sort((a, b) => (a.at ?? Infinity) - (b.at ?? Infinity));
}

// What the GPU achieved in the install phase's probe (tsum-agent.sh: tsum-train probe-gpu), so a throttled or
// partitioned GPU shows here.
function gpuProbe(probe) {
  if (!probe) return null;
  return h('p', { class: 'meta', id: 'gpu-probe' },
    `GPU probe: ${probe.name} · matrix products ${number(probe.matmul_bf16_tflops)} TFLOP/s bf16, `,
    `${number(probe.matmul_fp32_tflops)} TFLOP/s fp32 · device copy ${number(probe.copy_gbps)} GB/s`);
}

function statsTable(stats) {
  const phases = PHASES.filter((p) => stats[p]);
  if (!phases.length) return empty('No resource statistics yet: the agent sends them as each phase ends.');
  const metrics = [...new Set(phases.flatMap((p) => Object.keys(stats[p])))].sort();
  return table(['Phase', ...metrics.map((m) => `${m} min / avg / max`)], phases.map((p) => h('tr', {},
    h('th', { scope: 'row' }, p),
    metrics.map((m) => {
      const v = stats[p][m];
      return h('td', { class: 'num' }, v ? `${metric(m, v.min)} / ${metric(m, v.avg)} / ${metric(m, v.max)}` : '–');
    }))), { id: 'stats' });
}

// The epochs table, with a chart of loss and images/s once there are two epochs to draw a line through.
function epochsBlock(epochs, finished) {
  if (!epochs.length) {
    return [empty(finished ? 'This run reported no epochs (a trace replays phases only; a job reports none unless it marks them).'
      : 'No epochs yet: the trainer reports one as each epoch ends.'), null];
  }
  const canvas = epochs.length > 1 ? h('canvas', { id: 'chart-epochs', role: 'img' }) : null;
  const box = canvas && h('div', { class: 'chart small' }, canvas);
  return [h('div', {}, box, table(['Epoch', 'Loss', 'Images/s', 'Seconds'], epochs.map((e) => h('tr', {},
    h('td', { class: 'num' }, e.epoch), h('td', { class: 'num' }, number(e.loss, 4)),
    h('td', { class: 'num' }, number(e.images_per_s)), h('td', { class: 'num' }, number(e.seconds, 2)))),
  { id: 'epochs' })), canvas];
}

// The inference sweep per batch size (kind infer): a chart of throughput and latency, and the table.
function inferenceBlock(sweep) {
  if (!sweep?.length) return [null, null];
  const canvas = h('canvas', { id: 'chart-inference', role: 'img' });
  return [h('section', { class: 'card' }, h('h2', {}, 'Inference sweep'),
    h('p', { class: 'hint' }, 'Images/s and p50/p99 latency against the batch size, measured as learn.'),
    h('div', { class: 'chart small' }, canvas),
    table(['Batch', 'Images/s', 'p50 ms', 'p99 ms', 'Peak RSS'], sweep.map((b) => h('tr', {},
      h('td', { class: 'num' }, b.batch), h('td', { class: 'num' }, number(b.images_per_s)),
      h('td', { class: 'num' }, number(b.p50_ms, 2)), h('td', { class: 'num' }, number(b.p99_ms, 2)),
      h('td', { class: 'num' }, metric('rss_bytes', b.peak_rss_bytes)))), { id: 'inference' })), canvas];
}

// A serving run (kind serve): the load client's levels, p99 against throughput, and each level's split of the
// client's latency into network, queue and compute.
function servingBlock(levels, bound) {
  if (!levels?.length) return [null, null];
  const canvas = h('canvas', { id: 'chart-serving', role: 'img' });
  const name = (l) => (l.mode === 'rate' ? `${number(l.rate, 1)}/s` : `${l.concurrency}`);
  return [h('section', { class: 'card' }, h('h2', {}, 'Serving'),
    h('p', { class: 'hint' }, `Measured by the load client on node 1 against the server on node 0, a level per row (round trip ${number(levels[0].rtt_ms, 3)} ms).`),
    h('div', { class: 'chart small' }, canvas),
    table([levels[0].mode === 'rate' ? 'Rate' : 'Concurrency', 'Requests/s', 'Images/s', 'p50 ms', 'p99 ms', 'Network ms', 'Queue ms',
      'Compute ms', 'Batch', 'Stable', 'Server CPU %'], levels.map((l) => h('tr', { dataset: { over: l.over_bound } },
      h('td', { class: 'num' }, name(l)), h('td', { class: 'num' }, number(l.throughput_rps, 1)),
      h('td', { class: 'num' }, number(l.images_per_s, 1)), h('td', { class: 'num' }, number(l.p50_ms, 2)),
      h('td', { class: 'num' }, number(l.p99_ms, 2)), h('td', { class: 'num' }, number(l.network_ms, 2)),
      h('td', { class: 'num' }, number(l.queue_ms, 2)), h('td', { class: 'num' }, number(l.compute_ms, 2)),
      h('td', { class: 'num' }, number(l.batch_mean, 1)), h('td', {}, l.stable ? 'yes' : `no (${l.trials} windows)`),
      h('td', { class: 'num' }, number(l.server_cpu_avg_pct)))), { id: 'serving' })),
  () => servingChart(canvas, [{ config: 'this run', curve: levels.map((l) => ({ throughput_rps: l.throughput_rps, p99_ms: l.p99_ms })) }], bound)];
}

// A spot run's machines in turn: one bar each on a shared time axis, and what each did (its market, how it
// ended, the learning redone after it, the checkpoint it handed on).
function attemptsBlock(run) {
  const spans = attemptSpans(run.attempts);
  if (!spans.length) return null;
  const bars = h('ol', { class: 'timeline attempts', id: 'attempts' }, spans.map((s) => {
    const bar = h('span', { class: `bar ${s.outcome === 'interrupted' || s.outcome === 'abandoned' ? 'interrupted' : 'learn'}` });
    bar.style.marginLeft = `${s.start}%`;
    bar.style.width = `${s.width}%`;
    return h('li', { class: 'phase done', dataset: { attempt: s.attempt, outcome: s.outcome } },
      h('span', { class: 'name' }, `#${s.attempt} ${s.market}`), h('span', { class: 'track' }, bar),
      h('span', { class: 'secs' }, s.outcome));
  }));
  const rows = run.attempts.map((a) => h('tr', {},
    h('th', { scope: 'row' }, `#${a.attempt}`), h('td', {}, `${a.market} ${a.instance_type}${a.zone ? ` in ${a.zone}` : ''}`), h('td', {}, a.instance ?? '–'),
    h('td', { class: 'num' }, Number.isFinite(a.up_s) ? seconds(a.up_s, 1) : '–'),
    h('td', {}, a.outcome ?? 'running'), h('td', {}, a.notice ? `${a.notice.source} notice` : '–'),
    h('td', {}, a.checkpoint ? `epoch ${a.checkpoint.epoch}, step ${a.checkpoint.step} (${a.checkpoint.reason})` : '–'),
    h('td', { class: 'num' }, Number.isFinite(a.lost_s) ? seconds(a.lost_s, 1) : '–')));
  return h('section', { class: 'card' }, h('h2', {}, 'Machines'),
    h('p', { class: 'hint' }, `Interrupted ${run.attempts.filter((a) => a.outcome === 'interrupted').length} times; `,
      `learning redone ${Number.isFinite(run.lost_s) ? seconds(run.lost_s, 1) : '–'}.`),
    bars, table(['Attempt', 'Machine', 'Instance', 'Up', 'Ended', 'Interruption', 'Checkpoint handed on', 'Redone'], rows));
}

function costBlock(run) {
  const rules = Object.entries(run.cost);
  if (!rules.length) return empty('The cost is known once all 8 phases are timed.');
  const rows = table(['Billing rule', 'Billed', 'Cost'], rules.map(([rule, c]) => h('tr', {},
    h('th', { scope: 'row' }, rule), h('td', { class: 'num' }, seconds(c.billed_s, 0)),
    h('td', { class: 'num' }, money(c.amount, c.currency)))));
  if (!rules.some(([, c]) => c.partial)) return rows;
  return h('div', {}, h('p', { class: 'hint' }, 'What the machine\'s up-time billed: the run ended before all 8 phases ran.'), rows);
}

const OUTPUT_KEEP = 2000;  // pieces (one per answer) the page holds; the daemon keeps the head and the tail

// The run's output, followed until the run has ended: lines appended to `pre` as they come (each long poll
// answers once a line arrives, or after 20 s), a source's gap said where it is. `onState(text)` says where it is.
async function followOutput(id, pre, onState, signal) {
  let after = 0;
  const next = new Map();  // source -> its next line number
  for (let failures = 0; !signal.aborted;) {
    let page;
    try {
      page = await api(`/v1/runs/${id}/logs?after=${after}&wait=20`, { signal });
      failures = 0;
    } catch (err) {
      if (signal.aborted) return;
      onState(`reconnecting (${err.message})`);
      await new Promise((r) => setTimeout(r, Math.min(10000, 1000 * 2 ** failures++)));
      continue;
    }
    let text = '';
    for (const line of page.lines) {
      const expected = next.get(line.source);
      if (expected !== undefined && line.n > expected) text += `[… ${line.n - expected} lines not kept …]\n`;
      next.set(line.source, line.n + 1);
      text += (next.size > 1 || line.source !== 'a1n0' ? `[${line.source}] ` : '') + line.text + '\n';
    }
    if (text) {
      const follow = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;  // at the bottom: stay there
      pre.append(text);
      while (pre.childNodes.length > OUTPUT_KEEP) pre.firstChild.remove();
      if (follow) pre.scrollTop = pre.scrollHeight;
    }
    after = page.after;
    pre.dataset.lines = String(Number(pre.dataset.lines || 0) + page.lines.length);
    if (page.done) {
      onState(page.dropped ? `ended; ${page.dropped} lines from the middle not kept` : 'ended');
      return;
    }
    onState('following');
  }
}

export function runPage(root, [id], { signal }) {
  let run = null;
  let connection = 'connecting';
  let confirming = false;
  let actionError = '';
  let search = null;  // {status, card}: the search this run is a probe of, reloaded when the run's status changes
  const logList = h('ol', { id: 'event-log', class: 'log' });
  const output = h('pre', { id: 'run-output', class: 'output', 'data-lines': '0' });
  const outputState = h('span', { id: 'run-output-state', class: 'hint' }, 'connecting…');

  function cancelControls() {
    if (!run || TERMINAL.has(run.status)) return null;
    if (!confirming) {
      return h('button', { type: 'button', class: 'danger', id: 'cancel', onclick: () => { confirming = true; draw(); } }, 'Cancel run');
    }
    return h('span', { class: 'confirm' }, 'Terminate the instance and cancel the run? ',
      h('button', { type: 'button', class: 'danger', id: 'cancel-confirm', onclick: cancel }, 'Yes, cancel'),
      h('button', { type: 'button', class: 'secondary', onclick: () => { confirming = false; draw(); } }, 'Keep running'));
  }

  async function cancel() {
    confirming = false;
    try {
      run = await api(`/v1/runs/${id}`, { method: 'DELETE', signal });
      actionError = '';
    } catch (err) {
      actionError = `Could not cancel: ${err.message}`;
    }
    if (!signal.aborted) draw();
  }

  function searchBlock() {
    if (!run.search_id) return null;
    if (search?.status !== run.status) search = { status: run.status, card: searchCard(run.search_id, { signal, currentRun: run.id }) };
    return search.card;
  }

  function draw() {
    if (!run) return;
    const sweep = run.metrics.inference;
    const levels = run.metrics.serving;
    const [epochs, epochsCanvas] = epochsBlock(sweep || levels ? [] : run.epochs, TERMINAL.has(run.status));
    const [inference, inferenceCanvas] = inferenceBlock(sweep);
    const [serving, drawServing] = servingBlock(levels, run.workload?.bound_ms ?? 100);
    const liveText = { connecting: 'connecting…', live: 'live', ended: 'final', retrying: 'reconnecting…', failed: 'not live' }[connection];
    replace(root,
      h('div', { class: 'page-head' }, h('h1', {}, `Run ${run.id}`), badge(run.status),
        h('span', { class: `conn ${connection}`, id: 'connection' }, liveText), cancelControls()),
      h('p', { class: 'meta' }, `${configName(run.config)} · repetition ${run.repetition} · `,
        h('a', { href: `#/experiments/${run.experiment_id}` }, `experiment #${run.experiment_id}`),
        ` · ${money(run.hourly_price)}/h`, run.reason ? ` · ${run.reason}` : ''),
      actionError && h('p', { class: 'notice error', role: 'alert' }, actionError),
      searchBlock(),
      h('div', { class: 'pair' },
        h('section', { class: 'card' }, h('h2', {}, 'Phase timeline'), timeline(run)),
        h('section', { class: 'card' }, h('h2', {}, 'Events'),
          h('p', { class: 'hint' }, 'As the daemon streams them to this page.'), logList)),
      h('section', { class: 'card' }, h('h2', {}, 'Output ', outputState),
        h('p', { class: 'hint' }, 'What the run prints, as its machine writes it.'), output),
      inference || serving || h('section', { class: 'card' }, h('h2', {}, 'Trainer'),
        h('p', { class: 'meta' }, `test accuracy ${Number.isFinite(run.metrics.test_accuracy) ? `${number(100 * run.metrics.test_accuracy, 2)} %` : '–'}`,
          ` · ${number(run.metrics.images_per_s)} images/s over learn`), epochs),
      attemptsBlock(run),
      h('section', { class: 'card' }, h('h2', {}, 'Resources per phase'),
        h('p', { class: 'hint' }, 'Sampled inside the instance by the agent: min / average / max over each phase.'), statsTable(run.stats),
        gpuProbe(run.metrics.install?.gpu_probe)),
      h('section', { class: 'card' }, h('h2', {}, 'Cost'), costBlock(run)));
    if (epochsCanvas) epochsChart(epochsCanvas, run.epochs);
    if (inferenceCanvas) inferenceChart(inferenceCanvas, sweep);
    if (drawServing) drawServing();
    logList.scrollTop = logList.scrollHeight;  // the newest line stays in view
  }

  function addLog(lines) {
    for (const { at, text } of lines) {
      const when = Number.isFinite(at) ? new Date(at * 1000) : null;
      logList.append(h('li', {}, when ? h('time', { datetime: when.toISOString() }, clock(when)) : h('time', {}, '--:--:--'), ` ${text}`));
    }
  }

  replace(root, loading(`Connecting to run ${id}…`));
  followOutput(id, output, (text) => { outputState.textContent = text; }, signal);
  const stop = watchRun(id, {
    onRun(next) {
      if (signal.aborted) return;
      addLog(changes(run, next));
      run = next;
      draw();
    },
    onEnd() {},
    onState(state, detail) {
      connection = state;
      if (state === 'failed' && !run) replace(root, failure(`Could not follow run ${id}: ${detail}`));
      else if (state === 'retrying') addLog([{ at: Date.now() / 1000, text: detail }]);
      draw();
    },
  });
  return stop;
}
