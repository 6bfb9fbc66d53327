/**
 * The Web2 accounts capability's port for the HTTP layer (docs/http.md, Web2 accounts). Inputs arrive
 * already shape-checked by the routes (zod); every rule about their meaning lives in the service.
 * Failures are AppErrors: BAD_REQUEST/VALIDATION_FAILED 400, UNAUTHORIZED 401, FORBIDDEN 403,
 * PASSWORD_RESET_REQUIRED 403 (a verified account no password is valid for until a reset), NOT_FOUND
 * 404, CONFLICT 409, RATE_LIMITED 429 (with `retryAfterSeconds`), QUORUM_UNAVAILABLE and
 * SLOT0_UNAVAILABLE 503.
 */

/** `complete` all members stored the key; `partial` ≥ threshold; `pending` some; `failed` none. */
export type NodeRegistrationStatus = 'complete' | 'partial' | 'pending' | 'failed';

/** Result of POST /web2/auth/register. */
export interface RegisterResult {
  /** 201 for a new principal (its first registration), 200 for a re-register of an unverified email. */
  created: boolean;
  principalId: string;
  message: string;
}

/** Result of a key registration or its retry. */
export interface KeyRegistrationResult {
  principalId: string;
  emailHex: string;
  nodeRegistrationStatus: NodeRegistrationStatus;
  /** Node addresses of members that did not store the key. */
  failedNodes: string[];
  /** Node address → reason, for the failed members. */
  nodeErrors: Record<string, string>;
}

/** Result of GET /web2/auth/node-registration-status. */
export interface NodeRegistrationView {
  principalId: string;
  nodeRegistrationStatus: NodeRegistrationStatus;
  successNodes: string[];
  failedNodes: string[];
}

/** The accounts service. Emails are given raw; the service normalises (trim + lowercase). */
export interface AccountsService {
  register(email: string, password: string): Promise<RegisterResult>;
  verifyEmail(email: string, otp: string): Promise<{ principalId: string; emailVerified: true }>;
  resendOtp(email: string): Promise<{ message: string }>;
  forgotPassword(email: string): Promise<{ message: string }>;
  resetPassword(email: string, otp: string, newPassword: string): Promise<{ message: string }>;
  verifyCredentials(email: string, password: string): Promise<{ valid: true; principalId: string }>;
  registerKey(principalId: string, password: string, publicKey: string, signature: string): Promise<KeyRegistrationResult>;
  retryNodeRegistration(principalId: string): Promise<{ principalId: string; nodeRegistrationStatus: NodeRegistrationStatus; failedNodes: string[]; message?: string }>;
  nodeRegistrationStatus(principalId: string): Promise<NodeRegistrationView>;
  requestDeletion(email: string, password: string, principalId: string): Promise<{ message: string }>;
  confirmDeletion(email: string, otp: string): Promise<{ success: true; message: string }>;
  /** Lookup by normalised email (given as UTF-8 hex of the normalised email, or the plain email). */
  findByEmail(query: { emailHex?: string; email?: string }): Promise<{ principalId: string; emailHex: string }>;
}
