package configdb

import (
	"fmt"
	"strings"
)

// queries holds every statement the helpers run, rendered once for a
// dialect by buildQueries.
type queries struct {
	tableExists      string // $1 table name → count
	insertVersion    string // $1 version, $2 name, $3 applied_at
	clusterExists    string // $1 id → count
	upsertCluster    string // $1 id, $2 name, $3 now
	upsertNode       string // $1 cluster_id, $2 node_id, $3 application_uri, $4 service_level_base, $5 now
	setSLB           string // $1 service_level_base, $2 now, $3 cluster_id, $4 node_id
	listNodes        string // $1 cluster_id
	ensureCluster    string // $1 id (and name), $2 now: insert unless present
	lockCluster      string // $1 id → id, write-locked until commit ("" = none needed)
	deploymentHead   string // $1 cluster_id → version, sha256, created_at of the newest
	insertDeployment string // $1 cluster_id, $2 version, $3 document, $4 sha256 (created_at: the DB's clock)
	deploymentAt     string // $1 cluster_id, $2 version → created_at
	latestDeployment string // $1 cluster_id → the newest row
	deploymentByVer  string // $1 cluster_id, $2 version → that row
	// The migration to schema version 2 hashes the copied rows with these.
	unhashedDeployments    string // → cluster_id, version of rows without sha256
	deploymentDocument     string // $1 cluster_id, $2 version → document
	setDeploymentHash      string // $1 sha256, $2 cluster_id, $3 version
	writeAudit             string // $1 at, $2 actor, $3 action, $4 target, $5 detail
	recentAudit            string // $1 limit
	insertAlarmHistory     string // $1 … $16 alarmHistoryInsertCols
	raiseEpoch             string // $1 cluster_id, $2 epoch: one row affected unless $2 is older than the stored epoch
	newestEpoch            string // $1 cluster_id → the stored epoch
	alarmHistoryAsc        string // $1 cluster_id, $2 from (incl.), $3 to (excl.), $4 limit → oldest first
	alarmHistoryDesc       string // $1 cluster_id, $2 from (excl.), $3 to (incl.), $4 limit → newest first
	insertUser             string // $1 name, $2 role, $3 password_hash, $4 now: insert unless the name exists
	setUserPassword        string // $1 password_hash, $2 now, $3 name
	setUserToken           string // $1 token_hash (or NULL), $2 now, $3 name
	deleteUser             string // $1 name
	listUsers              string // → every row, by name
	userByName             string // $1 name → the row
	userByToken            string // $1 token_hash → the row
	countUsers             string // → count
	insertLease            string // $1 cluster_id: a free row unless present
	acquireLease           string // $1 cluster_id, $2 owner, $3 ttl µs → epoch (no evict list; see dialect.acquireLease)
	releaseLease           string // $1 cluster_id, $2 owner: free the row if $2 holds it
	readLease              string // $1 cluster_id → holder, epoch, microseconds left (database's clock)
	putHeartbeat           string // $1 cluster_id, $2 node, $3 emitted_at µs, $4 claims, $5 epoch, $6 mac, $7 draining, $8 healthy, $9 licensed → seq, observed_at
	listHeartbeats         string // $1 cluster_id → every row, by node
	countFloatingIdentity  string // $1 cluster_id → count
	insertFloatingIdentity string // $1 cluster_id, $2 application_uri, $3 certificate, $4 sealed_key, $5 created_at µs
	updateFloatingIdentity string // $1 application_uri, $2 certificate, $3 sealed_key, $4 created_at µs, $5 cluster_id
	floatingIdentity       string // $1 cluster_id → application_uri, certificate, sealed_key, created_at
}

// adminUserCols are the columns an AdminUser is scanned from.
const adminUserCols = "name, role, password_hash, token_hash, created_at, updated_at"

// alarmHistoryInsertCols are the alarm_history columns a caller supplies,
// in the order of insertAlarmHistory's parameters.
const alarmHistoryInsertCols = "cluster_id, alarm, transition_id, kind, event_time, severity, message, source, value, " +
	"user_name, comment, active, acked, confirmed, enabled, payload"

// alarmHistoryCols are the columns an AlarmHistoryRow is scanned from.
const alarmHistoryCols = "id, " + alarmHistoryInsertCols + ", inserted_at"

// deploymentCols are the columns a Deployment is scanned from.
const deploymentCols = "cluster_id, version, document, sha256, created_at"

func buildQueries(d *dialect) *queries {
	return &queries{
		tableExists:   d.bind(d.tableExists),
		insertVersion: d.bind("INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)"),
		clusterExists: d.bind("SELECT COUNT(*) FROM clusters WHERE id = $1"),
		upsertCluster: d.bind(d.upsertCluster()),
		upsertNode:    d.bind(d.upsertClusterNode()),
		setSLB: d.bind("UPDATE cluster_nodes SET service_level_base = $1, updated_at = $2 " +
			"WHERE cluster_id = $3 AND node_id = $4"),
		listNodes: d.bind("SELECT cluster_id, node_id, application_uri, service_level_base, created_at, updated_at " +
			"FROM cluster_nodes WHERE cluster_id = $1 ORDER BY node_id"),
		ensureCluster: d.bind(d.insertClusterIfMissing()),
		lockCluster:   d.bind(d.lockCluster),
		deploymentHead: d.bind("SELECT version, sha256, created_at FROM deployments " +
			"WHERE cluster_id = $1 ORDER BY version DESC" + d.limit("1")),
		insertDeployment: d.bind("INSERT INTO deployments (cluster_id, version, document, sha256, created_at) " +
			"VALUES ($1, $2, $3, $4, " + d.dbNow + ")"),
		deploymentAt: d.bind("SELECT created_at FROM deployments WHERE cluster_id = $1 AND version = $2"),
		latestDeployment: d.bind("SELECT " + deploymentCols + " FROM deployments " +
			"WHERE cluster_id = $1 ORDER BY version DESC" + d.limit("1")),
		deploymentByVer:     d.bind("SELECT " + deploymentCols + " FROM deployments WHERE cluster_id = $1 AND version = $2"),
		unhashedDeployments: d.bind("SELECT cluster_id, version FROM deployments WHERE sha256 = '' ORDER BY cluster_id, version"),
		deploymentDocument:  d.bind("SELECT document FROM deployments WHERE cluster_id = $1 AND version = $2"),
		setDeploymentHash:   d.bind("UPDATE deployments SET sha256 = $1 WHERE cluster_id = $2 AND version = $3"),
		writeAudit:          d.bind("INSERT INTO audit_log (at, actor, action, target, detail) VALUES ($1, $2, $3, $4, $5)"),
		recentAudit: d.bind("SELECT id, at, actor, action, target, detail FROM audit_log " +
			"ORDER BY id DESC" + d.limit("$1")),
		insertAlarmHistory: d.bind(d.insertAlarmHistory()),
		raiseEpoch:         d.bind(d.raiseEpoch()),
		newestEpoch:        d.bind("SELECT epoch FROM cluster_epochs WHERE cluster_id = $1"),
		alarmHistoryAsc: d.bind("SELECT " + alarmHistoryCols + " FROM alarm_history " +
			"WHERE cluster_id = $1 AND event_time >= $2 AND event_time < $3 ORDER BY event_time, id" + d.limit("$4")),
		alarmHistoryDesc: d.bind("SELECT " + alarmHistoryCols + " FROM alarm_history " +
			"WHERE cluster_id = $1 AND event_time > $2 AND event_time <= $3 ORDER BY event_time DESC, id DESC" + d.limit("$4")),
		insertUser:      d.bind(d.insertUserIfMissing()),
		setUserPassword: d.bind("UPDATE admin_users SET password_hash = $1, updated_at = $2 WHERE name = $3"),
		setUserToken:    d.bind("UPDATE admin_users SET token_hash = $1, updated_at = $2 WHERE name = $3"),
		deleteUser:      d.bind("DELETE FROM admin_users WHERE name = $1"),
		listUsers:       d.bind("SELECT " + adminUserCols + " FROM admin_users ORDER BY name"),
		userByName:      d.bind("SELECT " + adminUserCols + " FROM admin_users WHERE name = $1"),
		userByToken:     d.bind("SELECT " + adminUserCols + " FROM admin_users WHERE token_hash = $1"),
		countUsers:      d.bind("SELECT COUNT(*) FROM admin_users"),
		insertLease:     d.bind(d.insertLeaseIfMissing()),
		acquireLease:    d.acquireLease(0),
		releaseLease: d.bind("UPDATE cluster_leases SET holder = '', expires_at = 0 " +
			"WHERE cluster_id = $1 AND holder = $2"),
		putHeartbeat:          d.bind(d.upsertHeartbeat()),
		listHeartbeats:        d.bind("SELECT node, seq, emitted_at, observed_at, claims, epoch, mac, draining, healthy, licensed FROM floating_heartbeats WHERE cluster_id = $1 ORDER BY node"),
		countFloatingIdentity: d.bind("SELECT COUNT(*) FROM floating_identities WHERE cluster_id = $1"),
		insertFloatingIdentity: d.bind("INSERT INTO floating_identities (cluster_id, application_uri, certificate, sealed_key, created_at) " +
			"VALUES ($1, $2, $3, $4, $5)"),
		updateFloatingIdentity: d.bind("UPDATE floating_identities SET application_uri = $1, certificate = $2, sealed_key = $3, created_at = $4 " +
			"WHERE cluster_id = $5"),
		floatingIdentity: d.bind("SELECT application_uri, certificate, sealed_key, created_at FROM floating_identities WHERE cluster_id = $1"),
		readLease:        d.bind("SELECT holder, epoch, expires_at - " + d.dbNowMicros + " FROM cluster_leases WHERE cluster_id = $1"),
	}
}

// hasAlarmHistory: $1 cluster_id, then alarm and transition_id of n keys
// ($2, $3 the first) → alarm, transition_id of those stored.
func (d *dialect) hasAlarmHistory(n int) string {
	var b strings.Builder
	b.WriteString("SELECT alarm, transition_id FROM alarm_history WHERE cluster_id = $1 AND (")
	for i := range n {
		if i > 0 {
			b.WriteString(" OR ")
		}
		fmt.Fprintf(&b, "(alarm = $%d AND transition_id = $%d)", 2+2*i, 3+2*i)
	}
	b.WriteString(")")
	return d.bind(b.String())
}

// named lists the statements with their names, in a fixed order (for the
// golden files and the dialect tests).
func (q *queries) named() [][2]string {
	return [][2]string{
		{"tableExists", q.tableExists},
		{"insertVersion", q.insertVersion},
		{"clusterExists", q.clusterExists},
		{"upsertCluster", q.upsertCluster},
		{"upsertNode", q.upsertNode},
		{"setSLB", q.setSLB},
		{"listNodes", q.listNodes},
		{"ensureCluster", q.ensureCluster},
		{"lockCluster", q.lockCluster},
		{"deploymentHead", q.deploymentHead},
		{"insertDeployment", q.insertDeployment},
		{"deploymentAt", q.deploymentAt},
		{"latestDeployment", q.latestDeployment},
		{"deploymentByVer", q.deploymentByVer},
		{"unhashedDeployments", q.unhashedDeployments},
		{"deploymentDocument", q.deploymentDocument},
		{"setDeploymentHash", q.setDeploymentHash},
		{"writeAudit", q.writeAudit},
		{"recentAudit", q.recentAudit},
		{"insertAlarmHistory", q.insertAlarmHistory},
		{"raiseEpoch", q.raiseEpoch},
		{"newestEpoch", q.newestEpoch},
		{"alarmHistoryAsc", q.alarmHistoryAsc},
		{"alarmHistoryDesc", q.alarmHistoryDesc},
		{"insertUser", q.insertUser},
		{"setUserPassword", q.setUserPassword},
		{"setUserToken", q.setUserToken},
		{"deleteUser", q.deleteUser},
		{"listUsers", q.listUsers},
		{"userByName", q.userByName},
		{"userByToken", q.userByToken},
		{"countUsers", q.countUsers},
		{"insertLease", q.insertLease},
		{"acquireLease", q.acquireLease},
		{"releaseLease", q.releaseLease},
		{"readLease", q.readLease},
		{"putHeartbeat", q.putHeartbeat},
		{"listHeartbeats", q.listHeartbeats},
		{"countFloatingIdentity", q.countFloatingIdentity},
		{"insertFloatingIdentity", q.insertFloatingIdentity},
		{"updateFloatingIdentity", q.updateFloatingIdentity},
		{"floatingIdentity", q.floatingIdentity},
	}
}
