// Median latency of ONNX Runtime (onnxruntime-node) on one model, as users tune it: intra-op
// threads N, inter-op 1, graphOptimizationLevel 'all', sequential execution. Inputs: every f32
// element i is sin(0.37 i) / 2 (bench_real feeds the same). Prints one JSON line.
// Usage: node ort_latency.js MODEL NAME=d0,d1,... [NAME=...] --threads N --rounds R [--warmup W]
// The module is looked up in $AF_ORT_DIR (default /tmp/ortnpm/node_modules), then in the usual
// node paths (npm install onnxruntime-node --ignore-scripts).
'use strict';
const path = require('path');
function loadOrt() {
  const dir = process.env.AF_ORT_DIR || '/tmp/ortnpm/node_modules';
  try { return require(path.join(dir, 'onnxruntime-node')); } catch (e) { return require('onnxruntime-node'); }
}
async function main() {
  const args = process.argv.slice(2);
  const model = args[0];
  let threads = 1, rounds = 300, warmup = 50;
  const inputs = {};
  for (let i = 1; i < args.length; i++) {
    if (args[i] === '--threads') threads = +args[++i];
    else if (args[i] === '--rounds') rounds = +args[++i];
    else if (args[i] === '--warmup') warmup = +args[++i];
    else { const [n, d] = args[i].split('='); inputs[n] = d.split(',').map(Number); }
  }
  const ort = loadOrt();
  const s = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    executionMode: 'sequential'});
  const feeds = {};
  for (const name of s.inputNames) {
    const dims = inputs[name];
    if (!dims) throw new Error(`give the dims of input '${name}' as ${name}=d0,d1,...`);
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = 0.5 * Math.sin(0.37 * i);
    feeds[name] = new ort.Tensor('float32', data, dims);
  }
  for (let i = 0; i < warmup; i++) await s.run(feeds);
  const t = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < rounds; i++) {
    const a = process.hrtime.bigint();
    await s.run(feeds);
    t.push(Number(process.hrtime.bigint() - a) / 1e3);
  }
  const cpu = process.cpuUsage(cpu0);
  t.sort((a, b) => a - b);
  console.log(JSON.stringify({model: path.basename(model), threads, median_us: t[t.length >> 1],
    p10_us: t[Math.floor(t.length * 0.1)], p90_us: t[Math.floor(t.length * 0.9)],
    cpu_us_per_round: (cpu.user + cpu.system) / rounds}));
}
main().catch((e) => { console.error('ort_latency: ' + e.message); process.exit(1); });
