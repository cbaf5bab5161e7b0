import { JetStreamApiError, type JetStreamManager, type StreamInfo } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { ensureStream } from "./provision.js";

const apiError = (code: number, description: string) =>
  new JetStreamApiError({ err_code: code, code: 400, description });
const notFound = () => apiError(10059, "stream not found");
const overlap = () => apiError(10065, "subjects overlap with an existing stream");

/**
 * A stream manager scripted call by call: `infos` answers each info() in turn (a config, or an
 * error to throw), `add` says what add() does. Records every call.
 */
function manager(infos: Array<Record<string, unknown> | Error>, add: () => Promise<unknown>) {
  const calls: string[] = [];
  const jsm = {
    streams: {
      info: async (name: string) => {
        calls.push(`info ${name}`);
        const next = infos.shift();
        if (next === undefined) throw new Error("unexpected info()");
        if (next instanceof Error) throw next;
        return { config: next } as unknown as StreamInfo;
      },
      add: async (cfg: { name: string }) => {
        calls.push(`add ${cfg.name}`);
        return add();
      },
      update: async (name: string) => {
        calls.push(`update ${name}`);
        return {} as StreamInfo;
      },
    },
  } as unknown as Pick<JetStreamManager, "streams">;
  return { jsm, calls };
}

const cfg = { name: "P_TASKS", subjects: ["p.task.>"], duplicate_window: 120_000_000_000 };

describe("ensureStream when another process creates the same stream at the same moment", () => {
  it("takes the server's 'subjects overlap' for a lost race when the stream now exists as ours", async () => {
    const { jsm, calls } = manager([notFound(), { ...cfg, max_msgs: -1 }], () => Promise.reject(overlap()));
    await ensureStream(jsm, cfg);
    expect(calls).toEqual(["info P_TASKS", "add P_TASKS", "info P_TASKS"]);
  });

  it("brings the racer's stream to our settings when they differ", async () => {
    const { jsm, calls } = manager([notFound(), { ...cfg, duplicate_window: 1 }], () => Promise.reject(overlap()));
    await ensureStream(jsm, cfg);
    expect(calls).toEqual(["info P_TASKS", "add P_TASKS", "info P_TASKS", "update P_TASKS"]);
  });

  it("still fails when another stream really holds the subjects (ours does not exist)", async () => {
    const { jsm } = manager([notFound(), notFound()], () => Promise.reject(overlap()));
    await expect(ensureStream(jsm, cfg)).rejects.toThrow(/subjects overlap/);
  });

  it("reports a failed re-read as itself, not as the overlap", async () => {
    const { jsm } = manager([notFound(), apiError(10039, "jetstream not enabled for account")], () =>
      Promise.reject(overlap()),
    );
    await expect(ensureStream(jsm, cfg)).rejects.toThrow(/jetstream not enabled/);
  });

  it("updates after 'name in use' (the racer won with other settings), as before", async () => {
    const { jsm, calls } = manager([notFound()], () =>
      Promise.reject(apiError(10058, "stream name already in use with a different configuration")),
    );
    await ensureStream(jsm, cfg);
    expect(calls).toEqual(["info P_TASKS", "add P_TASKS", "update P_TASKS"]);
  });

  it("passes any other create error on", async () => {
    const { jsm } = manager([notFound()], () => Promise.reject(apiError(10047, "insufficient resources")));
    await expect(ensureStream(jsm, cfg)).rejects.toThrow(/insufficient resources/);
  });
});
