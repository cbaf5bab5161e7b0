// The page's controller: asks a question (POST /api/v1/query), follows the session's events
// through the SSE follower into the progress store, and draws them. The session id lives in
// the URL (`#session=<sid>`), so a reload replays the session's events from the start,
// rebuilding the same view, then follows it live. The API key is kept in sessionStorage: for
// this tab only, forgotten when it closes. When a session ends, its answer (or how it ended) is
// said once through a polite live region; the streaming text is not a live region (it would
// chatter).

import { followStream } from "./sse.js";
import { applyEvent, emptyProgress, isFinished } from "./progress-store.js";
import { clear, render, statusLine } from "./view.js";
import { renderCharts } from "./charts.js";

const KEY_STORAGE = "agentmesh.apiKey";

/** @typedef {import("./progress-store.js").Progress} Progress */

/**
 * @template {HTMLElement} T
 * @param {string} id
 * @returns {T}
 */
const $ = (id) => /** @type {T} */ (document.getElementById(id));

const form = /** @type {HTMLFormElement} */ ($("ask-form"));
const question = /** @type {HTMLTextAreaElement} */ ($("question"));
const workflow = /** @type {HTMLSelectElement} */ ($("workflow"));
const supervisorOptions = $("supervisor-options");
const mode = /** @type {HTMLSelectElement} */ ($("mode"));
const depth = /** @type {HTMLSelectElement} */ ($("depth"));
const scenario = /** @type {HTMLSelectElement} */ ($("scenario"));
const apiKey = /** @type {HTMLInputElement} */ ($("api-key"));
const askButton = /** @type {HTMLButtonElement} */ ($("ask"));
const cancelButton = /** @type {HTMLButtonElement} */ ($("cancel"));
const replyForm = /** @type {HTMLFormElement} */ ($("reply-form"));
const reply = /** @type {HTMLTextAreaElement} */ ($("reply"));

/** How much of an answer the live region reads out; the whole answer is on the page. */
const ANNOUNCE_MAX = 2000;

/** @type {Progress} */
let progress = emptyProgress();
/** @type {AbortController | null} */
let following = null;
/** A connection problem shown in the status line until the stream is open again. */
let connection = "";
let drawQueued = false;
/** The session end (`progress.final`) the live region last announced: a redraw says nothing twice. */
let announced = /** @type {Progress["final"]} */ (null);

/** Request headers carrying the API key, when one is set. */
function authHeaders() {
  const key = apiKey.value.trim();
  /** @type {Record<string, string>} */
  const h = {};
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

/**
 * The error message of a failed API response (the gateway's `{"error":{"message"}}` shape).
 * @param {Response | { status: number, body: string }} res
 */
async function errorText(res) {
  const body =
    "body" in res && typeof res.body === "string"
      ? res.body
      : await /** @type {Response} */ (res).text().catch(() => "");
  try {
    const parsed = JSON.parse(body);
    if (typeof parsed?.error?.message === "string") return parsed.error.message;
  } catch {
    /* not JSON: fall through */
  }
  return `The server answered ${res.status}.`;
}

/** @param {string} text */
function setStatus(text) {
  const s = $("status");
  if (s.textContent !== text) s.textContent = text;
}

/** Draws once per frame however many events arrived. */
function draw() {
  if (drawQueued) return;
  drawQueued = true;
  requestAnimationFrame(() => {
    drawQueued = false;
    const now = Date.now();
    render(progress, now);
    renderCharts($("charts"), progress.charts);
    $("charts-box").hidden = progress.charts.length === 0;
    const paused = progress.awaiting !== null;
    const clarify = $("clarify");
    if (paused !== !clarify.hidden) {
      const hadFocus = clarify.contains(document.activeElement);
      clarify.hidden = !paused;
      if (paused) reply.focus();
      else if (hadFocus && cancelButton.hidden) focusAnswer();
      else if (hadFocus) cancelButton.focus();
    }
    $("clarify-question").textContent = progress.awaiting?.question ?? "";
    syncControls(following !== null && !isFinished(progress));
    setStatus(connection || statusLine(progress));
    announce();
  });
}

/**
 * Shows Cancel while a session runs (Ask is disabled meanwhile). Focus on a control that goes
 * away moves to the one that takes its place: Ask to Cancel when a session starts, Cancel to the
 * answer when it ends, so a keyboard user never lands on the page's body.
 * @param {boolean} live
 */
function syncControls(live) {
  const wasLive = !cancelButton.hidden;
  const hadFocus = document.activeElement === askButton || document.activeElement === cancelButton;
  cancelButton.hidden = !live;
  askButton.disabled = live;
  if (!hadFocus || live === wasLive) return;
  if (live) cancelButton.focus();
  else focusAnswer();
}

/** Focuses the answer when it is shown, else the question. */
function focusAnswer() {
  const box = $("answer-box");
  if (box.hidden) question.focus();
  else box.focus();
}

/** Says once, through the announcer live region, that the session ended: its answer, or how it ended. */
function announce() {
  const final = progress.final;
  if (final === announced) return;
  announced = final;
  if (final === null) return;
  let text;
  if (final.status === "completed" && final.answer) {
    const cut = final.answer.length > ANNOUNCE_MAX;
    text = `Answer ready. ${final.answer.slice(0, ANNOUNCE_MAX)}${cut ? "… The whole answer is on the page." : ""}`;
  } else if (final.status === "cancelled") {
    text = "The session was cancelled.";
  } else {
    text = `The session ended: ${final.status}.${final.answer ? ` ${final.answer.slice(0, ANNOUNCE_MAX)}` : ""}`;
  }
  $("announcer").textContent = text;
}

/**
 * Follows a session's stream: POST the question (`start`), or GET its events (a reload).
 * @param {(lastEventId: string | null) => Promise<Response>} connect
 */
async function follow(connect) {
  following?.abort();
  const ac = new AbortController();
  following = ac;
  const end = await followStream({
    connect,
    signal: ac.signal,
    isLast: (m) => m.event === "complete",
    onState: (state, detail) => {
      connection = state === "open" ? "" : `Connection lost (${detail ?? "unknown"}); reconnecting…`;
      draw();
    },
    onMessage: (m) => {
      let event;
      try {
        event = JSON.parse(m.data);
      } catch {
        return; // not one of ours
      }
      if (m.event === "session") {
        adoptSession(event.session_id);
        return;
      }
      progress = applyEvent(progress, event);
      draw();
    },
  });
  if (following === ac) following = null;
  if (end.reason === "refused") connection = await errorText(end);
  draw();
}

/**
 * Puts the session id in the URL so a reload comes back to it.
 * @param {unknown} sid
 */
function adoptSession(sid) {
  if (typeof sid !== "string" || sid === progress.sessionId) return;
  progress = { ...progress, sessionId: sid };
  history.replaceState(null, "", `#session=${encodeURIComponent(sid)}`);
}

/** @param {string} sid */
function eventsUrl(sid) {
  return `/api/v1/sessions/${encodeURIComponent(sid)}/events`;
}

/**
 * GET a session's events after `lastEventId` (all of them when null).
 * @param {string} sid
 * @param {string | null} lastEventId
 */
function resume(sid, lastEventId) {
  /** @type {Record<string, string>} */
  const headers = { Accept: "text/event-stream", ...authHeaders() };
  if (lastEventId) headers["Last-Event-ID"] = lastEventId;
  return fetch(eventsUrl(sid), { headers, cache: "no-store" });
}

/**
 * Shows the supervisor's options only for the supervisor workflow, and its research settings
 * only when the research agent may answer (the router picks, or Research is chosen).
 */
function showOptions() {
  supervisorOptions.hidden = workflow.value !== "supervisor";
  const research = mode.value === "" || mode.value === "research";
  $("depth-field").hidden = !research;
  $("scenario-field").hidden = !research;
}

/**
 * The supervisor's options for the query body: only those shown, and the agent only when one
 * is chosen (Automatic leaves the choice to the router).
 * @returns {{ mode?: string, depth?: string, scenario?: string }}
 */
function chosenOptions() {
  if (supervisorOptions.hidden) return {};
  const research = !$("depth-field").hidden;
  return {
    ...(mode.value ? { mode: mode.value } : {}),
    ...(research ? { depth: depth.value, scenario: scenario.value } : {}),
  };
}

/** @param {SubmitEvent} ev */
async function ask(ev) {
  ev.preventDefault();
  rememberKey();
  const text = question.value.trim();
  // the blackboard workflow asks for at least 3 characters; every other takes any question
  const min = workflow.value === "blackboard" ? 3 : 1;
  if (text.length < min) {
    setStatus(min === 1 ? "Write a question first." : `The question needs at least ${min} characters.`);
    return;
  }
  // The same client id on every retry of the POST: the gateway treats it as the idempotency key.
  const taskId = crypto.randomUUID();
  const options = chosenOptions();
  startView(null, text);
  await follow((lastEventId) => {
    const sid = progress.sessionId;
    if (sid) return resume(sid, lastEventId);
    return fetch("/api/v1/query", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream", ...authHeaders() },
      body: JSON.stringify({ query: text, workflow: workflow.value || undefined, task_id: taskId, ...options }),
    });
  });
}

/**
 * Resets the view for a session (null before the server named it).
 * @param {string | null} sid
 * @param {string} asked
 */
function startView(sid, asked) {
  clear();
  progress = emptyProgress(sid);
  $("announcer").textContent = "";
  connection = "";
  const a = $("asked");
  a.textContent = asked;
  a.hidden = asked === "";
  if (sid === null) history.replaceState(null, "", location.pathname + location.search);
  draw();
}

/** Rebuilds the view of the session named in the URL, then follows it live. */
async function resumeFromUrl() {
  const sid = new URLSearchParams(location.hash.slice(1)).get("session");
  if (!sid) return;
  startView(sid, "");
  void fetch(`/api/v1/sessions/${encodeURIComponent(sid)}`, { headers: authHeaders() })
    .then(async (res) => {
      if (!res.ok) return;
      const summary = await res.json();
      if (typeof summary?.question === "string" && progress.sessionId === sid) {
        $("asked").textContent = summary.question;
        $("asked").hidden = false;
      }
    })
    .catch(() => {});
  await follow((lastEventId) => resume(sid, lastEventId));
}

/**
 * POSTs to one of the session's action routes and reports a refusal in the status line.
 * @param {"reply" | "cancel"} action
 * @param {Record<string, string>} body
 */
async function sessionAction(action, body) {
  const sid = progress.sessionId;
  if (!sid) return false;
  const res = await fetch(`/api/v1/sessions/${encodeURIComponent(sid)}/${action}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...authHeaders() },
    body: JSON.stringify(body),
  }).catch(() => null);
  if (res === null) {
    setStatus(`Could not reach the server to ${action}.`);
    return false;
  }
  if (!res.ok) {
    setStatus(await errorText(res));
    return false;
  }
  return true;
}

/** @param {SubmitEvent} ev */
async function sendReply(ev) {
  ev.preventDefault();
  const text = reply.value.trim();
  if (!text) return;
  const button = /** @type {HTMLButtonElement} */ ($("send-reply"));
  button.disabled = true;
  if (await sessionAction("reply", { text })) {
    reply.value = "";
    setStatus("Answer sent; the agents continue.");
  }
  button.disabled = false;
}

async function cancel() {
  if (await sessionAction("cancel", { reason: "cancelled from the web page" })) setStatus("Cancelling…");
}

/**
 * Keeps the API key in sessionStorage, for this tab until it closes (or forgets it when the
 * field is emptied). Never in localStorage, which outlives the tab.
 */
function rememberKey() {
  const key = apiKey.value.trim();
  try {
    if (key) window.sessionStorage.setItem(KEY_STORAGE, key);
    else window.sessionStorage.removeItem(KEY_STORAGE);
  } catch {
    /* storage refused (a privacy setting): the key stays in the field only */
  }
}

/**
 * The key kept for this tab. A key an earlier version of the page left in localStorage is moved
 * to sessionStorage once and deleted from localStorage.
 */
function keptKey() {
  try {
    const old = localStorage.getItem(KEY_STORAGE);
    if (old !== null) {
      if (window.sessionStorage.getItem(KEY_STORAGE) === null) window.sessionStorage.setItem(KEY_STORAGE, old);
      localStorage.removeItem(KEY_STORAGE);
    }
    return window.sessionStorage.getItem(KEY_STORAGE) ?? "";
  } catch {
    return "";
  }
}

/** Fills the workflow picker from GET /api/v1/workflows, the server's default selected, and shows its options. */
async function loadWorkflows() {
  const res = await fetch("/api/v1/workflows", { headers: authHeaders() }).catch(() => null);
  if (!res?.ok) {
    setStatus(res ? await errorText(res) : "Could not reach the server.");
    return;
  }
  const body = await res.json();
  const list = Array.isArray(body?.workflows) ? body.workflows : [];
  workflow.replaceChildren(
    ...list.map((/** @type {{ name: string, description?: string }} */ w) => {
      const o = document.createElement("option");
      o.value = w.name;
      o.textContent = w.description ? `${w.name} — ${w.description}` : w.name;
      o.selected = w.name === body.default;
      return o;
    }),
  );
  showOptions();
}

apiKey.value = keptKey();
apiKey.addEventListener("change", () => {
  rememberKey();
  void loadWorkflows();
});
workflow.addEventListener("change", showOptions);
mode.addEventListener("change", showOptions);
form.addEventListener("submit", (ev) => void ask(ev));
replyForm.addEventListener("submit", (ev) => void sendReply(ev));
cancelButton.addEventListener("click", () => void cancel());
window.addEventListener("hashchange", () => void resumeFromUrl());
// A running stage's "so far" time moves on its own.
setInterval(() => {
  if (following !== null && progress.currentStageIndex !== null) draw();
}, 1000);
void loadWorkflows();
void resumeFromUrl();
