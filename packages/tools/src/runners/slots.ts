import { totalmem } from "node:os";

/** A numbered permit: `slot` is in [0, size) and unique among the permits held at one time. */
export interface Slot {
  readonly slot: number;
  release(): void;
}

/** A counting semaphore whose permits are numbered, served first come, first served. */
export interface Slots {
  /** A free slot, waiting in line for one; rejects with the signal's reason if it aborts first. */
  acquire(signal?: AbortSignal): Promise<Slot>;
  /** Slots held now. */
  held(): number;
}

/** Creates `size` numbered slots. */
export function createSlots(size: number): Slots {
  const free = Array.from({ length: Math.max(1, Math.floor(size)) }, (_, i) => i);
  const queue: Array<(slot: number) => void> = [];
  let held = 0;
  const grant = (slot: number): Slot => {
    held++;
    let released = false;
    return {
      slot,
      release() {
        if (released) return;
        released = true;
        held--;
        const next = queue.shift();
        if (next) next(slot);
        else free.push(slot);
      },
    };
  };
  return {
    held: () => held,
    acquire(signal) {
      signal?.throwIfAborted();
      const slot = free.shift();
      if (slot !== undefined) return Promise.resolve(grant(slot));
      return new Promise<Slot>((resolve, reject) => {
        const waiter = (s: number): void => {
          signal?.removeEventListener("abort", onAbort);
          resolve(grant(s));
        };
        const onAbort = (): void => {
          const i = queue.indexOf(waiter);
          if (i >= 0) queue.splice(i, 1);
          reject(signal?.reason as Error);
        };
        signal?.addEventListener("abort", onAbort, { once: true });
        queue.push(waiter);
      });
    },
  };
}

/**
 * How many sandboxes of `addressSpaceBytes` fit in this machine's (or container's) memory:
 * at least 1, at most 4. A 1 GiB pod gets 1; RLIMIT_AS is the cap each process may reach.
 */
export function defaultSandboxSlots(addressSpaceBytes: number): number {
  const constrained = process.constrainedMemory?.() ?? 0;
  const limit = constrained > 0 && constrained < totalmem() ? constrained : totalmem();
  return Math.max(1, Math.min(4, Math.floor(limit / addressSpaceBytes)));
}
