/** Pure crypto functions on Uint8Array (CONTRIBUTING.md rule 10). The only importer of @noble/*. */
export * from './bytes.ts';
export * from './hash.ts';
export * from './secp256k1.ts';
export * from './password.ts';
export * from './otp.ts';
export * from './ed25519.ts';
export * from './mlkem.ts';
export * from './at-rest.ts';
export * from './payload-envelope.ts';
export * from './sealed-box.ts';
export * from './shamir.ts';
export * from './gf256.ts';
export * from './eip191.ts';
export * from './lru.ts';
export * from './spool-cipher.ts';
export * from './chunk-crypto.ts';
export * from './verify-pool.ts';
