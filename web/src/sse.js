// Watches a run through GET /v1/runs/{id}/stream (Server-Sent Events). fetch() with a stream reader rather
// than EventSource, so the token travels in the Authorization header and never in a URL.
//
//   const stop = watchRun(id, { onRun(run) {...}, onEnd(status) {...}, onState(state, detail) {...} });
//   stop();  // closes the connection
//
// onState gets 'live', 'ended', or 'retrying' (the connection dropped before the run ended; it reconnects
// after RETRY_MS, and the daemon sends the run's current state again at once).
import { apiResponse } from './api.js';

const RETRY_MS = 3000;

// Splits SSE text into complete events; returns [events, rest]. Comment lines (": heartbeat") are dropped.
export function parseEvents(text) {
  const blocks = text.replace(/\r\n/g, '\n').split('\n\n');
  const rest = blocks.pop();
  const events = [];
  for (const block of blocks) {
    let name = 'message';
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':') || line === '') continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') name = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length) events.push({ name, data: data.join('\n') });
  }
  return [events, rest];
}

export function watchRun(id, { onRun, onEnd, onState }) {
  const controller = new AbortController();
  let retryTimer = null;

  async function connect() {
    let ended = false;
    try {
      const res = await apiResponse(`/v1/runs/${id}/stream`, { signal: controller.signal });
      onState('live');
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        const [events, rest] = parseEvents(buffer);
        buffer = rest;
        for (const ev of events) {
          if (ev.name === 'run') onRun(JSON.parse(ev.data));
          if (ev.name === 'end') {
            ended = true;
            onEnd(JSON.parse(ev.data).status);
          }
        }
      }
    } catch (err) {
      if (controller.signal.aborted) return;
      if (err.status && err.status !== 503) {
        onState('failed', err.message);  // 401 is handled by the API layer, 404 will not heal
        return;
      }
    }
    if (controller.signal.aborted) return;
    if (ended) {
      onState('ended');
      return;
    }
    onState('retrying', `connection lost; reconnecting in ${RETRY_MS / 1000} s`);
    retryTimer = setTimeout(connect, RETRY_MS);
  }

  connect();
  return () => {
    clearTimeout(retryTimer);
    controller.abort();
  };
}
