// node-opcua's own historian serving a given history, for the side-by-side
// raw read of bench/historyread (docs/benchmarks.md "Process history").
//
// Usage: node historian.mjs <port> <startMs> <everyMs> <count>
//
// Listens on 127.0.0.1:<port> only, security None, anonymous allowed, with
// one historizing Double variable ns=1;s=Big under Objects whose
// in-memory historian (node-opcua's VariableHistorian, maxOnlineValues =
// count) holds count values, the first at startMs (Unix ms) and one every
// everyMs, value i the same slowly changing analog as Go's
// internal/histfill.Analog: round((50 + 10·sin(2πi/36000))·100)/100.
//
// Prints `ready opc.tcp://127.0.0.1:<port> <rssBytes>` on stdout once it
// listens with the history loaded, and stops when stdin closes.
import os from "node:os";
import path from "node:path";
import { OPCUAServer } from "node-opcua-server";
import { OPCUACertificateManager } from "node-opcua-certificate-manager";
import { DataType, DataValue, MessageSecurityMode, SecurityPolicy, StatusCodes, Variant } from "node-opcua-client";

const [port, startMs, everyMs, count] = process.argv.slice(2).map(Number);
if (![port, startMs, everyMs, count].every(Number.isFinite)) {
  process.stderr.write("usage: node historian.mjs <port> <startMs> <everyMs> <count>\n");
  process.exit(2);
}
const endpointUrl = `opc.tcp://127.0.0.1:${port}`;
const analog = (i) => Math.round((50 + 10 * Math.sin(2 * Math.PI * i / 36000)) * 100) / 100;

async function main() {
  const server = new OPCUAServer({
    port, host: "127.0.0.1", hostname: "127.0.0.1",
    securityModes: [MessageSecurityMode.None], securityPolicies: [SecurityPolicy.None], allowAnonymous: true,
    serverCertificateManager: new OPCUACertificateManager({
      rootFolder: path.join(os.tmpdir(), `otopcua-historian-pki-${port}`), automaticallyAcceptUnknownCertificate: true,
    }),
    serverInfo: { applicationUri: `urn:otopcua:bench:node-opcua-historian:${port}`, productUri: "urn:otopcua:bench:node-opcua-historian",
      applicationName: { text: "node-opcua historian" } },
    serverCapabilities: { maxHistoryContinuationPoints: 10 },
  });
  await server.initialize();
  const addressSpace = server.engine.addressSpace;
  const ns = addressSpace.getOwnNamespace();
  const big = ns.addVariable({
    organizedBy: addressSpace.rootFolder.objects, nodeId: "s=Big", browseName: "Big", dataType: "Double",
    accessLevel: "CurrentRead | HistoryRead", userAccessLevel: "CurrentRead | HistoryRead",
  });
  addressSpace.installHistoricalDataNode(big, { maxOnlineValues: count });
  for (let i = 0; i < count; i++) {
    const at = new Date(startMs + i * everyMs);
    await big.varHistorian.push(new DataValue({
      value: new Variant({ dataType: DataType.Double, value: analog(i) }),
      statusCode: StatusCodes.Good, sourceTimestamp: at, serverTimestamp: at,
    }));
  }
  await server.start();
  process.stdout.write(`ready ${endpointUrl} ${process.memoryUsage().rss}\n`);
  const stop = async () => {
    try { await server.shutdown(0); } finally { process.exit(0); }
  };
  process.stdin.on("end", stop);
  process.stdin.on("close", stop);
  process.stdin.resume();
}

main().catch((err) => {
  process.stderr.write(`historian.mjs: ${err && err.stack || err}\n`);
  process.exit(1);
});
