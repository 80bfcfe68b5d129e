// The OpenTelemetry JS SDK exporting traces, logs and metrics to pacerd with
// its own OTLP exporters, in one flavour:
//
//   node export-all.js URL KEY PROTOCOL COMPRESSION TAG [CAPTURE_DIR]
//     PROTOCOL     proto (exporter-*-otlp-proto), json (exporter-*-otlp-http)
//                  or grpc (exporter-*-otlp-grpc: URL is then the gRPC
//                  endpoint, http://HOST:PORT, and the key goes as the
//                  authorization metadata)
//     COMPRESSION  gzip or none
//     TAG          goes into service.version and every name, so runs differ
//     CAPTURE_DIR  also write each request body the exporters sent there
//                  (a fuzz corpus), by intercepting node's http.request
//
// Prints, as one JSON object, what the SDK handed its exporters — spans,
// log records and metric data points with every attribute, event, link and
// bucket — the ground truth tests/server/test_otel_flavours.py reads back
// through pacerd's APIs. Each exporter's answer (its result code) is
// checked: a failed export exits 1.
'use strict';
const fs = require('fs');
const path = require('path');
const http = require('http');
const zlib = require('zlib');

const [url, key, protocol, compression, tag, captureDir] = process.argv.slice(2);
if (!url || !key || !['proto', 'json', 'grpc'].includes(protocol) || !['gzip', 'none'].includes(compression) || !tag) {
  console.error('usage: node export-all.js URL KEY proto|json|grpc gzip|none TAG [CAPTURE_DIR]');
  process.exit(2);
}

if (captureDir) { // keep each body as sent (gzip bodies inflated): fuzz seeds
  const orig = http.request;
  let n = 0;
  http.request = function (...args) {
    const req = orig.apply(this, args);
    const chunks = [];
    const write = req.write.bind(req), end = req.end.bind(req);
    req.write = (c, ...rest) => { if (c) chunks.push(Buffer.from(c)); return write(c, ...rest); };
    req.end = (c, ...rest) => {
      if (c && typeof c !== 'function') chunks.push(Buffer.from(c));
      let body = Buffer.concat(chunks);
      if (body.length > 1 && body[0] === 0x1f && body[1] === 0x8b) body = zlib.gunzipSync(body);
      const p = req.path || '';
      const signal = p.includes('traces') ? 'traces' : p.includes('logs') ? 'logs' : 'metrics';
      fs.writeFileSync(path.join(captureDir, `${protocol}-${signal}-${tag}-${n++}.bin`), body);
      return end(c, ...rest);
    };
    return req;
  };
}

const { BasicTracerProvider, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { LoggerProvider, SimpleLogRecordProcessor } = require('@opentelemetry/sdk-logs');
const { MeterProvider, PeriodicExportingMetricReader, View, ExponentialHistogramAggregation,
        ExplicitBucketHistogramAggregation, AggregationTemporality } = require('@opentelemetry/sdk-metrics');
const { Resource } = require('@opentelemetry/resources');
const { SpanKind, SpanStatusCode, context, trace } = require('@opentelemetry/api');
const { SeverityNumber } = require('@opentelemetry/api-logs');
const { ExportResultCode } = require('@opentelemetry/core');

const flavour = protocol === 'json' ? 'http' : protocol;
const { OTLPTraceExporter } = require(`@opentelemetry/exporter-trace-otlp-${flavour}`);
const { OTLPLogExporter } = require(`@opentelemetry/exporter-logs-otlp-${flavour}`);
const { OTLPMetricExporter } = require(`@opentelemetry/exporter-metrics-otlp-${flavour}`);

const headers = { Authorization: 'Bearer ' + key };
let opts = (p) => ({ url: url + p, headers, compression });
if (protocol === 'grpc') {
  const { Metadata } = require('@grpc/grpc-js');
  const metadata = new Metadata();
  metadata.set('authorization', 'Bearer ' + key);
  opts = () => ({ url, metadata, compression });
}
const resource = new Resource({
  'service.name': 'shop', 'service.version': 'otel-' + tag, 'deployment.environment': 'test-' + tag,
  'host.cores': 2, 'host.load': 0.5, 'feature.on': true, 'region.list': ['eu', 'us'],
});

// Every export: what the SDK handed over, and the exporter's answer.
const failures = [];
function watched(exporter, keep) {
  return {
    export(items, done) {
      keep(items);
      exporter.export(items, (res) => {
        if (res.code !== ExportResultCode.SUCCESS) failures.push(String(res.error || res.code));
        done(res);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => (exporter.forceFlush ? exporter.forceFlush() : Promise.resolve()),
    selectAggregationTemporality: exporter.selectAggregationTemporality
      ? (k) => exporter.selectAggregationTemporality(k) : undefined,
  };
}

const hex = (s) => s;
const ns = (hr) => (BigInt(hr[0]) * 1000000000n + BigInt(hr[1])).toString();
const out = { spans: [], logs: [], points: [] };

// ---- traces ----
const tracerProvider = new BasicTracerProvider({ resource });
tracerProvider.addSpanProcessor(new SimpleSpanProcessor(watched(new OTLPTraceExporter(opts('/v1/traces')), (spans) => {
  for (const s of spans) {
    out.spans.push({
      traceId: hex(s.spanContext().traceId), spanId: s.spanContext().spanId, parentSpanId: s.parentSpanId || null,
      name: s.name, kind: s.kind, start: ns(s.startTime), end: ns(s.endTime), attributes: s.attributes,
      status: s.status,
      events: s.events.map((e) => ({ name: e.name, time: ns(e.time), attributes: e.attributes || {} })),
      links: s.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId, attributes: l.attributes || {} })),
    });
  }
})));
const tracer = tracerProvider.getTracer('pacerd-flavours', '2.' + tag);
const base = Date.now() - 120 * 1000;
const at = (ms) => new Date(ms); // a Date is wall time; a number before the process began would be taken as relative
const linkTarget = tracer.startSpan('link target ' + tag, { startTime: at(base) });
linkTarget.end(at(base + 1));
for (let i = 0; i < 12; i++) {
  const start = base + 10 + i * 5;
  const span = tracer.startSpan(`op ${i % 3} ${tag}`, {
    startTime: at(start), kind: i % 2 ? SpanKind.SERVER : SpanKind.INTERNAL,
    attributes: { 'app.i': i, 'app.ratio': i / 4 + 0.125, 'app.flag': i % 2 === 0, 'app.name': 'n' + i,
                  'app.tags': ['a' + i, 'b'], 'app.nums': [i, i + 1] },
    links: i % 4 === 0 ? [{ context: linkTarget.spanContext(), attributes: { 'link.why': 'retry ' + i } }] : [],
  });
  span.addEvent('api', { 'pacer.url': '/api/item/' + i, 'pacer.ms': 12.5 + i, 'pacer.status': 200 }, at(start + 1));
  if (i % 3 === 0)
    span.recordException(new Error('boom ' + i), at(start + 2));
  if (i % 5 === 0)
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'failed ' + i });
  if (i % 6 === 0) {
    const ctx = trace.setSpan(context.active(), span);
    const child = tracer.startSpan('child ' + tag, { startTime: at(start + 1), kind: SpanKind.CLIENT }, ctx);
    child.end(at(start + 2));
  }
  span.end(at(start + 3 + i));
}

// ---- logs ----
const loggerProvider = new LoggerProvider({ resource });
loggerProvider.addLogRecordProcessor(new SimpleLogRecordProcessor(watched(new OTLPLogExporter(opts('/v1/logs')), (logs) => {
  for (const l of logs) {
    const sc = l.spanContext;
    out.logs.push({ time: ns(l.hrTime), severityNumber: l.severityNumber, severityText: l.severityText, body: l.body,
                    attributes: l.attributes, traceId: sc ? sc.traceId : null, spanId: sc ? sc.spanId : null });
  }
})));
const logger = loggerProvider.getLogger('pacerd-flavours', '3.' + tag);
const logSpan = tracer.startSpan('logging ' + tag, { startTime: at(base + 200) });
const sevs = [SeverityNumber.DEBUG, SeverityNumber.INFO, SeverityNumber.WARN, SeverityNumber.ERROR];
const sevText = ['DEBUG', 'INFO', 'WARN', 'ERROR'];
{
  const logCtx = trace.setSpan(context.active(), logSpan);
  for (let i = 0; i < 8; i++) {
    logger.emit({
      context: logCtx, timestamp: at(base + 300 + i), severityNumber: sevs[i % 4], severityText: sevText[i % 4],
      body: i === 7 ? { kind: 'structured', n: i } : `checkout ${tag} step ${i}`,
      attributes: { 'log.i': i, 'log.where': 'cart', 'log.ok': i % 2 === 1 },
    });
  }
}
logSpan.end(at(base + 400));

// ---- metrics ----
const exporterM = new OTLPMetricExporter({ ...opts('/v1/metrics'), temporalityPreference: AggregationTemporality.CUMULATIVE });
const reader = new PeriodicExportingMetricReader({
  exporter: watched(exporterM, (rm) => {
    for (const sm of rm.scopeMetrics)
      for (const m of sm.metrics)
        for (const p of m.dataPoints)
          out.points.push({ name: m.descriptor.name, type: m.dataPointType, unit: m.descriptor.unit,
                            description: m.descriptor.description, attributes: p.attributes, value: p.value,
                            temporality: m.aggregationTemporality, monotonic: m.isMonotonic });
  }),
  exportIntervalMillis: 3600000,
});
const meterProvider = new MeterProvider({
  resource, readers: [reader],
  views: [
    new View({ instrumentName: 'latency.exp.' + tag, aggregation: new ExponentialHistogramAggregation(20) }),
    new View({ instrumentName: 'latency.' + tag, aggregation: new ExplicitBucketHistogramAggregation([0, 10, 50, 100, 500]) }),
  ],
});
const meter = meterProvider.getMeter('pacerd-flavours', '4.' + tag);
const counter = meter.createCounter('requests.' + tag, { description: 'requests served', unit: '1' });
const hist = meter.createHistogram('latency.' + tag, { unit: 'ms' });
const exp = meter.createHistogram('latency.exp.' + tag, { unit: 'ms' });
const updown = meter.createUpDownCounter('queue.' + tag);
meter.createObservableGauge('temperature.' + tag).addCallback((r) => { r.observe(21.5, { room: 'a' }); r.observe(-3.25, { room: 'b' }); });
for (let i = 0; i < 40; i++) {
  const attrs = { route: '/r' + (i % 2), ok: i % 5 !== 0 };
  counter.add(i % 4 + 1, attrs);
  hist.record((i * 37) % 600 + 0.5, attrs);
  exp.record(1 + i * 3.5, { route: '/r' + (i % 2) });
  updown.add(i % 3 - 1);
}

(async () => {
  await tracerProvider.forceFlush();
  await loggerProvider.forceFlush();
  await reader.forceFlush();
  await Promise.all([tracerProvider.shutdown(), loggerProvider.shutdown(), meterProvider.shutdown()]);
  if (failures.length) {
    console.error('export failed: ' + failures.join('; '));
    process.exit(1);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
})().catch((e) => { console.error('export failed:', e); process.exit(1); });
