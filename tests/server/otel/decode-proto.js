// An independent reader of what pacer's uploader sends: protobufjs (npm)
// loads the opentelemetry-proto .proto files shipped in an npm package and
// decodes an Export…ServiceRequest.
//
//   node decode-proto.js traces|logs|metrics FILE
//
// Prints {"reencoded": BOOL, "message": OBJECT}: the message as protobufjs
// reads it (64-bit integers as strings, enums as numbers, ids as hex), and
// whether encoding it again gives the same bytes — true only when every
// byte was a field of the .proto, with its wire type, in field order.
'use strict';
const fs = require('fs');
const path = require('path');
const protobuf = require('protobufjs');

const [signal, file] = process.argv.slice(2);
const names = { traces: 'trace', logs: 'logs', metrics: 'metrics' };
const kind = { traces: 'Trace', logs: 'Logs', metrics: 'Metrics' };
if (!names[signal] || !file) {
  console.error('usage: node decode-proto.js traces|logs|metrics FILE');
  process.exit(2);
}
const protos = path.join(__dirname, 'node_modules', '@opentelemetry', 'otlp-grpc-exporter-base', 'build', 'protos');
const root = new protobuf.Root();
root.resolvePath = (origin, target) => path.join(protos, target);
root.loadSync(`opentelemetry/proto/collector/${names[signal]}/v1/${names[signal]}_service.proto`);
root.resolveAll();
const type = root.lookupType(`opentelemetry.proto.collector.${names[signal]}.v1.Export${kind[signal]}ServiceRequest`);
const bytes = fs.readFileSync(file);
const msg = type.decode(bytes);
const again = Buffer.from(type.encode(msg).finish());
const obj = type.toObject(msg, { longs: String, enums: Number, bytes: String, defaults: false });
// ids: base64 → hex, as OTLP JSON writes them
const hexIds = (o) => {
  if (Array.isArray(o)) return o.forEach(hexIds);
  if (o && typeof o === 'object')
    for (const k of Object.keys(o)) {
      if (['traceId', 'spanId', 'parentSpanId'].includes(k) && typeof o[k] === 'string')
        o[k] = Buffer.from(o[k], 'base64').toString('hex');
      else hexIds(o[k]);
    }
};
hexIds(obj);
process.stdout.write(JSON.stringify({ reencoded: again.equals(bytes), message: obj }) + '\n');
