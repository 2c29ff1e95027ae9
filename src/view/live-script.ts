/**
 * The viewer's only script, served as /assets/live.js (same origin; the CSP allows nothing else): every second
 * while the run is running (every 3 s otherwise) it fetches each `<section data-src>`'s fragment — HTML the server
 * rendered and escaped — and swaps it in, so the in-flight table, the last rows landed and (every fifth round) the
 * charts follow the run without a reload. Nothing from the files is ever turned into markup here.
 */
export const LIVE_SCRIPT = `'use strict';
(() => {
  const live = document.getElementById('live');
  const charts = document.getElementById('charts');
  const refresh = async (section) => {
    try {
      const res = await fetch(section.dataset.src, { cache: 'no-store' });
      if (!res.ok) return;
      const text = await res.text();
      if (text !== section.dataset.last) {
        section.innerHTML = text;
        section.dataset.last = text;
      }
    } catch {
      // The viewer stopped or restarted: try again on the next round.
    }
  };
  let round = 0;
  const loop = async () => {
    if (live) await refresh(live);
    if (charts && round % 5 === 4) await refresh(charts);
    round++;
    const running = live && live.querySelector('[data-state="running"]');
    setTimeout(loop, running ? 1000 : 3000);
  };
  setTimeout(loop, 1000);
})();
`;
