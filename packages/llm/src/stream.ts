import { AgentmeshError } from "@agentmesh/contracts";

/** Hands one streamed delta to the caller's callback; a callback that throws fails the call as our bug. */
export function forwardDelta(onToken: (delta: string) => void, delta: string): void {
  try {
    onToken(delta);
  } catch (err) {
    throw new AgentmeshError("internal", `the onToken callback threw: ${(err as Error).message}`, { retryable: false });
  }
}
