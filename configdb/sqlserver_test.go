package configdb

import (
	"context"
	"errors"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SQL Server cannot run on the test machines (no SQL Server for Linux
// package in Debian, no container engine). These tests cover what can be
// checked without a server: connection string handling, that Open does not
// contact the server, that Ping fails within its deadline when nothing
// answers, and the generated T-SQL text (golden file testdata/sqlserver.sql
// plus checks that no other dialect's syntax leaks in). Running the schema
// and the helpers against a real SQL Server is left to a site acceptance
// test.

func TestSQLServerConnectionStrings(t *testing.T) {
	for _, cs := range []string{
		"sqlserver://otopcua:s3cret@127.0.0.1:1433?database=otopcua",
		"sqlserver://otopcua:s3cret@db.plant.lan/SQLEXPRESS?database=otopcua&encrypt=true&TrustServerCertificate=true",
		"Server=127.0.0.1,1433;Database=otopcua;User Id=otopcua;Password=s3cret;Encrypt=false",
		"server=db.plant.lan;database=otopcua;user id=otopcua;password={p;w};connection timeout=5",
		"odbc:server=db.plant.lan;database=otopcua;user id=otopcua;password=s3cret",
	} {
		start := time.Now()
		db, err := Open(context.Background(), "sqlserver", cs)
		if err != nil {
			t.Errorf("Open(sqlserver, %q): %v", cs, err)
			continue
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("Open(%q) took %v: it must not contact the server", cs, took)
		}
		if db.Provider() != ProviderSQLServer {
			t.Errorf("Provider() = %q", db.Provider())
		}
		_ = db.Close()
	}
	for _, cs := range []string{
		"sqlserver://127.0.0.1?port=notaport",
		"Server=127.0.0.1;Port=99999",
		"sqlserver://127.0.0.1?dial+timeout=soon",
		"sqlserver://127.0.0.1?connection+timeout=-1",
		"sqlserver://127.0.0.1?protocol=carrier-pigeon",
	} {
		_, err := Open(context.Background(), "SQLServer", cs)
		if !errors.Is(err, ErrBadConnectionString) {
			t.Errorf("Open(sqlserver, %q) = %v, want ErrBadConnectionString", cs, err)
			continue
		}
		if !strings.Contains(err.Error(), "sqlserver://user:password@host:1433?database=otopcua") {
			t.Errorf("error %q shows no example connection string", err)
		}
	}
}

func TestPostgresConnectionStrings(t *testing.T) {
	for _, cs := range []string{
		"postgres://otopcua:s3cret@127.0.0.1:5432/otopcua?sslmode=disable",
		"host=127.0.0.1 port=5432 user=otopcua password=s3cret dbname=otopcua sslmode=disable",
	} {
		db, err := Open(context.Background(), "postgres", cs)
		if err != nil {
			t.Errorf("Open(postgres, %q): %v", cs, err)
			continue
		}
		_ = db.Close()
	}
	_, err := Open(context.Background(), "postgres", "postgres://otopcua:s3cret@127.0.0.1:notaport/otopcua")
	if !errors.Is(err, ErrBadConnectionString) {
		t.Fatalf("a bad port: %v, want ErrBadConnectionString", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the error shows the password: %v", err)
	}
}

// TestSQLServerPingFailsWithinItsDeadline points the driver at a loopback
// port where nothing listens, and at one that accepts TCP but never
// answers the login: both Pings fail, the second one at its deadline.
func TestSQLServerPingFailsWithinItsDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := l.Addr().(*net.TCPAddr).Port
	l.Close()

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	silentPort := silent.Addr().(*net.TCPAddr).Port

	for _, tc := range []struct {
		name string
		port int
	}{{"refused", closedPort}, {"silent", silentPort}} {
		db, err := Open(context.Background(), "sqlserver",
			"sqlserver://otopcua:x@127.0.0.1:"+strconv.Itoa(tc.port)+"?database=otopcua&encrypt=disable")
		if err != nil {
			t.Fatal(err)
		}
		const deadline = 700 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- db.Ping(ctx) }()
		select {
		case err = <-done:
		case <-time.After(deadline + 5*time.Second):
			t.Fatalf("%s: Ping still running %v after its %v deadline", tc.name, time.Since(start)-deadline, deadline)
		}
		took := time.Since(start)
		cancel()
		_ = db.Close()
		if err == nil {
			t.Fatalf("%s: Ping succeeded with no SQL Server", tc.name)
		}
		if !strings.Contains(err.Error(), "sqlserver: SELECT 1") {
			t.Fatalf("%s: error %q does not name the provider and the probe query", tc.name, err)
		}
		if took > deadline+500*time.Millisecond {
			t.Fatalf("%s: Ping took %v, deadline %v", tc.name, took, deadline)
		}
		t.Logf("%s: Ping failed after %v: %v", tc.name, took, err)
	}
}

var (
	atParam     = regexp.MustCompile(`@p(\d+)`)
	dollarParam = regexp.MustCompile(`\$\d`)
	qmarkParam  = regexp.MustCompile(`\?\d*`)
	foreignTSQL = []string{"LIMIT", "ON CONFLICT", "RETURNING", "IF NOT EXISTS", "AUTOINCREMENT", "BYTEA", "TIMESTAMPTZ", "BLOB", " TEXT", "excluded.",
		"FOR UPDATE", "clock_timestamp", "strftime", "RENAME TO"}
	requiredTSQL = []string{"NVARCHAR(200)", "NVARCHAR(4000)", "NVARCHAR(MAX)", "VARBINARY(MAX)", "BIGINT IDENTITY(1,1) PRIMARY KEY",
		"DATETIMEOFFSET(6)", "BIT NOT NULL"}
)

// TestSQLServerStatementText checks every T-SQL statement otopcua sends:
// @pN placeholders numbered from 1 without gaps, none of the other
// dialects' syntax, and the SQL Server column types in the schema.
func TestSQLServerStatementText(t *testing.T) {
	d := sqlServerDialect
	q := buildQueries(d)
	for _, nq := range append(q.named(), [2]string{"hasAlarmHistory", d.hasAlarmHistory(alarmKeyChunk)},
		[2]string{"acquireLease(evict)", d.acquireLease(MaxLeaseEvict)}) {
		name, stmt := nq[0], nq[1]
		if dollarParam.MatchString(stmt) || qmarkParam.MatchString(stmt) {
			t.Errorf("%s: placeholder of another dialect in %q", name, stmt)
		}
		seen := map[int]bool{}
		max := 0
		for _, m := range atParam.FindAllStringSubmatch(stmt, -1) {
			n, _ := strconv.Atoi(m[1])
			seen[n] = true
			if n > max {
				max = n
			}
		}
		for n := 1; n <= max; n++ {
			if !seen[n] {
				t.Errorf("%s: @p%d missing (parameters up to @p%d) in %q", name, n, max, stmt)
			}
		}
		checkNoForeignSyntax(t, name, stmt)
	}
	stmts := []string{schemaVersionTable(d), d.lockStmt}
	for _, m := range migrations {
		stmts = append(stmts, m.stmts(d)...)
	}
	schema := strings.Join(stmts, "\n")
	checkNoForeignSyntax(t, "schema", schema)
	for _, want := range requiredTSQL {
		if !strings.Contains(schema, want) {
			t.Errorf("schema lacks %s:\n%s", want, schema)
		}
	}
	if !strings.HasPrefix(schemaVersionTable(d), "IF OBJECT_ID(N'schema_version', N'U') IS NULL CREATE TABLE schema_version (") {
		t.Errorf("schema_version creation is not guarded: %s", schemaVersionTable(d))
	}
	if !strings.Contains(d.lockStmt, "sp_getapplock") || !strings.Contains(d.lockStmt, "@LockOwner = N'Transaction'") {
		t.Errorf("migration lock is not a transaction-owned application lock: %s", d.lockStmt)
	}
	// Deployments: the version is assigned under an update lock on the
	// cluster's row, created_at is the server's UTC clock, the schema
	// version 2 rebuild renames its table with sp_rename.
	if q.lockCluster != "SELECT id FROM clusters WITH (UPDLOCK, HOLDLOCK) WHERE id = @p1" {
		t.Errorf("lockCluster = %q", q.lockCluster)
	}
	if !strings.Contains(q.insertDeployment, "TODATETIMEOFFSET(SYSUTCDATETIME(), 0)") {
		t.Errorf("insertDeployment does not stamp the server's clock: %q", q.insertDeployment)
	}
	if !strings.Contains(schema, "EXEC sp_rename N'deployments_v2', N'deployments'") {
		t.Errorf("schema version 2 does not rename with sp_rename:\n%s", schema)
	}
	// User names compare byte for byte (the default collation folds case),
	// and the token index allows many users without a token.
	if !strings.Contains(schema, "name VARCHAR(64) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY") {
		t.Errorf("admin_users.name is not a binary-collated key:\n%s", schema)
	}
	if !strings.Contains(schema, "CREATE UNIQUE INDEX admin_users_token ON admin_users (token_hash) WHERE token_hash IS NOT NULL") {
		t.Errorf("admin_users_token is not a filtered unique index:\n%s", schema)
	}
	// The MERGE upserts must end with the semicolon T-SQL requires.
	for _, stmt := range []string{q.upsertCluster, q.upsertNode, q.ensureCluster, q.insertAlarmHistory, q.insertUser, q.insertLease} {
		if !strings.HasPrefix(stmt, "MERGE ") || !strings.HasSuffix(stmt, ";") {
			t.Errorf("upsert is not a terminated MERGE: %q", stmt)
		}
	}
}

// TestSQLServerLeaseStatements checks the cluster_leases T-SQL (version 5)
// that no SQL Server here can run: the expiry is SQL Server's UTC clock in
// microseconds (DATEDIFF_BIG, SQL Server 2016 and later), the take is one
// UPDATE that returns the epoch with OUTPUT (placed between SET and WHERE),
// the row is created by a MERGE WITH (HOLDLOCK) so two nodes cannot both
// insert it, and holders compare byte for byte.
func TestSQLServerLeaseStatements(t *testing.T) {
	d := sqlServerDialect
	q := buildQueries(d)
	const now = "DATEDIFF_BIG(microsecond, CAST('1970-01-01T00:00:00' AS DATETIME2(7)), SYSUTCDATETIME())"
	for _, stmt := range []string{q.acquireLease, q.readLease, d.acquireLease(3)} {
		if !strings.Contains(stmt, now) {
			t.Errorf("lease statement does not use SQL Server's clock in microseconds: %q", stmt)
		}
	}
	for _, stmt := range []string{q.acquireLease, d.acquireLease(3)} {
		set, out, where := strings.Index(stmt, " SET "), strings.Index(stmt, " OUTPUT inserted.epoch "), strings.Index(stmt, " WHERE ")
		if !strings.HasPrefix(stmt, "UPDATE cluster_leases SET ") || set < 0 || out < set || where < out {
			t.Errorf("acquireLease is not UPDATE … SET … OUTPUT inserted.epoch WHERE …: %q", stmt)
		}
		if strings.Count(stmt, ";") != 0 {
			t.Errorf("acquireLease is more than one statement: %q", stmt)
		}
	}
	if got := d.acquireLease(3); !strings.HasSuffix(got, "OR holder IN (@p4, @p5, @p6))") {
		t.Errorf("acquireLease(3) evict list: %q", got)
	}
	if !strings.HasPrefix(q.insertLease, "MERGE cluster_leases WITH (HOLDLOCK) ") {
		t.Errorf("insertLease is not a locked MERGE: %q", q.insertLease)
	}
	schema := strings.Join(schemaV5(d), "\n")
	for _, want := range []string{
		"cluster_id NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY",
		"holder NVARCHAR(200) COLLATE Latin1_General_100_BIN2 NOT NULL",
		"epoch BIGINT NOT NULL", "expires_at BIGINT NOT NULL",
	} {
		if !strings.Contains(schema, want) {
			t.Errorf("cluster_leases lacks %q:\n%s", want, schema)
		}
	}
}

func checkNoForeignSyntax(t *testing.T, name, stmt string) {
	t.Helper()
	upper := strings.ToUpper(stmt)
	for _, bad := range foreignTSQL {
		if strings.Contains(upper, strings.ToUpper(bad)) {
			t.Errorf("%s: %q is not T-SQL, in %q", name, bad, stmt)
		}
	}
}
