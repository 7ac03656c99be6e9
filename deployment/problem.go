package deployment

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// RootPath is the Path of a problem with the document as a whole.
const RootPath = "$"

// Problem is one invalid part of a document.
type Problem struct {
	// Path locates the value in the document, e.g.
	// "devices[0].tags[3].address" ("$" for the whole document).
	Path string
	// Value is the value as written in the document, as JSON text
	// ("70000", "\"holding\"", "null"); "" when the field is absent. For a
	// Document built in Go (Validate), the value rendered as JSON.
	Value string
	// Accepted says what would be accepted instead.
	Accepted string
}

// maxShown is the longest value String shows before cutting it.
const maxShown = 80

// String renders the problem as `Path = Value: Accepted`; an absent value
// shows as (missing), a long one is cut at maxShown bytes.
func (p Problem) String() string {
	v := p.Value
	switch {
	case v == "":
		v = "(missing)"
	case len(v) > maxShown:
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut] + "…"
	}
	return fmt.Sprintf("%s = %s: %s", p.Path, v, p.Accepted)
}

// ValidationError is a document that is JSON but not a valid deployment.
// Problems lists every problem found, in document order: devices and tags
// in their list order, the fields of one object in the order Document's
// types declare them, unknown fields of an object before its own fields.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid deployment document: %d problem", len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// oneOf phrases an enumeration.
func oneOf(values []string) string {
	return "accepted values are " + strings.Join(values, ", ")
}

// suggest returns " (did you mean X?)" for the entry of list nearest to s
// (the same letters in another case, or at most two edits away), or "".
func suggest(list []string, s string) string {
	best, bestDist := "", 3
	for _, v := range list {
		d := editDistance(strings.ToLower(v), strings.ToLower(s))
		if d < bestDist {
			best, bestDist = v, d
		}
	}
	if best == "" || best == s {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// editDistance is the Levenshtein distance of two short strings (longer
// ones count as far apart).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			next := min(row[j]+1, row[j-1]+1, diag+cost)
			diag, row[j] = row[j], next
		}
	}
	return row[len(b)]
}
