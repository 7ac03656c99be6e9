// An ordinary OPC UA client of one endpoint URL, for the floating address
// drills (tests/floating): nothing redundancy-aware, node-opcua's default
// connection strategy and reconnection.
//
// Usage: node floating.mjs <endpointUrl> <namespaceUri> <tag> [samplingInterval]
//
// Connects with security None, subscribes to the tag (ns=<index of
// namespaceUri>;s=<tag>; sampling interval 100 ms unless given, queue 100)
// and prints one JSON object per line on stdout:
// {"event":"value","value":N,"status":"Good","session":"…","subscription":N}
// per notification (the session and subscription it arrived on), and the
// client's connection events (connection_lost, backoff,
// connection_reestablished, session_restored). It runs until stdin closes.
import {
  OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds,
  TimestampsToReturn, ClientMonitoredItem,
} from "node-opcua-client";

const [endpointUrl, namespaceUri, tag, sampling] = process.argv.slice(2);
const samplingInterval = sampling === undefined ? 100 : Number(sampling);
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");

async function main() {
  const client = OPCUAClient.create({
    applicationName: "otopcua-floating-client",
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    // The node's endpoints name its own address; the client knows only the
    // floating one.
    endpointMustExist: false,
  });
  for (const ev of ["connection_lost", "connection_reestablished", "start_reconnection", "after_reconnection"]) {
    client.on(ev, () => emit({ event: ev }));
  }
  client.on("backoff", (retry, delay) => emit({ event: "backoff", retry, delay }));
  await client.connect(endpointUrl);
  const session = await client.createSession();
  session.on("session_restored", () => emit({ event: "session_restored" }));
  emit({ event: "connected" });

  const ns = await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value });
  const index = Array.from(ns.value.value).indexOf(namespaceUri);
  if (index < 0) throw new Error(`namespace ${namespaceUri} not in ${ns.value.value}`);
  const sub = await session.createSubscription2({
    requestedPublishingInterval: 100, requestedLifetimeCount: 600,
    requestedMaxKeepAliveCount: 20, maxNotificationsPerPublish: 0,
    publishingEnabled: true, priority: 1,
  });
  const item = ClientMonitoredItem.create(sub,
    { nodeId: `ns=${index};s=${tag}`, attributeId: AttributeIds.Value },
    { samplingInterval, discardOldest: true, queueSize: 100 },
    TimestampsToReturn.Both);
  item.on("changed", (dv) => emit({
    event: "value", value: Number(dv.value.value), status: dv.statusCode.name,
    session: session.sessionId.toString(), subscription: sub.subscriptionId,
  }));
  emit({ event: "subscribed", nodeId: `ns=${index};s=${tag}` });

  process.stdin.resume();
  await new Promise((resolve) => process.stdin.on("end", resolve));
  await client.disconnect();
}

main().catch((err) => {
  emit({ event: "error", message: String(err && err.stack || err) });
  process.exit(1);
});
