export type {
  Cluster,
  ClusterConnection,
  ClusterConnectionEvents,
  Entry,
  JoinRequest,
  PartitionTable,
  SiloInfo,
} from './types.ts';
export { EntryKind } from './types.ts';
export { assignPartitions, keyHash, partitionOf, type Assignment } from './partition.ts';
export { ClusterRouter, LOCAL, type ClusterEvents, type RouterHost } from './router.ts';
export * from './errors.ts';
export { allocateOwnership, writeOwnership, OwnershipView, MAX_PARTITIONS } from './ownership.ts';
