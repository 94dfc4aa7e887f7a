import { Writable } from 'node:stream';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const SKIP = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg']);

/** One pino JSON line as a line a person reads: time, level, message, then the other fields as key=value. */
export function formatLogLine(json: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const t = typeof o['time'] === 'number' ? new Date(o['time']).toISOString().slice(11, 23) : '';
  const level = LEVELS[o['level'] as number] ?? String(o['level']);
  const extra = Object.entries(o)
    .filter(([k]) => !SKIP.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${t} ${level.padEnd(5)} ${String(o['msg'] ?? '')}${extra ? `  ${extra}` : ''}`;
}

/** The default log destination on a terminal: readable lines on stderr (piped, the logger writes JSON). */
export function readableStderr(): Writable {
  let rest = '';
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const l of lines) if (l) process.stderr.write(`${formatLogLine(l)}\n`);
      done();
    },
  });
}
