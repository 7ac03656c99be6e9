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
//   alarm       an AlarmConditionType condition ns=2;s=TankHigh on
//               ns=2;s=Level (with ConfirmedState), notified by the Server
//               object; {"active": true} raises it at start
//   tree        add the folder tree Line1 below (browsePath and mirror tests)
//   huge        add the folder Huge with this many Double variables
//               ns=2;s=Huge.H<i> (a huge browse result, hostile)
//   deep        add a chain of this many nested folders Deep/D1/D2/…
//               (ns=2;s=Deep.<k>), each with one variable X (hostile)
//
// Namespace 2 (urn:otopcua:test:upstream) under Objects:
//   ns=2;s=V<i>       Double, read-only, the tick number
//   ns=2;s=Setpoint   Int32, writable; every write prints `write <value>`
//   ns=2;s=Limited    Int32, writable; a value above 100 is refused
//                     with BadOutOfRange (printed `refused <value>`)
//   ns=2;s=Flaky      Double, Good 1.5, or BadSensorFailure after `bad`
//   ns=2;s=Flag       Boolean false
//   ns=2;s=Level      Double 10, the alarm's source (with alarm)
// stdin commands: `bad`, `good` (Flaky's status), `level <n>`; with
// alarm, `alarm on` and `alarm off` (active, inactive). Every Acknowledge
// and Confirm the alarm accepts prints `ack <EventId hex> <comment>` and
// `confirm <EventId hex> <comment>`.
// With tree:
//   ns=2;s=Line1               folder Line1
//   ns=2;s=Line1.Speed         Double AnalogItem, the tick number; EURange
//                              0..100, EngineeringUnits rpm, Description
//   ns=2;s=Line1.Count         UInt32 42, Description "Parts counted"
//   ns=2;s=Line1.Mode          Int32, writable; a write prints `mode <value>`
//   ns=2;s=Line1.Motor         folder Motor
//   ns=2;s=Line1.Motor.Temp    Float AnalogItem 21.5, EURange -20..150, °C
// and the stdin commands, with tree:
// `add <name>` adds the Double variable ns=2;s=Line1.<name> (value 7) and
// `remove <name>` deletes it (a namespace change, in a model change
// transaction).
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

  const alarm = o.alarm ? addAlarm(ns, objects, addressSpace) : null;
  if (o.tree) buildTree(ns, objects);
  if (o.huge) {
    const huge = ns.addFolder(objects, { nodeId: "s=Huge", browseName: "Huge" });
    for (let i = 0; i < o.huge; i++) {
      ns.addVariable({ componentOf: huge, nodeId: `s=Huge.H${i}`, browseName: `H${i}`, dataType: "Double",
        value: new Variant({ dataType: DataType.Double, value: i }) });
    }
  }
  if (o.deep) {
    let parent = ns.addFolder(objects, { nodeId: "s=Deep", browseName: "Deep" });
    for (let k = 1; k <= o.deep; k++) {
      parent = ns.addFolder(parent, { nodeId: `s=Deep.${k}`, browseName: `D${k}` });
      ns.addVariable({ componentOf: parent, nodeId: `s=Deep.${k}.X`, browseName: "X", dataType: "Double",
        value: new Variant({ dataType: DataType.Double, value: k }) });
    }
  }

  const level = addressSpace.findNode("i=2267");
  level.bindVariable({ get: () => new Variant({ dataType: DataType.Byte, value: serviceLevel }) }, true);

  let tick = 0;
  const step = () => {
    tick += 1;
    const v = new Variant({ dataType: DataType.Double, value: tick });
    for (const x of vars) x.setValueFromSource(v, StatusCodes.Good);
    if (treeSpeed) treeSpeed.setValueFromSource(v, StatusCodes.Good);
  };
  const timer = o.floodEvery
    ? setInterval(() => { for (let k = 0; k < (o.floodBurst ?? 10); k++) step(); }, o.floodEvery)
    : setInterval(step, periodMs);


  await server.start();
  if (alarm && o.alarm.active) setAlarm(alarm, true);
  out(`ready opc.tcp://127.0.0.1:${o.port}`);

  const rl = readline.createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    const [cmd, arg] = line.trim().split(/\s+/);
    if (cmd === "bad") flaky.setValueFromSource(new Variant({ dataType: DataType.Double, value: 1.5 }), StatusCodes.BadSensorFailure);
    if (cmd === "good") flaky.setValueFromSource(new Variant({ dataType: DataType.Double, value: 2.5 }), StatusCodes.Good);
    if (cmd === "level") serviceLevel = Number(arg);
    if (cmd === "alarm" && alarm) setAlarm(alarm, arg === "on");
    if (cmd === "add" && o.tree) {
      addressSpace.modelChangeTransaction(() => {
        ns.addVariable({ componentOf: addressSpace.findNode("ns=2;s=Line1"), nodeId: `s=Line1.${arg}`, browseName: arg, dataType: "Double",
          value: new Variant({ dataType: DataType.Double, value: 7 }) });
      });
    }
    if (cmd === "remove" && o.tree) {
      const node = addressSpace.findNode(`ns=2;s=Line1.${arg}`);
      if (node) addressSpace.modelChangeTransaction(() => addressSpace.deleteNode(node));
    }
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

// addAlarm adds the Level variable and its AlarmConditionType condition
// TankHigh, whose events the Server object notifies.
function addAlarm(ns, objects, addressSpace) {
  addressSpace.installAlarmsAndConditionsService(); // binds ConditionRefresh, Acknowledge, Confirm
  const tank = ns.addObject({ organizedBy: objects, nodeId: "s=Tank", browseName: "Tank", eventNotifier: 1 });
  const levelVar = ns.addVariable({
    componentOf: tank, nodeId: "s=Level", browseName: "Level", dataType: "Double",
    accessLevel: "CurrentRead", userAccessLevel: "CurrentRead",
    value: new Variant({ dataType: DataType.Double, value: 10 }),
  });
  const server = addressSpace.rootFolder.objects.server;
  server.addReference({ referenceType: "HasNotifier", nodeId: tank });
  tank.addReference({ referenceType: "HasEventSource", nodeId: levelVar });
  const a = ns.instantiateAlarmCondition("AlarmConditionType", {
    componentOf: tank, conditionSource: levelVar, browseName: "TankHigh", nodeId: "s=TankHigh",
    inputNode: levelVar, conditionName: "TankHigh", optionals: ["ConfirmedState", "Confirm"],
  });
  a.setEnabledState(true);
  a.on("acknowledged", (eventId, comment) => out(`ack ${Buffer.from(eventId || []).toString("hex")} ${comment?.text ?? ""}`));
  a.on("confirmed", (eventId, comment) => out(`confirm ${Buffer.from(eventId || []).toString("hex")} ${comment?.text ?? ""}`));
  return a;
}

// setAlarm raises (active) or clears the alarm on its trunk.
function setAlarm(a, active) {
  const b = a.currentBranch();
  if (active) {
    b.setActiveState(true);
    b.setAckedState(false);
    if (a.confirmedState) b.setConfirmedState(false);
    a.raiseNewCondition({ message: "tank high", severity: 800, quality: StatusCodes.Good, retain: true });
  } else {
    b.setActiveState(false);
    const retain = !b.getAckedState() || (a.confirmedState ? !b.getConfirmedState() : false);
    a.raiseNewCondition({ message: "tank normal", severity: 800, quality: StatusCodes.Good, retain });
  }
}

// treeSpeed is Line1.Speed, which takes the tick number.
let treeSpeed = null;

// buildTree adds the folder Line1 (see the usage).
function buildTree(ns, objects) {
  const line = ns.addFolder(objects, { nodeId: "s=Line1", browseName: "Line1" });
  treeSpeed = ns.addAnalogDataItem({
    componentOf: line, nodeId: "s=Line1.Speed", browseName: "Speed", dataType: "Double",
    description: "Belt speed", minimumSamplingInterval: 0,
    engineeringUnitsRange: { low: 0, high: 100 },
    engineeringUnits: { unitId: 4403792, displayName: "rpm", description: "revolutions per minute" },
  });
  treeSpeed.setValueFromSource(new Variant({ dataType: DataType.Double, value: 0 }), StatusCodes.Good);
  ns.addVariable({
    componentOf: line, nodeId: "s=Line1.Count", browseName: "Count", dataType: "UInt32", description: "Parts counted",
    value: new Variant({ dataType: DataType.UInt32, value: 42 }),
  });
  let mode = 0;
  ns.addVariable({
    componentOf: line, nodeId: "s=Line1.Mode", browseName: "Mode", dataType: "Int32",
    accessLevel: "CurrentRead | CurrentWrite", userAccessLevel: "CurrentRead | CurrentWrite", minimumSamplingInterval: 0,
  }).bindVariable({
    get: () => new Variant({ dataType: DataType.Int32, value: mode }),
    set: (variant) => { mode = variant.value; out(`mode ${mode}`); return StatusCodes.Good; },
  }, true);
  const motor = ns.addFolder(line, { nodeId: "s=Line1.Motor", browseName: "Motor" });
  ns.addAnalogDataItem({
    componentOf: motor, nodeId: "s=Line1.Motor.Temp", browseName: "Temp", dataType: "Float",
    engineeringUnitsRange: { low: -20, high: 150 },
    engineeringUnits: { unitId: 4408652, displayName: "°C", description: "degree Celsius" },
    value: new Variant({ dataType: DataType.Float, value: 21.5 }),
  });
}

main().catch((err) => {
  process.stderr.write(`upstream.mjs: ${err && err.stack || err}\n`);
  process.exit(1);
});
