// node-opcua reading otopcua's process history, for the history tests.
//
// Usage: node history.mjs <endpointUrl> <nodeId> <startISO> <endISO>
//
// Reads the raw values of nodeId between the two times (following
// continuation points, 100 values a call) and the Average and Count per
// second over the same range, and prints one JSON object per line.
import { OPCUAClient, MessageSecurityMode, SecurityPolicy, AggregateFunction } from "node-opcua-client";

const [endpointUrl, nodeId, startISO, endISO] = process.argv.slice(2);
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const plain = (v) => (typeof v === "bigint" ? Number(v) : v);

async function main() {
  const client = OPCUAClient.create({
    applicationName: "otopcua-interop-history",
    securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None,
    endpointMustExist: false, connectionStrategy: { maxRetry: 2, initialDelay: 200, maxDelay: 1000 },
  });
  await client.connect(endpointUrl);
  const session = await client.createSession();
  const start = new Date(startISO), end = new Date(endISO);

  let cp = null, calls = 0;
  do {
    const r = await session.readHistoryValue({ nodeId, continuationPoint: cp }, start, end, { numValuesPerNode: 100, returnBounds: false });
    calls++;
    for (const dv of r.historyData?.dataValues ?? []) {
      emit({ event: "raw", status: dv.statusCode.name, value: plain(dv.value.value), at: dv.sourceTimestamp?.toISOString() });
    }
    cp = r.continuationPoint && r.continuationPoint.length > 0 ? r.continuationPoint : null;
    if (!cp) emit({ event: "rawDone", status: r.statusCode.name, calls });
  } while (cp && calls < 1000);

  for (const [name, fn] of [["Average", AggregateFunction.Average], ["Count", AggregateFunction.Count]]) {
    const r = await session.readAggregateValue({ nodeId }, start, end, fn, 1000);
    for (const dv of r.historyData?.dataValues ?? []) {
      emit({ event: "aggregate", aggregate: name, status: dv.statusCode.name, value: plain(dv.value.value), at: dv.sourceTimestamp?.toISOString() });
    }
    emit({ event: "aggregateDone", aggregate: name, status: r.statusCode.name });
  }
  await session.close();
  await client.disconnect();
  emit({ event: "done" });
}

main().catch((err) => { emit({ event: "error", message: String(err && err.message || err) }); process.exit(1); });
