import { INBOX_SENDERS, type InboxInput } from "@agentmesh/contracts";

/** The sender token an inbox input is published under: the role for a result, else who may write that kind. */
export function senderOf(input: InboxInput, client: boolean): string {
  switch (input.kind) {
    case "result":
      return input.role;
    case "start":
    case "timer":
      return INBOX_SENDERS.coordinator;
    case "user_reply":
    case "cancel":
      return client ? INBOX_SENDERS.client : INBOX_SENDERS.coordinator;
    default: {
      const never: never = input;
      return String(never);
    }
  }
}

/**
 * Why an input may not come from the subject's sender, or null when it may: a result only from
 * the role it names; start and timer only from a coordinator; user_reply and cancel from a
 * client or a coordinator. (That the role is the one the awaited task went to is the workflow
 * runtime's check: only it knows the task.)
 */
export function senderMismatch(input: InboxInput, sender: string): string | null {
  const ok = (() => {
    switch (input.kind) {
      case "result":
        return sender === input.role;
      case "start":
      case "timer":
        return sender === INBOX_SENDERS.coordinator;
      case "user_reply":
      case "cancel":
        return sender === INBOX_SENDERS.client || sender === INBOX_SENDERS.coordinator;
      default: {
        const never: never = input;
        return Boolean(never);
      }
    }
  })();
  if (ok) return null;
  const claimed = input.kind === "result" ? ` from role ${input.role}` : "";
  return `a ${input.kind} input${claimed} arrived on the inbox subject of sender "${sender}"`;
}
