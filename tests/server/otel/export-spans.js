// A real OpenTelemetry JS client (sdk-trace-base + exporter-trace-otlp-http)
// exporting spans to pacerd. Usage: node export-spans.js URL KEY
// Prints, as JSON, every span it ended: name, trace and span ids, duration,
// status — the ground truth tests/server/test_otel_client.py compares
// pacerd's answers with.
'use strict';
const { BasicTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http');
const { Resource } = require('@opentelemetry/resources');
const { SpanKind, SpanStatusCode, context, trace } = require('@opentelemetry/api');

const [url, key] = process.argv.slice(2);
if (!url || !key) {
  console.error('usage: node export-spans.js URL KEY');
  process.exit(2);
}

const exporter = new OTLPTraceExporter({ url: url + '/v1/traces', headers: { Authorization: 'Bearer ' + key } });
const provider = new BasicTracerProvider({
  resource: new Resource({ 'service.name': 'shop', 'service.version': 'otel-js' }),
});
provider.addSpanProcessor(new BatchSpanProcessor(exporter, { maxExportBatchSize: 64, scheduledDelayMillis: 50 }));
const tracer = provider.getTracer('pacerd-test', '1.0.0');

const ended = [];
function record(span, name, ms) {
  const sc = span.spanContext();
  ended.push({ name, trace_id: sc.traceId, span_id: sc.spanId, ms });
}

const base = Date.now() - 60 * 1000;
const names = ['checkout', 'load cart', 'render list'];
for (let i = 0; i < 300; i++) {
  const name = names[i % names.length];
  const start = base + i * 10;
  const ms = 1 + ((i * 7919) % 400) + (i % 5) * 0.25;
  const parent = tracer.startSpan(name, {
    startTime: start,
    kind: i % 2 ? SpanKind.SERVER : SpanKind.INTERNAL,
    attributes: { 'app.items': i, 'app.ratio': i / 7, 'app.cached': i % 3 === 0, 'app.tags': ['a', 'b'] },
  });
  if (i % 10 === 0)
    parent.setStatus({ code: SpanStatusCode.ERROR, message: 'item ' + i + ' failed' });
  if (i % 30 === 0) { // a child span, with its parent's context
    const ctx = trace.setSpan(context.active(), parent);
    const child = tracer.startSpan('db query', { startTime: start, kind: SpanKind.CLIENT }, ctx);
    child.end(start + 2);
    record(child, 'db query', 2);
  }
  parent.end(start + ms);
  record(parent, name, ms);
}

provider.forceFlush()
  .then(() => provider.shutdown())
  .then(() => {
    process.stdout.write(JSON.stringify(ended) + '\n');
  })
  .catch((e) => {
    console.error('export failed:', e);
    process.exit(1);
  });
