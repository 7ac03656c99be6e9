package configdb

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
	addDeployment    string // $1 cluster_id, $2 artifact, $3 created_at → id
	latestDeployment string // $1 cluster_id
	writeAudit       string // $1 at, $2 actor, $3 action, $4 target, $5 detail
	recentAudit      string // $1 limit
}

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
		addDeployment: d.bind(d.insertReturningID("deployments", "cluster_id", "artifact", "created_at")),
		latestDeployment: d.bind("SELECT id, cluster_id, artifact, created_at FROM deployments " +
			"WHERE cluster_id = $1 ORDER BY id DESC" + d.limit("1")),
		writeAudit: d.bind("INSERT INTO audit_log (at, actor, action, target, detail) VALUES ($1, $2, $3, $4, $5)"),
		recentAudit: d.bind("SELECT id, at, actor, action, target, detail FROM audit_log " +
			"ORDER BY id DESC" + d.limit("$1")),
	}
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
		{"addDeployment", q.addDeployment},
		{"latestDeployment", q.latestDeployment},
		{"writeAudit", q.writeAudit},
		{"recentAudit", q.recentAudit},
	}
}
