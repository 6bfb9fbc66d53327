/**
 * The compiled secrets controller (docs/web3.md, "Test chain"): `contracts/SecretsController.sol`
 * built by `npm run build:contract` (scripts/build-contract.ts) into `artifacts/secrets-controller.json`,
 * which ships with the package so a node can deploy the controller on a local chain. A stand-in with
 * the published controller's interface, never the production contract.
 */
import type { Hex } from 'viem';
import artifact from './artifacts/secrets-controller.json' with { type: 'json' };
import { secretsControllerAbi } from './secrets-controller-abi.ts';

/** The compiled controller as a deployer needs it. */
export interface SecretsControllerArtifact {
  contractName: string;
  /** The source, relative to the repository. */
  sourcePath: string;
  /** Full solc version string, e.g. `0.8.37+commit.f401782d.Emscripten.clang`. */
  solcVersion: string;
  evmVersion: string;
  /**
   * The interface, typed for viem: the published ABI of src/evm/secrets-controller-abi.ts, which the
   * compiled ABI equals up to order and `internalType` (test/integration/chain.test.ts checks it).
   */
  abi: typeof secretsControllerAbi;
  /** Creation bytecode, `0x`-prefixed; the constructor takes no arguments (then call `initialize`). */
  bytecode: Hex;
}

/** The committed build of the test secrets controller. */
export const secretsControllerArtifact: SecretsControllerArtifact = {
  contractName: artifact.contractName,
  sourcePath: artifact.sourcePath,
  solcVersion: artifact.solcVersion,
  evmVersion: artifact.evmVersion,
  abi: secretsControllerAbi,
  bytecode: artifact.bytecode as Hex,
};
