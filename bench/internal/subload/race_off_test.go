//go:build !race

package subload

const raceEnabled = false
