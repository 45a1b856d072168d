// A small tool-calling weather agent in JavaScript, recorded by otel-blackbox over OTLP.
//
// The official `openai` npm package talks to the model; OpenInference's JS instrumentation makes one
// LLM span per model call; the agent adds an AGENT root span and a TOOL span per tool it runs (a
// local function), with OpenInference's attributes, so `otel-blackbox cassette` finds the tool
// calls and their results as it does in the Python agents (examples/weather_agent.py). The
// OpenTelemetry JS SDK exports every span over OTLP/HTTP to `otel-blackbox serve`.
//
//     make node                                 # npm ci, once
//     otel-blackbox serve --port 4318 &         # the receiver, in front of ./blackbox.db
//     python examples/fake_llm.py --port 8765 & # or any OpenAI-compatible provider
//     OPENAI_BASE_URL=http://127.0.0.1:8765/v1 \
//     OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 node examples/node/agent.mjs "What's the weather in Oslo?"
//
// Environment: OPENAI_BASE_URL and OPENAI_API_KEY (the SDK's own; a fake key by default), the
// standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT (default
// http://localhost:4318), OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
// `http/protobuf` (the default) or `http/json`. AGENT_MODEL names the model (default gpt-4o-mini).
// Prints `TRACE <trace id>` then the answer; exit 1 if the run or an export failed.

import { randomUUID } from "node:crypto";

import OpenAI from "openai";
import { OpenAIInstrumentation } from "@arizeai/openinference-instrumentation-openai";
import { getAttributesFromContext, setSession } from "@arizeai/openinference-core";
import {
  MimeType,
  OpenInferenceSpanKind,
  SemanticConventions as SC,
} from "@arizeai/openinference-semantic-conventions";
import { context, SpanStatusCode } from "@opentelemetry/api";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";

const SERVICE_NAME = "node-weather-agent";
const DEFAULT_QUESTION = "What's the weather in Paris, and the 3 day forecast? I need both.";
const SYSTEM_PROMPT = "You are a weather assistant. Use the tools to answer; quote their results.";
const MAX_TURNS = 5; // model calls per run, so a model that keeps calling tools can't loop forever

// --- tools (local functions, as in examples/weather_agent.py) ------------------------------------

function temperature(city, day) {
  // Stable per city, so runs are reproducible (the Python agent's formula).
  const sum = [...city].reduce((total, ch) => total + ch.codePointAt(0), 0);
  return 8 + ((sum + 3 * day) % 17);
}

const FUNCTIONS = {
  get_weather: ({ city }) =>
    JSON.stringify({ city, temperature_c: temperature(city, 0), conditions: "partly cloudy" }),
  get_forecast: ({ city, days = 3 }) => {
    const count = Math.max(1, Math.min(Number(days), 7));
    const temps = Array.from({ length: count }, (_, i) => temperature(city, i + 1));
    return JSON.stringify({ city, days: temps.length, daily_high_c: temps });
  },
};

const TOOLS = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Current weather for a city.",
      parameters: {
        type: "object",
        properties: { city: { type: "string", description: "City name, e.g. Paris" } },
        required: ["city"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "get_forecast",
      description: "Daily high temperatures for the next few days.",
      parameters: {
        type: "object",
        properties: {
          city: { type: "string", description: "City name, e.g. Paris" },
          days: { type: "integer", minimum: 1, maximum: 7 },
        },
        required: ["city", "days"],
      },
    },
  },
];

// --- tracing ---------------------------------------------------------------------------------------

function protocol() {
  const value =
    process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || process.env.OTEL_EXPORTER_OTLP_PROTOCOL || "http/protobuf";
  if (value !== "http/protobuf" && value !== "http/json") {
    console.error(`node-weather-agent: unsupported OTLP protocol ${JSON.stringify(value)}: use http/protobuf or http/json`);
    process.exit(2);
  }
  return value;
}

// The SDK only logs a failed export (through diag, silent by default): this one remembers it, so
// the agent can exit 1 instead of reporting success with its spans lost.
class CheckedExporter {
  constructor(inner) {
    this.inner = inner;
    this.failures = [];
  }
  export(spans, done) {
    this.inner.export(spans, (result) => {
      if (result.code !== 0) this.failures.push(result.error?.message ?? String(result.error));
      done(result);
    });
  }
  forceFlush() {
    return this.inner.forceFlush();
  }
  shutdown() {
    return this.inner.shutdown();
  }
}

function makeProvider(exporter) {
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": SERVICE_NAME }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  provider.register(); // the async-hooks context manager: spans nest across awaits
  return provider;
}

// --- agent -----------------------------------------------------------------------------------------

async function runTool(tracer, name, args) {
  const attributes = {
    // session.id from setSession(), as the instrumentation copies it onto the LLM spans.
    ...getAttributesFromContext(context.active()),
    [SC.OPENINFERENCE_SPAN_KIND]: OpenInferenceSpanKind.TOOL,
    [SC.TOOL_NAME]: name,
    [SC.TOOL_PARAMETERS]: args,
    [SC.INPUT_VALUE]: args,
    [SC.INPUT_MIME_TYPE]: MimeType.JSON,
  };
  return tracer.startActiveSpan(name, { attributes }, (span) => {
    let result;
    try {
      const fn = FUNCTIONS[name];
      if (!fn) throw new Error(`unknown tool ${name}`);
      result = fn(JSON.parse(args));
      span.setStatus({ code: SpanStatusCode.OK });
    } catch (error) {
      // The model is told, as the Python agent does.
      span.recordException(error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: `${error.name}: ${error.message}` });
      result = `error: ${error.name}: ${error.message}`;
    }
    span.setAttribute(SC.OUTPUT_VALUE, result);
    span.end();
    return result;
  });
}

function assistantTurn(message) {
  // Rebuilt by hand: the SDK's object carries fields the API doesn't accept back.
  const turn = { role: "assistant", content: message.content };
  const calls = (message.tool_calls ?? []).filter((c) => c.type === "function");
  if (calls.length) {
    turn.tool_calls = calls.map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.function.name, arguments: c.function.arguments },
    }));
  }
  return turn;
}

async function runAgent(client, tracer, question, model) {
  const sessionId = `session-${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const attributes = {
    [SC.OPENINFERENCE_SPAN_KIND]: OpenInferenceSpanKind.AGENT,
    [SC.INPUT_VALUE]: question,
    [SC.SESSION_ID]: sessionId,
  };
  // setSession: OpenInference's instrumentation copies session.id onto the LLM spans too.
  return context.with(setSession(context.active(), { sessionId }), () =>
    tracer.startActiveSpan("weather-agent", { attributes }, async (span) => {
      console.log(`TRACE ${span.spanContext().traceId}`);
      try {
        const messages = [
          { role: "system", content: SYSTEM_PROMPT },
          { role: "user", content: question },
        ];
        let answer = "(no answer: too many tool rounds)";
        for (let turn = 0; turn < MAX_TURNS; turn++) {
          const completion = await client.chat.completions.create({ model, messages, tools: TOOLS });
          const message = completion.choices[0].message;
          messages.push(assistantTurn(message));
          const calls = (message.tool_calls ?? []).filter((c) => c.type === "function");
          if (!calls.length) {
            answer = message.content ?? "";
            break;
          }
          for (const call of calls) {
            const result = await runTool(tracer, call.function.name, call.function.arguments);
            messages.push({ role: "tool", tool_call_id: call.id, content: result });
          }
        }
        span.setAttribute(SC.OUTPUT_VALUE, answer);
        span.setStatus({ code: SpanStatusCode.OK });
        return answer;
      } catch (error) {
        span.recordException(error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: `${error.name}: ${error.message}` });
        throw error;
      } finally {
        span.end();
      }
    }),
  );
}

async function main() {
  const question = process.argv[2] || DEFAULT_QUESTION;
  const model = process.env.AGENT_MODEL || "gpt-4o-mini";
  const exporter = new CheckedExporter(protocol() === "http/json" ? new JsonExporter() : new ProtoExporter());
  const provider = makeProvider(exporter);
  const instrumentation = new OpenAIInstrumentation({ tracerProvider: provider });
  instrumentation.manuallyInstrument(OpenAI); // an ES module is not patched on load: patch it here
  const client = new OpenAI({ apiKey: process.env.OPENAI_API_KEY || "sk-fake-not-a-real-key", maxRetries: 0 });
  let failed = false;
  try {
    console.log(await runAgent(client, provider.getTracer(SERVICE_NAME), question, model));
  } catch (error) {
    console.error(`node-weather-agent failed: ${error.name}: ${error.message}`);
    failed = true;
  }
  try {
    await provider.shutdown(); // flushes the batch: every span is exported before the exit
  } catch (error) {
    exporter.failures.push(error.message);
  }
  if (exporter.failures.length) {
    console.error(`node-weather-agent: OTLP export failed: ${exporter.failures[0]}`);
    failed = true;
  }
  process.exitCode = failed ? 1 : 0;
}

await main();
