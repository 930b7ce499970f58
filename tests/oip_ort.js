// ONNX Runtime's answer for a model with one float32 input, for tests/cli_daemon_oip.sh: reads
// the input's raw little-endian bytes and dims, runs onnxruntime-node, writes the first
// output's raw bytes. Usage: node oip_ort.js MODEL IN.raw d0,d1,... OUT.raw
// The module comes from $AF_ORT_DIR (default /tmp/ortnpm/node_modules) or the node paths.
'use strict';
const fs = require('fs');
const path = require('path');
function loadOrt() {
  const dir = process.env.AF_ORT_DIR || '/tmp/ortnpm/node_modules';
  try { return require(path.join(dir, 'onnxruntime-node')); } catch (e) { return require('onnxruntime-node'); }
}
async function main() {
  const [model, inRaw, dims, outRaw] = process.argv.slice(2);
  const ort = loadOrt();
  const s = await ort.InferenceSession.create(model, {logSeverityLevel: 3});
  const b = fs.readFileSync(inRaw);
  const data = new Float32Array(b.buffer, b.byteOffset, b.length / 4);
  const feeds = {[s.inputNames[0]]: new ort.Tensor('float32', data, dims.split(',').map(Number))};
  const out = (await s.run(feeds))[s.outputNames[0]];
  fs.writeFileSync(outRaw, Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength));
}
main().catch((e) => { console.error(e.message || e); process.exit(1); });
