// Draws a progress (progress-store.js) into the page. Event text is untrusted, so every value
// goes in through `textContent` or a checked attribute (a link only to http(s)), never as HTML. Lists are keyed:
// an element is created once per stage, call, source or step and only its text is updated
// afterwards, so a re-render keeps focus, selection and open <details>.

import { codeRunText, formatDuration, safeHref } from "./format.js";

/** @typedef {import("./progress-store.js").Progress} Progress */
/** @typedef {import("./progress-store.js").Stage} Stage */
/** @typedef {import("./progress-store.js").ToolCall} ToolCall */

/**
 * @param {string} id
 * @returns {HTMLElement}
 */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/**
 * An element with a class and text.
 * @param {string} tag
 * @param {string} [cls]
 * @param {string} [text]
 */
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/**
 * Sets text only when it changed (keeps the DOM quiet for assistive technology).
 * @param {Element} e
 * @param {string} text
 */
function setText(e, text) {
  if (e.textContent !== text) e.textContent = text;
}

/**
 * The child of `parent` keyed `key`, created by `make` (and appended) the first time.
 * @param {Element} parent
 * @param {string} key
 * @param {() => HTMLElement} make
 */
function keyed(parent, key, make) {
  const found = [...parent.children].find((c) => c instanceof HTMLElement && c.dataset.key === key);
  if (found) return /** @type {HTMLElement} */ (found);
  const e = make();
  e.dataset.key = key;
  parent.append(e);
  return e;
}

/**
 * @param {Stage} s
 * @param {number} now client time, for a running stage's elapsed time
 */
function stageTiming(s, now) {
  if (s.durationMs !== null) return formatDuration(s.durationMs);
  return `${formatDuration(Math.max(0, now - s.startedAt))} so far`;
}

/**
 * Renders the whole progress.
 * @param {Progress} p
 * @param {number} now
 */
export function render(p, now) {
  renderStages(p, now);
  renderStreaming(p);
  renderSteps(p);
  renderList(
    "notes",
    p.notes.map((n, i) => [String(i), n.text]),
  );
  renderList(
    "errors",
    p.errors.map((e, i) => [String(i), `${e.component ? `${e.component}: ` : ""}${e.message} (${e.code})`]),
  );
  renderSources(p);
  renderAnswer(p);
}

/** Empties every progress list (a new question). */
export function clear() {
  for (const id of ["stages", "steps", "notes", "errors", "sources", "charts", "answer", "trace", "streaming"])
    $(id).replaceChildren();
  for (const id of ["streaming-box", "steps-box", "notes-box", "errors-box", "sources-box", "charts-box", "answer-box"])
    $(id).hidden = true;
}

/**
 * @param {Progress} p
 * @param {number} now
 */
function renderStages(p, now) {
  const list = $("stages");
  for (const s of p.stages) {
    const li = keyed(list, String(s.index), () => {
      const item = el("li", "stage");
      const head = el("div", "stage-head");
      head.append(el("span", "stage-name"), el("span", "badge"), el("span", "timing"));
      item.append(head, el("p", "stage-desc"), el("ul", "calls"));
      return item;
    });
    li.dataset.status = s.status;
    setText(/** @type {Element} */ (li.querySelector(".stage-name")), s.name);
    setText(/** @type {Element} */ (li.querySelector(".badge")), s.status);
    setText(/** @type {Element} */ (li.querySelector(".timing")), stageTiming(s, now));
    setText(/** @type {Element} */ (li.querySelector(".stage-desc")), s.description);
    const calls = /** @type {Element} */ (li.querySelector(".calls"));
    for (const id of s.toolCallIds) {
      const call = p.toolCalls[id];
      if (call) renderCall(calls, call);
    }
  }
  // Calls made outside any stage still show, after the stages.
  const loose = p.toolCallOrder
    .map((id) => p.toolCalls[id])
    .filter((c) => c !== undefined && c.parentStageIndex === null);
  if (loose.length > 0) {
    const li = keyed(list, "loose", () => {
      const item = el("li", "stage");
      item.append(el("div", "stage-head", "tool calls"), el("ul", "calls"));
      return item;
    });
    list.append(li); // stays last
    for (const c of loose) if (c) renderCall(/** @type {Element} */ (li.querySelector(".calls")), c);
  }
}

/**
 * @param {Element} parent
 * @param {ToolCall} c
 */
function renderCall(parent, c) {
  const li = keyed(parent, c.id, () => {
    const item = el("li", "call");
    item.append(el("div", "call-head"), el("pre", "args"), el("div", "result"));
    return item;
  });
  const flags = c.flags.length > 0 ? ` — flagged: ${c.flags.join(", ")}` : "";
  setText(/** @type {Element} */ (li.querySelector(".call-head")), `${c.tool}${flags}`);
  setText(
    /** @type {Element} */ (li.querySelector(".args")),
    JSON.stringify(c.args, null, 1) + (c.argsTruncated ? "\n(arguments cut)" : ""),
  );
  const result = /** @type {HTMLElement} */ (li.querySelector(".result"));
  if (c.result === null) {
    result.dataset.state = "waiting";
    setText(result, "waiting for the result…");
  } else {
    result.dataset.state = c.result.ok ? "ok" : "failed";
    // A code run's own event is whole where the result's content is a preview cut from its start.
    const body = c.code ? codeRunText(c.code) : c.result.content;
    setText(result, `${c.result.ok ? "result" : "failed"} after ${formatDuration(c.result.latencyMs)}: ${body}`);
  }
}

/** @param {Progress} p */
function renderStreaming(p) {
  const text = Object.values(p.streaming).join("\n\n");
  $("streaming-box").hidden = text === "";
  setText($("streaming"), text);
}

/** @param {Progress} p */
function renderSteps(p) {
  $("steps-box").hidden = p.steps.length === 0;
  const list = $("steps");
  p.steps.forEach((s, i) =>
    setText(
      keyed(list, String(i), () => el("li")),
      `${s.role ? `${s.role}: ` : ""}${s.summary}`,
    ),
  );
}

/**
 * A plain keyed text list with its box shown when it has items.
 * @param {string} id
 * @param {Array<[string, string]>} items
 */
function renderList(id, items) {
  $(`${id}-box`).hidden = items.length === 0;
  const list = $(id);
  for (const [key, text] of items)
    setText(
      keyed(list, key, () => el("li")),
      text,
    );
}

/** @param {Progress} p */
function renderSources(p) {
  $("sources-box").hidden = p.sources.length === 0;
  const list = $("sources");
  for (const s of p.sources) {
    keyed(list, s.url ?? s.path ?? s.title, () => {
      const li = el("li");
      const href = safeHref(s.url);
      if (href) {
        const a = /** @type {HTMLAnchorElement} */ (el("a", "", s.title));
        a.href = href;
        a.rel = "noopener noreferrer";
        a.target = "_blank";
        li.append(a);
      } else {
        li.append(el("span", "source-title", s.title));
      }
      if (s.path) li.append(el("span", "source-path", ` (${s.path})`));
      if (s.snippet) li.append(el("p", "snippet", s.snippet));
      return li;
    });
  }
}

/** @param {Progress} p */
function renderAnswer(p) {
  const box = $("answer-box");
  box.hidden = p.final === null;
  if (p.final === null) return;
  box.dataset.status = p.final.status;
  setText($("answer"), p.final.answer || `The session ended: ${p.final.status}.`);
  setText($("trace"), p.final.trace + (p.final.truncated ? "\n(cut; the whole text is kept by the server)" : ""));
}

/**
 * One line for the status live region.
 * @param {Progress} p
 */
export function statusLine(p) {
  const stage = p.currentStageIndex === null ? null : p.stages[p.currentStageIndex];
  switch (p.status) {
    case "idle":
      return "Waiting for the first event…";
    case "running":
      return stage ? `Running: ${stage.name}.` : "Running.";
    case "awaiting_user":
      return "Paused: the agents ask you a question.";
    default: {
      const took = p.startedAt !== null && p.endedAt !== null ? ` in ${formatDuration(p.endedAt - p.startedAt)}` : "";
      return `Session ${p.status}${took}.`;
    }
  }
}
