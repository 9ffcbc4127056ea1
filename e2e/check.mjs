// Headless-browser check of the adaptio dashboard and report, run by the Go
// test demo/e2e_test.go. Usage:
//   node check.mjs --dashboard URL [--report FILE] [--shots DIR] [--chromium PATH]
// It fails (exit 1) when a page requests anything outside localhost, when the
// dashboard's charts stay empty, or when they stop updating. It prints one
// JSON object with what it saw.
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const exe = args.chromium || "/usr/bin/chromium";
const out = { requests: [], external: [], dashboard: {}, report: {} };

function local(u) {
  if (u.startsWith("data:") || u.startsWith("file:") || u.startsWith("about:")) return true;
  try {
    const h = new URL(u).hostname;
    return h === "127.0.0.1" || h === "localhost" || h === "[::1]";
  } catch { return false; }
}

async function waitFor(page, fn, arg, ms, what) {
  try {
    await page.waitForFunction(fn, arg, { timeout: ms, polling: 100 });
  } catch (e) {
    throw new Error(`timed out after ${ms} ms waiting for ${what}`);
  }
}

const dir = mkdtempSync(join(tmpdir(), "adaptio-e2e-"));
let ctx;
let failed = null;
try {
  ctx = await chromium.launchPersistentContext(dir, {
    executablePath: exe, headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 1000 },
  });
  ctx.on("request", (r) => {
    out.requests.push(r.url());
    if (!local(r.url())) out.external.push(r.url());
  });
  const page = ctx.pages()[0] || await ctx.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  if (args.dashboard) {
    await page.goto(args.dashboard, { waitUntil: "load" });
    await waitFor(page, () => window.adaptio && window.adaptio.updates >= 1 &&
      document.querySelectorAll("#bw path.series").length > 0 &&
      document.querySelectorAll("#win path.series").length > 0 &&
      document.querySelectorAll("#nodes tbody tr").length > 0, null, 15000, "the charts to show data");
    const first = await page.evaluate(() => ({ seconds: window.adaptio.state.next[0], updates: window.adaptio.updates,
      points: document.querySelector("#bw path.series").getAttribute("d").length }));
    await waitFor(page, (n) => window.adaptio.state.next[0] > n && window.adaptio.updates >= 3, first.seconds, 15000, "the charts to update");
    await waitFor(page, () => document.querySelectorAll("#iters circle.point").length > 0 &&
      document.querySelectorAll("#est rect.bar").length > 0, null, 15000, "iterations and value estimates");
    const later = await page.evaluate(() => ({ seconds: window.adaptio.state.next[0], updates: window.adaptio.updates,
      points: document.querySelector("#bw path.series").getAttribute("d").length,
      iterations: document.querySelectorAll("#iters circle.point").length, bars: document.querySelectorAll("#est rect.bar").length,
      nodes: document.querySelectorAll("#nodes tbody tr").length, status: document.getElementById("status").textContent }));
    out.dashboard = { first, later, errors: errors.slice() };
    if (args.shots) await page.screenshot({ path: join(args.shots, "dashboard.png"), fullPage: true });
  }
  if (args.report) {
    await page.goto(pathToFileURL(args.report).href, { waitUntil: "load" });
    const r = await page.evaluate(() => ({ svgs: document.querySelectorAll("svg").length,
      summary: JSON.parse(document.getElementById("adaptio-summary").textContent) }));
    out.report = { svgs: r.svgs, iterations: r.summary.iterations, errors: errors.slice() };
    if (args.shots) await page.screenshot({ path: join(args.shots, "report.png"), fullPage: false });
  }
  if (out.external.length) failed = "requests left localhost: " + out.external.join(", ");
  if (errors.length) failed = "page errors: " + errors.join("; ");
} catch (e) {
  failed = String(e && e.message || e);
} finally {
  if (ctx) await ctx.close();
  rmSync(dir, { recursive: true, force: true });
}
out.ok = !failed;
out.error = failed || undefined;
console.log(JSON.stringify(out));
process.exit(failed ? 1 : 0);
