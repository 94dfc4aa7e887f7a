import { RinggrainError } from '@ringgrain/core/backend';

/** Where a construct sits: grain, method (or helper), file and 1-based line/column. */
export interface SourceSite {
  readonly grain: string;
  readonly method: string;
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

export type CodegenErrorCode =
  | 'CODEGEN_UNSUPPORTED'
  | 'CODEGEN_TYPE'
  | 'CODEGEN_SOURCE'
  | 'CODEGEN_K2K'
  | 'CODEGEN_TIMER';

/**
 * Thrown for anything the translator cannot or will not translate. The message names the construct,
 * the grain, the method and the source location; the hint says what to write instead.
 */
export class CodegenError extends RinggrainError {
  readonly site: SourceSite | undefined;
  readonly construct: string;

  constructor(code: CodegenErrorCode, construct: string, detail: string, site: SourceSite | undefined, hint: string) {
    const where = site ? `${site.grain}.${site.method} (${site.file}:${site.line}:${site.column}): ` : '';
    super(code, `${where}${detail}`, { hint });
    this.site = site;
    this.construct = construct;
  }
}
