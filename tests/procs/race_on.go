//go:build race

package procs

const raceEnabled = true
