// Headless-browser check of the adaptio dashboard and report, run by the Go
// test demo/e2e_test.go. Usage:
//   node check.mjs --dashboard URL [--report FILE] [--shots DIR] [--chromium PATH]
// It fails (exit 1) when a page requests anything outside localhost, when the
// dashboard's charts stay empty, when they stop updating, or when two texts
// of one chart overlap. It prints one JSON object with what it saw.
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

// overlaps lists the pairs of texts that overlap inside any one SVG of the
// page, as drawn (their bounding boxes, transforms applied, intersecting by
// more than a pixel each way): labels written over one another.
async function overlaps(page) {
  return page.evaluate(() => {
    const found = [];
    document.querySelectorAll("svg").forEach((svg, k) => {
      const boxes = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim() !== "")
        .map((t) => ({ s: t.textContent, r: t.getBoundingClientRect() }));
      for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i].r, b = boxes[j].r;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1) found.push(`svg ${k}${svg.parentElement && svg.parentElement.id ? " #" + svg.parentElement.id : ""}: "${boxes[i].s}" over "${boxes[j].s}"`);
      }
    });
    return found;
  });
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
    out.dashboard = { first, later, errors: errors.slice(), overlaps: await overlaps(page) };
    // Iterations are counted as the terminal view and the report count them.
    if (!/ \d+ of \d+ iterations/.test(later.status)) failed = `dashboard status "${later.status}" does not say "N of M iterations"`;
    if (args.shots) await page.screenshot({ path: join(args.shots, "dashboard.png"), fullPage: true });
  }
  if (args.report) {
    await page.goto(pathToFileURL(args.report).href, { waitUntil: "load" });
    const r = await page.evaluate(() => ({ svgs: document.querySelectorAll("svg").length,
      summary: JSON.parse(document.getElementById("adaptio-summary").textContent) }));
    out.report = { svgs: r.svgs, iterations: r.summary.iterations, errors: errors.slice(), overlaps: await overlaps(page) };
    if (args.shots) await page.screenshot({ path: join(args.shots, "report.png"), fullPage: false });
  }
  const over = [...(out.dashboard.overlaps || []), ...(out.report.overlaps || [])];
  if (over.length) failed = failed || "labels overlap: " + over.join("; ");
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
