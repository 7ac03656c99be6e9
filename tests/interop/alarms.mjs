// node-opcua as an alarm client, for otopcua's interop tests.
//
// Usage: node alarms.mjs <endpointUrl> <conditionName> [seconds] [watch]
//
// With "watch": subscribes, then waits for the live event of
// <conditionName> going active and prints it (active); nothing else.
//
// Connects with security None, subscribes to events on the Server object
// (i=2253) selecting the condition fields (ConditionId included, as
// node-opcua's constructEventFilter builds it), then:
//   1. calls ConditionRefresh (i=3875 on ConditionType i=2782) and prints
//      the refreshed set (the events between RefreshStartEvent i=2787 and
//      RefreshEndEvent i=2788);
//   2. takes the refreshed event of <conditionName> and calls Acknowledge
//      (i=9111) on its ConditionId with its EventId; prints the status;
//   3. when the status is Good, waits for the event with AckedState.Id
//      true;
//   4. calls ConditionRefresh again and prints the set.
// One JSON object per line: connected, refresh (set), ack (status),
// acked (event), error.
import {
  OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds,
  TimestampsToReturn, ClientMonitoredItem, constructEventFilter, DataType, Variant, LocalizedText,
} from "node-opcua-client";

const [endpointUrl, conditionName] = process.argv.slice(2, 4);
const seconds = Number(process.argv[4] || 30);
const watch = process.argv[5] === "watch";
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const fields = ["EventId", "EventType", "SourceName", "ConditionName", "Severity", "Message", "Retain",
  "ActiveState.Id", "AckedState.Id", "ConfirmedState.Id", "EnabledState.Id", "ConditionId"];

function plain(v) {
  if (!v || v.dataType === DataType.Null) return null;
  const x = v.value;
  switch (v.dataType) {
    case DataType.NodeId: return x.toString();
    case DataType.LocalizedText: return x.text;
    case DataType.ByteString: return Buffer.from(x).toString("hex");
    case DataType.DateTime: return x.toISOString();
    default: return typeof x === "bigint" ? Number(x) : x;
  }
}

async function main() {
  const client = OPCUAClient.create({
    applicationName: "otopcua-interop-alarms",
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 2, initialDelay: 200, maxDelay: 1000 },
  });
  const deadline = setTimeout(() => { emit({ event: "error", message: "timed out" }); process.exit(1); }, seconds * 1000);
  await client.connect(endpointUrl);
  const session = await client.createSession();
  emit({ event: "connected" });
  const sub = await session.createSubscription2({
    requestedPublishingInterval: 100, requestedLifetimeCount: 600,
    requestedMaxKeepAliveCount: 20, maxNotificationsPerPublish: 0,
    publishingEnabled: true, priority: 1,
  });
  const waiters = [];
  let refreshing = null;
  const item = ClientMonitoredItem.create(sub,
    { nodeId: "i=2253", attributeId: AttributeIds.EventNotifier },
    { queueSize: 100, discardOldest: false, filter: constructEventFilter(fields) },
    TimestampsToReturn.Neither);
  await new Promise((resolve, reject) => { item.on("initialized", resolve); item.on("err", (m) => reject(new Error(m))); });
  item.on("changed", (values) => {
    const ev = {};
    fields.forEach((f, i) => { ev[f] = plain(values[i]); });
    if (ev.EventType === "ns=0;i=2787") { refreshing = []; return; }
    if (ev.EventType === "ns=0;i=2788") { const set = refreshing; refreshing = null; waiters.forEach((w) => w("refresh", set)); return; }
    if (refreshing) { refreshing.push(ev); return; }
    waiters.forEach((w) => w("event", ev));
  });
  const next = (kind, pred) => new Promise((resolve) => {
    const w = (k, v) => { if (k === kind && pred(v)) { waiters.splice(waiters.indexOf(w), 1); resolve(v); } };
    waiters.push(w);
  });
  const refresh = async () => {
    const done = next("refresh", () => true);
    const res = await session.call({ objectId: "i=2782", methodId: "i=3875",
      inputArguments: [new Variant({ dataType: DataType.UInt32, value: sub.subscriptionId })] });
    if (res.statusCode.name !== "Good") throw new Error("ConditionRefresh: " + res.statusCode.toString());
    const set = await done;
    emit({ event: "refresh", set });
    return set;
  };

  if (watch) {
    emit({ event: "subscribed" });
    const ev = await next("event", (e) => e.ConditionName === conditionName && e["ActiveState.Id"] === true);
    emit({ event: "active", fields: ev });
    clearTimeout(deadline);
    await sub.terminate();
    await session.close();
    await client.disconnect();
    return;
  }
  const set = await refresh();
  const cond = set.find((e) => e.ConditionName === conditionName);
  if (!cond) throw new Error("ConditionRefresh did not return " + conditionName);
  const acked = next("event", (e) => e.ConditionName === conditionName && e["AckedState.Id"] === true);
  const res = await session.call({ objectId: cond.ConditionId, methodId: "i=9111",
    inputArguments: [
      new Variant({ dataType: DataType.ByteString, value: Buffer.from(cond.EventId, "hex") }),
      new Variant({ dataType: DataType.LocalizedText, value: new LocalizedText({ text: "seen by node-opcua" }) }),
    ] });
  emit({ event: "ack", status: res.statusCode.name });
  if (res.statusCode.name === "Good") emit({ event: "acked", fields: await acked });
  await refresh();
  clearTimeout(deadline);
  await sub.terminate();
  await session.close();
  await client.disconnect();
}

main().then(() => process.exit(0), (err) => {
  emit({ event: "error", message: String(err && err.message || err) });
  process.exit(1);
});
