// Shared by the dashboard's browser tests and scripts/screenshot.sh: a real `tsumd serve` on a free loopback
// port, and Debian's Chromium driven headless by playwright-core (installed by `npm ci` in web/).
//
// Environment: TSUMD_BIN (default build/bin/tsumd), TSUM_TRAINER (default: tsum-train beside tsumd),
// TSUM_WEB_DIR (default web/, for node_modules), TSUM_CHROMIUM (default /usr/bin/chromium).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const TSUMD = process.env.TSUMD_BIN || path.join(repo, 'build/bin/tsumd');
const WEB_DIR = process.env.TSUM_WEB_DIR || path.join(repo, 'web');
const CHROMIUM = process.env.TSUM_CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'];

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Polls `check` until it returns a truthy value or `ms` pass; throws `what` on timeout.
export async function until(check, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(250);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// Starts `tsumd serve` on `db` (a fresh temporary one by default) with `args` added (e.g. --trace FILE).
// stop() ends it and removes what it created.
export async function startDaemon({ db, args: extra = [] } = {}) {
  if (!existsSync(TSUMD)) throw new Error(`tsumd not found at ${TSUMD}: build it (ninja -C build tsumd tsum-train)`);
  const dir = db ? null : mkdtempSync(path.join(os.tmpdir(), 'tsum-web-'));
  const dbPath = db || path.join(dir, 't.db');
  const token = execFileSync(TSUMD, ['token', 'create', '--db', dbPath], { encoding: 'utf8' }).trim();
  const port = await freePort();
  const logPath = `${dbPath}.web-test.log`;
  const args = ['serve', '--db', dbPath, '--listen', `127.0.0.1:${port}`];
  if (process.env.TSUM_BUNDLE) args.push('--bundle', process.env.TSUM_BUNDLE);
  args.push(...extra);
  const child = spawn(TSUMD, args,
    { stdio: ['ignore', 'ignore', openSync(logPath, 'a')] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = `http://127.0.0.1:${port}`;
  const daemon = {
    url,
    token,
    log: () => (existsSync(logPath) ? readFileSync(logPath, 'utf8') : ''),
    async api(route, options = {}) {
      const res = await fetch(url + route, { ...options, headers: { Authorization: `Bearer ${token}`, ...options.headers } });
      if (!res.ok) throw new Error(`${route}: ${res.status} ${await res.text()}`);
      return res.json();
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const deadline = setTimeout(() => child.kill('SIGKILL'), 90000);
        await exited;
        clearTimeout(deadline);
      }
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    // A fresh database first stores the trainer bundle (200 MB) and the data set: seconds alone, far more beside
    // CI's disk-heavy suites.
    await until(async () => (await fetch(`${url}/healthz`).catch(() => null))?.ok, 120000, 'tsumd /healthz');
  } catch (err) {
    await daemon.stop();
    throw new Error(`${err.message}\n${daemon.log()}`);
  }
  return daemon;
}

// Debian's Chromium, headless. Throws (never skips) when it is missing: scripts/install-deps.sh installs it.
export async function launchBrowser() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install it (apt-get install chromium; scripts/install-deps.sh does)`);
  }
  const require = createRequire(path.join(WEB_DIR, 'package.json'));
  const { chromium } = require('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

// A page in a fresh context that records console errors, page errors and requests, and refuses (and records)
// every request that leaves 127.0.0.1.
export async function openPage(browser, viewport = { width: 1280, height: 800 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const record = { consoleErrors: [], offHost: [], requests: [] };
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') record.consoleErrors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (err) => record.consoleErrors.push(`pageerror: ${err.message}`));
  page.on('request', (r) => record.requests.push({ url: r.url(), method: r.method(), headers: r.headers() }));
  await context.route((url) => url.hostname !== '127.0.0.1', (route) => {
    record.offHost.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  return { page, context, ...record };
}

export async function signIn(page, daemon, token = daemon.token) {
  await page.goto(`${daemon.url}/#/login`);
  await page.fill('#token', token);
  await page.click('#login-form button[type=submit]');
}

// True when the page is wider than the viewport (something overflows sideways).
export function overflowsSideways(page) {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
}
