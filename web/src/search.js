// A search (GET /v1/searches/{id}) on the pages of its probes' experiments and runs: the probes in order and
// why each was chosen, every candidate's predicted cost band after each probe, and why the search stopped.
import { api } from './api.js';
import { empty, failure, h, loading, replace, table } from './dom.js';
import { money, number, seconds } from './format.js';

// Where a value sits on the bands' shared scale, in percent. Log scale: costs span orders of magnitude.
export function scaleOf(bands) {
  const values = bands.flatMap((b) => [b.p10, b.p90]).filter((v) => Number.isFinite(v) && v > 0);
  if (!values.length) return () => 0;
  const lo = Math.log(Math.min(...values));
  const hi = Math.log(Math.max(...values));
  return (v) => (hi > lo && v > 0 ? Math.min(100, Math.max(0, (100 * (Math.log(v) - lo)) / (hi - lo))) : 50);
}

// The probes in order: the run behind each, why it was chosen, what it measured.
function probesTable(search, currentRun) {
  const rows = search.probes.map((p, i) => {
    const step = search.trace?.[i];
    const why = step?.why ?? (search.next && i === search.probes.length - 1 ? search.next.why : '');
    const measured = step && !step.error;
    return h('tr', { class: p.run_id === currentRun ? 'current' : null, dataset: { probe: i + 1 } },
      h('td', { class: 'num' }, i + 1),
      h('td', {}, h('a', { href: `#/runs/${p.run_id}` }, p.config)),
      h('td', {}, step?.error ? h('span', { class: 'bad' }, `failed: ${step.error}`) : p.status),
      h('td', {}, h('small', { class: 'reason' }, why)),
      h('td', { class: 'num' }, measured ? seconds(step.t_sum) : '–'),
      h('td', { class: 'num' }, measured ? money(step.probe_cost) : '–'));
  });
  if (!rows.length) return empty('No probe yet.');
  return table(['#', 'Config', 'Status', 'Why this probe', 't_sum', 'Cost'], rows, { id: 'search-probes' });
}

// One row per candidate (in the last round's order), one column per round: its band p10..p90 with the mean,
// ★ on the round's pick, ● once probed.
function bandsTable(rounds) {
  if (!rounds?.length) return empty('No round yet: the search predicts the candidates once it has a measurement.');
  const last = rounds[rounds.length - 1];
  const configs = [...last.bands.map((b) => b.config)];
  for (const r of rounds) for (const b of r.bands) if (!configs.includes(b.config)) configs.push(b.config);
  const scale = scaleOf(rounds.flatMap((r) => r.bands));
  const head = ['Candidate', ...rounds.map((r) => `after ${r.probes} · P ${number(100 * r.p_within)}%`)];
  const rows = configs.map((config) => h('tr', { dataset: { config } },
    h('th', { scope: 'row' }, config),
    rounds.map((r) => {
      const b = r.bands.find((x) => x.config === config);
      if (!b) return h('td', { class: 'muted' }, '–');
      const range = h('span', { class: 'range' });
      range.style.left = `${scale(b.p10)}%`;
      range.style.width = `${Math.max(1, scale(b.p90) - scale(b.p10))}%`;
      const mean = h('span', { class: 'mean' });
      mean.style.left = `${scale(b.mean)}%`;
      const pick = r.pick === config;
      return h('td', { class: `band-cell${pick ? ' pick' : ''}`, title: `${money(b.p10)} … ${money(b.p90)} (${b.basis})` },
        h('span', { class: 'band' }, range, mean),
        h('span', { class: 'num' }, `${pick ? '★ ' : ''}${b.probed ? '● ' : ''}${money(b.mean)}`));
    })));
  return table(head, rows, { id: 'search-bands' });
}

function summary(search) {
  const tol = Number.isFinite(search.tolerance) ? `${number(100 * search.tolerance)}%` : 'the tolerance';
  if (search.status === 'running') {
    return `Running: ${search.probes.length} probe${search.probes.length === 1 ? '' : 's'} so far${search.next ? `, now ${search.next.config}` : ''}.`;
  }
  if (search.status === 'failed') return `Failed: ${search.reason}`;
  const r = search.recommendation;
  const rec = !r ? '–'
    : r.measured ? `${r.config} (measured)`
      : `${r.config} (not measured: ${r.why}; predicted ${money(r.band?.p10)} … ${money(r.band?.p90)} per run)`;
  const doubt = search.doubt ? ` Explored without its model once ${search.doubt}.` : '';
  return `Recommends ${rec}; P(within ${tol} of the optimum) = ${number(search.p_within, 2)}; probes cost ${money(search.spent)}${Number.isFinite(search.budget) ? ` of a budget of ${money(search.budget)}` : ''}.${doubt} Stopped: ${search.stop_reason}.`;
}

// A card that loads search `id` and draws it; `currentRun` marks that run's probe. Returns the card element.
export function searchCard(id, { signal, currentRun } = {}) {
  const body = h('div', {}, loading(`Loading search ${id}…`));
  const card = h('section', { class: 'card', id: 'search' },
    h('h2', {}, `Search ${id}`),
    h('p', { class: 'hint' }, 'Each probe of an adaptive search is an experiment of one run. Bands: each candidate\'s predicted cost per run (p10 … p90, | the mean) after each probe; ★ the pick then, ● measured; P: the chance the pick was within the tolerance of the optimum.'),
    body);
  api(`/v1/searches/${id}`, { signal }).then((search) => {
    if (signal?.aborted) return;
    replace(body,
      h('p', { class: 'meta', id: 'search-summary', dataset: { status: search.status } }, summary(search)),
      h('h3', {}, 'Probes in order'), probesTable(search, currentRun),
      h('h3', {}, 'Predicted cost band of every candidate after each probe'), bandsTable(search.rounds));
  }).catch((err) => {
    if (!signal?.aborted) replace(body, failure(`Could not load search ${id}: ${err.message}`));
  });
  return card;
}
