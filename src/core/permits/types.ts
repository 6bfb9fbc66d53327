/**
 * The permits capability's port (PERMITS.md; API.md, Permits V2). Inputs arrive shape-checked by the
 * route; every rule of PERMITS.md lives in the service, which throws AppErrors.
 */

/** Body of POST /web2/permit (fields absent for the other actions stay undefined). */
export interface PermitRequestInput {
  requestId: string;
  action: string;
  /** The exact compact JSON text that was hashed. */
  payload: string;
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
}
