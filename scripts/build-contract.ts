/**
 * `npm run build:contract`: compile the test secrets controller (contracts/SecretsController.sol)
 * with the `solc` npm package — which bundles its compiler, so nothing is downloaded — and write
 * the artifact src/evm/artifacts/secrets-controller.json, which ships with the package (read through
 * `secretsControllerArtifact` of src/evm) and which the tests deploy on anvil. Commit both the source
 * and the artifact; docs/web3.md § "Test chain".
 */
import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import solc from 'solc';

const REPO = resolve(fileURLToPath(import.meta.url), '../..');

/** Source unit name, relative to the repository, so the bytecode's metadata hash is path-independent. */
export const CONTRACT_SOURCE = 'contracts/SecretsController.sol';
/** Where the artifact is written, relative to the repository. */
export const CONTRACT_ARTIFACT = 'src/evm/artifacts/secrets-controller.json';
/** The contract in {@link CONTRACT_SOURCE}. */
export const CONTRACT_NAME = 'SecretsController';
// Cancun: supported by anvil's default (latest) hardfork and by Base; pinned so a newer solc's
// default target cannot silently emit opcodes an older node lacks.
const EVM_VERSION = 'cancun';
const OPTIMIZER_RUNS = 200;

/** The committed artifact's shape. */
export interface ContractArtifact {
  contractName: string;
  sourcePath: string;
  /** Full solc version string, e.g. `0.8.37+commit.f401782d.Emscripten.clang`. */
  solcVersion: string;
  evmVersion: string;
  optimizerRuns: number;
  abi: unknown[];
  /** Creation bytecode, `0x`-prefixed. */
  bytecode: `0x${string}`;
}

interface SolcOutput {
  errors?: { severity: 'error' | 'warning' | 'info'; formattedMessage: string }[];
  contracts?: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
}

/** Compile {@link CONTRACT_SOURCE}; throws with solc's messages on any error (warnings too: keep it clean). */
export async function compileSecretsController(): Promise<ContractArtifact> {
  const content = await readFile(resolve(REPO, CONTRACT_SOURCE), 'utf8');
  const input = {
    language: 'Solidity',
    sources: { [CONTRACT_SOURCE]: { content } },
    settings: {
      evmVersion: EVM_VERSION,
      optimizer: { enabled: true, runs: OPTIMIZER_RUNS },
      outputSelection: { [CONTRACT_SOURCE]: { [CONTRACT_NAME]: ['abi', 'evm.bytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)) as string) as SolcOutput;
  const problems = (output.errors ?? []).filter((e) => e.severity !== 'info');
  if (problems.length > 0) throw new Error(`solc reported:\n${problems.map((e) => e.formattedMessage).join('\n')}`);
  const contract = output.contracts?.[CONTRACT_SOURCE]?.[CONTRACT_NAME];
  if (!contract) throw new Error(`solc produced no ${CONTRACT_NAME}`);
  return {
    contractName: CONTRACT_NAME,
    sourcePath: CONTRACT_SOURCE,
    solcVersion: solc.version() as string,
    evmVersion: EVM_VERSION,
    optimizerRuns: OPTIMIZER_RUNS,
    abi: contract.abi,
    bytecode: `0x${contract.evm.bytecode.object}`,
  };
}

/** The artifact as written to disk (stable formatting, so a rebuild without changes is no diff). */
export function formatArtifact(artifact: ContractArtifact): string {
  return `${JSON.stringify(artifact, null, 2)}\n`;
}

if (import.meta.main) {
  const artifact = await compileSecretsController();
  await writeFile(resolve(REPO, CONTRACT_ARTIFACT), formatArtifact(artifact));
  console.log(`wrote ${CONTRACT_ARTIFACT}: ${artifact.contractName}, solc ${artifact.solcVersion}, ${(artifact.bytecode.length - 2) / 2} bytes`);
}
