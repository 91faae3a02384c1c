// Number, time and money formatting, and the status badge.

export const PHASES = ['startup', 'install', 'load_data', 'start', 'learn', 'verify', 'save', 'poweroff'];
export const TERMINAL = new Set(['done', 'failed', 'cancelled']);
// Every status before those, in the order a run moves through them.
export const LIVE = ['queued', 'provisioning', 'booting', 'installing', 'loading', 'starting', 'learning', 'verifying',
  'saving', 'terminating'];

// The phase a run is in while it has this status.
export const PHASE_OF_STATUS = {
  booting: 'startup', installing: 'install', loading: 'load_data', starting: 'start',
  learning: 'learn', verifying: 'verify', saving: 'save', terminating: 'poweroff',
};

export function seconds(v, digits = 1) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  if (v >= 3600) return `${Math.floor(v / 3600)} h ${Math.round((v % 3600) / 60)} min`;
  if (v >= 120) return `${Math.floor(v / 60)} min ${Math.round(v % 60)} s`;
  return `${v.toFixed(digits)} s`;
}

export function money(amount, currency = 'USD') {
  if (amount === null || amount === undefined || !Number.isFinite(amount)) return '–';
  const digits = amount !== 0 && Math.abs(amount) < 0.01 ? 6 : 4;
  return `${currency === 'USD' ? '$' : `${currency} `}${amount.toFixed(digits)}`;
}

export function number(v, digits = 0) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  return v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

export function bytes(v) {
  if (!Number.isFinite(v)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

// Resource metrics by their name's suffix: *_bytes, *_bps (bytes per second), *_pct.
export function metric(name, v) {
  if (name.endsWith('_bytes')) return bytes(v);
  if (name.endsWith('_bps')) return `${bytes(v)}/s`;
  if (name.endsWith('_pct')) return `${number(v, 1)} %`;
  return number(v, 2);
}

export function dateTime(unixSeconds) {
  if (!Number.isFinite(unixSeconds)) return '–';
  return new Date(unixSeconds * 1000).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'short' });
}

export function clock(date = new Date()) {
  return date.toLocaleTimeString('en-GB', { hour12: false });
}

// A config as a spec writes it, in a phrase: "local/local-1c", a matrix "local/local-1c|local-2c", and `cores`
// as the local provider names them ("cores": [1, 2] is "local/local-1c|local-2c").
export function configLabel(c) {
  const list = (v) => (Array.isArray(v) ? v : [v]);
  const types = c.instance_type !== undefined ? list(c.instance_type) : list(c.cores ?? []).map((n) => `local-${n}c`);
  return `${c.provider}/${types.join('|') || '?'}`;
}

// "local/local-2c", then the runtime when not native and the workload fields the experiment varies:
// "local/local-2c docker optimizer=adam lr=0.01".
export function configName(config) {
  const parts = [`${config.provider}/${config.instance_type}`];
  if (config.runtime && config.runtime !== 'native') parts.push(config.runtime);
  for (const [k, v] of Object.entries(config.workload || {})) parts.push(`${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return parts.join(' ');
}

// What an experiment's workload runs, in a phrase: training, the inference sweep, serving or a user's job. `w` is
// the workload as requested (the daemon's defaults filled in here) or as a run carries it.
export function describeWorkload(w) {
  const list = (xs) => (Array.isArray(xs) ? xs.join(', ') : `${xs}`);
  const kind = w.kind ?? (w.command || w.run ? 'job' : 'train');
  if (kind === 'job' && w.run) {  // a folder job: its folder (by hash), its image if any, its run line
    const where = [w.workdir ? `folder ${w.workdir.slice(7, 19)}` : null, w.image ? `in ${w.image}` : null].filter(Boolean);
    return `job${where.length ? ` (${where.join(', ')})` : ''}: ${w.run}`;
  }
  if (kind === 'job') return `job ${w.image}: ${(w.command || []).join(' ')}`;
  if (kind === 'infer') return `${w.model ?? 'mnist_cnn'} inference sweep, batch ${list(w.batch)}, ${w.mode ?? 'sync'}, ${w.source ?? 'memory'}`;
  if (kind === 'serve') {
    const batch = w.batch ?? 1;
    const sweep = w.rate ? `rate ${list(w.rate)}/s (${w.arrivals ?? 'poisson'})` : `concurrency ${list(w.concurrency ?? [1, 2, 4, 8])}`;
    return `serving ${w.model ?? 'mnist_cnn'} (max batch ${list(w.max_batch ?? 8)}, ${list(batch)} image${batch === 1 ? '' : 's'} a request, ${list(w.input ?? 'fp32')}), ${sweep}`
      + (w.bound_ms ? `, p99 bound ${w.bound_ms} ms` : '');
  }
  const epochs = w.epochs ?? 1;
  return `${list(w.model ?? 'mnist_cnn')}${w.dataset ? ` on ${typeof w.dataset === 'string' ? w.dataset : w.dataset.name ?? 'a URL data set'}` : ''}, ${list(epochs)} epoch${epochs === 1 ? '' : 's'}`
    + (w.limit ? `, ${number(w.limit)} training images` : '') + (w.test_limit ? `, ${number(w.test_limit)} test images` : '');
}
