// An upstream field device for the tests of otopcua's OPC UA client driver
// ("driver": "opcua"): a node-opcua server whose variables change on a
// timer and which counts the writes it receives.
//
// Usage: node upstream.mjs '<json options>'
//   port        listen on 127.0.0.1:<port> (required)
//   uri         ApplicationUri (required)
//   vars        number of changing Double variables ns=2;s=V<i> (default 10)
//   periodMs    every variable takes the next tick's value every periodMs
//               (default 100); the value is the tick number 1, 2, 3 …
//   level       Server.ServiceLevel (default 255)
//   pki         this server's PKI folder (default: a temp folder per port)
//   secure      offer only Basic256Sha256 SignAndEncrypt, users only
//   users       {"name": "password"} accepted UserName tokens
//   trustAll    accept any client certificate (default true)
//   floodEvery  instead of periodMs, change every variable every
//               floodEvery ms in bursts of floodBurst values (hostile)
//   slowMs      answer every Read and Write this many ms late (hostile)
//
// Namespace 2 (urn:otopcua:test:upstream) under Objects:
//   ns=2;s=V<i>       Double, read-only, the tick number
//   ns=2;s=Setpoint   Int32, writable; every write prints `write <value>`
//   ns=2;s=Limited    Int32, writable; a value above 100 is refused
//                     with BadOutOfRange (printed `refused <value>`)
//   ns=2;s=Flaky      Double, Good 1.5, or BadSensorFailure after `bad`
//   ns=2;s=Flag       Boolean false
// stdin commands: `bad`, `good` (Flaky's status), `level <n>`.
// Prints `ready opc.tcp://127.0.0.1:<port>` once listening; exits on
// SIGTERM, SIGINT or when stdin closes.
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { OPCUAServer } from "node-opcua-server";
import { OPCUACertificateManager } from "node-opcua-certificate-manager";
import { DataType, MessageSecurityMode, SecurityPolicy, StatusCodes, Variant } from "node-opcua-client";

const o = JSON.parse(process.argv[2] || "{}");
if (!o.port || !o.uri) {
  process.stderr.write("usage: node upstream.mjs '{\"port\": N, \"uri\": \"urn:…\"}'\n");
  process.exit(2);
}
const nVars = o.vars ?? 10;
const periodMs = o.periodMs ?? 100;
let serviceLevel = o.level ?? 255;
const pkiDir = o.pki || path.join(os.tmpdir(), `otopcua-upstream-pki-${o.port}`);
const users = o.users || {};
const out = (line) => process.stdout.write(line + "\n");
const slow = (f) => (o.slowMs ? new Promise((r) => setTimeout(() => r(f()), o.slowMs)) : f());

async function main() {
  const server = new OPCUAServer({
    port: o.port,
    host: "127.0.0.1",
    hostname: "127.0.0.1",
    securityModes: o.secure ? [MessageSecurityMode.SignAndEncrypt] : [MessageSecurityMode.None],
    securityPolicies: o.secure ? [SecurityPolicy.Basic256Sha256] : [SecurityPolicy.None],
    allowAnonymous: !o.secure,
    userManager: {
      isValidUser: (name, password) => Object.prototype.hasOwnProperty.call(users, name) && users[name] === password,
    },
    serverCertificateManager: new OPCUACertificateManager({
      rootFolder: pkiDir,
      automaticallyAcceptUnknownCertificate: o.trustAll ?? true,
    }),
    serverInfo: {
      applicationUri: o.uri,
      productUri: "urn:otopcua:test:upstream",
      applicationName: { text: `upstream ${o.port}` },
    },
    buildInfo: { productName: "otopcua test upstream" },
    serverCapabilities: { maxSessions: 20 },
  });
  await server.initialize();

  const addressSpace = server.engine.addressSpace;
  const ns = addressSpace.registerNamespace("urn:otopcua:test:upstream");
  if (ns.index !== 2) throw new Error(`namespace index ${ns.index}, want 2`);
  const objects = addressSpace.rootFolder.objects;

  const vars = [];
  for (let i = 0; i < nVars; i++) {
    const v = ns.addVariable({
      organizedBy: objects, nodeId: `s=V${i}`, browseName: `V${i}`, dataType: "Double",
      accessLevel: "CurrentRead", userAccessLevel: "CurrentRead", minimumSamplingInterval: 0,
    });
    v.setValueFromSource(new Variant({ dataType: DataType.Double, value: 0 }), StatusCodes.Good);
    vars.push(v);
  }

  let setpoint = 0;
  ns.addVariable({
    organizedBy: objects, nodeId: "s=Setpoint", browseName: "Setpoint", dataType: "Int32",
    accessLevel: "CurrentRead | CurrentWrite", userAccessLevel: "CurrentRead | CurrentWrite", minimumSamplingInterval: 0,
  }).bindVariable({
    get: () => new Variant({ dataType: DataType.Int32, value: setpoint }),
    set: (variant) => slow(() => { setpoint = variant.value; out(`write ${setpoint}`); return StatusCodes.Good; }),
  }, true);

  let limited = 0;
  ns.addVariable({
    organizedBy: objects, nodeId: "s=Limited", browseName: "Limited", dataType: "Int32",
    accessLevel: "CurrentRead | CurrentWrite", userAccessLevel: "CurrentRead | CurrentWrite", minimumSamplingInterval: 0,
  }).bindVariable({
    get: () => new Variant({ dataType: DataType.Int32, value: limited }),
    set: (variant) => {
      if (variant.value > 100) { out(`refused ${variant.value}`); return StatusCodes.BadOutOfRange; }
      limited = variant.value; out(`limited ${limited}`); return StatusCodes.Good;
    },
  }, true);

  const flaky = ns.addVariable({
    organizedBy: objects, nodeId: "s=Flaky", browseName: "Flaky", dataType: "Double",
    accessLevel: "CurrentRead", userAccessLevel: "CurrentRead", minimumSamplingInterval: 0,
  });
  flaky.setValueFromSource(new Variant({ dataType: DataType.Double, value: 1.5 }), StatusCodes.Good);

  ns.addVariable({
    organizedBy: objects, nodeId: "s=Flag", browseName: "Flag", dataType: "Boolean",
    accessLevel: "CurrentRead", userAccessLevel: "CurrentRead",
    value: new Variant({ dataType: DataType.Boolean, value: false }),
  });

  const level = addressSpace.findNode("i=2267");
  level.bindVariable({ get: () => new Variant({ dataType: DataType.Byte, value: serviceLevel }) }, true);

  let tick = 0;
  const step = () => {
    tick += 1;
    const v = new Variant({ dataType: DataType.Double, value: tick });
    for (const x of vars) x.setValueFromSource(v, StatusCodes.Good);
  };
  const timer = o.floodEvery
    ? setInterval(() => { for (let k = 0; k < (o.floodBurst ?? 10); k++) step(); }, o.floodEvery)
    : setInterval(step, periodMs);


  await server.start();
  out(`ready opc.tcp://127.0.0.1:${o.port}`);

  const rl = readline.createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    const [cmd, arg] = line.trim().split(/\s+/);
    if (cmd === "bad") flaky.setValueFromSource(new Variant({ dataType: DataType.Double, value: 1.5 }), StatusCodes.BadSensorFailure);
    if (cmd === "good") flaky.setValueFromSource(new Variant({ dataType: DataType.Double, value: 2.5 }), StatusCodes.Good);
    if (cmd === "level") serviceLevel = Number(arg);
    out(`ok ${line.trim()}`);
  });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    clearInterval(timer);
    try { await server.shutdown(0); } finally { process.exit(0); }
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  rl.on("close", stop);
}

main().catch((err) => {
  process.stderr.write(`upstream.mjs: ${err && err.stack || err}\n`);
  process.exit(1);
});
