// An independent OPC UA server for otopcua's interop tests: `otopcua client`
// is checked against a stack that is not otopcua.
//
// Usage: node server.mjs <port> <applicationUri> [serviceLevel] [pkiDir]
//
// Listens on 127.0.0.1:<port> only, security None, anonymous allowed. In
// namespace 1 under Objects:
//   ns=1;s=Setpoint  Int32, writable, initially 0
//   ns=1;s=Counter   Double, read-only, +1 every 100 ms
// Server.ServiceLevel (i=2267) reads serviceLevel (default 255).
// pkiDir holds this server's own self-signed certificate (default: a
// folder named after the port in the OS temp dir), so that servers with
// different ApplicationUris never share one certificate.
//
// Prints `ready opc.tcp://127.0.0.1:<port>` on stdout once listening, and
// shuts down on SIGTERM, SIGINT or when stdin closes.
import os from "node:os";
import path from "node:path";
import { OPCUAServer } from "node-opcua-server";
import { OPCUACertificateManager } from "node-opcua-certificate-manager";
import { DataType, MessageSecurityMode, SecurityPolicy, StatusCodes, Variant } from "node-opcua-client";

const port = Number(process.argv[2]);
const applicationUri = process.argv[3];
const serviceLevel = process.argv[4] === undefined ? 255 : Number(process.argv[4]);
const pkiDir = process.argv[5] || path.join(os.tmpdir(), `otopcua-interop-pki-${port}`);
if (!Number.isInteger(port) || port <= 0 || !applicationUri ||
    !Number.isInteger(serviceLevel) || serviceLevel < 0 || serviceLevel > 255) {
  process.stderr.write("usage: node server.mjs <port> <applicationUri> [serviceLevel 0..255] [pkiDir]\n");
  process.exit(2);
}
const endpointUrl = `opc.tcp://127.0.0.1:${port}`;

async function main() {
  const server = new OPCUAServer({
    port,
    host: "127.0.0.1",
    hostname: "127.0.0.1",
    securityModes: [MessageSecurityMode.None],
    securityPolicies: [SecurityPolicy.None],
    allowAnonymous: true,
    serverCertificateManager: new OPCUACertificateManager({
      rootFolder: pkiDir,
      automaticallyAcceptUnknownCertificate: true,
    }),
    serverInfo: {
      applicationUri,
      productUri: "urn:otopcua:interop:node-opcua-server",
      applicationName: { text: `node-opcua interop ${port}` },
    },
    buildInfo: { productName: "otopcua interop node-opcua server" },
  });
  await server.initialize();

  const addressSpace = server.engine.addressSpace;
  const ns = addressSpace.getOwnNamespace();
  if (ns.index !== 1) throw new Error(`own namespace has index ${ns.index}, want 1`);
  const objects = addressSpace.rootFolder.objects;

  ns.addVariable({
    organizedBy: objects,
    nodeId: "s=Setpoint",
    browseName: "Setpoint",
    dataType: "Int32",
    accessLevel: "CurrentRead | CurrentWrite",
    userAccessLevel: "CurrentRead | CurrentWrite",
    value: new Variant({ dataType: DataType.Int32, value: 0 }),
  });

  const counter = ns.addVariable({
    organizedBy: objects,
    nodeId: "s=Counter",
    browseName: "Counter",
    dataType: "Double",
    accessLevel: "CurrentRead",
    userAccessLevel: "CurrentRead",
    minimumSamplingInterval: 50,
  });
  let count = 0;
  counter.setValueFromSource(new Variant({ dataType: DataType.Double, value: count }), StatusCodes.Good);
  const tick = setInterval(() => {
    count += 1;
    counter.setValueFromSource(new Variant({ dataType: DataType.Double, value: count }), StatusCodes.Good);
  }, 100);

  // The engine binds ServiceLevel to a getter that answers 255; bind ours
  // over it (overwrite = true).
  const level = addressSpace.findNode("i=2267");
  if (!level) throw new Error("Server.ServiceLevel (i=2267) not found");
  level.bindVariable({
    get: () => new Variant({ dataType: DataType.Byte, value: serviceLevel }),
  }, true);

  await server.start();
  process.stdout.write(`ready ${endpointUrl}\n`);

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    clearInterval(tick);
    try {
      await server.shutdown(0);
    } finally {
      process.exit(0);
    }
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  process.stdin.on("end", stop);
  process.stdin.on("close", stop);
  process.stdin.resume();
}

main().catch((err) => {
  process.stderr.write(`server.mjs: ${err && err.stack || err}\n`);
  process.exit(1);
});
