/**
 * `--url` of the CLI commands that talk to a running node (docs/configuration.md, "Command line"):
 * the flag, else `QK_URL`, else the first coordinator of `quorumkeep local` on its default ports — so
 * a newcomer's `quorumkeep status` works with no flag at all. The client verbs
 * (src/cli/client-commands.ts) look in the same places, with the session's coordinator before the default.
 */
import { Option } from 'commander';
import { httpUrlOf } from '../config/index.ts';
import { DEFAULT_HTTP_BASE_PORT } from './cluster-init.ts';

/** The environment variable that names the coordinator (or node) the CLI talks to, instead of `--url`. */
export const URL_ENV = 'QK_URL';
/** `quorumkeep local`'s first coordinator on its default ports. */
export const DEFAULT_COORDINATOR_URL = httpUrlOf('127.0.0.1', DEFAULT_HTTP_BASE_PORT);

/** `--url <url>` with its environment variable and default (commander's help names both); `what` names the node it reaches. */
export function urlOption(what = 'coordinator base URL'): Option {
  return new Option('--url <url>', what).env(URL_ENV).default(DEFAULT_COORDINATOR_URL);
}
