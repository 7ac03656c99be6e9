// An independent OPC UA client for otopcua's interop tests.
//
// Usage: node client.mjs <endpointUrl> [seconds]
//
// Connects with security None, reads the redundancy surface, browses
// Server.ServerRedundancy, subscribes to Server.ServiceLevel and prints one
// JSON object per line on stdout until the time is up or stdin closes.
import {
  OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds,
  TimestampsToReturn, ClientMonitoredItem, BrowseDirection, StatusCodes,
} from "node-opcua-client";

const endpointUrl = process.argv[2];
const seconds = Number(process.argv[3] || 60);
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const plain = (v) => (typeof v === "bigint" ? Number(v) : v);

async function main() {
  const client = OPCUAClient.create({
    applicationName: "otopcua-interop",
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 2, initialDelay: 200, maxDelay: 1000 },
  });
  await client.connect(endpointUrl);
  const session = await client.createSession();
  emit({ event: "connected" });

  const ids = { serviceLevel: "i=2267", serverArray: "i=2254", redundancySupport: "i=3709", serverUriArray: "i=11314", state: "i=2259" };
  for (const [name, nodeId] of Object.entries(ids)) {
    const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
    let value = dv.value.value;
    if (value && typeof value === "object" && "length" in value) value = Array.from(value);
    emit({ event: "read", name, nodeId, status: dv.statusCode.name, value: plain(value) });
  }

  const browse = await session.browse({
    nodeId: "i=2296", browseDirection: BrowseDirection.Forward,
    includeSubtypes: true, nodeClassMask: 0, resultMask: 63,
  });
  emit({
    event: "browse", nodeId: "i=2296", status: browse.statusCode.name,
    references: browse.references.map((r) => ({
      referenceTypeId: r.referenceTypeId.toString(), nodeId: r.nodeId.toString(),
      browseName: r.browseName.toString(),
    })),
  });

  const write = await session.write({
    nodeId: "i=2267", attributeId: AttributeIds.Value,
    value: { value: { dataType: "Byte", value: 1 } },
  });
  emit({ event: "write", nodeId: "i=2267", status: write.name });

  const sub = await session.createSubscription2({
    requestedPublishingInterval: 100, requestedLifetimeCount: 600,
    requestedMaxKeepAliveCount: 20, maxNotificationsPerPublish: 0,
    publishingEnabled: true, priority: 1,
  });
  const item = ClientMonitoredItem.create(sub,
    { nodeId: "i=2267", attributeId: AttributeIds.Value },
    { samplingInterval: 50, discardOldest: true, queueSize: 10 },
    TimestampsToReturn.Both);
  item.on("changed", (dv) => emit({ event: "change", nodeId: "i=2267", status: dv.statusCode.name, value: plain(dv.value.value) }));
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
