/** Outgoing mail: the mailer (outbox or SMTP transport) and the message templates. See docs/mail.md. */
export {
  createMailer,
  DEFAULT_SEND_TIMEOUT_MS,
  type Mailer,
  type MailerDeps,
  type MailerOptions,
  type OutgoingMail,
  type SentMail,
  type SmtpOptions,
} from './mailer.ts';
export {
  escapeHtml,
  otpMail,
  permitMail,
  SERVICE_NAME,
  type OtpMailInput,
  type OtpPurpose,
  type PermitAction,
  type PermitMailInput,
  type RenderedMail,
} from './templates.ts';
