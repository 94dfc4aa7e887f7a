import { createHash } from 'node:crypto';
import { FENCE_TABLE, StateStoreError } from '@ringgrain/core/store';
import { KIND } from './errors.ts';

/**
 * PostgreSQL keeps the first 63 bytes of an identifier (NAMEDATALEN - 1) and drops the rest without a
 * word, so two grain classes whose names share 63 bytes would share a table. A name that fits is used as
 * it is; a longer one becomes its first 46 bytes, `_` and 16 hex digits of its SHA-256: distinct names,
 * distinct tables, the same table on every run.
 */
export const PG_MAX_IDENT = 63;
const HASH_HEX = 16;

export const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const REMINDERS_SUFFIX = '__reminders';

/** The table name a (checked, ASCII) name is stored under. */
export function tableIdent(name: string): string {
  if (name.length <= PG_MAX_IDENT) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, HASH_HEX);
  return `${name.slice(0, PG_MAX_IDENT - HASH_HEX - 1)}_${hash}`;
}

/** The state table of grain class `name`. */
export function stateIdent(name: string): string {
  return tableIdent(name);
}

/** The reminders table of grain class `name`. */
export function remindersIdent(name: string): string {
  return tableIdent(`${name}${REMINDERS_SUFFIX}`);
}

/** Refuses a table name that is not an identifier, or that a class's reminders table could be confused with. */
export function checkTableName(name: string): void {
  if (!NAME.test(name))
    throw new StateStoreError('STATE_TABLE_SPEC', KIND, `table name ${JSON.stringify(name)} is not an identifier`, {
      hint: 'use the grain class name',
    });
  if (name === FENCE_TABLE)
    throw new StateStoreError('STATE_TABLE_SPEC', KIND, `table name "${name}" is the store's partition-fence table`, {
      hint: 'rename the grain class',
    });
  if (name.endsWith(REMINDERS_SUFFIX)) {
    throw new StateStoreError(
      'STATE_TABLE_SPEC',
      KIND,
      `table name ${JSON.stringify(name)} ends in "${REMINDERS_SUFFIX}", the name of the reminders table ` +
        `of class "${name.slice(0, -REMINDERS_SUFFIX.length)}"`,
      {
        hint: `rename the grain class so it does not end in ${REMINDERS_SUFFIX}`,
      },
    );
  }
}

/** Refuses a schema name that is not an identifier or that PostgreSQL would cut (two stores would share it). */
export function checkSchemaName(schema: string): void {
  if (!NAME.test(schema))
    throw new StateStoreError('STATE_TABLE_SPEC', KIND, `schema ${JSON.stringify(schema)} is not an identifier`, {
      hint: 'letters, digits and _',
    });
  if (schema.length > PG_MAX_IDENT) {
    throw new StateStoreError(
      'STATE_TABLE_SPEC',
      KIND,
      `schema "${schema}" is ${schema.length} bytes; PostgreSQL keeps ${PG_MAX_IDENT} and would cut it to ` +
        `"${schema.slice(0, PG_MAX_IDENT)}" (shared with any schema of that beginning)`,
      {
        hint: `use a schema name of at most ${PG_MAX_IDENT} bytes`,
      },
    );
  }
}
