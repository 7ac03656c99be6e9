//go:build race

package main

// raceEnabled: TestSoakShort is skipped under -race (see there).
const raceEnabled = true
