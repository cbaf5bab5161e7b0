// Vega-Lite charts from `visualization` events, each drawn in its own chart frame
// (chart-frame.html): a document in `<iframe sandbox="allow-scripts">`, without
// allow-same-origin, so its origin is opaque and it can read neither the page nor its API key.
// Only that document may eval (vega compiles its expressions with `Function`); the page's own CSP
// has no 'unsafe-eval' and never loads vega. The page posts the spec to the frame, which answers
// with its height or an error. A spec naming a `data.url` is refused here, before any frame is
// made (progress-store.js's chartRefusal), and again in the frame, whose loader loads nothing and
// whose CSP lets it connect nowhere.

/** @typedef {import("./progress-store.js").Chart} Chart */

const FRAME_URL = "/assets/chart-frame.html";
/** The tallest a chart frame may ask to be, in CSS pixels. */
const MAX_HEIGHT = 4000;

/**
 * A chart waiting for, or drawn in, its frame.
 * @typedef {{ frame: HTMLIFrameElement, target: HTMLElement, spec: Record<string, unknown>, label: string }} Drawing
 */

/** @type {WeakMap<object, Drawing>} by the frame's window */
const drawings = new WeakMap();

/**
 * Shows why a chart is not drawn, in place of its frame.
 * @param {HTMLElement} target
 * @param {string} why
 */
function refuse(target, why) {
  target.replaceChildren();
  target.removeAttribute("role");
  target.removeAttribute("aria-label");
  target.className = "refused";
  target.textContent = `Not drawn: ${why}.`;
}

/**
 * One message from a chart frame. Only a frame this module made is heard: the message's source
 * must be that frame's window, whose opaque origin arrives as "null".
 * @param {MessageEvent} ev
 */
function onFrameMessage(ev) {
  if (ev.origin !== "null" || ev.source === null) return;
  const d = drawings.get(ev.source);
  const win = d?.frame.contentWindow;
  if (!d || !win || win !== ev.source || !d.frame.isConnected) return;
  const data = ev.data;
  if (typeof data !== "object" || data === null) return;
  if (data.type === "ready") {
    // the spec is no secret; an opaque origin cannot be named as the target
    win.postMessage({ type: "render", spec: d.spec, label: d.label }, "*");
  } else if (data.type === "size" && typeof data.height === "number" && Number.isFinite(data.height)) {
    d.frame.style.height = `${Math.min(MAX_HEIGHT, Math.max(0, Math.ceil(data.height)))}px`;
  } else if (data.type === "error") {
    drawings.delete(ev.source);
    refuse(d.target, typeof data.message === "string" ? data.message.slice(0, 300) : "the chart could not be drawn");
  }
}

window.addEventListener("message", onFrameMessage);

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
      refuse(target, chart.refused);
      continue;
    }
    const frame = document.createElement("iframe");
    frame.className = "chart-frame";
    frame.setAttribute("sandbox", "allow-scripts");
    frame.title = `Chart: ${title}`;
    frame.src = FRAME_URL;
    target.append(frame);
    const label = typeof chart.spec.description === "string" ? chart.spec.description : title;
    if (frame.contentWindow) drawings.set(frame.contentWindow, { frame, target, spec: chart.spec, label });
  }
}
