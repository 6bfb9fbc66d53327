/** The cluster (the only importer of libp2p). */
export * from './cluster.ts';
export * from './identity.ts';
export { PROTOCOLS, recordsTopic } from './protocols.ts';
