// Headless-Chromium test of the symd dashboard (web/), run by tests/browser/run.sh:
//
//   node tests/browser/dashboard.mjs http://127.0.0.1:PORT [http://127.0.0.1:PORT2 [http://127.0.0.1:PORT3]]
//
// Needs a fresh, running `symd serve` (empty database) at that address and
// /usr/bin/chromium; the second address, when given, is another fresh server
// started with --read-token, --upload-token and --report-token, whose tokens
// are in SYMD_AUTH_READ_TOKEN, SYMD_AUTH_UPLOAD_TOKEN and
// SYMD_AUTH_REPORT_TOKEN (without it the token checks are skipped); the
// third, when given, a fresh server started with --grouping-rules
// SYMD_RULES_FILE (its first rule merges the crashes in libfix.dylib).
// Environment: SYMD_UPLOAD_TOKEN (the token the first server was
// started with, if any), CHROMIUM (the browser, default /usr/bin/chromium),
// SYMD_REAL_REPORTS (the real reports of other kinds, default
// ../shared/real-reports beside the checkout, else /work/shared/real-reports;
// checks whose file is not there
// are skipped with a "skip - name: why" line).
// Prints "ok - name" / "not ok - name: reason" per check, screenshot paths,
// and last "N passed, N failed"; exits 1 on any failure.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import zlib from 'node:zlib';
import {chromium} from 'playwright-core';

const base = (process.argv[2] || '').replace(/\/+$/, '');
const authBase = (process.argv[3] || '').replace(/\/+$/, '');
const rulesBase = (process.argv[4] || '').replace(/\/+$/, '');
if (!/^https?:\/\/[^/]+$/.test(base) || (authBase && !/^https?:\/\/[^/]+$/.test(authBase)) ||
    (rulesBase && !/^https?:\/\/[^/]+$/.test(rulesBase))) {
  console.error('usage: node tests/browser/dashboard.mjs http://HOST:PORT [http://HOST:PORT2]');
  process.exit(2);
}
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const fx = (p) => path.join(ROOT, 'fixtures', p);
const OUT = path.join(ROOT, 'tests/out/browser');
const TOKEN = process.env.SYMD_UPLOAD_TOKEN || '';
const AUTH = {read: process.env.SYMD_AUTH_READ_TOKEN || '', upload: process.env.SYMD_AUTH_UPLOAD_TOKEN || '',
  report: process.env.SYMD_AUTH_REPORT_TOKEN || ''};
fs.mkdirSync(OUT, {recursive: true});

const BIGAPP = fx('bin/bigapp-arm64');
const BIGAPP_DSYM = fx('dsym/bigapp-arm64.dSYM/Contents/Resources/DWARF/bigapp-arm64');
const LIBFIX = fx('bin/libfix-arm64.dylib');
const XSS_BIN = fx('bin/xss-arm64');
const EVIL = '<img src=x onerror=alert(1)>';          // xss-arm64's function, verbatim
const EVIL_NAME = '<script>alert(2)</script>';         // asked for as the upload name
const EVIL_PROCESS = '<b>evil</b>';

// Real reports of other kinds (public files, never copied into the repo).
const REAL = process.env.SYMD_REAL_REPORTS ||
  [path.join(ROOT, '../shared/real-reports'), '/work/shared/real-reports'].find((d) => fs.existsSync(d)) ||
  path.join(ROOT, '../shared/real-reports');
// Real minidumps (../shared/minidumps), likewise.
const MINIDUMPS = process.env.SYMD_MINIDUMPS ||
  [path.join(ROOT, '../shared/minidumps'), '/work/shared/minidumps'].find((d) => fs.existsSync(d)) ||
  path.join(ROOT, '../shared/minidumps');
const REAL_SAMPLE = 'inket+MacSymbolicator@7ad41f1+MacSymbolicatorTests_Resources_Samples_singlethread-sample.txt';
const REAL_STACKSHOT = 'log2timeline+plaso@df3d6f7+test_data_ips_files_stacks-2023-02-10-100716.ips';
const REAL_BIG_STACKSHOT = 'mosiko1234+ipsw-auto-symbolicate-server@f0becd0+stacks+audiomxd-2025-06-12-080425.ips';
const REAL_BROKEN = 'faisalmemon+ios-crash-dump-analysis-book+examples_imac_bridge_os_imac_bridge_os.crash';
const REAL_EXCEPTION = 'faisalmemon+ios-crash-dump-analysis-book+examples_nsdata_crash_ios_icdab_nsdata_ios_14_2.crash';

// ---- tiny harness ---------------------------------------------------------
let passed = 0, failed = 0, skipped = 0;
const shots = [];
function assert(cond, msg) { if (!cond) throw new Error(msg); }
function eq(got, want, what) {
  if (JSON.stringify(got) !== JSON.stringify(want))
    throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}: ${String(e && e.message || e).split('\n')[0]}`);
  }
}
// A check over files of REAL: skipped, with a message, when one is not there.
async function checkReal(name, files, fn) {
  const paths = files.map((f) => path.join(REAL, f));
  const absent = paths.filter((p) => !fs.existsSync(p));
  if (absent.length) {
    skipped++;
    console.log(`skip - ${name}: ${absent.map((p) => path.basename(p)).join(', ')} not found in ${REAL}`);
    return;
  }
  await check(name, () => fn(...paths.map((p) => fs.readFileSync(p, 'utf8'))));
}

// ---- fixtures' expectations (independent of symd) ---------------------------
// The LC_UUID of a thin 64-bit little-endian Mach-O, upper case with dashes.
function machoUuid(file) {
  const b = fs.readFileSync(file);
  assert(b.readUInt32LE(0) === 0xfeedfacf, `${file}: not a thin 64-bit Mach-O`);
  const ncmds = b.readUInt32LE(16);
  for (let i = 0, off = 32; i < ncmds; i++) {
    const cmd = b.readUInt32LE(off), size = b.readUInt32LE(off + 4);
    if (cmd === 0x1b) {
      const h = b.subarray(off + 8, off + 24).toString('hex').toUpperCase();
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    }
    off += size;
  }
  throw new Error(`${file}: no LC_UUID`);
}

// fixtures/crashes/twins.expected.tsv: the crashed thread's frames.
function readTwinExpectations() {
  const lines = fs.readFileSync(fx('crashes/twins.expected.tsv'), 'utf8').split('\n').filter(Boolean);
  const head = lines.shift().split('\t');
  return lines.map((l) => {
    const cols = l.split('\t');
    const r = Object.fromEntries(head.map((h, i) => [h, cols[i] || '']));
    r.levels = r.levels ? r.levels.split(' | ').map((s) => {
      const m = /^(.*) \((.*):(\d+)\)$/.exec(s);
      assert(m, `bad level ${s}`);
      return {fn: m[1], file: m[2], line: Number(m[3])};
    }) : [];
    return r;
  });
}

const twinText = fs.readFileSync(fx('crashes/bigapp-twin.crash'), 'utf8');
const twinProcess = /^Process:\s+(\S+)/m.exec(twinText)[1];
const expected = readTwinExpectations();
// The twin's group: its crashed thread's first frame in the app's own images
// (libfix.dylib, a library of the app's, comes before the main binary), then
// its exception type (server/signature.c).
const twinException = /^Exception Type:\s+(.*\S)/m.exec(twinText)[1];
const expectedSignature = expected.find((r) => r.symbol).symbol + ' | ' + twinException;
const reEscape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const missingRow = expected.find((r) => r.status === 'missing_image');

// The nodes of a `sample` report's call graph, in order: depth (two spaces a
// level under the thread line), sample count, symbol and image as printed.
function sampleCallGraph(text) {
  const lines = text.split('\n');
  const nodes = [];
  let base = null;
  for (const l of lines.slice(lines.findIndex((x) => x.trim() === 'Call graph:') + 1)) {
    if (!l.trim()) break;
    const m = /^(\s*)(\d+)\s+(.*)$/.exec(l);
    assert(m, `call graph line ${l}`);
    if (/^Thread_\d+/.test(m[3])) { base = null; continue; }
    if (base === null) base = m[1].length;
    const at = /^(.*?)\s+\(in ([^)]+)\)/.exec(m[3]);
    assert(at, `call graph frame ${l}`);
    nodes.push({depth: (m[1].length - base) / 2, count: Number(m[2]), symbol: at[1], image: at[2]});
  }
  return nodes;
}
// An .ips's header line and JSON body (numbers past 2^53 lose digits: only counts are read).
function ipsParts(text) {
  const nl = text.indexOf('\n');
  return {header: JSON.parse(text.slice(0, nl)), body: text.slice(nl + 1)};
}

// ---- HTTP from node --------------------------------------------------------
async function http(method, p, body, headers = {}) {
  const res = await fetch(base + p, {method, body, headers});
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch (e) { /* text answer */ }
  return {status: res.status, text, json};
}
const postedToday = {all: 0};   // crashes this run stored on the first server, and per group (kind + signature)
// Each post an incident of its own (every occurrence of the report's
// incident identifier replaced): the server stores a report posted again
// once (issue 23), and these checks count what they post.
function newIncident(text) {
  if (typeof text !== 'string') return text;
  const m = /(?:Incident Identifier:\s*|"incident"\s*:\s*"|"incident_id"\s*:\s*")([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})/.exec(text);
  return m ? text.split(m[1]).join(crypto.randomUUID().toUpperCase()) : text;
}
async function postCrash(text) {
  const r = await http('POST', '/v1/crashes', newIncident(text));
  assert(r.status === 201, `POST /v1/crashes: ${r.status} ${r.text.slice(0, 200)}`);
  postedToday.all++;
  const g = r.json.kind + '\n' + r.json.signature;
  postedToday[g] = (postedToday[g] || 0) + 1;
  return r.json;
}

// ---- PNG screenshots, decoded (8-bit RGB or RGBA, not interlaced) -------------
function decodePng(buf) {
  assert(buf.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10])), 'not a PNG');
  let off = 8, w = 0, h = 0, depth = 0, ctype = 0, interlace = 0;
  const idat = [];
  while (off + 8 <= buf.length) {
    const len = buf.readUInt32BE(off), type = buf.toString('latin1', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      w = data.readUInt32BE(0); h = data.readUInt32BE(4); depth = data[8]; ctype = data[9]; interlace = data[12];
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    off += 12 + len;
  }
  assert(depth === 8 && (ctype === 2 || ctype === 6) && interlace === 0, `PNG of depth ${depth}, colour type ${ctype}, interlace ${interlace}`);
  const bpp = ctype === 6 ? 4 : 3, stride = w * bpp;
  const raw = zlib.inflateSync(Buffer.concat(idat));
  assert(raw.length >= h * (stride + 1), 'PNG data too short');
  const px = Buffer.alloc(h * stride);
  for (let y = 0; y < h; y++) {
    const filter = raw[y * (stride + 1)];
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = px.subarray(y * stride, (y + 1) * stride);
    const prev = y ? px.subarray((y - 1) * stride, y * stride) : null;
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? row[i - bpp] : 0, b = prev ? prev[i] : 0, c = prev && i >= bpp ? prev[i - bpp] : 0;
      let v = src[i];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else assert(filter === 0, `PNG filter type ${filter}`);
      row[i] = v & 255;
    }
  }
  return {w, h, rgb: (x, y) => { const o = y * stride + x * bpp; return [px[o], px[o + 1], px[o + 2]]; }};
}

// ---- browser ---------------------------------------------------------------
// A stuck browser must still end the run with the summary line.
const watchdog = setTimeout(() => {
  console.log('not ok - the run took over 180 s and was stopped');
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
}, 180000);
watchdog.unref();
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'symd-chromium-'));
let context;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-quic'],
    acceptDownloads: true,
    viewport: {width: 1280, height: 900},
  });
} catch (e) {
  fs.rmSync(profile, {recursive: true, force: true});
  console.log(`not ok - launch chromium: ${String(e.message).split('\n')[0]}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}
// A wait waits for what it checks; its timeout only ends a wait that would
// never end, with room for a busy machine.
context.setDefaultTimeout(20000);
const page = context.pages()[0] || await context.newPage();

const dialogs = [];          // every dialog the page opened
let confirmAnswer = true;    // what confirm() dialogs get
page.on('dialog', async (d) => {
  dialogs.push({type: d.type(), message: d.message()});
  if (d.type() === 'confirm' && confirmAnswer) await d.accept(); else await d.dismiss();
});
const pageErrors = [];       // uncaught exceptions, console errors (CSP violations among them)
page.on('pageerror', (e) => pageErrors.push('pageerror: ' + e.message));
// (the API's 4xx answers the checks provoke are logged as "Failed to load resource")
page.on('console', (m) => {
  if (m.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text()))
    pageErrors.push('console: ' + m.text());
});

// Load the dashboard at a route (a fresh document each time) and wait for the view.
async function open(hash) {
  await page.goto('about:blank');
  await page.goto(base + '/' + hash);
  await page.waitForSelector('#view[data-ready="true"]');
}
async function shot(name, fullPage = true) {
  const p = path.join(OUT, name + '.png');
  await page.screenshot({path: p, fullPage});
  shots.push(path.relative(ROOT, p));
}
const testid = (id) => `[data-testid="${id}"]`;
// Once what the page has queued up to now has run: the load event, a frame
// and a task after it. A check that something did not happen (a dialog, a
// console error) reads its record after this, never after a sleep.
async function settled() {
  await page.waitForLoadState('load');
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))));
}
async function statusText(id) { return (await page.textContent(testid(id))) || ''; }
// Pick files in the Images view (or drop them on the drop zone), wait until
// the status line reports the outcome.
async function pickFiles(files, name, how = 'picker') {
  await page.fill(testid('upload-name'), name || '');
  await page.$eval(testid('images-status'), (s) => { s.textContent = ''; });
  if (how === 'picker') {
    await page.setInputFiles(testid('upload-input'), files);
  } else {
    const dt = await page.evaluateHandle((fl) => {
      const d = new DataTransfer();
      for (const f of fl) d.items.add(new File([Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0))], f.name));
      return d;
    }, files.map((f) => ({name: path.basename(f), b64: fs.readFileSync(f).toString('base64')})));
    await page.dispatchEvent(testid('upload-drop'), 'dragover', {dataTransfer: dt});
    await page.dispatchEvent(testid('upload-drop'), 'drop', {dataTransfer: dt});
  }
  await page.waitForFunction(() => {
    const t = document.querySelector('[data-testid="images-status"]').textContent;
    return t !== '' && !t.endsWith('…');
  });
  return statusText('images-status');
}
async function imageRow(uuid) { return page.$(`tr[data-testid="image-row"][data-uuid="${uuid}"]`); }

// The rows of a listing as the values of some attributes each ("a b c"),
// once they are `want` (or after the wait's timeout: the caller's eq says what differs).
async function rowsNow(selector, attrs, want) {
  const read = ([sel, as]) => Array.from(document.querySelectorAll(sel), (r) => as.map((a) => r.getAttribute(a)).join(' '));
  await page.waitForFunction(([sel, as, w]) => JSON.stringify(Array.from(document.querySelectorAll(sel),
    (r) => as.map((a) => r.getAttribute(a)).join(' '))) === JSON.stringify(w), [selector, attrs, want]).catch(() => {});
  return page.evaluate(read, [selector, attrs]);
}

// The crash filters of the crash views: the fields filled, kind chosen, searched.
const DIM_KEYS = ['app_version', 'os_version', 'hardware_model'];
async function setFilters(f) {
  for (const k of DIM_KEYS) await page.fill(testid('filter-' + k), f[k] || '');
  await page.fill(testid('crash-search'), f.query || '');
  if ((await page.inputValue(testid('kind-filter'))) !== (f.kind || '')) await page.selectOption(testid('kind-filter'), f.kind || '');
  await page.click(testid('crash-search-submit'));
}
const groupHash = (kind, signature, dims) => '#/group?' + new URLSearchParams(Object.assign({kind, signature}, dims || {}));

// A trend chart (the element `sel`) against the API's trend: one column per
// UTC day, titles with the counts, and in a screenshot of it the bars in the
// bar colour, as high as count / axis top of the plot, nothing on empty days.
const BAR_RGB = [0x3d, 0x6f, 0xd6];
const isBar = (p) => p.every((v, i) => Math.abs(v - BAR_RGB[i]) <= 8);
async function checkTrendChart(sel, trend, name) {
  await page.mouse.move(0, 0);   // no day hovered
  const chart = page.locator(sel);
  const file = path.join(OUT, name + '.png');
  const png = decodePng(await chart.screenshot({path: file}));
  shots.push(path.relative(ROOT, file));
  const geo = await chart.evaluate((svg) => {
    const box = svg.getBoundingClientRect();
    const rel = (e) => { const r = e.getBoundingClientRect(); return {x: r.left - box.left, y: r.top - box.top, w: r.width, h: r.height}; };
    return {
      w: box.width, fromDay: Number(svg.dataset.fromDay), plot: rel(svg.querySelector('[data-testid="trend-plot"]')),
      yticks: Array.from(svg.querySelectorAll('[data-testid="trend-ytick"]'), (t) => Number(t.textContent)),
      xticks: Array.from(svg.querySelectorAll('[data-testid="trend-xtick"]'), (t) => t.textContent),
      days: Array.from(svg.querySelectorAll('[data-testid="trend-day"]'), (g) => {
        const bar = g.querySelector('[data-testid="trend-bar"]');
        return {day: g.dataset.day, count: Number(g.dataset.count), title: g.querySelector('title').textContent,
          col: rel(g.querySelector('.hit')), bar: bar ? rel(bar) : null};
      }),
    };
  });
  const iso = (i) => new Date((trend.from_day + i) * 86400000).toISOString().slice(0, 10);
  eq(geo.fromDay, trend.from_day, 'first day');
  eq(geo.days.map((d) => d.count), trend.days, 'counts per day');
  eq(geo.days.map((d) => d.day), trend.days.map((c, i) => iso(i)), 'days (UTC)');
  geo.days.forEach((d, i) => {
    const want = `${iso(i)}${i === trend.days.length - 1 ? ' (today)' : ''}: ${d.count} report${d.count === 1 ? '' : 's'}`;
    eq(d.title, want, `hover title of day ${i}`);
  });
  assert(geo.xticks.length >= 3 && geo.xticks.length <= 6 && geo.xticks[geo.xticks.length - 1] === 'today', `x axis labels ${geo.xticks}`);
  const top = Math.max(...geo.yticks);
  assert(top > 0 && top >= Math.max(...trend.days), `axis top ${top} for counts up to ${Math.max(...trend.days)}`);
  assert(Math.abs(png.w - Math.round(geo.w)) <= 1, `screenshot ${png.w} px wide, chart ${geo.w} px`);
  let all = 0, area = 0;
  for (let y = 0; y < png.h; y++) for (let x = 0; x < png.w; x++) if (isBar(png.rgb(x, y))) all++;
  geo.days.forEach((d, i) => {
    const c = trend.days[i];
    const x0 = Math.ceil(d.col.x + 1), x1 = Math.floor(d.col.x + d.col.w - 1);
    let any = 0;
    for (let x = x0; x <= x1; x++) for (let y = 0; y < png.h; y++) if (isBar(png.rgb(x, y))) any++;
    if (!c) { eq(any, 0, `bar pixels on ${iso(i)} (no reports)`); return; }
    // the bar's height at its middle, against count / top of the plot's height
    const xm = Math.round(d.col.x + d.col.w / 2);
    let run = 0, best = 0;
    for (let y = 0; y < png.h; y++) { run = isBar(png.rgb(xm, y)) ? run + 1 : 0; best = Math.max(best, run); }
    const want = (c / top) * geo.plot.h;
    assert(Math.abs(best - want) <= 2, `bar of ${iso(i)} (${c} of ${top}) is ${best} px high, want ${want.toFixed(1)} of ${geo.plot.h.toFixed(1)}`);
    area += d.bar.w * want;
  });
  assert(all >= 100 && Math.abs(all - area) <= 0.1 * area + 40, `${all} pixels in the bar colour, the bars cover ${Math.round(area)}`);
  return {top, pixels: all};
}

const uuids = {bigapp: machoUuid(BIGAPP), dsym: machoUuid(BIGAPP_DSYM), libfix: machoUuid(LIBFIX), xss: machoUuid(XSS_BIN)};
let twinCrash = null, xssCrash = null, xssReport = null;
const posted = {};   // kind checks' crashes, by file

try {
  await check('dashboard loads under the CSP: nav, empty crash list, no console errors', async () => {
    const res = await page.goto(base + '/');
    eq(res.status(), 200, 'GET / status');
    assert((res.headers()['content-security-policy'] || '').includes("script-src 'self'"), 'no CSP header on GET /');
    await page.waitForSelector('#view[data-ready="true"]');
    for (const n of ['crashes', 'images', 'missing', 'symbolicate', 'webhooks']) assert(await page.isVisible(testid('nav-' + n)), 'nav ' + n);
    assert(await page.isVisible(testid('groups-empty')), 'empty database should say there are no crashes');
    await settled();
    eq(pageErrors, [], 'console errors');
  });

  await check('upload: 401 offers the token form; binary and dSYM via the file picker, a dylib dropped; list, UUIDs, pages', async () => {
    eq(uuids.dsym, uuids.bigapp, 'fixture dSYM UUID vs binary UUID');
    await open('#/images');
    assert(await page.isVisible(testid('images-empty')), 'image list should start empty');
    let s;
    if (TOKEN) {
      // the upload is answered 401: the page asks for the upload token, then sends it again
      const denied = await http('POST', '/v1/images', 'x');
      eq(denied.status, 401, 'POST /v1/images without the token');
      const picked = pickFiles([BIGAPP]);
      await page.waitForSelector(testid('auth-token-upload'), {state: 'visible'});
      assert((await page.textContent(testid('auth-why'))).includes(denied.json.error.message), 'the prompt gives the server\'s message');
      eq(await page.$$eval('.auth-row', (rs) => rs.filter((r) => !r.hidden).map((r) => r.dataset.role)), ['upload'], 'token rows asked for');
      await page.fill(testid('auth-token-upload'), TOKEN);
      await page.click(testid('auth-save'));
      s = await picked;
      assert(!(await page.isVisible(testid('auth'))), 'token form should close after saving');
      eq(await page.evaluate(() => localStorage.getItem('symd.token.upload')), TOKEN, 'upload token kept');
    } else {
      s = await pickFiles([BIGAPP]);
    }
    assert(s.startsWith('Uploaded:'), `upload status: ${s}`);
    assert(s.includes(uuids.bigapp) && s.includes('created'), `status lacks UUID/created: ${s}`);
    const res = JSON.parse(await page.textContent(testid('upload-result')));
    eq(res.images.map((i) => [i.uuid, i.arch, i.name, i.status]), [[uuids.bigapp, 'arm64', 'bigapp-arm64', 'created']], 'upload result');
    let row = await imageRow(uuids.bigapp);
    assert(row, `no row for ${uuids.bigapp} in the list`);
    eq(await (await row.$(testid('image-name'))).textContent(), 'bigapp-arm64', 'name cell');
    eq(await (await row.$(testid('image-debug'))).textContent(), 'no', 'debug info before the dSYM');

    s = await pickFiles([BIGAPP_DSYM]);
    assert(s.includes(uuids.bigapp) && s.includes('updated'), `dSYM upload status: ${s}`);
    row = await imageRow(uuids.bigapp);
    eq(await (await row.$(testid('image-debug'))).textContent(), 'yes', 'debug info after the dSYM');
    s = await pickFiles([LIBFIX], '', 'drop');
    assert(s.includes(uuids.libfix) && s.includes('created'), `dropped dylib upload status: ${s}`);
    assert(await imageRow(uuids.libfix), `no row for libfix ${uuids.libfix}`);
    eq(await page.$$eval('tr[data-testid="image-row"]', (rs) => rs.length), 2, 'rows in the list');
    // the search box filters by UUID prefix
    await page.fill(testid('image-search'), uuids.libfix.slice(0, 13));
    await page.click(testid('image-search-submit'));
    await page.waitForFunction((u) => {
      const rows = document.querySelectorAll('tr[data-testid="image-row"]');
      return rows.length === 1 && rows[0].dataset.uuid === u;
    }, uuids.libfix);
    await shot('images');
    // pages of one image each (#/images?limit=1): newest first, Older / Newer
    await open('#/images?limit=1');
    const firstRow = () => page.getAttribute('tr[data-testid="image-row"]', 'data-uuid');
    const turn = async (button, from) => {
      await page.click(testid(button));
      await page.waitForFunction((u) => document.querySelector('tr[data-testid="image-row"]').dataset.uuid !== u, from);
    };
    eq(await firstRow(), uuids.libfix, 'page 1 (newest)');
    eq(await page.$$eval('tr[data-testid="image-row"]', (rs) => rs.length), 1, 'rows on a page of one');
    assert(!(await page.isVisible(testid('images-prev'))), 'no newer page on page 1');
    await turn('images-next', uuids.libfix);
    eq(await firstRow(), uuids.bigapp, 'page 2');
    assert(!(await page.isVisible(testid('images-next'))), 'no older page after the last image');
    await turn('images-prev', uuids.bigapp);
    eq(await firstRow(), uuids.libfix, 'back on page 1');
  });

  await check('crash detail: group found by signature, frames as twins.expected.tsv says', async () => {
    twinCrash = await postCrash(twinText);
    // A second crash whose crashed thread is thread 1: the view must put it first.
    const t1 = twinText.replace(/Triggered by Thread:\s+0/, 'Triggered by Thread:  1')
      .replace('Thread 0 Crashed:', 'Thread 0:').replace(/^Thread 1:$/m, 'Thread 1 Crashed:')
      .replace('Thread 0 crashed with', 'Thread 1 crashed with');
    const second = await postCrash(t1);
    eq(second.crashed_thread, 1, 'variant crashed thread');

    await open('#/crashes');
    await page.fill(testid('crash-search'), expectedSignature);
    await page.click(testid('crash-search-submit'));
    const group = page.locator(testid('group-open'), {hasText: expectedSignature}).first();
    await group.waitFor();
    eq(await group.textContent(), expectedSignature, 'group signature');
    await group.click();
    await page.waitForSelector(testid('crash-link'));
    await shot('crashes');
    await page.click(`${testid('crash-link')}[href="#/crashes/${twinCrash.id}"]`);
    await page.waitForSelector(testid('crash-title'));
    eq(await page.textContent(testid('crash-signature')), expectedSignature, 'crash signature');

    const threads = await page.$$eval('section[data-testid="thread"]', (ss) => ss.map((s) => [s.dataset.thread, s.dataset.crashed]));
    eq(threads[0], ['0', 'true'], 'first thread shown');
    assert(threads.slice(1).every((t) => t[1] === 'false'), 'only one crashed thread');
    const rows = await page.$$eval('section[data-crashed="true"] tr[data-testid="frame"]', (trs) => trs.map((tr) => {
      const cell = (id) => tr.querySelector(`[data-testid="${id}"]`);
      const tag = cell('missing-tag');
      return {
        index: Number(cell('frame-index').textContent), image: cell('frame-image').textContent,
        sym: cell('frame-symbol').querySelector('.sym').textContent, file: cell('frame-file').textContent,
        status: tr.dataset.status, inlined: tr.dataset.inlined === 'true', app: tr.dataset.app === 'true',
        missingTag: !!tag && tag.getClientRects().length > 0 && tag.textContent,
        pad: parseFloat(getComputedStyle(cell('frame-symbol')).paddingLeft),
        bg: getComputedStyle(cell('frame-image')).backgroundColor,
      };
    }));
    const want = [];
    for (const e of expected) {
      const f = Number(e.frame);
      if (e.status === 'missing_image') {  // shown as the report writes it: 0xLOAD + offset
        const m = new RegExp(`^${f}\\s+${e.image.replace(/\./g, '\\.')}\\s+0x0*${e.address.slice(2)} (0x[0-9a-f]+ \\+ \\d+)$`, 'm').exec(twinText);
        assert(m, `frame ${f} not found in bigapp-twin.crash`);
        want.push({index: f, image: e.image, sym: m[1], file: '', status: e.status, inlined: false});
        continue;
      }
      const outer = `${e.symbol} + ${e.offset}`;
      if (!e.levels.length) { want.push({index: f, image: e.image, sym: outer, file: '', status: e.status, inlined: false}); continue; }
      e.levels.forEach((l, i) => {
        const last = i === e.levels.length - 1;
        want.push({index: f, image: e.image, sym: last ? outer : l.fn, file: `${l.file}:${l.line}`, status: e.status, inlined: !last});
      });
    }
    eq(rows.map((r) => ({index: r.index, image: r.image, sym: r.sym, file: r.file, status: r.status, inlined: r.inlined})), want, 'crashed thread frames');
    // inlined levels indented past their outer frame
    rows.forEach((r, i) => {
      if (!r.inlined) return;
      const outer = rows.slice(i).find((o) => !o.inlined);
      assert(r.pad > outer.pad + 8, `inlined frame ${r.index} (${r.sym}) not indented: ${r.pad}px vs ${outer.pad}px`);
    });
    // missing-image frames marked
    rows.forEach((r) => eq(r.missingTag || null, r.status === 'missing_image' ? 'missing image' : null, `missing mark of frame ${r.index} ${r.image}`));
    // app frames highlighted (and only those)
    rows.forEach((r) => eq(r.app, r.image === twinProcess, `app flag of frame ${r.index} ${r.image}`));
    const appBg = rows.find((r) => r.app).bg, otherBg = rows.find((r) => !r.app).bg;
    assert(appBg !== otherBg, `app frames not highlighted (background ${appBg} vs ${otherBg})`);
    await shot('crash-detail');

    await open('#/crashes/' + second.id);
    const order = await page.$$eval('section[data-testid="thread"]', (ss) => ss.map((s) => [s.dataset.thread, s.dataset.crashed]));
    eq(order[0], ['1', 'true'], 'crashed thread 1 shown first');
    eq(order.length, 2, 'threads shown');
  });

  await check('download button yields the symbolicated text report', async () => {
    assert(twinCrash, 'no crash posted');
    await open('#/crashes/' + twinCrash.id);
    const link = page.locator(testid('download-report'));
    eq(await link.textContent(), 'Download symbolicated report', 'button text');
    const [dl] = await Promise.all([page.waitForEvent('download'), link.click()]);
    const text = fs.readFileSync(await dl.path(), 'utf8');
    assert(/^Incident Identifier:/.test(text), `not a text report: ${text.slice(0, 80)}`);
    for (const e of expected.filter((r) => r.symbol))
      assert(text.includes(`${e.symbol} + ${e.offset}`), `report lacks "${e.symbol} + ${e.offset}"`);
    const l = expected.find((r) => r.levels.length).levels[0];
    assert(text.includes(`${path.basename(l.file)}:${l.line}`) || text.includes(`${l.file}:${l.line}`), `report lacks ${l.file}:${l.line}`);
    assert(dl.suggestedFilename().endsWith('.crash'), `file name ${dl.suggestedFilename()}`);
  });

  await check('missing images: nothing of the app\'s, the twin\'s system library counted under its OS build; copy button copies its UUID', async () => {
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], {origin: base});
    await open('#/missing');
    await page.waitForSelector(testid('missing-system-row'));
    assert(await page.isVisible(testid('missing-app-empty')), 'the app\'s images are all uploaded: no empty-list line');
    const build = await page.$$eval('tr[data-testid="missing-system-row"]', (rs) => rs.map((r) =>
      [r.dataset.os, r.dataset.arch, Number(r.dataset.count), r.querySelector('[data-testid="missing-system-hint"]').textContent]));
    eq(build.map((b) => b.slice(0, 3)), [[/^OS Version:\s+(.*)$/m.exec(twinText)[1], 'arm64e', 1]], 'system images by build and arch');
    assert(/symd import/.test(build[0][3]), `hint: ${build[0][3]}`);
    // the app's section comes first
    eq(await page.$$eval('[data-testid="missing-app"], [data-testid="missing-system"]', (ss) => ss.map((x) => x.dataset.testid)),
      ['missing-app', 'missing-system'], 'sections in order');
    await page.click(`${testid('missing-system-images')} summary`);
    const row = page.locator(`tr[data-testid="missing-row"][data-uuid="${missingRow.uuid}"]`);
    await row.waitFor();
    eq(await row.getAttribute('data-system'), 'true', 'the library is the OS\'s');
    eq(await row.locator(testid('missing-uuid')).textContent(), missingRow.uuid, 'UUID cell');
    assert((await row.textContent()).includes(missingRow.image), `row lacks ${missingRow.image}`);
    eq(await page.$$eval('tr[data-testid="missing-row"]', (rs) => rs.length), 1, 'missing rows');
    const href = await row.locator('a').getAttribute('href');
    assert(/^#\/crashes\/\d+$/.test(href), `last crash link ${href}`);
    await row.locator(testid('missing-copy')).click();
    await page.waitForFunction(() => document.querySelector('[data-testid="missing-copy"]').textContent !== 'Copy UUID');
    eq(await row.locator(testid('missing-copy')).textContent(), 'Copied', 'copy button');
    eq(await page.evaluate(() => navigator.clipboard.readText()), missingRow.uuid, 'clipboard');
    await shot('missing');
  });

  await check('symbolicate view: pasted .ips comes back symbolicated, nothing stored', async () => {
    const before = (await http('GET', '/v1/crashes?limit=1000')).json.crashes.length;
    await open('#/symbolicate');
    await page.fill(testid('symbolicate-input'), fs.readFileSync(fx('crashes/bigapp-twin.ips'), 'utf8'));
    await page.click(testid('symbolicate-submit'));
    await page.waitForSelector(`${testid('symbolicate-output')}:not([hidden])`);
    const out = await page.textContent(testid('symbolicate-output'));
    for (const e of expected.filter((r) => r.symbol))
      assert(out.includes(`${e.symbol} + ${e.offset}`), `output lacks "${e.symbol} + ${e.offset}"`);
    eq((await http('GET', '/v1/crashes?limit=1000')).json.crashes.length, before, 'stored crashes');
    await shot('symbolicate');
    // a broken report shows the API's error message
    await page.fill(testid('symbolicate-input'), 'this is not a crash report');
    await page.click(testid('symbolicate-submit'));
    await page.waitForFunction(() => document.querySelector('[data-testid="symbolicate-status"]').classList.contains('error'));
    const api = await http('POST', '/v1/crashes?store=false', 'this is not a crash report');
    eq(await statusText('symbolicate-status'), api.json.error.message, 'error message');
    assert(await page.isHidden(testid('symbolicate-output')), 'output should be hidden after an error');
  });

  await check('XSS: markup in symbol, image name and process renders as text', async () => {
    const seen = dialogs.length;
    await open('#/images');
    const s = await pickFiles([XSS_BIN], EVIL_NAME);
    assert(s.startsWith('Uploaded:') && s.includes(uuids.xss), `upload status: ${s}`);
    const stored = (await http('GET', '/v1/images/' + uuids.xss)).json.images[0];
    const row = await imageRow(uuids.xss);
    assert(row, 'xss image not listed');
    assert(stored.name !== path.basename(XSS_BIN), `the name field was ignored (stored as ${stored.name})`);
    eq(await (await row.$(testid('image-name'))).textContent(), stored.name, 'image name shown verbatim');
    await shot('xss-images');

    // A crash in the evil function, modeled on bigapp-twin.crash.
    const load = 0x104000000n, vm = 0x100000000n;
    const sym = (await http('POST', '/v1/symbolicate', JSON.stringify({images: [{uuid: uuids.xss, load_address: '0x100000000'}],
      threads: [{frames: ['0x100000388']}]}))).json.threads[0].frames[0];
    eq(sym.symbol, EVIL, 'symbol at the evil function\'s start');
    const evilAt = BigInt(sym.symbol_address) - vm + load + 8n;
    const pad = (n) => '0x' + n.toString(16).padStart(16, '0');
    const u = uuids.xss.replace(/-/g, '').toLowerCase();
    const appPath = `/private/var/containers/Bundle/Application/X/Evil.app/${EVIL_PROCESS}`;
    const report = [
      'Incident Identifier: 11111111-2222-3333-4444-555555555555', 'Hardware Model:      iPhone14,2',
      `Process:             ${EVIL_PROCESS} [666]`, `Path:                ${appPath}`,
      'Identifier:          org.symd.<i>xss</i>', 'Version:             6.6.6 (<u>1</u>)',
      'Code Type:           ARM-64 (Native)', 'OS Version:          iPhone OS 15.3 (19D50)', 'Report Version:      104', '',
      'Exception Type:  EXC_BAD_ACCESS (SIGSEGV)', 'Exception Codes: 0x0000000000000001, 0x0000000000000000',
      'Triggered by Thread:  0', '', 'Thread 0 Crashed:',
      `0   ${EVIL_PROCESS}                   \t${pad(evilAt)} 0x${load.toString(16)} + ${evilAt - load}`, '',
      'Binary Images:',
      `0x${load.toString(16)} - 0x${(load + 0x3fffn).toString(16)} +${EVIL_PROCESS} arm64  <${u}> ${appPath}`, ''].join('\n');
    xssReport = report;
    xssCrash = await postCrash(report);
    const EVIL_GROUP = EVIL + ' | EXC_BAD_ACCESS (SIGSEGV)'; // the function, then the exception type
    eq(xssCrash.signature, EVIL_GROUP, 'crash signature');

    await open('#/crashes');
    const g = page.locator(testid('group-open'), {hasText: EVIL});
    eq(await g.count(), 1, 'groups showing the evil signature as text');
    await g.click();
    await page.click(`${testid('crash-link')}[href="#/crashes/${xssCrash.id}"]`);
    await page.waitForSelector(testid('crash-title'));
    const syms = await page.$$eval('tr[data-testid="frame"] .sym', (ns) => ns.map((n) => n.textContent));
    eq(syms[0], `${EVIL} + 8`, 'frame symbol');
    eq(await page.$$eval('tr[data-testid="frame"]', (ns) => ns.map((n) => n.dataset.app)), ['true'],
      'the frame of the app image (named <b>evil</b>) is highlighted');
    // The upload's name "<script>alert(2)</script>" is stored as its last
    // path component, "script>": shown as that text.
    eq(await page.$$eval('tr[data-testid="frame"] [data-testid="frame-image"]', (ns) => ns.map((n) => n.textContent)),
      ['script>'], 'frame image name shown as text');
    assert(await page.locator('tr[data-testid="frame"] .sym', {hasText: EVIL}).isVisible(), 'symbol not visible');
    eq(await page.textContent(testid('crash-signature')), EVIL_GROUP, 'title signature');
    assert((await page.textContent(testid('crash-facts'))).includes(EVIL_PROCESS), 'process not shown verbatim');
    const dom = await page.evaluate(() => ({
      imgs: document.querySelectorAll('img[src="x"], img').length,
      scripts: Array.from(document.scripts, (s) => s.src),
      injected: document.querySelectorAll('main b, main i, main u, main script').length,
    }));
    eq(dom.imgs, 0, 'img elements in the DOM');
    eq(dom.injected, 0, 'markup elements from data');
    eq(dom.scripts, [base + '/assets/js/main.js'], 'scripts in the page');
    await shot('xss-crash');
    await settled();
    eq(dialogs.slice(seen), [], 'dialogs');
  });

  await check('webhooks view: the evil crash\'s group.new, pending to a target that listens nowhere, why, markup as text', async () => {
    // the sender has tried it (poll the log until it says so: its state, not a sleep)
    const ofEvil = (ds) => ds.find((d) => d.type === 'group.new' && d.data && d.data.crash && d.data.crash.id === xssCrash.id);
    let evil = null;
    for (const until = Date.now() + 20000; Date.now() < until;) {
      const r = await http('GET', '/v1/webhooks/deliveries?limit=1000');
      eq(r.status, 200, 'deliveries status');
      evil = ofEvil(r.json.deliveries);
      if (evil && evil.attempts >= 1) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert(evil && evil.attempts >= 1, `the evil group's event was not tried: ${JSON.stringify(evil)}`);
    await open('#/webhooks');
    const row = page.locator(`tr[data-testid="webhook-row"][data-id="${evil.id}"]`);
    await row.waitFor();
    eq(await row.getAttribute('data-type'), 'group.new', 'type');
    eq(await row.getAttribute('data-state'), 'pending', 'state');
    eq(await row.locator(testid('webhook-group')).textContent(), xssCrash.signature, 'group shown as text');
    eq(await row.locator(testid('webhook-url')).textContent(), 'http://127.0.0.1:9/symd-hook', 'target');
    assert(/cannot connect/.test(await row.locator(testid('webhook-last')).textContent()), 'the last attempt says why');
    assert(/^next /.test(await row.locator(testid('webhook-when')).textContent()), 'the next attempt shown');
    // every event this run caused is listed: the rows match the API's first page
    const api = await http('GET', '/v1/webhooks/deliveries?limit=50');
    eq(await page.$$eval('tr[data-testid="webhook-row"]', (rs) => rs.map((r) => Number(r.dataset.id))),
      api.json.deliveries.map((d) => d.id), 'rows as the API lists them');
    eq(await page.evaluate(() => document.querySelectorAll('main b, main img, main script').length), 0, 'markup elements from data');
    await shot('webhooks');
  });

  await check('Swift names as Xcode shows them, the raw name on hover', async () => {
    const auth = TOKEN ? {Authorization: 'Bearer ' + TOKEN} : {};
    for (const f of ['bin/swifty-arm64', 'dsym/swifty-arm64.dSYM/Contents/Resources/DWARF/swifty-arm64']) {
      const r = await http('POST', '/v1/images?name=swifty-arm64', fs.readFileSync(fx(f)), auth);
      assert(r.status === 201, `upload ${f}: ${r.status} ${r.text.slice(0, 200)}`);
    }
    const crash = await postCrash(fs.readFileSync(fx('crashes/swifty-twin.crash'), 'utf8'));
    const SIG = 'specialized static CrashClass.pleaseCrash()';
    const GROUP = SIG + ' | EXC_BAD_ACCESS (SIGSEGV)'; // the function, then the exception type
    eq(crash.signature, GROUP, 'crash signature');
    await open('#/crashes');
    const g = page.locator(testid('group-open'), {hasText: SIG});
    eq(await g.count(), 1, 'groups showing the simplified Swift name');
    await g.click();
    await page.click(`${testid('crash-link')}[href="#/crashes/${crash.id}"]`);
    await page.waitForSelector(testid('crash-title'));
    const syms = await page.$$eval('tr[data-testid="frame"] .sym', (ns) => ns.map((n) => [n.textContent, n.title]));
    eq(syms.slice(0, 3), [
      [SIG + ' + 16', '$s15iOSCrashingTest10CrashClassC06pleaseC0yyFZTf4d_n'],
      ['@objc static CrashingClass.crash() + 28', '$s13AnotherTarget13CrashingClassC5crashyyFZTo'],
      ['closure #1 in Model.load(_:) + 60', '$s6Swifty5ModelC4loadyySSKFyycfU_']], 'crashed thread frames');
    eq(await page.textContent(testid('crash-signature')), GROUP, 'title signature');
    assert(!(await page.textContent('main')).includes('$s'), 'a raw Swift name is shown in the page');
    await shot('swift-crash');
  });

  await check('XSS: application specific information and warnings render as text', async () => {
    assert(xssReport, 'the XSS check posted no report');
    const seen = dialogs.length;
    // the XSS report with an Application Specific Information section and a frame line that is no frame
    const text = xssReport.replace('Triggered by Thread:  0\n', `Triggered by Thread:  0\n\nApplication Specific Information:\n${EVIL}\n`)
      .replace(/^(0 .*)$/m, `$1\n1   ${EVIL_NAME} is no frame line`);
    const c = await postCrash(text);
    assert(typeof c.app_specific === 'string' && c.app_specific.includes(EVIL), `app_specific in the answer: ${JSON.stringify(c.app_specific)}`);
    assert(Array.isArray(c.warnings) && c.warnings.length > 0, 'the broken frame line has no warning');
    await open('#/crashes/' + c.id);
    eq(await page.textContent(testid('app-specific')), c.app_specific, 'application specific information');
    eq(await page.$$eval('[data-testid="warning"]', (ns) => ns.map((n) => n.textContent)),
      c.warnings.map((w) => `${w.where} ${w.message}`), 'warnings shown');
    const dom = await page.evaluate(() => document.querySelectorAll('main img, main script, main b, main i, main u').length);
    eq(dom, 0, 'markup elements from data');
    await settled();
    eq(dialogs.slice(seen), [], 'dialogs');
  });

  await check('image status: the twin crash\'s missing library says what to upload', async () => {
    assert(twinCrash, 'no crash posted');
    await open('#/crashes/' + twinCrash.id);
    const row = page.locator(`tr[data-testid="image-status-row"][data-uuid="${missingRow.uuid}"]`);
    eq(await row.getAttribute('data-status'), 'missing', 'status of the missing library');
    eq(await row.locator(testid('image-status')).textContent(), 'missing', 'status text');
    const hint = await row.locator(testid('image-hint')).textContent();
    // a system library: imported with its OS build, not uploaded
    eq(await row.getAttribute('data-system'), 'true', 'the library is the OS\'s');
    assert(await row.locator(testid('image-system')).isVisible(), 'no "system" tag on the library');
    assert(hint.includes(missingRow.uuid) && /symd import/.test(hint) && !/upload/i.test(hint), `hint: ${hint}`);
    const app = page.locator(`tr[data-testid="image-status-row"][data-uuid="${uuids.bigapp}"]`);
    eq(await app.getAttribute('data-status'), 'found', 'status of the uploaded app');
    eq(await app.getAttribute('data-system'), 'false', 'the app is the app\'s');
    eq(await app.locator(testid('image-hint')).count(), 0, 'no hint for a found image');
    assert(await page.isVisible(testid('upload-advice')), 'no upload advice above the threads');
    // the banner: nothing of the app's to upload, the OS's library said once, by its build
    eq(await page.locator(testid('upload-app')).count(), 0, 'the app\'s images are uploaded: nothing to name');
    const os = /^OS Version:\s+(.*)$/m.exec(twinText)[1];
    eq(await page.textContent(testid('system-advice')),
      `1 system image of ${os} is not imported (symd import that build's DeviceSupport folder or dyld shared cache; see Missing images).`,
      'the system line of the banner');
  });

  await checkReal('sample: kind shown, the call graph as an indented tree with counts', [REAL_SAMPLE], async (text) => {
    const want = sampleCallGraph(text);
    const threadCount = Number(/^\s*(\d+)\s+Thread_\d+/m.exec(text)[1]);
    const c = posted.sample = await postCrash(text);
    eq(c.kind, 'sample', 'kind in the answer');
    await open('#/crashes/' + c.id);
    eq(await page.textContent(`${testid('crash-title')} ${testid('kind-badge')}`), 'sample', 'kind badge in the title');
    eq(await page.textContent('dd[data-fact="Kind"]'), 'sample', 'kind fact');
    const tree = page.locator(`section[data-tree="true"] ${testid('call-tree')}`);
    eq(await tree.count(), 1, 'call trees');
    eq(Number(await tree.getAttribute('data-nodes')), want.length, 'tree nodes (the call graph\'s frame lines)');
    assert((await page.textContent(testid('thread-count'))).includes(String(threadCount)), 'thread sample count');
    await page.click(testid('tree-expand-all'));
    const rows = await page.$$eval('[data-testid="tree-node"]', (ns) => ns.map((n) => ({
      depth: Number(n.dataset.depth), count: Number(n.dataset.count), pad: parseFloat(getComputedStyle(n).paddingLeft),
      sym: n.querySelector('[data-testid="tree-symbol"]').textContent, image: n.querySelector('[data-testid="tree-image"]').textContent})));
    eq(rows.map((r) => [r.depth, r.count]), want.map((w) => [w.depth, w.count]), 'tree rows: depth and count');
    rows.forEach((r, i) => {
      const w = want[i];
      if (w.symbol !== '???') assert(r.sym.startsWith(w.symbol), `node ${i}: symbol ${r.sym}, want ${w.symbol}`);
      assert(r.image.includes(w.image), `node ${i}: image ${r.image}, want ${w.image}`);
      if (i) assert(r.depth <= rows[i - 1].depth || r.pad > rows[i - 1].pad, `node ${i} not indented under its parent`);
    });
    // collapsing the root hides every other node; opening it follows the single-child chain back
    await page.click(`[data-testid="tree-node"][data-depth="0"] ${testid('tree-toggle')}`);
    eq(await page.$$eval('[data-testid="tree-node"]', (ns) => ns.length), want.filter((w) => w.depth === 0).length, 'rows after collapsing the root');
    await page.click(`[data-testid="tree-node"][data-depth="0"] ${testid('tree-toggle')}`);
    eq(await page.$$eval('[data-testid="tree-node"]', (ns) => ns.length), want.length, 'rows after opening the root again');
    await shot('sample');
  });

  await checkReal('stackshot .ips: kind, bug_type, one collapsed section per process, opened on demand', [REAL_STACKSHOT], async (text) => {
    const {header, body} = ipsParts(text);
    const procs = Object.values(JSON.parse(body).processByPid);
    const c = posted.stackshot = await postCrash(text);
    eq(c.kind, 'hang', 'kind in the answer');
    const t0 = Date.now();
    await open('#/crashes/' + c.id);
    const ms = Date.now() - t0;
    eq(await page.textContent(`${testid('crash-title')} ${testid('kind-badge')}`), 'hang', 'kind badge in the title');
    eq(await page.textContent('dd[data-fact="Bug type"]'), String(header.bug_type), 'bug type fact');
    eq(await page.$$eval('[data-testid="process"]', (ns) => ns.length), procs.length, 'process sections (processByPid)');
    // the banner: no app image to name (a stackshot's images carry no name),
    // the unnamed ones counted apart, the OS's said once by build
    const missing = c.images.filter((im) => im.status === 'missing' && im.uuid);
    const sysN = missing.filter((im) => im.system).length, unnamedN = missing.filter((im) => !im.system && !im.name && !im.app).length;
    assert(sysN > 0 && unnamedN > 0, `${sysN} system, ${unnamedN} unnamed images missing`);
    eq(await page.locator(testid('upload-app')).count(), missing.filter((im) => !im.system && (im.name || im.app)).length, 'the app\'s images named');
    eq([await page.getAttribute(testid('system-advice'), 'data-count'), await page.getAttribute(testid('unnamed-advice'), 'data-count')],
      [String(sysN), String(unnamedN)], 'the OS\'s and the unnamed ones counted');
    assert((await page.textContent(testid('system-advice'))).includes(`of ${c.os_version} ${sysN === 1 ? 'is' : 'are'} not imported (symd import`),
      `system line: ${await page.textContent(testid('system-advice'))}`);
    await shot('stackshot', false);
    const shown = await page.$$eval('tr[data-testid="frame"]', (ns) => ns.length);
    assert(shown < 2000, `${shown} frame rows built at first: processes should start collapsed`);
    // filter to one process, open it: its threads and frames as the answer gives them
    const name = 'SpringBoard';
    const pi = c.processes.findIndex((p) => p.name === name);
    assert(pi >= 0, `no process ${name} in the answer`);
    await page.fill(testid('process-filter'), name.toLowerCase());
    const visible = await page.$$eval('[data-testid="process"]', (ns) => ns.filter((n) => !n.hidden).map((n) => n.querySelector('[data-testid="process-name"]').textContent));
    assert(visible.includes(name) && visible.every((v) => v.toLowerCase().includes('springboard')), `filtered processes ${visible}`);
    const sec = page.locator(`details[data-testid="process"][data-process="${pi}"]`);
    if (!(await sec.evaluate((d) => d.open))) await sec.locator('summary').first().click();
    const threads = c.threads.filter((t) => t.process === pi);
    // the section is built by its toggle event, which the browser fires after the click
    await sec.locator('section[data-testid="thread"]').first().waitFor();
    eq(await sec.locator('section[data-testid="thread"]').count(), threads.length, `thread sections of ${name}`);
    const first = sec.locator('section[data-testid="thread"]').first();
    if (!(await first.locator('details').first().evaluate((d) => d.open))) await first.locator('summary').first().click();
    // (built by its toggle event too)
    await first.locator('.thread-body > *').first().waitFor();
    const tid = await first.getAttribute('data-thread');
    const t = threads.find((x) => String(x.id) === tid);
    eq(await first.locator('tr[data-testid="frame"]').count(), t.frames.length, `frame rows of ${name} thread ${tid}`);
    console.log(`# stackshot: ${procs.length} processes, ${c.threads.length} threads, view ready in ${ms} ms`);
    await shot('stackshot-process', false);
  });

  // Budgets are on the page's main-thread CPU time (what the dashboard's
  // scripts, style and layout cost), not on the clock: a busy machine slows
  // the clock, not the work. Waits wait for the state they measure.
  await checkReal('big stackshot (about 8000 frames) stays fast', [REAL_BIG_STACKSHOT], async (text) => {
    const c = await postCrash(text);
    const frames = c.threads.reduce((n, t) => n + t.frames.length, 0);
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable');
    const cpu = async () => 1000 * (await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'ThreadTime').value;
    // from the listing in the same document (a new document may be another renderer process)
    await open('#/crashes');
    let c0 = await cpu(), t0 = Date.now();
    await page.evaluate((h) => { location.hash = h; }, '#/crashes/' + c.id);
    await page.waitForSelector(`#view[data-ready="true"] ${testid('crash-title')}`, {timeout: 60000});
    const ms = Math.round(await cpu() - c0), wall = Date.now() - t0;
    const els = await page.evaluate(() => document.querySelectorAll('*').length);
    console.log(`# big stackshot: ${frames} frames, ${c.processes.length} processes, view ready in ${ms} ms CPU (${wall} ms), ${els} elements`);
    assert(ms < 5000, `view took ${ms} ms of CPU`);
    assert(els < 40000, `${els} elements built for a collapsed view`);
    // every process opened at once: still usable
    c0 = await cpu();
    t0 = Date.now();
    await page.$$eval('details[data-testid="process"]', (ds) => ds.forEach((d) => { d.open = true; }));
    await page.waitForFunction(() => Array.from(document.querySelectorAll('details[data-testid="process"]')).every((d) => d.querySelector('.process-body').childElementCount > 0),
      null, {timeout: 60000});
    const all = Math.round(await cpu() - c0);
    console.log(`# big stackshot: every process opened in ${all} ms CPU (${Date.now() - t0} ms)`);
    assert(all < 20000, `opening every process took ${all} ms of CPU`);
    await cdp.detach();
  });

  await checkReal('broken .ips (JSON body does not parse): stored, warnings box shows where and why', [REAL_BROKEN], async (text) => {
    const {header} = ipsParts(text);
    const c = posted.broken = await postCrash(text);
    assert(Array.isArray(c.warnings) && c.warnings.length > 0, `answer has no warnings: ${JSON.stringify(c.warnings)}`);
    await open('#/crashes/' + c.id);
    assert(await page.isVisible(testid('warnings')), 'warnings box not visible');
    const items = await page.$$eval('[data-testid="warning"]', (ns) => ns.map((n) => [
      n.querySelector('[data-testid="warning-where"]').textContent, n.querySelector('[data-testid="warning-message"]').textContent]));
    eq(items, c.warnings.map((w) => [w.where, w.message]), 'warnings shown');
    eq(await page.textContent('dd[data-fact="Bug type"]'), String(header.bug_type), 'bug type from the header');
    eq(await page.textContent(`${testid('crash-title')} ${testid('kind-badge')}`), c.kind, 'kind badge');
    await shot('warnings');
  });

  await checkReal('Last Exception Backtrace shown first as the cause, then the crashed thread', [REAL_EXCEPTION], async (text) => {
    const lines = text.split('\n');
    const first = lines[lines.findIndex((l) => l.startsWith('Last Exception Backtrace:')) + 1];
    const m = /^0\s+\S+\s+0x[0-9a-f]+ (.*)$/.exec(first);
    assert(m, `first exception frame line: ${first}`);
    const c = await postCrash(text);
    await open('#/crashes/' + c.id);
    const secs = await page.$$eval('section[data-testid="thread"]', (ss) => ss.slice(0, 2).map((s) => ({
      role: s.dataset.role, crashed: s.dataset.crashed, cause: s.classList.contains('cause'),
      title: s.querySelector('h2').textContent, sym: (s.querySelector('tr[data-testid="frame"] .sym') || {}).textContent})));
    eq([secs[0].role, secs[0].cause], ['last_exception', true], 'first section: the exception backtrace, marked as the cause');
    assert(secs[0].title.startsWith('Last Exception Backtrace'), `title ${secs[0].title}`);
    eq(secs[0].sym, m[1], 'its first frame');
    eq(secs[1].crashed, 'true', 'second section: the crashed thread');
    await shot('exception-backtrace', false);
  });

  await check('minidump: kind badge, walked frames each tagged with how they were found, annotations shown', async () => {
    const file = path.join(MINIDUMPS, 'rust-minidump-simple-crashpad/simple-crashpad.dmp');
    if (!fs.existsSync(file)) { console.log(`skip - minidump: ${file} not found`); return; }
    const c = await postCrash(fs.readFileSync(file));
    eq([c.format, c.kind], ['minidump', 'minidump'], 'format and kind in the answer');
    await open('#/crashes/' + c.id);
    eq(await page.textContent(`${testid('crash-title')} ${testid('kind-badge')}`), 'minidump', 'kind badge in the title');
    const want = c.threads[0].frames.map((f) => f.trust);
    const got = await page.$$eval('section[data-testid="thread"] tr[data-testid="frame"] [data-testid="trust-tag"]',
      (ts) => ts.map((t) => t.dataset.trust));
    eq(got.slice(0, want.length), want, 'trust tags of the crashed thread');
    eq(want[0], 'context', 'the first frame is the context\'s');
    assert((await page.textContent(testid('app-specific'))).includes('hello: world'), 'the dump\'s annotation shown');
    await shot('minidump', false);
  });

  await check('kind filter: groups per kind, ?kind= in the address, kind badges in the lists', async () => {
    assert(posted.sample || posted.stackshot, 'no report of another kind posted (real reports missing?)');
    const other = posted.sample ? 'sample' : 'hang';
    await open('#/crashes?kind=' + other);
    eq(await page.inputValue(testid('kind-filter')), other, 'filter from the address');
    const api = (await http('GET', '/v1/crashes/groups?kind=' + other)).json.groups;
    assert(api.length > 0 && api.every((g) => g.kind === other), `API groups of kind ${other}: ${JSON.stringify(api.map((g) => g.kind))}`);
    const kinds = () => page.$$eval('tr[data-testid="group-row"]', (rs) => rs.map((r) => r.dataset.kind));
    eq(await kinds(), api.map(() => other), 'group rows');
    await page.selectOption(testid('kind-filter'), 'crash');
    await page.waitForFunction(() => {
      const rs = document.querySelectorAll('tr[data-testid="group-row"]');
      return rs.length && Array.from(rs).every((r) => r.dataset.kind === 'crash');
    });
    assert(page.url().endsWith('#/crashes?kind=crash'), `address ${page.url()}`);
    await page.selectOption(testid('kind-filter'), '');
    await page.waitForFunction((k) => Array.from(document.querySelectorAll('tr[data-testid="group-row"]')).some((r) => r.dataset.kind === k), other);
    const all = await kinds();
    assert(all.includes('crash') && all.includes(other), `kinds of all groups: ${all}`);
    const g = page.locator(`tr[data-testid="group-row"][data-kind="${other}"] ${testid('group-open')}`).first();
    await g.click();
    await page.waitForSelector(testid('crash-link'));
    const rowKinds = await page.$$eval('tr[data-testid="crash-row"]', (rs) => rs.map((r) => r.dataset.kind));
    assert(rowKinds.length && rowKinds.every((k) => k === other), `crash rows of the ${other} group: ${rowKinds}`);
    await shot('crashes-kinds');
  });

  await check('format filter: ?format= in the address, only reports of that format, each row saying its format', async () => {
    const api = (await http('GET', '/v1/crashes?format=ips&limit=50')).json.crashes;
    assert(api.length > 0 && api.every((c) => c.format === 'ips'), `API .ips reports: ${JSON.stringify(api.map((c) => c.format))}`);
    await open('#/crashes?format=ips&tab=reports');
    eq(await page.inputValue(testid('format-filter')), 'ips', 'filter from the address');
    await page.waitForSelector('tr[data-testid="crash-row"]');
    const rows = () => page.$$eval('tr[data-testid="crash-row"]', (rs) => rs.map((r) => [r.dataset.id, r.querySelector('[data-testid="crash-format"]').textContent]));
    eq(await rows(), api.map((c) => [String(c.id), 'ips']), 'report rows of format ips');
    await page.selectOption(testid('format-filter'), 'crash');
    await page.waitForFunction(() => {
      const rs = document.querySelectorAll('tr[data-testid="crash-row"]');
      return rs.length && Array.from(rs).every((r) => r.querySelector('[data-testid="crash-format"]').textContent === 'crash');
    });
    assert(/[?&]format=crash(&|$)/.test(page.url()), `address ${page.url()}`);
    const groups = (await http('GET', '/v1/crashes/groups?format=crash')).json.groups;
    await page.click(testid('tab-groups'));
    await page.waitForFunction((n) => document.querySelectorAll('tr[data-testid="group-row"]').length === n, groups.length);
    eq(await page.$$eval('tr[data-testid="group-row"]', (rs) => rs.map((r) => r.dataset.signature)), groups.map((g) => g.signature || ''), 'groups of format crash');
  });

  // Twin reports of other versions, OS versions and devices (the .crash's
  // header lines, the .ips's fields), all in the twin's group.
  const V = {v1: '7.1 (71)', v2: '7.2 (72)', os1: 'iPhone OS 16.1 (20B82)', os2: 'iPhone OS 17.0 (21A329)', m1: 'iPhone15,3', m2: 'iPad13,1'};
  const sub = (text, from, to) => { assert(text.includes(from), `fixture lacks ${from}`); return text.split(from).join(to); };
  const twinVariant = ({version, os, model}) => twinText.replace(/^Version:.*$/m, `Version:             ${version}`)
    .replace(/^OS Version:.*$/m, `OS Version:          ${os}`).replace(/^Hardware Model:.*$/m, `Hardware Model:      ${model}`);
  function twinIpsVariant() {   // 7.2 (72), iPhone OS 17.0 (21A329), iPhone15,3
    let t = fs.readFileSync(fx('crashes/bigapp-twin.ips'), 'utf8');
    t = sub(t, '"app_version":"1.0"', '"app_version":"7.2"');
    t = sub(t, '"build_version":"1"', '"build_version":"72"');
    t = sub(t, '"os_version":"iPhone OS 15.3 (19D50)"', '"os_version":"iPhone OS 17.0 (21A329)"');
    t = sub(t, '"modelCode": "iPhone14,2"', '"modelCode": "iPhone15,3"');
    t = sub(t, '"CFBundleShortVersionString": "1.0"', '"CFBundleShortVersionString": "7.2"');
    t = sub(t, '"CFBundleVersion": "1"', '"CFBundleVersion": "72"');
    t = sub(t, '"train": "iPhone OS 15.3"', '"train": "iPhone OS 17.0"');
    return sub(t, '"build": "19D50"', '"build": "21A329"');
  }

  await check('filters: app version, OS version, device and kind narrow groups and reports as the API does', async () => {
    const variants = [
      [twinVariant({version: V.v1, os: V.os1, model: V.m1}), [V.v1, V.os1, V.m1]],
      [twinVariant({version: V.v1, os: V.os1, model: V.m1}), [V.v1, V.os1, V.m1]],
      [twinVariant({version: V.v1, os: V.os2, model: V.m2}), [V.v1, V.os2, V.m2]],
      [twinVariant({version: V.v2, os: V.os1, model: V.m2}), [V.v2, V.os1, V.m2]],
      [twinIpsVariant(), [V.v2, V.os2, V.m1]],
    ];
    for (const [text, want] of variants) {
      const c = await postCrash(text);
      eq([c.app_version, c.os_version, c.hardware_model], want, 'stored version, OS and device');
      eq([c.kind, c.signature], ['crash', expectedSignature], 'group of the variant');
    }
    const all = (await http('GET', '/v1/crashes?limit=1000')).json.crashes;
    const allGroups = (await http('GET', '/v1/crashes/groups?limit=200')).json.groups;
    await open('#/crashes');
    const cases = [{app_version: V.v1}, {os_version: V.os2}, {hardware_model: V.m2},
      {app_version: V.v2, hardware_model: V.m1}, {kind: 'crash', os_version: V.os1}, {app_version: V.v1, os_version: V.os1, hardware_model: V.m1}];
    for (const f of cases) {
      const what = JSON.stringify(f);
      const q = new URLSearchParams(f).toString();
      await setFilters(f);
      const groups = (await http('GET', `/v1/crashes/groups?${q}&limit=200`)).json.groups.map((g) => `${g.kind} ${g.signature} ${g.count}`);
      assert(groups.length > 0, `no group for ${what}`);
      eq(await rowsNow('tr[data-testid="group-row"]', ['data-kind', 'data-signature', 'data-count'], groups), groups, `groups of ${what}`);
      assert(groups.join() !== allGroups.map((g) => `${g.kind} ${g.signature} ${g.count}`).join(), `${what} does not narrow the groups`);
      const url = new URL(page.url());
      eq(Object.fromEntries(new URLSearchParams(url.hash.split('?')[1] || '')), f, `filters in the address ${url.hash}`);
      // the chart counts what the filters keep, as the API's trend does
      const total = (await http('GET', `/v1/crashes/trend?days=30&${q}`)).json.days.reduce((a, b) => a + b, 0);
      eq(total, groups.reduce((a, g) => a + Number(g.split(' ').pop()), 0), `API: the trend of ${what} counts what its groups count`);
      await page.waitForFunction((t) => { const c = document.querySelector('[data-testid="overall-trend"] svg'); return c && c.dataset.total === String(t); }, total)
        .catch(() => {});
      eq(await page.getAttribute(`${testid('overall-trend')} svg`, 'data-total'), String(total), `the chart of ${what}`);
      await page.click(testid('tab-reports'));
      const want = (await http('GET', `/v1/crashes?${q}&limit=1000`)).json.crashes.map((c) => String(c.id));
      assert(want.length > 0 && want.length < all.length, `${what} keeps ${want.length} of ${all.length} reports`);
      eq(await rowsNow('tr[data-testid="crash-row"]', ['data-id'], want), want, `reports of ${what}`);
      for (const k of DIM_KEYS.filter((x) => f[x])) {
        eq([...new Set(await page.$$eval(`tr[data-testid="crash-row"] ${testid('crash-' + k)}`, (ns) => ns.map((n) => n.textContent)))], [f[k]], `${k} cells`);
      }
      if (f === cases[0]) await shot('reports-filtered');
      await page.click(testid('tab-groups'));
    }
    assert(await page.isVisible(testid('filter-note')), 'no note that sparklines are not filtered');
    // the filter menus offer every value the reports give, the most frequent first
    for (const k of DIM_KEYS) {
      const want = (await http('GET', `/v1/crashes/values?dim=${k}&limit=200`)).json.values.map((v) => v.value);
      assert(want.length > 1, `API: ${want.length} values of ${k}`);
      await page.waitForFunction(([id, n]) => document.getElementById(id).children.length === n, ['values-' + k, want.length]).catch(() => {});
      eq(await page.$$eval(`#values-${k} option`, (os) => os.map((o) => o.value)), want, `the menu of ${k}`);
    }
    await shot('groups-filtered');
    // Clear empties every field and lists everything again
    await page.click(testid('filter-clear'));
    const every = allGroups.map((g) => `${g.kind} ${g.signature} ${g.count}`);
    eq(await rowsNow('tr[data-testid="group-row"]', ['data-kind', 'data-signature', 'data-count'], every), every, 'groups after Clear');
    eq(new URL(page.url()).hash, '#/crashes', 'address after Clear');
  });

  await check('a report whose app image was never uploaded is flagged with its name, arch and UUID; the reports listing pages', async () => {
    const hex = crypto.randomBytes(16).toString('hex');
    const uuid = hex.toUpperCase().replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');
    const c = await postCrash(sub(twinVariant({version: '7.9 (79)', os: V.os1, model: V.m1}), uuids.bigapp.replace(/-/g, '').toLowerCase(), hex));
    const listed = (await http('GET', '/v1/crashes?limit=50')).json.crashes;
    eq(listed.find((x) => x.id === c.id).needs_upload, {uuid, arch: 'arm64', name: 'bigapp-arm64'}, 'needs_upload in the listing');
    assert(listed.some((x) => x.needs_upload === null), 'every report needs an upload: nothing to compare with');
    await open('#/crashes?tab=reports');
    const flags = async () => page.$$eval('tr[data-testid="crash-row"]', (rs) => rs.map((r) => {
      const n = r.querySelector('[data-testid="needs-upload"]');
      const t = (id) => (n.querySelector(`[data-testid="${id}"]`) || {textContent: null}).textContent;
      return [Number(r.dataset.id), n ? [n.dataset.uuid, t('needs-upload-name'), t('needs-upload-arch'), t('needs-upload-uuid')] : null];
    }));
    eq(await flags(), listed.map((x) => [x.id, x.needs_upload
      ? [x.needs_upload.uuid, x.needs_upload.name || 'the app image', x.needs_upload.arch ? ' ' + x.needs_upload.arch : null, x.needs_upload.uuid] : null]),
    'flags of the listed reports');
    const flag = page.locator(`tr[data-testid="crash-row"][data-id="${c.id}"] ${testid('needs-upload')}`);
    assert(await flag.isVisible(), 'flag not visible');
    eq(await flag.textContent(), `uploadbigapp-arm64 arm64${uuid}`, 'flag text');
    await shot('reports-needs-upload');
    // pages of the listing: ?limit= in the address, Load more appends the next page
    await open('#/crashes?tab=reports&limit=5');
    const ids = listed.map((x) => String(x.id));
    assert(ids.length > 10, `${ids.length} reports: too few for pages of 5`);
    eq(await rowsNow('tr[data-testid="crash-row"]', ['data-id'], ids.slice(0, 5)), ids.slice(0, 5), 'first page of 5');
    await page.click(testid('reports-more'));
    eq(await rowsNow('tr[data-testid="crash-row"]', ['data-id'], ids.slice(0, 10)), ids.slice(0, 10), 'after Load more');
    // its group's page flags it too
    await open(groupHash(c.kind, c.signature));
    eq(await page.getAttribute(`tr[data-testid="crash-row"][data-id="${c.id}"] ${testid('needs-upload')}`, 'data-uuid'), uuid, 'flag on the group page');
    // its page names what to upload for the app: name, UUID, arch, app version
    await open('#/crashes/' + c.id);
    await page.waitForSelector(testid('upload-app'));
    eq(await page.$$eval('[data-testid="upload-app"]', (ls) => ls.map((l) => {
      const t = (id) => (l.querySelector(`[data-testid="${id}"]`) || {textContent: null}).textContent;
      return [l.dataset.app, t('upload-app-name'), t('upload-app-uuid'), t('upload-app-arch'), t('upload-app-version')];
    })), [['true', 'bigapp-arm64', uuid, 'arm64', '7.9 (79)']], 'the banner names the app\'s image');
    assert((await page.textContent(testid('upload-advice'))).startsWith('1 image of the app was never uploaded: upload its dSYM'),
      `banner: ${await page.textContent(testid('upload-advice'))}`);
    await shot('crash-upload-banner');
    // the missing images view lists it first, the app's, with its app version
    await open('#/missing');
    const row = page.locator(`${testid('missing-app')} tr[data-testid="missing-row"][data-uuid="${uuid}"]`);
    await row.waitFor();
    eq([await row.getAttribute('data-app'), await row.getAttribute('data-system'), await row.locator(testid('missing-version')).textContent()],
      ['true', 'false', '7.9 (79)'], 'the app\'s missing image');
    eq(await page.$$eval('[data-testid="missing-app"], [data-testid="missing-system"]', (ss) => ss.map((x) => x.dataset.testid)),
      ['missing-app', 'missing-system'], 'the app\'s images first, then the OS\'s by build');
    await shot('missing-app-first');
  });

  await check('overall trend: a bar per UTC day of the last 30, today what this run posted; sparklines per group', async () => {
    const trend = (await http('GET', '/v1/crashes/trend?days=30')).json;
    eq(trend.days.length, 30, 'days in the API\'s trend');
    eq(trend.days[29], postedToday.all, 'today in the API: the reports this run posted');
    await open('#/crashes');
    const {top} = await checkTrendChart(`${testid('overall-trend')} ${testid('trend-chart')}`, trend, 'trend-chart');
    console.log(`# overall trend: ${postedToday.all} reports today, axis top ${top}`);
    assert((await page.textContent(`${testid('overall-trend')} ${testid('trend-summary')}`)).startsWith(`${postedToday.all} reports, ${postedToday.all} today`), 'summary line');
    const groups = (await http('GET', '/v1/crashes/groups?trend=30&limit=200')).json.groups;
    eq(await page.$$eval('tr[data-testid="group-row"]', (rs) => rs.map((r) => [r.dataset.kind, r.dataset.signature,
      r.querySelector('[data-testid="group-spark"]').dataset.counts])),
    groups.map((g) => [g.kind, g.signature, g.trend.days.join(',')]), 'sparklines: each group\'s 30 days');
    // a sparkline's only bar (today) in the bar colour
    const spark = decodePng(await page.locator(`tr[data-testid="group-row"] ${testid('group-spark')}`).first().screenshot());
    let n = 0;
    for (let y = 0; y < spark.h; y++) for (let x = 0; x < spark.w; x++) if (isBar(spark.rgb(x, y))) n++;
    assert(n >= 40, `${n} bar pixels in the first sparkline`);
    await shot('crashes-trend');
    // the chart follows the kind filter
    const hangs = (await http('GET', '/v1/crashes/trend?days=30&kind=hang')).json;
    await page.selectOption(testid('kind-filter'), 'hang');
    await page.waitForFunction((t) => document.querySelector('[data-testid="overall-trend"] svg').dataset.total === String(t),
      hangs.days.reduce((a, b) => a + b, 0));
    eq(await page.$$eval(`${testid('overall-trend')} [data-testid="trend-day"]`, (gs) => gs.map((g) => Number(g.dataset.count))), hangs.days, 'hang trend');
    assert((await page.textContent(`${testid('overall-trend')} h2`)).startsWith('Hang reports per day'), 'title of the kind\'s chart');
  });

  await check('group page: its trend as the API counts, its spread over versions, OS versions and devices, a value narrows its reports', async () => {
    const g = (await http('GET', '/v1/crashes/group?' + new URLSearchParams({kind: 'crash', signature: expectedSignature, days: 30}))).json;
    eq(g.count, postedToday['crash\n' + expectedSignature], 'the group counts the reports this run posted to it');
    eq(g.trend.days[29], g.count, 'today in the group\'s trend');
    await open('#/crashes');
    await page.locator(testid('group-open')).filter({hasText: new RegExp(`^${reEscape(expectedSignature)}$`)}).click();
    await page.waitForSelector(testid('group-title'));
    eq(await page.textContent(testid('group-signature')), expectedSignature, 'group signature');
    eq(await page.textContent('dd[data-fact="Reports"]'), String(g.count), 'reports fact');
    const {top} = await checkTrendChart(`${testid('group-trend')} ${testid('trend-chart')}`, g.trend, 'group-trend-chart');
    console.log(`# group trend: ${g.count} reports today, axis top ${top}`);
    for (const key of ['app_versions', 'os_versions', 'hardware_models']) {
      const want = g[key].map((v) => [v.value, v.count]);
      const rest = g.count - want.reduce((a, [, c]) => a + c, 0);
      if (rest > 0) want.push(['', rest]);
      eq(await page.$$eval(`${testid('spread-' + key)} tr[data-testid="spread-row"]`, (rs) => rs.map((r) => [r.dataset.value, Number(r.dataset.count)])),
        want, `spread over ${key}`);
    }
    eq(g.app_versions.find((v) => v.value === V.v1).count, 3, `API: reports of ${V.v1}`);
    const shares = await page.$$eval(`${testid('spread-app_versions')} .share`, (bs) => bs.map((b) => b.getBoundingClientRect().width));
    assert(shares.every((w, i) => !i || w <= shares[i - 1]) && shares[0] > 0, `share bars ${shares}`);
    await shot('group');
    // a value of the spread lists the group's reports of that value
    await page.click(`${testid('spread-app_versions')} tr[data-value="${V.v1}"] ${testid('spread-filter')}`);
    await page.waitForSelector(testid('group-filter'));
    const want = (await http('GET', '/v1/crashes?' + new URLSearchParams({kind: 'crash', signature: expectedSignature, app_version: V.v1}))).json.crashes.map((c) => String(c.id));
    eq(want.length, 3, `API: reports of ${V.v1} in the group`);
    eq(await rowsNow('tr[data-testid="crash-row"]', ['data-id'], want), want, `the group's reports of ${V.v1}`);
    assert((await page.textContent(testid('group-filter'))).includes(V.v1), 'filter chip');
    // the chart counts the reports the filter keeps
    const ft = (await http('GET', '/v1/crashes/trend?' + new URLSearchParams({kind: 'crash', signature: expectedSignature, app_version: V.v1, days: 30}))).json;
    eq(ft.days[29], 3, `API: today's reports of ${V.v1} in the group`);
    await checkTrendChart(`${testid('group-trend')} ${testid('trend-chart')}`, ft, 'group-trend-filtered');
    await shot('group-filtered');
  });

  await check('delete an image through the UI (confirm dismissed keeps it, accepted removes it)', async () => {
    await open('#/images');
    const del = `tr[data-testid="image-row"][data-uuid="${uuids.xss}"] ${testid('image-delete')}`;
    const seen = dialogs.length;
    confirmAnswer = false;
    const asked = page.waitForEvent('dialog');
    await page.click(del);
    await asked;
    await settled();   // the page has run on past its dismissed confirm
    eq(dialogs.slice(seen).map((d) => d.type), ['confirm'], 'dialogs after the first click');
    assert(dialogs[seen].message.includes(uuids.xss), `confirm text: ${dialogs[seen].message}`);
    assert(await imageRow(uuids.xss), 'image gone although confirm was dismissed');
    eq((await http('GET', '/v1/images/' + uuids.xss)).status, 200, 'API after a dismissed confirm');
    confirmAnswer = true;
    const deleted = page.waitForResponse((r) => r.request().method() === 'DELETE' && r.url().endsWith('/v1/images/' + uuids.xss));
    await page.click(del);
    eq((await deleted).status(), 200, 'the DELETE\'s answer');
    // the list loaded again after the DELETE, then its status line says so
    await page.waitForFunction(() => !document.querySelector('[data-testid="images-status"]').textContent.endsWith('…'));
    assert((await statusText('images-status')).startsWith('Deleted ' + uuids.xss), `status: ${await statusText('images-status')}`);
    assert(!(await imageRow(uuids.xss)), 'the deleted image is still listed');
    eq((await http('GET', '/v1/images/' + uuids.xss)).status, 404, 'API after delete');
    assert(await imageRow(uuids.bigapp), 'other images must stay');
    await shot('images-after-delete');
  });

  // The second server: a token per role. Its own origin, so its own localStorage.
  const authCheck = (name, fn) => (authBase && AUTH.read && AUTH.upload && AUTH.report ? check(name, fn)
    : (skipped++, console.log(`skip - ${name}: no second server with a token per role (run tests/browser/run.sh)`)));
  await authCheck('tokens per role: a 401 asks for the token its route needs, keeps it and retries; later loads do not ask', async () => {
    const asAuth = (p, opts = {}) => fetch(authBase + p, opts);
    const posted = await asAuth('/v1/crashes', {method: 'POST', body: twinText, headers: {Authorization: 'Bearer ' + AUTH.report}});
    eq(posted.status, 201, 'POST /v1/crashes with the report token');
    const crash = await posted.json();
    eq((await asAuth('/v1/crashes/groups')).status, 401, 'GET /v1/crashes/groups without the read token');
    const visibleRows = () => page.$$eval('.auth-row', (rs) => rs.filter((r) => !r.hidden).map((r) => r.dataset.role));
    const openAuth = async (hash) => {
      await page.goto('about:blank');
      await page.goto(authBase + '/' + hash);
    };

    // first load: every GET is 401; one prompt, for the read token
    await openAuth('#/crashes');
    await page.waitForSelector(testid('auth-token-read'), {state: 'visible'});
    eq(await visibleRows(), ['read'], 'token rows asked for');
    assert((await page.textContent(testid('auth-why'))).includes('Bearer <read token>'), `prompt: ${await page.textContent(testid('auth-why'))}`);
    eq(await page.getAttribute('#view', 'data-ready'), 'false', 'the view waits for the token');
    await shot('token-prompt', false);
    // a wrong token is refused and asked for again
    await page.fill(testid('auth-token-read'), 'not-the-token');
    await page.click(testid('auth-save'));
    await page.waitForFunction(() => document.querySelector('[data-testid="auth-why"]').textContent.includes('refused'));
    assert(await page.isVisible(testid('auth-token-read')), 'read token asked again after a wrong one');
    await page.fill(testid('auth-token-read'), AUTH.read);
    await page.click(testid('auth-save'));
    await page.waitForSelector('#view[data-ready="true"]');
    assert(await page.isHidden(testid('auth')), 'prompt closed after the right token');
    eq(await page.$$eval('tr[data-testid="group-row"]', (rs) => rs.map((r) => r.dataset.signature)), [crash.signature], 'groups once the token is given');
    eq(await page.evaluate(() => localStorage.getItem('symd.token.read')), AUTH.read, 'read token kept');
    eq(await page.$$eval(`${testid('overall-trend')} [data-testid="trend-day"]`, (gs) => gs.map((g) => Number(g.dataset.count)).pop()), 1, 'trend read with the token');

    // later loads do not ask; the crash view and its download use the kept token
    await openAuth('#/crashes/' + crash.id);
    await page.waitForSelector('#view[data-ready="true"]');
    assert(await page.isHidden(testid('auth')), 'asked again on a later load');
    eq(await page.textContent(testid('crash-signature')), crash.signature, 'crash shown');
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click(testid('download-report'))]);
    assert(/^Incident Identifier:/.test(fs.readFileSync(await dl.path(), 'utf8')), 'download with the read token is not the text report');

    // deleting needs the report token; cancelling the prompt: the page says why and stays
    confirmAnswer = true;
    await page.click(testid('crash-delete'));
    await page.waitForSelector(testid('auth-token-report'), {state: 'visible'});
    await page.click(testid('auth-cancel'));
    await page.waitForSelector(`${testid('crash-status')}.error`);
    assert((await statusText('crash-status')).includes('Bearer <report token>'), `status after cancelling: ${await statusText('crash-status')}`);
    assert(await page.isVisible(testid('status-token')), 'no way to enter the report token');
    eq(new URL(page.url()).hash, '#/crashes/' + crash.id, 'address after a cancelled delete');
    assert(await page.isEnabled(testid('crash-delete')), 'the delete button stays disabled');
    eq((await asAuth('/v1/crashes/' + crash.id, {headers: {Authorization: 'Bearer ' + AUTH.read}})).status, 200, 'API after a cancelled delete');
    // asked again, kept, the delete retried
    const deletes = [];
    const onDelete = (r) => { if (r.request().method() === 'DELETE') deletes.push(r.status()); };
    page.on('response', onDelete);
    const retried = page.waitForResponse((r) => r.request().method() === 'DELETE' &&
      r.url().endsWith('/v1/crashes/' + crash.id) && r.status() !== 401);
    await page.click(testid('crash-delete'));
    await page.waitForSelector(testid('auth-token-report'), {state: 'visible'});
    eq(await visibleRows(), ['report'], 'token rows asked for the delete');
    assert(await page.isVisible(testid('crash-title')), 'the crash page was left before the delete was done');
    await page.fill(testid('auth-token-report'), AUTH.report);
    await page.click(testid('auth-save'));
    eq((await retried).status(), 204, 'the DELETE sent again with the report token');
    // then the groups listing, loaded after that answer
    await page.waitForSelector(`${testid('crash-listing')} :is(${testid('groups-empty')}, tr[data-testid="group-row"])`);
    page.off('response', onDelete);
    eq(deletes, [401, 204], 'DELETE answers');
    eq(new URL(page.url()).hash, '#/crashes', 'address after the delete');
    eq(await page.$$eval('tr[data-testid="group-row"]', (rs) => rs.map((r) => r.dataset.signature)), [], 'groups after the delete');
    assert(await page.isVisible(testid('groups-empty')), 'the group is gone with its only report');
    eq((await asAuth('/v1/crashes/' + crash.id, {headers: {Authorization: 'Bearer ' + AUTH.read}})).status, 404, 'API after the delete');

    // uploading needs the upload token
    await openAuth('#/images');
    await page.waitForSelector('#view[data-ready="true"]');
    const picked = pickFiles([LIBFIX]);
    await page.waitForSelector(testid('auth-token-upload'), {state: 'visible'});
    eq(await visibleRows(), ['upload'], 'token rows asked for the upload');
    await page.fill(testid('auth-token-upload'), AUTH.upload);
    await page.click(testid('auth-save'));
    const st = await picked;
    assert(st.startsWith('Uploaded:') && st.includes(uuids.libfix), `upload status: ${st}`);

    // a new page load asks for nothing; the Tokens button shows all three kept
    await openAuth('#/images');
    await page.waitForSelector('#view[data-ready="true"]');
    assert(await page.isHidden(testid('auth')), 'asked again after all three were given');
    assert(await imageRow(uuids.libfix), 'uploaded image listed');
    await page.click(testid('tokens-open'));
    eq(await visibleRows(), ['read', 'upload', 'report'], 'rows of the Tokens button');
    eq(await page.$$eval('.auth-state', (ns) => ns.map((n) => n.textContent)), ['saved', 'saved', 'saved'], 'token states');
    eq(await page.evaluate(() => ['read', 'upload', 'report'].map((r) => localStorage.getItem('symd.token.' + r))),
      [AUTH.read, AUTH.upload, AUTH.report], 'tokens kept');
    await shot('tokens', false);
    // forgetting the read token: the next load asks again; cancelling shows the error with a way back
    await page.click(testid('auth-forget-read'));
    await page.click(testid('auth-cancel'));
    await openAuth('#/missing');
    await page.waitForSelector(testid('auth-token-read'), {state: 'visible'});
    await page.click(testid('auth-cancel'));
    await page.waitForSelector('#view[data-ready="true"]');
    assert((await statusText('missing-status')).includes('Bearer <read token>'), `status after cancelling: ${await statusText('missing-status')}`);
    await page.click(testid('status-token'));
    eq(await visibleRows(), ['read'], 'rows offered by the status line');
    await page.fill(testid('auth-token-read'), AUTH.read);
    await page.click(testid('auth-save'));
    await page.waitForSelector(`${testid('missing-empty')}, tr[data-testid="missing-row"]`);
    assert(await page.isHidden(testid('auth')), 'prompt closed');
  });

  const rulesCheck = (name, fn) => (rulesBase && process.env.SYMD_RULES_FILE ? check(name, fn)
    : (skipped++, console.log(`skip - ${name}: no server with grouping rules (argv[4], SYMD_RULES_FILE)`)));
  await rulesCheck('group page: the grouping rule that merged a group, or the default rule', async () => {
    const rule = fs.readFileSync(process.env.SYMD_RULES_FILE, 'utf8').split('\n').find((l) => l && !l.startsWith('#'));
    const post = async (file) => {
      const r = await fetch(rulesBase + '/v1/crashes', {method: 'POST', body: fs.readFileSync(fx(file))});
      eq(r.status, 201, `POST ${file}`);
      return r.json();
    };
    // two formats of one incident in libfix: one group, named by the rule
    const a = await post('crashes/bigapp-twin.crash');
    const b = await post('crashes/bigapp-twin.ips');
    eq([a.signature, b.signature], ['libfix crashes', 'libfix crashes'], 'merged by the rule');
    const other = await post('crashes/swifty-twin.crash');
    assert(other.signature !== 'libfix crashes', `no rule for swifty: ${other.signature}`);
    const api = await (await fetch(rulesBase + '/v1/crashes/group?' + new URLSearchParams({kind: 'crash', signature: 'libfix crashes'}))).json();
    eq([api.count, api.grouping_rule], [2, rule], 'API: the group and its rule');
    const openRules = async (hash) => {
      await page.goto('about:blank');
      await page.goto(rulesBase + '/' + hash);
      await page.waitForSelector('#view[data-ready="true"]');
    };
    await openRules(groupHash('crash', 'libfix crashes'));
    await page.waitForSelector(testid('group-rule'));
    eq(await page.textContent(testid('group-rule-text')), rule, 'the rule on the group page');
    eq(await page.getAttribute(testid('group-rule'), 'data-rule'), rule, 'data-rule');
    eq(await page.textContent('dd[data-fact="Reports"]'), '2', 'reports fact');
    await shot('group-rule');
    await openRules(groupHash('crash', other.signature));
    await page.waitForSelector(testid('group-rule'));
    eq(await page.getAttribute(testid('group-rule'), 'data-rule'), '', 'no rule: data-rule empty');
    assert((await page.textContent(testid('group-rule'))).startsWith('Grouped by the default rule'), 'the default rule said');
    eq(await page.$$(testid('group-rule-text')), [], 'no rule text');
  });

  await check('workflow: a group resolved in the next version regresses on a newer report, ignored for 2 more reports; states, history and the state and new-in filters', async () => {
    // a group of its own: a text report whose crashed frame is wfBrowserFn
    const wfReport = (version) => [
      'Incident Identifier: ' + crypto.randomUUID().toUpperCase(), 'Hardware Model:      iPhone14,2',
      'Process:             WfApp [42]', 'Path:                /private/var/containers/Bundle/Application/0C5D/WfApp.app/WfApp',
      'Identifier:          org.symd.wfapp', `Version:             ${version}`, 'Code Type:           ARM-64 (Native)',
      'OS Version:          iPhone OS 17.1 (21B80)', 'Report Version:      104', '', 'Exception Type:  EXC_BAD_ACCESS (SIGSEGV)',
      'Triggered by Thread:  0', '', 'Thread 0 Crashed:', '0   WfApp                         \t0x0000000104a389f8 wfBrowserFn + 24',
      '1   WfApp                         \t0x0000000104a38b04 main + 40', '', 'Binary Images:',
      '0x104a38000 - 0x104a3bfff WfApp arm64  <eeee000255553144a17c64a339ede13a> /private/var/containers/Bundle/Application/0C5D/WfApp.app/WfApp', ''].join('\n');
    const c = await postCrash(wfReport('3.1 (5)'));
    await postCrash(wfReport('3.0'));
    const sig = c.signature;
    eq(sig, 'wfBrowserFn | EXC_BAD_ACCESS (SIGSEGV)', 'the group');
    const apiGroup = async () => (await http('GET', '/v1/crashes/group?' + new URLSearchParams({kind: 'crash', signature: sig}))).json;
    const row = `tr[data-testid="group-row"][data-signature="${sig}"]`;
    // listed unresolved, first seen in 3.0
    await open('#/crashes?state=unresolved');
    await page.waitForSelector(row);
    eq([await page.getAttribute(row, 'data-state'), await page.textContent(`${row} ${testid('group-first-version')}`)], ['unresolved', '3.0'], 'the new group\'s row');
    eq(await page.inputValue(testid('state-filter')), 'unresolved', 'state filter from the address');
    // resolved in the next version from its page
    await open(groupHash('crash', sig));
    await page.waitForSelector(`${testid('group-workflow')}[data-state="unresolved"]`);
    eq(await page.textContent('dd[data-fact="First version"]'), '3.0', 'first version fact');
    eq(await page.textContent('dd[data-fact="Last version"]'), '3.1 (5)', 'last version fact');
    await page.waitForSelector(testid('history-empty'));
    await page.click(testid('state-resolve-next'));
    await page.waitForSelector(`${testid('group-workflow')}[data-state="resolved"]`);
    eq(await page.textContent(testid('state-detail')), ' · in the version after 3.1 (5)', 'what the resolution waits for');
    eq(await rowsNow('tr[data-testid="history-row"]', ['data-from', 'data-to', 'data-by', 'data-reason'], ['unresolved resolved open api']),
      ['unresolved resolved open api'], 'history after resolving');
    let g = await apiGroup();
    eq([g.state, g.resolved], ['resolved', {in: 'next', version: '3.1 (5)'}], 'API after resolving');
    await shot('group-resolved');
    // the same version does not reopen it; a newer one regresses it
    await postCrash(wfReport('3.1 (5)'));
    eq((await apiGroup()).state, 'resolved', 'after a report of 3.1 (5)');
    const r = await postCrash(wfReport('3.2'));
    eq((await apiGroup()).state, 'regressed', 'after a report of 3.2');
    await open(groupHash('crash', sig));
    await page.waitForSelector(`${testid('group-workflow')}[data-state="regressed"]`);
    const hist = ['resolved regressed system regression', 'unresolved resolved open api'];
    eq(await rowsNow('tr[data-testid="history-row"]', ['data-from', 'data-to', 'data-by', 'data-reason'], hist), hist, 'history after the regression');
    assert((await page.textContent(`tr[data-testid="history-row"][data-reason="regression"]`)).includes(`report ${r.id} version 3.2`), 'the regression names its report');
    await shot('group-regressed');
    // ignored until 2 more reports
    await page.fill(testid('ignore-count'), '2');
    await page.click(testid('state-ignore-count'));
    await page.waitForSelector(`${testid('group-workflow')}[data-state="ignored"]`);
    eq(await page.textContent(testid('state-detail')), ' · until 2 more reports (0 so far)', 'what the ignore waits for');
    g = await apiGroup();
    eq([g.state, g.ignored], ['ignored', {until: null, reports: 2, seen: 0}], 'API after ignoring');
    // the crashes view's state filter: ignored lists it, open groups do not
    await open('#/crashes');
    await page.selectOption(testid('state-filter'), 'ignored');
    const ignored = (await http('GET', '/v1/crashes/groups?state=ignored&limit=200')).json.groups.map((x) => `${x.signature} ${x.state}`);
    eq(ignored, [`${sig} ignored`], 'API: the ignored groups');
    eq(await rowsNow('tr[data-testid="group-row"]', ['data-signature', 'data-state'], ignored), ignored, 'rows of state=ignored');
    eq(new URLSearchParams(new URL(page.url()).hash.split('?')[1]).get('state'), 'ignored', 'state in the address');
    await page.selectOption(testid('state-filter'), 'unresolved,regressed');
    const open_ = (await http('GET', '/v1/crashes/groups?state=unresolved,regressed&limit=200')).json.groups.map((x) => `${x.signature} ${x.state}`);
    assert(open_.length > 0 && !open_.some((x) => x.startsWith(sig)), 'API: open groups');
    eq(await rowsNow('tr[data-testid="group-row"]', ['data-signature', 'data-state'], open_), open_, 'rows of the open groups');
    // new in version 3.0: only this group (the others' reports are of other versions)
    await page.selectOption(testid('state-filter'), '');
    await page.fill(testid('filter-new_in'), '3.0');
    await page.click(testid('crash-search-submit'));
    const fresh = (await http('GET', '/v1/crashes/groups?new_in=3.0&limit=200')).json.groups.map((x) => `${x.signature} ${x.first_version}`);
    eq(fresh, [`${sig} 3.0`], 'API: groups new in 3.0');
    eq(await rowsNow('tr[data-testid="group-row"]', ['data-signature'], [sig]), [sig], 'rows new in 3.0');
    await shot('groups-new-in');
    // two more reports end the ignore: unresolved, recorded
    await postCrash(wfReport('3.2'));
    eq((await apiGroup()).state, 'ignored', 'after one more report');
    await postCrash(wfReport('3.2'));
    eq((await apiGroup()).state, 'unresolved', 'after two more reports');
    await open(groupHash('crash', sig));
    await page.waitForSelector(`${testid('group-workflow')}[data-state="unresolved"]`);
    const all = ['unresolved ignore_reports_reached', 'ignored api', 'regressed regression', 'resolved api'];
    eq(await rowsNow('tr[data-testid="history-row"]', ['data-to', 'data-reason'], all), all, 'the ignore\'s end in the history');
  });

  await check('group spread past its first 50 values: More values pages through the rest', async () => {
    const text = (hw) => twinText.replace(/^Hardware Model:.*$/m, `Hardware Model:      ${hw}`)
      .replace(/^Incident Identifier:.*$/m, 'Incident Identifier: ' + crypto.randomUUID().toUpperCase())
      .replace(/^Version:.*$/m, 'Version:             8.0 (80)');
    const before = (await http('GET', '/v1/crashes/group?' + new URLSearchParams({kind: 'crash', signature: expectedSignature}))).json;
    const had = new Set(before.hardware_models.map((v) => v.value));
    for (let i = 0; i < 55; i++) await postCrash(text(`SpreadDev${String(i).padStart(2, '0')}`));
    const g = (await http('GET', '/v1/crashes/group?' + new URLSearchParams({kind: 'crash', signature: expectedSignature}))).json;
    eq(g.hardware_models.length, 50, 'API: the group answers 50 devices');
    let all = [], cursor = '';
    do {
      const d = (await http('GET', '/v1/crashes/group/spread?' + new URLSearchParams({kind: 'crash', signature: expectedSignature,
        dim: 'hardware_model', limit: 200, cursor}))).json;
      all = all.concat(d.values.map((v) => [v.value, v.count]));
      cursor = d.next_cursor || '';
    } while (cursor);
    eq(all.length, 55 + had.size, 'API: every device of the group');
    await open(groupHash('crash', expectedSignature));
    const rows = () => page.$$eval(`${testid('spread-hardware_models')} tr[data-testid="spread-row"]`, (rs) => rs.map((r) => [r.dataset.value, Number(r.dataset.count)]));
    const first = await rows();
    eq(first.length, 51, 'the first 50 devices and the rest in one row');
    eq(first[50][0], '', 'the last row: other values');
    await page.click(testid('spread-more-hardware_models'));
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="spread-hardware_models"] tr[data-testid="spread-row"]').length === n, all.length);
    eq(await rows(), all, 'every device after More values');
    assert(!(await page.$(testid('spread-more-hardware_models'))), 'no More values once all are shown');
    await shot('group-spread-all');
  });

  await check('no uncaught errors or CSP violations in the whole run', async () => {
    eq(pageErrors, [], 'console errors');
  });
} finally {
  await context.close().catch(() => {});
  fs.rmSync(profile, {recursive: true, force: true});
}

for (const s of shots) console.log('screenshot: ' + s);
if (skipped) console.log(`${skipped} skipped`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
