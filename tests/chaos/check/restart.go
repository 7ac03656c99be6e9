package check

import "time"

// restartBudget checks that every node the run restarted is back in its
// pair — answers ServiceLevel 240 or 250 — within its ClusterId's
// RestartBudget of the restart.
//
// A restart is a Started event of a node after an earlier event of its
// process (its first start is the run's, not a restart). The budget runs
// from the restart; a fault touching the ClusterId that overlaps the
// budget stops it counting, and it starts again when that fault ends (a
// node restarted while the Config DB is stopped cannot reach 240 before
// the database is back). A restart whose budget runs past the node's last
// sample is not judged: the run ended first.
func (c *checker) restartBudget() []Violation {
	var out []Violation
	for _, cl := range c.configured {
		for _, node := range cl.Nodes {
			for i, e := range c.procs[node] {
				if i == 0 || e.Kind != Started {
					continue
				}
				if v, bad := c.cameBack(cl, node, e.At); bad {
					out = append(out, v)
				}
			}
		}
	}
	return out
}

// cameBack judges one restart of node at restart.
func (c *checker) cameBack(cl Cluster, node string, restart time.Time) (Violation, bool) {
	deadline := c.deadline(cl, restart)
	samples := c.levels[node]
	for _, s := range samples {
		if s.At.Before(restart) || !s.Answered || (s.Level != LevelPrimary && s.Level != LevelSecondary) {
			continue
		}
		if !s.At.After(deadline) {
			return Violation{}, false
		}
		return c.violation(RestartBudget, cl.ID, restart, deadline,
			"%s restarted at %s answered %d only at %s, after its deadline %s (budget %s)",
			node, c.rel(restart), s.Level, c.rel(s.At), c.rel(deadline), cl.RestartBudget), true
	}
	if len(samples) == 0 || samples[len(samples)-1].At.Before(deadline) {
		return Violation{}, false
	}
	return c.violation(RestartBudget, cl.ID, restart, deadline,
		"%s restarted at %s never answered 240 or 250 (deadline %s, budget %s)",
		node, c.rel(restart), c.rel(deadline), cl.RestartBudget), true
}

// deadline is restart plus the budget, the budget starting again at the
// end of every fault touching cl that overlaps it.
func (c *checker) deadline(cl Cluster, restart time.Time) time.Time {
	deadline := restart.Add(cl.RestartBudget)
	for changed := true; changed; {
		changed = false
		for _, f := range c.run.Faults {
			later := f.End.Add(cl.RestartBudget)
			if f.touches(cl) && f.End.After(restart) && f.Start.Before(deadline) && later.After(deadline) {
				deadline, changed = later, true
			}
		}
	}
	return deadline
}
