/**
 * A small model check of the K2K overflow list's append (device.ts rg_ov_alloc + rg_k2k_publish), no GPU
 * needed: `node --import tsx bench/probes/ov-model.ts`. Every interleaving of N producers appending one node
 * each to one partition's list, under a weak store model: a thread's plain stores wait in a buffer and
 * reach memory in any order (in order per address); an atomic acts on memory at once; a release store
 * or an acq_rel atomic first waits until the thread's earlier stores are in memory. (This is what PTX
 * allows and GPUs do: relaxed operations of one thread to different addresses become visible in any
 * order.) At the end the worker's walk from the stub must reach every node. Prints, for the swap as it
 * was (relaxed atomicExch) and as fixed (atom.acq_rel), how many final states strand nodes and one trace.
 */
type Op = { k: 'clear' } | { k: 'swap' } | { k: 'link' };
interface Thread {
  pc: number;
  prev: number;
  buf: { addr: string; val: number }[];
}
interface State {
  mem: Map<string, number>;
  th: Thread[];
  trace: string[];
}

const PROGRAM: Op[] = [{ k: 'clear' }, { k: 'swap' }, { k: 'link' }];
const STUB = 1;
const nodeOf = (i: number) => i + 2;

function clone(s: State): State {
  return {
    mem: new Map(s.mem),
    th: s.th.map((t) => ({ pc: t.pc, prev: t.prev, buf: t.buf.slice() })),
    trace: s.trace.slice(),
  };
}

function check(
  n: number,
  swapReleases: boolean,
  freshLinks: number,
): { finals: number; stranded: number; example: string[] | undefined } {
  const mem = new Map<string, number>([['tail', 0]]);
  mem.set(`link${STUB}`, 0);
  // A reused node still holds its old link (freshLinks != 0: a free-stack node's next-free link before a8b0ac9,
  // the link of its last list since, when rg_ov_alloc takes it from the ring again); a never-used one holds 0.
  for (let i = 0; i < n; i++) mem.set(`link${nodeOf(i)}`, freshLinks);
  const init: State = { mem, th: Array.from({ length: n }, () => ({ pc: 0, prev: 0, buf: [] })), trace: [] };
  let finals = 0; // interleavings run to the end
  let stranded = 0;
  let example: string[] | undefined;
  const stack: State[] = [init];
  while (stack.length) {
    const s = stack.pop()!;
    let moved = false;
    s.th.forEach((t, i) => {
      // flush any buffered store that is the oldest for its address
      t.buf.forEach((b, j) => {
        if (t.buf.findIndex((x) => x.addr === b.addr) !== j) return;
        const x = clone(s);
        x.th[i]!.buf.splice(j, 1);
        x.mem.set(b.addr, b.val);
        x.trace.push(`P${i}: ${b.addr} = ${b.val} reaches memory`);
        stack.push(x);
        moved = true;
      });
      if (t.pc >= PROGRAM.length) return;
      const op = PROGRAM[t.pc]!;
      const me = nodeOf(i);
      if (op.k === 'clear') {
        const x = clone(s);
        x.th[i]!.buf.push({ addr: `link${me}`, val: 0 });
        x.th[i]!.pc++;
        x.trace.push(`P${i}: rg_ov_alloc clears link${me} (buffered)`);
        stack.push(x);
        moved = true;
      } else if (op.k === 'swap') {
        if (swapReleases && t.buf.length) return; // acq_rel: earlier stores first
        const x = clone(s);
        const old = x.mem.get('tail')!;
        x.mem.set('tail', me);
        x.th[i]!.prev = old === 0 ? STUB : old;
        x.th[i]!.pc++;
        x.trace.push(`P${i}: swap tail → ${me}, prev ${x.th[i]!.prev}`);
        stack.push(x);
        moved = true;
      } else {
        if (t.buf.length) return; // release store: earlier stores first
        const x = clone(s);
        x.mem.set(`link${t.prev}`, me);
        x.th[i]!.pc++;
        x.trace.push(`P${i}: link${t.prev} = ${me} (release)`);
        stack.push(x);
        moved = true;
      }
    });
    if (moved) continue;
    finals++;
    // The worker's walk: from the stub, following links.
    const seen = new Set<number>();
    for (let at = s.mem.get(`link${STUB}`)!; at !== 0 && !seen.has(at); at = s.mem.get(`link${at}`) ?? 0) seen.add(at);
    if (seen.size !== n) {
      stranded++;
      example ??= [...s.trace, `walk from the stub reaches ${seen.size} of ${n} nodes: ${n - seen.size} stranded`];
    }
  }
  return { finals, stranded, example };
}

let bad = false;
for (const fresh of [0, 7]) {
  for (const swapReleases of [false, true]) {
    const r = check(3, swapReleases, fresh);
    const name =
      `${swapReleases ? 'atom.acq_rel.exch (fixed)' : 'atomicExch, relaxed (3e6fe6f)'}, ` +
      `nodes ${fresh ? 'from the free stack' : 'from the bump area'}`;
    console.log(`${name}: ${r.finals} interleavings, ${r.stranded} end with nodes stranded`);
    if (r.example && !swapReleases && fresh === 0) console.log(`  e.g.\n    ${r.example.join('\n    ')}`);
    if (swapReleases && r.stranded) bad = true;
    if (!swapReleases && !r.stranded) bad = true;
  }
}
process.exit(bad ? 1 : 0);
