// node-opcua against otopcua's data plane, for the interop tests.
//
// Usage: node dataplane.mjs <endpointUrl> <watchTag> <writeTag> <writeValue> [events]
//
// Reads watchTag, subscribes to it and waits for two notifications, writes
// writeValue (Int16) to writeTag and prints one JSON object per line on
// stdout. With
// "events", it also subscribes to the Server object's events with an
// OfType AuditWriteUpdateEventType filter before the write and prints the
// audit event it receives.
import {
  OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds, TimestampsToReturn,
  ClientMonitoredItem, DataType, constructEventFilter, ofType,
} from "node-opcua-client";

const [endpointUrl, tag, writeTag, writeValue, events] = process.argv.slice(2);
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const plain = (v) => (typeof v === "bigint" ? Number(v) : v);

async function main() {
  const client = OPCUAClient.create({
    applicationName: "otopcua-interop-dataplane",
    securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None,
    endpointMustExist: false, connectionStrategy: { maxRetry: 2, initialDelay: 200, maxDelay: 1000 },
  });
  await client.connect(endpointUrl);
  const session = await client.createSession();

  const dv = await session.read({ nodeId: tag, attributeId: AttributeIds.Value });
  emit({ event: "read", status: dv.statusCode.name, value: plain(dv.value.value) });

  const sub = await session.createSubscription2({
    requestedPublishingInterval: 100, requestedLifetimeCount: 600, requestedMaxKeepAliveCount: 20,
    maxNotificationsPerPublish: 0, publishingEnabled: true, priority: 1,
  });
  const item = ClientMonitoredItem.create(sub, { nodeId: tag, attributeId: AttributeIds.Value },
    { samplingInterval: 100, discardOldest: true, queueSize: 10 }, TimestampsToReturn.Both);
  let changes = 0;
  const twoChanges = new Promise((resolve) => {
    item.on("changed", (v) => {
      emit({ event: "changed", status: v.statusCode.name, value: plain(v.value.value) });
      if (++changes >= 2) resolve();
    });
  });

  let audit;
  if (events === "events") {
    const fields = ["EventType", "SourceNode", "Message", "Status", "OldValue", "NewValue", "AttributeId"];
    const filter = constructEventFilter(fields, ofType("AuditWriteUpdateEventType"));
    const ev = ClientMonitoredItem.create(sub, { nodeId: "i=2253", attributeId: AttributeIds.EventNotifier },
      { queueSize: 10, filter, discardOldest: true }, TimestampsToReturn.Both);
    audit = new Promise((resolve) => {
      ev.on("changed", (values) => {
        const o = { event: "audit" };
        values.forEach((v, i) => { o[fields[i]] = v.value === null || v.value === undefined ? null : String(plain(v.value)); });
        emit(o);
        resolve();
      });
    });
    await new Promise((r) => setTimeout(r, 300));
  }

  await Promise.race([twoChanges, new Promise((r) => setTimeout(r, 10000))]);
  const st = await session.write({ nodeId: writeTag, attributeId: AttributeIds.Value,
    value: { value: { dataType: DataType.Int16, value: Number(writeValue) } } });
  emit({ event: "write", status: st.name });
  if (audit) await Promise.race([audit, new Promise((r) => setTimeout(r, 10000))]);

  await sub.terminate();
  await session.close();
  await client.disconnect();
  emit({ event: "done" });
}

main().catch((err) => { emit({ event: "error", message: String(err && err.message || err) }); process.exit(1); });
