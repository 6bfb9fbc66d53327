/**
 * The mail port capabilities use (CONTRIBUTING.md, "Where things live": `mail/` implements ports that `core` declares).
 */

/** One message to send; both parts come from the mail module's templates. */
export interface OutgoingMail {
  /** One bare address (`user@example.org`). */
  to: string;
  subject: string;
  text: string;
  html: string;
  /**
   * What the message is (`otp-verify`, `permit-rotate`…): logged, and part of the outbox file name.
   * Characters outside `[a-z0-9-]` become `-`.
   */
  category: string;
}
