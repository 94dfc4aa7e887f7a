/*
 * Ringgrain CUDA runtime: which lane group holds a key. A class placed on several lane groups (cuda-backend
 * `devices`: one group per listed GPU, each with `hostLanes` host lanes) has its keys spread as core's
 * laneOfKey (core lanes.ts) spreads them over every group's lanes, so the host and a K2K sender agree:
 * the key's lane over all groups' lanes, divided by the lanes a group has. Integer keys only (a string
 * key's lane hashes its UTF-16 text, which the device does not have; the backend refuses string-keyed
 * classes on several groups). No dependencies: the lanes test compiles this file alone with g++.
 */
RG_HD static inline unsigned int rg_mix32(unsigned int h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}
/* core laneOfKey(key, lanes) of an integer key: its low word mixed with its high word times the golden ratio. */
RG_HD static inline unsigned int rg_lane_of_key(long long key, unsigned int lanes) {
  if (lanes <= 1u) return 0u;
  const unsigned long long u = (unsigned long long)key;
  return rg_mix32((unsigned int)u ^ ((unsigned int)(u >> 32) * 0x9e3779b9u)) % lanes;
}
/* The lane group of a key among `groups` groups of `groupLanes` host lanes each. */
RG_HD static inline unsigned int rg_group_of_key(long long key, unsigned int groups, unsigned int groupLanes) {
  return rg_lane_of_key(key, groups * groupLanes) / groupLanes;
}
