/**
 * vitest's order (failed first, then longest first), except that the files whose units prebuild.ts builds
 * in the background run last: by then most of their nvcc builds are in the cache.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const LAST = [/packages\/codegen\/test\/compile\.test\.ts$/];

export default class PrebuiltLast extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const last = (f: TestSpecification) => LAST.some((re) => re.test(f.moduleId));
    return [...sorted.filter((f) => !last(f)), ...sorted.filter(last)];
  }
}
