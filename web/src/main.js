// The dashboard's entry: a hash router over the pages, the nav bar, and sign-in/out.
//   #/login  #/experiments  #/experiments/{id}  #/runs/{id}  #/schedules  #/offers
// Each page is page(root, params, {signal, message}) and may return a cleanup function; `signal` aborts when
// the user leaves the page, so late answers are dropped.
import { setUnauthorizedHandler, token } from './api.js';
import { destroyCharts } from './charts.js';
import { h, replace } from './dom.js';
import { experimentPage } from './page_experiment.js';
import { experimentsPage } from './page_experiments.js';
import { loginPage } from './page_login.js';
import { offersPage } from './page_offers.js';
import { runPage } from './page_run.js';
import { schedulesPage } from './page_schedules.js';

const routes = [
  { pattern: /^\/login$/, page: loginPage, open: true, title: 'Sign in' },
  { pattern: /^\/experiments$/, page: experimentsPage, nav: 'experiments', title: 'Experiments' },
  { pattern: /^\/experiments\/(\d+)$/, page: experimentPage, nav: 'experiments', title: 'Experiment' },
  { pattern: /^\/runs\/(\d+)$/, page: runPage, nav: 'experiments', title: 'Run' },
  { pattern: /^\/schedules$/, page: schedulesPage, nav: 'schedules', title: 'Schedules' },
  { pattern: /^\/offers$/, page: offersPage, nav: 'offers', title: 'Offers and prices' },
];

const root = document.getElementById('app');
const nav = document.getElementById('nav');
let leave = null;
let controller = null;
let message = '';  // why the user is at the login page (a rejected token, signed out)
let returnTo = '#/experiments';

function show() {
  leave?.();
  leave = null;
  controller?.abort();
  destroyCharts();
  controller = new AbortController();

  const path = location.hash.replace(/^#/, '') || '/experiments';
  const found = routes.map((r) => [r, r.pattern.exec(path)]).find(([, m]) => m);
  nav.hidden = !token.get();
  if (!found) {
    replace(root, h('div', { class: 'state error' }, h('p', {}, `There is no page at ${path}.`),
      h('a', { href: '#/experiments' }, 'Go to the experiments')));
    return;
  }
  const [routeInfo, match] = found;
  if (!routeInfo.open && !token.get()) {
    returnTo = location.hash;
    location.hash = '#/login';
    return;
  }
  for (const link of nav.querySelectorAll('[data-nav]')) {
    link.classList.toggle('active', link.dataset.nav === routeInfo.nav);
  }
  document.title = `${routeInfo.title} · tsum`;
  if (!routeInfo.open) message = '';  // the login page keeps showing it until the user gets past it
  leave = routeInfo.page(root, match.slice(1), {
    signal: controller.signal,
    message,
    signedIn: () => {
      location.hash = returnTo;
      returnTo = '#/experiments';
    },
  }) || null;
}

setUnauthorizedHandler((text) => {
  message = text;
  if (!location.hash.startsWith('#/login')) returnTo = location.hash;
  if (location.hash === '#/login') show();
  else location.hash = '#/login';
});

document.getElementById('logout').addEventListener('click', () => {
  token.clear();
  message = 'Signed out.';
  location.hash = '#/login';
});

window.addEventListener('hashchange', show);
show();
