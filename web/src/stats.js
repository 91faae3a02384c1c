// Aggregates of an experiment: per configuration, the mean and standard error of each phase over its done
// repetitions (from the daemon's summary), and the facts the charts mark (core and GPU counts, t_sum ending just
// under a billing step).
import { PHASES, configName } from './format.js';

// {mean, stderr, n} of a summary's {n, mean, stderr, min, max}; stderr null under two values, mean null with none.
function stat(d) {
  if (!d || !d.n) return { mean: null, stderr: null, n: 0 };
  return { mean: d.mean, stderr: d.n > 1 ? d.stderr : null, n: d.n };
}

// One entry per configuration of the spec, in spec order: its done runs counted and their phase statistics and
// mean cost per rule, from the experiment's summary (GET /v1/experiments/{id}: summed by the daemon as runs finish,
// so a page of an experiment of 10,000 runs does not fetch them).
export function byConfig(experiment) {
  const summarized = new Map((experiment.summary?.configs || []).map((c) => [c.config_index, c]));
  return experiment.spec.configs.map((config, index) => {
    const s = summarized.get(index);
    const phases = {};
    for (const p of PHASES) phases[p] = stat(s?.phases?.[p]);
    return {
      index,
      config,
      name: configName(config),
      done: s ? s.runs_done : 0,
      phases,
      tSum: stat(s?.t_sum),
      tLearn: phases.learn,
      cost: s?.mean_cost || {},
      currency: s?.currency || null,
    };
  });
}

// vCPUs and GPUs of an instance type: from GET /v1/offers, else from a local-<N>c name.
export function resources(config, offers) {
  const offer = offers.find((o) => o.provider === config.provider && o.instance_type === config.instance_type);
  if (offer) return { vcpus: offer.vcpus, gpus: offer.gpus };
  const local = /^local-(\d+)c$/.exec(config.instance_type);
  return { vcpus: local ? Number(local[1]) : null, gpus: 0 };
}

// The fraction of a billing step left when t ends just under a step boundary (within `within` of the step),
// else null. Only for steps of a minute or more and t past the minimum, where the rounding really bites.
export function headroomUnderStep(t, rule, within = 0.1) {
  if (!Number.isFinite(t) || !rule || rule.step_s < 60 || t < rule.min_s) return null;
  const boundary = Math.ceil(t / rule.step_s) * rule.step_s;
  const left = (boundary - t) / rule.step_s;
  return left > 0 && left <= within ? { left, boundary } : null;
}

// A run's machines in turn (GET /v1/runs/{id}: attempts), placed on one time axis from the first one's start:
// each {attempt, market, outcome, start, width} with start and width in percent of the span from the first
// start to the last end (a live attempt ends now). Empty for a run of one machine.
export function attemptSpans(attempts, now = Date.now() / 1000) {
  if (!Array.isArray(attempts) || attempts.length < 2) return [];
  const first = attempts[0].started_at;
  const ends = attempts.map((a) => (Number.isFinite(a.ended_at) ? a.ended_at : now));
  const span = Math.max(...ends) - first;
  if (!(span > 0)) return [];
  return attempts.map((a, i) => ({
    attempt: a.attempt,
    market: a.market,
    outcome: a.outcome ?? 'running',
    start: (100 * (a.started_at - first)) / span,
    width: Math.max(0.5, (100 * (ends[i] - a.started_at)) / span),
  }));
}
