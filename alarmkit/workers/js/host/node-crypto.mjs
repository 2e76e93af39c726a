// `node:crypto` with its random members drawn from the simulation's seed (the global crypto's
// getRandomValues, sandbox.mjs); hashes, HMACs, ciphers and keys are Node's own
import * as real from "node:crypto";
import { Buffer } from "node:buffer";

const rand = (n) => globalThis.crypto.getRandomValues(new Uint8Array(n));
export function randomBytes(n, cb) {
  const b = Buffer.from(rand(n));
  if (typeof cb === "function") {
    globalThis.setTimeout(() => cb(null, b), 0);
    return undefined;
  }
  return b;
}
export function randomFillSync(buf, offset = 0, size) {
  const view = new Uint8Array(buf.buffer || buf, buf.byteOffset || 0, buf.byteLength);
  const end = size === undefined ? view.length : offset + size;
  view.set(rand(end - offset), offset);
  return buf;
}
export function randomFill(buf, offset, size, cb) {
  const done = [offset, size, cb].find((x) => typeof x === "function");
  randomFillSync(buf, typeof offset === "number" ? offset : 0, typeof size === "number" ? size : undefined);
  globalThis.setTimeout(() => done(null, buf), 0);
}
export const randomUUID = () => globalThis.crypto.randomUUID();
export const getRandomValues = (a) => globalThis.crypto.getRandomValues(a);
export function randomInt(min, max, cb) {
  if (max === undefined || typeof max === "function") [min, max, cb] = [0, min, max];
  const n = min + Math.floor(Math.random() * (max - min));
  if (typeof cb === "function") {
    globalThis.setTimeout(() => cb(null, n), 0);
    return undefined;
  }
  return n;
}
export const webcrypto = globalThis.crypto;
export const {
  createHash, createHmac, createCipheriv, createDecipheriv, createSign, createVerify, createPublicKey,
  createPrivateKey, createSecretKey, createECDH, createDiffieHellman, getHashes, getCiphers, getCurves, hash,
  hkdf, hkdfSync, pbkdf2, pbkdf2Sync, scrypt, scryptSync, sign, verify, timingSafeEqual, subtle, constants,
  KeyObject, X509Certificate, Hash, Hmac, publicEncrypt, privateDecrypt, privateEncrypt, publicDecrypt,
  generateKeyPair, generateKeyPairSync, generateKey, generateKeySync, generatePrime, generatePrimeSync,
  checkPrime, checkPrimeSync, getFips, setFips, secureHeapUsed, getCipherInfo, diffieHellman, Certificate,
} = real;
export default { ...real, randomBytes, randomFillSync, randomFill, randomUUID, getRandomValues, randomInt, webcrypto };
