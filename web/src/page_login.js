// Sign in: the user pastes an API token (from `tsumd token create --db PATH`). It is checked against the API
// before it is kept, in sessionStorage, for this tab only.
import { api, ApiError, token } from './api.js';
import { h, replace } from './dom.js';

export function loginPage(root, params, { signal, message, signedIn }) {
  const input = h('input', {
    id: 'token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true,
    placeholder: 'paste an admin token',
  });
  const status = h('div', { id: 'login-message', role: 'alert' });
  const button = h('button', { type: 'submit' }, 'Sign in');
  const say = (text, kind) => replace(status, text ? h('p', { class: `notice ${kind}` }, text) : null);
  if (message) say(message, 'error');

  async function submit(event) {
    event.preventDefault();
    const value = input.value.trim();
    if (!value) return say('Enter a token.', 'error');
    button.disabled = true;
    say('Checking the token…', 'info');
    try {
      await api('/v1/offers', { tokenOverride: value, signal });
      token.set(value);
      signedIn();
    } catch (err) {
      if (signal.aborted) return;
      say(err instanceof ApiError && (err.status === 401 || err.status === 403)
        ? `That token was rejected: ${err.message}.`
        : `Could not reach tsumd: ${err.message}`, 'error');
      button.disabled = false;
    }
  }

  replace(root, h('section', { class: 'card login' },
    h('h1', {}, 'Sign in to tsum'),
    h('form', { id: 'login-form', onsubmit: submit },
      h('label', { for: 'token' }, 'API token'),
      input,
      h('p', { class: 'hint' }, 'Create one on the daemon\'s machine with ', h('code', {}, 'tsumd token create --db PATH'),
        '. It is kept in this browser tab only.'),
      status,
      button)));
  input.focus();
}
