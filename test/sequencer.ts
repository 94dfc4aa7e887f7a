/**
 * vitest's order (failed first, then longest first by the durations it cached on this machine), except that
 * the files known to take longest start first even where there is no cache (a clean clone, CI): with two
 * workers, a 70 s file started last would run on alone at the end. Durations: the JSON report of a run at
 * 7dd65a9 on the 2-core machine (docs/testing.md).
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const FIRST = [
  /test\/conformance\/conformance\.test\.ts$/,
  /test\/cli-audit\/cli-audit\.test\.ts$/,
  /test\/typecheck\/tsc\.test\.ts$/,
  /packages\/codegen\/test\/parallel-audit\.test\.ts$/,
  /packages\/postgres-store\/test\/persistence\.test\.ts$/,
  /packages\/codegen\/test\/compile\.test\.ts$/,
  /test\/storage-audit\/lmdb-keys\.test\.ts$/,
  /test\/examples\/sensor-fleet\.test\.ts$/,
  /test\/k2k-audit\/fifo\.test\.ts$/,
  /packages\/codegen\/test\/schema-fuzz\.test\.ts$/,
  /packages\/cpu-backend\/test\/backend\.test\.ts$/,
  /test\/column-image\/differential\.test\.ts$/,
  /packages\/codegen\/test\/parallel-diff\.test\.ts$/,
  /test\/persistence\/shutdown-flush\.test\.ts$/,
  /test\/shutdown\/signals\.test\.ts$/,
];

export default class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = FIRST.findIndex((re) => re.test(f.moduleId));
      return i < 0 ? FIRST.length : i;
    };
    // Array.prototype.sort is stable: the rest keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
