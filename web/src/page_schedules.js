// Schedules: each schedule with its cron, time zone, next three firings, budget, missed-firing policy and
// whether it is enabled; a form that creates one or edits the one picked (PUT), and delete with a confirmation.
import { api } from './api.js';
import { empty, failure, h, loading, replace } from './dom.js';
import { configLabel, money } from './format.js';
import { localFiring, scheduleBody } from './schedule_form.js';

const EXAMPLE_EXPERIMENT = {
  name: 'nightly',
  workload: { model: 'mnist_cnn', dataset: 'fashion-mnist', epochs: 1 },
  configs: [{ provider: 'local', instance_type: 'local-1c' }],
  billing: ['per_second_60s_min'],
};
const MISSED = [['skip', 'skip'], ['catch_up', 'catch up once']];

function localZone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

function field(id, label, control, hint, wide) {
  return h('div', { class: `field${wide ? ' wide' : ''}` }, h('label', { for: id }, label), control, hint && h('small', {}, hint));
}

function scheduleCard(s, next, actions) {
  const firings = next === null ? h('span', { class: 'muted' }, 'not known')
    : next.length ? h('ol', { class: 'firings' }, next.map((n) => h('li', {}, h('time', { datetime: n.local }, localFiring(n.local)))))
      : h('span', {}, 'none due');
  const configs = (s.experiment.configs || []).map(configLabel).join(', ');
  return h('article', { class: 'card schedule', dataset: { schedule: s.id } },
    h('div', { class: 'page-head' },
      h('h2', {}, `#${s.id} ${s.name || 'schedule'}`),
      h('span', { class: `badge ${s.enabled ? 'done' : 'cancelled'}` }, s.enabled ? 'enabled' : 'disabled'),
      actions),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Cron'), h('dd', { class: 'cron' }, h('code', {}, s.cron)),
      h('dt', {}, 'Time zone'), h('dd', { class: 'timezone' }, s.timezone),
      h('dt', {}, 'Next firings'), h('dd', { class: 'next' }, firings),
      h('dt', {}, 'Budget'), h('dd', { class: 'budget' }, s.budget === null ? 'no cap' : `${money(s.budget)} for all its firings`),
      h('dt', {}, 'Missed firings'), h('dd', { class: 'missed' }, s.missed === 'catch_up' ? 'caught up once' : 'skipped'),
      h('dt', {}, 'Experiment'), h('dd', {}, `${s.experiment.name || 'experiment'}: ${configs || 'no configurations'}`)));
}

export function schedulesPage(root, params, { signal }) {
  const list = h('div', { id: 'schedule-list' }, loading('Loading schedules…'));
  const message = h('div', { role: 'alert', id: 'schedule-message' });
  const title = h('h2', { id: 'schedule-form-title' }, 'New schedule');
  const submit = h('button', { type: 'submit', id: 'schedule-save' }, 'Create schedule');
  const cancelEdit = h('button', { type: 'button', class: 'secondary', id: 'schedule-cancel-edit', hidden: true, onclick: () => editing(null) },
    'Cancel editing');
  const form = h('form', { id: 'schedule-form', class: 'card', novalidate: true, onsubmit: send },
    title,
    h('div', { class: 'grid' },
      field('schedule-name', 'Name', h('input', { id: 'schedule-name', name: 'name', type: 'text', maxlength: 200, placeholder: 'nightly' })),
      field('cron', 'Cron', h('input', { id: 'cron', name: 'cron', type: 'text', placeholder: '0 2 * * *', required: true }),
        'minute hour day month weekday'),
      field('timezone', 'Time zone', h('input', { id: 'timezone', name: 'timezone', type: 'text', value: localZone(), required: true }),
        'IANA name, e.g. Europe/Moscow'),
      field('budget', 'Budget (USD)', h('input', { id: 'budget', name: 'budget', type: 'number', min: 0, step: 'any', placeholder: 'no cap' }),
        'caps the spend of all its firings'),
      field('missed', 'Missed firings', h('select', { id: 'missed', name: 'missed' },
        MISSED.map(([value, text]) => h('option', { value }, text))), 'when tsumd was down at a firing time'),
      h('div', { class: 'field' }, h('label', { class: 'choice' },
        h('input', { id: 'enabled', name: 'enabled', type: 'checkbox', checked: true }), h('span', {}, 'Enabled'))),
      field('experiment', 'Experiment (JSON)', h('textarea', { id: 'experiment', name: 'experiment', rows: 9, spellcheck: 'false' },
        JSON.stringify(EXAMPLE_EXPERIMENT, null, 2)), 'the body of POST /v1/experiments that each firing creates', true)),
    message,
    h('div', { class: 'actions' }, submit, cancelEdit));
  let editingId = null;

  function editing(s) {
    editingId = s ? s.id : null;
    replace(message);
    replace(title, s ? `Edit schedule #${s.id}` : 'New schedule');
    replace(submit, s ? 'Save changes' : 'Create schedule');
    cancelEdit.hidden = !s;
    const f = form.elements;
    f.name.value = s ? s.name || '' : '';
    f.cron.value = s ? s.cron : '';
    f.timezone.value = s ? s.timezone : localZone();
    f.budget.value = s && s.budget !== null ? String(s.budget) : '';
    f.missed.value = s ? s.missed : 'skip';
    f.enabled.checked = s ? s.enabled : true;
    f.experiment.value = JSON.stringify(s ? s.experiment : EXAMPLE_EXPERIMENT, null, 2);
    if (s) form.scrollIntoView({ block: 'start' });
  }

  function actions(s) {
    const box = h('div', { class: 'confirm' });
    const normal = () => replace(box,
      h('button', { type: 'button', class: 'secondary', dataset: { action: 'edit' }, onclick: () => editing(s) }, 'Edit'),
      h('button', { type: 'button', class: 'secondary', dataset: { action: 'delete' }, onclick: confirm }, 'Delete'));
    function confirm() {
      replace(box, h('span', {}, `Delete schedule #${s.id}?`),
        h('button', { type: 'button', class: 'danger', dataset: { action: 'confirm-delete' }, onclick: remove }, 'Delete'),
        h('button', { type: 'button', class: 'secondary', onclick: normal }, 'Keep'));
    }
    async function remove() {
      try {
        await api(`/v1/schedules/${s.id}`, { method: 'DELETE', signal });
        if (editingId === s.id) editing(null);
        load();
      } catch (err) {
        if (!signal.aborted) replace(box, h('span', { class: 'notice error' }, `Not deleted: ${err.message}`), h('button', { type: 'button', class: 'secondary', onclick: normal }, 'Back'));
      }
    }
    normal();
    return box;
  }

  async function load() {
    try {
      const { schedules } = await api('/v1/schedules', { signal });
      const nexts = await Promise.all(schedules.map((s) => api(`/v1/schedules/${s.id}/next?count=3`, { signal })
        .then((r) => r.next, () => null)));
      if (signal.aborted) return;
      replace(list, schedules.length ? schedules.map((s, i) => scheduleCard(s, nexts[i], actions(s)))
        : empty('No schedules yet. Create one with the form below: a cron line in a time zone fires an experiment.'));
    } catch (err) {
      if (!signal.aborted) replace(list, failure(`Could not load the schedules: ${err.message}`, () => {
        replace(list, loading('Loading schedules…'));
        load();
      }));
    }
  }

  async function send(event) {
    event.preventDefault();
    const f = form.elements;
    const { problems, body } = scheduleBody({
      name: f.name.value, cron: f.cron.value, timezone: f.timezone.value, experiment: f.experiment.value,
      budget: f.budget.value, missed: f.missed.value, enabled: f.enabled.checked,
    });
    if (problems.length) {
      replace(message, h('p', { class: 'notice error' }, problems.join(' ')));
      return;
    }
    submit.disabled = true;
    replace(message, h('p', { class: 'notice info' }, editingId ? 'Saving…' : 'Creating…'));
    try {
      const saved = await api(editingId ? `/v1/schedules/${editingId}` : '/v1/schedules',
        { method: editingId ? 'PUT' : 'POST', body, signal });
      editing(null);
      replace(message, h('p', { class: 'notice info' }, `Schedule #${saved.id} saved.`));
      load();
    } catch (err) {
      if (!signal.aborted) replace(message, h('p', { class: 'notice error' }, `The schedule was not saved: ${err.message}`));
    } finally {
      submit.disabled = false;
    }
  }

  replace(root,
    h('div', { class: 'page-head' }, h('h1', {}, 'Schedules'),
      h('button', { type: 'button', class: 'secondary', onclick: () => { replace(list, loading('Loading schedules…')); load(); } }, 'Refresh')),
    list,
    form);
  load();
}
