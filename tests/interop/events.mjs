// node-opcua as an event subscriber, for otopcua's interop tests.
//
// Usage: node events.mjs <endpointUrl> [seconds]
//
// Connects with security None and creates two event monitored items on the
// Server object (i=2253): "all" selects the BaseEventType fields and the
// AuditWriteUpdateEventType ones (by name, typeDefinitionId BaseEventType,
// as node-opcua's constructEventFilter does); "audit" selects two fields
// where OfType(AuditEventType). Prints one JSON object per line: created
// (per item, with its status), subscribed, event (per event notification,
// the fields by name), closed; until the time is up or stdin closes.
import {
  OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds,
  TimestampsToReturn, ClientMonitoredItem, constructEventFilter, ofType, DataType,
} from "node-opcua-client";

const endpointUrl = process.argv[2];
const seconds = Number(process.argv[3] || 60);
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const allFields = ["EventId", "EventType", "SourceNode", "SourceName", "Time", "ReceiveTime",
  "Message", "Severity", "ClientUserId", "Status", "ServerId", "AttributeId", "OldValue", "NewValue"];
const auditFields = ["EventType", "Message"];

// plain turns a field Variant into JSON: NodeIds as strings, LocalizedText
// as its text, ByteStrings as hex, DateTimes as ISO text, null as null.
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

function monitor(sub, name, fields, where) {
  return new Promise((resolve, reject) => {
    const item = ClientMonitoredItem.create(sub,
      { nodeId: "i=2253", attributeId: AttributeIds.EventNotifier },
      { queueSize: 10, discardOldest: true, filter: constructEventFilter(fields, where) },
      TimestampsToReturn.Neither);
    item.on("initialized", () => { emit({ event: "created", item: name, status: "Good" }); resolve(item); });
    item.on("err", (msg) => { emit({ event: "created", item: name, status: String(msg) }); reject(new Error(msg)); });
    item.on("changed", (eventFields) => {
      const out = {};
      fields.forEach((f, i) => { out[f] = plain(eventFields[i]); });
      emit({ event: "event", item: name, fields: out });
    });
  });
}

async function main() {
  const client = OPCUAClient.create({
    applicationName: "otopcua-interop-events",
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 2, initialDelay: 200, maxDelay: 1000 },
  });
  await client.connect(endpointUrl);
  const session = await client.createSession();
  emit({ event: "connected" });

  const sub = await session.createSubscription2({
    requestedPublishingInterval: 100, requestedLifetimeCount: 600,
    requestedMaxKeepAliveCount: 20, maxNotificationsPerPublish: 0,
    publishingEnabled: true, priority: 1,
  });
  await monitor(sub, "all", allFields);
  await monitor(sub, "audit", auditFields, ofType("AuditEventType"));
  emit({ event: "subscribed", subscriptionId: sub.subscriptionId });

  await new Promise((resolve) => {
    const timer = setTimeout(resolve, seconds * 1000);
    process.stdin.on("end", () => { clearTimeout(timer); resolve(); });
    process.stdin.resume();
  });
  await sub.terminate();
  await session.close();
  await client.disconnect();
  emit({ event: "closed" });
}

main().then(() => process.exit(0), (err) => {
  emit({ event: "error", message: String(err && err.message || err) });
  process.exit(1);
});
