package localdb

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// stmtCache holds the prepared form of the queries that run on a timer —
// the historian drain's peek and queue statistics, twice a second on the
// Primary — so that SQLite parses and plans each once per connection
// instead of at every run (the parse was most of an idle node's database
// CPU). database/sql prepares a cached statement again on each connection
// it runs on, and on a transaction's connection through Tx.StmtContext.
type stmtCache struct {
	mu     sync.Mutex
	closed bool                 // mu must be held
	m      map[string]*sql.Stmt // mu must be held
}

// errClosed is returned once Close has run.
var errClosed = errors.New("localdb: closed")

// prepared returns the cached statement for query, preparing it on first
// use.
func (db *DB) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	c := &db.stmts
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	st, err := db.sql.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st, nil
}

// close closes every cached statement; prepared fails afterwards.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, st := range c.m {
		_ = st.Close()
	}
	c.m = nil
}
