package membership

import (
	"maps"
	"slices"
	"strings"
)

// ReachStatus is one observer's verdict on one subject.
type ReachStatus uint8

// Reachability verdicts. Terminated is final: the subject is known dead (for
// example replaced by a new incarnation) and never becomes Reachable again.
const (
	Reachable ReachStatus = iota
	Unreachable
	Terminated
)

func (s ReachStatus) String() string { return [...]string{"Reachable", "Unreachable", "Terminated"}[s] }

// Record is one observation: Observer sees Subject with Status, stamped with
// the observer's reachability version.
type Record struct {
	Observer UniqueAddress
	Subject  UniqueAddress
	Status   ReachStatus
	Version  int64
}

// Reachability is the table of failure-detector observations carried in
// gossip (Akka's Reachability). Only the observer writes its own rows, each
// change bumping its version; merging keeps, per observer, the rows with the
// highest version. An observer whose every row is Reachable is dropped from
// the table. The zero value is the empty table; every method returns a new
// table and leaves the receiver unchanged.
type Reachability struct {
	// records sorted by (observer, subject)
	records  []Record
	versions map[UniqueAddress]int64
}

// NewReachability builds a table from records and versions (used by tests
// and decoders); records are copied and sorted.
func NewReachability(records []Record, versions map[UniqueAddress]int64) Reachability {
	r := Reachability{records: slices.Clone(records), versions: maps.Clone(versions)}
	sortRecords(r.records)
	return r
}

func sortRecords(rs []Record) {
	slices.SortFunc(rs, func(a, b Record) int {
		if c := a.Observer.Compare(b.Observer); c != 0 {
			return c
		}
		return a.Subject.Compare(b.Subject)
	})
}

// Records returns a copy of all records, sorted by observer then subject.
func (r Reachability) Records() []Record { return slices.Clone(r.records) }

// Version returns the observer's current version (0 if it never observed).
func (r Reachability) Version(observer UniqueAddress) int64 { return r.versions[observer] }

// Versions returns a copy of the observer version table.
func (r Reachability) Versions() map[UniqueAddress]int64 { return maps.Clone(r.versions) }

// IsAllReachable reports whether there is no record at all.
func (r Reachability) IsAllReachable() bool { return len(r.records) == 0 }

func (r Reachability) rows(observer UniqueAddress) []Record {
	var out []Record
	for _, rec := range r.records {
		if rec.Observer == observer {
			out = append(out, rec)
		}
	}
	return out
}

// Unreachable records that observer cannot reach subject.
func (r Reachability) Unreachable(observer, subject UniqueAddress) Reachability {
	return r.change(observer, subject, Unreachable)
}

// Reachable records that observer reaches subject again.
func (r Reachability) Reachable(observer, subject UniqueAddress) Reachability {
	return r.change(observer, subject, Reachable)
}

// Terminated records that observer knows subject is dead for good.
func (r Reachability) Terminated(observer, subject UniqueAddress) Reachability {
	return r.change(observer, subject, Terminated)
}

func (r Reachability) change(observer, subject UniqueAddress, status ReachStatus) Reachability {
	v := r.versions[observer] + 1
	newVersions := maps.Clone(r.versions)
	if newVersions == nil {
		newVersions = map[UniqueAddress]int64{}
	}
	newVersions[observer] = v
	rows := r.rows(observer)
	if len(rows) == 0 {
		if status == Reachable {
			return r // nothing noted so far
		}
		return r.withRecords(append(slices.Clone(r.records), Record{observer, subject, status, v}), newVersions)
	}
	idx := slices.IndexFunc(r.records, func(rec Record) bool { return rec.Observer == observer && rec.Subject == subject })
	if idx < 0 {
		if status == Reachable && allReachableExcept(rows, UniqueAddress{}) {
			return r.withRecords(r.withoutObserver(observer), newVersions)
		}
		return r.withRecords(append(slices.Clone(r.records), Record{observer, subject, status, v}), newVersions)
	}
	old := r.records[idx]
	if old.Status == Terminated || old.Status == status {
		return r
	}
	if status == Reachable && allReachableExcept(rows, subject) {
		return r.withRecords(r.withoutObserver(observer), newVersions)
	}
	recs := slices.Clone(r.records)
	recs[idx] = Record{observer, subject, status, v}
	return r.withRecords(recs, newVersions)
}

func allReachableExcept(rows []Record, subject UniqueAddress) bool {
	for _, rec := range rows {
		if rec.Status != Reachable && rec.Subject != subject {
			return false
		}
	}
	return true
}

func (r Reachability) withoutObserver(observer UniqueAddress) []Record {
	var out []Record
	for _, rec := range r.records {
		if rec.Observer != observer {
			out = append(out, rec)
		}
	}
	return out
}

func (r Reachability) withRecords(recs []Record, versions map[UniqueAddress]int64) Reachability {
	sortRecords(recs)
	return Reachability{records: recs, versions: versions}
}

// Merge combines two tables restricted to the allowed nodes (the merged
// member set): per observer, the rows of the side with the higher version
// win; the version table keeps each observer's highest version.
func (r Reachability) Merge(allowed []UniqueAddress, other Reachability) Reachability {
	ok := make(map[UniqueAddress]bool, len(allowed))
	for _, a := range allowed {
		ok[a] = true
	}
	var recs []Record
	versions := map[UniqueAddress]int64{}
	for _, obs := range allowed {
		v1, v2 := r.versions[obs], other.versions[obs]
		rows1, rows2 := r.rows(obs), other.rows(obs)
		var rows []Record
		switch {
		case rows1 != nil && rows2 != nil:
			rows = rows2
			if v1 > v2 {
				rows = rows1
			}
		case rows1 != nil && v1 > v2:
			rows = rows1
		case rows2 != nil && v2 > v1:
			rows = rows2
		}
		for _, rec := range rows {
			if ok[rec.Subject] {
				recs = append(recs, rec)
			}
		}
		if v := max(v1, v2); v > 0 {
			versions[obs] = v
		}
	}
	return r.withRecords(recs, versions)
}

// Remove drops every record and version that involves any of nodes.
func (r Reachability) Remove(nodes []UniqueAddress) Reachability {
	drop := set(nodes)
	var recs []Record
	for _, rec := range r.records {
		if !drop[rec.Observer] && !drop[rec.Subject] {
			recs = append(recs, rec)
		}
	}
	versions := maps.Clone(r.versions)
	for n := range drop {
		delete(versions, n)
	}
	return Reachability{records: recs, versions: versions}
}

// RemoveObservers drops the rows and versions of the given observers.
func (r Reachability) RemoveObservers(nodes []UniqueAddress) Reachability {
	if len(nodes) == 0 {
		return r
	}
	drop := set(nodes)
	var recs []Record
	for _, rec := range r.records {
		if !drop[rec.Observer] {
			recs = append(recs, rec)
		}
	}
	versions := maps.Clone(r.versions)
	for n := range drop {
		delete(versions, n)
	}
	return Reachability{records: recs, versions: versions}
}

// FilterRecords keeps the records for which keep returns true (versions are
// unchanged).
func (r Reachability) FilterRecords(keep func(Record) bool) Reachability {
	var recs []Record
	for _, rec := range r.records {
		if keep(rec) {
			recs = append(recs, rec)
		}
	}
	return Reachability{records: recs, versions: r.versions}
}

// StatusFrom is observer's verdict on subject (Reachable when not recorded).
func (r Reachability) StatusFrom(observer, subject UniqueAddress) ReachStatus {
	for _, rec := range r.records {
		if rec.Observer == observer && rec.Subject == subject {
			return rec.Status
		}
	}
	return Reachable
}

// Status is the aggregate verdict on a node: Terminated if any observer says
// so, else Unreachable if any observer says so, else Reachable.
func (r Reachability) Status(node UniqueAddress) ReachStatus {
	st := Reachable
	for _, rec := range r.records {
		if rec.Subject != node {
			continue
		}
		if rec.Status == Terminated {
			return Terminated
		}
		if rec.Status == Unreachable {
			st = Unreachable
		}
	}
	return st
}

// IsReachable reports whether no observer holds node Unreachable or
// Terminated.
func (r Reachability) IsReachable(node UniqueAddress) bool { return r.Status(node) == Reachable }

// IsReachableFrom reports whether observer holds subject Reachable.
func (r Reachability) IsReachableFrom(observer, subject UniqueAddress) bool {
	return r.StatusFrom(observer, subject) == Reachable
}

// AllUnreachableOrTerminated is every subject some observer holds
// Unreachable or Terminated, sorted.
func (r Reachability) AllUnreachableOrTerminated() []UniqueAddress {
	return r.subjects(func(s ReachStatus) bool { return s != Reachable })
}

// AllUnreachable is every subject that is Unreachable (and not Terminated)
// for some observer, sorted.
func (r Reachability) AllUnreachable() []UniqueAddress {
	term := set(r.subjects(func(s ReachStatus) bool { return s == Terminated }))
	var out []UniqueAddress
	for _, u := range r.subjects(func(s ReachStatus) bool { return s == Unreachable }) {
		if !term[u] {
			out = append(out, u)
		}
	}
	return out
}

// AllUnreachableFrom is every subject observer holds Unreachable, sorted.
func (r Reachability) AllUnreachableFrom(observer UniqueAddress) []UniqueAddress {
	var out []UniqueAddress
	for _, rec := range r.records {
		if rec.Observer == observer && rec.Status == Unreachable {
			out = append(out, rec.Subject)
		}
	}
	return sortedUnique(out)
}

// AllObservers is every node with a record, sorted.
func (r Reachability) AllObservers() []UniqueAddress {
	var out []UniqueAddress
	for _, rec := range r.records {
		out = append(out, rec.Observer)
	}
	return sortedUnique(out)
}

func (r Reachability) subjects(match func(ReachStatus) bool) []UniqueAddress {
	var out []UniqueAddress
	for _, rec := range r.records {
		if match(rec.Status) {
			out = append(out, rec.Subject)
		}
	}
	return sortedUnique(out)
}

func (r Reachability) String() string {
	parts := make([]string, 0, len(r.records))
	for _, rec := range r.records {
		parts = append(parts, rec.Observer.NodeID()+"->"+rec.Subject.NodeID()+":"+rec.Status.String())
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func set(us []UniqueAddress) map[UniqueAddress]bool {
	m := make(map[UniqueAddress]bool, len(us))
	for _, u := range us {
		m[u] = true
	}
	return m
}

func sortedUnique(us []UniqueAddress) []UniqueAddress {
	slices.SortFunc(us, UniqueAddress.Compare)
	return slices.Compact(us)
}
