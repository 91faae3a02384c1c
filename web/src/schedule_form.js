// A schedule's form fields as the body of POST/PUT /v1/schedules, and its firing times for reading: pure,
// shared with the unit tests.

// The body of POST/PUT /v1/schedules from the form's string values {name, cron, timezone, experiment, budget,
// missed, enabled}; {problems} naming each bad field instead when it cannot be sent.
export function scheduleBody(fields) {
  const problems = [];
  const cron = (fields.cron || '').trim();
  const fiveFields = cron.split(/\s+/).filter(Boolean).length === 5;
  if (!fiveFields && !/^@[a-z]+$/.test(cron)) {
    problems.push('Cron needs five fields (minute hour day-of-month month day-of-week, e.g. "0 2 * * *") or a macro such as @daily.');
  }
  const timezone = (fields.timezone || '').trim();
  if (!timezone) problems.push('Time zone is empty: give an IANA name such as "Europe/Moscow" or "UTC".');
  let experiment = null;
  try {
    experiment = JSON.parse(fields.experiment || '');
    if (!experiment || typeof experiment !== 'object' || Array.isArray(experiment)) {
      problems.push('Experiment must be a JSON object like the body of POST /v1/experiments.');
    }
  } catch (err) {
    problems.push(`Experiment is not valid JSON: ${err.message}.`);
  }
  const budgetText = (fields.budget || '').trim();
  const budget = budgetText === '' ? null : Number(budgetText);
  if (budget !== null && !(budget > 0)) problems.push('Budget must be a positive amount in USD, or empty for none.');
  if (problems.length) return { problems };
  const body = { cron, timezone, experiment, budget, missed: fields.missed || 'skip', enabled: fields.enabled !== false };
  const name = (fields.name || '').trim();
  if (name) body.name = name;
  return { problems, body };
}

// A schedule's local firing time as the daemon writes it ("2026-11-23T02:00:00+03:00") for reading:
// "2026-11-23 02:00 (UTC+03:00)".
export function localFiring(local) {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}):\d{2}([+-]\d{2}:\d{2}|Z)$/.exec(local || '');
  if (!m) return local || '–';
  return `${m[1]} ${m[2]} (UTC${m[3] === 'Z' ? '' : m[3]})`;
}
