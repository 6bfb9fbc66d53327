/**
 * Why a record is refused (docs/security.md, "Who may write what"): a closed set of codes, so that
 * callers, metrics and tests tell refusals apart by code, never by message text. A refusal may carry
 * a detail for the log (never matched on) and may be transient: the record could pass later, once
 * the member holds what it lacks (`waitFor`), its clock has caught up, or a chain answers.
 */

/** Every reason a member refuses a record. */
export const REFUSAL_CODES = [
  // Structure and origin (src/core/replication/validate.ts).
  'not_an_object',
  'malformed',
  'bad_seq',
  'bad_hlc',
  'unknown_origin',
  'retired_origin',
  'unknown_kind',
  'writer_not_allowed',
  'hlc_ahead',
  'bad_key',
  'bad_signature',
  'bad_body',
  'check_failed',
  // Common body checks.
  'key_mismatch',
  'another_cluster',
  // Versions of sequenced kinds (src/core/replication/versions.ts).
  'prev_missing',
  'prev_mismatch',
  'bad_version',
  'unknown_transition',
  'fields_changed',
  'terminal_state',
  'bad_vouch',
  'bad_time',
  // Client evidence (src/core/sessions/evidence.ts) and what it authorises.
  'evidence_invalid',
  'evidence_missing',
  'session_ended',
  'not_owner',
  'names_another_secret',
  'names_another_value',
  'string_used',
  'use_dropped',
  'owner_as_delegate',
  // Permits.
  'permit_not_consumed',
  'permit_not_adjacent',
  'permit_mismatch',
  'token_mismatch',
  'permit_expired',
  'payload_mismatch',
  'bad_request_signature',
  'legacy_refused',
  'result_mismatch',
  // Principals.
  'key_proof_invalid',
  'key_change_refused',
  'registration_not_later',
  // Other kinds.
  'bad_usage_key',
  'another_coordinator',
  'cycle_unaligned',
  'cycle_not_begun',
  'refund_exceeds_count',
  'not_member_slot',
  'member_own_slot_only',
  'not_written_by_member',
  'quorum_proof_invalid',
  'expires_before_issued',
  'key_exists',
  'chain_not_enabled',
  'chain_unavailable',
  'not_whitelisted',
  'not_on_chain',
  'type_not_served',
  'synced_elsewhere',
  // Acknowledged losses (src/core/secrets/lost-records.ts).
  'loss_unattested',
] as const;

/** A reason a member refuses a record. */
export type RefusalCode = (typeof REFUSAL_CODES)[number];

/** A refusal as a record kind's check returns it. */
export interface RecordRefusal {
  code: RefusalCode;
  /** What exactly, for the log; never matched on. */
  detail?: string;
  /**
   * True when the record may pass later without changing: the member lacks something it needs to
   * decide (a previous version, a permit), its clock is behind, or a chain did not answer. A transient
   * refusal is held back and tried again; it never counts as a verdict on the record.
   */
  transient?: boolean;
  /** For a missing previous record: the one awaited, by its place in its origin's log. */
  waitFor?: { origin: string; seq: number };
}

/** A permanent refusal. */
export function refusal(code: RefusalCode, detail?: string): RecordRefusal {
  return detail === undefined ? { code } : { code, detail };
}

/** A transient refusal (see {@link RecordRefusal.transient}). */
export function heldBack(code: RefusalCode, waitFor?: { origin: string; seq: number }, detail?: string): RecordRefusal {
  return { code, transient: true, ...(waitFor ? { waitFor } : {}), ...(detail === undefined ? {} : { detail }) };
}

/** The reason string a refusal travels as: its code, then the detail after `: `. */
export function reasonText(r: RecordRefusal): string {
  return r.detail ? `${r.code}: ${r.detail}`.slice(0, 300) : r.code;
}
