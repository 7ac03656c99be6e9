// node-opcua reading otopcua's process history for the aggregate proof of
// tests/history (TestAggregatesOfARealDevice).
//
// Usage: node history_aggregates.mjs <endpointUrl> <nodeId> <startISO> <endISO> <intervalMs> <perCall>
//
// Reads the raw values of nodeId between the two times, perCall values a
// call (following continuation points), then the Average, Minimum, Maximum
// and Count over the same range with the processing interval, each in its
// own request with the Part 13 default configuration. Prints one JSON
// object per line; statuses as their 32-bit code (info bits included).
import { OPCUAClient, MessageSecurityMode, SecurityPolicy, AggregateFunction } from "node-opcua-client";

const [endpointUrl, nodeId, startISO, endISO, intervalMs, perCall] = process.argv.slice(2);
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const plain = (v) => (typeof v === "bigint" ? Number(v) : v);
const code = (sc) => sc.value >>> 0;

async function main() {
  const client = OPCUAClient.create({
    applicationName: "otopcua-interop-history-aggregates",
    securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None,
    endpointMustExist: false, connectionStrategy: { maxRetry: 2, initialDelay: 200, maxDelay: 1000 },
  });
  await client.connect(endpointUrl);
  const session = await client.createSession();
  const start = new Date(startISO), end = new Date(endISO);

  let cp = null, calls = 0;
  do {
    const r = await session.readHistoryValue({ nodeId, continuationPoint: cp }, start, end,
      { numValuesPerNode: Number(perCall), returnBounds: false });
    calls++;
    if (r.statusCode.isNotGood() && r.statusCode.name !== "GoodNoData") {
      emit({ event: "error", message: `raw read: ${r.statusCode.name}` });
      process.exit(1);
    }
    for (const dv of r.historyData?.dataValues ?? []) {
      emit({ event: "raw", code: code(dv.statusCode), value: plain(dv.value.value), at: dv.sourceTimestamp?.toISOString() });
    }
    cp = r.continuationPoint && r.continuationPoint.length > 0 ? r.continuationPoint : null;
  } while (cp && calls < 10000);
  emit({ event: "rawDone", calls });

  for (const [name, fn] of [["Average", AggregateFunction.Average], ["Minimum", AggregateFunction.Minimum],
    ["Maximum", AggregateFunction.Maximum], ["Count", AggregateFunction.Count]]) {
    const r = await session.readAggregateValue({ nodeId }, start, end, fn, Number(intervalMs));
    if (r.continuationPoint && r.continuationPoint.length > 0) {
      emit({ event: "error", message: `${name}: a continuation point for a few intervals` });
      process.exit(1);
    }
    for (const dv of r.historyData?.dataValues ?? []) {
      emit({ event: "aggregate", aggregate: name, code: code(dv.statusCode), value: plain(dv.value.value), at: dv.sourceTimestamp?.toISOString() });
    }
    emit({ event: "aggregateDone", aggregate: name, code: code(r.statusCode) });
  }
  await session.close();
  await client.disconnect();
  emit({ event: "done" });
}

main().catch((err) => { emit({ event: "error", message: String(err && err.message || err) }); process.exit(1); });
