package dataplane_test

import (
	"fmt"
	"strconv"
	"strings"
)

// wantSeries checks that the Prometheus text body has series at want.
func wantSeries(body, series string, want float64) error {
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				return err
			}
			if v != want {
				return fmt.Errorf("%s = %v, want %v", series, v, want)
			}
			return nil
		}
	}
	return fmt.Errorf("no series %s", series)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
