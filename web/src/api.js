// The /v1 API with the user's bearer token. The token lives in sessionStorage (this tab only). A 401 or 403 from any
// call forgets the token and sends the user back to the login form with the server's reason.

const TOKEN_KEY = 'tsum.token';
let onUnauthorized = () => {};

export class ApiError extends Error {
  constructor(status, code, detail) {
    super(detail || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (t) => sessionStorage.setItem(TOKEN_KEY, t),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

// `handler(message)` runs after a 401 or 403 has cleared the token.
export function setUnauthorizedHandler(handler) {
  onUnauthorized = handler;
}

async function errorOf(res) {
  let body = {};
  try {
    body = await res.json();
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(res.status, body.error, body.detail || `${res.status} ${res.statusText}`);
}

// fetch() against the API. Returns the Response (for streams); throws ApiError on a non-2xx status.
export async function apiResponse(path, { method = 'GET', body, signal, tokenOverride } = {}) {
  const headers = { Authorization: `Bearer ${tokenOverride ?? token.get() ?? ''}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: 'no-store',
  });
  if (res.ok) return res;
  const err = await errorOf(res);
  if ((res.status === 401 || res.status === 403) && tokenOverride === undefined && !signal?.aborted) {
    token.clear();
    onUnauthorized(`The server rejected your token (${err.message}). Sign in again.`);
  }
  throw err;
}

// The JSON body of an API call.
export async function api(path, options) {
  const res = await apiResponse(path, options);
  return res.json();
}
