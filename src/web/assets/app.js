// The web inbox's only script (embedded in the binary; the CSP allows no other).
// Everything works without it; with it, deadlines count down and the page's live
// parts are refreshed when the bridge announces a change (Server-Sent Events).
"use strict";

function countDown() {
  const now = Date.now();
  for (const el of document.querySelectorAll("time[data-deadline]")) {
    const left = Math.max(0, Math.floor((Number(el.dataset.deadline) - now) / 1000));
    const d = Math.floor(left / 86400), h = Math.floor(left / 3600) % 24, m = Math.floor(left / 60) % 60, s = left % 60;
    el.textContent = d > 0 ? `${d}d ${h}h` : h > 0 ? `${h}h ${m}m` : m > 0 ? `${m}m ${s}s` : `${s}s`;
  }
}

// Fetches this page again and swaps in its live parts (and the title, which starts
// with the waiting count). When the request's state changed (decided elsewhere), the
// whole page is swapped: its buttons no longer apply.
async function refresh() {
  const response = await fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } });
  if (!response.ok && response.status !== 404) return;
  const next = new DOMParser().parseFromString(await response.text(), "text/html");
  document.title = next.title;
  const before = document.querySelector("[data-state]");
  const after = next.querySelector("[data-state]");
  if (response.status === 404 || (before && after && before.dataset.state !== after.dataset.state)) {
    const main = next.getElementById("main");
    if (main) document.getElementById("main").replaceWith(main);
    return;
  }
  for (const part of next.querySelectorAll("[data-live][id]")) {
    const old = document.getElementById(part.id);
    if (old) old.replaceWith(part);
  }
  countDown();
}

function listen() {
  const url = document.body.dataset.events;
  if (!url || !window.EventSource) return;
  const source = new EventSource(url);
  source.addEventListener("change", () => { refresh().catch(() => {}); });
  // After a reconnect, whatever changed while the stream was down is fetched.
  let opened = false;
  source.addEventListener("open", () => { if (opened) refresh().catch(() => {}); opened = true; });
}

document.addEventListener("DOMContentLoaded", () => {
  countDown();
  setInterval(countDown, 1000);
  listen();
});
