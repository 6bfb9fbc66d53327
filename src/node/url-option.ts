/**
 * `--url` of the CLI commands that talk to a running node (docs/configuration.md, "Command line"):
 * the flag, else `QK_URL`, else the first coordinator of `quorumkeep local` on its default ports — so
 * a newcomer's `quorumkeep status` works with no flag at all.
 */
import { Option } from 'commander';
import { DEFAULT_LOCAL_COORDINATOR_URL, URL_ENV } from './local-options.ts';

/** `--url <url>` with its environment variable and default; `what` names the node it reaches. */
export function urlOption(what = 'coordinator base URL'): Option {
  return new Option('--url <url>', `${what} (default: $${URL_ENV}, else ${DEFAULT_LOCAL_COORDINATOR_URL})`).env(URL_ENV).default(DEFAULT_LOCAL_COORDINATOR_URL);
}
