import { createPrivateKey, createPublicKey, sign, type KeyObject } from "node:crypto";

// A NATS user NKey read from its seed, signing with node:crypto's Ed25519. The client's own
// authenticator derives the key pair with the pure-JS tweetnacl on every connect and again to
// sign (≈ 40 ms of CPU each at start-up); OpenSSL does both in microseconds. The encoding is the
// nkeys one: base32 (RFC 4648, no padding) of prefix byte(s), the 32 raw bytes and a CRC-16/XMODEM
// (little-endian) over them.

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
/** The nkeys prefix bytes of a seed and of a user key. */
const PREFIX_SEED = 18 << 3;
const PREFIX_USER = 20 << 3;
/** The DER of a PKCS#8 Ed25519 private key up to its 32-byte seed (RFC 8410). */
const PKCS8_ED25519 = Buffer.from("302e020100300506032b657004220420", "hex");

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

function base32Decode(text: string): Uint8Array {
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of text) {
    const v = BASE32.indexOf(ch);
    if (v < 0) throw new Error("invalid base32 character");
    value = (value << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((value >> bits) & 0xff);
    }
  }
  return Uint8Array.from(out);
}

function base32Encode(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = ((value << 8) | b) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32[(value >> bits) & 31];
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** A user's NKey: its public key (`U…`) and Ed25519 signatures with its private key. */
export interface UserNKey {
  readonly publicKey: string;
  sign(data: Uint8Array): Uint8Array;
}

/** Reads a user seed (`SU…`); throws, saying why, when it is not one. */
export function userNKey(seed: string): UserNKey {
  const raw = base32Decode(seed.trim());
  // two prefix bytes, the 32-byte Ed25519 seed, the checksum
  if (raw.length !== 36) throw new Error("not an NKey seed (wrong length)");
  const body = raw.subarray(0, 34);
  if (crc16(body) !== ((raw[34] ?? 0) | ((raw[35] ?? 0) << 8))) throw new Error("invalid checksum");
  const b0 = raw[0] ?? 0;
  const b1 = raw[1] ?? 0;
  if ((b0 & 248) !== PREFIX_SEED) throw new Error("not an NKey seed");
  if ((((b0 & 7) << 5) | ((b1 & 248) >> 3)) !== PREFIX_USER) throw new Error("not a user seed");
  const key: KeyObject = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519, body.subarray(2)]),
    format: "der",
    type: "pkcs8",
  });
  // the SubjectPublicKeyInfo DER ends with the 32-byte public key
  const pub = createPublicKey(key).export({ format: "der", type: "spki" }).subarray(-32);
  const encoded = new Uint8Array(35);
  encoded[0] = PREFIX_USER;
  encoded.set(pub, 1);
  const crc = crc16(encoded.subarray(0, 33));
  encoded[33] = crc & 0xff;
  encoded[34] = crc >> 8;
  return {
    publicKey: base32Encode(encoded),
    sign: (data) => new Uint8Array(sign(null, data, key)),
  };
}
