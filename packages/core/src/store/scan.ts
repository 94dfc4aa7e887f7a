import type { StateKey, StatePage, StateTable, StateTableSpec } from './types.ts';
import type { GrainDef } from '../grain.ts';
import { layoutOf } from '../schema/layout.ts';

/** Every stored state of a table, page by page (preload): each key once, in key order. */
export async function* scanPages<K extends StateKey>(
  table: StateTable<K>,
  pageSize = 65_536,
): AsyncGenerator<StatePage<K>> {
  let after: K | undefined;
  for (;;) {
    const page: StatePage<K> = await table.scan(after === undefined ? { limit: pageSize } : { after, limit: pageSize });
    if (page.keys.length > 0) yield page;
    if (page.next === undefined) return;
    after = page.next;
  }
}

/**
 * The table spec of a grain class. `format: 'layout'` (the state struct's fixed binary layout) fixes the
 * state size; `'msgpack'` leaves it variable.
 */
export function stateTableSpec(def: GrainDef, format: 'layout' | 'msgpack'): StateTableSpec {
  const base = { name: def.name, keyKind: def.keyKind };
  return format === 'layout' ? { ...base, stateSize: layoutOf(def.state).size } : base;
}
