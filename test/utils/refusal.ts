/**
 * What a refusal says, for tests that tell refusals apart by code and reason — never by message
 * (docs/security.md, "Member refusals"; CONTRIBUTING.md rule 7).
 */
import { AppError, type ErrorCode, type RefusalReason } from '../../src/errors/index.ts';

/** A refusal's code and reason. */
export interface Refused {
  code: ErrorCode;
  reason: RefusalReason | undefined;
}

/** The code and reason `run` was refused with; `'accepted'` when it was not; `{ unexpected }` for anything but an AppError. */
export async function refusalOf(run: () => unknown): Promise<Refused | 'accepted' | { unexpected: string }> {
  try {
    await run();
    return 'accepted';
  } catch (err) {
    return err instanceof AppError ? { code: err.code, reason: err.reason } : { unexpected: String(err) };
  }
}
