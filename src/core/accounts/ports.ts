/**
 * The ports the accounts capability declares (CONTRIBUTING.md, "Where things live"): argon2id and
 * Ed25519 work (src/node wires src/crypto behind a concurrency limit), the mailer, and slot 0's durable
 * claims (src/store).
 */
import type { OutgoingMail } from '../mail-port.ts';
import type { OtpPurpose } from './records.ts';

/** Password and OTP hashing (argon2id behind a concurrency limit), Ed25519 checks, OTP codes. */
export interface AccountCrypto {
  hashPassword(password: string): Promise<string>;
  verifyPassword(password: string, phc: string): Promise<boolean>;
  /** Same cost as a real verify, always false: unknown accounts cost what known ones do. */
  verifyDummy(password: string): Promise<false>;
  generateOtp(): string;
  hashOtp(code: string, context: string): Promise<string>;
  verifyOtp(code: string, context: string, phc: string): Promise<boolean>;
  isEd25519PublicKeyHex(hex: string): boolean;
  verifyEd25519(publicKeyHex: string, message: string, signatureHex: string): boolean;
}

/** Mail delivery and the OTP templates. */
export interface AccountMail {
  send(message: OutgoingMail): Promise<unknown>;
  otpMail(input: { purpose: OtpPurpose; code: string; ttlMinutes: number; publicUrl: string }): { subject: string; text: string; html: string };
}

/** Slot 0's durable claims (its `claims` sublevel): JSON or plain strings by name; used only on slot 0. */
export interface AccountClaims {
  get(name: string): Promise<string | undefined>;
  put(name: string, value: string): Promise<void>;
}
