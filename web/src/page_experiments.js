// Experiments: the list with status and progress, and the form that creates one.
import { api } from './api.js';
import { empty, failure, h, loading, pager, replace, table } from './dom.js';
import { dateTime, money } from './format.js';

const BUILTIN_RULES = [
  ['per_second_60s_min', 'per second, 60 s minimum (AWS, GCE)'],
  ['per_minute', 'per minute (Azure)'],
  ['per_10_minutes', 'per 10 minutes'],
  ['per_hour', 'per hour (Hetzner, many others)'],
];

export function badge(status) {
  return h('span', { class: `badge ${status}` }, status);
}

// How far an experiment is: a bar whose segments are its done, failed and cancelled runs, each in its own colour
// (the badges'), the rest of the track still to run.
function progress(p) {
  const pct = p.runs ? Math.round((100 * p.finished) / p.runs) : 0;
  const failed = p.failed ? `, ${p.failed} failed` : '';
  const cancelled = p.cancelled ? `, ${p.cancelled} cancelled` : '';
  const segment = (kind) => {
    const s = h('span', { class: `segment ${kind}`, dataset: { runs: p[kind] ?? 0 } });
    s.style.width = `${p.runs ? (100 * (p[kind] ?? 0)) / p.runs : 0}%`;
    return s;
  };
  return h('div', { class: 'progress-cell' },
    h('span', { class: 'progress', role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': p.runs || 1, 'aria-valuenow': p.finished,
      'aria-label': `${pct}% of runs finished` }, segment('done'), segment('failed'), segment('cancelled')),
    h('span', {}, `${p.finished}/${p.runs} finished${failed}${cancelled}`));
}

function experimentRow(e) {
  return h('tr', { dataset: { experiment: e.id } },
    h('td', {}, h('a', { href: `#/experiments/${e.id}` }, `#${e.id} ${e.name}`)),
    h('td', {}, badge(e.status)),
    h('td', {}, progress(e.progress)),
    h('td', {}, e.configs ? e.configs.join(', ') : h('span', { class: 'error', title: e.error }, 'unreadable')),
    h('td', {}, dateTime(e.created_at)));
}

// The experiments newest first, a page at a time (GET /v1/experiments pages; the count is the server's).
function experimentsTable(first, more) {
  if (!first.experiments.length) return empty('No experiments yet. Create one with the form below: pick configurations, a workload and billing rules.');
  const t = table(['Experiment', 'Status', 'Progress', 'Configurations', 'Created'], first.experiments.map(experimentRow), { id: 'experiments' });
  return h('div', {}, t, pager(t.querySelector('tbody'), {
    total: first.total, cursor: first.next_cursor, more, rows: (page) => page.experiments, row: experimentRow,
    noun: 'experiments', id: 'experiments',
  }));
}

function numberField(id, label, attrs, hint) {
  return h('div', { class: 'field' },
    h('label', { for: id }, label),
    h('input', { id, name: id, type: 'number', inputmode: 'numeric', step: 1, ...attrs }),
    hint && h('small', {}, hint));
}

function optionalInt(form, name) {
  const v = form.elements[name].value.trim();
  return v === '' ? undefined : Number(v);
}

// The POST /v1/experiments body from the form; a list of problems instead when it is incomplete.
function specFromForm(form) {
  const problems = [];
  const configs = [...form.querySelectorAll('input[name=config]:checked')].map((c) => JSON.parse(c.value));
  if (!configs.length) problems.push('Pick at least one configuration.');
  const rules = [...form.querySelectorAll('input[name=rule]:checked')].map((c) => c.value);
  rules.push(...form.elements.custom_rules.value.split(/\s+/).filter(Boolean));
  if (!rules.length) problems.push('Pick at least one billing rule.');
  const workload = { model: form.elements.model.value, dataset: form.elements.dataset.value, epochs: optionalInt(form, 'epochs') };
  for (const key of ['limit', 'test_limit', 'batch']) {
    const v = optionalInt(form, key);
    if (v !== undefined) workload[key] = v;
  }
  return {
    problems,
    spec: {
      name: form.elements.name.value.trim() || 'experiment',
      workload,
      configs,
      repetitions: optionalInt(form, 'repetitions') ?? 1,
      billing: rules,
    },
  };
}

// The offers to choose from, the first two that run at once ticked: not a byo machine, which waits for a machine
// to join it (its run would otherwise fail the moment it is created with the defaults).
function configChoices(offers) {
  if (!offers.length) return empty('No provider offers any instance type. Configure a provider in tsumd.');
  const ticked = new Set(offers.filter((o) => o.provider !== 'byo').slice(0, 2));
  return h('div', { class: 'choices' }, offers.map((o) => h('label', { class: 'choice' },
    h('input', {
      type: 'checkbox', name: 'config', id: `config-${o.provider}-${o.instance_type}`,
      value: JSON.stringify({ provider: o.provider, instance_type: o.instance_type }), checked: ticked.has(o),
    }),
    h('span', {}, h('b', {}, `${o.provider}/${o.instance_type}`),
      ` ${o.vcpus} vCPU${o.gpus ? `, ${o.gpus}× ${o.gpu_type || 'GPU'}` : ''}, ${money(o.hourly_price, o.currency)}/h`))));
}

function createForm(signal, onCreated) {
  const configsBox = h('fieldset', {}, h('legend', {}, 'Configurations'), loading('Loading the offers…'));
  const message = h('div', { role: 'alert', id: 'create-message' });
  const submit = h('button', { type: 'submit', id: 'create' }, 'Create experiment');
  const form = h('form', { id: 'create-form', class: 'card', novalidate: true, onsubmit: send },
    h('h2', {}, 'New experiment'),
    h('div', { class: 'grid' },
      h('div', { class: 'field wide' }, h('label', { for: 'name' }, 'Name'),
        h('input', { id: 'name', name: 'name', type: 'text', maxlength: 200, placeholder: 'experiment' })),
      h('div', { class: 'field' }, h('label', { for: 'model' }, 'Model'),
        h('select', { id: 'model', name: 'model' }, h('option', { value: 'mnist_cnn' }, 'MNIST CNN'))),
      h('div', { class: 'field' }, h('label', { for: 'dataset' }, 'Data set'),
        h('select', { id: 'dataset', name: 'dataset' }, h('option', { value: 'fashion-mnist' }, 'Fashion-MNIST'))),
      numberField('epochs', 'Epochs', { min: 1, max: 1000, value: 1, required: true }),
      numberField('limit', 'Training images', { min: 1, max: 60000, placeholder: '60000' }, 'empty: all'),
      numberField('test_limit', 'Test images', { min: 1, max: 10000, placeholder: '10000' }, 'empty: all'),
      numberField('batch', 'Batch size', { min: 1, max: 65536, placeholder: 'default' }),
      numberField('repetitions', 'Repetitions', { min: 1, max: 100, value: 1, required: true }, 'runs per configuration')),
    configsBox,
    h('fieldset', {}, h('legend', {}, 'Billing rules'),
      h('div', { class: 'choices' }, BUILTIN_RULES.map(([name, text]) => h('label', { class: 'choice' },
        h('input', { type: 'checkbox', name: 'rule', value: name, id: `rule-${name}`, checked: true }),
        h('span', {}, h('b', {}, name), ` ${text}`)))),
      h('div', { class: 'field wide' }, h('label', { for: 'custom_rules' }, 'Custom rules'),
        h('input', { id: 'custom_rules', name: 'custom_rules', type: 'text', placeholder: 'step:300,min:60 step:30' }),
        h('small', {}, 'step:S,min:M in seconds, separated by spaces'))),
    message,
    submit);

  api('/v1/offers', { signal }).then((data) => {
    replace(configsBox, h('legend', {}, 'Configurations'), configChoices(data.offers));
  }).catch((err) => {
    if (!signal.aborted) replace(configsBox, h('legend', {}, 'Configurations'), failure(`Could not load the offers: ${err.message}`));
  });

  async function send(event) {
    event.preventDefault();
    const { problems, spec } = specFromForm(form);
    if (problems.length) {
      replace(message, h('p', { class: 'notice error' }, problems.join(' ')));
      return;
    }
    submit.disabled = true;
    replace(message, h('p', { class: 'notice info' }, 'Creating…'));
    try {
      const { id } = await api('/v1/experiments', { method: 'POST', body: spec, signal });
      onCreated(id);
    } catch (err) {
      if (signal.aborted) return;
      replace(message, h('p', { class: 'notice error' }, `The experiment was not created: ${err.message}`));
      submit.disabled = false;
    }
  }
  return form;
}

// The seeds' experiments, filled for the providers configured: what each implies, and a button that creates it.
function presetsBlock(signal, onCreated) {
  const box = h('section', { class: 'card', id: 'presets' }, h('h2', {}, 'Presets'), loading('Loading presets…'));
  api('/v1/presets', { signal }).then(({ presets }) => {
    const status = h('p', { class: 'hint', role: 'status' });
    const rows = presets.map((p) => {
      const worst = Math.max(0, ...Object.values(p.worst_case));
      const create = h('button', {
        type: 'button', class: 'secondary', disabled: !p.experiments.length, dataset: { preset: p.name },
        onclick: async () => {
          try {
            const { ids } = await api(`/v1/presets/${p.name}`, { method: 'POST', body: {} });
            onCreated(ids[0]);
          } catch (err) {
            status.textContent = `Could not create ${p.name}: ${err.message}`;
          }
        },
      }, 'Create');
      return h('tr', { dataset: { preset: p.name } },
        h('th', { scope: 'row' }, p.name),
        h('td', {}, p.description, ...p.notes.map((n) => h('div', { class: 'hint' }, n))),
        h('td', { class: 'num' }, `${p.runs}`),
        h('td', { class: 'num' }, money(worst, p.currency)),
        h('td', {}, create));
    });
    replace(box, h('h2', {}, 'Presets'),
      h('p', { class: 'hint' }, 'The seeds\' experiments for the providers configured. Worst case: every run at its deadline, under the dearest billing rule.'),
      table(['Preset', 'What', 'Runs', 'Worst case', ''], rows, { id: 'preset-table' }), status);
  }).catch((err) => !signal.aborted && replace(box, h('h2', {}, 'Presets'), failure(`Could not load the presets: ${err.message}`)));
  return box;
}

const PAGE = 50;

export function experimentsPage(root, params, { signal }) {
  const list = h('div', { id: 'experiment-list' }, loading('Loading experiments…'));
  const load = () => {
    replace(list, loading('Loading experiments…'));
    const page = (cursor) => api(`/v1/experiments?order=desc&limit=${PAGE}${cursor ? `&cursor=${cursor}` : ''}`, { signal });
    page()
      .then((data) => replace(list, experimentsTable(data, page)))
      .catch((err) => !signal.aborted && replace(list, failure(`Could not load the experiments: ${err.message}`, load)));
  };
  replace(root,
    h('div', { class: 'page-head' }, h('h1', {}, 'Experiments'),
      h('button', { type: 'button', class: 'secondary', onclick: load }, 'Refresh')),
    list,
    presetsBlock(signal, (id) => { location.hash = `#/experiments/${id}`; }),
    createForm(signal, (id) => { location.hash = `#/experiments/${id}`; }));
  load();
}
