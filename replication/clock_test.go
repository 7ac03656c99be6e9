package replication

import "github.com/jonboulle/clockwork"

// clockworkReal embeds the real clock's methods.
type clockworkReal = clockwork.Clock
