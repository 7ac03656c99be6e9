// node-opcua against otopcua's secured endpoints, for the interop tests.
//
// Usage: node secure.mjs <pkiDir> <serverCertificate.der>
//
// The client's own PKI lives in pkiDir: node-opcua generates its
// application instance certificate there at the first command (printed as
// {"event":"ready","certificate":FILE}) and trusts the server's
// certificate, nothing else. Then it reads one JSON command a line from
// stdin and answers each with one JSON line on stdout:
//
//   {"op":"endpoints","url":U}
//       GetEndpoints on a None channel: {"event":"endpoints","endpoints":[{policy,mode,tokens}]}
//   {"op":"session","url":U,"policy":"Basic256Sha256","mode":"SignAndEncrypt",
//    "user":{"type":"anonymous"|"username"|"x509",...},"read":NODEID,"subscribe":NODEID,
//    "write":{"nodeId":NODEID,"value":N}}
//       connects, activates a session with the user token, then reads,
//       subscribes (until two notifications) and writes (Int16) as asked:
//       {"event":"session","connectMs","sessionMs","read","changes","write"}, or
//       {"event":"refused","stage":"connect"|"session","status","message"}.
//       With "ignoreEndpoints":true the session is asked for even when no
//       endpoint offers the policy and mode (see pretendOffered).
//
// A user is {"type":"username","name","password"} or
// {"type":"x509","certificate":DER_FILE,"key":PEM_FILE}.
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import {
  OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds, TimestampsToReturn,
  ClientMonitoredItem, DataType, UserTokenType,
} from "node-opcua-client";
import { OPCUACertificateManager } from "node-opcua-certificate-manager";

const [pkiDir, serverCertFile] = process.argv.slice(2);
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const plain = (v) => (typeof v === "bigint" ? Number(v) : v);
const statusOf = (err) => {
  const m = String((err && err.message) || err).match(/Bad[A-Za-z]+/);
  return m ? m[0] : "";
};

const certificateManager = new OPCUACertificateManager({
  rootFolder: pkiDir, automaticallyAcceptUnknownCertificate: false,
});
const serverCertificate = fs.readFileSync(serverCertFile);

function newClient(policy, mode) {
  return OPCUAClient.create({
    applicationName: "otopcua-interop-secure",
    applicationUri: "urn:otopcua-interop:secure",
    clientCertificateManager: certificateManager,
    securityPolicy: SecurityPolicy[policy], securityMode: MessageSecurityMode[mode],
    serverCertificate: mode === "None" ? undefined : serverCertificate,
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 60000,
  });
}

function identity(u) {
  switch (u && u.type) {
    case "username":
      return { type: UserTokenType.UserName, userName: u.name, password: u.password };
    case "x509":
      return {
        type: UserTokenType.Certificate,
        certificateData: fs.readFileSync(u.certificate),
        privateKey: fs.readFileSync(u.key, "utf8"),
      };
    default:
      return { type: UserTokenType.Anonymous };
  }
}

async function endpoints(cmd) {
  const client = newClient("None", "None");
  await client.connect(cmd.url);
  try {
    const eps = await client.getEndpoints();
    emit({
      event: "endpoints",
      endpoints: eps.map((e) => ({
        policy: e.securityPolicyUri.split("#")[1],
        mode: MessageSecurityMode[e.securityMode],
        tokens: (e.userIdentityTokens || []).map((p) => UserTokenType[p.tokenType]),
      })),
    });
  } finally {
    await client.disconnect();
  }
}

// pretendOffered makes client create its session on its channel even
// though the server offers no endpoint with that policy and mode (a
// client that ignores GetEndpoints): it takes the first endpoint the
// server lists, with the channel's policy and mode in place of its own.
async function pretendOffered(client, policy, mode) {
  const eps = await client.getEndpoints();
  if (!eps.length) throw new Error("GetEndpoints lists no endpoint");
  const ep = eps[0];
  ep.securityMode = MessageSecurityMode[mode];
  ep.securityPolicyUri = SecurityPolicy[policy];
  client.findEndpoint = () => ep;
  client.findEndpointForSecurity = () => ep;
}

async function session(cmd) {
  const client = newClient(cmd.policy, cmd.mode);
  const out = { event: "session", policy: cmd.policy, mode: cmd.mode };
  let t0 = performance.now();
  try {
    await client.connect(cmd.url);
  } catch (err) {
    await client.disconnect().catch(() => {});
    emit({ event: "refused", stage: "connect", status: statusOf(err), message: String(err.message || err) });
    return;
  }
  out.connectMs = +(performance.now() - t0).toFixed(1);
  if (cmd.ignoreEndpoints) await pretendOffered(client, cmd.policy, cmd.mode);
  let s;
  t0 = performance.now();
  try {
    s = await client.createSession(identity(cmd.user));
  } catch (err) {
    await client.disconnect().catch(() => {});
    emit({ event: "refused", stage: "session", status: statusOf(err), message: String(err.message || err),
      connectMs: out.connectMs });
    return;
  }
  out.sessionMs = +(performance.now() - t0).toFixed(1);
  try {
    await resolveNamespaces(s, cmd);
    if (cmd.read) {
      const dv = await s.read({ nodeId: cmd.read, attributeId: AttributeIds.Value });
      out.read = { status: dv.statusCode.name, value: plain(dv.value.value) };
    }
    if (cmd.subscribe) {
      out.changes = await twoChanges(s, cmd.subscribe);
    }
    if (cmd.write) {
      const st = await s.write({ nodeId: cmd.write.nodeId, attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Int16, value: cmd.write.value } } });
      out.write = st.name;
    }
  } finally {
    await s.close().catch(() => {});
    await client.disconnect();
  }
  emit(out);
}

// resolveNamespaces replaces "nsu=URI;" in the command's NodeIds by
// "ns=INDEX;" from the server's NamespaceArray.
async function resolveNamespaces(s, cmd) {
  const dv = await s.read({ nodeId: "i=2255", attributeId: AttributeIds.Value });
  const uris = dv.value.value || [];
  const fix = (id) => id && id.replace(/^nsu=([^;]+);/, (_, uri) => {
    const i = uris.indexOf(uri);
    if (i < 0) throw new Error(`namespace ${uri} not in ${uris}`);
    return `ns=${i};`;
  });
  cmd.read = fix(cmd.read);
  cmd.subscribe = fix(cmd.subscribe);
  if (cmd.write) cmd.write.nodeId = fix(cmd.write.nodeId);
}

// twoChanges subscribes to nodeId and returns its first two notifications
// (or what came within 10 s).
async function twoChanges(s, nodeId) {
  const sub = await s.createSubscription2({
    requestedPublishingInterval: 100, requestedLifetimeCount: 600, requestedMaxKeepAliveCount: 20,
    maxNotificationsPerPublish: 0, publishingEnabled: true, priority: 1,
  });
  const item = ClientMonitoredItem.create(sub, { nodeId, attributeId: AttributeIds.Value },
    { samplingInterval: 100, discardOldest: true, queueSize: 10 }, TimestampsToReturn.Both);
  const changes = [];
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, 10000);
    item.on("changed", (v) => {
      changes.push({ status: v.statusCode.name, value: plain(v.value.value) });
      if (changes.length >= 2) { clearTimeout(timer); resolve(); }
    });
  });
  await sub.terminate();
  return changes;
}

async function main() {
  await certificateManager.initialize();
  await certificateManager.trustCertificate(serverCertificate);
  // The first client creates the application instance certificate.
  const probe = newClient("None", "None");
  if (probe.createDefaultCertificate) await probe.createDefaultCertificate();
  emit({ event: "ready", certificate: path.join(pkiDir, "own", "certs", "client_certificate.pem") });
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const cmd = JSON.parse(line);
    try {
      if (cmd.op === "endpoints") await endpoints(cmd);
      else if (cmd.op === "session") await session(cmd);
      else emit({ event: "error", message: `unknown op ${cmd.op}` });
    } catch (err) {
      emit({ event: "error", message: String((err && err.message) || err) });
    }
  }
  emit({ event: "closed" });
  process.exit(0);
}

main().catch((err) => { emit({ event: "error", message: String((err && err.message) || err) }); process.exit(1); });
