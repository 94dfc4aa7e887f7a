import { layoutOf, type Schema, type ScalarKind, type StructSchema } from '@ringgrain/core/backend';

/**
 * C spelling of each scalar kind: the C type of the same size, alignment and values (static_asserts in
 * every unit hold it to layoutOf). No <stdint.h>: NVRTC compiles without system headers; `signed char`
 * because the signedness of plain `char` is the platform's choice.
 */
export const C_SCALAR: { readonly [K in ScalarKind]: string } = {
  f32: 'float',
  f64: 'double',
  i8: 'signed char',
  u8: 'unsigned char',
  i16: 'short',
  u16: 'unsigned short',
  i32: 'int',
  u32: 'unsigned int',
  bool: 'bool',
};

/**
 * C++ keywords and alternative tokens, and macros the unit's headers (math.h under g++/nvcc) define:
 * a schema field of one of these names is a valid JS identifier but not a C member name.
 */
const RESERVED = new Set(
  (
    'alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class ' +
    'compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype ' +
    'default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline ' +
    'int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register ' +
    'reinterpret_cast requires restrict return short signed sizeof static static_assert static_cast struct switch ' +
    'template this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile ' +
    'wchar_t while xor xor_eq NULL EOF INFINITY NAN HUGE_VAL HUGE_VALF HUGE_VALL assert errno offsetof stdin stdout ' +
    'stderr unix linux'
  ).split(' '),
);

/**
 * The C member name of schema field `name`: the name itself, or `rgk_<name>` where the name is reserved in
 * C++ (above), begins with `__` or `_` and a capital (reserved: `__LINE__` and the like are macros), names a macro
 * family of the
 * unit or its headers (`RG_`, `M_`, `FP_`, `FLT_`, `DBL_`), or begins with `rgk_` itself (so the mapping is
 * one-to-one). Every emitter that names a member of a user struct goes through this.
 */
export function cMember(name: string): string {
  return RESERVED.has(name) || /^(__|_[A-Z]|rgk_|RG_|M_|FP_|FLT_|DBL_)/.test(name) ? `rgk_${name}` : name;
}

/**
 * The one schema → C struct emitter, used for user schemas and protocol structs alike. Every struct
 * (and every vec, which is `{ length; items[max] }`) gets a named type; sizes, alignments and field
 * offsets are asserted against `layoutOf`, so the C compiler refuses a unit whose layout drifted.
 */
export class CTypes {
  private readonly names = new Map<Schema, string>();
  private readonly used = new Set<string>();
  readonly defs: string[] = [];

  /** The C type name of a struct or vec schema, emitting its definition the first time. */
  named(schema: Schema, suggested: string): string {
    const hit = this.names.get(schema);
    if (hit) return hit;
    let name = suggested;
    for (let i = 2; this.used.has(name); i++) name = `${suggested}_${i}`;
    this.used.add(name);
    this.names.set(schema, name);
    if (schema.kind === 'struct') this.emitStruct(name, schema);
    else if (schema.kind === 'vec') this.emitVec(name, schema);
    return name;
  }

  nameOf(schema: Schema): string | undefined {
    return this.names.get(schema);
  }

  /** `float xs[4]`, `rg_X_pos pos`, `double m[3][3]`: a member declaration of `schema` named `field`. */
  decl(schema: Schema, field: string, owner: string): string {
    switch (schema.kind) {
      case 'scalar':
        return `${C_SCALAR[schema.scalar]} ${field}`;
      case 'array':
        return this.decl(schema.element, `${field}[${schema.length}]`, owner);
      case 'vec':
      case 'struct':
        return `${this.named(schema, `${owner}_${field.replace(/\[.*$/, '')}`)} ${field}`;
    }
  }

  private emitStruct(name: string, s: StructSchema): void {
    const members = s.fieldNames.map((f) => `  ${this.decl(s.fields[f] as Schema, cMember(f), name)};`);
    const l = layoutOf(s);
    const asserts = [
      `static_assert(sizeof(${name}) == ${l.size}, "${name}: size differs from layoutOf");`,
      `static_assert(alignof(${name}) == ${l.align}, "${name}: alignment differs from layoutOf");`,
    ];
    for (const f of l.fields ?? [])
      asserts.push(
        `RG_OFFSET_ASSERT(${name}, ${cMember(f.name)}, ${f.offset}, "${name}.${f.name}: offset differs from ` +
          `layoutOf");`,
      );
    this.defs.push(`struct ${name} {\n${members.join('\n')}\n};\n${asserts.join('\n')}`);
  }

  private emitVec(name: string, s: Schema & { kind: 'vec' }): void {
    const l = layoutOf(s);
    const items = this.decl(s.element, `items[${s.maxLength}]`, name);
    const itemsAt = l.fields?.[1]?.offset ?? 0;
    this.defs.push(
      `struct ${name} {\n  unsigned int length;\n  ${items};\n};\n` +
        `static_assert(sizeof(${name}) == ${l.size}, "${name}: size differs from layoutOf");\n` +
        `static_assert(alignof(${name}) == ${l.align}, "${name}: alignment differs from layoutOf");\n` +
        `RG_OFFSET_ASSERT(${name}, items, ${itemsAt}, "${name}.items: offset differs from layoutOf");`,
    );
  }
}
