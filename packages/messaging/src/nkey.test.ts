import { describe, expect, it } from "vitest";
import { nkeys } from "@nats-io/transport-node";
import { userNKey } from "./nkey.js";
import { publicKeyOfSeed } from "./nats-config.js";

const te = new TextEncoder();
const td = new TextDecoder();

describe("userNKey (node:crypto Ed25519 over an nkeys seed)", () => {
  it("gives the public key the nkeys library derives, and signatures the nkeys library verifies", () => {
    for (let i = 0; i < 20; i++) {
      const kp = nkeys.createUser();
      const seed = td.decode(kp.getSeed());
      const key = userNKey(seed);
      expect(key.publicKey).toBe(kp.getPublicKey());
      const nonce = te.encode(`nonce-${i}-${Math.random()}`);
      const sig = key.sign(nonce);
      // Ed25519 is deterministic: the same bytes as tweetnacl's
      expect(Buffer.from(sig).toString("hex")).toBe(Buffer.from(kp.sign(nonce)).toString("hex"));
      expect(nkeys.fromPublic(kp.getPublicKey()).verify(nonce, sig)).toBe(true);
      expect(nkeys.fromPublic(kp.getPublicKey()).verify(te.encode("another nonce"), sig)).toBe(false);
    }
  });

  it("reads a seed with surrounding whitespace (as a seed file holds it)", () => {
    const kp = nkeys.createUser();
    expect(userNKey(`  ${td.decode(kp.getSeed())}\n`).publicKey).toBe(kp.getPublicKey());
  });

  it("refuses what is not a user seed, saying why", () => {
    const seed = td.decode(nkeys.createUser().getSeed());
    // one character changed: the checksum no longer matches
    const flipped = seed.slice(0, 10) + (seed[10] === "A" ? "B" : "A") + seed.slice(11);
    expect(() => userNKey(flipped)).toThrow(/checksum/);
    expect(() => userNKey(td.decode(nkeys.createAccount().getSeed()))).toThrow(/not a user seed/);
    expect(() => userNKey(nkeys.createUser().getPublicKey())).toThrow(/not an NKey seed/);
    expect(() => userNKey("SU-not-base32!")).toThrow(/base32/);
    expect(() => publicKeyOfSeed(td.decode(nkeys.createAccount().getSeed()))).toThrow(
      /the NATS NKey seed is not a user seed/,
    );
  });
});
