// A tiny DOM builder: h('a', {href: '#/x', class: 'btn'}, 'text', child). Attributes starting with "on" add
// listeners; `null`, `undefined` and `false` children are skipped; strings become text (never HTML).

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// Empty, loading and error states share one look.
export function loading(text) {
  return h('p', { class: 'state loading', role: 'status' }, text);
}

export function empty(text, ...extra) {
  return h('div', { class: 'state empty' }, h('p', {}, text), ...extra);
}

export function failure(text, retry) {
  return h('div', { class: 'state error', role: 'alert' }, h('p', {}, text),
    retry && h('button', { type: 'button', onclick: retry }, 'Try again'));
}

// A table inside a box that scrolls sideways on narrow screens, so the page itself never does.
export function table(head, rows, attrs = {}) {
  return h('div', { class: 'table-wrap' },
    h('table', attrs,
      h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows)));
}

// The count and "Show more" button under a paged table: `more(cursor)` fetches the next page, `rows(page)` its
// items, `row(item)` a table row of one. The total is the server's.
export function pager(tbody, { total, cursor, more, rows, row, noun, id }) {
  const count = h('p', { class: 'hint', id: `${id}-count` });
  const next = h('button', { type: 'button', class: 'secondary', id: `${id}-more` }, 'Show more');
  const shown = () => {
    count.textContent = `${tbody.rows.length} of ${total} ${noun}`;
    next.hidden = !cursor;
  };
  next.onclick = async () => {
    next.disabled = true;
    try {
      const page = await more(cursor);
      rows(page).forEach((item) => tbody.append(row(item)));
      cursor = page.next_cursor;
      shown();
    } catch (err) {
      count.textContent = `Could not load more ${noun}: ${err.message}`;
    } finally {
      next.disabled = false;
    }
  };
  shown();
  return h('div', { class: 'page-more' }, count, next);
}
