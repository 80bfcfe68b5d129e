// An independent reader and writer of OTLP/HTTP messages for
// test_otlp_answers.py, on protobufjs (npm):
//   - the Export…ServiceRequest and Export…ServiceResponse messages as the
//     OpenTelemetry JS SDK compiles them from opentelemetry-proto
//     (@opentelemetry/otlp-transformer's generated module: what its own
//     exporters read answers with; the .proto files otlp-grpc-exporter-base
//     ships predate partial_success);
//   - google.rpc.Status and google.rpc.BadRequest from googleapis' .proto
//     files (google-proto-files), loaded by protobufjs.
//
//   node otlp-answers.js encode < [{signal, request}]
//     → [base64]: each Export…ServiceRequest (OTLP JSON, ids in hex) in
//       protobuf;
//   node otlp-answers.js decode < [{signal, kind, encoding, body}]
//     → [{message} | {error}]: each answer body (base64) read as an
//       Export…ServiceResponse (kind "response") or a google.rpc.Status
//       (kind "status"), in protobuf ("proto") or JSON ("json").
//
// A protobuf answer must encode again to the same bytes (every byte a
// field of its message, with its wire type, in field order; an Any's value
// too). A JSON answer may hold only its message's fields, under their
// lowerCamelCase names. Messages come out as proto3 JSON: 64-bit integers
// as strings, fields at their default value left out (proto3 does not tell
// them from absent ones), an Any as its message with "@type".
'use strict';
const path = require('path');
const protobuf = require('protobufjs');
const otlp = require('@opentelemetry/otlp-transformer/build/src/generated/root').opentelemetry.proto.collector;

const GOOGLE = path.join(__dirname, 'node_modules', 'google-proto-files');
const google = new protobuf.Root();
google.resolvePath = (origin, target) => (target.startsWith('google/protobuf/') ? target : path.join(GOOGLE, target));
google.loadSync('google/rpc/status.proto');
google.loadSync('google/rpc/error_details.proto');
google.resolveAll();
const Status = google.lookupType('google.rpc.Status');
const ANY_PREFIX = 'type.googleapis.com/';

const files = { traces: 'trace', logs: 'logs', metrics: 'metrics' };
const kinds = { traces: 'Trace', logs: 'Logs', metrics: 'Metrics' };
const otlpClass = (signal, what) => otlp[files[signal]].v1[`Export${kinds[signal]}Service${what}`];
const OPTS = { longs: String, enums: Number, bytes: String, defaults: false };

// proto3: a scalar at its default value is the same as absent
function clean(o) {
  if (Array.isArray(o)) return o.map(clean);
  if (o && typeof o === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(o))
      if (!(v === '0' || v === 0 || v === '' || v === false || (Array.isArray(v) && !v.length))) out[k] = clean(v);
    return out;
  }
  return o;
}

// OTLP JSON's hex ids → bytes, for fromObject
function hexIds(o) {
  if (Array.isArray(o)) return o.forEach(hexIds);
  if (o && typeof o === 'object')
    for (const k of Object.keys(o)) {
      if (['traceId', 'spanId', 'parentSpanId'].includes(k) && typeof o[k] === 'string') o[k] = Buffer.from(o[k], 'hex');
      else hexIds(o[k]);
    }
}

const sameJson = (a, b) => JSON.stringify(a, (k, v) => (typeof v === 'number' ? String(v) : v)) ===
  JSON.stringify(b, (k, v) => (typeof v === 'number' ? String(v) : v));

// ---- google.rpc.Status (reflection) ----

const INT64 = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);
const INT32 = new Set(['int32', 'uint32', 'sint32', 'fixed32', 'sfixed32']);

function anyType(url) {
  if (typeof url !== 'string' || !url.startsWith(ANY_PREFIX)) throw new Error('an Any whose type URL is not ' + ANY_PREFIX + '…: ' + url);
  return google.lookupType(url.slice(ANY_PREFIX.length));
}

// Only fields of type, each of its type (proto3 JSON: 64-bit integers as
// strings or numbers; an Any as "@type" and its message's fields).
function strict(type, obj, where) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new Error(`${where}: not an object`);
  if (type.fullName === '.google.protobuf.Any') {
    const rest = Object.assign({}, obj);
    delete rest['@type'];
    return strict(anyType(obj['@type']), rest, where);
  }
  for (const [k, v] of Object.entries(obj)) {
    const f = type.fields[k];
    if (!f) throw new Error(`${where}.${k}: not a field of ${type.fullName} (lowerCamelCase)`);
    if (f.repeated && !Array.isArray(v)) throw new Error(`${where}.${k}: not a list`);
    (f.repeated ? v : [v]).forEach((x, i) => {
      const at = `${where}.${k}` + (f.repeated ? `[${i}]` : '');
      if (f.resolvedType instanceof protobuf.Type) return strict(f.resolvedType, x, at);
      if (f.resolvedType instanceof protobuf.Enum || INT32.has(f.type)) {
        if (!Number.isInteger(x)) throw new Error(`${at}: not an integer`);
      } else if (INT64.has(f.type)) {
        if (!(typeof x === 'string' ? /^-?\d+$/.test(x) : Number.isInteger(x))) throw new Error(`${at}: not a 64-bit integer`);
      } else if (f.type === 'string' && typeof x !== 'string') {
        throw new Error(`${at}: not a string`);
      } else if (f.type === 'bool' && typeof x !== 'boolean') {
        throw new Error(`${at}: not a bool`);
      }
    });
  }
}

// Calls fn on each Any of obj (a message of type), which returns what
// replaces it: an Any is read and written here, as the message its type
// URL names (protobufjs's toObject would leave its value as bytes).
function mapAnys(type, obj, fn) {
  for (const f of type.fieldsArray) {
    if (!(f.resolvedType instanceof protobuf.Type) || obj[f.name] === undefined || obj[f.name] === null) continue;
    const one = (x) => (f.resolvedType.fullName === '.google.protobuf.Any' ? fn(x) : (mapAnys(f.resolvedType, x, fn), x));
    obj[f.name] = f.repeated ? obj[f.name].map(one) : one(obj[f.name]);
  }
  return obj;
}

// JSON {"@type": URL, …fields} → {type_url, value: the fields encoded}
const pack = (x) => {
  const inner = anyType(x['@type']);
  const rest = Object.assign({}, x);
  delete rest['@type'];
  return { type_url: x['@type'], value: inner.encode(inner.fromObject(mapAnys(inner, rest, pack))).finish() };
};

// {type_url, value (base64)} → {"@type": URL, …its message}; the value must
// encode again to its bytes
const expand = (x) => {
  const inner = anyType(x.type_url);
  const bytes = Buffer.from(x.value || '', 'base64');
  const msg = inner.decode(bytes);
  if (!Buffer.from(inner.encode(msg).finish()).equals(bytes))
    throw new Error('an Any whose value does not encode again to the same bytes: not all of it is ' + inner.fullName);
  return Object.assign({ '@type': x.type_url }, mapAnys(inner, inner.toObject(msg, OPTS), expand));
};

function decodeStatus(bytes, encoding) {
  let msg;
  if (encoding === 'proto') {
    msg = Status.decode(bytes);
    if (!Buffer.from(Status.encode(msg).finish()).equals(bytes))
      throw new Error('protobuf that does not encode again to the same bytes: not all of it is google.rpc.Status');
  } else {
    const obj = JSON.parse(bytes.toString('utf8'));
    strict(Status, obj, 'Status');
    msg = Status.fromObject(mapAnys(Status, obj, pack));
  }
  return clean(mapAnys(Status, Status.toObject(msg, OPTS), expand));
}

// ---- Export…ServiceResponse (the SDK's generated module) ----

function decodeResponse(signal, bytes, encoding) {
  const C = otlpClass(signal, 'Response');
  if (encoding === 'proto') {
    const msg = C.decode(bytes);
    if (!Buffer.from(C.encode(msg).finish()).equals(bytes))
      throw new Error(`protobuf that does not encode again to the same bytes: not all of it is Export${kinds[signal]}ServiceResponse`);
    return clean(C.toObject(msg, OPTS));
  }
  const obj = JSON.parse(bytes.toString('utf8'));
  const err = C.verify(JSON.parse(JSON.stringify(obj), (k, v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v)));
  if (err) throw new Error(err);
  const got = clean(C.toObject(C.fromObject(obj), OPTS));
  // what fromObject did not take was not a field of the message
  if (!sameJson(clean(obj), got)) throw new Error(`members that are not fields of Export${kinds[signal]}ServiceResponse: ${JSON.stringify(obj)}`);
  return got;
}

const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
let out;
if (process.argv[2] === 'encode') {
  out = input.map((r) => {
    const C = otlpClass(r.signal, 'Request');
    const obj = JSON.parse(JSON.stringify(r.request));
    hexIds(obj);
    return Buffer.from(C.encode(C.fromObject(obj)).finish()).toString('base64');
  });
} else if (process.argv[2] === 'decode') {
  out = input.map((a) => {
    try {
      const bytes = Buffer.from(a.body, 'base64');
      return { message: a.kind === 'status' ? decodeStatus(bytes, a.encoding) : decodeResponse(a.signal, bytes, a.encoding) };
    } catch (e) {
      return { error: e.message };
    }
  });
} else {
  console.error('usage: node otlp-answers.js encode|decode < JSON');
  process.exit(2);
}
process.stdout.write(JSON.stringify(out) + '\n');
