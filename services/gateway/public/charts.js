// Vega-Lite charts from `visualization` events. The vega libraries (about a megabyte) are
// loaded only when the first chart arrives, as the classic scripts the gateway serves from
// /vendor. A spec must carry its data inline: one naming a `data.url` is refused before it
// reaches vega, and vega's loader is replaced by one that loads nothing, so no spec can make
// the page fetch or sanitize a URL. vega-embed injects no <style> (no default style, no tooltip
// handler): the gateway's CSP allows only its own style sheet.

/** @typedef {import("./progress-store.js").Chart} Chart */

const VENDOR = ["/vendor/vega.min.js", "/vendor/vega-lite.min.js", "/vendor/vega-embed.min.js"];

/** @type {Promise<void> | null} */
let loading = null;

/**
 * @param {string} src
 * @returns {Promise<void>}
 */
function loadScript(src) {
  return new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = src;
    s.async = false; // in order: vega-lite needs vega, vega-embed needs both
    s.onload = () => resolve();
    s.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.append(s);
  });
}

/** Loads the vega scripts once. */
function loadVega() {
  loading ??= Promise.all(VENDOR.map(loadScript)).then(() => undefined);
  return loading;
}

const refuseLoad = () => Promise.reject(new Error("charts draw inline data only"));
const NO_LOADER = { load: refuseLoad, sanitize: refuseLoad, http: refuseLoad, file: refuseLoad };

/**
 * Draws the charts not drawn yet into `container` (one figure per chart, keyed by event id).
 * @param {HTMLElement} container
 * @param {Chart[]} charts
 */
export function renderCharts(container, charts) {
  for (const chart of charts) {
    if (container.querySelector(`[data-key="${chart.key}"]`)) continue;
    const figure = document.createElement("figure");
    figure.dataset.key = chart.key;
    const caption = document.createElement("figcaption");
    const title = typeof chart.spec.title === "string" ? chart.spec.title : `Chart ${container.children.length + 1}`;
    caption.textContent = title;
    const target = document.createElement("div");
    figure.append(caption, target);
    container.append(figure);
    if (chart.refused) {
      target.className = "refused";
      target.textContent = `Not drawn: ${chart.refused}.`;
      continue;
    }
    target.setAttribute("role", "img");
    target.setAttribute("aria-label", typeof chart.spec.description === "string" ? chart.spec.description : title);
    loadVega()
      .then(() =>
        /** @type {any} */ (globalThis).vegaEmbed(target, chart.spec, {
          actions: false,
          defaultStyle: false,
          tooltip: false,
          renderer: "svg",
          loader: NO_LOADER,
        }),
      )
      .catch((/** @type {unknown} */ err) => {
        target.className = "refused";
        target.textContent = `Not drawn: ${err instanceof Error ? err.message : String(err)}.`;
      });
  }
}
