// Median latency of ONNX Runtime (onnxruntime-node) on one model, as users tune it: intra-op
// threads N, inter-op 1, graphOptimizationLevel 'all', sequential execution. Inputs:
// NAME=FILE.npy feeds the file's tensor (float32, float64, int64, int32, int8, uint8, bool);
// NAME=d0,d1,... feeds a float32 tensor whose element i is sin(0.37 i) / 2 (bench_real feeds the
// same). --output-dir DIR writes DIR/<output>.npy from the last round (names sanitised as
// arenaflow does). Prints one JSON line, with the process's memory (Linux /proc/self/status):
// rss_start_kb before onnxruntime is loaded (node alone), rss_created_kb after the session is
// created (before any run), rss_end_kb after the rounds, peak_rss_kb (VmHWM).
// Usage: node ort_latency.js MODEL NAME=d0,d1,...|NAME=FILE.npy ... --threads N --rounds R
//                            [--warmup W] [--output-dir DIR]
// The module is looked up in $AF_ORT_DIR (default /tmp/ortnpm/node_modules), then in the usual
// node paths (npm install onnxruntime-node --ignore-scripts).
'use strict';
const fs = require('fs');
const path = require('path');

function procKb(key) {
  try {
    const m = fs.readFileSync('/proc/self/status', 'utf8').match(new RegExp('^' + key + ':\\s+(\\d+)', 'm'));
    return m ? +m[1] : 0;
  } catch (e) { return 0; }
}
function loadOrt() {
  const dir = process.env.AF_ORT_DIR || '/tmp/ortnpm/node_modules';
  try { return require(path.join(dir, 'onnxruntime-node')); } catch (e) { return require('onnxruntime-node'); }
}

// NumPy .npy (format 1.0-3.0, little-endian, C order) <-> {type, dims, data}.
const NPY = {'<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array], '|i1': ['int8', Int8Array],
  '|u1': ['uint8', Uint8Array], '|b1': ['bool', Uint8Array]};
function readNpy(file) {
  const b = fs.readFileSync(file);
  if (b.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(file + ': not a .npy file');
  const major = b[6], hl = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const off = major === 1 ? 10 : 12, h = b.toString('latin1', off, off + hl);
  const descr = h.match(/'descr':\s*'([^']+)'/)[1];
  if (/'fortran_order':\s*True/.test(h)) throw new Error(file + ': Fortran order');
  const dims = h.match(/'shape':\s*\(([^)]*)\)/)[1].split(',').filter((s) => s.trim()).map(Number);
  const t = NPY[descr];
  if (!t) throw new Error(file + ': dtype ' + descr + ' not handled');
  const raw = b.subarray(off + hl);
  const bytes = new Uint8Array(raw.length);
  bytes.set(raw);
  return {type: t[0], dims, data: new t[1](bytes.buffer, 0, raw.length / t[1].BYTES_PER_ELEMENT)};
}
function writeNpy(file, type, dims, data) {
  const descr = Object.keys(NPY).find((k) => NPY[k][0] === type);
  if (!descr) throw new Error('output dtype ' + type + ' not handled');
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let h = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  while ((10 + h.length + 1) % 64) h += ' ';
  h += '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0; head.writeUInt16LE(h.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(h, 'latin1'), body]));
}
function fileName(name, i) {
  let s = name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 200);
  if (s.startsWith('.')) s = '_' + s.slice(1);
  return (s || `output_${i}`) + '.npy';
}

async function main() {
  const rssStart = procKb('VmRSS');
  const args = process.argv.slice(2);
  const model = args[0];
  let threads = 1, rounds = 300, warmup = 50, outDir = null;
  const inputs = {};
  for (let i = 1; i < args.length; i++) {
    if (args[i] === '--threads') threads = +args[++i];
    else if (args[i] === '--rounds') rounds = +args[++i];
    else if (args[i] === '--warmup') warmup = +args[++i];
    else if (args[i] === '--output-dir') outDir = args[++i];
    else { const k = args[i].indexOf('='); inputs[args[i].slice(0, k)] = args[i].slice(k + 1); }
  }
  const ort = loadOrt();
  const s = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    executionMode: 'sequential'});
  const rssCreated = procKb('VmRSS');
  const feeds = {};
  for (const name of s.inputNames) {
    const spec = inputs[name];
    if (!spec) throw new Error(`give input '${name}' as ${name}=d0,d1,... or ${name}=FILE.npy`);
    if (spec.endsWith('.npy')) {
      const t = readNpy(spec);
      feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
      continue;
    }
    const dims = spec.split(',').map(Number);
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = 0.5 * Math.sin(0.37 * i);
    feeds[name] = new ort.Tensor('float32', data, dims);
  }
  let out = null;
  for (let i = 0; i < warmup; i++) out = await s.run(feeds);
  const t = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < rounds; i++) {
    const a = process.hrtime.bigint();
    out = await s.run(feeds);
    t.push(Number(process.hrtime.bigint() - a) / 1e3);
  }
  const cpu = process.cpuUsage(cpu0);
  if (outDir)
    s.outputNames.forEach((n, i) => writeNpy(path.join(outDir, fileName(n, i)), out[n].type,
      out[n].dims, out[n].data));
  t.sort((a, b) => a - b);
  console.log(JSON.stringify({model: path.basename(model), threads, median_us: t[t.length >> 1],
    p10_us: t[Math.floor(t.length * 0.1)], p90_us: t[Math.floor(t.length * 0.9)],
    cpu_us_per_round: (cpu.user + cpu.system) / rounds, rss_start_kb: rssStart,
    rss_created_kb: rssCreated, rss_end_kb: procKb('VmRSS'), peak_rss_kb: procKb('VmHWM')}));
}
main().catch((e) => { console.error('ort_latency: ' + e.message); process.exit(1); });
