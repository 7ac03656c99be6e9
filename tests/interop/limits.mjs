// node-opcua against otopcua's client limits, for the interop tests.
//
// Usage: node limits.mjs <endpointUrl>
//
// Reads the limits the server publishes, creates one monitored item more
// than OperationLimits.MaxMonitoredItemsPerCall in one call (the server
// must refuse the call), then exactly that many (all Good), and prints one
// JSON object per line on stdout.
import {
  OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds, TimestampsToReturn,
  MonitoringMode,
} from "node-opcua-client";

const endpointUrl = process.argv[2];
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");

async function main() {
  const client = OPCUAClient.create({
    applicationName: "otopcua-interop-limits",
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 2, initialDelay: 200, maxDelay: 1000 },
  });
  await client.connect(endpointUrl);
  const session = await client.createSession();

  const limits = { maxMonitoredItemsPerCall: "i=11714", maxSubscriptionsPerSession: "i=24098", maxSessions: "i=24095", currentSessions: "i=2277" };
  const values = {};
  for (const [name, nodeId] of Object.entries(limits)) {
    const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
    values[name] = dv.value.value;
    emit({ event: "read", name, nodeId, status: dv.statusCode.name, value: dv.value.value });
  }

  const sub = await session.createSubscription2({
    requestedPublishingInterval: 100, requestedLifetimeCount: 600,
    requestedMaxKeepAliveCount: 20, maxNotificationsPerPublish: 0,
    publishingEnabled: true, priority: 1,
  });
  const items = (n) => Array.from({ length: n }, (_, k) => ({
    itemToMonitor: { nodeId: "i=2267", attributeId: AttributeIds.Value },
    monitoringMode: MonitoringMode.Reporting,
    requestedParameters: { clientHandle: k + 1, samplingInterval: 100, queueSize: 1, discardOldest: true },
  }));
  const call = async (n) => {
    try {
      const r = await session.createMonitoredItems({
        subscriptionId: sub.subscriptionId, timestampsToReturn: TimestampsToReturn.Both, itemsToCreate: items(n),
      });
      const good = r.results.filter((x) => x.statusCode.isGood()).length;
      emit({ event: "createMonitoredItems", count: n, status: r.responseHeader.serviceResult.name, good });
    } catch (err) {
      emit({ event: "createMonitoredItems", count: n, status: (err.response && err.response.responseHeader.serviceResult.name) || err.message });
    }
  };
  await call(values.maxMonitoredItemsPerCall + 1);
  await call(values.maxMonitoredItemsPerCall);

  await sub.terminate();
  await session.close();
  await client.disconnect();
  emit({ event: "done" });
}

main().catch((err) => {
  emit({ event: "error", message: String(err && err.message || err) });
  process.exit(1);
});
