// The chart frame: draws one Vega-Lite chart that the web page posts to it. The gateway serves
// this document with its own CSP: vega compiles its expressions with `Function`, so scripts here
// may eval, while the page itself may not. The page shows it in `<iframe sandbox="allow-scripts">`
// (and its CSP sandboxes it too, however it is opened): its origin is opaque, so it can read no
// storage of the page (no API key) and call no API, and `connect-src 'none'` lets no spec fetch
// anything. A spec must carry its data inline: one naming a `data.url` is refused, and vega's
// loader is replaced by one that loads nothing. vega-embed injects no <style> (no default style,
// no tooltip handler): the CSP allows only the gateway's own style sheets.
//
// Messages: the frame posts {type: "ready"} once its scripts ran; the page answers with
// {type: "render", spec, label}; the frame posts {type: "size", height} (again whenever the chart
// resizes) or {type: "error", message}. Only messages from the parent window with the gateway's
// origin are read.

(() => {
  "use strict";

  /** The page's origin: this document's URL keeps it although the document's own origin is opaque. */
  const PAGE_ORIGIN = new URL(location.href).origin;
  const target = /** @type {HTMLElement} */ (document.getElementById("chart"));
  let drawn = false;

  const refuseLoad = () => Promise.reject(new Error("charts draw inline data only"));
  const NO_LOADER = { load: refuseLoad, sanitize: refuseLoad, http: refuseLoad, file: refuseLoad };

  /**
   * A `data` value that loads from a URL (`{ url }`, or a list holding one), at any depth.
   * @param {unknown} v
   * @returns {boolean}
   */
  function hasDataUrl(v) {
    if (Array.isArray(v)) return v.some(hasDataUrl);
    if (typeof v !== "object" || v === null) return false;
    return Object.entries(v).some(([k, x]) => (k === "data" && namesUrl(x)) || hasDataUrl(x));
  }

  /**
   * @param {unknown} d
   * @returns {boolean}
   */
  function namesUrl(d) {
    if (Array.isArray(d)) return d.some(namesUrl);
    return typeof d === "object" && d !== null && "url" in d;
  }

  /** @param {Record<string, unknown>} message */
  function tell(message) {
    window.parent.postMessage(message, PAGE_ORIGIN);
  }

  function tellSize() {
    tell({ type: "size", height: Math.ceil(document.documentElement.getBoundingClientRect().height) });
  }

  /** @param {unknown} err */
  function fail(err) {
    const message = err instanceof Error ? err.message : String(err);
    target.replaceChildren();
    tell({ type: "error", message: message.slice(0, 300) });
  }

  /**
   * @param {unknown} spec
   * @param {unknown} label
   */
  function draw(spec, label) {
    if (typeof spec !== "object" || spec === null || Array.isArray(spec))
      return fail("the chart is not a Vega-Lite spec");
    if (hasDataUrl(spec)) return fail("the chart loads data from a URL; only inline data is drawn");
    if (typeof label === "string" && label !== "") target.setAttribute("aria-label", label.slice(0, 500));
    const embed = /** @type {any} */ (globalThis).vegaEmbed;
    if (typeof embed !== "function") return fail("the chart library did not load");
    /** @type {Promise<unknown>} */ (
      embed(target, spec, { actions: false, defaultStyle: false, tooltip: false, renderer: "svg", loader: NO_LOADER })
    )
      .then(() => {
        tellSize();
        new window.ResizeObserver(tellSize).observe(target);
      })
      .catch(fail);
  }

  window.addEventListener("message", (ev) => {
    if (ev.source !== window.parent || ev.origin !== PAGE_ORIGIN) return;
    const data = ev.data;
    if (typeof data !== "object" || data === null || data.type !== "render" || drawn) return;
    drawn = true;
    draw(data.spec, data.label);
  });

  if (window.parent !== window) tell({ type: "ready" });
})();
