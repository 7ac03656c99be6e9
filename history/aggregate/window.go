package aggregate

// Window returns the part raw[from:to] of a longer sorted run of samples
// that Compute needs for iv under cfg: from the second-latest usable value
// before the interval (usable: not Bad, and not Uncertain when
// TreatUncertainAsBad) through the first usable value after it, with every
// value in between. Where the run holds fewer such values the window
// reaches its ends. Compute over the window gives the same result as over
// the whole run, with Result.Raw counted from from; a caller that fetches
// raw values from an archive fetches at least this much (see the package
// documentation).
func Window(cfg Config, iv Interval, raw []Sample) (from, to int) {
	sp := spanOf(iv, raw)
	lo := searchAtOrAfter(raw, sp.lo) - 1
	found := 0
	for from = lo; from >= 0; from-- {
		if cfg.usable(raw[from].Status) {
			found++
			if found == 2 {
				break
			}
		}
	}
	if from < 0 {
		from = 0
	}
	for to = searchAfter(raw, sp.hi); to < len(raw); to++ {
		if cfg.usable(raw[to].Status) {
			return from, to + 1
		}
	}
	return from, len(raw)
}
