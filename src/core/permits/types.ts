/**
 * The permits capability's port (docs/permits.md; docs/http.md, Permits (V2)). Inputs arrive shape-checked by the
 * route; every rule of docs/permits.md lives in the service, which throws AppErrors.
 */

/** Body of POST /web2/permit (fields absent for the other actions stay undefined). */
export interface PermitRequestInput {
  /** Required, except in the legacy form (`permits.acceptLegacy`). */
  requestId?: string;
  action: string;
  /** The exact compact JSON text that was hashed; an object only in the legacy form. */
  payload: string | Record<string, unknown>;
  /** rotate only. */
  email?: string;
  password?: string;
  /** transfer and delegate only: the 8-part data string and its EIP-191 signature. */
  data?: string;
  signature?: string;
}

/** Result of a permit request: a new permit (201) or an exact replay (200). */
export interface RequestedPermit {
  /** False for an exact replay: no new permit, no second email. */
  created: boolean;
  permitId: string;
  action: string;
  clusterId: string;
  /** ISO-8601 UTC. */
  expiresAt: string;
  message: string;
}

/** The permits service (HTTP port). */
export interface PermitsService {
  requestPermit(input: PermitRequestInput): Promise<RequestedPermit>;
  /**
   * Consume a permit (docs/permits.md, "GET /web2/confirm — consumption"). 400 malformed permitId, 404 unknown permit,
   * 403 wrong token (constant-time), 409 expired or no longer applicable; a permit consumed before
   * answers its original result and nothing is re-applied.
   */
  confirmPermit(input: PermitConfirmInput): Promise<PermitConfirmation>;
  /** Check the link and describe the permit without applying anything (same errors as confirm, but 409 is reported as `expired`). */
  previewPermit(input: PermitConfirmInput): Promise<PermitPreview>;
}

/** Input of a confirmation: the two query parameters of the emailed link. */
export interface PermitConfirmInput {
  permitId: string;
  token: string;
}

/** The applied change, as reported by a consumed permit (docs/permits.md, "GET /web2/confirm — consumption": `result`). */
export type PermitResult =
  | { principalId: string; newPublicKey: string }
  | { secretId: number; newOwnerPrincipalId: string; delegatePrincipalId: string | null }
  | { secretId: number; delegatePrincipalId: string | null };

/**
 * Outcome of GET/POST /web2/confirm: consumed on ≥ threshold members (200), or recorded but reached
 * by fewer members so far (202; delivery goes on in the background).
 */
export type PermitConfirmation =
  | { status: 'consumed'; permitId: string; action: string; result: PermitResult }
  | { status: 'pending'; permitId: string; action: string; successCount: number; threshold: number };

/**
 * What the confirmation page shows before anything is applied (`permits.confirmMode: "button"`):
 * the permit after its token was checked. `consumed` permits carry their result.
 */
export interface PermitPreview {
  permitId: string;
  action: string;
  status: 'pending' | 'consumed' | 'expired';
  /** ISO-8601 UTC. */
  expiresAt: string;
  /** One human line describing the change (no secret material). */
  summary: string;
  result?: PermitResult;
}
