// Offers and prices: per provider, its price catalog's date and source, and every instance type it offers.
import { api } from './api.js';
import { empty, failure, h, loading, replace, table } from './dom.js';
import { money, number } from './format.js';

function source(text) {
  const url = /^https:\/\/\S+/.exec(text || '');
  if (!url) return text || 'not given';
  return [h('a', { href: url[0], rel: 'noreferrer', target: '_blank' }, url[0]), text.slice(url[0].length)];
}

function providerSection(name, offers, catalog) {
  const sorted = offers.slice().sort((a, b) => a.hourly_price - b.hourly_price);
  return h('section', { class: 'card', dataset: { provider: name } },
    h('h2', {}, name),
    catalog ? h('dl', { class: 'facts' },
      h('dt', {}, 'Prices as of'), h('dd', { class: 'as-of' }, catalog.as_of || 'unknown'),
      h('dt', {}, 'Source'), h('dd', {}, source(catalog.source)),
      catalog.note && [h('dt', {}, 'Note'), h('dd', {}, catalog.note)])
      : h('p', { class: 'notice warn' }, 'This provider did not say where its prices come from.'),
    table(['Instance type', 'vCPUs', 'Memory', 'GPUs', 'Price per hour', 'Note'], sorted.map((o) => h('tr', {},
      h('th', { scope: 'row' }, o.instance_type),
      h('td', { class: 'num' }, o.vcpus),
      h('td', { class: 'num' }, o.memory_gib ? `${number(o.memory_gib, 1)} GiB` : '–'),
      h('td', { class: 'num' }, o.gpus ? `${o.gpus}× ${o.gpu_type}` : '–'),
      h('td', { class: 'num' }, money(o.hourly_price, o.currency)),
      h('td', {}, o.note || '')))));
}

export function offersPage(root, params, { signal }) {
  const load = () => {
    replace(root, h('h1', {}, 'Offers and prices'), loading('Loading the offers…'));
    api('/v1/offers', { signal }).then(({ offers, catalogs = {} }) => {
      const providers = [...new Set(offers.map((o) => o.provider))].sort();
      replace(root, h('h1', {}, 'Offers and prices'),
        providers.length ? providers.map((p) => providerSection(p, offers.filter((o) => o.provider === p), catalogs[p]))
          : empty('No provider is configured in this tsumd.'));
    }).catch((err) => !signal.aborted && replace(root, h('h1', {}, 'Offers and prices'),
      failure(`Could not load the offers: ${err.message}`, load)));
  };
  load();
}
