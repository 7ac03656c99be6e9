package main

import (
	"fmt"
	"io"
	"strings"
)

// Table writes results as a Markdown table, one row per case, in order.
func Table(w io.Writer, results []Result) {
	fmt.Fprintln(w, "| case | items created | items/s | create s | first / last request s | DeleteSubscriptions s | heap B/item | notes |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %d of %d | %s | %s | %s | %s | %s | %s |\n",
			r.Case, r.Created, r.Items, rateCell(r), createCell(r), batchCell(r), deleteCell(r), heapCell(r), notes(r))
	}
}

func rateCell(r Result) string {
	if r.CreateTimeout || r.Created == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", r.ItemsPerS)
}

func createCell(r Result) string {
	if r.CreateTimeout {
		return fmt.Sprintf("> %.1f (timeout)", r.CreateS)
	}
	if r.Created == 0 && r.Error != "" {
		return "–"
	}
	return fmt.Sprintf("%.2f", r.CreateS)
}

func batchCell(r Result) string {
	if r.FirstBatchS == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f / %.3f", r.FirstBatchS, r.LastBatchS)
}

func deleteCell(r Result) string {
	switch {
	case r.DeleteTimeout && r.DeleteS > 0:
		return fmt.Sprintf("> %.1f (timeout)", r.DeleteS)
	case r.DeleteTimeout:
		return "– (no time left)"
	case r.DeleteStatus == "":
		return "–"
	}
	return fmt.Sprintf("%.3f", r.DeleteS)
}

func heapCell(r Result) string {
	if r.HeapAfterMiB == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", r.HeapPerItemB)
}

func notes(r Result) string {
	var n []string
	if r.CreateTimeout {
		n = append(n, fmt.Sprintf("%d items created in %.0f s before the timeout", r.Created, r.CreateS))
	}
	if r.Refused > 0 {
		n = append(n, fmt.Sprintf("%d items refused, first %s", r.Refused, r.FirstRefusal))
	}
	if r.Error != "" {
		n = append(n, "FAILED: "+r.Error)
	}
	return strings.ReplaceAll(strings.Join(n, "; "), "|", "\\|")
}
