// A real OTLP/gRPC receiver for the tests of pacer's gRPC uploader — test
// infrastructure, not a part of pacer. @grpc/grpc-js (npm) serves the three
// Export services (opentelemetry.proto.collector.{trace,logs,metrics}.v1),
// their messages as the OpenTelemetry JS SDK compiles them from
// opentelemetry-proto (@opentelemetry/otlp-transformer's generated module,
// which knows partial_success); google.rpc.Status and RetryInfo come from
// googleapis' .proto files (google-proto-files), loaded by protobufjs.
//
//   node grpc-receiver.js --log FILE [--port N] [--tls CERT KEY]
//
// Prints "listening PORT" once it serves (loopback only). Every call is one
// JSON line appended to FILE before it is answered:
//   {"t" (ms since the epoch), "path", "signal", "batch", "stored", "duplicate", "code",
//    "metadata": {name: value} (what grpc-js hands the application),
//    "headers": {name: value} (the request's HTTP/2 headers as they came),
//    "flag": the message's compressed flag, "deadlineMs": the deadline left,
//    "message": the Export…ServiceRequest (proto3 JSON, ids in hex),
//    "raw": its bytes (base64, uncompressed)}
// Like pacerd it stores a batch id once: a call whose x-pacer-batch-id was
// stored before (by this process or one before it, read back from FILE) is
// answered OK and stored nothing again ("duplicate": true).
//
// Commands on stdin, one JSON object a line, each acknowledged by "ok" on
// stdout:
//   {"answers": [{"code": 14, "message": "…", "retryDelayMs": 1500}, …]}
//       the next calls' answers, in order (then OK again); retryDelayMs adds
//       a google.rpc.RetryInfo to the status (grpc-status-details-bin)
//   {"partial": {"rejected": 3, "message": "…"}}   partial_success in OK answers (null: none)
//   {"dieAfterStoring": N}   the Nth call from now is stored, then the process
//                            kills itself (SIGKILL) before answering it
'use strict';
const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protobuf = require('protobufjs');
const otlp = require('@opentelemetry/otlp-transformer/build/src/generated/root').opentelemetry.proto.collector;

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args.slice(i + 1) : null;
};
const logFile = (opt('--log') || [])[0];
if (!logFile) {
  console.error('usage: node grpc-receiver.js --log FILE [--port N] [--tls CERT KEY]');
  process.exit(2);
}
const port = Number((opt('--port') || ['0'])[0]);
const tls = opt('--tls');

const GOOGLE = path.join(__dirname, 'node_modules', 'google-proto-files');
const google = new protobuf.Root();
google.resolvePath = (origin, target) => (target.startsWith('google/protobuf/') ? target : path.join(GOOGLE, target));
google.loadSync('google/rpc/status.proto');
google.loadSync('google/rpc/error_details.proto');
google.resolveAll();
const Status = google.lookupType('google.rpc.Status');
const RetryInfo = google.lookupType('google.rpc.RetryInfo');
const BadRequest = google.lookupType('google.rpc.BadRequest');

const SIGNALS = [
  { signal: 'traces', pkg: otlp.trace.v1, service: 'opentelemetry.proto.collector.trace.v1.TraceService', kind: 'Trace' },
  { signal: 'logs', pkg: otlp.logs.v1, service: 'opentelemetry.proto.collector.logs.v1.LogsService', kind: 'Logs' },
  { signal: 'metrics', pkg: otlp.metrics.v1, service: 'opentelemetry.proto.collector.metrics.v1.MetricsService', kind: 'Metrics' },
];

// what earlier processes stored
const stored = new Set();
if (fs.existsSync(logFile))
  for (const line of fs.readFileSync(logFile, 'utf8').split('\n'))
    if (line) {
      const e = JSON.parse(line);
      if (e.stored) stored.add(e.batch);
    }
const log = fs.openSync(logFile, 'a');

let answers = [];
let partial = null;
let dieAt = 0;
let calls = 0;
// the raw requests, as the HTTP/2 tap saw them, per batch id in order
const wire = new Map();

const hexIds = (o) => {
  if (Array.isArray(o)) return o.forEach(hexIds);
  if (o && typeof o === 'object')
    for (const k of Object.keys(o)) {
      if (['traceId', 'spanId', 'parentSpanId'].includes(k) && typeof o[k] === 'string')
        o[k] = Buffer.from(o[k], 'base64').toString('hex');
      else hexIds(o[k]);
    }
};

function statusDetails(a) {
  const details = [];
  if (a.retryDelayMs !== undefined) {
    const ms = a.retryDelayMs;
    const info = RetryInfo.create({ retryDelay: { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 } });
    details.push({ type_url: 'type.googleapis.com/google.rpc.RetryInfo', value: RetryInfo.encode(info).finish() });
  }
  if (a.code === grpc.status.INVALID_ARGUMENT)
    details.push({ type_url: 'type.googleapis.com/google.rpc.BadRequest',
                   value: BadRequest.encode(BadRequest.create({ fieldViolations: [{ field: 'resource_spans', description: a.message || 'bad' }] })).finish() });
  return Status.encode(Status.create({ code: a.code, message: a.message || '', details })).finish();
}

function handler(s) {
  const Req = s.pkg[`Export${s.kind}ServiceRequest`];
  const Resp = s.pkg[`Export${s.kind}ServiceResponse`];
  return (call, callback) => {
    // after the tap has seen the last DATA frame of this call
    setImmediate(() => {
      const md = call.metadata.getMap();
      const batch = typeof md['x-pacer-batch-id'] === 'string' ? md['x-pacer-batch-id'] : '';
      const seen = (wire.get(batch) || []).shift() || {};
      const a = answers.length ? answers.shift() : { code: grpc.status.OK };
      calls++;
      const duplicate = a.code === grpc.status.OK && stored.has(batch);
      const store = a.code === grpc.status.OK && !duplicate;
      const obj = Req.toObject(call.request.msg, { longs: String, enums: Number, bytes: String, defaults: false });
      hexIds(obj);
      const deadline = call.getDeadline();
      const entry = {
        t: Date.now(), path: seen.path, signal: s.signal, batch, stored: store, duplicate, code: a.code,
        metadata: md, headers: seen.headers || {}, flag: seen.flag,
        deadlineMs: deadline instanceof Date ? deadline.getTime() - Date.now()
          : Number.isFinite(deadline) ? deadline - Date.now() : null,
        message: obj, raw: call.request.raw.toString('base64'),
      };
      fs.writeSync(log, JSON.stringify(entry) + '\n');
      if (store) stored.add(batch);
      if (dieAt && calls === dieAt) process.kill(process.pid, 'SIGKILL');
      if (a.code !== grpc.status.OK) {
        const metadata = new grpc.Metadata();
        metadata.set('grpc-status-details-bin', Buffer.from(statusDetails(a)));
        return callback({ code: a.code, details: a.message || '', metadata });
      }
      const resp = partial
        ? { partialSuccess: { [s.kind === 'Trace' ? 'rejectedSpans' : s.kind === 'Logs' ? 'rejectedLogRecords' : 'rejectedDataPoints']: partial.rejected,
                              errorMessage: partial.message } }
        : {};
      callback(null, Resp.fromObject(resp));
    });
  };
}

const server = new grpc.Server();
for (const s of SIGNALS) {
  const Req = s.pkg[`Export${s.kind}ServiceRequest`];
  const Resp = s.pkg[`Export${s.kind}ServiceResponse`];
  server.addService({
    Export: {
      path: `/${s.service}/Export`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (m) => Buffer.from(Req.encode(m).finish()),
      requestDeserialize: (b) => ({ raw: Buffer.from(b), msg: Req.decode(b) }),
      responseSerialize: (m) => Buffer.from(Resp.encode(m).finish()),
      responseDeserialize: (b) => Resp.decode(b),
    },
  }, { Export: handler(s) });
}

const creds = tls
  ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: fs.readFileSync(tls[0]), private_key: fs.readFileSync(tls[1]) }], false)
  : grpc.ServerCredentials.createInsecure();
server.bindAsync(`127.0.0.1:${port}`, creds, (err, bound) => {
  if (err) {
    console.error(err.message);
    process.exit(1);
  }
  // the tap: each request's headers and the first byte of its DATA (the
  // Length-Prefixed-Message's compressed flag), beside grpc-js's own
  // handling of the stream
  for (const h2 of server.http2Servers.keys())
    h2.on('stream', (stream, headers) => {
      const seen = { path: headers[':path'], headers: {} };
      for (const [k, v] of Object.entries(headers)) if (!k.startsWith(':')) seen.headers[k] = v;
      const batch = headers['x-pacer-batch-id'] || '';
      if (!wire.has(batch)) wire.set(batch, []);
      wire.get(batch).push(seen);
      stream.on('data', (chunk) => {
        if (seen.flag === undefined && chunk.length) seen.flag = chunk[0];
      });
    });
  process.stdout.write(`listening ${bound}\n`);
});

let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  pending += d;
  let nl;
  while ((nl = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    if (!line.trim()) continue;
    const c = JSON.parse(line);
    if (c.answers) answers = answers.concat(c.answers);
    if ('partial' in c) partial = c.partial;
    if (c.dieAfterStoring) dieAt = calls + c.dieAfterStoring;
    process.stdout.write('ok\n');
  }
});
process.stdin.on('end', () => {});
