package main

import (
	"fmt"
	"strconv"
	"strings"
)

// Layout says which variables the items of a case watch.
type Layout string

const (
	// LayoutOne puts every item on one variable (every item is a watcher
	// of the same Value).
	LayoutOne Layout = "one"
	// LayoutSpread gives each item a variable of its own.
	LayoutSpread Layout = "spread"
)

// Case is one measurement: Items monitored items laid out as Layout.
type Case struct {
	Layout Layout
	Items  int
}

// String is the case as -cases spells it ("one:10000").
func (c Case) String() string { return fmt.Sprintf("%s:%d", c.Layout, c.Items) }

// Variables is how many variables the server needs for the case.
func (c Case) Variables() int {
	if c.Layout == LayoutOne {
		return 1
	}
	return c.Items
}

// maxItems bounds one case, so that a typo cannot ask for a billion items.
const maxItems = 10_000_000

// ParseCases reads a -cases value: comma-separated layout:items pairs,
// e.g. "one:10000,spread:200000".
func ParseCases(s string) ([]Case, error) {
	var out []Case
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		layout, n, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("case %q: want layout:items, e.g. one:10000", part)
		}
		l := Layout(strings.TrimSpace(layout))
		if l != LayoutOne && l != LayoutSpread {
			return nil, fmt.Errorf("case %q: layout %q: want %q or %q", part, layout, LayoutOne, LayoutSpread)
		}
		items, err := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(n), "_", ""))
		if err != nil || items < 1 || items > maxItems {
			return nil, fmt.Errorf("case %q: items %q: want a whole number from 1 to %d", part, n, maxItems)
		}
		out = append(out, Case{Layout: l, Items: items})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no case in %q", s)
	}
	return out, nil
}
